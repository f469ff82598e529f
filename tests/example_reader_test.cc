// The command-line tool's example reader: CSV and LibSVM lines into
// TrainRequest examples, a buffer at a time, with numbers parsed exactly.

#include "client/example_reader.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/features/feature_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/temp_dir.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class ExampleReaderTest : public ::testing::Test {
 protected:
  // Reads `text` as a file in `format`, all of it, in requests of `batch`.
  absl::StatusOr<std::vector<v1::Example>> ReadAll(const std::string& text,
                                                   ExampleFormat format,
                                                   bool multiclass = false,
                                                   size_t batch = 3) {
    const std::string path = dir_.File("examples");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
        ExampleReader::Open(path, format, multiclass);
    if (!reader.ok()) return reader.status();
    std::vector<v1::Example> all;
    for (;;) {
      google::protobuf::RepeatedPtrField<v1::Example> out;
      absl::StatusOr<size_t> n = (*reader)->Read(batch, out);
      if (!n.ok()) return n.status();
      EXPECT_EQ(static_cast<size_t>(out.size()), *n);
      EXPECT_LE(*n, batch);
      if (*n == 0) return all;
      all.insert(all.end(), out.begin(), out.end());
    }
  }

  TempDir dir_;
};

std::vector<double> Dense(const v1::Example& e) {
  return {e.features().dense().begin(), e.features().dense().end()};
}

TEST_F(ExampleReaderTest, ReadsCsvSkippingBlankAndCommentLines) {
  absl::StatusOr<std::vector<v1::Example>> examples = ReadAll(
      "# label,x1,x2\n1,0.5,-2\n\n  -1 , 3 ,  4.25 \r\n#\n+1,1e3,-0\n-1,7,8",
      ExampleFormat::kCsv);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 4u);
  EXPECT_EQ((*examples)[0].label(), 1);
  EXPECT_THAT(Dense((*examples)[0]), ElementsAre(0.5, -2));
  EXPECT_EQ((*examples)[1].label(), -1);
  EXPECT_THAT(Dense((*examples)[1]), ElementsAre(3, 4.25));
  EXPECT_EQ((*examples)[2].label(), 1);
  EXPECT_THAT(Dense((*examples)[2]), ElementsAre(1000, 0));
  EXPECT_TRUE(std::signbit(Dense((*examples)[2])[1]));    // "-0" stays -0
  EXPECT_THAT(Dense((*examples)[3]), ElementsAre(7, 8));  // no final newline
}

TEST_F(ExampleReaderTest, ACsvHeaderLineIsSkippedOnlyFirst) {
  absl::StatusOr<std::vector<v1::Example>> examples =
      ReadAll("# data\nlabel,x1,x2\n1,0.5,-2\n", ExampleFormat::kCsv);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 1u);
  EXPECT_THAT(Dense((*examples)[0]), ElementsAre(0.5, -2));
  // Not first: an error, as is a first line with a number among its fields
  // (the label's too).
  EXPECT_THAT(ReadAll("1,0.5,-2\nlabel,x1,x2\n", ExampleFormat::kCsv)
                  .status()
                  .message(),
              HasSubstr(":2: the label label is not an integer"));
  EXPECT_THAT(ReadAll("1,x1,2\n", ExampleFormat::kCsv).status().message(),
              HasSubstr(":1: 'x1' is not a number"));
}

TEST_F(ExampleReaderTest, ReadsVowpalWabbitLinesIntoHashedGroups) {
  absl::StatusOr<std::vector<v1::Example>> examples = ReadAll(
      "1 |animal legs:4 furry |sound bark\n"
      "-1 0.5 'tag|animal:2 legs:2 wings\n"
      "# a comment\n"
      "1 | plain\n",
      ExampleFormat::kVw);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 3u);
  // Each feature as group/hash=value; a group whose values are all 1 sends
  // none.
  auto hashed = [](const v1::Example& e) {
    std::vector<std::string> out;
    EXPECT_EQ(e.features().named_size(), 0);
    for (const v1::HashedGroup& g : e.features().hashed()) {
      EXPECT_TRUE(g.values().empty() || g.values_size() == g.hashes_size());
      for (int k = 0; k < g.hashes_size(); ++k) {
        out.push_back(absl::StrCat(g.group(), "/", g.hashes(k), "=",
                                   g.values().empty() ? 1.0 : g.values(k)));
      }
    }
    return out;
  };
  auto feature = [](absl::string_view group, absl::string_view name,
                    double value) {
    return absl::StrCat(group, "/", FeatureHash(name, GroupSeed(group)), "=",
                        value);
  };
  EXPECT_EQ((*examples)[0].label(), 1);
  EXPECT_FALSE((*examples)[0].has_weight());
  EXPECT_THAT(hashed((*examples)[0]), ElementsAre(feature("animal", "legs", 4),
                                                  feature("animal", "furry", 1),
                                                  feature("sound", "bark", 1)));
  EXPECT_EQ((*examples)[0].features().hashed(1).values_size(), 0);
  EXPECT_EQ((*examples)[1].label(), -1);
  EXPECT_EQ((*examples)[1].weight(), 0.5);
  EXPECT_THAT(hashed((*examples)[1]),
              ElementsAre(feature("animal", "legs", 4),
                          feature("animal", "wings", 2)));  // scale 2
  EXPECT_THAT(hashed((*examples)[2]), ElementsAre(feature("", "plain", 1)));

  for (const auto& [line, error] :
       std::vector<std::pair<std::string, std::string>>{
           {"1 legs:4\n", "expected label [weight] |namespace"},
           {"2.5 |a x\n", "is not an integer"},
           {"1 heavy |a x\n", "importance weight 'heavy' is not a number"},
           {"1 |a x:y\n", "'x:y' is not feature or feature:value"},
           {"1 |a:big x\n", "namespace scale in 'a:big'"}}) {
    EXPECT_THAT(ReadAll(line, ExampleFormat::kVw).status().message(),
                HasSubstr(error))
        << line;
  }
}

TEST_F(ExampleReaderTest, ReadsLibsvmIntoSparseFeaturesFromIndexOne) {
  absl::StatusOr<std::vector<v1::Example>> examples = ReadAll(
      "+1 1:0.5 3:-2 # a comment\n-1\t2:1\n1\n", ExampleFormat::kLibsvm);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 3u);
  const v1::SparseVector& first = (*examples)[0].features().sparse();
  EXPECT_THAT(first.indices(), ElementsAre(0, 2));
  EXPECT_THAT(first.values(), ElementsAre(0.5, -2));
  EXPECT_EQ((*examples)[1].label(), -1);
  EXPECT_THAT((*examples)[1].features().sparse().indices(), ElementsAre(1));
  EXPECT_TRUE((*examples)[2].features().has_sparse());  // no features at all
  EXPECT_EQ((*examples)[2].features().sparse().indices_size(), 0);
}

TEST_F(ExampleReaderTest, AMulticlassLabelIsTheClassName) {
  absl::StatusOr<std::vector<v1::Example>> examples =
      ReadAll("cat,1,2\n dog ,3,4\n", ExampleFormat::kCsv, true);
  ASSERT_TRUE(examples.ok()) << examples.status();
  EXPECT_EQ((*examples)[0].class_label(), "cat");
  EXPECT_EQ((*examples)[1].class_label(), "dog");
}

TEST_F(ExampleReaderTest, ABadLineIsNamedByFileAndLine) {
  struct Case {
    std::string text;
    ExampleFormat format;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"1,2,3\n1,2,x\n", ExampleFormat::kCsv, ":2: 'x' is not a number"},
           {"1,2\n\n0.5,1\n", ExampleFormat::kCsv,
            ":3: the label 0.5 is not an integer"},
           {"1\n", ExampleFormat::kCsv, ":1: expected label,x1,...,xd"},
           {"1,2,,3\n", ExampleFormat::kCsv, "'' is not a number"},
           {"1,1.5.3\n", ExampleFormat::kCsv, "'1.5.3' is not a number"},
           {"1 0:1\n", ExampleFormat::kLibsvm, ":1: feature index 0 is out"},
           {"1 3\n", ExampleFormat::kLibsvm, "'3' is not index:value"},
           {"1 2:x\n", ExampleFormat::kLibsvm, "'2:x' is not index:value"},
       }) {
    absl::StatusOr<std::vector<v1::Example>> examples =
        ReadAll(c.text, c.format);
    EXPECT_TRUE(absl::IsInvalidArgument(examples.status())) << c.text;
    EXPECT_THAT(examples.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST_F(ExampleReaderTest, ALineLongerThanTheBufferIsReadWhole) {
  std::string line = "1";
  for (int j = 0; j < 300000; ++j) absl::StrAppend(&line, ",", j % 7);
  absl::StatusOr<std::vector<v1::Example>> examples =
      ReadAll(absl::StrCat(line, "\n-1,5\n"), ExampleFormat::kCsv);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 2u);
  ASSERT_EQ((*examples)[0].features().dense_size(), 300000);
  EXPECT_EQ((*examples)[0].features().dense(299999), 299999 % 7);
  EXPECT_THAT(Dense((*examples)[1]), ElementsAre(5));
}

TEST_F(ExampleReaderTest, ParsesEveryNumberExactlyAsFromCharsDoes) {
  // Decimals of every length the fast path takes and beyond it, exponents,
  // and values at 2^53: each must be the correctly rounded double.
  std::mt19937_64 rng(3);
  std::vector<std::string> texts = {"9007199254740992",
                                    "9007199254740993",
                                    "0.1",
                                    "-0.30000000000000004",
                                    "1234567890123456789",
                                    "1e-300",
                                    "4.9e-324",
                                    "1.7976931348623157e308",
                                    "123.456e7",
                                    "0.0000000000000000000000123"};
  for (int i = 0; i < 20000; ++i) {
    const int digits = 1 + rng() % 22;
    std::string text = rng() % 2 ? "-" : "";
    for (int k = 0; k < digits; ++k)
      text += static_cast<char>('0' + rng() % 10);
    const int point = rng() % (digits + 1);
    if (point < digits) text.insert(text.size() - point, ".");
    texts.push_back(text);
    texts.push_back(
        absl::StrFormat("%.*g", 1 + rng() % 17,
                        std::ldexp(double(rng() >> 11), -int(rng() % 80))));
  }
  std::string csv;
  for (const std::string& t : texts)
    absl::StrAppend(&csv, "1,", t, ",", t, "\n");
  absl::StatusOr<std::vector<v1::Example>> examples =
      ReadAll(csv, ExampleFormat::kCsv, false, 1000);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    double expected = 0;
    std::from_chars(texts[i].data(), texts[i].data() + texts[i].size(),
                    expected);
    for (double got : Dense((*examples)[i])) {
      EXPECT_EQ(absl::bit_cast<uint64_t>(got),
                absl::bit_cast<uint64_t>(expected))
          << texts[i];
    }
  }
}

TEST(ExampleFormatTest, IsNamedOrGuessedFromTheFileName) {
  EXPECT_EQ(*ParseExampleFormat("auto", "a9a.svm"), ExampleFormat::kLibsvm);
  EXPECT_EQ(*ParseExampleFormat("auto", "x.SVMLIGHT"), ExampleFormat::kLibsvm);
  EXPECT_EQ(*ParseExampleFormat("auto", "data.csv"), ExampleFormat::kCsv);
  EXPECT_EQ(*ParseExampleFormat("auto", "-"), ExampleFormat::kAuto);
  EXPECT_EQ(*ParseExampleFormat("auto", "train.txt"), ExampleFormat::kAuto);
  EXPECT_EQ(*ParseExampleFormat("libsvm", "-"), ExampleFormat::kLibsvm);
  EXPECT_EQ(*ParseExampleFormat("auto", "clicks.vw"), ExampleFormat::kVw);
  EXPECT_EQ(*ParseExampleFormat("vw", "-"), ExampleFormat::kVw);
  EXPECT_TRUE(
      absl::IsInvalidArgument(ParseExampleFormat("json", "x").status()));
}

TEST_F(ExampleReaderTest, AutoTellsTheFormatFromTheFirstLine) {
  absl::StatusOr<std::vector<v1::Example>> vw =
      ReadAll("1 |words hello world\n-1 |words bye\n", ExampleFormat::kAuto);
  ASSERT_TRUE(vw.ok()) << vw.status();
  EXPECT_EQ((*vw)[0].features().hashed(0).hashes_size(), 2);
  absl::StatusOr<std::vector<v1::Example>> libsvm =
      ReadAll("+1 1:0.5 3:-2\n-1 2:1\n", ExampleFormat::kAuto);
  ASSERT_TRUE(libsvm.ok()) << libsvm.status();
  EXPECT_EQ((*libsvm)[0].features().sparse().indices_size(), 2);
  absl::StatusOr<std::vector<v1::Example>> csv =
      ReadAll("label,x1\n1,0.5\n", ExampleFormat::kAuto);
  ASSERT_TRUE(csv.ok()) << csv.status();
  EXPECT_THAT(Dense((*csv)[0]), ElementsAre(0.5));
  EXPECT_EQ(*ParseExampleFormat("auto", "-"), ExampleFormat::kAuto);
  EXPECT_EQ(*ParseExampleFormat("auto", "data.csv"), ExampleFormat::kCsv);
}

TEST_F(ExampleReaderTest, ALineOfAnotherFormatSaysWhichFormatToGive) {
  absl::Status s = ReadAll("1 |words hello\n", ExampleFormat::kCsv).status();
  EXPECT_THAT(s.message(),
              HasSubstr("the line looks like vw: use --format=vw"));
  s = ReadAll("1 3:0.5\n", ExampleFormat::kCsv).status();
  EXPECT_THAT(s.message(), HasSubstr("use --format=libsvm"));
  s = ReadAll("1,2,x\n", ExampleFormat::kCsv).status();
  EXPECT_THAT(s.message(), Not(HasSubstr("looks like")));
}

// A producer writing into a pipe one example at a time: with flush_after,
// each read returns what came as soon as the input pauses.
TEST_F(ExampleReaderTest, APauseInTheInputReturnsWhatCame) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::FILE* in = ::fdopen(fds[0], "rb");
  const std::string path = absl::StrCat("/dev/fd/", fds[0]);
  absl::StatusOr<std::unique_ptr<ExampleReader>> reader =
      ExampleReader::Open(path, ExampleFormat::kCsv, false);
  ASSERT_TRUE(reader.ok()) << reader.status();
  google::protobuf::RepeatedPtrField<v1::Example> out;
  for (int i = 0; i < 3; ++i) {
    const std::string line = absl::StrCat(i % 2 ? "-1" : "1", ",", i, "\n");
    ASSERT_EQ(::write(fds[1], line.data(), line.size()),
              static_cast<ssize_t>(line.size()));
    out.Clear();
    absl::StatusOr<size_t> n =
        (*reader)->Read(1000, out, absl::Milliseconds(20));
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 1u) << i;  // not 1000, nor the end of the input
  }
  ::close(fds[1]);
  out.Clear();
  EXPECT_EQ(*(*reader)->Read(1000, out, absl::Milliseconds(20)), 0u);
  std::fclose(in);
}

}  // namespace
}  // namespace halfspace
