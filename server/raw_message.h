// Messages of the streaming RPCs, decoded and encoded by the server itself.
//
// The Train and Evaluate streams take raw bytes (gRPC's "raw" callback
// methods) so that a message that does not decode is told apart from the end
// of the stream: with generated message types, gRPC reports both as a read
// that failed, and a stream of good, undecodable, good messages would end OK
// with one message silently skipped. Here it ends with INVALID_ARGUMENT.

#ifndef HALFSPACE_SERVER_RAW_MESSAGE_H_
#define HALFSPACE_SERVER_RAW_MESSAGE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/message.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/proto_buffer_writer.h"

namespace halfspace {

inline absl::Status UndecodableError(const google::protobuf::Message& message) {
  return absl::InvalidArgumentError(absl::StrCat(
      "a message could not be decoded as ",
      message.GetDescriptor()->full_name(),
      ": check that the client was built from this server's proto"));
}

// Decodes `bytes` into `message` (cleared first) and empties `bytes`;
// INVALID_ARGUMENT when they are not a `message` in the wire format.
inline absl::Status DecodeMessage(grpc::ByteBuffer& bytes,
                                  google::protobuf::Message& message) {
  message.Clear();
  bool decoded = false;
  {
    grpc::ProtoBufferReader reader(&bytes);
    decoded = message.ParseFromZeroCopyStream(&reader);
  }
  bytes.Clear();
  return decoded ? absl::OkStatus() : UndecodableError(message);
}

// As above, keeping the bytes as received in `raw` (its capacity reused).
inline absl::Status DecodeMessage(grpc::ByteBuffer& bytes, std::string& raw,
                                  google::protobuf::Message& message) {
  raw.clear();
  std::vector<grpc::Slice> slices;
  if (bytes.Dump(&slices).ok()) {
    for (const grpc::Slice& slice : slices) {
      raw.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
  }
  bytes.Clear();
  message.Clear();
  return message.ParseFromString(raw) ? absl::OkStatus()
                                      : UndecodableError(message);
}

// Encodes `message` into `bytes`, replacing what they held.
inline void EncodeMessage(const google::protobuf::Message& message,
                          grpc::ByteBuffer& bytes) {
  bytes.Clear();
  bool own_buffer = false;
  grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(
      message, &bytes, &own_buffer);
}

}  // namespace halfspace

#endif  // HALFSPACE_SERVER_RAW_MESSAGE_H_
