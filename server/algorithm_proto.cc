#include "server/algorithm_proto.h"

#include <string>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace halfspace {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The message's field named `name`; an algorithm's parameter without one is
// a defect, which the API's tests look for.
absl::StatusOr<const FieldDescriptor*> FieldNamed(const Message& message,
                                                  absl::string_view name) {
  const FieldDescriptor* field =
      message.GetDescriptor()->FindFieldByName(std::string(name));
  if (field != nullptr) return field;
  return absl::InternalError(absl::StrCat(message.GetTypeName(),
                                          " has no field ", name,
                                          ", a parameter of the algorithm"));
}

// Sets `value` from the field, unless it is unset (or an enum's zero).
template <typename Value>
absl::Status Read(const Message& m, const FieldDescriptor& f,
                  absl::string_view algorithm, Value& value) {
  const auto& r = *m.GetReflection();
  if constexpr (std::is_enum_v<Value>) {
    const int number = r.GetEnumValue(m, &f);
    if (number == 0) return absl::OkStatus();
    if (f.enum_type()->FindValueByNumber(number) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          algorithm, ".", f.name(), " has the unknown value ", number));
    }
    // The API's enums number their values as core's do.
    value = static_cast<Value>(number);
    return absl::OkStatus();
  } else {
    if (!r.HasField(m, &f)) return absl::OkStatus();
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        value = static_cast<Value>(r.GetDouble(m, &f));
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_BOOL:
        value = static_cast<Value>(r.GetBool(m, &f));
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_UINT32:
        value = static_cast<Value>(r.GetUInt32(m, &f));
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_UINT64:
        value = static_cast<Value>(r.GetUInt64(m, &f));
        return absl::OkStatus();
      default:
        return absl::InternalError(absl::StrCat(
            f.full_name(), " is not a double, bool or unsigned integer"));
    }
  }
}

template <typename Value>
void Write(Value value, const FieldDescriptor& f, Message& m) {
  const auto& r = *m.GetReflection();
  if constexpr (std::is_enum_v<Value>) {
    r.SetEnumValue(&m, &f, static_cast<int>(value));
  } else {
    switch (f.cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        r.SetDouble(&m, &f, static_cast<double>(value));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r.SetBool(&m, &f, static_cast<bool>(value));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        r.SetUInt32(&m, &f, static_cast<uint32_t>(value));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        r.SetUInt64(&m, &f, static_cast<uint64_t>(value));
        break;
      default:
        break;
    }
  }
}

}  // namespace

absl::StatusOr<AlgorithmParams> FromProto(const v1::Algorithm& algorithm) {
  const FieldDescriptor* chosen =
      algorithm.GetReflection()->GetOneofFieldDescriptor(
          algorithm, v1::Algorithm::descriptor()->oneof_decl(0));
  if (chosen == nullptr) {
    return absl::InvalidArgumentError(
        "algorithm must be set to one algorithm, e.g. algorithm { perceptron "
        "{} }");
  }
  std::optional<AlgorithmParams> params = AlgorithmNamed(chosen->name());
  if (!params.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "algorithm ", chosen->name(), " is not one this server has"));
  }
  const Message& message =
      algorithm.GetReflection()->GetMessage(algorithm, chosen);
  absl::Status status;
  std::visit(
      [&](auto& p) {
        ForEachParameter(p, [&](auto& value, const auto& parameter) {
          if (!status.ok()) return;
          absl::StatusOr<const FieldDescriptor*> field =
              FieldNamed(message, parameter.name);
          status = field.ok() ? Read(message, **field, p.kName, value)
                              : field.status();
        });
      },
      *params);
  if (!status.ok()) return status;
  return *std::move(params);
}

void ToProto(const AlgorithmParams& params, v1::Algorithm* out) {
  const FieldDescriptor* chosen = v1::Algorithm::descriptor()->FindFieldByName(
      std::string(AlgorithmName(params)));
  if (chosen == nullptr) return;
  Message& message = *out->GetReflection()->MutableMessage(out, chosen);
  std::visit(
      [&](const auto& p) {
        ForEachParameter(p, [&](const auto& value, const auto& parameter) {
          absl::StatusOr<const FieldDescriptor*> field =
              FieldNamed(message, parameter.name);
          if (field.ok()) Write(value, **field, message);
        });
      },
      params);
}

}  // namespace halfspace
