#include "server/vw_protocol.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/base/quoted.h"

namespace halfspace {

absl::StatusOr<VwAnswer> ParseVwAnswer(absl::string_view name) {
  if (name == "score") return VwAnswer::kScore;
  if (name == "label") return VwAnswer::kLabel;
  if (name == "probability") return VwAnswer::kProbability;
  return absl::InvalidArgumentError(absl::StrCat(
      "the answer is ", Quoted(name), "; use score, label or probability"));
}

absl::StatusOr<VwLineHead> ReadVwLineHead(absl::string_view line) {
  const size_t bar = line.find('|');
  if (bar == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "expected [label [weight]] ['tag]|namespace feature[:value] ...");
  }
  absl::string_view head = line.substr(0, bar);
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!head.empty() && blank(head.back())) head.remove_suffix(1);
  while (!head.empty() && blank(head.front())) head.remove_prefix(1);
  VwLineHead read;
  size_t last = head.size();
  while (last > 0 && !blank(head[last - 1])) --last;
  if (last < head.size() && head[last] == '\'') {
    read.tag = head.substr(last + 1);
    head = head.substr(0, last);
  }
  for (char c : head) {
    if (!blank(c)) {
      read.labeled = true;
      break;
    }
  }
  return read;
}

void AppendVwAnswer(double value, absl::string_view tag, std::string& out) {
  // As VW prints a prediction: a float, fixed with six decimals, or none
  // when it is a whole number.
  const float shown = static_cast<float>(value);
  char text[64];
  const int n = std::snprintf(text, sizeof text,
                              std::floor(shown) == shown ? "%.0f" : "%.6f",
                              static_cast<double>(shown));
  out.append(text, n > 0 && n < static_cast<int>(sizeof text) ? n : 0);
  if (!tag.empty()) absl::StrAppend(&out, " ", tag);
  out.push_back('\n');
}

void AppendVwClassAnswer(absl::string_view class_name, absl::string_view tag,
                         std::string& out) {
  out.append(class_name.data(), class_name.size());
  if (!tag.empty()) absl::StrAppend(&out, " ", tag);
  out.push_back('\n');
}

void AppendVwError(const absl::Status& status, std::string& out) {
  const size_t start = out.size();
  absl::StrAppend(&out, "error: ", absl::StatusCodeToString(status.code()),
                  ": ", status.message());
  for (size_t i = start; i < out.size(); ++i) {
    if (out[i] == '\n' || out[i] == '\r') out[i] = ' ';
  }
  out.push_back('\n');
}

}  // namespace halfspace
