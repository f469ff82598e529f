#include "client/example_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/features/feature_hash.h"

namespace halfspace {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

absl::string_view Trim(absl::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Reads a plain decimal "[-+]digits[.digits]" at `p` into `value`, exactly,
// when it has at most 19 digits, at most 22 after the point, and they fit in
// 53 bits: then the digits as an integer and the power of ten are both exact
// doubles, and the one division rounds correctly (Clinger's fast path).
// Advances `p` past it; false (and `p` unmoved) for anything else.
bool ParsePlainDecimal(const char*& p, const char* end, double& value) {
  static constexpr double kPow10[] = {
      1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* q = p;
  const bool negative = q < end && *q == '-';
  if (q < end && (*q == '-' || *q == '+')) ++q;
  uint64_t digits = 0;
  int count = 0, fraction = 0;
  for (; q < end && IsDigit(*q) && count < 20; ++q, ++count) {
    digits = digits * 10 + (*q - '0');
  }
  if (q < end && *q == '.') {
    for (++q; q < end && IsDigit(*q) && count < 20; ++q, ++count, ++fraction) {
      digits = digits * 10 + (*q - '0');
    }
  }
  if (count == 0 || count > 19 || fraction > 22 ||
      digits > (uint64_t{1} << 53) ||
      (q < end && (*q == 'e' || *q == 'E' || *q == '.' || IsDigit(*q)))) {
    return false;
  }
  const double magnitude = static_cast<double>(digits) / kPow10[fraction];
  value = negative ? -magnitude : magnitude;
  p = q;
  return true;
}

// Parses all of `text` as a double: the fast exact paths (a plain decimal,
// std::from_chars), then absl's for what they leave (a leading '+', say).
bool ParseDouble(absl::string_view text, double& value) {
  const char* p = text.data();
  if (ParsePlainDecimal(p, text.data() + text.size(), value) &&
      p == text.data() + text.size()) {
    return true;
  }
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, value);
  if (r.ec == std::errc() && r.ptr == end) return true;
  return absl::SimpleAtod(text, &value);
}

std::string Shown(absl::string_view field) {
  return field.size() <= 40 ? std::string(field)
                            : absl::StrCat(field.substr(0, 40), "…");
}

// Splits VW's "name[:value]" at its last colon: `name`, and `value` (left
// as it is without a colon). False if what follows the colon is no number.
bool SplitValue(absl::string_view token, absl::string_view& name,
                double& value) {
  const size_t colon = token.rfind(':');
  name = token.substr(0, colon);
  return colon == absl::string_view::npos ||
         ParseDouble(token.substr(colon + 1), value);
}

absl::Status ParseLabel(absl::string_view label, bool multiclass,
                        v1::Example& out) {
  if (multiclass) {
    out.set_class_label(std::string(label));
    return absl::OkStatus();
  }
  double value = 0;
  if (!ParseDouble(label, value) || value != std::trunc(value) ||
      std::abs(value) > 1e9) {
    return absl::InvalidArgumentError(
        absl::StrCat("the label ", Shown(label),
                     " is not an integer; labels are -1 and +1"));
  }
  out.set_label(static_cast<int>(value));
  return absl::OkStatus();
}

absl::Status ParseCsv(absl::string_view line, bool multiclass,
                      v1::Example& out) {
  const size_t comma = line.find(',');
  if (comma == absl::string_view::npos) {
    return absl::InvalidArgumentError("expected label,x1,...,xd");
  }
  if (absl::Status s = ParseLabel(Trim(line.substr(0, comma)), multiclass, out);
      !s.ok()) {
    return s;
  }
  google::protobuf::RepeatedField<double>& dense =
      *out.mutable_features()->mutable_dense();
  absl::string_view rest = line.substr(comma + 1);
  for (;;) {
    // The common case in one scan: a plain decimal, then ',' or the end.
    const char* p = rest.data();
    const char* end = p + rest.size();
    while (p < end && IsBlank(*p)) ++p;
    double value = 0;
    if (ParsePlainDecimal(p, end, value)) {
      while (p < end && IsBlank(*p)) ++p;
      if (p == end) {
        dense.Add(value);
        return absl::OkStatus();
      }
      if (*p == ',') {
        dense.Add(value);
        rest.remove_prefix(p + 1 - rest.data());
        continue;
      }
    }
    const size_t next = rest.find(',');
    const absl::string_view field = Trim(rest.substr(0, next));
    if (!ParseDouble(field, value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", Shown(field), "' is not a number"));
    }
    dense.Add(value);
    if (next == absl::string_view::npos) return absl::OkStatus();
    rest.remove_prefix(next + 1);
  }
}

absl::Status ParseLibsvm(absl::string_view line, bool multiclass,
                         v1::Example& out) {
  if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
    line = Trim(line.substr(0, hash));
  }
  auto next_token = [&line]() {
    while (!line.empty() && IsBlank(line.front())) line.remove_prefix(1);
    size_t end = 0;
    while (end < line.size() && !IsBlank(line[end])) ++end;
    const absl::string_view token = line.substr(0, end);
    line.remove_prefix(end);
    return token;
  };
  if (absl::Status s = ParseLabel(next_token(), multiclass, out); !s.ok())
    return s;
  v1::SparseVector& sparse = *out.mutable_features()->mutable_sparse();
  for (absl::string_view token = next_token(); !token.empty();
       token = next_token()) {
    const size_t colon = token.find(':');
    uint64_t index = 0;
    double value = 0;
    // The index's end, only once there is a colon to end it.
    const char* index_end =
        colon == absl::string_view::npos ? nullptr : token.data() + colon;
    if (index_end == nullptr || colon == 0 ||
        std::from_chars(token.data(), index_end, index).ptr != index_end ||
        !ParseDouble(token.substr(colon + 1), value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", Shown(token), "' is not index:value (e.g. 3:0.5)"));
    }
    if (index == 0 || index > uint64_t{1} << 32) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feature index ", index, " is out of range; indices are 1 to 2^32"));
    }
    sparse.add_indices(static_cast<uint32_t>(index - 1));
    sparse.add_values(value);
  }
  return absl::OkStatus();
}

}  // namespace

void AddHashedFeature(uint32_t hash, double value, v1::HashedGroup& group) {
  group.add_hashes(hash);
  if (group.values_size() == 0) {
    if (value == 1.0) return;  // every value so far 1: none sent
    for (int k = 1; k < group.hashes_size(); ++k) group.add_values(1.0);
  }
  group.add_values(value);
}

namespace {

// The next token of a VW section, which spaces and tabs separate, taken off
// the front of `rest`; empty at its end.
absl::string_view NextVwToken(absl::string_view& rest) {
  size_t start = 0;
  while (start < rest.size() && (rest[start] == ' ' || rest[start] == '\t')) {
    ++start;
  }
  size_t end = start;
  while (end < rest.size() && rest[end] != ' ' && rest[end] != '\t') ++end;
  const absl::string_view token = rest.substr(start, end - start);
  rest.remove_prefix(end);
  return token;
}

absl::Status ParseVw(absl::string_view line, bool multiclass,
                     v1::Example& out) {
  const size_t bar = line.find('|');
  if (bar == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        "expected label [weight] |namespace feature[:value] ...");
  }
  // The header: the label, then an importance weight and a 'tag, if any.
  std::vector<absl::string_view> head =
      absl::StrSplit(line.substr(0, bar), ' ', absl::SkipWhitespace());
  if (!head.empty() && head.back().front() == '\'') head.pop_back();
  if (head.empty() || head.size() > 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", Shown(line.substr(0, bar)), "' is not label [weight] ['tag]"));
  }
  if (absl::Status s = ParseLabel(head[0], multiclass, out); !s.ok()) return s;
  if (head.size() == 2) {
    double weight = 0;
    if (!ParseDouble(head[1], weight)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the importance weight '", Shown(head[1]), "' is not a number"));
    }
    out.set_weight(weight);
  }
  // Each "|namespace[:scale] feature[:value] ..." section; the features go
  // in as a hashed group `namespace` (the names hashed here as the server
  // hashes named features, so the model learns the same), their values
  // only if one is not 1.
  for (absl::string_view section : absl::StrSplit(line.substr(bar + 1), '|')) {
    absl::string_view rest = section;
    absl::string_view token = NextVwToken(rest);
    absl::string_view group;
    double scale = 1.0;
    if (!section.empty() && !IsBlank(section.front()) && !token.empty()) {
      // "|ns feature": the section names its group
      if (!SplitValue(token, group, scale)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the namespace scale in '", Shown(token), "' is not a number"));
      }
      token = NextVwToken(rest);
    }
    if (token.empty()) continue;  // no features
    v1::HashedGroup& hashed = *out.mutable_features()->add_hashed();
    hashed.set_group(std::string(group));
    // At most a feature per blank, and one more: room for them at once.
    const int most =
        1 + static_cast<int>(std::count(rest.begin(), rest.end(), ' ') +
                             std::count(rest.begin(), rest.end(), '\t'));
    hashed.mutable_hashes()->Reserve(most);
    const uint32_t seed = GroupSeed(group);
    for (; !token.empty(); token = NextVwToken(rest)) {
      absl::string_view name;
      double value = 1.0;
      if (!SplitValue(token, name, value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", Shown(token), "' is not feature or feature:value"));
      }
      AddHashedFeature(FeatureHash(name, seed), value * scale, hashed);
    }
  }
  return absl::OkStatus();
}

// Whether `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), as protobuf requires of a string
// field: a class label or feature name that is not could not be sent, nor
// read back from a replica's record.
bool IsUtf8(absl::string_view text) {
  constexpr uint64_t kHighBits = 0x8080808080808080;
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    // ASCII eight bytes at a time: most lines are nothing else.
    uint64_t word;
    if (end - p >= 8 && (std::memcpy(&word, p, 8), word & kHighBits) == 0) {
      p += 8;
      continue;
    }
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;                                  // continuation bytes
    unsigned char low = 0x80, high = 0xbf;  // the second byte's range
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) low = 0xa0;   // overlong
      if (c == 0xed) high = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) low = 0x90;   // overlong
      if (c == 0xf4) high = 0x8f;  // past U+10FFFF
    } else {
      return false;
    }
    if (end - p <= n || p[1] < low || p[1] > high) return false;
    for (int k = 2; k <= n; ++k) {
      if (p[k] < 0x80 || p[k] > 0xbf) return false;
    }
    p += n + 1;
  }
  return true;
}

}  // namespace

absl::string_view TrimLine(absl::string_view line) { return Trim(line); }

bool IsCsvHeader(absl::string_view line) {
  if (line.find(',') == absl::string_view::npos) return false;
  double value = 0;
  for (absl::string_view field : absl::StrSplit(line, ',')) {
    if (ParseDouble(Trim(field), value)) return false;
  }
  return true;
}

ExampleFormat LooksLike(absl::string_view line) {
  if (line.find('|') != absl::string_view::npos) return ExampleFormat::kVw;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() >= 2 && fields[1].find(':') != absl::string_view::npos) {
    return ExampleFormat::kLibsvm;
  }
  return ExampleFormat::kCsv;
}

const char* FormatName(ExampleFormat format) {
  switch (format) {
    case ExampleFormat::kLibsvm:
      return "libsvm";
    case ExampleFormat::kVw:
      return "vw";
    case ExampleFormat::kAuto:
      return "auto";
    default:
      return "csv";
  }
}

absl::StatusOr<ExampleFormat> ParseExampleFormat(absl::string_view name,
                                                 absl::string_view path) {
  if (name == "csv") return ExampleFormat::kCsv;
  if (name == "libsvm" || name == "svmlight") return ExampleFormat::kLibsvm;
  if (name == "vw") return ExampleFormat::kVw;
  if (name == "auto") {
    for (absl::string_view ext : {".svm", ".libsvm", ".svmlight"}) {
      if (absl::EndsWithIgnoreCase(path, ext)) return ExampleFormat::kLibsvm;
    }
    if (absl::EndsWithIgnoreCase(path, ".vw")) return ExampleFormat::kVw;
    if (absl::EndsWithIgnoreCase(path, ".csv")) return ExampleFormat::kCsv;
    return ExampleFormat::kAuto;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the format is '", name, "'; use csv, libsvm (or svmlight), vw or auto"));
}

absl::Status ParseExampleLine(absl::string_view line, ExampleFormat format,
                              bool multiclass, v1::Example& out) {
  if (!IsUtf8(line)) {
    return absl::InvalidArgumentError("the line is not UTF-8 text");
  }
  switch (format) {
    case ExampleFormat::kLibsvm:
      return ParseLibsvm(line, multiclass, out);
    case ExampleFormat::kVw:
      return ParseVw(line, multiclass, out);
    default:
      return ParseCsv(line, multiclass, out);
  }
}

absl::StatusOr<v1::FeatureVector> ParseInstance(absl::string_view line,
                                                ExampleFormat format) {
  line = TrimLine(line);
  if (format == ExampleFormat::kAuto)
    format = LooksLike(absl::StrCat("1 ", line));
  // The parsers read labeled lines: give this one a label of +1.
  const std::string labeled =
      absl::StrCat(format == ExampleFormat::kCsv ? "1," : "1 ", line);
  v1::Example example;
  const absl::Status parsed = ParseExampleLine(labeled, format, false, example);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("instance '", line, "' (",
                                                   FormatName(format),
                                                   "): ", parsed.message()));
  }
  return std::move(*example.mutable_features());
}

}  // namespace halfspace
