// Parity with scikit-learn: one pass over the same data in the same order, on
// the real server over gRPC, must reach the weights and intercept that
// scikit-learn's estimators reach, bit for bit (see Tolerance). tests/parity/
// sklearn_oracle.py runs scikit-learn and lists the configurations.

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

std::vector<double> ParseNumbers(absl::string_view text) {
  std::vector<double> values;
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    double v = 0;
    EXPECT_TRUE(absl::SimpleAtod(field, &v)) << field;
    values.push_back(v);
  }
  return values;
}

struct Expected {
  std::string name;
  v1::CreateModelRequest request;
  bool weighted = false;
  double intercept = 0;
  std::vector<double> coef;
  double accuracy = 0;
  double f1 = 0;        // of class +1
  double log_loss = 0;  // NaN without probabilities
};

class ParityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string command =
        absl::StrCat("/usr/bin/python3 ", HALFSPACE_SOURCE_DIR,
                     "/tests/parity/sklearn_oracle.py ", oracle_.path());
    ASSERT_EQ(std::system(command.c_str()), 0)
        << command << " failed; is python3-sklearn installed?";
    std::ifstream data(oracle_.File("data.csv"));
    for (std::string line; std::getline(data, line);) {
      std::vector<double> v = ParseNumbers(line);
      examples_.push_back({std::vector<double>(v.begin() + 2, v.end()),
                           static_cast<int>(v[0]), v[1]});
    }
    std::ifstream expected(oracle_.File("expected.tsv"));
    for (std::string line; std::getline(expected, line);) {
      std::vector<std::string> f = absl::StrSplit(line, '\t');
      ASSERT_EQ(f.size(), 8u) << line;
      Expected e;
      e.name = f[0];
      ASSERT_TRUE(
          google::protobuf::TextFormat::ParseFromString(f[1], &e.request))
          << f[1];
      e.weighted = f[2] == "1";
      e.intercept = ParseNumbers(f[3])[0];
      e.coef = ParseNumbers(f[4]);
      e.accuracy = ParseNumbers(f[5])[0];
      e.f1 = ParseNumbers(f[6])[0];
      e.log_loss = ParseNumbers(f[7])[0];
      expected_.push_back(std::move(e));
    }
  }

  TempDir oracle_;
  std::vector<LabeledExample> examples_;
  std::vector<Expected> expected_;
};

// How far a configuration's weights may be from scikit-learn's, relative to
// their scale: none at all where halfspace takes scikit-learn's steps in
// its floating-point order (the log loss's cutoffs at |z| = 18 and the
// averages of SGD and passive-aggressive included); a few units in the
// last place for averaged_perceptron, whose average (Daumé's) sums the same
// terms in another order, and for logistic_regression, whose step
// η·(t − σ(f)) is the classic form rather than SGD's gradient of the log
// loss.
double Tolerance(const std::string& name) {
  for (const char* rounded : {"logistic_regression", "averaged_perceptron",
                              "averaged_perceptron_no_intercept"}) {
    if (name == rounded) return 1e-13;
  }
  return 0.0;
}

TEST_F(ParityTest, OnePassMatchesScikitLearnBitForBit) {
  ASSERT_GE(expected_.size(), 31u);
  ASSERT_EQ(examples_.size(), 569u + 4);  // with four of all zeros
  TestServer server;
  Client client = server.NewClient();
  for (const Expected& e : expected_) {
    SCOPED_TRACE(e.name);
    v1::CreateModelRequest request = e.request;
    request.set_model(e.name);
    request.set_dimension(static_cast<int64_t>(e.coef.size()));
    absl::StatusOr<v1::Model> model = client.CreateModel(request);
    ASSERT_TRUE(model.ok()) << model.status();

    std::vector<LabeledExample> examples = examples_;
    if (!e.weighted) {
      for (LabeledExample& x : examples) x.weight = 1.0;
    }
    FitOptions one_pass;
    one_pass.max_passes = 1;
    one_pass.batch_size = 50;
    ASSERT_TRUE(client.Fit(e.name, examples, one_pass).ok());

    absl::StatusOr<v1::GetWeightsResponse> got = client.GetWeights(e.name);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->weights_size(), static_cast<int>(e.coef.size()));
    // Relative to the scale of the whole vector, so that weights scikit-learn
    // drives to exactly zero (L1) are held to the same bar.
    double scale = std::abs(e.intercept), error = 0;
    for (size_t j = 0; j < e.coef.size(); ++j) {
      scale = std::max(scale, std::abs(e.coef[j]));
      error = std::max(error, std::abs(got->weights(j) - e.coef[j]));
    }
    error = std::max(error, std::abs(got->bias() - e.intercept));
    EXPECT_LE(error, Tolerance(e.name) * scale)
        << "largest difference " << error << " at scale " << scale;

    // The trained model, evaluated on the same data, scores as
    // scikit-learn's metrics say.
    absl::StatusOr<v1::EvaluateResponse> evaluation =
        client.Evaluate(e.name, examples_);
    ASSERT_TRUE(evaluation.ok()) << evaluation.status();
    EXPECT_DOUBLE_EQ(evaluation->accuracy(), e.accuracy);
    EXPECT_DOUBLE_EQ(evaluation->classes(1).f1(), e.f1);
    if (std::isnan(e.log_loss)) {
      EXPECT_FALSE(evaluation->has_log_loss());
    } else {
      EXPECT_NEAR(evaluation->log_loss(), e.log_loss, 1e-9 * e.log_loss);
    }
  }
}

// One-vs-rest on iris, classes listed at creation as scikit-learn's
// partial_fit takes them: every class's weights and intercept, and the
// accuracy and log loss of the trained model.
TEST_F(ParityTest, OneVsRestMatchesScikitLearnOnIris) {
  std::vector<LabeledExample> iris;
  std::ifstream data(oracle_.File("iris.csv"));
  for (std::string line; std::getline(data, line);) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(',', 1));
    iris.push_back({ParseNumbers(f[1]), 0, 1.0, f[0]});
  }
  ASSERT_EQ(iris.size(), 150u);
  TestServer server;
  Client client = server.NewClient();
  std::ifstream expected(oracle_.File("multiclass.tsv"));
  int configurations = 0;
  for (std::string line; std::getline(expected, line); ++configurations) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    ASSERT_EQ(f.size(), 7u) << line;
    SCOPED_TRACE(f[0]);
    v1::CreateModelRequest request;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(f[1], &request));
    request.set_model(f[0]);
    request.set_dimension(4);
    ASSERT_TRUE(client.CreateModel(request).ok());
    FitOptions one_pass;
    one_pass.max_passes = 1;
    one_pass.batch_size = 32;
    ASSERT_TRUE(client.Fit(f[0], iris, one_pass).ok());

    const std::vector<std::string> classes = absl::StrSplit(f[2], ',');
    const std::vector<double> intercepts = ParseNumbers(f[3]);
    const std::vector<std::string> rows = absl::StrSplit(f[4], ';');
    absl::StatusOr<v1::GetWeightsResponse> got = client.GetWeights(f[0]);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->classes_size(), 3);
    for (int k = 0; k < 3; ++k) {
      const v1::ClassWeights& row = got->classes(k);
      EXPECT_EQ(row.label(), classes[k]);
      const std::vector<double> coef = ParseNumbers(rows[k]);
      double scale = std::abs(intercepts[k]);
      double error = std::abs(row.bias() - intercepts[k]);
      for (int j = 0; j < 4; ++j) {
        scale = std::max(scale, std::abs(coef[j]));
        error = std::max(error, std::abs(row.weights(j) - coef[j]));
      }
      EXPECT_LE(error, Tolerance(f[0]) * scale)
          << "class " << classes[k] << ": largest difference " << error
          << " at scale " << scale;
    }

    absl::StatusOr<v1::EvaluateResponse> evaluation =
        client.Evaluate(f[0], iris);
    ASSERT_TRUE(evaluation.ok()) << evaluation.status();
    EXPECT_DOUBLE_EQ(evaluation->accuracy(), ParseNumbers(f[5])[0]);
    const double log_loss = ParseNumbers(f[6])[0];
    if (std::isnan(log_loss)) {
      EXPECT_FALSE(evaluation->has_log_loss());
    } else {
      EXPECT_NEAR(evaluation->log_loss(), log_loss, 1e-9 * log_loss);
    }
  }
  EXPECT_EQ(configurations, 4);
}

}  // namespace
}  // namespace halfspace
