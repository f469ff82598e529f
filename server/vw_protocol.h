// Vowpal Wabbit's daemon protocol, line by line (`vw --daemon`): a client
// writes examples in VW's text format, one a line,
//   [label [weight]] ['tag]|namespace feature[:value] ... |ns2 ...
// and reads one answer line per example, in order: the prediction made
// before the example was learned, as VW prints it, then the tag if the
// line had one ("0.731059 id7"). A line without a label is only predicted.
//
// What a line asks, and how its answer reads, as plain functions of their
// arguments; the listener that speaks the protocol is vw_listener.h.

#ifndef HALFSPACE_SERVER_VW_PROTOCOL_H_
#define HALFSPACE_SERVER_VW_PROTOCOL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace halfspace {

// What an answer line gives for a binary model: its score f(x) (VW's raw
// prediction), its label (-1 or +1, as with VW's --binary), or
// P(y = +1 | x) (as with --link logistic; probabilistic models only). A
// multiclass model's answer is always its predicted class (as VW's --oaa
// prints the class).
enum class VwAnswer { kScore, kLabel, kProbability };

// "score", "label" or "probability"; INVALID_ARGUMENT otherwise.
absl::StatusOr<VwAnswer> ParseVwAnswer(absl::string_view name);

// The parts of a trimmed, non-empty line the protocol reads before the
// features: whether it has a label, and its tag (without the quote).
struct VwLineHead {
  bool labeled = false;
  absl::string_view tag;  // empty if none
};

// The head of `line`: the blank-separated tokens before its first '|', the
// last of them the tag when it starts with a quote. INVALID_ARGUMENT for a
// line without '|'.
absl::StatusOr<VwLineHead> ReadVwLineHead(absl::string_view line);

// Appends a prediction's answer line to `out`: `value` as VW prints a
// prediction (a float, six decimals unless it is a whole number), then
// " tag" when there is one, then '\n'.
void AppendVwAnswer(double value, absl::string_view tag, std::string& out);

// Appends a class's answer line: its name, then " tag" when there is one.
void AppendVwClassAnswer(absl::string_view class_name, absl::string_view tag,
                         std::string& out);

// Appends the answer to a line that was not predicted nor learned:
// "error: CODE: message" (its newlines made spaces), '\n'.
void AppendVwError(const absl::Status& status, std::string& out);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_VW_PROTOCOL_H_
