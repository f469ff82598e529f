"""The standard messages halfspace.v1 uses and the gRPC services its server
also offers, generated from their protos: google.rpc.Status (status_pb2),
gRPC health checking (health_pb2) and reflection (reflection_pb2)."""
