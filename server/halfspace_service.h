// halfspace.v1.HalfspaceService: thin adapters that validate a request,
// delegate to the ModelRegistry and its Models, and fill the response (with
// convert.h). All logic lives in core/; all status conversion in status.h.
//
// Every method runs on the callback API. A unary handler does its work
// before it returns; those that change stored state (CreateModel,
// DeleteModel, SetWeights) wait for the store's fsync, which never holds a
// lock that training or prediction needs. Every call passes the CallGate, so
// a draining server turns new calls away with UNAVAILABLE.

#ifndef HALFSPACE_SERVER_HALFSPACE_SERVICE_H_
#define HALFSPACE_SERVER_HALFSPACE_SERVICE_H_

#include <functional>

#include "core/registry/exported_files.h"
#include "core/registry/model_registry.h"
#include "core/training/journal.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/service_parts.h"

namespace halfspace {

// Every method takes raw bytes and decodes its messages itself (see
// raw_message.h): a request that does not decode is INVALID_ARGUMENT, where
// gRPC's generated handlers would answer UNIMPLEMENTED (unary) or mistake it
// for the end of a stream.
// clang-format off
using HalfspaceServiceBase = v1::HalfspaceService::WithRawCallbackMethod_CreateModel<
    v1::HalfspaceService::WithRawCallbackMethod_GetModel<
        v1::HalfspaceService::WithRawCallbackMethod_ListModels<
            v1::HalfspaceService::WithRawCallbackMethod_DeleteModel<
                v1::HalfspaceService::WithRawCallbackMethod_Train<
                    v1::HalfspaceService::WithRawCallbackMethod_Predict<
                    v1::HalfspaceService::WithRawCallbackMethod_Feedback<
                    v1::HalfspaceService::WithRawCallbackMethod_FeedbackStream<
                    v1::HalfspaceService::WithRawCallbackMethod_PredictStream<
                        v1::HalfspaceService::WithRawCallbackMethod_Evaluate<
                            v1::HalfspaceService::WithRawCallbackMethod_GetWeights<
                            v1::HalfspaceService::WithRawCallbackMethod_GetRecentExamples<
                                v1::HalfspaceService::WithRawCallbackMethod_SetWeights<
                                    v1::HalfspaceService::WithRawCallbackMethod_GetSourceSequence<
                                        v1::HalfspaceService::WithRawCallbackMethod_ExportModel<
                                            v1::HalfspaceService::WithRawCallbackMethod_ImportModel<
                                                v1::HalfspaceService::WithRawCallbackMethod_RestoreModel<
                                                    v1::HalfspaceService::WithRawCallbackMethod_GetStats<
                                                    v1::HalfspaceService::WithRawCallbackMethod_CompareModels<
                                                    v1::HalfspaceService::WithRawCallbackMethod_SetAlias<
                                                    v1::HalfspaceService::WithRawCallbackMethod_DeleteAlias<
                                                    v1::HalfspaceService::WithRawCallbackMethod_ListAliases<
                                                    v1::HalfspaceService::WithRawCallbackMethod_RollBackModel<
                                                    v1::HalfspaceService::WithRawCallbackMethod_SetDriftDetection<
                                                    v1::HalfspaceService::WithRawCallbackMethod_WatchModel<
                                                        v1::HalfspaceService::Service>>>>>>>>>>>>>>>>>>>>>>>>>;
// clang-format on

class HalfspaceService final : public HalfspaceServiceBase {
 public:
  // With a log, a call that changes a model answers once the change is
  // durable. Every call is authenticated and needs a permission on the
  // model it names (see auth.h), and is counted in the metrics.
  // REQUIRES: the parts outlive the service.
  // The parts are read at each call: the server may complete them (its
  // log) before it lets the first call in.
  explicit HalfspaceService(const ServiceParts* parts) : parts_(*parts) {}

  using Unary = grpc::ServerUnaryReactor*;
  using Context = grpc::CallbackServerContext;
  using Bytes = grpc::ByteBuffer;

  Unary CreateModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary GetModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary ListModels(Context* c, const Bytes* in, Bytes* out) override;
  Unary DeleteModel(Context* c, const Bytes* in, Bytes* out) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* Train(Context* c) override;
  Unary Predict(Context* c, const Bytes* in, Bytes* out) override;
  Unary Feedback(Context* c, const Bytes* in, Bytes* out) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* FeedbackStream(Context* c) override;
  grpc::ServerBidiReactor<Bytes, Bytes>* PredictStream(Context* c) override;
  grpc::ServerReadReactor<Bytes>* Evaluate(Context* c, Bytes* out) override;
  Unary GetWeights(Context* c, const Bytes* in, Bytes* out) override;
  Unary GetRecentExamples(Context* c, const Bytes* in, Bytes* out) override;
  Unary SetWeights(Context* c, const Bytes* in, Bytes* out) override;
  Unary GetSourceSequence(Context* c, const Bytes* in, Bytes* out) override;
  Unary ExportModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary ImportModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary RestoreModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary RollBackModel(Context* c, const Bytes* in, Bytes* out) override;
  Unary SetDriftDetection(Context* c, const Bytes* in, Bytes* out) override;
  grpc::ServerWriteReactor<Bytes>* WatchModel(Context* c,
                                              const Bytes* in) override;
  Unary GetStats(Context* c, const Bytes* in, Bytes* out) override;
  Unary CompareModels(Context* c, const Bytes* in, Bytes* out) override;
  Unary SetAlias(Context* c, const Bytes* in, Bytes* out) override;
  Unary DeleteAlias(Context* c, const Bytes* in, Bytes* out) override;
  Unary ListAliases(Context* c, const Bytes* in, Bytes* out) override;

 private:
  // What a handler knows of its call, and tells back.
  struct Call {
    std::string request_id;  // see logging.h
    StopCheck stop;          // true once the caller stopped waiting
    Principal principal;     // what the caller may do
    uint64_t lsn = 0;        // the change the handler logged; 0 if none
    absl::Time deadline = absl::InfiniteFuture();  // the caller's
  };

  // Whether this server follows replicas and holds one of model `name`
  // (available or not).
  bool HoldsReplica(const std::string& name) const;
  // Whether this server follows replicas and `name` is no alias of its
  // own: then an alias of the name is in the catalog, if anywhere.
  bool IsSharedAlias(const std::string& name) const;

  // Changes model `name` (a name, not an alias) as a whole: through its
  // stream when it is replicated (`replicated`, with the call's deadline
  // for a replica), else here, logged (`local`, which sets the LSN it is
  // given); then writes the model after the change into `out`.
  absl::Status ChangeModel(
      const std::string& name, Call& call,
      const std::function<absl::Status(ReplicaSet& replicas, const Model& model,
                                       absl::Time deadline)>& replicated,
      const std::function<absl::Status(uint64_t* lsn)>& local, v1::Model* out);

  // Waits, up to `deadline`, until this server's replica of the model
  // `name` names has applied its stream up to `position` (see
  // PredictRequest.min_position).
  absl::Status WaitForPosition(const std::string& name, uint64_t position,
                               absl::Time deadline);

  template <typename Request, typename Response>
  using Handler = absl::Status (HalfspaceService::*)(const Request&, Response&,
                                                     Call& call);

  // Runs one admitted call: authenticates it, decodes the request, checks
  // the caller's `permission` on the model it names, runs `handler`,
  // encodes the response, and finishes the call with the handler's status,
  // once the change it logged (its call.lsn, if it sets one) is durable.
  template <typename Request, typename Response>
  Unary Serve(Context* context, const Bytes* request, Bytes* response,
              const char* method, Permission permission,
              Handler<Request, Response> handler);
  // Finishes a unary call and counts it.
  void End(Context* context, grpc::ServerUnaryReactor* reactor,
           const char* method, const std::string& request_id,
           const absl::Status& status, absl::Time start);

  absl::Status DoCreateModel(const v1::CreateModelRequest& request,
                             v1::CreateModelResponse& response, Call& call);
  absl::Status DoGetModel(const v1::GetModelRequest& request,
                          v1::GetModelResponse& response, Call& call);
  absl::Status DoListModels(const v1::ListModelsRequest& request,
                            v1::ListModelsResponse& response, Call& call);
  absl::Status DoDeleteModel(const v1::DeleteModelRequest& request,
                             v1::DeleteModelResponse& response, Call& call);
  absl::Status DoPredict(const v1::PredictRequest& request,
                         v1::PredictResponse& response, Call& call);
  absl::Status DoFeedback(const v1::FeedbackRequest& request,
                          v1::FeedbackResponse& response, Call& call);
  absl::Status DoGetWeights(const v1::GetWeightsRequest& request,
                            v1::GetWeightsResponse& response, Call& call);
  absl::Status DoGetRecentExamples(const v1::GetRecentExamplesRequest& request,
                                   v1::GetRecentExamplesResponse& response,
                                   Call& call);
  absl::Status DoSetWeights(const v1::SetWeightsRequest& request,
                            v1::SetWeightsResponse& response, Call& call);

  absl::Status DoGetSourceSequence(const v1::GetSourceSequenceRequest& request,
                                   v1::GetSourceSequenceResponse& response,
                                   Call& call);
  absl::Status DoExportModel(const v1::ExportModelRequest& request,
                             v1::ExportModelResponse& response, Call& call);
  absl::Status DoImportModel(const v1::ImportModelRequest& request,
                             v1::ImportModelResponse& response, Call& call);
  absl::Status DoRestoreModel(const v1::RestoreModelRequest& request,
                              v1::RestoreModelResponse& response, Call& call);
  absl::Status DoRollBackModel(const v1::RollBackModelRequest& request,
                               v1::RollBackModelResponse& response, Call& call);
  absl::Status DoSetDriftDetection(const v1::SetDriftDetectionRequest& request,
                                   v1::SetDriftDetectionResponse& response,
                                   Call& call);
  absl::Status DoGetStats(const v1::GetStatsRequest& request,
                          v1::GetStatsResponse& response, Call& call);
  absl::Status DoCompareModels(const v1::CompareModelsRequest& request,
                               v1::CompareModelsResponse& response, Call& call);
  absl::Status DoSetAlias(const v1::SetAliasRequest& request,
                          v1::SetAliasResponse& response, Call& call);
  absl::Status DoDeleteAlias(const v1::DeleteAliasRequest& request,
                             v1::DeleteAliasResponse& response, Call& call);
  absl::Status DoListAliases(const v1::ListAliasesRequest& request,
                             v1::ListAliasesResponse& response, Call& call);

  const ServiceParts& parts_;
  // ExportModel's files, encoded once per version of a model.
  ExportedFiles exported_files_;
};

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_HALFSPACE_SERVICE_H_
