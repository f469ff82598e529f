#include "client/halfspace_client.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace halfspace {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// --- TrainingStream -----------------------------------------------------------

absl::Status TrainingStream::Send(absl::Span<const LabeledExample> examples) {
  v1::TrainRequest request;
  if (!named_) request.set_model(model_);
  for (const LabeledExample& e : examples) {
    v1::Example* example = request.add_examples();
    example->mutable_features()->Add(e.features.begin(), e.features.end());
    example->set_label(e.label);
    if (e.weight != 1.0) example->set_weight(e.weight);
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

absl::Status TrainingStream::Finish() {
  if (finished_) return status_;
  finished_ = true;
  stream_->WritesDone();
  v1::TrainResponse unread;
  while (stream_->Read(&unread)) {
  }
  status_ = FromGrpcStatus(stream_->Finish());
  return status_;
}

void TrainingStream::Cancel() { context_.TryCancel(); }

// --- Client -------------------------------------------------------------------

Client::Client(std::shared_ptr<grpc::Channel> channel, absl::Duration timeout)
    : stub_(v1::Halfspace::NewStub(std::move(channel))), timeout_(timeout) {}

Client Client::Connect(const std::string& target) {
  return Client(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
}

void Client::SetDeadline(grpc::ClientContext& context) const {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout_));
}

absl::StatusOr<v1::Model> Client::CreateModel(
    const v1::CreateModelRequest& request) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::CreateModelResponse response;
  grpc::Status status = stub_->CreateModel(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.model();
}

absl::StatusOr<v1::Model> Client::CreateModel(const std::string& name,
                                              v1::Algorithm algorithm,
                                              int64_t dimension,
                                              double learning_rate, double l2) {
  v1::CreateModelRequest request;
  request.set_name(name);
  request.set_algorithm(algorithm);
  request.set_dimension(dimension);
  request.mutable_hyperparameters()->set_learning_rate(learning_rate);
  request.mutable_hyperparameters()->set_l2(l2);
  return CreateModel(request);
}

absl::StatusOr<v1::Model> Client::GetModel(const std::string& name) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetModelRequest request;
  request.set_name(name);
  v1::GetModelResponse response;
  grpc::Status status = stub_->GetModel(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.model();
}

absl::StatusOr<std::vector<v1::Model>> Client::ListModels() {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::ListModelsResponse response;
  grpc::Status status =
      stub_->ListModels(&context, v1::ListModelsRequest(), &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::Model>(response.models().begin(),
                                response.models().end());
}

absl::Status Client::DeleteModel(const std::string& name) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::DeleteModelRequest request;
  request.set_name(name);
  v1::DeleteModelResponse response;
  return FromGrpcStatus(stub_->DeleteModel(&context, request, &response));
}

absl::StatusOr<std::vector<v1::Prediction>> Client::Predict(
    const std::string& model,
    const std::vector<std::vector<double>>& instances) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::PredictRequest request;
  request.set_model(model);
  for (const std::vector<double>& x : instances) {
    request.add_instances()->mutable_values()->Add(x.begin(), x.end());
  }
  v1::PredictResponse response;
  grpc::Status status = stub_->Predict(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::vector<v1::Prediction>(response.predictions().begin(),
                                     response.predictions().end());
}

absl::StatusOr<v1::GetWeightsResponse> Client::GetWeights(
    const std::string& name) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetWeightsRequest request;
  request.set_name(name);
  v1::GetWeightsResponse response;
  grpc::Status status = stub_->GetWeights(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::Model> Client::SetWeights(const std::string& name,
                                             const std::vector<double>& weights,
                                             double bias) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::SetWeightsRequest request;
  request.set_name(name);
  request.mutable_weights()->Add(weights.begin(), weights.end());
  request.set_bias(bias);
  v1::SetWeightsResponse response;
  grpc::Status status = stub_->SetWeights(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.model();
}

std::unique_ptr<TrainingStream> Client::Train(const std::string& model) {
  std::unique_ptr<TrainingStream> stream(new TrainingStream(model));
  stream->stream_ = stub_->Train(&stream->context_);
  return stream;
}

namespace {

// Updates and progressive mistakes of one pass.
struct PassCounts {
  uint64_t updates = 0;
  uint64_t mistakes = 0;
};

// Reads the responses to `batches` requests that another thread sends, and
// counts what they report. `first` is the pass offset of the first example.
absl::StatusOr<PassCounts> ReadPass(TrainingStream& stream,
                                    absl::Span<const LabeledExample> examples,
                                    size_t batch_size) {
  PassCounts counts;
  for (size_t first = 0; first < examples.size(); first += batch_size) {
    absl::StatusOr<v1::TrainResponse> response = stream.Receive();
    if (!response.ok()) return response.status();
    for (int j = 0; j < response->results_size(); ++j) {
      const v1::ExampleResult& r = response->results(j);
      if (r.has_error()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "example ", first + j, " was rejected: ", r.error().message()));
      }
      counts.updates += r.updated() ? 1 : 0;
      counts.mistakes +=
          r.predicted_label() != examples[first + j].label ? 1 : 0;
    }
  }
  return counts;
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
        if (!stream->Send(examples.subspan(first, n)).ok()) return;
      }
    });
    absl::StatusOr<PassCounts> counts = ReadPass(*stream, examples, batch_size);
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
    report.updates += counts->updates;
    report.updates_per_pass.push_back(counts->updates);
    report.mistakes_per_pass.push_back(counts->mistakes);
    report.converged = counts->updates == 0;
  }
  if (absl::Status s = stream->Finish(); !s.ok()) return s;
  return report;
}

}  // namespace halfspace
