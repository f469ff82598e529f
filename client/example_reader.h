// Labeled examples read from a file or standard input a buffer at a time,
// in constant memory, straight into TrainRequest messages.
//
// Formats, one example per line; blank lines and lines starting with '#'
// are skipped:
//   csv     label,x1,x2,...,xd                 dense features
//   libsvm  label index:value index:value ...  sparse (LibSVM/SVMlight);
//                                              indices from 1, increasing;
//                                              a trailing "# comment" is
//                                              ignored
//   vw      label [weight] ['tag]|ns[:scale] name[:value] ... |ns2 ...
//                                              named features (Vowpal
//                                              Wabbit's text format): each
//                                              namespace their group,
//                                              values 1 unless given
// A CSV file's first line is skipped when none of its fields is a number
// (a header such as "label,x1,x2").
// A binary model's label is -1 or +1 (an integer); a multiclass model's is
// the class's name.

#ifndef HALFSPACE_CLIENT_EXAMPLE_READER_H_
#define HALFSPACE_CLIENT_EXAMPLE_READER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

// kAuto: the format the first example line looks like (vw with a '|',
// libsvm when its second field is index:value, else csv).
enum class ExampleFormat { kCsv, kLibsvm, kVw, kAuto };

// The format `name` names ("csv", "libsvm" or "svmlight", "vw"), or, for
// "auto", the one `path`'s extension suggests (.svm, .libsvm, .svmlight:
// libsvm; .vw: vw; .csv: csv; else, standard input too, kAuto).
absl::StatusOr<ExampleFormat> ParseExampleFormat(absl::string_view name,
                                                 absl::string_view path);

class ExampleReader {
 public:
  // Reads `path` ("-": standard input). NOT_FOUND if it cannot be opened.
  static absl::StatusOr<std::unique_ptr<ExampleReader>> Open(
      const std::string& path, ExampleFormat format, bool multiclass);

  ExampleReader(const ExampleReader&) = delete;
  ExampleReader& operator=(const ExampleReader&) = delete;
  ~ExampleReader();

  // Appends up to `max` examples to `out` (whose cleared elements are
  // reused) and returns how many: 0 at the end of the input. With
  // `flush_after`, returns early once it has an example and no more input
  // came for that long (a pipe from a producer that writes as events
  // happen). INVALID_ARGUMENT naming the file and line of a line that does
  // not parse; the examples before it were appended.
  absl::StatusOr<size_t> Read(
      size_t max, google::protobuf::RepeatedPtrField<v1::Example>& out,
      absl::Duration flush_after = absl::ZeroDuration());

  // Lines read so far.
  int64_t line_number() const { return line_number_; }

  // The features of one instance to predict: a line in `format` (kAuto: the
  // format it looks like) without its label, e.g. "0.5,2", "3:0.5 7:1" or
  // "|words hello world". INVALID_ARGUMENT saying why it does not parse.
  static absl::StatusOr<v1::FeatureVector> ParseInstance(absl::string_view line,
                                                         ExampleFormat format);

 private:
  ExampleReader(std::string path, std::FILE* file, ExampleFormat format,
                bool multiclass);

  enum class Next { kLine, kEnd, kIdle };
  // The next line without its end (kLine), or kEnd at the end of the
  // input, or kIdle when no more input came for `wait`. The view is valid
  // until the next call.
  Next NextLine(absl::string_view& line, absl::Duration wait);
  absl::Status ParseCsv(absl::string_view line, v1::Example& out) const;
  absl::Status ParseLibsvm(absl::string_view line, v1::Example& out) const;
  absl::Status ParseVw(absl::string_view line, v1::Example& out) const;
  absl::Status ParseLabel(absl::string_view label, v1::Example& out) const;

  const std::string path_;
  std::FILE* const file_;
  const int fd_;          // file_'s, read with read(2)
  ExampleFormat format_;  // kAuto until the first example line
  const bool multiclass_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;  // the unread bytes of buffer_
  bool eof_ = false;
  bool read_error_ = false;
  int64_t line_number_ = 0;
  bool seen_example_ = false;  // a line other than blanks and comments
};

}  // namespace halfspace

#endif  // HALFSPACE_CLIENT_EXAMPLE_READER_H_
