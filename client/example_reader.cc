#include "client/example_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace halfspace {
namespace {

constexpr size_t kBufferBytes = size_t{1} << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<ExampleReader>> ExampleReader::Open(
    const std::string& path, ExampleFormat format, bool multiclass) {
  std::FILE* file = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  return std::unique_ptr<ExampleReader>(new ExampleReader(
      path == "-" ? "stdin" : path, file, format, multiclass));
}

ExampleReader::ExampleReader(std::string path, std::FILE* file,
                             ExampleFormat format, bool multiclass)
    : path_(std::move(path)),
      file_(file),
      fd_(file != nullptr ? ::fileno(file) : -1),
      format_(format),
      multiclass_(multiclass),
      buffer_(kBufferBytes) {}

ExampleReader::~ExampleReader() {
  if (file_ != nullptr && file_ != stdin) std::fclose(file_);
}

ExampleReader::Next ExampleReader::NextLine(absl::string_view& line,
                                            absl::Duration wait) {
  for (;;) {
    const char* first = buffer_.data() + begin_;
    const void* newline = std::memchr(first, '\n', end_ - begin_);
    if (newline != nullptr) {
      const char* last = static_cast<const char*>(newline);
      line = absl::string_view(first, last - first);
      begin_ = last - buffer_.data() + 1;
      ++line_number_;
      return Next::kLine;
    }
    if (eof_) {
      if (begin_ == end_) return Next::kEnd;
      line = absl::string_view(first, end_ - begin_);  // no newline at the end
      begin_ = end_;
      ++line_number_;
      return Next::kLine;
    }
    // Keep the partial line, and make room for more (a longer line than
    // the buffer grows it).
    std::memmove(buffer_.data(), first, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    if (wait != absl::InfiniteDuration()) {
      pollfd ready{fd_, POLLIN, 0};
      const int ms = static_cast<int>(absl::ToInt64Milliseconds(wait));
      int polled;
      do {
        polled = ::poll(&ready, 1, ms);
      } while (polled < 0 && errno == EINTR);
      if (polled == 0) return Next::kIdle;
    }
    // read(2), not fread: a pipe's bytes count as soon as they come.
    ssize_t got;
    do {
      got = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    } while (got < 0 && errno == EINTR);
    if (got < 0) read_error_ = true;
    if (got <= 0) {
      eof_ = true;
    } else {
      end_ += got;
    }
  }
}

absl::StatusOr<size_t> ExampleReader::Read(
    size_t max, google::protobuf::RepeatedPtrField<v1::Example>& out,
    absl::Duration flush_after) {
  size_t read = 0;
  absl::string_view line;
  while (read < max &&
         NextLine(line, read > 0 && flush_after > absl::ZeroDuration()
                            ? flush_after
                            : absl::InfiniteDuration()) == Next::kLine) {
    line = TrimLine(line);
    if (IsSkippedLine(line)) continue;
    if (format_ == ExampleFormat::kAuto) format_ = LooksLike(line);
    v1::Example* example = out.Add();
    const absl::Status parsed =
        ParseExampleLine(line, format_, multiclass_, *example);
    const bool first = !seen_example_;
    seen_example_ = true;
    if (!parsed.ok()) {
      out.RemoveLast();
      if (first && format_ == ExampleFormat::kCsv && IsCsvHeader(line)) {
        continue;
      }
      const ExampleFormat looks = LooksLike(line);
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ":", line_number_, ": ", parsed.message(),
          looks == format_
              ? ""
              : absl::StrCat(" (the line looks like ", FormatName(looks),
                             ": use --format=", FormatName(looks), ")")));
    }
    ++read;
  }
  if (read_error_) {
    return absl::DataLossError(absl::StrCat("cannot read ", path_));
  }
  return read;
}

}  // namespace halfspace
