// halfspace: a command-line client for the halfspace service.
//
//   halfspace [--server=HOST:PORT] COMMAND [ARGS]
//
//   create NAME --dimension=D [--algorithm=NAME or 'NAME { PARAMETERS }',
//               e.g. perceptron or 'sgd { loss: LOSS_LOG alpha: 0.001 }']
//               [--one_vs_rest] [--classes=a,b,c] [--standardize]
//               [--hash_bits=B]
//               [--progress_window=N] [--window_losses]
//               [--drift=adwin|page_hinkley|ddm or 'adwin { delta: D }']
//               [--selective_sampling=B or 'b: B seed: S']
//               [--replicate [--stream=S] [--subject=S] [--replicas=N]]
//   get NAME | list | delete NAME | weights NAME
//   recent NAME             the last examples a model of dimension 1 or 2
//                           learned, a line each: x label, and "wrong"
//                           where it predicted it wrong
//   aliases | promote ALIAS MODEL [--expected_model=M] | unalias ALIAS
//   compare CHAMPION CHALLENGER [...]   McNemar's test against the first
//   predict NAME X1,X2,...  [more vectors]
//   train NAME[,NAME...] FILE  one pass over FILE (CSV: label,x1,...,xd, or
//                           LibSVM: label index:value ...; "-" is stdin),
//                           streamed, printing one line per example (or, with
//                           --summary, the totals)
//   fit NAME FILE           passes over FILE until one makes no updates
//                           (--max_passes)
//   publish NAME FILE       sends FILE's lines straight to a replicated
//                           model's subject on NATS (--nats_url)
//   evaluate NAME FILE      scores FILE without learning
//   export NAME FILE        writes the model's whole state to FILE
//   import NAME FILE        creates model NAME from an exported FILE
//   restore NAME            rolls an unavailable model back to its previous
//                           snapshot
//   rollback NAME           puts back the weights the model's drift
//                           reaction replaced
//   drift NAME --drift=SPEC sets the model's drift detector and reaction
//                           (SPEC as create's), or removes them (none)
//   watch NAME              the model's drift state, then its events as
//                           they come (--from_position, --count)

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/bus_publisher.h"
#include "client/example_reader.h"
#include "client/halfspace_client.h"
#include "google/protobuf/arena.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

ABSL_FLAG(std::string, server, "",
          "the server's host:port, or unix:PATH for its Unix socket (default: "
          "$HALFSPACE_SERVER if set, else localhost:50051)");
ABSL_FLAG(std::string, token, "",
          "a bearer token for a server with --tokens_file (default: the "
          "HALFSPACE_TOKEN environment variable)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM roots that signed the server's certificate: connect with TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "a PEM client certificate, for a server with mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "the private key of --tls_cert");
ABSL_FLAG(std::string, algorithm, "perceptron",
          "create: the algorithm, by its name in halfspace.v1.Algorithm "
          "(perceptron, sgd, softmax_regression, ...: a wrong name lists "
          "them all) or with parameters in protobuf text format, e.g. "
          "'logistic_regression { learning_rate: 0.1 l2: 0.01 }'");
ABSL_FLAG(int64_t, dimension, 0, "create: the feature dimension");
ABSL_FLAG(bool, one_vs_rest, false,
          "create: one binary model per class (a multiclass model)");
ABSL_FLAG(std::vector<std::string>, classes, {},
          "create: a multiclass model's first classes, e.g. cat,dog");
ABSL_FLAG(bool, standardize, false,
          "create: learn on online-standardized features");
ABSL_FLAG(bool, fit_intercept, true,
          "create: learn a bias b; --fit_intercept=false keeps b = 0");
ABSL_FLAG(uint32_t, hash_bits, 0,
          "create: 2^hash_bits buckets for named features (0 to 24)");
ABSL_FLAG(int, max_passes, 100, "fit: the most passes over the data");
ABSL_FLAG(int, batch_size, 1000,
          "train, fit: examples per request; publish: lines per message");
ABSL_FLAG(absl::Duration, flush_interval, absl::Milliseconds(50),
          "train: send the examples read so far once no more input came for "
          "this long, so a producer writing into a pipe sees each result as "
          "its example is learned (0: wait for --batch_size examples)");
ABSL_FLAG(std::string, format, "auto",
          "train, fit, evaluate, predict, publish: csv (label,x1,...,xd; a "
          "header line is "
          "skipped), libsvm (label index:value ..., indices from 1), vw "
          "(label [weight] |namespace feature[:value] ..., named features), "
          "or auto: libsvm for .svm, .libsvm and .svmlight files, vw for "
          ".vw, csv for .csv, else the format the first line looks like");
ABSL_FLAG(bool, json, false,
          "print results as JSON, one object per line (protobuf's JSON "
          "mapping with the proto's field names; train adds each example's "
          "index, and ends with a line of totals)");
ABSL_FLAG(std::string, progress, "auto",
          "train, fit: report progress on standard error: auto (work that "
          "lasts over 2 seconds), always or never");
ABSL_FLAG(std::string, input, "",
          "predict: read the instances from this file, one a line (- for "
          "standard input), in --format");
ABSL_FLAG(int, top_k, -1,
          "predict: a multiclass model's k highest class scores only (0: the "
          "predicted class alone; -1: every class's)");
ABSL_FLAG(bool, remember, false,
          "predict: remember each instance for a later feedback (delayed "
          "labels); its example id is printed first");
ABSL_FLAG(std::vector<std::string>, example_ids, {},
          "predict --remember: the ids to remember the instances under, one "
          "per instance (default: the server makes them)");
ABSL_FLAG(bool, query, false,
          "predict: also say for each instance whether to ask for its label "
          "(a model with selective sampling; needs --remember or "
          "--example_ids)");
ABSL_FLAG(std::string, selective_sampling, "",
          "create: let predictions ask for labels with probability "
          "b/(b+|f(x)|): b (e.g. 0.5), or 'b: 0.5 seed: 3'");
ABSL_FLAG(uint32_t, progress_window, 0,
          "create: the recent window progressive validation keeps, in "
          "examples (default 1000)");
ABSL_FLAG(std::string, drift, "",
          "create, drift: a drift detector on the model's progressive "
          "mistakes: adwin, page_hinkley or ddm, or one with settings in "
          "protobuf text format, e.g. 'adwin { delta: 0.002 }'; drift: none "
          "removes it");
ABSL_FLAG(bool, window_losses, false,
          "create: the window keeps each example's loss too, for the exact "
          "mean loss over it (8 bytes an example)");
ABSL_FLAG(bool, replicate, false,
          "create: replicate the model over the servers of the NATS cluster "
          "the server follows (see README, Replicated models)");
ABSL_FLAG(std::string, stream, "",
          "create --replicate: the JetStream stream (default halfspace_NAME)");
ABSL_FLAG(std::string, subject, "",
          "create --replicate: the subject its records and producers' "
          "examples go to (default halfspace.train.NAME)");
ABSL_FLAG(int32_t, replicas, 0,
          "create --replicate: how many NATS servers store the stream "
          "(default 3)");
ABSL_FLAG(uint64_t, min_position, 0,
          "predict: on a replicated model, answer only once this server's "
          "replica has applied the stream up to this position (a train "
          "response's position)");
ABSL_FLAG(int64_t, from_position, -1,
          "watch: first the events the server keeps from this position (a "
          "model's examples_seen) on; -1: only those to come");
ABSL_FLAG(int64_t, count, 0,
          "watch: stop after this many events (0: when the server ends the "
          "watch)");
ABSL_FLAG(std::string, nats_url, "",
          "publish: the NATS cluster, nats://HOST:PORT[,nats://...] "
          "(default: $HALFSPACE_NATS_URL, else nats://127.0.0.1:4222)");
ABSL_FLAG(std::string, nats_credentials, "",
          "publish: a NATS credentials file (user JWT and NKey seed)");
ABSL_FLAG(std::string, nats_tls_ca, "",
          "publish: the CA that signs the NATS servers' certificates (TLS)");
ABSL_FLAG(std::string, nats_tls_cert, "",
          "publish: this client's certificate, for NATS servers that verify "
          "clients");
ABSL_FLAG(std::string, nats_tls_key, "",
          "publish: the private key of --nats_tls_cert");
ABSL_FLAG(double, alpha, 0.05,
          "compare: the significance level of McNemar's tests");
ABSL_FLAG(std::string, expected_model, "*",
          "promote: move the alias only if it points to this model now; "
          "empty (--expected_model=): only if the alias is new; * (the "
          "default): wherever it points");
ABSL_FLAG(bool, summary, false,
          "train: print only errors and the totals (the server sends counts "
          "per request instead of a result per example)");

namespace halfspace {
namespace {

// Whether model `name` is multiclass (its labels are class names).
absl::StatusOr<bool> IsMulticlass(Client& client, const std::string& name) {
  absl::StatusOr<v1::Model> model = client.GetModel(name);
  if (!model.ok()) return model.status();
  return model->multiclass();
}

// Opens `path` in --format for model `name`'s kind of labels.
absl::StatusOr<std::unique_ptr<ExampleReader>> OpenExamples(
    Client& client, const std::string& name, const std::string& path) {
  absl::StatusOr<bool> multiclass = IsMulticlass(client, name);
  if (!multiclass.ok()) return multiclass.status();
  absl::StatusOr<ExampleFormat> format =
      ParseExampleFormat(absl::GetFlag(FLAGS_format), path);
  if (!format.ok()) return format.status();
  return ExampleReader::Open(path, *format, *multiclass);
}

// Reads all of `path` for model `name` (fit and evaluate go over it whole).
absl::StatusOr<std::vector<LabeledExample>> ReadExamplesFor(
    Client& client, const std::string& name, const std::string& path) {
  absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
      OpenExamples(client, name, path);
  if (!reader.ok()) return reader.status();
  std::vector<LabeledExample> examples;
  google::protobuf::RepeatedPtrField<v1::Example> batch;
  for (;;) {
    batch.Clear();
    absl::StatusOr<size_t> n = (*reader)->Read(4096, batch);
    if (!n.ok()) return n.status();
    if (*n == 0) return examples;
    for (const v1::Example& e : batch) {
      LabeledExample& x = examples.emplace_back();
      x.features.assign(e.features().dense().begin(),
                        e.features().dense().end());
      x.label = e.label();
      x.class_label = e.class_label();
      x.sparse_indices.assign(e.features().sparse().indices().begin(),
                              e.features().sparse().indices().end());
      x.sparse_values.assign(e.features().sparse().values().begin(),
                             e.features().sparse().values().end());
    }
  }
}

// `message` as one line of JSON: the proto's field names, zeros included.
std::string Json(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json;
}

// Json(message) with an "index" field first.
std::string JsonWithIndex(uint64_t index, const google::protobuf::Message& m) {
  const std::string json = Json(m);
  return absl::StrCat("{\"index\":", index, json == "{}" ? "" : ",",
                      absl::string_view(json).substr(1));
}

// A JSON number: an integer as such, others with all 17 digits.
std::string JsonNumber(double value) {
  return value == std::floor(value) && std::abs(value) < 1e15
             ? absl::StrFormat("%.0f", value)
             : absl::StrFormat("%.17g", value);
}

// A JSON object of fields already in JSON, in the order given, for results
// that are no message.
std::string JsonObject(
    std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::string json = "{";
  for (const auto& [name, value] : fields) {
    absl::StrAppend(&json, json.size() > 1 ? "," : "", "\"", name,
                    "\":", value);
  }
  return json + "}";
}

// "  drift (ddm): warning  warnings=2 (last at 3012)  drifts=1 (last at
// 3050)  estimate=0.41", and with a reaction a line of its challenger.
void PrintDrift(const v1::DriftDetection& detection, const v1::DriftState& d) {
  static constexpr const char* kStates[] = {"?", "stable", "warning", "drift"};
  const int state = d.state() >= 0 && d.state() <= 3 ? d.state() : 0;
  const google::protobuf::FieldDescriptor* method =
      v1::DriftDetection::descriptor()->FindFieldByNumber(
          detection.method_case());
  std::cout << "  drift";
  if (method != nullptr) std::cout << " (" << method->name() << ")";
  std::cout << ": " << kStates[state] << "  warnings=" << d.warnings();
  if (d.warnings() > 0) std::cout << " (last at " << d.last_warning_at() << ")";
  std::cout << "  drifts=" << d.drifts();
  if (d.drifts() > 0) std::cout << " (last at " << d.last_drift_at() << ")";
  std::cout << "  estimate=" << d.estimate() << "\n";
  if (!d.has_reaction()) return;
  const v1::DriftState::Reaction& r = d.reaction();
  std::cout << "  challenger: ";
  if (r.challenging()) {
    std::cout << "since " << r.started_at();
    if (r.armed_at() > 0) std::cout << " (armed at " << r.armed_at() << ")";
    std::cout << "  only the model wrong=" << r.only_model_wrong()
              << "  only the challenger wrong=" << r.only_challenger_wrong()
              << " of " << r.examples();
  } else {
    std::cout << "none";
  }
  std::cout << "  switches=" << r.switches();
  if (r.switches() > 0) {
    std::cout << " (last at " << r.last_switch_at()
              << ", p=" << r.last_switch_p_value() << ")";
  }
  std::cout << "  dropped=" << r.dropped()
            << (r.can_roll_back() ? "  rollback possible" : "") << "\n";
}

void PrintModel(const v1::Model& m) {
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << Json(m) << "\n";
    return;
  }
  if (!m.unavailable_reason().empty()) {
    std::cout << m.name() << "  UNAVAILABLE: " << m.unavailable_reason()
              << "\n";
    return;
  }
  const v1::ModelStats& s = m.stats();
  std::string algorithm;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  printer.PrintToString(m.algorithm(), &algorithm);
  std::cout << m.name() << "  " << algorithm << " dimension=" << m.dimension()
            << (m.fit_intercept() ? "" : "  no intercept")
            << "\n  examples_seen=" << s.examples_seen()
            << "  updates=" << s.updates() << "  mistakes=" << s.mistakes()
            << "  average_loss=" << s.average_loss()
            << "  |w|=" << s.weight_norm() << "  b=" << s.bias()
            << "  R=" << s.max_example_norm() << "\n";
  if (m.algorithm().has_ftrl_proximal()) {  // chosen for its sparsity
    std::cout << "  nonzero_weights=" << s.nonzero_weights() << "\n";
  }
  if (m.classes_size() > 0 || m.one_vs_rest()) {
    std::cout << "  classes: " << absl::StrJoin(m.classes(), ",")
              << (m.one_vs_rest() ? "  (one-vs-rest)" : "") << "\n";
  }
  if (m.aliases_size() > 0) {
    std::cout << "  aliases: " << absl::StrJoin(m.aliases(), ",") << "\n";
  }
  if (m.has_replica()) {
    const v1::ReplicaState& r = m.replica();
    std::cout << "  replica of stream " << r.replication().stream()
              << " (subject " << r.replication().subject()
              << "): position=" << r.position() << "  lag=" << r.lag_records()
              << " records, " << r.lag_seconds() << " s\n";
    if (!r.stalled().empty()) std::cout << "  stalled: " << r.stalled() << "\n";
  }
  if (s.window_examples() > 0) {
    std::cout << "  last " << s.window_examples()
              << ": accuracy=" << s.window_accuracy();
    if (s.has_window_loss()) std::cout << "  loss=" << s.window_loss();
    std::cout << "  decayed: accuracy=" << s.decayed_accuracy()
              << "  loss=" << s.decayed_loss() << "\n";
  }
  if (s.has_drift()) PrintDrift(m.drift(), s.drift());
  if (m.has_selective_sampling()) {
    std::cout << "  selective sampling: b=" << m.selective_sampling().b()
              << "  seed=" << m.selective_sampling().seed()
              << (m.selective_sampling().unweighted() ? "  unweighted" : "")
              << "\n";
  }
  if (s.pending_remembered() > 0) {
    std::cout << "  remembered=" << s.pending_remembered()
              << "  waiting=" << s.pending_waiting()
              << "  joined=" << s.pending_joined()
              << "  expired=" << s.pending_expired() << "\n";
  }
}

absl::Status Create(Client& client, const std::string& name) {
  absl::StatusOr<v1::Algorithm> algorithm =
      ParseAlgorithm(absl::GetFlag(FLAGS_algorithm));
  if (!algorithm.ok()) return algorithm.status();
  v1::CreateModelRequest request;
  request.set_model(name);
  request.set_dimension(absl::GetFlag(FLAGS_dimension));
  *request.mutable_algorithm() = *std::move(algorithm);
  request.set_hash_bits(absl::GetFlag(FLAGS_hash_bits));
  request.set_one_vs_rest(absl::GetFlag(FLAGS_one_vs_rest));
  request.set_standardize(absl::GetFlag(FLAGS_standardize));
  request.set_fit_intercept(absl::GetFlag(FLAGS_fit_intercept));
  if (absl::GetFlag(FLAGS_progress_window) != 0) {
    request.set_progress_window(absl::GetFlag(FLAGS_progress_window));
  }
  request.set_window_losses(absl::GetFlag(FLAGS_window_losses));
  if (!absl::GetFlag(FLAGS_drift).empty()) {
    absl::StatusOr<v1::DriftDetection> drift =
        ParseDriftDetection(absl::GetFlag(FLAGS_drift));
    if (!drift.ok()) return drift.status();
    *request.mutable_drift() = *std::move(drift);
  }
  if (!absl::GetFlag(FLAGS_selective_sampling).empty()) {
    absl::StatusOr<v1::SelectiveSampling> sampling =
        ParseSelectiveSampling(absl::GetFlag(FLAGS_selective_sampling));
    if (!sampling.ok()) return sampling.status();
    *request.mutable_selective_sampling() = *std::move(sampling);
  }
  for (const std::string& label : absl::GetFlag(FLAGS_classes)) {
    request.add_classes(label);
  }
  if (absl::GetFlag(FLAGS_replicate)) {
    v1::Replication* replication = request.mutable_replication();
    replication->set_stream(absl::GetFlag(FLAGS_stream));
    replication->set_subject(absl::GetFlag(FLAGS_subject));
    replication->set_replicas(absl::GetFlag(FLAGS_replicas));
  }
  absl::StatusOr<v1::Model> model = client.CreateModel(request);
  if (!model.ok()) return model.status();
  PrintModel(*model);
  return absl::OkStatus();
}

// The instances to predict: each argument after the model's name, or, for
// "-" or --input, one a line of a file or standard input; in --format, or
// as each looks (CSV x1,x2,..., LibSVM index:value ..., VW |ns name ...).
absl::Status ReadInstances(const std::vector<char*>& args,
                           v1::PredictRequest& request) {
  const std::string input = absl::GetFlag(FLAGS_input);
  absl::StatusOr<ExampleFormat> format =
      ParseExampleFormat(absl::GetFlag(FLAGS_format), input);
  if (!format.ok()) return format.status();
  std::vector<std::string> lines(args.begin() + 3, args.end());
  if (!input.empty()) {
    std::ifstream file;
    if (input != "-") {
      file.open(input);
      if (!file)
        return absl::NotFoundError(absl::StrCat("cannot open ", input));
    }
    std::istream& in = input == "-" ? std::cin : file;
    for (std::string line; std::getline(in, line);) {
      const absl::string_view text = absl::StripAsciiWhitespace(line);
      if (!text.empty() && text.front() != '#') lines.emplace_back(text);
    }
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError(
        "predict needs instances: as arguments, or --input=FILE (- for "
        "standard input)");
  }
  for (const std::string& line : lines) {
    absl::StatusOr<v1::FeatureVector> x = ParseInstance(line, *format);
    if (!x.ok()) return x.status();
    *request.add_instances() = *std::move(x);
  }
  return absl::OkStatus();
}

absl::Status Predict(Client& client, const std::string& name,
                     const std::vector<char*>& args) {
  v1::PredictRequest request;
  request.set_model(name);
  if (absl::Status s = ReadInstances(args, request); !s.ok()) return s;
  request.set_remember(absl::GetFlag(FLAGS_remember));
  request.set_query(absl::GetFlag(FLAGS_query));
  for (const std::string& id : absl::GetFlag(FLAGS_example_ids)) {
    request.add_example_ids(id);
  }
  if (absl::GetFlag(FLAGS_top_k) >= 0) {
    request.set_top_k(absl::GetFlag(FLAGS_top_k));
  }
  request.set_min_position(absl::GetFlag(FLAGS_min_position));
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client.Predict(request);
  if (!predictions.ok()) return predictions.status();
  for (const v1::Prediction& p : *predictions) {
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << Json(p) << "\n";
      continue;
    }
    if (!p.example_id().empty()) std::cout << "id=" << p.example_id() << "  ";
    if (!p.predicted_class().empty()) {
      std::cout << "class=" << p.predicted_class();
      for (const v1::ClassScore& c : p.class_scores()) {
        std::cout << "  " << c.label() << ":" << c.score();
        if (c.has_probability()) std::cout << " (p=" << c.probability() << ")";
      }
      std::cout << "\n";
      continue;
    }
    std::cout << "label=" << p.label() << "  score=" << p.score();
    if (p.has_signed_distance())
      std::cout << "  distance=" << p.signed_distance();
    if (p.has_probability()) std::cout << "  probability=" << p.probability();
    if (p.has_query()) {
      std::cout << "  ask=" << (p.query().ask() ? "yes" : "no")
                << "  p=" << p.query().probability()
                << "  weight=" << p.query().weight();
    }
    std::cout << "\n";
  }
  return absl::OkStatus();
}

// Reports long work on standard error, so that standard output stays the
// results: on a terminal, one line rewritten in place a few times a second;
// otherwise a plain line every 10 seconds. With --progress=auto, work done
// within its first two seconds reports nothing.
class Progress {
 public:
  explicit Progress(std::string what)
      : what_(std::move(what)),
        terminal_(isatty(STDERR_FILENO) == 1),
        mode_(absl::GetFlag(FLAGS_progress)) {}
  ~Progress() { End(); }

  // Ends the line rewritten in place, before anything else is printed.
  void End() {
    if (terminal_ && shown_) std::fputc('\n', stderr);
    shown_ = false;
  }

  // `examples` so far, and what to say of them.
  void Report(uint64_t examples, absl::string_view details) {
    const absl::Time now = absl::Now();
    if (mode_ == "never" || now < next_ ||
        (mode_ != "always" && now - start_ < absl::Seconds(2))) {
      return;
    }
    next_ = now + (terminal_ ? absl::Milliseconds(250) : absl::Seconds(10));
    const double rate =
        examples / std::max(1e-9, absl::ToDoubleSeconds(now - start_));
    const std::string line = absl::StrFormat("%s: %d examples, %.0f/s, %s",
                                             what_, examples, rate, details);
    std::fprintf(stderr, terminal_ ? "\r%s\033[K" : "%s\n", line.c_str());
    shown_ = true;
  }

 private:
  const std::string what_;
  const bool terminal_;
  const std::string mode_;  // --progress
  const absl::Time start_ = absl::Now();
  absl::Time next_ = absl::InfinitePast();
  bool shown_ = false;
};

// "U updates, M mistakes (accuracy A%)" of `examples`.
std::string Counts(uint64_t examples, uint64_t updates, uint64_t mistakes) {
  return absl::StrFormat(
      "%d updates, %d mistakes (accuracy %.2f%%)", updates, mistakes,
      examples == 0 ? 0.0 : 100.0 * (1.0 - double(mistakes) / examples));
}

// "3" or, for one model of a fan-out stream, "3 [name]".
std::string ResultPrefix(uint64_t index, const std::string& model) {
  return model.empty() ? absl::StrCat(index)
                       : absl::StrCat(index, " [", model, "]");
}

// Json(m) with "index" (and, when given, "model") fields first.
std::string JsonResult(uint64_t index, const std::string& model,
                       const google::protobuf::Message& m) {
  const std::string json = JsonWithIndex(index, m);
  if (model.empty()) return json;
  const size_t comma = json.find_first_of(",}");
  return absl::StrCat(json.substr(0, comma), ",\"model\":\"", model, "\"",
                      json.substr(comma));
}

// Appends the line of an example refused for `error` to `out`.
void AppendError(uint64_t index, const std::string& model,
                 const google::rpc::Status& error, std::string& out) {
  if (absl::GetFlag(FLAGS_json)) {
    absl::StrAppend(
        &out, "{\"index\":", index,
        model.empty() ? "" : absl::StrCat(",\"model\":\"", model, "\""),
        ",\"error\":", Json(error), "}\n");
  } else {
    absl::StrAppend(&out, ResultPrefix(index, model),
                    ": error: ", error.message(), "\n");
  }
}

// Appends one example's result line ("3: score=…", or "3 [name]: …" for
// `model` of a fan-out stream) to `out`.
void AppendResult(uint64_t index, const std::string& model,
                  const v1::ExampleResult& r, std::string& out) {
  if (absl::GetFlag(FLAGS_json)) {
    absl::StrAppend(&out, JsonResult(index, model, r), "\n");
    return;
  }
  if (r.has_error()) {
    AppendError(index, model, r.error(), out);
    return;
  }
  const std::string prefix = ResultPrefix(index, model);
  if (r.duplicate()) {
    absl::StrAppend(&out, prefix, ": duplicate\n");
    return;
  }
  absl::StrAppend(&out, prefix, ": score=", r.score(), "  margin=", r.margin(),
                  "  updated=", r.updated() ? "yes" : "no",
                  "  loss=", r.loss());
  if (r.has_probability()) {
    absl::StrAppend(&out, "  probability=", r.probability());
  }
  if (!r.predicted_class().empty()) {
    absl::StrAppend(&out, "  predicted=", r.predicted_class());
  }
  out += '\n';
}

// Delayed labels: learns ID:LABEL pairs (a class name for a multiclass
// model) for examples a `predict --remember` kept, printing one result
// line each, as train does.
absl::Status Feedback(Client& client, const std::string& name,
                      const std::vector<char*>& args) {
  absl::StatusOr<bool> multiclass = IsMulticlass(client, name);
  if (!multiclass.ok()) return multiclass.status();
  v1::FeedbackRequest request;
  request.set_model(name);
  for (size_t i = 3; i < args.size(); ++i) {
    const absl::string_view pair = args[i];
    const size_t colon = pair.rfind(':');
    if (colon == absl::string_view::npos || colon == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", pair, "' is not ID:LABEL (e.g. 3f2a…:1 or click-7:-1)"));
    }
    v1::ExampleFeedback* f = request.add_feedback();
    f->set_example_id(std::string(pair.substr(0, colon)));
    const std::string label(pair.substr(colon + 1));
    int y = 0;
    if (*multiclass) {
      f->set_class_label(label);
    } else if (absl::SimpleAtoi(label, &y)) {
      f->set_label(y);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", label, "' is not a label: a binary model's are -1 and 1"));
    }
  }
  absl::StatusOr<v1::FeedbackResponse> response = client.Feedback(request);
  if (!response.ok()) return response.status();
  std::string out;
  int rejected = 0;
  for (int i = 0; i < response->results_size(); ++i) {
    AppendResult(i, "", response->results(i), out);
    rejected += response->results(i).has_error() ? 1 : 0;
  }
  std::cout << out;
  if (rejected > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(rejected, " of ", response->results_size(),
                     " labels were not learned (see the lines marked "
                     "error); the others were"));
  }
  return absl::OkStatus();
}

// At most `limit` train requests unanswered: the sender waits for room,
// the receiver makes it; once the answers are over, the sender stops.
class InFlight {
 public:
  explicit InFlight(int limit) : limit_(limit) {}

  // Waits for room for one more request; false once the answers are over.
  bool Acquire() {
    absl::MutexLock lock(&mu_);
    while (count_ >= limit_ && !over_) room_.Wait(&mu_);
    if (over_) return false;
    ++count_;
    return true;
  }

  // A request was answered or, with `answered` false, the answers are over.
  void Answered(bool answered) {
    {
      absl::MutexLock lock(&mu_);
      if (answered) {
        --count_;
      } else {
        over_ = true;
      }
    }
    room_.Signal();
  }

 private:
  const int limit_;
  absl::Mutex mu_;
  absl::CondVar room_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  bool over_ ABSL_GUARDED_BY(mu_) = false;  // the stream has ended
};

// Reads `reader`'s examples and sends them down `stream` in requests of
// `batch` examples, as `in_flight` has room; then closes the stream's
// sending side. Returns what reading failed with, if anything.
absl::Status SendExamples(ExampleReader& reader, size_t batch, bool summary,
                          TrainingStream& stream, InFlight& in_flight) {
  absl::Status read_status;
  // Each request is built in an arena that is reset after it is sent. Its
  // first block is ours and outlives the resets, so a request that fits in
  // it (a thousand examples of a few dozen features do) allocates nothing:
  // blocks the allocator took back would fault their pages in again.
  constexpr size_t kFirstBlockBytes = size_t{8} << 20;
  const std::unique_ptr<char[]> first_block(new char[kFirstBlockBytes]);
  google::protobuf::ArenaOptions options;
  options.initial_block = first_block.get();
  options.initial_block_size = kFirstBlockBytes;
  options.start_block_size = size_t{1} << 16;
  options.max_block_size = size_t{1} << 22;
  google::protobuf::Arena arena(options);
  for (;; arena.Reset()) {
    v1::TrainRequest& request =
        *google::protobuf::Arena::CreateMessage<v1::TrainRequest>(&arena);
    absl::StatusOr<size_t> n = reader.Read(batch, *request.mutable_examples(),
                                           absl::GetFlag(FLAGS_flush_interval));
    if (!n.ok()) read_status = n.status();
    if (request.examples_size() == 0 || !in_flight.Acquire()) break;
    if (summary) request.set_results(v1::TRAIN_RESULTS_SUMMARY);
    if (!stream.Send(request).ok() || !n.ok()) break;
  }
  stream.CloseSend();
  return read_status;
}

// What a train stream's answers add up to, per model, and the lines they
// print: one per example's result, or with --summary (counts per request)
// only the errors.
class TrainTotals {
 public:
  TrainTotals(const std::vector<std::string>& models, bool summary)
      : models_(models), summary_(summary), totals_(models.size()) {}

  // Counts one response, appending its lines to `out`.
  void Add(const v1::TrainResponse& response, std::string& out) {
    if (response.has_summary() || response.model_summaries_size() > 0) {
      AddSummaries(response, out);
    } else {
      AddResults(response, out);
    }
  }

  // Examples answered so far.
  uint64_t examples() const { return index_; }

  // The first model's progress, for the progress line.
  std::string Progress() const {
    const Totals& first = totals_.front();
    return summary_ ? Counts(first.learned, first.updates, first.mistakes)
                    : absl::StrCat(first.updates, " updates");
  }

  // One line of totals per model: JSON with --json.
  void AppendTotals(bool json, std::string& out) const {
    for (size_t k = 0; k < models_.size(); ++k) {
      const Totals& t = totals_[k];
      const double average_loss = t.learned == 0 ? 0.0 : t.loss_sum / t.learned;
      if (json) {
        std::string line =
            JsonObject({{"examples", JsonNumber(t.learned)},
                        {"updates", JsonNumber(t.updates)},
                        {"average_loss", JsonNumber(average_loss)},
                        {"rejected", JsonNumber(t.rejected)}});
        if (fan_out()) {
          line =
              absl::StrCat("{\"model\":\"", models_[k], "\",", line.substr(1));
        }
        absl::StrAppend(&out, line, "\n");
      } else {
        if (fan_out()) absl::StrAppend(&out, models_[k], ": ");
        absl::StrAppend(&out, "examples=", t.learned, "  updates=", t.updates);
        if (summary_) absl::StrAppend(&out, "  mistakes=", t.mistakes);
        absl::StrAppend(&out, "  average_loss=", average_loss,
                        "  rejected=", t.rejected, "\n");
      }
    }
  }

  // INVALID_ARGUMENT saying how many results were rejections, if any.
  absl::Status Rejections() const {
    uint64_t rejected = 0;
    for (const Totals& t : totals_) rejected += t.rejected;
    if (rejected == 0) return absl::OkStatus();
    const uint64_t all = index_ * models_.size();
    return absl::InvalidArgumentError(absl::StrCat(
        rejected, " of ", all,
        fan_out() ? " results were rejections" : " examples were rejected",
        " (see the lines marked error); ",
        rejected == all ? "none was learned" : "the others were learned"));
  }

 private:
  struct Totals {
    uint64_t learned = 0, updates = 0, mistakes = 0, rejected = 0;
    double loss_sum = 0;
  };

  bool fan_out() const { return models_.size() > 1; }

  void AddSummaries(const v1::TrainResponse& response, std::string& out) {
    uint64_t examples = 0;
    for (size_t k = 0; k < models_.size(); ++k) {
      const v1::TrainSummary& s =
          fan_out() ? response.model_summaries(k) : response.summary();
      const std::string model = fan_out() ? models_[k] : "";
      for (const v1::ExampleError& e : s.errors()) {
        AppendError(index_ + e.index(), model, e.error(), out);
      }
      examples = s.examples() + s.duplicates() + s.errors_size();
      Totals& t = totals_[k];
      t.learned += s.examples();
      t.updates += s.updates();
      t.mistakes += s.mistakes();
      t.loss_sum += s.loss_sum();
      t.rejected += s.errors_size();
    }
    index_ += examples;
  }

  void AddResults(const v1::TrainResponse& response, std::string& out) {
    const int n =
        fan_out() ? response.fan_out_results_size() : response.results_size();
    for (int i = 0; i < n; ++i, ++index_) {
      for (size_t k = 0; k < models_.size(); ++k) {
        const v1::ExampleResult& r = fan_out()
                                         ? response.fan_out_results(i).models(k)
                                         : response.results(i);
        if (!summary_) {
          AppendResult(index_, fan_out() ? models_[k] : "", r, out);
        }
        Totals& t = totals_[k];
        if (r.has_error()) {
          ++t.rejected;
        } else if (!r.duplicate()) {
          ++t.learned;
          t.updates += r.updated();
          t.loss_sum += r.loss();
        }
      }
    }
  }

  const std::vector<std::string> models_;
  const bool summary_;
  std::vector<Totals> totals_;
  uint64_t index_ = 0;  // examples answered so far
};

// One pass over FILE, streamed (to several models at once when NAME lists
// them, each result line then naming its model): a thread reads and sends
// requests of --batch_size examples, up to kInFlight of them unanswered,
// while this one prints the responses as they come; memory stays constant
// however long the input. With --summary, the server sends counts per
// request, and only errors and the totals are printed.
absl::Status Train(Client& client, const std::string& names,
                   const std::string& path) {
  constexpr int kInFlight = 16;
  // NAME, or NAME,NAME,... for a fan-out stream (names have no commas).
  const std::vector<std::string> models = absl::StrSplit(names, ',');
  absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
      OpenExamples(client, models.front(), path);
  if (!reader.ok()) return reader.status();
  const size_t batch = std::max(1, absl::GetFlag(FLAGS_batch_size));
  const bool summary = absl::GetFlag(FLAGS_summary);
  std::unique_ptr<TrainingStream> stream = client.TrainFanOut(models);
  InFlight in_flight(kInFlight);
  absl::Status read_status;  // written by the sender, read after join
  std::thread sender([&] {
    read_status = SendExamples(**reader, batch, summary, *stream, in_flight);
  });
  TrainTotals totals(models, summary);
  std::string out;
  Progress progress("train");
  for (;;) {
    absl::StatusOr<v1::TrainResponse> response = stream->Receive();
    in_flight.Answered(response.ok());
    if (!response.ok()) break;
    totals.Add(*response, out);
    progress.Report(totals.examples(), totals.Progress());
    if (out.size() >= (size_t{1} << 16)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  sender.join();
  const absl::Status finished = stream->Finish();
  progress.End();
  totals.AppendTotals(absl::GetFlag(FLAGS_json), out);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (!finished.ok()) return finished;
  if (!read_status.ok()) return read_status;
  return totals.Rejections();
}

absl::Status Fit(Client& client, const std::string& name,
                 const std::string& path) {
  absl::StatusOr<std::vector<LabeledExample>> examples =
      ReadExamplesFor(client, name, path);
  if (!examples.ok()) return examples.status();
  FitOptions options;
  options.max_passes = absl::GetFlag(FLAGS_max_passes);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  Progress progress("fit");
  uint64_t seen = 0;
  options.on_pass = [&](const v1::PassSummary& pass) {
    seen += pass.examples();
    progress.Report(seen, absl::StrCat("pass ", pass.pass(), ": ",
                                       Counts(pass.examples(), pass.updates(),
                                              pass.mistakes())));
  };
  absl::StatusOr<FitReport> report = client.Fit(name, *examples, options);
  progress.End();
  if (!report.ok()) return report.status();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout
        << JsonObject(
               {{"passes", JsonNumber(report->passes)},
                {"updates", JsonNumber(report->updates)},
                {"converged", report->converged ? "true" : "false"},
                {"weight_norm", JsonNumber(report->weight_norm)},
                {"max_example_norm", JsonNumber(report->max_example_norm)},
                {"updates_per_pass",
                 absl::StrCat("[", absl::StrJoin(report->updates_per_pass, ","),
                              "]")}})
        << "\n";
    return absl::OkStatus();
  }
  std::cout << "passes=" << report->passes << "  updates=" << report->updates
            << "  converged=" << (report->converged ? "yes" : "no")
            << "  |w|=" << report->weight_norm
            << "  R=" << report->max_example_norm << "\nupdates per pass: "
            << absl::StrJoin(report->updates_per_pass, " ") << "\n";
  return absl::OkStatus();
}

absl::Status Evaluate(Client& client, const std::string& name,
                      const std::string& path) {
  absl::StatusOr<std::vector<LabeledExample>> examples =
      ReadExamplesFor(client, name, path);
  if (!examples.ok()) return examples.status();
  absl::StatusOr<v1::EvaluateResponse> r = client.Evaluate(name, *examples);
  if (!r.ok()) return r.status();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << Json(*r) << "\n";
    return absl::OkStatus();
  }
  std::cout << "examples=" << r->examples() << "  rejected=" << r->rejected()
            << "  accuracy=" << r->accuracy();
  if (r->has_log_loss()) std::cout << "  log_loss=" << r->log_loss();
  std::cout << "\n";
  for (const v1::ClassMetrics& c : r->classes()) {
    std::cout << "class " << c.label() << ": support=" << c.support()
              << "  precision=" << c.precision() << "  recall=" << c.recall()
              << "  f1=" << c.f1() << "\n";
  }
  std::cout << "confusion (true × predicted): "
            << absl::StrJoin(r->confusion(), " ") << "\n";
  if (r->rejected() > 0) {
    std::cout << "first rejection: " << r->first_error().message() << "\n";
  }
  return absl::OkStatus();
}

absl::Status Export(Client& client, const std::string& name,
                    const std::string& path) {
  absl::StatusOr<std::string> file = client.ExportModel(name);
  if (!file.ok()) return file.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << *file;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << JsonObject({{"bytes", JsonNumber(file->size())}}) << "\n";
  } else {
    std::cout << "exported '" << name << "' to " << path << " (" << file->size()
              << " bytes)\n";
  }
  return absl::OkStatus();
}

absl::Status Import(Client& client, const std::string& name,
                    const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const std::string file(std::istreambuf_iterator<char>(in), {});
  absl::StatusOr<v1::Model> model = client.ImportModel(name, file);
  if (model.ok()) PrintModel(*model);
  return model.status();
}

// Champion/challenger: each model's progressive accuracy and loss, in
// total and lately, and McNemar's test against the first.
absl::Status Compare(Client& client, const std::vector<char*>& args) {
  const std::vector<std::string> models(args.begin() + 2, args.end());
  absl::StatusOr<v1::CompareModelsResponse> r =
      client.CompareModels(models, absl::GetFlag(FLAGS_alpha));
  if (!r.ok()) return r.status();
  if (absl::GetFlag(FLAGS_json)) {
    for (const v1::ModelComparison& m : r->models()) {
      std::cout << Json(m) << "\n";
    }
    return absl::OkStatus();
  }
  for (const v1::ModelComparison& m : r->models()) {
    const v1::ModelStats& s = m.stats();
    // The window's mean loss if it keeps its losses, else the decayed one.
    std::cout << absl::StreamFormat(
        "%s  examples=%d  accuracy=%.4f  loss=%.4f  last %d: accuracy=%.4f "
        " %s=%.4f\n",
        m.model(), s.examples_seen(), s.progressive_accuracy(),
        s.average_loss(), s.window_examples(), s.window_accuracy(),
        s.has_window_loss() ? "loss" : "decayed loss",
        s.has_window_loss() ? s.window_loss() : s.decayed_loss());
    if (!m.has_versus_first()) continue;
    const v1::PairedTest& t = m.versus_first();
    std::cout << absl::StreamFormat(
        "  vs %s on %d shared examples: only %s wrong %d, only this wrong %d, "
        "both %d; accuracy %+.4f, chi2=%.3f, p=%.4g: %s\n",
        r->models(0).model(), t.examples(), r->models(0).model(),
        t.only_first_wrong(), t.only_this_wrong(), t.both_wrong(),
        t.accuracy_difference(), t.chi_square(), t.p_value(),
        t.significant() ? "significant" : "not significant");
  }
  return absl::OkStatus();
}

// Points ALIAS at MODEL: promotes a challenger in one call.
absl::Status Promote(Client& client, const std::string& alias,
                     const std::string& model) {
  std::optional<std::string> expected;
  if (absl::GetFlag(FLAGS_expected_model) != "*") {
    expected = absl::GetFlag(FLAGS_expected_model);
  }
  absl::StatusOr<v1::SetAliasResponse> r =
      client.SetAlias(alias, model, expected);
  if (!r.ok()) return r.status();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << Json(*r) << "\n";
  } else if (r->previous_model().empty()) {
    std::cout << alias << " -> " << model << " (new)\n";
  } else {
    std::cout << alias << " -> " << model << " (was " << r->previous_model()
              << ")\n";
  }
  return absl::OkStatus();
}

// The NATS cluster's options: --nats_url, else $HALFSPACE_NATS_URL, else
// the local default; the credentials and TLS flags.
BusOptions NatsFlags() {
  std::string urls = absl::GetFlag(FLAGS_nats_url);
  if (urls.empty() && std::getenv("HALFSPACE_NATS_URL") != nullptr) {
    urls = std::getenv("HALFSPACE_NATS_URL");
  }
  BusOptions options;
  options.urls = absl::StrSplit(urls.empty() ? "nats://127.0.0.1:4222" : urls,
                                ',', absl::SkipWhitespace());
  options.credentials_file = absl::GetFlag(FLAGS_nats_credentials);
  options.ca_file = absl::GetFlag(FLAGS_nats_tls_ca);
  options.cert_file = absl::GetFlag(FLAGS_nats_tls_cert);
  options.key_file = absl::GetFlag(FLAGS_nats_tls_key);
  return options;
}

// `publish NAME FILE`: FILE's lines to the replicated model's subject, as
// a producer publishes them; prints how many and at which positions.
absl::Status Publish(Client& client, const std::string& name,
                     const std::string& path) {
  absl::StatusOr<v1::Model> model = client.GetModel(name);
  if (!model.ok()) return model.status();
  if (!model->has_replica()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", model->name(),
        "' is not replicated: train it with 'halfspace train', or create a "
        "replicated model (create --replicate)"));
  }
  PublishPlan plan;
  plan.path = path;
  absl::StatusOr<ExampleFormat> format =
      ParseExampleFormat(absl::GetFlag(FLAGS_format), path);
  if (!format.ok()) return format.status();
  plan.format = *format;
  plan.multiclass = model->multiclass();
  plan.subject = model->replica().replication().subject();
  plan.lines_per_message = std::max(1, absl::GetFlag(FLAGS_batch_size));
  absl::StatusOr<std::unique_ptr<BusPublisher>> bus =
      BusPublisher::Connect(NatsFlags(), absl::Now() + absl::Seconds(10));
  if (!bus.ok()) return bus.status();
  PublishTotals totals;
  const absl::Status published = PublishLines(**bus, plan, totals);
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << JsonObject(
                     {{"published", absl::StrCat(totals.lines)},
                      {"messages", absl::StrCat(totals.messages)},
                      {"first_position", absl::StrCat(totals.first_position)},
                      {"last_position", absl::StrCat(totals.last_position)}})
              << "\n";
  } else {
    std::cout << "published=" << totals.lines
              << "  messages=" << totals.messages
              << "  positions=" << totals.first_position << ".."
              << totals.last_position << "\n";
  }
  return published;
}

// --server, else $HALFSPACE_SERVER, else localhost:50051.
std::string ServerAddress() {
  std::string server = absl::GetFlag(FLAGS_server);
  if (server.empty() && std::getenv("HALFSPACE_SERVER") != nullptr) {
    server = std::getenv("HALFSPACE_SERVER");
  }
  return server.empty() ? "localhost:50051" : server;
}

// The commands, for help and for "did you mean".
constexpr absl::string_view kCommands[] = {
    "aliases", "compare",  "create",  "delete",  "evaluate", "export",
    "drift",   "feedback", "fit",     "get",     "health",   "help",
    "import",  "list",     "predict", "promote", "publish",  "recent",
    "restore", "rollback", "train",   "unalias", "watch",    "weights"};

// The Levenshtein distance between a and b.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean X?)" for the candidate closest to `name`, if close.
template <typename Names>
std::string DidYouMean(absl::string_view name, const Names& candidates,
                       absl::string_view prefix = "") {
  absl::string_view best;
  size_t distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (absl::string_view candidate : candidates) {
    const size_t d = EditDistance(name, candidate);
    if (d < distance) {
      distance = d;
      best = candidate;
    }
  }
  return best.empty() ? ""
                      : absl::StrCat(" (did you mean ", prefix, best, "?)");
}

// A client of the server --server names, with the transport security and
// token the flags (or HALFSPACE_TOKEN) give.
absl::StatusOr<Client> ConnectToServer() {
  Client::ConnectOptions connect;
  connect.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  connect.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  connect.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  connect.token = absl::GetFlag(FLAGS_token);
  if (connect.token.empty() && std::getenv("HALFSPACE_TOKEN") != nullptr) {
    connect.token = std::getenv("HALFSPACE_TOKEN");
  }
  return Client::Connect(ServerAddress(), connect);
}

// `health [SERVICE]`: UNAVAILABLE unless it is serving.
absl::Status Health(Client& client, const std::vector<char*>& args) {
  using grpc::health::v1::HealthCheckResponse;
  absl::StatusOr<HealthCheckResponse::ServingStatus> status =
      client.Health(args.size() == 3 ? args[2] : "");
  if (!status.ok()) return status.status();
  HealthCheckResponse response;
  response.set_status(*status);
  std::cout << (absl::GetFlag(FLAGS_json)
                    ? Json(response)
                    : HealthCheckResponse::ServingStatus_Name(*status))
            << "\n";
  if (*status != HealthCheckResponse::SERVING) {
    return absl::UnavailableError("the server is not serving");
  }
  return absl::OkStatus();
}

absl::Status Aliases(Client& client) {
  absl::StatusOr<std::vector<v1::Alias>> aliases = client.ListAliases();
  if (!aliases.ok()) return aliases.status();
  for (const v1::Alias& a : *aliases) {
    std::cout << (absl::GetFlag(FLAGS_json)
                      ? Json(a)
                      : absl::StrCat(a.alias(), " -> ", a.model()))
              << "\n";
  }
  return absl::OkStatus();
}

absl::Status Unalias(Client& client, const std::string& alias) {
  absl::StatusOr<std::string> model = client.DeleteAlias(alias);
  if (!model.ok()) return model.status();
  std::cout << (absl::GetFlag(FLAGS_json)
                    ? JsonObject({{"model", absl::StrCat("\"", *model, "\"")}})
                    : absl::StrCat(alias, " no longer points to ", *model))
            << "\n";
  return absl::OkStatus();
}

absl::Status Weights(Client& client, const std::string& name) {
  absl::StatusOr<v1::GetWeightsResponse> w = client.GetWeights(name);
  if (!w.ok()) return w.status();
  if (absl::GetFlag(FLAGS_json)) {
    std::cout << Json(*w) << "\n";
  } else {
    std::cout << "w=" << absl::StrJoin(w->weights(), ",") << "\nb=" << w->bias()
              << "\n";
  }
  return absl::OkStatus();
}

absl::Status Recent(Client& client, const std::string& name) {
  absl::StatusOr<std::vector<v1::RecentExample>> recent =
      client.GetRecentExamples(name);
  if (!recent.ok()) return recent.status();
  for (const v1::RecentExample& e : *recent) {
    if (absl::GetFlag(FLAGS_json)) {
      std::cout << Json(e) << "\n";
      continue;
    }
    std::cout << absl::StrJoin(e.features(), ",") << " "
              << (e.class_label().empty()
                      ? absl::StrCat(e.label() > 0 ? "+" : "", e.label())
                      : e.class_label())
              << (e.mistake() ? " wrong" : "") << "\n";
  }
  return absl::OkStatus();
}

// Sets the model's drift detector and reaction to --drift (none: removes
// them), and prints the model.
absl::Status SetDrift(Client& client, const std::string& name) {
  const std::string text = absl::GetFlag(FLAGS_drift);
  if (text.empty()) {
    return absl::InvalidArgumentError(
        "drift NAME needs --drift: adwin, page_hinkley, ddm or one with "
        "settings, e.g. 'adwin { delta: 0.002 } challenge {}'; or none to "
        "remove the detector");
  }
  std::optional<v1::DriftDetection> drift;
  if (text != "none") {
    absl::StatusOr<v1::DriftDetection> parsed = ParseDriftDetection(text);
    if (!parsed.ok()) return parsed.status();
    drift = *std::move(parsed);
  }
  absl::StatusOr<v1::Model> model = client.SetDriftDetection(name, drift);
  if (model.ok()) PrintModel(*model);
  return model.status();
}

// "drift at 3057", "switched at 3100 (p=0.0078)".
void PrintEvent(const v1::ModelEvent& e) {
  static constexpr const char* kKinds[] = {"?",          "warning",
                                           "drift",      "challenger started",
                                           "switched",   "challenger dropped",
                                           "rolled back"};
  const int kind = e.kind() >= 0 && e.kind() <= 6 ? e.kind() : 0;
  std::cout << kKinds[kind] << " at " << e.position();
  if (e.has_p_value()) std::cout << " (p=" << e.p_value() << ")";
  std::cout << "\n";
}

// The model's drift state, then each event, until --count of them or the
// server ends the watch.
absl::Status Watch(Client& client, const std::string& name) {
  const int64_t from = absl::GetFlag(FLAGS_from_position);
  const int64_t count = absl::GetFlag(FLAGS_count);
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--count is ", count, "; use 0 (no end) or more"));
  }
  std::unique_ptr<ModelWatch> watch = client.WatchModel(
      name, from >= 0 ? std::optional<uint64_t>(from) : std::nullopt);
  absl::StatusOr<v1::WatchModelResponse> first = watch->Start();
  if (!first.ok()) return first.status();
  const bool json = absl::GetFlag(FLAGS_json);
  if (json) {
    std::cout << Json(*first) << std::endl;
  } else {
    std::cout << "watching " << first->model();
    if (from >= 0) {
      std::cout << " from " << from
                << (first->complete() ? "" : " (earlier events are not kept)");
    }
    std::cout << "\n";
    if (first->has_drift()) {
      PrintDrift(v1::DriftDetection(), first->drift());
    } else {
      std::cout << "  no drift detector\n";
    }
    std::cout << std::flush;
  }
  for (int64_t seen = 0; count == 0 || seen < count; ++seen) {
    absl::StatusOr<v1::ModelEvent> event = watch->Next();
    if (!event.ok()) return event.status();
    if (json) {
      std::cout << "{\"event\":" << Json(*event) << "}" << std::endl;
    } else {
      PrintEvent(*event);
      std::cout << std::flush;
    }
  }
  watch->Cancel();
  return absl::OkStatus();
}

// A command that names a model (args[2]).
absl::Status RunOnModel(Client& client, const std::vector<char*>& args) {
  const std::string command = args[1];
  const std::string name = args[2];
  if (command == "create") return Create(client, name);
  if (command == "get" || command == "restore" || command == "rollback") {
    absl::StatusOr<v1::Model> model = command == "get" ? client.GetModel(name)
                                      : command == "restore"
                                          ? client.RestoreModel(name)
                                          : client.RollBackModel(name);
    if (model.ok()) PrintModel(*model);
    return model.status();
  }
  if (command == "delete") {
    absl::Status deleted = client.DeleteModel(name);
    if (deleted.ok() && absl::GetFlag(FLAGS_json)) std::cout << "{}\n";
    return deleted;
  }
  if (command == "drift") return SetDrift(client, name);
  if (command == "weights") return Weights(client, name);
  if (command == "recent") return Recent(client, name);
  if (command == "watch") return Watch(client, name);
  if (command == "predict") return Predict(client, name, args);
  if (command == "feedback" && args.size() > 3) {
    return Feedback(client, name, args);
  }
  if (args.size() == 4) {
    if (command == "export") return Export(client, name, args[3]);
    if (command == "import") return Import(client, name, args[3]);
    if (command == "train") return Train(client, name, args[3]);
    if (command == "fit") return Fit(client, name, args[3]);
    if (command == "evaluate") return Evaluate(client, name, args[3]);
    if (command == "publish") return Publish(client, name, args[3]);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("wrong arguments for '", command, "'; see halfspace help"));
}

absl::Status Run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    return absl::InvalidArgumentError("no command; see halfspace help");
  }
  if (std::find(std::begin(kCommands), std::end(kCommands),
                absl::string_view(args[1])) == std::end(kCommands)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command '", args[1], "'",
                     DidYouMean(args[1], kCommands), "; see halfspace help"));
  }
  absl::StatusOr<Client> connected = ConnectToServer();
  if (!connected.ok()) return connected.status();
  Client& client = *connected;
  const std::string progress = absl::GetFlag(FLAGS_progress);
  if (progress != "auto" && progress != "always" && progress != "never") {
    return absl::InvalidArgumentError(
        absl::StrCat("--progress=", progress, ": give auto, always or never"));
  }
  const std::string command = args[1];
  if (command == "health" && args.size() <= 3) return Health(client, args);
  if (command == "list") {
    absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
    if (!models.ok()) return models.status();
    for (const v1::Model& m : *models) PrintModel(m);
    return absl::OkStatus();
  }
  if (command == "aliases") return Aliases(client);
  if (command == "compare" && args.size() >= 4) return Compare(client, args);
  if (command == "promote" && args.size() == 4) {
    return Promote(client, args[2], args[3]);
  }
  if (args.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", command, "' needs a model name"));
  }
  if (command == "unalias") return Unalias(client, args[2]);
  return RunOnModel(client, args);
}

// The usage, and this program's flags (not those of the libraries).
void PrintUsage() {
  std::cout << "usage: " << absl::ProgramUsageMessage() << "\n\nflags:\n";
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), "client/cli_main.cc")) {
      flags.push_back(flag);
    }
  }
  std::sort(flags.begin(), flags.end(),
            [](auto* a, auto* b) { return a->Name() < b->Name(); });
  for (const absl::CommandLineFlag* flag : flags) {
    std::cout << "  --" << flag->Name() << "  " << flag->Help()
              << " (default: " << flag->DefaultValue() << ")\n";
  }
}

// INVALID_ARGUMENT for the first "--name" in `argv` that is no flag, with
// the closest that is; OK if every one is.
absl::Status CheckFlags(int argc, char** argv) {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::EndsWith(flag->Filename(), "client/cli_main.cc")) {
      names.emplace_back(name);
    }
  }
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) {
      continue;
    }
    const absl::string_view name = arg.substr(0, arg.find('='));
    if (name.empty() || absl::ascii_isdigit(name[0]) || name[0] == '.' ||
        absl::FindCommandLineFlag(name) != nullptr ||
        (absl::StartsWith(name, "no") &&
         absl::FindCommandLineFlag(name.substr(2)) != nullptr)) {
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown flag --", name, DidYouMean(name, names, "--"),
                     "; see halfspace help"));
  }
  return absl::OkStatus();
}

// A failure to connect says where it tried and how to choose another.
absl::Status Explained(const absl::Status& status) {
  if (!absl::IsUnavailable(status) ||
      !absl::StrContains(status.message(), "failed to connect")) {
    return status;
  }
  return absl::UnavailableError(
      absl::StrCat("cannot reach a halfspace server at ", ServerAddress(), " (",
                   status.message(),
                   "); start one, or name another with "
                   "--server=HOST:PORT or $HALFSPACE_SERVER"));
}

}  // namespace
}  // namespace halfspace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "halfspace [--server=HOST:PORT] [--json] COMMAND [ARGS]\n"
      "  create NAME --dimension=D [--algorithm=NAME|'NAME { PARAMETERS }']\n"
      "    [--one_vs_rest] [--classes=a,b] [--standardize] [--hash_bits=B]\n"
      "    [--fit_intercept=false] [--progress_window=N] [--window_losses]\n"
      "    [--drift=adwin|page_hinkley|ddm|'adwin { delta: D }']\n"
      "    [--selective_sampling=B|'b: B seed: S']\n"
      "    [--replicate [--stream=S] [--subject=S] [--replicas=N]]\n"
      "  get NAME | list | delete NAME | weights NAME\n"
      "  recent NAME       (a model of dimension 1 or 2: its last examples,\n"
      "                    x label [wrong])\n"
      "  health [SERVICE]  (SERVING or not; exit status 0 only if SERVING)\n"
      "  predict NAME [--] INSTANCE [INSTANCE ...]  (-- before a negative x1;\n"
      "                    an instance is x1,x2,..., index:value ... or\n"
      "                    '|ns name[:value] ...', as --format or as it "
      "looks)\n"
      "  predict NAME --input=FILE  (one instance a line; - for stdin)\n"
      "    [--remember [--example_ids=ID1,ID2,...]]  (keep them for feedback)\n"
      "    [--query]        (whether to ask each label: selective sampling)\n"
      "    [--top_k=K]      (a multiclass model's K best class scores)\n"
      "    [--min_position=P]  (a replica: once it has applied position P)\n"
      "  feedback NAME ID:LABEL [ID:LABEL ...]  (delayed labels of remembered\n"
      "                    predictions; a multiclass model's label is a "
      "class)\n"
      "  train NAME FILE   (CSV lines label,x1,...,xd, LibSVM lines\n"
      "                    label index:value ... or VW lines label |ns f:v "
      "...;\n"
      "                    - for stdin; a multiclass model's label is the\n"
      "                    class name; --summary)\n"
      "  train NAME,NAME,... FILE  (one stream trains every model, in order)\n"
      "  compare NAME NAME [NAME ...]  (champion first: progressive accuracy\n"
      "                    and loss, McNemar's test against it; --alpha)\n"
      "  promote ALIAS MODEL  (point ALIAS at MODEL; --expected_model)\n"
      "  aliases | unalias ALIAS\n"
      "  fit NAME FILE     (passes until no updates; --max_passes)\n"
      "  publish NAME FILE  (FILE's lines to a replicated model's subject on\n"
      "                    NATS: --nats_url; - for stdin; --batch_size lines\n"
      "                    a message)\n"
      "  evaluate NAME FILE  (accuracy, per-class metrics, confusion matrix)\n"
      "  export NAME FILE  (the model's whole state, one file)\n"
      "  import NAME FILE  (a new model NAME from an exported file)\n"
      "  restore NAME      (an unavailable model back to its previous "
      "snapshot)\n"
      "  rollback NAME     (the weights the drift reaction replaced, back)\n"
      "  drift NAME --drift=SPEC  (sets the drift detector and reaction, as\n"
      "                    create's --drift; none removes them)\n"
      "  watch NAME        (the drift state, then each event as it comes:\n"
      "                    --from_position=P for the kept ones from P on,\n"
      "                    --count=N to stop after N)");
  for (int i = 1; i < argc; ++i) {  // help, before anything else
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg == "--help" || arg == "-help" || arg == "-h" ||
        arg == "--helpfull") {
      halfspace::PrintUsage();
      return 0;
    }
  }
  if (absl::Status s = halfspace::CheckFlags(argc, argv); !s.ok()) {
    std::cerr << "halfspace: " << s << "\n";
    return 1;
  }
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() >= 2 && absl::string_view(args[1]) == "help") {
    halfspace::PrintUsage();
    return 0;
  }
  absl::Status status = halfspace::Explained(halfspace::Run(args));
  if (!status.ok()) {
    std::cerr << "halfspace: " << status << "\n";
    return 1;
  }
  return 0;
}
