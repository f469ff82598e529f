// Creates a perceptron on the server at argv[1], trains it on three
// examples and predicts two points, through the installed client library.

#include <cstdio>

#include "client/halfspace_client.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer TARGET\n");
    return 2;
  }
  halfspace::Client client = halfspace::Client::Connect(argv[1]);
  halfspace::v1::Algorithm algorithm;
  algorithm.mutable_perceptron();
  if (auto model = client.CreateModel("installed", algorithm, 2); !model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  auto stream = client.Train("installed");
  if (absl::Status s = stream->Send({{{1, 2}, 1}, {{2, 1}, -1}, {{0, 0}, -1}});
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  absl::StatusOr<halfspace::v1::TrainResponse> response = stream->Receive();
  if (!response.ok() || !stream->Finish().ok()) return 1;
  for (const halfspace::v1::ExampleResult& r : response->results()) {
    std::printf("score=%g updated=%d\n", r.score(), r.updated());
  }
  auto predictions = client.Predict("installed", {{1, 2}, {3, 0}});
  if (!predictions.ok()) return 1;
  for (const halfspace::v1::Prediction& p : *predictions) {
    std::printf("label=%+d score=%g\n", p.label(), p.score());
  }
  return 0;
}
