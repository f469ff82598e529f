// Labeled examples as lines of text: the formats the CLI reads from files
// and producers publish to a replicated model's stream. One example per
// line:
//   csv     label,x1,x2,...,xd                 dense features
//   libsvm  label index:value index:value ...  sparse (LibSVM/SVMlight);
//                                              indices from 1; a trailing
//                                              "# comment" is ignored
//   vw      label [weight] ['tag]|ns[:scale] name[:value] ... |ns2 ...
//                                              named features (Vowpal
//                                              Wabbit's text format): each
//                                              namespace their group,
//                                              values 1 unless given,
//                                              hashed here (a HashedGroup
//                                              per namespace)
// A binary model's label is -1 or +1 (an integer); a multiclass model's is
// the class's name.
//
// Plain functions of their arguments, so every reader of a line (the CLI,
// every replica of a model) makes the same Example of it.

#ifndef HALFSPACE_CLIENT_EXAMPLE_TEXT_H_
#define HALFSPACE_CLIENT_EXAMPLE_TEXT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// kAuto: the format the first example line looks like (LooksLike).
enum class ExampleFormat { kCsv, kLibsvm, kVw, kAuto };

// The format `name` names ("csv", "libsvm" or "svmlight", "vw"), or, for
// "auto", the one `path`'s extension suggests (.svm, .libsvm, .svmlight:
// libsvm; .vw: vw; .csv: csv; else, standard input too, kAuto).
absl::StatusOr<ExampleFormat> ParseExampleFormat(absl::string_view name,
                                                 absl::string_view path);

// "csv", "libsvm" or "vw" (kAuto: "auto").
const char* FormatName(ExampleFormat format);

// The format a line looks like: vw with a '|', libsvm when its second
// field is index:value, else csv.
ExampleFormat LooksLike(absl::string_view line);

// `line` without the blanks (space, tab, carriage return) around it.
absl::string_view TrimLine(absl::string_view line);

// Whether a trimmed line holds no example: empty, or a '#' comment.
inline bool IsSkippedLine(absl::string_view line) {
  return line.empty() || line.front() == '#';
}

// Whether a CSV line is a header: it has two fields or more and none is a
// number ("label,x1,x2"). Readers skip one as the first line.
bool IsCsvHeader(absl::string_view line);

// Parses one trimmed example line in `format` (not kAuto) into `out`, the
// label as a class name for a `multiclass` model. INVALID_ARGUMENT saying
// why a line does not parse (a line that is not UTF-8 text among them);
// `out` is then partly filled.
absl::Status ParseExampleLine(absl::string_view line, ExampleFormat format,
                              bool multiclass, v1::Example& out);

// Adds a feature with hash `hash` (FeatureHash, core/features/feature_hash.h)
// and value `value` to `group`, which sends values only once one is not 1.
void AddHashedFeature(uint32_t hash, double value, v1::HashedGroup& group);

// The features of one instance to predict: a line in `format` (kAuto: the
// format it looks like) without its label, e.g. "0.5,2", "3:0.5 7:1" or
// "|words hello world". INVALID_ARGUMENT saying why it does not parse.
absl::StatusOr<v1::FeatureVector> ParseInstance(absl::string_view line,
                                                ExampleFormat format);

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_EXAMPLE_TEXT_H_
