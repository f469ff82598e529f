// Every algorithm's parameters in the API (server/algorithm_proto.h): each
// algorithm is a field of halfspace.v1.Algorithm's oneof, each parameter a
// field of that message of a type that holds it, and every value, an enum's
// every value included, comes back as it was sent.

#include "server/algorithm_proto.h"

#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/model/model_spec.h"
#include "core/storage/parameter_keys.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"

namespace halfspace {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

std::vector<AlgorithmParams> EveryAlgorithm() {
  std::vector<AlgorithmParams> all;
  for (size_t i = 1; i <= std::variant_size_v<AlgorithmParams>; ++i) {
    all.push_back(DefaultParams(static_cast<Algorithm>(i)));
  }
  return all;
}

// The parameters as the model files store them, to compare two.
KeyedValues Keyed(const AlgorithmParams& params) {
  return KeyedParameters(DenseSpec(params, 1));
}

TEST(AlgorithmProtoTest, EachAlgorithmIsAFieldOfTheOneofAndNoMore) {
  const auto& oneof = *v1::Algorithm::descriptor()->oneof_decl(0);
  std::set<std::string> in_api;
  for (int i = 0; i < oneof.field_count(); ++i) {
    in_api.insert(oneof.field(i)->name());
  }
  std::set<std::string> in_core;
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    in_core.insert(std::string(AlgorithmName(params)));
  }
  EXPECT_EQ(in_api, in_core);
}

TEST(AlgorithmProtoTest, EachParameterIsAFieldThatHoldsIt) {
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    const std::string name(AlgorithmName(params));
    SCOPED_TRACE(name);
    const FieldDescriptor* algorithm =
        v1::Algorithm::descriptor()->FindFieldByName(name);
    ASSERT_NE(algorithm, nullptr);
    const Descriptor& message = *algorithm->message_type();
    int parameters = 0;
    std::visit(
        [&](const auto& p) {
          ForEachParameter(p, [&](const auto& value, const auto& parameter) {
            ++parameters;
            const FieldDescriptor* f =
                message.FindFieldByName(std::string(parameter.name));
            ASSERT_NE(f, nullptr) << parameter.name;
            using Value = std::decay_t<decltype(value)>;
            if constexpr (std::is_enum_v<Value>) {
              EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_ENUM);
            } else if constexpr (std::is_same_v<Value, bool>) {
              EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_BOOL);
            } else if constexpr (std::is_floating_point_v<Value>) {
              EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_DOUBLE);
            } else {
              EXPECT_TRUE(f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 ||
                          f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64)
                  << parameter.name;
            }
            // Unset must be told from set: optional, or an enum whose zero
            // is UNSPECIFIED.
            if (f->cpp_type() != FieldDescriptor::CPPTYPE_ENUM) {
              EXPECT_TRUE(f->has_presence()) << parameter.name;
            }
          });
        },
        params);
    EXPECT_EQ(parameters, message.field_count())
        << "a field of the API that no parameter reads";
  }
}

TEST(AlgorithmProtoTest, AnUnsetAlgorithmMessageGivesTheDefaults) {
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    const std::string name(AlgorithmName(params));
    SCOPED_TRACE(name);
    v1::Algorithm algorithm;
    algorithm.GetReflection()->MutableMessage(
        &algorithm, v1::Algorithm::descriptor()->FindFieldByName(name));
    absl::StatusOr<AlgorithmParams> read = FromProto(algorithm);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->index(), params.index());
    EXPECT_EQ(Keyed(*read), Keyed(params));
  }
  absl::StatusOr<AlgorithmParams> none = FromProto(v1::Algorithm());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
}

// Every enum value of every parameter: each the API names reaches core as
// a value core accepts, and comes back as itself; a number the API does not
// name is refused, naming the field.
TEST(AlgorithmProtoTest, EveryEnumValueComesBackAndAnUnknownOneIsRefused) {
  int enums = 0;
  for (const AlgorithmParams& params : EveryAlgorithm()) {
    const std::string name(AlgorithmName(params));
    const FieldDescriptor* field =
        v1::Algorithm::descriptor()->FindFieldByName(name);
    const Descriptor& message = *field->message_type();
    for (int i = 0; i < message.field_count(); ++i) {
      const FieldDescriptor& f = *message.field(i);
      if (f.cpp_type() != FieldDescriptor::CPPTYPE_ENUM) continue;
      ++enums;
      for (int v = 1; v < f.enum_type()->value_count(); ++v) {
        const int number = f.enum_type()->value(v)->number();
        SCOPED_TRACE(name + "." + f.name() + " = " + std::to_string(number));
        v1::Algorithm algorithm;
        auto* m = algorithm.GetReflection()->MutableMessage(&algorithm, field);
        m->GetReflection()->SetEnumValue(m, &f, number);
        if (name == "sgd" && f.name() == "schedule") {
          // The OPTIMAL schedule divides by alpha: keep it above 0.
          m->GetReflection()->SetDouble(
              m, m->GetDescriptor()->FindFieldByName("alpha"), 0.001);
        }
        absl::StatusOr<AlgorithmParams> read = FromProto(algorithm);
        ASSERT_TRUE(read.ok()) << read.status();
        absl::Status valid = ValidateModelSpec(DenseSpec(*read, 1));
        EXPECT_TRUE(valid.ok()) << valid;
        v1::Algorithm back;
        ToProto(*read, &back);
        const auto& b = back.GetReflection()->GetMessage(back, field);
        EXPECT_EQ(b.GetReflection()->GetEnumValue(b, &f), number);
      }
      v1::Algorithm unknown;
      auto* m = unknown.GetReflection()->MutableMessage(&unknown, field);
      m->GetReflection()->SetEnumValue(m, &f, 99);
      absl::StatusOr<AlgorithmParams> read = FromProto(unknown);
      EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_EQ(read.status().message(),
                name + "." + f.name() + " has the unknown value 99");
    }
  }
  EXPECT_EQ(enums, 5);  // PA's and CW's variants; SGD's loss, penalty, schedule
}

// Every parameter off its default goes out and comes back.
TEST(AlgorithmProtoTest, EveryParameterComesBackAsItWasSent) {
  for (AlgorithmParams params : EveryAlgorithm()) {
    SCOPED_TRACE(std::string(AlgorithmName(params)));
    std::visit(
        [](auto& p) {
          ForEachParameter(p, [](auto& value, const auto&) {
            using Value = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<Value, bool>) {
              value = !value;
            } else if constexpr (std::is_enum_v<Value>) {
              value = static_cast<Value>(static_cast<int>(value) == 1 ? 2 : 1);
            } else if constexpr (std::is_integral_v<Value>) {
              value = value + 5;
            } else {
              value = value * 0.25 + 0.5;
            }
          });
        },
        params);
    v1::Algorithm sent;
    ToProto(params, &sent);
    absl::StatusOr<AlgorithmParams> read = FromProto(sent);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(Keyed(*read), Keyed(params));
    EXPECT_NE(Keyed(*read), Keyed(DefaultParams(AlgorithmOf(params))));
  }
}

}  // namespace
}  // namespace halfspace
