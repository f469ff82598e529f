#include "server/halfspace_service.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"
#include "server/convert.h"
#include "server/drift_proto.h"
#include "server/evaluate_stream.h"
#include "server/feedback.h"
#include "server/feedback_stream.h"
#include "server/logging.h"
#include "server/paging.h"
#include "server/peer.h"
#include "server/predict.h"
#include "server/predict_stream.h"
#include "server/raw_message.h"
#include "server/replication.h"
#include "server/status.h"
#include "server/train_stream.h"
#include "server/watch_model.h"
#include "spdlog/spdlog.h"

namespace halfspace {
namespace {

// ListModels pages: at most kMaxPageSize models, kDefaultPageSize when the
// request does not say, and no more than kMaxPageBytes of models however
// many classes they hold: a quarter of gRPC's default 4 MiB message limit.
constexpr int kMaxPageSize = 1000;
constexpr int kDefaultPageSize = 100;
constexpr size_t kMaxPageBytes = size_t{1} << 20;

// A unary call that passed the gate; it leaves the gate when the call is
// done.
class AdmittedCall final : public grpc::ServerUnaryReactor {
 public:
  explicit AdmittedCall(std::unique_ptr<Admission> admission)
      : admission_(std::move(admission)) {}
  void OnDone() override { delete this; }

 private:
  const std::unique_ptr<Admission> admission_;
};

// Whether a request names one model (a string field `model`): its caller
// must hold the call's permission on that model. The others (ListModels,
// GetStats, ListAliases, CompareModels, DeleteAlias) check what they show
// or name themselves.
template <typename Request, typename = void>
struct NamesOneModel : std::false_type {};
template <typename Request>
struct NamesOneModel<
    Request,
    std::enable_if_t<std::is_same_v<
        decltype(std::declval<const Request&>().model()), const std::string&>>>
    : std::true_type {};

static_assert(NamesOneModel<v1::GetModelRequest>::value);
static_assert(NamesOneModel<v1::SetAliasRequest>::value);
static_assert(!NamesOneModel<v1::CompareModelsRequest>::value);
static_assert(!NamesOneModel<v1::DeleteAliasRequest>::value);
static_assert(!NamesOneModel<v1::ListModelsRequest>::value);
static_assert(!NamesOneModel<v1::GetStatsRequest>::value);
static_assert(!NamesOneModel<v1::ListAliasesRequest>::value);

}  // namespace

template <typename Request, typename Response>
HalfspaceService::Unary HalfspaceService::Serve(
    Context* context, const Bytes* request_bytes, Bytes* response_bytes,
    const char* method, Permission permission,
    Handler<Request, Response> handler) {
  const absl::Time start = absl::Now();
  Call call;
  call.request_id = RequestId(*context);
  auto admission = std::make_unique<Admission>(parts_.gate);
  if (!admission->admitted()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    End(context, reactor, method, call.request_id, admission->status(), start);
    return reactor;
  }
  grpc::ServerUnaryReactor* reactor = new AdmittedCall(std::move(admission));
  Request request;
  Response response;
  Bytes bytes = *request_bytes;  // shares the slices
  call.stop = StopOf(context);
  call.deadline = absl::FromChrono(context->deadline());
  Caller caller;
  absl::Status status = AdmitCaller(parts_, *context, call.principal, caller);
  if (status.ok()) status = DecodeMessage(bytes, request);
  if constexpr (std::is_same_v<Request, v1::FeedbackRequest>) {
    if (status.ok())
      status = Charge(parts_, caller, 0, request.feedback_size());
  }
  if constexpr (NamesOneModel<Request>::value) {
    // Before the model is looked up: a denial does not tell whether it
    // exists.
    if (status.ok()) status = call.principal.Check(permission, request.model());
  }
  if (status.ok()) status = (this->*handler)(request, response, call);
  if constexpr (NamesOneModel<Request>::value &&
                !std::is_same_v<Request, v1::DeleteModelRequest>) {
    status = NotHeldYet(parts_.replicas, request.model(), std::move(status));
  }
  if (status.ok()) EncodeMessage(response, *response_bytes);
  if (call.lsn == 0 || parts_.log == nullptr) {
    End(context, reactor, method, call.request_id, status, start);
  } else {
    parts_.log->WhenDurable(call.lsn, [this, context, reactor, method,
                                       id = call.request_id, status, start] {
      End(context, reactor, method, id, status, start);
    });
  }
  return reactor;
}

void HalfspaceService::End(Context* context, grpc::ServerUnaryReactor* reactor,
                           const char* method, const std::string& request_id,
                           const absl::Status& status, absl::Time start) {
  AddPushback(status, *context);
  const grpc::Status finished = ToGrpcStatus(status);
  const absl::Duration elapsed = absl::Now() - start;
  parts_.metrics->RecordRefusal(status);
  parts_.metrics->RecordCall(method, finished.error_code(), elapsed);
  spdlog::debug("rid={} {} {} in {}", request_id, method, status.ToString(),
                absl::FormatDuration(elapsed));
  reactor->Finish(finished);
}

HalfspaceService::Unary HalfspaceService::CreateModel(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "CreateModel", Permission::kAdmin,
               &HalfspaceService::DoCreateModel);
}

HalfspaceService::Unary HalfspaceService::GetModel(Context* c, const Bytes* in,
                                                   Bytes* out) {
  return Serve(c, in, out, "GetModel", Permission::kPredict,
               &HalfspaceService::DoGetModel);
}

HalfspaceService::Unary HalfspaceService::ListModels(Context* c,
                                                     const Bytes* in,
                                                     Bytes* out) {
  return Serve(c, in, out, "ListModels", Permission::kPredict,
               &HalfspaceService::DoListModels);
}

HalfspaceService::Unary HalfspaceService::DeleteModel(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "DeleteModel", Permission::kAdmin,
               &HalfspaceService::DoDeleteModel);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HalfspaceService::Train(Context* c) {
  return StartTrainStream(parts_, c);
}

HalfspaceService::Unary HalfspaceService::Feedback(Context* c, const Bytes* in,
                                                   Bytes* out) {
  return Serve(c, in, out, "Feedback", Permission::kTrain,
               &HalfspaceService::DoFeedback);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HalfspaceService::FeedbackStream(Context* c) {
  return StartFeedbackStream(parts_, c);
}

HalfspaceService::Unary HalfspaceService::Predict(Context* c, const Bytes* in,
                                                  Bytes* out) {
  return Serve(c, in, out, "Predict", Permission::kPredict,
               &HalfspaceService::DoPredict);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
HalfspaceService::PredictStream(Context* c) {
  return StartPredictStream(parts_, c);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* HalfspaceService::Evaluate(
    Context* c, Bytes* out) {
  return StartEvaluateStream(parts_, c, out);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* HalfspaceService::WatchModel(
    Context* c, const Bytes* in) {
  return StartWatchModel(parts_, c, in);
}

HalfspaceService::Unary HalfspaceService::GetWeights(Context* c,
                                                     const Bytes* in,
                                                     Bytes* out) {
  return Serve(c, in, out, "GetWeights", Permission::kPredict,
               &HalfspaceService::DoGetWeights);
}

HalfspaceService::Unary HalfspaceService::GetRecentExamples(Context* c,
                                                            const Bytes* in,
                                                            Bytes* out) {
  return Serve(c, in, out, "GetRecentExamples", Permission::kPredict,
               &HalfspaceService::DoGetRecentExamples);
}

HalfspaceService::Unary HalfspaceService::SetWeights(Context* c,
                                                     const Bytes* in,
                                                     Bytes* out) {
  return Serve(c, in, out, "SetWeights", Permission::kAdmin,
               &HalfspaceService::DoSetWeights);
}

HalfspaceService::Unary HalfspaceService::GetSourceSequence(Context* c,
                                                            const Bytes* in,
                                                            Bytes* out) {
  return Serve(c, in, out, "GetSourceSequence", Permission::kPredict,
               &HalfspaceService::DoGetSourceSequence);
}

HalfspaceService::Unary HalfspaceService::ExportModel(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "ExportModel", Permission::kPredict,
               &HalfspaceService::DoExportModel);
}

HalfspaceService::Unary HalfspaceService::ImportModel(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "ImportModel", Permission::kAdmin,
               &HalfspaceService::DoImportModel);
}

HalfspaceService::Unary HalfspaceService::GetStats(Context* c, const Bytes* in,
                                                   Bytes* out) {
  return Serve(c, in, out, "GetStats", Permission::kPredict,
               &HalfspaceService::DoGetStats);
}

HalfspaceService::Unary HalfspaceService::RestoreModel(Context* c,
                                                       const Bytes* in,
                                                       Bytes* out) {
  return Serve(c, in, out, "RestoreModel", Permission::kAdmin,
               &HalfspaceService::DoRestoreModel);
}

HalfspaceService::Unary HalfspaceService::RollBackModel(Context* c,
                                                        const Bytes* in,
                                                        Bytes* out) {
  return Serve(c, in, out, "RollBackModel", Permission::kAdmin,
               &HalfspaceService::DoRollBackModel);
}

HalfspaceService::Unary HalfspaceService::SetDriftDetection(Context* c,
                                                            const Bytes* in,
                                                            Bytes* out) {
  return Serve(c, in, out, "SetDriftDetection", Permission::kAdmin,
               &HalfspaceService::DoSetDriftDetection);
}

HalfspaceService::Unary HalfspaceService::CompareModels(Context* c,
                                                        const Bytes* in,
                                                        Bytes* out) {
  return Serve(c, in, out, "CompareModels", Permission::kPredict,
               &HalfspaceService::DoCompareModels);
}

HalfspaceService::Unary HalfspaceService::SetAlias(Context* c, const Bytes* in,
                                                   Bytes* out) {
  return Serve(c, in, out, "SetAlias", Permission::kAdmin,
               &HalfspaceService::DoSetAlias);
}

HalfspaceService::Unary HalfspaceService::DeleteAlias(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "DeleteAlias", Permission::kAdmin,
               &HalfspaceService::DoDeleteAlias);
}

HalfspaceService::Unary HalfspaceService::ListAliases(Context* c,
                                                      const Bytes* in,
                                                      Bytes* out) {
  return Serve(c, in, out, "ListAliases", Permission::kPredict,
               &HalfspaceService::DoListAliases);
}

absl::Status HalfspaceService::DoCreateModel(
    const v1::CreateModelRequest& request, v1::CreateModelResponse& response,
    Call& call) {
  absl::StatusOr<ModelSpec> spec = SpecFromRequest(request);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<std::optional<Replication>> replication =
      ReplicationFromRequest(request);
  if (!replication.ok()) return replication.status();
  if (replication->has_value()) spec->replication = **replication;
  const std::vector<std::string> classes(request.classes().begin(),
                                         request.classes().end());
  absl::StatusOr<std::shared_ptr<Model>> model;
  if (!IsReplicated(*spec)) {
    if (parts_.replicas != nullptr) {
      if (absl::Status s = parts_.replicas->CheckUnclaimed(request.model());
          !s.ok()) {
        return s;
      }
    }
    model = parts_.registry->Create(request.model(), *spec, classes, &call.lsn);
  } else if (parts_.replicas == nullptr) {
    return absl::FailedPreconditionError(
        "a replicated model needs a server started with --nats_url");
  } else if (absl::StatusOr<std::shared_ptr<Model>> taken =
                 parts_.registry->Lookup(request.model());
             taken.ok() || !absl::IsNotFound(taken.status())) {
    return absl::AlreadyExistsError(absl::StrCat(
        "model ", Quoted(request.model()), " already exists on this server"));
  } else {
    // Every replica decides by this server's per-model limits.
    const Limits& limits = parts_.registry->budget().limits();
    spec->replication.limits = {limits.max_model_bytes, limits.max_classes,
                                limits.max_named_features,
                                limits.max_interaction_products};
    model = parts_.replicas->Create(request.model(), *spec, classes,
                                    ReplicaDeadline(call.deadline));
  }
  if (!model.ok()) return model.status();
  spdlog::info("rid={} created model '{}' (dimension {})", call.request_id,
               request.model(), spec->dimension);
  ToProto(**model, response.mutable_model());
  if (IsReplicated(*spec)) {
    ToProto(**model, *parts_.replicas,
            response.mutable_model()->mutable_replica());
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoGetModel(const v1::GetModelRequest& request,
                                          v1::GetModelResponse& response,
                                          Call&) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (model.ok()) {
    ToProto(**model, response.mutable_model());
    if (IsReplicated((*model)->spec()) && parts_.replicas) {
      ToProto(**model, *parts_.replicas,
              response.mutable_model()->mutable_replica());
    }
    for (std::string& alias : parts_.registry->AliasesOf((*model)->name())) {
      response.mutable_model()->add_aliases(std::move(alias));
    }
    return absl::OkStatus();
  }
  if (model.status().code() != absl::StatusCode::kDataLoss) {
    return model.status();
  }
  // Unavailable: answered with its name and the reason.
  for (const Listing& listing : parts_.registry->ListAll()) {
    if (listing.name == request.model()) {
      ToProto(listing, response.mutable_model());
      return absl::OkStatus();
    }
  }
  return model.status();
}

absl::Status HalfspaceService::DoListModels(
    const v1::ListModelsRequest& request, v1::ListModelsResponse& response,
    Call& call) {
  if (request.page_size() < 0 || request.page_size() > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size is ", request.page_size(),
                     "; it must be from 0 to ", kMaxPageSize));
  }
  const std::string& after = request.page_token();
  if (!after.empty() && !ValidateModelName(after).ok()) {
    return absl::InvalidArgumentError(
        "page_token is not one this server gave out; pass a response's "
        "next_page_token, or nothing for the first page");
  }
  if (!v1::ModelView_IsValid(request.view())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "view has the unknown value ", static_cast<int>(request.view())));
  }
  const int page_size =
      request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  const std::vector<Listing> models = parts_.registry->ListAll();
  absl::flat_hash_map<std::string, std::vector<std::string>> aliases;
  for (const auto& [alias, model] : parts_.registry->Aliases()) {
    aliases[model].push_back(alias);
  }
  auto next =
      std::upper_bound(models.begin(), models.end(), after,
                       [](const std::string& name, const Listing& listing) {
                         return name < listing.name;
                       });
  size_t bytes = 0;
  for (; next != models.end() && response.models_size() < page_size; ++next) {
    if (!call.principal.Allows(Permission::kPredict, next->name)) continue;
    v1::Model m;
    if (request.view() == v1::MODEL_VIEW_NAME) {
      m.set_name(next->name);
    } else {
      ToProto(*next, &m);
      auto it = aliases.find(next->name);
      if (it != aliases.end()) {
        m.mutable_aliases()->Assign(it->second.begin(), it->second.end());
      }
    }
    bytes += m.ByteSizeLong();
    if (response.models_size() > 0 && bytes > kMaxPageBytes) break;
    *response.add_models() = std::move(m);
  }
  if (next != models.end()) {
    response.set_next_page_token(
        response.models(response.models_size() - 1).name());
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoDeleteModel(
    const v1::DeleteModelRequest& request, v1::DeleteModelResponse&,
    Call& call) {
  absl::Status status =
      HoldsReplica(request.model())
          ? parts_.replicas->Delete(request.model(),
                                    ReplicaDeadline(call.deadline))
          : parts_.registry->Delete(request.model(), &call.lsn);
  if (status.ok()) {
    spdlog::info("rid={} deleted model '{}'", call.request_id, request.model());
  }
  return status;
}

bool HalfspaceService::IsSharedAlias(const std::string& name) const {
  if (parts_.replicas == nullptr) return false;
  // One this server has not read from the catalog yet is there too.
  return parts_.registry->SharedAliases().count(name) > 0 ||
         parts_.registry->Aliases().count(name) == 0;
}

bool HalfspaceService::HoldsReplica(const std::string& name) const {
  if (parts_.replicas == nullptr) return false;
  const std::vector<ModelRegistry::Replica> replicas =
      parts_.registry->Replicas();
  return std::any_of(
      replicas.begin(), replicas.end(),
      [&](const ModelRegistry::Replica& r) { return r.name == name; });
}

absl::Status HalfspaceService::WaitForPosition(const std::string& name,
                                               uint64_t position,
                                               absl::Time deadline) {
  absl::StatusOr<std::shared_ptr<Model>> model = parts_.registry->Lookup(name);
  // A replica this server has not created yet: its position is 0.
  const bool unseen =
      absl::IsNotFound(model.status()) && parts_.replicas != nullptr &&
      absl::IsAlreadyExists(parts_.replicas->CheckUnclaimed(name));
  if (!model.ok() && !unseen) return model.status();
  if (!unseen &&
      (!IsReplicated((*model)->spec()) || parts_.replicas == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_position is for a replicated model; model ",
                     Quoted((*model)->name()), " is not one"));
  }
  return parts_.replicas->WaitFor(unseen ? name : (*model)->name(), position,
                                  deadline);
}

absl::Status HalfspaceService::DoPredict(const v1::PredictRequest& request,
                                         v1::PredictResponse& response,
                                         Call& call) {
  if (request.min_position() != 0) {
    if (absl::Status s = WaitForPosition(request.model(),
                                         request.min_position(), call.deadline);
        !s.ok()) {
      return s;
    }
  }
  PredictScratch scratch;
  return PredictAndRemember(parts_, call.principal, request.model(), request,
                            scratch, call.stop, response, call.lsn);
}

absl::Status HalfspaceService::DoFeedback(const v1::FeedbackRequest& request,
                                          v1::FeedbackResponse& response,
                                          Call& call) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (!model.ok()) return model.status();
  return LearnFeedback(**model, parts_, request, call.stop, response, call.lsn);
}

absl::Status HalfspaceService::DoGetWeights(
    const v1::GetWeightsRequest& request, v1::GetWeightsResponse& response,
    Call&) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (!model.ok()) return model.status();
  const int64_t width = FeatureWidth((*model)->spec());
  const int64_t offset = request.offset();
  if (offset < 0 || offset >= width) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset is ", offset, "; it must be from 0 to ", width - 1,
                     " (0, or a response's next_offset)"));
  }
  if (request.page_size() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size is ", request.page_size(), "; it must be 0 or more"));
  }
  // A page takes 8 bytes per coordinate and class, and each class's label
  // and framing.
  const std::vector<std::string> classes = (*model)->classes();
  const int64_t rows = std::max<size_t>(1, classes.size());
  int64_t fixed = 256;
  for (const std::string& label : classes) fixed += label.size() + 32;
  const int64_t fit = (static_cast<int64_t>(parts_.max_message_bytes) - fixed) /
                      (rows * int64_t{sizeof(double)});
  if (request.page_size() == 0 && width - offset > fit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model ", Quoted(request.model()), " has ", rows, " x ", width,
        " weights, over the ", parts_.max_message_bytes,
        "-byte message limit (--max_message_bytes); read them in pages "
        "(GetWeightsRequest.page_size, e.g. ",
        std::max<int64_t>(fit, 1), ")"));
  }
  const Page page = PageOf(width, offset, request.page_size(), fit);
  uint64_t version = 0;
  ToProto((*model)->Weights(page.offset, page.count, &version), &response);
  response.set_offset(page.offset);
  response.set_next_offset(page.next_offset);
  response.set_width(width);
  response.set_version(version);
  if (response.ByteSizeLong() >
      parts_.max_message_bytes) {  // classes were added
    return absl::AbortedError("the model grew while it was read; retry");
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoGetRecentExamples(
    const v1::GetRecentExamplesRequest& request,
    v1::GetRecentExamplesResponse& response, Call&) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (!model.ok()) return model.status();
  const int64_t dimension = (*model)->spec().dimension;
  const std::vector<std::string> classes = (*model)->classes();
  for (const RecentExamples::Example& kept : (*model)->Recent()) {
    v1::RecentExample* out = response.add_examples();
    out->mutable_features()->Add(kept.x.begin(), kept.x.begin() + dimension);
    if (!(*model)->multiclass()) {
      out->set_label(kept.target);
    } else if (kept.target >= 0 &&
               static_cast<size_t>(kept.target) < classes.size()) {
      out->set_class_label(classes[kept.target]);
    }
    out->set_mistake(kept.mistake);
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoSetWeights(
    const v1::SetWeightsRequest& request, v1::SetWeightsResponse& response,
    Call& call) {
  std::vector<double> w(request.weights().begin(), request.weights().end());
  return ChangeModel(
      request.model(), call,
      [&](ReplicaSet& replicas, const Model& model, absl::Time deadline) {
        return replicas.SetWeights(model, request.class_label(), w,
                                   request.bias(), deadline);
      },
      [&](uint64_t* lsn) {
        return parts_.registry->SetWeights(request.model(),
                                           request.class_label(), std::move(w),
                                           request.bias(), lsn);
      },
      response.mutable_model());
}

absl::Status HalfspaceService::ChangeModel(
    const std::string& name, Call& call,
    const std::function<absl::Status(ReplicaSet& replicas, const Model& model,
                                     absl::Time deadline)>& replicated,
    const std::function<absl::Status(uint64_t* lsn)>& local, v1::Model* out) {
  absl::StatusOr<std::shared_ptr<Model>> model = parts_.registry->Get(name);
  if (!model.ok()) return model.status();
  absl::Status status;
  if (IsReplicated((*model)->spec())) {
    // Every replica takes the change from the stream.
    status = parts_.replicas == nullptr
                 ? NotFollowed(**model)
                 : replicated(*parts_.replicas, **model,
                              ReplicaDeadline(call.deadline));
  } else {
    status = local(&call.lsn);
  }
  if (!status.ok()) return status;
  model = parts_.registry->Get(name);
  if (!model.ok()) return model.status();
  ToProto(**model, out);
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoGetSourceSequence(
    const v1::GetSourceSequenceRequest& request,
    v1::GetSourceSequenceResponse& response, Call&) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (!model.ok()) return model.status();
  if (request.source().empty()) {
    return absl::InvalidArgumentError("source is empty; name the source");
  }
  response.set_last_sequence((*model)->LastSequence(request.source()));
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoExportModel(
    const v1::ExportModelRequest& request, v1::ExportModelResponse& response,
    Call&) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Lookup(request.model());
  if (!model.ok()) return model.status();
  if (request.offset() < 0 || request.page_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("offset is ", request.offset(), " and page_size ",
                     request.page_size(), "; neither may be negative"));
  }
  const ExportedFiles::File exported = exported_files_.Get(*model);
  const std::string& file = *exported.bytes;
  const int64_t size = file.size();
  // The response's other fields and framing take under 64 bytes.
  const int64_t fit = static_cast<int64_t>(parts_.max_message_bytes) - 64;
  if (request.page_size() == 0 && request.offset() == 0 && size > fit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model ", Quoted(request.model()), "'s file takes ", size,
        " bytes, over the ", parts_.max_message_bytes,
        "-byte message limit (--max_message_bytes); read it in pages "
        "(ExportModelRequest.page_size)"));
  }
  const int64_t offset = request.offset();
  if (offset >= size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "offset is ", offset, "; the file has ", size,
        " bytes (its version may have changed: start again from 0)"));
  }
  const Page page = PageOf(size, offset, request.page_size(), fit);
  response.set_model_file(file.data() + page.offset, page.count);
  response.set_offset(page.offset);
  response.set_next_offset(page.next_offset);
  response.set_file_size(size);
  response.set_version(exported.version);
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoImportModel(
    const v1::ImportModelRequest& request, v1::ImportModelResponse& response,
    Call& call) {
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Import(request.model(), request.model_file(), &call.lsn);
  if (!model.ok()) return model.status();
  spdlog::info("rid={} imported model '{}'", call.request_id, request.model());
  ToProto(**model, response.mutable_model());
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoRestoreModel(
    const v1::RestoreModelRequest& request, v1::RestoreModelResponse& response,
    Call& call) {
  if (HoldsReplica(request.model())) {
    absl::StatusOr<std::shared_ptr<Model>> rebuilt = parts_.replicas->Rebuild(
        request.model(), ReplicaDeadline(call.deadline));
    if (!rebuilt.ok()) return rebuilt.status();
    spdlog::warn("rid={} replica of '{}' rebuilt from its stream",
                 call.request_id, request.model());
    ToProto(**rebuilt, response.mutable_model());
    return absl::OkStatus();
  }
  if (absl::Status s =
          parts_.registry->RestorePrevious(request.model(), &call.lsn);
      !s.ok()) {
    return s;
  }
  spdlog::warn("rid={} model '{}' rolled back to its previous snapshot",
               call.request_id, request.model());
  absl::StatusOr<std::shared_ptr<Model>> model =
      parts_.registry->Get(request.model());
  if (!model.ok()) return model.status();
  ToProto(**model, response.mutable_model());
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoRollBackModel(
    const v1::RollBackModelRequest& request,
    v1::RollBackModelResponse& response, Call& call) {
  const absl::Status status = ChangeModel(
      request.model(), call,
      [](ReplicaSet& replicas, const Model& model, absl::Time deadline) {
        return replicas.RollBack(model, deadline);
      },
      [&](uint64_t* lsn) {
        return parts_.registry->RollBack(request.model(), lsn);
      },
      response.mutable_model());
  if (status.ok()) {
    spdlog::warn(
        "rid={} model '{}' rolled back to the weights its challenger "
        "replaced",
        call.request_id, request.model());
  }
  return status;
}

absl::Status HalfspaceService::DoSetDriftDetection(
    const v1::SetDriftDetectionRequest& request,
    v1::SetDriftDetectionResponse& response, Call& call) {
  DriftOptions drift;
  if (request.has_drift()) {
    absl::StatusOr<DriftOptions> given = FromProto(request.drift());
    if (!given.ok()) return given.status();
    drift = *given;
  }
  const absl::Status status = ChangeModel(
      request.model(), call,
      [&](ReplicaSet& replicas, const Model& model, absl::Time deadline) {
        return replicas.SetDrift(model, drift, deadline);
      },
      [&](uint64_t* lsn) {
        return parts_.registry->SetDrift(request.model(), drift, lsn);
      },
      response.mutable_model());
  if (status.ok()) {
    v1::DriftDetection settings;
    if (drift.method != DriftOptions::Method::kNone) ToProto(drift, &settings);
    spdlog::info("rid={} model '{}' drift detection set to {{{}}}",
                 call.request_id, request.model(), settings.ShortDebugString());
  }
  return status;
}

absl::Status HalfspaceService::DoGetStats(const v1::GetStatsRequest&,
                                          v1::GetStatsResponse& response,
                                          Call& call) {
  parts_.metrics->ToProto(call.principal, response);
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoCompareModels(
    const v1::CompareModelsRequest& request,
    v1::CompareModelsResponse& response, Call& call) {
  const auto& names = request.models();
  if (names.size() < 2 || names.size() > static_cast<int>(kMaxFanOut)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models names ", names.size(), " models; compare 2 to ", kMaxFanOut));
  }
  const double alpha = request.has_alpha() ? request.alpha() : 0.05;
  if (!(alpha > 0.0 && alpha < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("alpha is ", alpha, "; it must lie in (0, 1)"));
  }
  std::vector<std::shared_ptr<Model>> models;
  for (const std::string& name : names) {
    if (std::count(names.begin(), names.end(), name) > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "models names ", Quoted(name), " twice; name each model once"));
    }
    if (absl::Status s = call.principal.Check(Permission::kPredict, name);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::shared_ptr<Model>> model =
        parts_.registry->Lookup(name);
    if (!model.ok()) return model.status();
    if (std::find(models.begin(), models.end(), *model) != models.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("models names model ", Quoted((*model)->name()),
                       " twice (an alias is its model); name each model once"));
    }
    models.push_back(*std::move(model));
  }
  const Model& first = *models.front();
  for (const std::shared_ptr<Model>& model : models) {
    v1::ModelComparison* out = response.add_models();
    out->set_model(model->name());
    ToProto(model->Stats(), out->mutable_stats());
    if (model.get() == &first) continue;
    ToProto(Compare(model->PairedWith(first), alpha),
            out->mutable_versus_first());
  }
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoSetAlias(const v1::SetAliasRequest& request,
                                          v1::SetAliasResponse& response,
                                          Call& call) {
  // The model was checked by Serve.
  if (absl::Status s =
          call.principal.Check(Permission::kAdmin, request.alias());
      !s.ok()) {
    return s;
  }
  std::optional<std::string> expected;
  if (request.has_expected_model()) expected = request.expected_model();
  absl::StatusOr<std::string> previous;
  if (HoldsReplica(request.model())) {
    // Every server's: kept in the catalog beside the model.
    previous =
        parts_.replicas->SetAlias(request.alias(), request.model(), expected,
                                  ReplicaDeadline(call.deadline));
  } else {
    if (parts_.replicas != nullptr && !IsSharedAlias(request.alias())) {
      if (absl::Status s = parts_.replicas->CheckUnclaimed(request.alias());
          !s.ok()) {
        return s;
      }
    }
    previous =
        parts_.registry->SetAlias(request.alias(), request.model(), expected);
  }
  if (!previous.ok()) return previous.status();
  spdlog::info("rid={} alias '{}' points to '{}' (was '{}')", call.request_id,
               request.alias(), request.model(), *previous);
  response.mutable_alias()->set_alias(request.alias());
  response.mutable_alias()->set_model(request.model());
  response.set_previous_model(*std::move(previous));
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoDeleteAlias(
    const v1::DeleteAliasRequest& request, v1::DeleteAliasResponse& response,
    Call& call) {
  if (absl::Status s =
          call.principal.Check(Permission::kAdmin, request.alias());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::string> model =
      IsSharedAlias(request.alias())
          ? parts_.replicas->DeleteAlias(request.alias(),
                                         ReplicaDeadline(call.deadline))
          : parts_.registry->DeleteAlias(request.alias());
  if (!model.ok()) return model.status();
  spdlog::info("rid={} alias '{}' deleted (pointed to '{}')", call.request_id,
               request.alias(), *model);
  response.set_model(*std::move(model));
  return absl::OkStatus();
}

absl::Status HalfspaceService::DoListAliases(const v1::ListAliasesRequest&,
                                             v1::ListAliasesResponse& response,
                                             Call& call) {
  for (const auto& [alias, model] : parts_.registry->Aliases()) {
    if (!call.principal.Allows(Permission::kPredict, alias)) continue;
    v1::Alias* out = response.add_aliases();
    out->set_alias(alias);
    out->set_model(model);
  }
  return absl::OkStatus();
}

}  // namespace halfspace
