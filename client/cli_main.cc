// halfspace: a command-line client for the halfspace service.
//
//   halfspace [--server=HOST:PORT] COMMAND [ARGS]
//
//   create NAME --dimension=D [--algorithm=NAME or 'NAME { PARAMETERS }',
//               e.g. perceptron or 'sgd { loss: LOSS_LOG alpha: 0.001 }']
//               [--one_vs_rest] [--classes=a,b,c] [--standardize]
//               [--hash_bits=B]
//   get NAME | list | delete NAME | weights NAME
//   predict NAME X1,X2,...  [more vectors]
//   train NAME FILE         one pass over FILE (CSV: label,x1,...,xd; "-" is
//                           stdin), printing one line per example
//   fit NAME FILE           passes over FILE until one makes no updates
//                           (--max_passes)
//   evaluate NAME FILE      scores FILE without learning
//   export NAME FILE        writes the model's whole state to FILE
//   import NAME FILE        creates model NAME from an exported FILE
//   restore NAME            rolls an unavailable model back to its previous
//                           snapshot

#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/halfspace_client.h"
#include "google/protobuf/text_format.h"

ABSL_FLAG(std::string, server, "localhost:50051", "the server's host:port");
ABSL_FLAG(std::string, token, "",
          "a bearer token for a server with --tokens_file (default: the "
          "HALFSPACE_TOKEN environment variable)");
ABSL_FLAG(std::string, tls_ca, "",
          "PEM roots that signed the server's certificate: connect with TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "a PEM client certificate, for a server with mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "the private key of --tls_cert");
ABSL_FLAG(std::string, algorithm, "perceptron",
          "create: perceptron, averaged_perceptron, pocket_perceptron, "
          "passive_aggressive, logistic_regression, sgd, "
          "multiclass_perceptron or softmax_regression; with parameters, the "
          "halfspace.v1.Algorithm in protobuf text format, e.g. "
          "'logistic_regression { learning_rate: 0.1 l2: 0.01 }'");
ABSL_FLAG(int64_t, dimension, 0, "create: the feature dimension");
ABSL_FLAG(bool, one_vs_rest, false,
          "create: one binary model per class (a multiclass model)");
ABSL_FLAG(std::vector<std::string>, classes, {},
          "create: a multiclass model's first classes, e.g. cat,dog");
ABSL_FLAG(bool, standardize, false,
          "create: learn on online-standardized features");
ABSL_FLAG(uint32_t, hash_bits, 0,
          "create: 2^hash_bits buckets for named features (0 to 24)");
ABSL_FLAG(int, max_passes, 100, "fit: the most passes over the data");
ABSL_FLAG(int, batch_size, 256, "train, fit: examples per request");

namespace halfspace {
namespace {

absl::Status ParseVector(absl::string_view text, std::vector<double>& out) {
  out.clear();
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    double value = 0;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(field), &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", field, "' is not a number"));
    }
    out.push_back(value);
  }
  return absl::OkStatus();
}

// Reads "label,x1,...,xd" lines; blank lines and lines starting with '#' are
// skipped.
// Reads "label,x1,...,xd" lines; blank lines and lines starting with '#' are
// skipped. For a multiclass model the label is the class's name, else -1 or
// +1.
absl::StatusOr<std::vector<LabeledExample>> ReadExamples(
    const std::string& path, bool multiclass) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::vector<LabeledExample> examples;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    const std::vector<absl::string_view> fields =
        absl::StrSplit(text, absl::MaxSplits(',', 1));
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_number, ": ", what));
    };
    if (fields.size() < 2) return error("expected label,x1,...,xd");
    LabeledExample example;
    if (absl::Status s = ParseVector(fields[1], example.features); !s.ok()) {
      return error(s.message());
    }
    const absl::string_view label = absl::StripAsciiWhitespace(fields[0]);
    double value = 0;
    if (multiclass) {
      example.class_label = std::string(label);
    } else if (!absl::SimpleAtod(label, &value) || value != std::trunc(value) ||
               std::abs(value) > 1e9) {
      return error(absl::StrCat("the label ", label,
                                " is not an integer; labels are -1 and +1"));
    } else {
      example.label = static_cast<int>(value);
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

// Reads examples for model `name`, in the form its kind takes.
absl::StatusOr<std::vector<LabeledExample>> ReadExamplesFor(
    Client& client, const std::string& name, const std::string& path) {
  absl::StatusOr<v1::Model> model = client.GetModel(name);
  if (!model.ok()) return model.status();
  const bool multiclass = model->one_vs_rest() ||
                          model->algorithm().has_multiclass_perceptron() ||
                          model->algorithm().has_softmax_regression();
  return ReadExamples(path, multiclass);
}

void PrintModel(const v1::Model& m) {
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
            << "\n  examples_seen="
            << s.examples_seen() << "  updates=" << s.updates()
            << "  mistakes=" << s.mistakes()
            << "  average_loss=" << s.average_loss()
            << "  |w|=" << s.weight_norm() << "  b=" << s.bias()
            << "  R=" << s.max_example_norm() << "\n";
  if (m.classes_size() > 0 || m.one_vs_rest()) {
    std::cout << "  classes: " << absl::StrJoin(m.classes(), ",")
              << (m.one_vs_rest() ? "  (one-vs-rest)" : "") << "\n";
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
  for (const std::string& label : absl::GetFlag(FLAGS_classes)) {
    request.add_classes(label);
  }
  absl::StatusOr<v1::Model> model = client.CreateModel(request);
  if (!model.ok()) return model.status();
  PrintModel(*model);
  return absl::OkStatus();
}

absl::Status Predict(Client& client, const std::string& name,
                     const std::vector<char*>& args) {
  std::vector<std::vector<double>> instances(args.size() - 3);
  for (size_t i = 3; i < args.size(); ++i) {
    if (absl::Status s = ParseVector(args[i], instances[i - 3]); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<std::vector<v1::Prediction>> predictions =
      client.Predict(name, instances);
  if (!predictions.ok()) return predictions.status();
  for (const v1::Prediction& p : *predictions) {
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
    if (p.has_signed_distance()) std::cout << "  distance=" << p.signed_distance();
    if (p.has_probability()) std::cout << "  probability=" << p.probability();
    std::cout << "\n";
  }
  return absl::OkStatus();
}

absl::Status Train(Client& client, const std::string& name,
                   const std::string& path) {
  absl::StatusOr<std::vector<LabeledExample>> examples = ReadExamplesFor(client, name, path);
  if (!examples.ok()) return examples.status();
  std::unique_ptr<TrainingStream> stream = client.Train(name);
  const size_t batch = std::max(1, absl::GetFlag(FLAGS_batch_size));
  absl::Span<const LabeledExample> all(*examples);
  for (size_t first = 0; first < all.size(); first += batch) {
    if (!stream->Send(all.subspan(first, batch)).ok()) break;
    absl::StatusOr<v1::TrainResponse> response = stream->Receive();
    if (!response.ok()) break;
    for (int j = 0; j < response->results_size(); ++j) {
      const v1::ExampleResult& r = response->results(j);
      std::cout << first + j << ": ";
      if (r.has_error()) {
        std::cout << "error: " << r.error().message() << "\n";
        continue;
      }
      std::cout << "score=" << r.score() << "  margin=" << r.margin()
                << "  updated=" << (r.updated() ? "yes" : "no")
                << "  loss=" << r.loss();
      if (r.has_probability()) std::cout << "  probability=" << r.probability();
      if (!r.predicted_class().empty()) {
        std::cout << "  predicted=" << r.predicted_class();
      }
      std::cout << "\n";
    }
  }
  return stream->Finish();
}

absl::Status Fit(Client& client, const std::string& name,
                 const std::string& path) {
  absl::StatusOr<std::vector<LabeledExample>> examples = ReadExamplesFor(client, name, path);
  if (!examples.ok()) return examples.status();
  FitOptions options;
  options.max_passes = absl::GetFlag(FLAGS_max_passes);
  options.batch_size = absl::GetFlag(FLAGS_batch_size);
  absl::StatusOr<FitReport> report = client.Fit(name, *examples, options);
  if (!report.ok()) return report.status();
  std::cout << "passes=" << report->passes << "  updates=" << report->updates
            << "  converged=" << (report->converged ? "yes" : "no")
            << "  |w|=" << report->weight_norm
            << "  R=" << report->max_example_norm
            << "\nupdates per pass: "
            << absl::StrJoin(report->updates_per_pass, " ") << "\n";
  return absl::OkStatus();
}

absl::Status Evaluate(Client& client, const std::string& name,
                      const std::string& path) {
  absl::StatusOr<std::vector<LabeledExample>> examples = ReadExamplesFor(client, name, path);
  if (!examples.ok()) return examples.status();
  absl::StatusOr<v1::EvaluateResponse> r = client.Evaluate(name, *examples);
  if (!r.ok()) return r.status();
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
  std::cout << "exported '" << name << "' to " << path << " (" << file->size()
            << " bytes)\n";
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

absl::Status Run(const std::vector<char*>& args) {
  if (args.size() < 2) {
    return absl::InvalidArgumentError("no command; see --help");
  }
  Client::ConnectOptions connect;
  connect.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  connect.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  connect.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  connect.token = absl::GetFlag(FLAGS_token);
  if (connect.token.empty() && std::getenv("HALFSPACE_TOKEN") != nullptr) {
    connect.token = std::getenv("HALFSPACE_TOKEN");
  }
  absl::StatusOr<Client> connected =
      Client::Connect(absl::GetFlag(FLAGS_server), connect);
  if (!connected.ok()) return connected.status();
  Client& client = *connected;
  const std::string command = args[1];
  if (command == "list") {
    absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
    if (!models.ok()) return models.status();
    for (const v1::Model& m : *models) PrintModel(m);
    return absl::OkStatus();
  }
  if (args.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", command, "' needs a model name"));
  }
  const std::string name = args[2];
  if (command == "create") return Create(client, name);
  if (command == "get") {
    absl::StatusOr<v1::Model> model = client.GetModel(name);
    if (model.ok()) PrintModel(*model);
    return model.status();
  }
  if (command == "delete") return client.DeleteModel(name);
  if (command == "restore") {
    absl::StatusOr<v1::Model> model = client.RestoreModel(name);
    if (model.ok()) PrintModel(*model);
    return model.status();
  }
  if (command == "weights") {
    absl::StatusOr<v1::GetWeightsResponse> w = client.GetWeights(name);
    if (!w.ok()) return w.status();
    std::cout << "w=" << absl::StrJoin(w->weights(), ",") << "\nb=" << w->bias()
              << "\n";
    return absl::OkStatus();
  }
  if (command == "predict" && args.size() > 3) {
    return Predict(client, name, args);
  }
  if (args.size() == 4) {
    if (command == "export") return Export(client, name, args[3]);
    if (command == "import") return Import(client, name, args[3]);
    if (command == "train") return Train(client, name, args[3]);
    if (command == "fit") return Fit(client, name, args[3]);
    if (command == "evaluate") return Evaluate(client, name, args[3]);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown command or wrong arguments: '", command,
                   "'; see --help"));
}

}  // namespace
}  // namespace halfspace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "halfspace [--server=HOST:PORT] COMMAND [ARGS]\n"
      "  create NAME --dimension=D [--algorithm=NAME|'NAME { PARAMETERS }']\n"
      "    [--one_vs_rest] [--classes=a,b] [--standardize] [--hash_bits=B]\n"
      "  get NAME | list | delete NAME | weights NAME\n"
      "  predict NAME [--] X1,X2,... [X1,X2,... ...]   (-- before a negative X1)\n"
      "  train NAME FILE   (CSV lines label,x1,...,xd; - for stdin; a multiclass\n"
      "                    model's label is the class name)\n"
      "  fit NAME FILE     (passes until no updates; --max_passes)\n"
      "  evaluate NAME FILE  (accuracy, per-class metrics, confusion matrix)\n"
      "  export NAME FILE  (the model's whole state, one file)\n"
      "  import NAME FILE  (a new model NAME from an exported file)\n"
      "  restore NAME      (an unavailable model back to its previous snapshot)");
  // --help lists this file's flags (by default, absl lists those of files
  // named after the binary).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "client/cli_main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  absl::Status status = halfspace::Run(args);
  if (!status.ok()) {
    std::cerr << "halfspace: " << status << "\n";
    return 1;
  }
  return 0;
}
