#include "server/open_inference.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "halfspace/v1/halfspace.grpc.pb.h"
#include "server/peer.h"
#include "server/server.h"

namespace halfspace {
namespace {

namespace oip = inference;
using TensorMetadata = oip::ModelMetadataResponse::TensorMetadata;

grpc::Status Invalid(std::string message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::move(message));
}

grpc::Status Unversioned(const std::string& version) {
  if (version.empty()) return grpc::Status::OK;
  return grpc::Status(
      grpc::StatusCode::NOT_FOUND,
      absl::StrCat("model version \"", version.substr(0, 64),
                   "\": a halfspace model has no versions (it is its current "
                   "weights); leave the version out"));
}

// A call of our own with the caller's token, address and deadline (and
// cancelled with the caller's call).
std::unique_ptr<grpc::ClientContext> Forwarded(
    grpc::CallbackServerContext* context) {
  std::unique_ptr<grpc::ClientContext> forwarded =
      grpc::ClientContext::FromCallbackServerContext(*context);
  auto it = context->client_metadata().find("authorization");
  if (it != context->client_metadata().end()) {
    forwarded->AddMetadata("authorization",
                           std::string(it->second.data(), it->second.size()));
  }
  forwarded->AddMetadata(
      kHttpClientMetadata,
      absl::StrCat(HttpGatewaySecret(), " ", ClientOf(*context)));
  return forwarded;
}

void AddTensor(const std::string& name, const std::string& datatype,
               std::vector<int64_t> shape,
               google::protobuf::RepeatedPtrField<TensorMetadata>* out) {
  TensorMetadata& t = *out->Add();
  t.set_name(name);
  t.set_datatype(datatype);
  for (int64_t s : shape) t.add_shape(s);
}

// The rows of the request's one input: N instances of d values each.
grpc::Status ToInstances(const oip::ModelInferRequest& request,
                         v1::PredictRequest* predict) {
  if (request.inputs_size() != 1) {
    return Invalid(absl::StrCat(
        "give one input tensor of shape [N, d] (the feature vectors); got ",
        request.inputs_size()));
  }
  const auto& input = request.inputs(0);
  int64_t rows = 1, width = 0;
  if (input.shape_size() == 1) {
    width = input.shape(0);
  } else if (input.shape_size() == 2) {
    rows = input.shape(0);
    width = input.shape(1);
  } else {
    return Invalid(absl::StrCat("input ", input.name(), ": shape [",
                                absl::StrJoin(input.shape(), ", "),
                                "]; give [N, d] or [d]"));
  }
  int64_t elements;
  if (rows < 1 || width < 0 || __builtin_mul_overflow(rows, width, &elements)) {
    return Invalid(absl::StrCat("input ", input.name(), ": shape [",
                                absl::StrJoin(input.shape(), ", "),
                                "]: N must be at least 1 and d at least 0"));
  }
  const std::string& type = input.datatype();
  if (type != "FP64" && type != "FP32") {
    return Invalid(absl::StrCat("input ", input.name(), ": datatype \"",
                                type.substr(0, 64),
                                "\"; halfspace takes FP64 (or FP32) features"));
  }
  const bool fp64 = type == "FP64";
  std::vector<double> values;
  if (request.raw_input_contents_size() > 0) {
    const std::string& raw = request.raw_input_contents(0);
    const size_t bytes = fp64 ? 8 : 4;
    if (request.raw_input_contents_size() != 1 ||
        input.contents().ByteSizeLong() != 0 ||
        raw.size() / bytes != static_cast<uint64_t>(elements) ||
        raw.size() % bytes != 0) {
      return Invalid(absl::StrCat(
          "input ", input.name(), ": raw contents must be one entry of ",
          elements, " ", type, " values (", elements, " x ", bytes,
          " bytes), and no typed contents"));
    }
    values.resize(elements);
    for (int64_t i = 0; i < elements; ++i) {
      if (fp64) {
        std::memcpy(&values[i], raw.data() + 8 * i, 8);
      } else {
        float f;
        std::memcpy(&f, raw.data() + 4 * i, 4);
        values[i] = f;
      }
    }
  } else {
    const int64_t given = fp64 ? input.contents().fp64_contents_size()
                               : input.contents().fp32_contents_size();
    if (given != elements) {
      return Invalid(absl::StrCat(
          "input ", input.name(), ": shape [",
          absl::StrJoin(input.shape(), ", "), "] has ", elements, " elements; ",
          fp64 ? "fp64" : "fp32", "_contents has ", given));
    }
    values.reserve(elements);
    for (int64_t i = 0; i < elements; ++i) {
      values.push_back(fp64 ? input.contents().fp64_contents(i)
                            : input.contents().fp32_contents(i));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    auto* dense = predict->add_instances()->mutable_dense();
    dense->Add(values.begin() + r * width, values.begin() + (r + 1) * width);
  }
  return grpc::Status::OK;
}

// The outputs of Predict's answer, those asked for (all when none is).
grpc::Status ToOutputs(const v1::PredictResponse& predicted,
                       const oip::ModelInferRequest& request,
                       oip::ModelInferResponse* response) {
  using Tensor = oip::ModelInferResponse::InferOutputTensor;
  const auto& p = predicted.predictions();
  const int64_t n = p.size();
  std::vector<Tensor> available;
  available.reserve(4);  // the references `tensor` returns stay valid
  auto tensor = [&](const char* name, const char* type,
                    std::vector<int64_t> shape) -> Tensor& {
    Tensor& t = available.emplace_back();
    t.set_name(name);
    t.set_datatype(type);
    for (int64_t s : shape) t.add_shape(s);
    return t;
  };
  const bool multiclass =
      n > 0 && (!p[0].predicted_class().empty() || p[0].class_scores_size());
  if (!multiclass) {
    Tensor& label = tensor("label", "INT32", {n});
    Tensor& score = tensor("score", "FP64", {n});
    bool probabilities = n > 0;
    for (const auto& one : p) {
      label.mutable_contents()->add_int_contents(one.label());
      score.mutable_contents()->add_fp64_contents(one.score());
      probabilities &= one.has_probability();
    }
    if (probabilities) {
      Tensor& probability = tensor("probability", "FP64", {n});
      for (const auto& one : p) {
        probability.mutable_contents()->add_fp64_contents(one.probability());
      }
    }
  } else {
    const int64_t k = p[0].class_scores_size();
    Tensor& label = tensor("label", "BYTES", {n});
    Tensor& scores = tensor("scores", "FP64", {n, k});
    Tensor& classes = tensor("classes", "BYTES", {k});
    bool probabilities = k > 0;
    for (const auto& c : p[0].class_scores()) {
      classes.mutable_contents()->add_bytes_contents(c.label());
    }
    for (const auto& one : p) {
      label.mutable_contents()->add_bytes_contents(one.predicted_class());
      for (const auto& c : one.class_scores()) {
        scores.mutable_contents()->add_fp64_contents(c.score());
        probabilities &= c.has_probability();
      }
    }
    if (probabilities) {
      Tensor& probability = tensor("probabilities", "FP64", {n, k});
      for (const auto& one : p) {
        for (const auto& c : one.class_scores()) {
          probability.mutable_contents()->add_fp64_contents(c.probability());
        }
      }
    }
  }
  if (request.outputs_size() == 0) {
    for (Tensor& t : available) *response->add_outputs() = std::move(t);
    return grpc::Status::OK;
  }
  for (const auto& asked : request.outputs()) {
    auto it =
        std::find_if(available.begin(), available.end(),
                     [&](const Tensor& t) { return t.name() == asked.name(); });
    if (it == available.end()) {
      std::vector<std::string> names;
      for (const Tensor& t : available) names.push_back(t.name());
      return Invalid(absl::StrCat("output \"", asked.name().substr(0, 64),
                                  "\": this model's outputs are ",
                                  absl::StrJoin(names, ", ")));
    }
    *response->add_outputs() = *it;
  }
  return grpc::Status::OK;
}

}  // namespace

void OpenInferenceService::Connect(std::shared_ptr<grpc::Channel> channel) {
  MutexLock lock(mu_);
  channel_ = std::move(channel);
}

std::shared_ptr<grpc::Channel> OpenInferenceService::channel() const {
  MutexLock lock(mu_);
  return channel_;
}

grpc::ServerUnaryReactor* OpenInferenceService::ServerLive(
    grpc::CallbackServerContext* context, const oip::ServerLiveRequest*,
    oip::ServerLiveResponse* response) {
  response->set_live(true);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* OpenInferenceService::ServerMetadata(
    grpc::CallbackServerContext* context, const oip::ServerMetadataRequest*,
    oip::ServerMetadataResponse* response) {
  response->set_name("halfspace");
  response->set_version(version_);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

namespace {

// A call this service makes on behalf of one of its own: the stub, the
// forwarded context and the messages, alive until it completes.
template <class Request, class Response>
struct Onward {
  std::unique_ptr<grpc::ClientContext> context;
  Request request;
  Response response;
};

grpc::Status NotConnected() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "the server is starting; retry");
}

}  // namespace

grpc::ServerUnaryReactor* OpenInferenceService::ServerReady(
    grpc::CallbackServerContext* context, const oip::ServerReadyRequest*,
    oip::ServerReadyResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<grpc::Channel> channel = this->channel();
  if (channel == nullptr) {
    response->set_ready(false);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  auto stub = std::shared_ptr<grpc::health::v1::Health::Stub>(
      grpc::health::v1::Health::NewStub(channel));
  auto call = std::make_shared<Onward<grpc::health::v1::HealthCheckRequest,
                                      grpc::health::v1::HealthCheckResponse>>();
  call->context = Forwarded(context);
  call->request.set_service(kServiceName);
  stub->async()->Check(
      call->context.get(), &call->request, &call->response,
      [reactor, response, call, stub](grpc::Status status) {
        response->set_ready(status.ok() &&
                            call->response.status() ==
                                grpc::health::v1::HealthCheckResponse::SERVING);
        reactor->Finish(grpc::Status::OK);
      });
  return reactor;
}

grpc::ServerUnaryReactor* OpenInferenceService::ModelReady(
    grpc::CallbackServerContext* context, const oip::ModelReadyRequest* request,
    oip::ModelReadyResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<grpc::Channel> channel = this->channel();
  if (channel == nullptr) {
    reactor->Finish(NotConnected());
    return reactor;
  }
  if (!request->version().empty()) {
    response->set_ready(false);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  auto stub = std::shared_ptr<v1::HalfspaceService::Stub>(
      v1::HalfspaceService::NewStub(channel));
  auto call =
      std::make_shared<Onward<v1::GetModelRequest, v1::GetModelResponse>>();
  call->context = Forwarded(context);
  call->request.set_model(request->name());
  stub->async()->GetModel(
      call->context.get(), &call->request, &call->response,
      [reactor, response, call, stub](grpc::Status status) {
        if (status.ok() || status.error_code() == grpc::StatusCode::NOT_FOUND ||
            status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
            status.error_code() == grpc::StatusCode::DATA_LOSS) {
          response->set_ready(
              status.ok() &&
              call->response.model().unavailable_reason().empty());
          reactor->Finish(grpc::Status::OK);
        } else {
          reactor->Finish(status);
        }
      });
  return reactor;
}

grpc::ServerUnaryReactor* OpenInferenceService::ModelMetadata(
    grpc::CallbackServerContext* context,
    const oip::ModelMetadataRequest* request,
    oip::ModelMetadataResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<grpc::Channel> channel = this->channel();
  if (channel == nullptr) {
    reactor->Finish(NotConnected());
    return reactor;
  }
  if (grpc::Status s = Unversioned(request->version()); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  auto stub = std::shared_ptr<v1::HalfspaceService::Stub>(
      v1::HalfspaceService::NewStub(channel));
  auto get =
      std::make_shared<Onward<v1::GetModelRequest, v1::GetModelResponse>>();
  get->context = Forwarded(context);
  get->request.set_model(request->name());
  stub->async()->GetModel(
      get->context.get(), &get->request, &get->response,
      [context, reactor, response, get, stub](grpc::Status status) {
        if (!status.ok()) return reactor->Finish(status);
        const v1::Model& model = get->response.model();
        response->set_name(model.name());
        response->set_platform("halfspace");
        const int64_t d = model.dimension();
        AddTensor("input", "FP64", {-1, d}, response->mutable_inputs());
        // Whether it answers probabilities: asked of the model itself, by a
        // prediction at the origin.
        auto probe =
            std::make_shared<Onward<v1::PredictRequest, v1::PredictResponse>>();
        probe->context = Forwarded(context);
        probe->request.set_model(model.name());
        probe->request.add_instances()->mutable_dense()->Resize(
            static_cast<int>(d), 0.0);
        const bool multiclass = model.multiclass();
        const int64_t k = model.classes_size();
        stub->async()->Predict(
            probe->context.get(), &probe->request, &probe->response,
            [reactor, response, probe, stub, multiclass,
             k](grpc::Status predicted) {
              bool probabilities = false;
              if (predicted.ok() && probe->response.predictions_size() == 1) {
                const v1::Prediction& p = probe->response.predictions(0);
                probabilities = multiclass
                                    ? p.class_scores_size() > 0 &&
                                          p.class_scores(0).has_probability()
                                    : p.has_probability();
              }
              auto* out = response->mutable_outputs();
              if (!multiclass) {
                AddTensor("label", "INT32", {-1}, out);
                AddTensor("score", "FP64", {-1}, out);
                if (probabilities) AddTensor("probability", "FP64", {-1}, out);
              } else {
                AddTensor("label", "BYTES", {-1}, out);
                AddTensor("scores", "FP64", {-1, k}, out);
                AddTensor("classes", "BYTES", {k}, out);
                if (probabilities) {
                  AddTensor("probabilities", "FP64", {-1, k}, out);
                }
              }
              reactor->Finish(grpc::Status::OK);
            });
      });
  return reactor;
}

grpc::ServerUnaryReactor* OpenInferenceService::ModelInfer(
    grpc::CallbackServerContext* context, const oip::ModelInferRequest* request,
    oip::ModelInferResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<grpc::Channel> channel = this->channel();
  if (channel == nullptr) {
    reactor->Finish(NotConnected());
    return reactor;
  }
  if (grpc::Status s = Unversioned(request->model_version()); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  auto call =
      std::make_shared<Onward<v1::PredictRequest, v1::PredictResponse>>();
  call->request.set_model(request->model_name());
  if (grpc::Status s = ToInstances(*request, &call->request); !s.ok()) {
    reactor->Finish(s);
    return reactor;
  }
  call->context = Forwarded(context);
  auto stub = std::shared_ptr<v1::HalfspaceService::Stub>(
      v1::HalfspaceService::NewStub(channel));
  stub->async()->Predict(
      call->context.get(), &call->request, &call->response,
      [reactor, request, response, call, stub](grpc::Status status) {
        if (!status.ok()) return reactor->Finish(status);
        response->set_model_name(request->model_name());
        response->set_id(request->id());
        reactor->Finish(ToOutputs(call->response, *request, response));
      });
  return reactor;
}

}  // namespace halfspace
