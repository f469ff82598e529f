#include "server/producer_message.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/example_text.h"
#include "core/base/quoted.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {
namespace {

absl::StatusOr<ProducerBatch> DecodeTrainRequest(absl::string_view data) {
  v1::TrainRequest request;
  if (!request.ParseFromArray(data.data(), data.size())) {
    return absl::InvalidArgumentError(
        "the message is not a TrainRequest in protobuf");
  }
  if (!request.source().empty() && request.sequence() == 0) {
    return absl::InvalidArgumentError(
        "a TrainRequest with a source needs a sequence from 1");
  }
  ProducerBatch batch;
  batch.source = request.source();
  batch.first_sequence = request.source().empty() ? 0 : request.sequence();
  batch.request = std::string(data);
  return batch;
}

// The examples of `data`'s lines, each line that does not parse left out
// and reported (the first kReportedLines by number, the rest counted).
ProducerBatch DecodeLines(ExampleFormat format, absl::string_view data,
                          bool multiclass) {
  v1::TrainRequest request;
  ProducerBatch batch;
  int64_t number = 0, bad = 0;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(data, '\n')) {
    ++number;
    line = TrimLine(line);
    if (IsSkippedLine(line)) continue;
    v1::Example* example = request.add_examples();
    const absl::Status parsed =
        ParseExampleLine(line, format, multiclass, *example);
    const bool header = first && format == ExampleFormat::kCsv;
    first = false;
    if (parsed.ok()) continue;
    request.mutable_examples()->RemoveLast();
    if (header && IsCsvHeader(line)) continue;
    if (++bad <= kReportedLines) {
      batch.left_out.push_back(absl::InvalidArgumentError(
          absl::StrCat(FormatName(format), " line ", number,
                       " left out: ", parsed.message())));
    }
  }
  if (bad > kReportedLines) {
    batch.left_out.push_back(absl::InvalidArgumentError(
        absl::StrCat(bad - kReportedLines, " more ", FormatName(format),
                     " lines left out")));
  }
  batch.request = request.SerializeAsString();
  return batch;
}

}  // namespace

absl::StatusOr<ProducerBatch> DecodeProducerMessage(absl::string_view format,
                                                    absl::string_view data,
                                                    bool multiclass) {
  if (format.empty() || format == "protobuf") return DecodeTrainRequest(data);
  if (format == "csv" || format == "libsvm" || format == "svmlight" ||
      format == "vw") {
    return DecodeLines(*ParseExampleFormat(format, ""), data, multiclass);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "a message of format ", Quoted(format),
      "; set the header Halfspace-Format to protobuf (a TrainRequest), csv, "
      "libsvm or vw"));
}

}  // namespace halfspace
