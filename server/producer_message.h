// A producer's message on a replicated model's stream, decoded into the
// batch every replica learns. Producers publish with any NATS client; the
// message header Halfspace-Format says what the bytes are:
//   protobuf (or none)      a TrainRequest (its source and sequence tag
//                           the examples for exactly-once training)
//   csv, libsvm (svmlight), lines of labeled examples, one per line, in
//   vw                      the CLI's text formats (client/example_text.h);
//                           blank and '#' lines skipped, and a CSV header
//                           as the first line
// A text line that does not parse is left out, and reported, and the
// message's other lines are learned: one bad line never costs the others.
// Decoding depends only on the bytes, the format and the model's kind, so
// every replica makes the same batch of one message.

#ifndef HALFSPACE_SERVER_PRODUCER_MESSAGE_H_
#define HALFSPACE_SERVER_PRODUCER_MESSAGE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/replication/replica_set.h"

namespace halfspace {

// How many text lines that do not parse a message reports one by one; the
// rest are counted in one more report.
inline constexpr int kReportedLines = 10;

// The batch `data` holds in `format` (the header's value) for a model that
// is `multiclass` or not. INVALID_ARGUMENT for a format no producer
// publishes, bytes that are no TrainRequest, or a source without a
// sequence: nothing of the message is learned.
absl::StatusOr<ProducerBatch> DecodeProducerMessage(absl::string_view format,
                                                    absl::string_view data,
                                                    bool multiclass);

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_PRODUCER_MESSAGE_H_
