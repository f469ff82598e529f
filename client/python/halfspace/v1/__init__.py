"""halfspace.v1's messages (halfspace_pb2) and service stub
(halfspace_pb2_grpc), generated from proto/halfspace/v1/halfspace.proto."""
