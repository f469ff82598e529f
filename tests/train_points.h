// Trains a model over a real Train stream on synthetic points
// (drift_streams.h), keeping what each example's result said.

#ifndef HALFSPACE_TESTS_TRAIN_POINTS_H_
#define HALFSPACE_TESTS_TRAIN_POINTS_H_

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "client/halfspace_client.h"
#include "gtest/gtest.h"
#include "tests/drift_streams.h"
#include "tests/test_server.h"

namespace halfspace {

// Each example's result, for points [from, to) of `points` sent to `model`
// in requests of 100 on one stream.
inline std::vector<v1::ExampleResult> TrainPoints(
    Client& client, const std::string& model,
    const std::vector<LabeledPoint>& points, size_t from, size_t to) {
  std::vector<v1::ExampleResult> results;
  std::unique_ptr<TrainingStream> stream = client.Train(model);
  for (size_t i = from; i < to; i += 100) {
    v1::TrainRequest request;
    for (size_t j = i; j < std::min(to, i + 100); ++j) {
      AddExample(request, points[j].x, points[j].y);
    }
    EXPECT_TRUE(stream->Send(request).ok());
    absl::StatusOr<v1::TrainResponse> response = stream->Receive();
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) break;
    results.insert(results.end(), response->results().begin(),
                   response->results().end());
  }
  EXPECT_TRUE(stream->Finish().ok());
  return results;
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_TRAIN_POINTS_H_
