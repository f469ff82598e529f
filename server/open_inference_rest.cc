#include "server/open_inference_rest.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/http_routes.h"

namespace halfspace {
namespace {

namespace oip = inference;
namespace pb = google::protobuf;

absl::Status Invalid(absl::string_view where, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", why));
}

// The elements of `value` (a number, or lists of them nested), in
// row-major order.
absl::Status Flatten(const pb::Value& value, std::vector<double>* out,
                     int depth = 0) {
  if (depth > 32) return absl::InvalidArgumentError("data nested too deep");
  if (value.kind_case() == pb::Value::kNumberValue) {
    out->push_back(value.number_value());
    return absl::OkStatus();
  }
  if (value.kind_case() != pb::Value::kListValue) {
    return absl::InvalidArgumentError(
        "data must be numbers (or lists of them)");
  }
  for (const pb::Value& v : value.list_value().values()) {
    if (absl::Status s = Flatten(v, out, depth + 1); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Integer(const pb::Value& value,
                                absl::string_view where) {
  const double d = value.number_value();
  if (value.kind_case() != pb::Value::kNumberValue || d != std::floor(d) ||
      std::abs(d) > 9007199254740992.0) {
    return Invalid(where, "must be an integer");
  }
  return static_cast<int64_t>(d);
}

absl::Status Parameters(const pb::Value& value, absl::string_view where,
                        pb::Map<std::string, oip::InferParameter>* out) {
  if (value.kind_case() != pb::Value::kStructValue) {
    return Invalid(where, "must be an object");
  }
  for (const auto& [name, v] : value.struct_value().fields()) {
    oip::InferParameter& p = (*out)[name];
    switch (v.kind_case()) {
      case pb::Value::kBoolValue:
        p.set_bool_param(v.bool_value());
        break;
      case pb::Value::kStringValue:
        p.set_string_param(v.string_value());
        break;
      case pb::Value::kNumberValue: {
        absl::StatusOr<int64_t> i = Integer(v, absl::StrCat(where, ".", name));
        if (!i.ok()) return i.status();
        p.set_int64_param(*i);
        break;
      }
      default:
        return Invalid(absl::StrCat(where, ".", name),
                       "must be a boolean, an integer or a string");
    }
  }
  return absl::OkStatus();
}

const pb::Value* Field(const pb::Struct& object, const char* name) {
  auto it = object.fields().find(name);
  return it == object.fields().end() ? nullptr : &it->second;
}

absl::Status StringField(const pb::Struct& object, const char* name,
                         absl::string_view where, std::string* out) {
  const pb::Value* v = Field(object, name);
  if (v == nullptr) return absl::OkStatus();
  if (v->kind_case() != pb::Value::kStringValue) {
    return Invalid(absl::StrCat(where, name), "must be a string");
  }
  *out = v->string_value();
  return absl::OkStatus();
}

absl::Status OnlyKeys(const pb::Struct& object, absl::string_view where,
                      std::initializer_list<absl::string_view> keys) {
  for (const auto& [key, ignored] : object.fields()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return Invalid(absl::StrCat(where, key.substr(0, 64)),
                     "is not a field of an inference request");
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeInput(const pb::Value& value, size_t index,
                         oip::ModelInferRequest::InferInputTensor* input) {
  const std::string where = absl::StrCat("inputs[", index, "].");
  if (value.kind_case() != pb::Value::kStructValue) {
    return Invalid(absl::StrCat("inputs[", index, "]"), "must be an object");
  }
  const pb::Struct& object = value.struct_value();
  if (absl::Status s = OnlyKeys(
          object, where, {"name", "shape", "datatype", "parameters", "data"});
      !s.ok()) {
    return s;
  }
  for (auto [key, out] : {std::pair{"name", input->mutable_name()},
                          std::pair{"datatype", input->mutable_datatype()}}) {
    if (absl::Status s = StringField(object, key, where, out); !s.ok()) {
      return s;
    }
  }
  const pb::Value* shape = Field(object, "shape");
  if (shape == nullptr || shape->kind_case() != pb::Value::kListValue) {
    return Invalid(absl::StrCat(where, "shape"), "give a list of integers");
  }
  for (const pb::Value& s : shape->list_value().values()) {
    absl::StatusOr<int64_t> dim = Integer(s, absl::StrCat(where, "shape"));
    if (!dim.ok()) return dim.status();
    input->add_shape(*dim);
  }
  if (const pb::Value* p = Field(object, "parameters")) {
    if (absl::Status s = Parameters(*p, absl::StrCat(where, "parameters"),
                                    input->mutable_parameters());
        !s.ok()) {
      return s;
    }
  }
  if (input->datatype() != "FP64" && input->datatype() != "FP32") {
    return Invalid(absl::StrCat(where, "datatype"),
                   absl::StrCat("\"", input->datatype().substr(0, 64),
                                "\"; halfspace takes FP64 (or FP32) features"));
  }
  const pb::Value* data = Field(object, "data");
  if (data == nullptr) return Invalid(absl::StrCat(where, "data"), "missing");
  std::vector<double> values;
  if (absl::Status s = Flatten(*data, &values); !s.ok()) {
    return Invalid(absl::StrCat(where, "data"), s.message());
  }
  if (input->datatype() == "FP64") {
    input->mutable_contents()->mutable_fp64_contents()->Add(values.begin(),
                                                            values.end());
  } else {  // FP32
    for (double v : values) {
      input->mutable_contents()->add_fp32_contents(static_cast<float>(v));
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeInfer(absl::string_view body,
                         oip::ModelInferRequest* request) {
  pb::Struct object;
  const auto parsed = pb::util::JsonStringToMessage(
      pb::StringPiece(body.data(), body.size()), &object);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the body is not a JSON object: ", std::string(parsed.message())));
  }
  if (absl::Status s =
          OnlyKeys(object, "", {"id", "parameters", "inputs", "outputs"});
      !s.ok()) {
    return s;
  }
  if (absl::Status s = StringField(object, "id", "", request->mutable_id());
      !s.ok()) {
    return s;
  }
  if (const pb::Value* p = Field(object, "parameters")) {
    if (absl::Status s =
            Parameters(*p, "parameters", request->mutable_parameters());
        !s.ok()) {
      return s;
    }
  }
  const pb::Value* inputs = Field(object, "inputs");
  if (inputs == nullptr || inputs->kind_case() != pb::Value::kListValue) {
    return Invalid("inputs", "give a list of input tensors");
  }
  for (int i = 0; i < inputs->list_value().values_size(); ++i) {
    if (absl::Status s = DecodeInput(inputs->list_value().values(i), i,
                                     request->add_inputs());
        !s.ok()) {
      return s;
    }
  }
  if (const pb::Value* outputs = Field(object, "outputs")) {
    if (outputs->kind_case() != pb::Value::kListValue) {
      return Invalid("outputs", "give a list of {\"name\": ...}");
    }
    for (int i = 0; i < outputs->list_value().values_size(); ++i) {
      const pb::Value& o = outputs->list_value().values(i);
      const std::string where = absl::StrCat("outputs[", i, "].");
      if (o.kind_case() != pb::Value::kStructValue) {
        return Invalid(where, "must be an object");
      }
      auto* asked = request->add_outputs();
      if (absl::Status s =
              OnlyKeys(o.struct_value(), where, {"name", "parameters"});
          !s.ok()) {
        return s;
      }
      if (absl::Status s = StringField(o.struct_value(), "name", where,
                                       asked->mutable_name());
          !s.ok()) {
        return s;
      }
      if (const pb::Value* p = Field(o.struct_value(), "parameters")) {
        if (absl::Status s = Parameters(*p, absl::StrCat(where, "parameters"),
                                        asked->mutable_parameters());
            !s.ok()) {
          return s;
        }
      }
    }
  }
  return absl::OkStatus();
}

// JSON text, written in a fixed key order (a Struct's map would print in
// hash order); scalars printed by protobuf's JSON printer, so strings are
// escaped and doubles round-trip.
std::string Scalar(const pb::Value& value) {
  std::string json;
  (void)pb::util::MessageToJsonString(value, &json);
  return json;
}

std::string Text(const std::string& s) {
  pb::Value v;
  v.set_string_value(s);
  return Scalar(v);
}

std::string Number(double d) {
  pb::Value v;
  v.set_number_value(d);
  return Scalar(v);
}

std::string List(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", items[i]);
  }
  return out + "]";
}

// {"k1":v1,...} of (key, JSON text) pairs, in order.
std::string Object(
    const std::vector<std::pair<const char*, std::string>>& fields) {
  std::string out = "{";
  for (size_t i = 0; i < fields.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", "\"", fields[i].first,
                    "\":", fields[i].second);
  }
  return out + "}";
}

std::string Shape(const pb::RepeatedField<int64_t>& shape) {
  std::vector<std::string> dims;
  for (int64_t s : shape) dims.push_back(absl::StrCat(s));
  return List(dims);
}

std::string TensorMetadataList(
    const pb::RepeatedPtrField<oip::ModelMetadataResponse::TensorMetadata>&
        tensors) {
  std::vector<std::string> items;
  for (const auto& t : tensors) {
    items.push_back(Object({{"name", Text(t.name())},
                            {"datatype", Text(t.datatype())},
                            {"shape", Shape(t.shape())}}));
  }
  return List(items);
}

std::string Data(const oip::InferTensorContents& c) {
  std::vector<std::string> items;
  for (int32_t x : c.int_contents()) items.push_back(absl::StrCat(x));
  for (int64_t x : c.int64_contents()) items.push_back(absl::StrCat(x));
  for (double x : c.fp64_contents()) items.push_back(Number(x));
  for (float x : c.fp32_contents()) items.push_back(Number(x));
  for (const std::string& x : c.bytes_contents()) items.push_back(Text(x));
  for (bool x : c.bool_contents()) items.push_back(x ? "true" : "false");
  return List(items);
}

}  // namespace

bool IsRestPath(absl::string_view path) {
  return path == "/v2" || absl::StartsWith(path, "/v2/");
}

absl::StatusOr<RestCall> DecodeRestRequest(absl::string_view method,
                                           absl::string_view path,
                                           absl::string_view body) {
  std::vector<std::string> segments;
  for (absl::string_view raw : absl::StrSplit(path.substr(1), '/')) {
    absl::StatusOr<std::string> s = PercentDecode(raw, false);
    if (!s.ok()) return s.status();
    segments.push_back(*std::move(s));
  }
  RestCall call;
  std::string want = "GET";
  const size_t n = segments.size();
  if (n == 1) {
    call.rpc = "ServerMetadata";
    call.request = std::make_unique<oip::ServerMetadataRequest>();
  } else if (n == 3 && segments[1] == "health" && segments[2] == "live") {
    call.rpc = "ServerLive";
    call.request = std::make_unique<oip::ServerLiveRequest>();
    call.status_by_answer = true;
  } else if (n == 3 && segments[1] == "health" && segments[2] == "ready") {
    call.rpc = "ServerReady";
    call.request = std::make_unique<oip::ServerReadyRequest>();
    call.status_by_answer = true;
  } else if (n >= 3 && segments[1] == "models" && !segments[2].empty()) {
    const std::string& name = segments[2];
    size_t next = 3;
    std::string version;
    if (n >= 5 && segments[3] == "versions") {
      version = segments[4];
      next = 5;
    }
    const std::string action = n == next + 1 ? segments[next] : "";
    if (n > next + 1 ||
        (n == next + 1 && action != "ready" && action != "infer")) {
      return absl::NotFoundError(
          absl::StrCat("no route for ", method, " ", path.substr(0, 256)));
    }
    if (action.empty()) {
      auto request = std::make_unique<oip::ModelMetadataRequest>();
      request->set_name(name);
      request->set_version(version);
      call.rpc = "ModelMetadata";
      call.request = std::move(request);
    } else if (action == "ready") {
      auto request = std::make_unique<oip::ModelReadyRequest>();
      request->set_name(name);
      request->set_version(version);
      call.rpc = "ModelReady";
      call.request = std::move(request);
      call.status_by_answer = true;
    } else {
      want = "POST";
      auto request = std::make_unique<oip::ModelInferRequest>();
      if (method == want) {
        if (absl::Status s = DecodeInfer(body, request.get()); !s.ok()) {
          return s;
        }
      }
      request->set_model_name(name);
      request->set_model_version(version);
      call.rpc = "ModelInfer";
      call.request = std::move(request);
    }
  } else {
    return absl::NotFoundError(
        absl::StrCat("no route for ", method, " ", path.substr(0, 256)));
  }
  if (method != want) {
    return absl::UnimplementedError(
        absl::StrCat("method ", method, " is not allowed on ",
                     path.substr(0, 256), "; it takes ", want));
  }
  return call;
}

std::string EncodeRestResponse(const pb::Message& response, bool* ok) {
  *ok = true;
  auto flag = [ok](const char* key, bool value) {
    *ok = value;
    return Object({{key, value ? "true" : "false"}});
  };
  if (auto* live = dynamic_cast<const oip::ServerLiveResponse*>(&response)) {
    return flag("live", live->live());
  }
  if (auto* ready = dynamic_cast<const oip::ServerReadyResponse*>(&response)) {
    return flag("ready", ready->ready());
  }
  if (auto* model_ready =
          dynamic_cast<const oip::ModelReadyResponse*>(&response)) {
    return flag("ready", model_ready->ready());
  }
  if (auto* server =
          dynamic_cast<const oip::ServerMetadataResponse*>(&response)) {
    std::vector<std::string> extensions;
    for (const std::string& e : server->extensions()) {
      extensions.push_back(Text(e));
    }
    return Object({{"name", Text(server->name())},
                   {"version", Text(server->version())},
                   {"extensions", List(extensions)}});
  }
  if (auto* model =
          dynamic_cast<const oip::ModelMetadataResponse*>(&response)) {
    return Object({{"name", Text(model->name())},
                   {"platform", Text(model->platform())},
                   {"inputs", TensorMetadataList(model->inputs())},
                   {"outputs", TensorMetadataList(model->outputs())}});
  }
  const auto& infer = dynamic_cast<const oip::ModelInferResponse&>(response);
  std::vector<std::string> outputs;
  for (const auto& t : infer.outputs()) {
    outputs.push_back(Object({{"name", Text(t.name())},
                              {"datatype", Text(t.datatype())},
                              {"shape", Shape(t.shape())},
                              {"data", Data(t.contents())}}));
  }
  std::vector<std::pair<const char*, std::string>> fields = {
      {"model_name", Text(infer.model_name())}};
  if (!infer.id().empty()) fields.emplace_back("id", Text(infer.id()));
  fields.emplace_back("outputs", List(outputs));
  return Object(fields);
}

std::string RestError(absl::string_view message) {
  return Object({{"error", Text(std::string(message))}});
}

}  // namespace halfspace
