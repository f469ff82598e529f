#include "client/halfspace_client.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <thread>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/example_text.h"
#include "core/features/feature_hash.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace halfspace {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

namespace {

// `text` in protobuf text format: a bare name ("ddm") as the message field
// of that name with nothing set ("ddm {}").
std::string TextFormatOf(const std::string& text) {
  const bool bare_name = text.find_first_of("{:") == std::string::npos;
  return bare_name ? absl::StrCat(text, " {}") : text;
}

}  // namespace

absl::StatusOr<v1::Algorithm> ParseAlgorithm(const std::string& text) {
  const std::string proto = TextFormatOf(text);
  v1::Algorithm algorithm;
  google::protobuf::TextFormat::Parser parser;
  if (!parser.ParseFromString(proto, &algorithm) ||
      algorithm.algorithm_case() == v1::Algorithm::ALGORITHM_NOT_SET) {
    const google::protobuf::OneofDescriptor& algorithms =
        *v1::Algorithm::descriptor()->oneof_decl(0);
    std::vector<std::string> names;
    for (int i = 0; i < algorithms.field_count(); ++i) {
      names.push_back(algorithms.field(i)->name());
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text, "' is not an algorithm: give a name (",
        absl::StrJoin(names, ", "),
        ") or one in protobuf text format, e.g. 'sgd { loss: LOSS_LOG }'"));
  }
  return algorithm;
}

absl::StatusOr<v1::DriftDetection> ParseDriftDetection(
    const std::string& text) {
  const std::string proto = TextFormatOf(text);
  v1::DriftDetection drift;
  google::protobuf::TextFormat::Parser parser;
  if (!parser.ParseFromString(proto, &drift) ||
      drift.method_case() == v1::DriftDetection::METHOD_NOT_SET) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text,
        "' is not a drift detector: give a method (adwin, page_hinkley, ddm) "
        "or one in protobuf text format, e.g. 'adwin { delta: 0.002 }'"));
  }
  return drift;
}

absl::StatusOr<v1::SelectiveSampling> ParseSelectiveSampling(
    const std::string& text) {
  v1::SelectiveSampling sampling;
  double b = 0;
  if (absl::SimpleAtod(text, &b)) {
    sampling.set_b(b);
    return sampling;
  }
  google::protobuf::TextFormat::Parser parser;
  if (!parser.ParseFromString(text, &sampling)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", text,
        "' is not a selective sampling setting: give b (e.g. 0.5), or b "
        "and a seed in protobuf text format, e.g. 'b: 0.5 seed: 3'"));
  }
  return sampling;
}

namespace {

void AddExamples(absl::Span<const LabeledExample> examples,
                 google::protobuf::RepeatedPtrField<v1::Example>* out) {
  for (const LabeledExample& e : examples) {
    v1::Example* example = out->Add();
    v1::FeatureVector* x = example->mutable_features();
    x->mutable_dense()->Add(e.features.begin(), e.features.end());
    example->set_label(e.label);
    if (e.weight != 1.0) example->set_weight(e.weight);
    if (!e.class_label.empty()) example->set_class_label(e.class_label);
    if (!e.sparse_indices.empty() || !e.sparse_values.empty()) {
      v1::SparseVector* sparse = x->mutable_sparse();
      sparse->mutable_indices()->Add(e.sparse_indices.begin(),
                                     e.sparse_indices.end());
      sparse->mutable_values()->Add(e.sparse_values.begin(),
                                    e.sparse_values.end());
    }
    // Named features go hashed, as the server would hash them: a group's
    // name once per run of its features, four bytes a name.
    v1::HashedGroup* group = nullptr;
    uint32_t seed = 0;
    for (const NamedValue& f : e.named) {
      if (group == nullptr || group->group() != f.group) {
        group = x->add_hashed();
        group->set_group(f.group);
        seed = GroupSeed(f.group);
      }
      AddHashedFeature(FeatureHash(f.name, seed), f.value, *group);
    }
  }
}

// A paged response read whole: the first page (as much as fits), then each
// from the last one's next_offset, joined to the first by `join`. A page of
// another version than the first, one `join` refuses, or a later page the
// server refuses as out of range (the thing shrank) means it changed while
// it was read: the read starts again, up to kTries times, and then fails
// with ABORTED, saying `changed` and `advice`.
template <typename Request, typename Fetch, typename Join>
auto ReadInPages(Request request, Fetch fetch, Join join,
                 const std::string& changed, absl::string_view advice)
    -> decltype(fetch(request)) {
  constexpr int kTries = 5;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    request.set_offset(0);
    request.set_page_size(std::numeric_limits<int64_t>::max());  // all that fit
    auto whole = fetch(request);
    if (!whole.ok()) return whole.status();
    bool torn = false;
    while (whole->next_offset() != 0 && !torn) {
      request.set_offset(whole->next_offset());
      auto page = fetch(request);
      if (!page.ok() && !absl::IsInvalidArgument(page.status())) {
        return page.status();
      }
      torn = !page.ok() || page->version() != whole->version() ||
             !join(*whole, *page);
      if (!torn) whole->set_next_offset(page->next_offset());
    }
    if (!torn) return whole;
  }
  return absl::AbortedError(
      absl::StrCat(changed, ", ", kTries, " times; ", advice));
}

}  // namespace

// --- TrainingStream
// -----------------------------------------------------------

absl::Status TrainingStream::Send(absl::Span<const LabeledExample> examples,
                                  bool end_of_pass) {
  v1::TrainRequest request;
  request.set_end_of_pass(end_of_pass);
  AddExamples(examples, request.mutable_examples());
  return Send(request);
}

absl::Status TrainingStream::Send(v1::TrainRequest& request) {
  request.clear_model();
  request.clear_models();
  request.clear_source();
  if (!named_) {
    if (models_.size() == 1) {
      request.set_model(models_.front());
    } else {
      request.mutable_models()->Assign(models_.begin(), models_.end());
    }
    request.set_source(source_);
  }
  if (!source_.empty()) {
    request.set_sequence(next_sequence_);
    next_sequence_ += request.examples_size();
  }
  if (!stream_->Write(request)) {
    return absl::AbortedError(
        "the training stream is closed; Finish() returns the reason");
  }
  named_ = true;
  return absl::OkStatus();
}

absl::StatusOr<v1::TrainResponse> TrainingStream::Receive() {
  v1::TrainResponse response;
  if (!stream_->Read(&response)) {
    return absl::OutOfRangeError(
        "the training stream has ended; Finish() returns its status");
  }
  return response;
}

void TrainingStream::CloseSend() {
  if (send_closed_) return;
  send_closed_ = true;
  stream_->WritesDone();
}

absl::Status TrainingStream::Finish() {
  if (finished_) return status_;
  finished_ = true;
  CloseSend();
  v1::TrainResponse unread;
  while (stream_->Read(&unread)) {
  }
  status_ = FromGrpcStatus(stream_->Finish());
  return status_;
}

void TrainingStream::Cancel() { context_.TryCancel(); }

// --- PredictionStream --------------------------------------------------------

absl::Status PredictionStream::Send(const v1::PredictStreamRequest& request) {
  if (!stream_->Write(request)) {
    return absl::AbortedError(
        "the prediction stream is closed; Finish() returns the reason");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PredictStreamResponse> PredictionStream::Receive() {
  v1::PredictStreamResponse response;
  if (!stream_->Read(&response)) {
    return absl::OutOfRangeError(
        "the prediction stream has ended; Finish() returns its status");
  }
  return response;
}

absl::StatusOr<std::vector<v1::Prediction>> PredictionStream::Predict(
    const v1::PredictStreamRequest& request) {
  if (absl::Status s = Send(request); !s.ok()) return s;
  absl::StatusOr<v1::PredictStreamResponse> response = Receive();
  if (!response.ok()) return response.status();
  if (response->has_error()) {
    return absl::Status(static_cast<absl::StatusCode>(response->error().code()),
                        response->error().message());
  }
  return std::vector<v1::Prediction>(response->predictions().begin(),
                                     response->predictions().end());
}

absl::Status PredictionStream::Finish() {
  if (finished_) return status_;
  finished_ = true;
  stream_->WritesDone();
  v1::PredictStreamResponse unread;
  while (stream_->Read(&unread)) {
  }
  status_ = FromGrpcStatus(stream_->Finish());
  return status_;
}

absl::Status ModelWatch::End() {
  if (!status_.has_value()) {
    absl::Status s = FromGrpcStatus(stream_->Finish());
    if (s.ok()) {
      s = absl::UnavailableError("the server ended the watch without a status");
    }
    status_ = s;
  }
  return *status_;
}

absl::StatusOr<v1::WatchModelResponse> ModelWatch::Start() {
  if (started_) {
    return absl::FailedPreconditionError("the watch has started already");
  }
  started_ = true;
  v1::WatchModelResponse first;
  if (!stream_->Read(&first)) return End();
  return first;
}

absl::StatusOr<v1::ModelEvent> ModelWatch::Next() {
  if (!started_) {
    if (absl::StatusOr<v1::WatchModelResponse> first = Start(); !first.ok()) {
      return first.status();
    }
  }
  v1::WatchModelResponse response;
  if (status_.has_value() || !stream_->Read(&response)) return End();
  return response.event();
}

// --- Client
// -------------------------------------------------------------------

Client::Client(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout)
    : stub_(v1::HalfspaceService::NewStub(channel)),
      health_(grpc::health::v1::Health::NewStub(channel)),
      timeout_(timeout) {}

Client Client::Connect(const std::string& target) {
  return Client(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
}

namespace {

// The contents of `path`; "" for no path.
absl::StatusOr<std::string> ReadPem(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

absl::StatusOr<Client> Client::Connect(const std::string& target,
                                       const ConnectOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::InsecureChannelCredentials();
  if (!options.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions tls;
    for (auto [path, pem] :
         {std::pair{&options.tls_ca_file, &tls.pem_root_certs},
          std::pair{&options.tls_cert_file, &tls.pem_cert_chain},
          std::pair{&options.tls_key_file, &tls.pem_private_key}}) {
      absl::StatusOr<std::string> text = ReadPem(*path);
      if (!text.ok()) return text.status();
      *pem = *std::move(text);
    }
    credentials = grpc::SslCredentials(tls);
  }
  Client client(grpc::CreateChannel(target, credentials));
  client.set_token(options.token);
  return client;
}

namespace {

// Whether `model` can be a model's name (as the server checks it), and so
// a metadata value. Other names go without the header, for the server to
// refuse.
bool Routable(const std::string& model) {
  return !model.empty() && model.size() <= 64 &&
         std::all_of(model.begin(), model.end(), [](char c) {
           return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
         });
}

}  // namespace

void Client::AddMetadata(grpc::ClientContext& context,
                         const std::string& model) const {
  if (!token_.empty()) context.AddMetadata("authorization", "Bearer " + token_);
  if (Routable(model)) context.AddMetadata(kModelHeader, model);
}

namespace {

// The model a request names, if it has a model field.
template <typename Request, typename = void>
struct NamesModel : std::false_type {};
template <typename Request>
struct NamesModel<Request,
                  std::void_t<decltype(std::declval<Request>().model())>>
    : std::true_type {};

// Requests that change nothing, so that sending one again is safe.
template <typename Request>
constexpr bool kReadOnly =
    std::is_same_v<Request, v1::GetModelRequest> ||
    std::is_same_v<Request, v1::ListModelsRequest> ||
    std::is_same_v<Request, v1::PredictRequest> ||
    std::is_same_v<Request, v1::GetWeightsRequest> ||
    std::is_same_v<Request, v1::GetRecentExamplesRequest> ||
    std::is_same_v<Request, v1::GetStatsRequest> ||
    std::is_same_v<Request, v1::ExportModelRequest> ||
    std::is_same_v<Request, v1::GetSourceSequenceRequest> ||
    std::is_same_v<Request, v1::CompareModelsRequest> ||
    std::is_same_v<Request, v1::ListAliasesRequest> ||
    std::is_same_v<Request, grpc::health::v1::HealthCheckRequest>;

// Whether sending `request` again is safe: a Predict that remembers its
// instances changes the model.
template <typename Request>
bool ReadOnly(const Request& request) {
  if constexpr (std::is_same_v<Request, v1::PredictRequest>) {
    return !request.remember();
  }
  return kReadOnly<Request>;
}

// The pause before attempt `attempt` (2, 3, ...): exponential backoff with
// jitter, drawn from [b/2, b] so that clients a restart disconnected
// together do not come back together.
absl::Duration Backoff(const Client::RetryPolicy& policy, int attempt) {
  absl::Duration b = policy.initial_backoff;
  for (int i = 2; i < attempt && b < policy.max_backoff; ++i) b *= 2;
  b = std::min(b, policy.max_backoff);
  thread_local absl::BitGen random;
  return b * absl::Uniform(random, 0.5, 1.0);
}

// The wait a RESOURCE_EXHAUSTED refusal asks for in its
// grpc-retry-pushback-ms trailer; none for any other status.
std::optional<absl::Duration> Pushback(const grpc::ClientContext& context,
                                       const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) {
    return std::nullopt;
  }
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("grpc-retry-pushback-ms");
  int64_t ms = 0;
  if (it == trailers.end() ||
      !absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()),
                        &ms) ||
      ms < 0) {
    return std::nullopt;
  }
  return absl::Milliseconds(ms);
}

}  // namespace

template <typename AnyStub, typename Request, typename Response>
absl::StatusOr<Response> Client::Call(
    AnyStub* stub, UnaryMethod<AnyStub, Request, Response> method,
    const Request& request) {
  const absl::Time deadline = absl::Now() + timeout_;
  const int attempts = ReadOnly(request) ? std::max(retry_.max_attempts, 1) : 1;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    if constexpr (NamesModel<Request>::value) {
      AddMetadata(context, request.model());
    } else {
      AddMetadata(context);
    }
    Response response;
    grpc::Status status = (stub->*method)(&context, request, &response);
    if (status.ok()) return response;
    // A rate limit's refusal applied nothing and says how long to wait:
    // any call is sent again then, read-only or not.
    const std::optional<absl::Duration> pushback = Pushback(context, status);
    const absl::Duration pause =
        pushback.value_or(Backoff(retry_, attempt + 1));
    const bool again =
        pushback.has_value()
            ? attempt < std::max(retry_.max_attempts, 1)
            : status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                  attempt < attempts;
    if (!again || absl::Now() + pause >= deadline) {
      return FromGrpcStatus(status);
    }
    absl::SleepFor(pause);
  }
}

absl::StatusOr<v1::Model> Client::CreateModel(
    const v1::CreateModelRequest& request) {
  absl::StatusOr<v1::CreateModelResponse> response =
      Call(stub_.get(), &Stub::CreateModel, request);
  if (!response.ok()) return response.status();
  return response->model();
}

absl::StatusOr<v1::Model> Client::CreateModel(const std::string& name,
                                              const v1::Algorithm& algorithm,
                                              int64_t dimension) {
  v1::CreateModelRequest request;
  request.set_model(name);
  *request.mutable_algorithm() = algorithm;
  request.set_dimension(dimension);
  return CreateModel(request);
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
Client::Health(const std::string& service) {
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  absl::StatusOr<grpc::health::v1::HealthCheckResponse> response =
      Call(health_.get(), &grpc::health::v1::Health::Stub::Check, request);
  if (!response.ok()) return response.status();
  return response->status();
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& name) {
  v1::GetModelRequest request;
  request.set_model(name);
  absl::StatusOr<v1::GetModelResponse> response =
      Call(stub_.get(), &Stub::GetModel, request);
  if (!response.ok()) return response.status();
  return response->model();
}

absl::StatusOr<std::vector<v1::Model>> Client::ListModels(v1::ModelView view) {
  std::vector<v1::Model> models;
  v1::ListModelsRequest request;
  request.set_view(view);
  do {
    absl::StatusOr<v1::ListModelsResponse> page =
        Call(stub_.get(), &Stub::ListModels, request);
    if (!page.ok()) return page.status();
    models.insert(models.end(), page->models().begin(), page->models().end());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty());
  return models;
}

absl::Status Client::DeleteModel(const std::string& name) {
  v1::DeleteModelRequest request;
  request.set_model(name);
  return Call(stub_.get(), &Stub::DeleteModel, request).status();
}

absl::StatusOr<std::vector<v1::Prediction>> Client::Predict(
    const std::string& model,
    const std::vector<std::vector<double>>& instances) {
  v1::PredictRequest request;
  request.set_model(model);
  for (const std::vector<double>& x : instances) {
    request.add_instances()->mutable_dense()->Add(x.begin(), x.end());
  }
  return Predict(request);
}

absl::StatusOr<std::vector<v1::Prediction>> Client::Predict(
    const v1::PredictRequest& request) {
  absl::StatusOr<v1::PredictResponse> response =
      Call(stub_.get(), &Stub::Predict, request);
  if (!response.ok()) return response.status();
  return std::vector<v1::Prediction>(response->predictions().begin(),
                                     response->predictions().end());
}

absl::StatusOr<v1::FeedbackResponse> Client::Feedback(
    const v1::FeedbackRequest& request) {
  return Call(stub_.get(), &Stub::Feedback, request);
}

absl::StatusOr<v1::GetWeightsResponse> Client::GetWeights(
    const std::string& name) {
  v1::GetWeightsRequest request;
  request.set_model(name);
  return ReadInPages(
      request,
      [this](const v1::GetWeightsRequest& r) {
        return Call(stub_.get(), &Stub::GetWeights, r);
      },
      [](v1::GetWeightsResponse& whole, const v1::GetWeightsResponse& page) {
        if (page.classes_size() != whole.classes_size()) return false;
        whole.mutable_weights()->Add(page.weights().begin(),
                                     page.weights().end());
        for (int k = 0; k < page.classes_size(); ++k) {
          const auto& part = page.classes(k).weights();
          whole.mutable_classes(k)->mutable_weights()->Add(part.begin(),
                                                           part.end());
        }
        return true;
      },
      absl::StrCat("model ", name,
                   " changed while its weights were read in pages"),
      "read it while it does not train");
}

absl::StatusOr<std::vector<v1::RecentExample>> Client::GetRecentExamples(
    const std::string& name) {
  v1::GetRecentExamplesRequest request;
  request.set_model(name);
  absl::StatusOr<v1::GetRecentExamplesResponse> response =
      Call(stub_.get(), &Stub::GetRecentExamples, request);
  if (!response.ok()) return response.status();
  return std::vector<v1::RecentExample>(response->examples().begin(),
                                        response->examples().end());
}

absl::StatusOr<v1::GetStatsResponse> Client::GetStats() {
  return Call(stub_.get(), &Stub::GetStats, v1::GetStatsRequest());
}

absl::StatusOr<v1::Model> Client::SetWeights(const std::string& name,
                                             const std::vector<double>& weights,
                                             double bias) {
  v1::SetWeightsRequest request;
  request.set_model(name);
  request.mutable_weights()->Add(weights.begin(), weights.end());
  request.set_bias(bias);
  absl::StatusOr<v1::SetWeightsResponse> response =
      Call(stub_.get(), &Stub::SetWeights, request);
  if (!response.ok()) return response.status();
  return response->model();
}

absl::StatusOr<v1::EvaluateResponse> Client::Evaluate(
    const std::string& model, absl::Span<const LabeledExample> examples,
    std::optional<double> threshold, size_t batch_size) {
  grpc::ClientContext context;
  AddMetadata(context, model);
  v1::EvaluateResponse response;
  std::unique_ptr<grpc::ClientWriter<v1::EvaluateRequest>> writer =
      stub_->Evaluate(&context, &response);
  v1::EvaluateRequest request;
  request.set_model(model);
  if (threshold.has_value()) request.set_threshold(*threshold);
  batch_size = std::max<size_t>(batch_size, 1);
  for (size_t first = 0; first == 0 || first < examples.size();
       first += batch_size) {
    AddExamples(examples.subspan(first, batch_size),
                request.mutable_examples());
    if (!writer->Write(request)) break;  // Finish says why
    request.Clear();
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

std::unique_ptr<PredictionStream> Client::PredictStream() {
  return PredictStream("");
}

std::unique_ptr<PredictionStream> Client::PredictStream(
    const std::string& model) {
  std::unique_ptr<PredictionStream> stream(new PredictionStream());
  AddMetadata(stream->context_, model);
  stream->stream_ = stub_->PredictStream(&stream->context_);
  return stream;
}

std::unique_ptr<ModelWatch> Client::WatchModel(
    const std::string& name, std::optional<uint64_t> from_position) {
  std::unique_ptr<ModelWatch> watch(new ModelWatch());
  AddMetadata(watch->context_, name);
  v1::WatchModelRequest request;
  request.set_model(name);
  if (from_position.has_value()) request.set_from_position(*from_position);
  watch->stream_ = stub_->WatchModel(&watch->context_, request);
  return watch;
}

std::unique_ptr<TrainingStream> Client::Train(const std::string& model) {
  return Train(model, "", 0);
}

std::unique_ptr<TrainingStream> Client::Train(const std::string& model,
                                              const std::string& source,
                                              uint64_t first_sequence) {
  return TrainFanOut({model}, source, first_sequence);
}

std::unique_ptr<TrainingStream> Client::TrainFanOut(
    const std::vector<std::string>& models, const std::string& source,
    uint64_t first_sequence) {
  std::unique_ptr<TrainingStream> stream(
      new TrainingStream(models, source, first_sequence));
  AddMetadata(stream->context_, models.empty() ? "" : models.front());
  stream->stream_ = stub_->Train(&stream->context_);
  return stream;
}

absl::StatusOr<v1::CompareModelsResponse> Client::CompareModels(
    const std::vector<std::string>& models, std::optional<double> alpha) {
  v1::CompareModelsRequest request;
  request.mutable_models()->Assign(models.begin(), models.end());
  if (alpha.has_value()) request.set_alpha(*alpha);
  return Call(stub_.get(), &Stub::CompareModels, request);
}

absl::StatusOr<v1::SetAliasResponse> Client::SetAlias(
    const std::string& alias, const std::string& model,
    std::optional<std::string> expected) {
  v1::SetAliasRequest request;
  request.set_alias(alias);
  request.set_model(model);
  if (expected.has_value()) request.set_expected_model(*std::move(expected));
  return Call(stub_.get(), &Stub::SetAlias, request);
}

absl::StatusOr<std::string> Client::DeleteAlias(const std::string& alias) {
  v1::DeleteAliasRequest request;
  request.set_alias(alias);
  absl::StatusOr<v1::DeleteAliasResponse> response =
      Call(stub_.get(), &Stub::DeleteAlias, request);
  if (!response.ok()) return response.status();
  return response->model();
}

absl::StatusOr<std::vector<v1::Alias>> Client::ListAliases() {
  absl::StatusOr<v1::ListAliasesResponse> response =
      Call(stub_.get(), &Stub::ListAliases, v1::ListAliasesRequest());
  if (!response.ok()) return response.status();
  return std::vector<v1::Alias>(response->aliases().begin(),
                                response->aliases().end());
}

absl::StatusOr<std::string> Client::ExportModel(const std::string& name) {
  v1::ExportModelRequest request;
  request.set_model(name);
  absl::StatusOr<v1::ExportModelResponse> file = ReadInPages(
      request,
      [this](const v1::ExportModelRequest& r) {
        return Call(stub_.get(), &Stub::ExportModel, r);
      },
      [](v1::ExportModelResponse& whole, const v1::ExportModelResponse& page) {
        whole.mutable_model_file()->append(page.model_file());
        return true;
      },
      absl::StrCat("model ", name, " changed while its file was read in pages"),
      "export it while it does not train");
  if (!file.ok()) return file.status();
  return std::move(*file->mutable_model_file());
}

absl::StatusOr<v1::Model> Client::ImportModel(const std::string& name,
                                              const std::string& model_file) {
  v1::ImportModelRequest request;
  request.set_model(name);
  request.set_model_file(model_file);
  absl::StatusOr<v1::ImportModelResponse> response =
      Call(stub_.get(), &Stub::ImportModel, request);
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<v1::Model> Client::RestoreModel(const std::string& name) {
  v1::RestoreModelRequest request;
  request.set_model(name);
  absl::StatusOr<v1::RestoreModelResponse> response =
      Call(stub_.get(), &Stub::RestoreModel, request);
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<v1::Model> Client::RollBackModel(const std::string& name) {
  v1::RollBackModelRequest request;
  request.set_model(name);
  absl::StatusOr<v1::RollBackModelResponse> response =
      Call(stub_.get(), &Stub::RollBackModel, request);
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<v1::Model> Client::SetDriftDetection(
    const std::string& name, const std::optional<v1::DriftDetection>& drift) {
  v1::SetDriftDetectionRequest request;
  request.set_model(name);
  if (drift.has_value()) *request.mutable_drift() = *drift;
  absl::StatusOr<v1::SetDriftDetectionResponse> response =
      Call(stub_.get(), &Stub::SetDriftDetection, request);
  if (!response.ok()) return response.status();
  return std::move(*response->mutable_model());
}

absl::StatusOr<uint64_t> Client::GetSourceSequence(const std::string& model,
                                                   const std::string& source) {
  v1::GetSourceSequenceRequest request;
  request.set_model(model);
  request.set_source(source);
  absl::StatusOr<v1::GetSourceSequenceResponse> response =
      Call(stub_.get(), &Stub::GetSourceSequence, request);
  if (!response.ok()) return response.status();
  return response->last_sequence();
}

namespace {

// Reads the responses to one pass that another thread sends in requests of
// `batch_size`, the last marked end_of_pass, and returns the pass's summary.
absl::StatusOr<v1::PassSummary> ReadPass(TrainingStream& stream,
                                         size_t examples, size_t batch_size) {
  for (size_t first = 0; first < examples; first += batch_size) {
    absl::StatusOr<v1::TrainResponse> response = stream.Receive();
    if (!response.ok()) return response.status();
    for (int j = 0; j < response->results_size(); ++j) {
      const v1::ExampleResult& r = response->results(j);
      if (r.has_error()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "example ", first + j, " was rejected: ", r.error().message()));
      }
    }
    if (response->has_pass_summary()) return response->pass_summary();
  }
  return absl::InternalError("the server sent no summary for the pass");
}

}  // namespace

absl::StatusOr<FitReport> Client::Fit(const std::string& model,
                                      absl::Span<const LabeledExample> examples,
                                      const FitOptions& options) {
  if (examples.empty()) return absl::InvalidArgumentError("no examples to fit");
  if (options.max_passes < 1 || options.batch_size < 1) {
    return absl::InvalidArgumentError("max_passes and batch_size must be >= 1");
  }
  const size_t batch_size = options.batch_size;
  std::unique_ptr<TrainingStream> stream = Train(model);
  FitReport report;
  while (report.passes < options.max_passes && !report.converged) {
    // One thread sends the pass while this one reads, so neither side's flow
    // control window can fill up and stall the other.
    std::thread writer([&] {
      for (size_t first = 0; first < examples.size(); first += batch_size) {
        const size_t n = std::min(batch_size, examples.size() - first);
        const bool last = first + n == examples.size();
        if (!stream->Send(examples.subspan(first, n), last).ok()) return;
      }
    });
    absl::StatusOr<v1::PassSummary> counts =
        ReadPass(*stream, examples.size(), batch_size);
    // OUT_OF_RANGE: the server ended the stream, so the writer stops by
    // itself and Finish says why. Any other error: stop the writer here.
    const bool server_ended = absl::IsOutOfRange(counts.status());
    if (!counts.ok() && !server_ended) stream->Cancel();
    writer.join();
    if (!counts.ok()) {
      absl::Status finish = stream->Finish();
      return server_ended && !finish.ok() ? finish : counts.status();
    }
    report.passes += 1;
    report.updates += counts->updates();
    report.updates_per_pass.push_back(counts->updates());
    report.mistakes_per_pass.push_back(counts->mistakes());
    report.converged = counts->converged();
    report.weight_norm = counts->weight_norm();
    report.max_example_norm = counts->max_example_norm();
    if (options.on_pass) options.on_pass(*counts);
  }
  if (absl::Status s = stream->Finish(); !s.ok()) return s;
  return report;
}

}  // namespace halfspace
