// Labeled examples read from a file or standard input a buffer at a time,
// in constant memory, straight into TrainRequest messages.
//
// Formats (example_text.h): csv, libsvm, vw, one example per line; blank
// lines and lines starting with '#' are skipped, and so is a CSV file's
// first line when none of its fields is a number (a header such as
// "label,x1,x2").

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
#include "client/example_text.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {

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

 private:
  ExampleReader(std::string path, std::FILE* file, ExampleFormat format,
                bool multiclass);

  enum class Next { kLine, kEnd, kIdle };
  // The next line without its end (kLine), or kEnd at the end of the
  // input, or kIdle when no more input came for `wait`. The view is valid
  // until the next call.
  Next NextLine(absl::string_view& line, absl::Duration wait);

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
