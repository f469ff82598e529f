// A small C++ client for the halfspace service: model management,
// predictions, a training stream, and Fit, which replays a data set until a
// pass makes no updates.
//
// Errors come back as absl::Status with the server's canonical code and
// message. A Client is thread-safe and cheap to share; a TrainingStream is
// used by one writer thread and one reader thread at most.

#ifndef HALFSPACE_CLIENT_HALFSPACE_CLIENT_H_
#define HALFSPACE_CLIENT_HALFSPACE_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/sync_stream.h"
#include "halfspace/v1/halfspace.grpc.pb.h"

namespace halfspace {

// The metadata that names the model a call is about, set on every call on
// one model (and on Train, Evaluate and model-bound PredictStreams), so
// that a proxy can route by it: a consistent-hash proxy in front of several
// servers keeps each model's calls on one of them (see the README's
// "More than one machine").
inline constexpr char kModelHeader[] = "halfspace-model";

// The client side of the one gRPC → absl status conversion.
absl::Status FromGrpcStatus(const grpc::Status& status);

// An algorithm from text: its name ("perceptron", "softmax_regression", …),
// or its parameters in protobuf text format, e.g.
// "sgd { loss: LOSS_LOG alpha: 0.001 }". INVALID_ARGUMENT otherwise.
absl::StatusOr<v1::Algorithm> ParseAlgorithm(const std::string& text);

// The drift detector `text` names (adwin, page_hinkley, ddm) or describes
// in protobuf text format ("adwin { delta: 0.002 } input: INPUT_LOSS");
// INVALID_ARGUMENT if it sets no method.
absl::StatusOr<v1::DriftDetection> ParseDriftDetection(const std::string& text);

// Selective sampling's setting from text: b alone ("0.5"), or in protobuf
// text format ("b: 0.5 seed: 3"). INVALID_ARGUMENT otherwise (b itself is
// the server's to check).
absl::StatusOr<v1::SelectiveSampling> ParseSelectiveSampling(
    const std::string& text);

// A named feature (see v1::NamedFeature). The client sends named features
// hashed (v1::HashedGroup): the model learns the same.
struct NamedValue {
  std::string group;
  std::string name;
  double value = 1.0;
};

// A labeled example as a client holds it: dense, sparse and named features
// in any mix.
struct LabeledExample {
  std::vector<double> features;
  int label = 0;                 // binary models: -1 or +1
  double weight = 1.0;           // importance weight
  std::string class_label = {};  // multiclass models
  std::vector<uint32_t> sparse_indices = {};
  std::vector<double> sparse_values = {};
  std::vector<NamedValue> named = {};
};

// One open Train stream. Send and Receive may run on two threads at once;
// each response answers one Send, in order.
class TrainingStream {
 public:
  TrainingStream(const TrainingStream&) = delete;
  TrainingStream& operator=(const TrainingStream&) = delete;

  // Sends one request holding `examples` (possibly none). With end_of_pass,
  // they close a pass and the response carries its PassSummary. On a stream
  // with a source, the examples are numbered on from the last Send.
  absl::Status Send(absl::Span<const LabeledExample> examples,
                    bool end_of_pass = false);

  // Sends `request` as built by the caller (any feature forms, a results
  // mode), after filling in what the stream keeps: the model and source in
  // the first request, and the sequence.
  absl::Status Send(v1::TrainRequest& request);

  // The response to the oldest unanswered Send. Once the server has ended
  // the stream, returns OUT_OF_RANGE; Finish then tells why.
  absl::StatusOr<v1::TrainResponse> Receive();

  // Tells the server nothing more will be sent; responses still come.
  void CloseSend();

  // Half-closes, discards unread responses and returns the stream's status.
  absl::Status Finish();

  // Cancels the call: blocked Sends and Receives return at once. Requests
  // sent and not answered may or may not have been learned.
  void Cancel();

 private:
  friend class Client;
  TrainingStream(std::vector<std::string> models, std::string source,
                 uint64_t sequence)
      : models_(std::move(models)),
        source_(std::move(source)),
        next_sequence_(sequence) {}

  const std::vector<std::string> models_;  // one, unless it fans out
  const std::string source_;               // empty: untagged
  uint64_t next_sequence_;                 // the next example's, with a source
  bool named_ = false;  // whether a request has named the model yet
  bool send_closed_ = false;
  bool finished_ = false;
  absl::Status status_;  // the final status, once finished_
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::TrainRequest, v1::TrainResponse>>
      stream_;
};

// One open PredictStream: predictions without a call's setup each time.
// Predict is one round trip; Send and Receive keep several requests in
// flight (one writer thread and one reader thread at most).
class PredictionStream {
 public:
  PredictionStream(const PredictionStream&) = delete;
  PredictionStream& operator=(const PredictionStream&) = delete;

  // Predicts for `request`'s instances (its model may be empty: the one
  // the previous request named); the error the server answered with, or
  // OUT_OF_RANGE once the stream has ended (Finish tells why).
  absl::StatusOr<std::vector<v1::Prediction>> Predict(
      const v1::PredictStreamRequest& request);

  // Sends one request; its response comes from Receive, in order.
  absl::Status Send(const v1::PredictStreamRequest& request);
  // The response to the oldest unanswered Send (an error in-band as
  // PredictResponse.error); OUT_OF_RANGE once the stream has ended.
  absl::StatusOr<v1::PredictStreamResponse> Receive();

  // Half-closes, discards unread responses and returns the stream's status.
  absl::Status Finish();

 private:
  friend class Client;
  PredictionStream() = default;

  bool finished_ = false;
  absl::Status status_;  // the final status, once finished_
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::PredictStreamRequest,
                                           v1::PredictStreamResponse>>
      stream_;
};

// One open WatchModel call: a model's state, then its events as they come.
// Next blocks until the next event; Cancel, from another thread, ends the
// wait.
class ModelWatch {
 public:
  ModelWatch(const ModelWatch&) = delete;
  ModelWatch& operator=(const ModelWatch&) = delete;

  // The first response: the model's name, its drift state, and whether the
  // events from the position asked for are all kept. The watch's error if
  // it ended first.
  absl::StatusOr<v1::WatchModelResponse> Start();
  // The next event; once the watch has ended, its status (never OK).
  absl::StatusOr<v1::ModelEvent> Next();
  // Ends the watch; a Next that waits returns CANCELLED.
  void Cancel() { context_.TryCancel(); }

 private:
  friend class Client;
  ModelWatch() = default;
  absl::Status End();

  bool started_ = false;
  std::optional<absl::Status> status_;  // once the call has ended
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::WatchModelResponse>> stream_;
};

struct FitOptions {
  int max_passes = 100;  // stop after this many passes over the data
  int batch_size = 256;  // examples per request
  // Called after each pass with its summary (for progress reports).
  std::function<void(const v1::PassSummary&)> on_pass = nullptr;
};

struct FitReport {
  int passes = 0;          // passes made
  uint64_t updates = 0;    // updates over all passes
  bool converged = false;  // whether the last pass made no updates
  std::vector<uint64_t> updates_per_pass;
  std::vector<uint64_t> mistakes_per_pass;  // progressive, per pass
  double weight_norm = 0.0;                 // ‖w‖ after the last pass
  double max_example_norm = 0.0;            // R, as the server reports it
};

class Client {
 public:
  explicit Client(std::shared_ptr<grpc::Channel> channel,
                  absl::Duration timeout = absl::Seconds(30));

  // A client over an insecure channel to `target` ("host:port").
  static Client Connect(const std::string& target);

  // How to reach a server that asks for more (see the README's Security).
  struct ConnectOptions {
    std::string tls_ca_file;    // PEM roots: connect with TLS if set
    std::string tls_cert_file;  // PEM client certificate, for mutual TLS
    std::string tls_key_file;   // and its key
    std::string token;          // a bearer token, if the server wants one
  };
  // A client to `target` with TLS and a token as `options` say; an error
  // naming the file that cannot be read.
  static absl::StatusOr<Client> Connect(const std::string& target,
                                        const ConnectOptions& options);

  // Sends `token` with every call, as the metadata
  // "authorization: Bearer <token>" (for a server with --tokens_file).
  void set_token(std::string token) { token_ = std::move(token); }

  // Each unary call's deadline, its retries included (30 s unless given to
  // the constructor).
  void set_timeout(absl::Duration timeout) { timeout_ = timeout; }

  // How calls that change nothing (GetModel, ListModels, Predict without
  // remember, GetWeights, GetRecentExamples, GetStats, ExportModel,
  // GetSourceSequence,
  // CompareModels, ListAliases, Health) are tried
  // again when they fail with UNAVAILABLE: a server restarting or draining,
  // a connection lost. Calls that change a model are never retried here (a
  // lost response does not say whether they were applied); training
  // retries exactly once through ExactlyOnceTrainer.
  struct RetryPolicy {
    int max_attempts = 5;  // 1: no retries
    absl::Duration initial_backoff = absl::Milliseconds(50);
    absl::Duration max_backoff = absl::Seconds(1);  // doubling up to it
  };
  void set_retry_policy(const RetryPolicy& policy) { retry_ = policy; }

  absl::StatusOr<v1::Model> CreateModel(const v1::CreateModelRequest& request);
  // A dense model of `dimension` features.
  absl::StatusOr<v1::Model> CreateModel(const std::string& name,
                                        const v1::Algorithm& algorithm,
                                        int64_t dimension);
  absl::StatusOr<v1::Model> GetModel(const std::string& name);
  // Every model, in name order, however many pages the server sends.
  absl::StatusOr<std::vector<v1::Model>> ListModels(
      v1::ModelView view = v1::MODEL_VIEW_FULL);
  absl::Status DeleteModel(const std::string& name);

  absl::StatusOr<std::vector<v1::Prediction>> Predict(
      const std::string& model,
      const std::vector<std::vector<double>>& instances);
  // Any feature forms, as the proto has them; with request.remember, each
  // prediction names the example id a later Feedback gives its label
  // under (delayed labels; such a Predict changes the model, so it is not
  // retried).
  absl::StatusOr<std::vector<v1::Prediction>> Predict(
      const v1::PredictRequest& request);

  // Learns the labels of remembered examples (see the Feedback RPC): one
  // result per feedback, in order. Not retried.
  absl::StatusOr<v1::FeedbackResponse> Feedback(
      const v1::FeedbackRequest& request);

  // The server's gRPC health status: "" for the server as a whole,
  // "halfspace.v1.HalfspaceService" for the API (NOT_SERVING while it
  // loads models or drains).
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> Health(
      const std::string& service = "");

  // Opens a PredictStream (see PredictionStream).
  std::unique_ptr<PredictionStream> PredictStream();
  // The same, routed as calls on `model` are (see kModelHeader): what a
  // stream through a sharding proxy needs, its requests all naming `model`.
  std::unique_ptr<PredictionStream> PredictStream(const std::string& model);

  // The whole weight vector (of every class), read in as many pages as the
  // message limit needs; pages of one version only (ABORTED if the model
  // kept changing between pages).
  absl::StatusOr<v1::GetWeightsResponse> GetWeights(const std::string& name);
  // The last examples a model of dimension 1 or 2 learned, oldest first
  // (see GetRecentExamplesResponse).
  absl::StatusOr<std::vector<v1::RecentExample>> GetRecentExamples(
      const std::string& name);
  // What the server has done (the numbers of its metrics; see the README).
  absl::StatusOr<v1::GetStatsResponse> GetStats();
  absl::StatusOr<v1::Model> SetWeights(const std::string& name,
                                       const std::vector<double>& weights,
                                       double bias);

  // Scores `examples` on `model` without learning, in requests of
  // batch_size; see EvaluateRequest for the threshold.
  absl::StatusOr<v1::EvaluateResponse> Evaluate(
      const std::string& model, absl::Span<const LabeledExample> examples,
      std::optional<double> threshold = std::nullopt, size_t batch_size = 256);

  // Opens a training stream on `model`. The model is named in the first Send.
  std::unique_ptr<TrainingStream> Train(const std::string& model);

  // Opens a training stream whose examples are tagged for exactly-once
  // training: producer `source`, numbered from `first_sequence` on (see
  // TrainRequest.sequence). ExactlyOnceTrainer does the bookkeeping.
  std::unique_ptr<TrainingStream> Train(const std::string& model,
                                        const std::string& source,
                                        uint64_t first_sequence);

  // Opens a fan-out training stream: each request trains every one of
  // `models` (2 to 16), in order, and each example's result holds one entry
  // per model (TrainResponse.fan_out_results). Tagged as Train's when
  // `source` is given. Routed as calls on the first model are.
  std::unique_ptr<TrainingStream> TrainFanOut(
      const std::vector<std::string>& models, const std::string& source = "",
      uint64_t first_sequence = 0);

  // Compares models trained on one fan-out stream: each one's progressive
  // numbers and McNemar's test against the first (see CompareModels).
  absl::StatusOr<v1::CompareModelsResponse> CompareModels(
      const std::vector<std::string>& models,
      std::optional<double> alpha = std::nullopt);

  // Points `alias` at `model` (promotes it); with `expected`, only if the
  // alias points there now ("": only if it is new). Returns the response
  // with the model it pointed to before. Not retried.
  absl::StatusOr<v1::SetAliasResponse> SetAlias(
      const std::string& alias, const std::string& model,
      std::optional<std::string> expected = std::nullopt);
  // Removes `alias`; returns the model it pointed to.
  absl::StatusOr<std::string> DeleteAlias(const std::string& alias);
  // Every alias the caller may see, ordered.
  absl::StatusOr<std::vector<v1::Alias>> ListAliases();

  // The model's whole state as one file (see ExportModelResponse).
  absl::StatusOr<std::string> ExportModel(const std::string& name);

  // Creates model `name` from a file ExportModel returned.
  absl::StatusOr<v1::Model> ImportModel(const std::string& name,
                                        const std::string& model_file);

  // Rolls unavailable model `name` back to its previous snapshot (see the
  // RPC's comment).
  absl::StatusOr<v1::Model> RestoreModel(const std::string& name);

  // Puts back the weights model `name`'s drift reaction replaced at its
  // last switch (see the RollBackModel RPC's comment).
  absl::StatusOr<v1::Model> RollBackModel(const std::string& name);

  // Sets a model's drift detector and reaction; none removes them (see the
  // SetDriftDetection RPC's comment).
  absl::StatusOr<v1::Model> SetDriftDetection(
      const std::string& name, const std::optional<v1::DriftDetection>& drift);

  // Watches model `name` (see the WatchModel RPC's comment): from
  // `from_position` if given, else from now. No deadline: it lasts until
  // Cancel, or until the server ends it.
  std::unique_ptr<ModelWatch> WatchModel(
      const std::string& name,
      std::optional<uint64_t> from_position = std::nullopt);

  // The last sequence number `model` applied from `source`; 0 if none.
  absl::StatusOr<uint64_t> GetSourceSequence(const std::string& model,
                                             const std::string& source);

  // Trains `model` on `examples` in passes, in order, until a pass makes no
  // updates or max_passes is reached. Fails on the first rejected example.
  absl::StatusOr<FitReport> Fit(const std::string& model,
                                absl::Span<const LabeledExample> examples,
                                const FitOptions& options = {});

 private:
  using Stub = v1::HalfspaceService::Stub;
  template <typename AnyStub, typename Request, typename Response>
  using UnaryMethod = grpc::Status (AnyStub::*)(grpc::ClientContext*,
                                                const Request&, Response*);

  // One unary call with the client's deadline, its routing header, and
  // retries if it changes nothing (see RetryPolicy).
  template <typename AnyStub, typename Request, typename Response>
  absl::StatusOr<Response> Call(AnyStub* stub,
                                UnaryMethod<AnyStub, Request, Response> method,
                                const Request& request);

  // Adds the token, if any, and the routing header of `model`, if named,
  // to a call's metadata.
  void AddMetadata(grpc::ClientContext& context,
                   const std::string& model = "") const;

  std::unique_ptr<Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  absl::Duration timeout_;
  RetryPolicy retry_;
  std::string token_;
};

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_HALFSPACE_CLIENT_H_
