// A producer's message decoded into the batch every replica learns: each
// format's lines, the lines left out, and the messages that hold no batch.

#include "server/producer_message.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/features/feature_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "halfspace/v1/halfspace.pb.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

v1::TrainRequest RequestOf(const ProducerBatch& batch) {
  v1::TrainRequest request;
  EXPECT_TRUE(request.ParseFromString(batch.request));
  return request;
}

TEST(ProducerMessageTest, CsvLinesSkipTheHeaderBlanksAndComments) {
  absl::StatusOr<ProducerBatch> batch = DecodeProducerMessage(
      "csv", "label,x1,x2\n1,0.5,-2\n\n# a comment\r\n -1 , 3,4 \r\n", false);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->left_out.empty());
  EXPECT_TRUE(batch->source.empty());
  const v1::TrainRequest request = RequestOf(*batch);
  ASSERT_EQ(request.examples_size(), 2);
  EXPECT_EQ(request.examples(0).label(), 1);
  EXPECT_THAT(request.examples(0).features().dense(), ElementsAre(0.5, -2));
  EXPECT_EQ(request.examples(1).label(), -1);
  EXPECT_THAT(request.examples(1).features().dense(), ElementsAre(3, 4));
}

TEST(ProducerMessageTest, LibsvmAndVwLinesMakeSparseAndNamedFeatures) {
  absl::StatusOr<ProducerBatch> sparse =
      DecodeProducerMessage("svmlight", "+1 1:0.5 3:-2 # c\n-1\t2:1", false);
  ASSERT_TRUE(sparse.ok());
  const v1::TrainRequest s = RequestOf(*sparse);
  ASSERT_EQ(s.examples_size(), 2);
  EXPECT_THAT(s.examples(0).features().sparse().indices(), ElementsAre(0, 2));
  EXPECT_THAT(s.examples(0).features().sparse().values(), ElementsAre(0.5, -2));

  absl::StatusOr<ProducerBatch> named =
      DecodeProducerMessage("vw", "cat 2 'id|animal:2 whiskers tail:0.5\n",
                            /*multiclass=*/true);
  ASSERT_TRUE(named.ok());
  const v1::TrainRequest n = RequestOf(*named);
  ASSERT_EQ(n.examples_size(), 1);
  EXPECT_EQ(n.examples(0).class_label(), "cat");
  EXPECT_EQ(n.examples(0).weight(), 2);
  ASSERT_EQ(n.examples(0).features().hashed_size(), 1);
  const v1::HashedGroup& animal = n.examples(0).features().hashed(0);
  EXPECT_EQ(animal.group(), "animal");
  EXPECT_THAT(animal.hashes(),
              ElementsAre(FeatureHash("whiskers", GroupSeed("animal")),
                          FeatureHash("tail", GroupSeed("animal"))));
  EXPECT_THAT(animal.values(), ElementsAre(2.0, 1.0));  // scale 2
}

TEST(ProducerMessageTest, AMulticlassModelReadsTheLabelAsAClass) {
  absl::StatusOr<ProducerBatch> batch =
      DecodeProducerMessage("csv", "-1,1\n7,2\n", /*multiclass=*/true);
  ASSERT_TRUE(batch.ok());
  const v1::TrainRequest request = RequestOf(*batch);
  ASSERT_EQ(request.examples_size(), 2);
  EXPECT_EQ(request.examples(0).class_label(), "-1");
  EXPECT_EQ(request.examples(1).class_label(), "7");
  // A binary model's label must be an integer.
  absl::StatusOr<ProducerBatch> binary =
      DecodeProducerMessage("csv", "cat,1\n", false);
  ASSERT_TRUE(binary.ok());
  EXPECT_EQ(RequestOf(*binary).examples_size(), 0);
  ASSERT_THAT(binary->left_out, SizeIs(1));
  EXPECT_THAT(binary->left_out[0].message(),
              HasSubstr("line 1 left out: the label cat is not an integer"));
}

TEST(ProducerMessageTest, LinesThatDoNotParseAreLeftOutAndReported) {
  std::string lines = "1,1,2\n";
  for (int i = 0; i < kReportedLines + 3; ++i) lines += "1,x\n";
  lines += "-1,3,4";
  absl::StatusOr<ProducerBatch> batch =
      DecodeProducerMessage("csv", lines, false);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(RequestOf(*batch).examples_size(), 2);  // the first and the last
  ASSERT_THAT(batch->left_out, SizeIs(kReportedLines + 1));
  EXPECT_THAT(batch->left_out[0].message(),
              HasSubstr("csv line 2 left out: 'x' is not a number"));
  EXPECT_THAT(batch->left_out.back().message(),
              HasSubstr("3 more csv lines left out"));
  // Only a first line can be a header; a later one is a bad line.
  absl::StatusOr<ProducerBatch> late =
      DecodeProducerMessage("csv", "1,1\nlabel,x1\n", false);
  ASSERT_TRUE(late.ok());
  EXPECT_THAT(late->left_out, SizeIs(1));
}

TEST(ProducerMessageTest, ALineThatIsNotUtf8IsLeftOut) {
  // A class or feature name protobuf could not read back from the record.
  for (const char* bad : {"\xf3\xf3,1", "caf\xc3,1", "\xc0\xafx,1",
                          "\xed\xa0\x80,1", "\xf4\x90\x80\x80,1"}) {
    absl::StatusOr<ProducerBatch> batch = DecodeProducerMessage(
        "csv", absl::StrCat("caf\xc3\xa9,1\n", bad, "\n\xf0\x9f\x90\x88,2"),
        /*multiclass=*/true);
    ASSERT_TRUE(batch.ok());
    const v1::TrainRequest request = RequestOf(*batch);
    ASSERT_EQ(request.examples_size(), 2) << bad;
    EXPECT_EQ(request.examples(0).class_label(), "caf\xc3\xa9");
    EXPECT_EQ(request.examples(1).class_label(), "\xf0\x9f\x90\x88");
    ASSERT_THAT(batch->left_out, SizeIs(1));
    EXPECT_THAT(batch->left_out[0].message(),
                HasSubstr("line 2 left out: the line is not UTF-8 text"));
  }
  // Past eight bytes, where ASCII is read a word at a time.
  absl::StatusOr<ProducerBatch> long_lines =
      DecodeProducerMessage("csv",
                            "a-long-class-name-caf\xc3\xa9,1\n"
                            "a-long-class-name-caf\xc3,1\n"
                            "name-\xed\xa0\x80-of-a-class-name,1\n",
                            /*multiclass=*/true);
  ASSERT_TRUE(long_lines.ok());
  EXPECT_EQ(RequestOf(*long_lines).examples_size(), 1);
  EXPECT_THAT(long_lines->left_out, SizeIs(2));
  absl::StatusOr<ProducerBatch> named =
      DecodeProducerMessage("vw", "1 |ns caf\xe9\n", false);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(RequestOf(*named).examples_size(), 0);
}

TEST(ProducerMessageTest, ATrainRequestKeepsItsSourceAndSequence) {
  v1::TrainRequest request;
  request.set_source("sensor-7");
  request.set_sequence(41);
  request.add_examples()->set_label(1);
  for (const char* format : {"", "protobuf"}) {
    absl::StatusOr<ProducerBatch> batch =
        DecodeProducerMessage(format, request.SerializeAsString(), false);
    ASSERT_TRUE(batch.ok()) << format;
    EXPECT_EQ(batch->source, "sensor-7");
    EXPECT_EQ(batch->first_sequence, 41u);
    EXPECT_EQ(batch->request, request.SerializeAsString());
  }
}

TEST(ProducerMessageTest, MessagesThatHoldNoBatchAreRefused) {
  EXPECT_THAT(DecodeProducerMessage("", std::string(12, '\xff'), false)
                  .status()
                  .message(),
              HasSubstr("not a TrainRequest"));
  v1::TrainRequest unnumbered;
  unnumbered.set_source("p");
  EXPECT_THAT(
      DecodeProducerMessage("protobuf", unnumbered.SerializeAsString(), false)
          .status()
          .message(),
      HasSubstr("needs a sequence from 1"));
  const absl::Status avro =
      DecodeProducerMessage("avro", "1,2\n", false).status();
  EXPECT_EQ(avro.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(avro.message(), HasSubstr("'avro'"));
  EXPECT_THAT(avro.message(), HasSubstr("csv, libsvm or vw"));
}

}  // namespace
}  // namespace halfspace
