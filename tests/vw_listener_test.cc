// The Vowpal Wabbit daemon protocol: its lines read and its answers written
// as VW writes them, and a real server's listener spoken to over real
// sockets — learning exactly what the Train stream learns, answering in
// order, durably, through bad lines, limits and shutdown.

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/example_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/vw_protocol.h"
#include "tests/test_server.h"
#include "tests/vw_socket.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(VwProtocolTest, ReadsTheLineHead) {
  auto head = [](absl::string_view line) {
    absl::StatusOr<VwLineHead> read = ReadVwLineHead(line);
    EXPECT_TRUE(read.ok()) << line;
    return read.ok() ? *read : VwLineHead();
  };
  EXPECT_TRUE(head("1 |f a").labeled);
  EXPECT_EQ(head("1 |f a").tag, "");
  EXPECT_TRUE(head("-1 2.5 'id7 |f a").labeled);
  EXPECT_EQ(head("-1 2.5 'id7 |f a").tag, "id7");
  EXPECT_FALSE(head("|f a").labeled);
  EXPECT_FALSE(head(" 'q|f a").labeled);
  EXPECT_EQ(head(" 'q|f a").tag, "q");
  EXPECT_FALSE(head("\t'q \t|f a").labeled);
  EXPECT_EQ(head("\t'q \t|f a").tag, "q");
  EXPECT_TRUE(head("1\t'q|f a").labeled);
  EXPECT_EQ(head("1\t'q|f a").tag, "q");
  EXPECT_EQ(head("' |f a").tag, "");  // a quote alone: an empty tag
  EXPECT_FALSE(head("' |f a").labeled);
  EXPECT_TRUE(absl::IsInvalidArgument(ReadVwLineHead("1 a b").status()));
}

TEST(VwProtocolTest, AnswersAsVwPrintsPredictions) {
  std::string out;
  AppendVwAnswer(0.0, "", out);
  AppendVwAnswer(1.0, "a", out);
  AppendVwAnswer(-1.0, "", out);
  AppendVwAnswer(0.5, "id7", out);
  AppendVwAnswer(-1.0 / 3, "", out);
  AppendVwAnswer(0.1234567, "", out);  // a float, six decimals
  AppendVwAnswer(2.0000001, "", out);  // a float: a whole number
  AppendVwAnswer(-0.0000001, "", out);
  AppendVwClassAnswer("cat", "x", out);
  AppendVwError(absl::InvalidArgumentError("two\nlines"), out);
  EXPECT_EQ(out,
            "0\n1 a\n-1\n0.500000 id7\n-0.333333\n0.123457\n2\n-0.000000\n"
            "cat x\nerror: INVALID_ARGUMENT: two lines\n");
  EXPECT_EQ(*ParseVwAnswer("label"), VwAnswer::kLabel);
  EXPECT_EQ(*ParseVwAnswer("probability"), VwAnswer::kProbability);
  EXPECT_EQ(*ParseVwAnswer("score"), VwAnswer::kScore);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseVwAnswer("raw").status()));
}

// A server with a VW listener on a free loopback port (unless `more` says
// otherwise), lines going to `model` (none: the tags name it), answering
// `answer`.
TestServer VwServer(const std::string& model,
                    VwAnswer answer = VwAnswer::kScore,
                    std::function<void(ServerOptions&)> more = {}) {
  return TestServer([=](ServerOptions& options) {
    VwListenerOptions& vw = options.vw.emplace_back();
    vw.address = "127.0.0.1:0";
    vw.model = model;
    vw.answer = answer;
    if (more) more(options);
  });
}

v1::CreateModelRequest HashedModel(const std::string& name,
                                   const std::string& algorithm) {
  v1::CreateModelRequest create;
  create.set_model(name);
  *create.mutable_algorithm() = TextAlgorithm(algorithm);
  create.set_hash_bits(12);
  v1::Interaction* cross = create.add_interactions();
  cross->set_first_group("u");
  cross->set_second_group("i");
  return create;
}

// n labelled VW lines of two namespaces, some with weights and tags.
std::vector<std::string> VwLines(int n, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i) {
    const int user = random() % 20, item = random() % 30;
    const int label = (user + item) % 3 == 0 ? 1 : -1;
    std::string line = absl::StrCat(label);
    if (i % 4 == 1) absl::StrAppend(&line, " ", 0.5 + (random() % 4));
    if (i % 3 == 0) absl::StrAppend(&line, " 'e", i);
    absl::StrAppend(&line, " |u user", user, " age:", (random() % 60) / 10.0,
                    " |i item", item, " |", " bias");
    lines.push_back(line);
  }
  return lines;
}

// A labelled line without its label (and weight): the instance to predict.
std::string Unlabelled(const std::string& line) {
  const size_t bar = line.find('|');
  const size_t quote = line.find('\'');
  return quote < bar ? line.substr(quote) : line.substr(bar);
}

std::vector<std::string> Weights(Client& client, const std::string& model) {
  absl::StatusOr<v1::GetWeightsResponse> got = client.GetWeights(model);
  EXPECT_TRUE(got.ok()) << got.status();
  std::vector<std::string> weights;
  for (double w : got->weights()) weights.push_back(absl::StrCat(w));
  weights.push_back(absl::StrCat("b=", got->bias()));
  return weights;
}

TEST(VwListenerTest, LearnsAsTheTrainStreamAndAnswersAsVw) {
  TestServer server = VwServer("vw");
  Client client = server.NewClient();
  const std::string algorithm = "sgd { loss: LOSS_LOG alpha: 0.001 }";
  ASSERT_TRUE(client.CreateModel(HashedModel("vw", algorithm)).ok());
  ASSERT_TRUE(client.CreateModel(HashedModel("grpc", algorithm)).ok());
  const std::vector<std::string> lines = VwLines(600, 7);

  // Through the listener: every line learned, every tenth also predicted
  // after it, in one write, then answered in order.
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StrAppend(&text, lines[i], "\n");
    if (i % 10 == 0) absl::StrAppend(&text, Unlabelled(lines[i]), "\n");
  }
  VwSocket vw(server.server().vw_port());
  ASSERT_TRUE(vw.connected());
  vw.Send(text);
  const std::vector<std::string> answers = vw.Lines(lines.size() * 11 / 10);

  // Through the Train stream: the same lines as parsed examples, and the
  // same predictions through Predict after each tenth.
  std::vector<std::string> expected;
  std::unique_ptr<TrainingStream> stream = client.Train("grpc");
  for (size_t i = 0; i < lines.size(); ++i) {
    v1::TrainRequest request;
    ASSERT_TRUE(ParseExampleLine(lines[i], ExampleFormat::kVw, false,
                                 *request.add_examples())
                    .ok());
    ASSERT_TRUE(stream->Send(request).ok());
    absl::StatusOr<v1::TrainResponse> response = stream->Receive();
    ASSERT_TRUE(response.ok()) << response.status();
    const absl::string_view tag = ReadVwLineHead(lines[i])->tag;
    AppendVwAnswer(response->results(0).score(), tag, expected.emplace_back());
    if (i % 10 != 0) continue;
    v1::PredictRequest predict;
    predict.set_model("grpc");
    absl::StatusOr<v1::FeatureVector> instance =
        ParseInstance(Unlabelled(lines[i]), ExampleFormat::kVw);
    ASSERT_TRUE(instance.ok()) << instance.status();
    *predict.add_instances() = *instance;
    absl::StatusOr<std::vector<v1::Prediction>> p = client.Predict(predict);
    ASSERT_TRUE(p.ok()) << p.status();
    AppendVwAnswer((*p)[0].score(), tag, expected.emplace_back());
  }
  ASSERT_TRUE(stream->Finish().ok());
  for (std::string& e : expected) e.pop_back();  // the newline
  EXPECT_EQ(answers, expected);
  EXPECT_EQ(Weights(client, "vw"), Weights(client, "grpc"));
  absl::StatusOr<v1::Model> model = client.GetModel("vw");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->stats().examples_seen(), lines.size());
}

TEST(VwListenerTest, AnswersLabelsProbabilitiesAndClasses) {
  {
    TestServer server = VwServer("", VwAnswer::kProbability);
    Client client = server.NewClient();
    ASSERT_TRUE(
        client.CreateModel(HashedModel("log", "sgd { loss: LOSS_LOG }")).ok());
    ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
    VwSocket vw(server.server().vw_port());
    vw.Send("'log |u a\n1 'p |u a\n'log |u a\n");
    const std::vector<std::string> answers = vw.Lines(3);
    ASSERT_EQ(answers.size(), 3u);
    EXPECT_EQ(answers[0], "0.500000 log");  // P(y = +1) of w = 0
    EXPECT_THAT(answers[1], StartsWith("error: FAILED_PRECONDITION: model 'p' "
                                       "gives no probability"));
    EXPECT_EQ(answers[2], "0.500000 log");
    absl::StatusOr<v1::Model> p = client.GetModel("p");
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->stats().examples_seen(), 0u);  // refused, not learned
  }
  {
    TestServer server = VwServer("p", VwAnswer::kLabel);
    Client client = server.NewClient();
    ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
    VwSocket vw(server.server().vw_port());
    vw.Send("-1 |u a\n|u a\n1 |u b\n|u b\n");
    // f = 0 predicts +1; learning -1 on a makes it -1 there, and on b
    // through the bias, until b is learned.
    EXPECT_THAT(vw.Lines(4), ElementsAre("1", "-1", "-1", "1"));
  }
  {
    TestServer server = VwServer("m");
    Client client = server.NewClient();
    v1::CreateModelRequest create = HashedModel("m", "softmax_regression");
    ASSERT_TRUE(client.CreateModel(create).ok());
    VwSocket vw(server.server().vw_port());
    std::string text;
    for (int i = 0; i < 30; ++i) {
      absl::StrAppend(&text, "cat 'c |u whiskers\ndog 'd |u bark\n");
    }
    absl::StrAppend(&text, "'q |u whiskers\n'r |u bark\n");
    vw.Send(text);
    const std::vector<std::string> answers = vw.Lines(62);
    ASSERT_EQ(answers.size(), 62u);
    EXPECT_EQ(answers[60], "cat q");
    EXPECT_EQ(answers[61], "dog r");
  }
}

TEST(VwListenerTest, TagsNameTheModelWithoutADefault) {
  TestServer server = VwServer("");
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("a", "perceptron")).ok());
  ASSERT_TRUE(client.CreateModel(HashedModel("b", "perceptron")).ok());
  VwSocket vw(server.server().vw_port());
  vw.Send("1 'a |u x\n1 'a |u x\n-1 'b |u x\n1 |u x\n1 'nope |u x\n'b |u x\n");
  const std::vector<std::string> answers = vw.Lines(6);
  ASSERT_EQ(answers.size(), 6u);
  EXPECT_EQ(answers[0], "0 a");
  EXPECT_EQ(answers[1], "2 a");  // a learned its first line
  EXPECT_EQ(answers[2], "0 b");  // b learned nothing of a's lines
  EXPECT_THAT(answers[3], StartsWith("error: INVALID_ARGUMENT: the line names "
                                     "no model"));
  EXPECT_THAT(answers[4], StartsWith("error: NOT_FOUND:"));
  EXPECT_EQ(answers[5], "-2 b");
}

TEST(VwListenerTest, EachListenerMayHaveAModelOfItsOwn) {
  TestServer server([](ServerOptions& o) {
    for (const char* model : {"a", "b", ""}) {
      VwListenerOptions& vw = o.vw.emplace_back();
      vw.address = "127.0.0.1:0";
      vw.model = model;
    }
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("a", "perceptron")).ok());
  ASSERT_TRUE(client.CreateModel(HashedModel("b", "perceptron")).ok());
  VwSocket a(server.server().vw_port(0)), b(server.server().vw_port(1)),
      tagged(server.server().vw_port(2));
  a.Send("1 |u x\n");
  ASSERT_THAT(a.Lines(1), ElementsAre("0"));
  b.Send("-1 |u x\n-1 'id |u x\n");
  ASSERT_THAT(b.Lines(2), ElementsAre("0", "-2 id"));  // b learned only -1
  tagged.Send("'a |u x\n'b |u x\n");
  EXPECT_THAT(tagged.Lines(2), ElementsAre("2 a", "-2 b"));
}

TEST(VwListenerTest, BadLinesAreAnsweredAndTheConnectionGoesOn) {
  TestServer server = VwServer("p", VwAnswer::kScore, [](ServerOptions& o) {
    o.vw[0].max_line_bytes = 1024;
    o.limits.max_named_features = 50;
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  VwSocket vw(server.server().vw_port());
  std::string features;
  for (int i = 0; i < 60; ++i) absl::StrAppend(&features, " f", i);
  const std::string overlong = absl::StrCat("1 |u", std::string(5000, 'x'));
  vw.Send(absl::StrCat("1 |u a\n", "no bar here\n", "\n", "x |u a\n",
                       "1 |u a:nan\n", "1 |u a:zz\n", "1 \xff |u a\n", overlong,
                       "\n", "1 |u", features, "\n", "1 'ok |u a\n"));
  const std::vector<std::string> answers = vw.Lines(9);
  ASSERT_EQ(answers.size(), 9u);
  EXPECT_EQ(answers[0], "0");
  EXPECT_THAT(answers[1], StartsWith("error: INVALID_ARGUMENT: expected"));
  // The blank line is skipped.
  EXPECT_THAT(answers[2], StartsWith("error: INVALID_ARGUMENT: vw line: the "
                                     "label x"));
  EXPECT_THAT(answers[3], StartsWith("error: INVALID_ARGUMENT:"));  // nan
  EXPECT_THAT(answers[4], StartsWith("error: INVALID_ARGUMENT: vw line:"));
  EXPECT_THAT(answers[5], HasSubstr("UTF-8"));
  EXPECT_THAT(answers[6], StartsWith("error: RESOURCE_EXHAUSTED:"));
  EXPECT_THAT(answers[6], HasSubstr("vw_max_line_bytes"));
  EXPECT_THAT(answers[7], StartsWith("error: RESOURCE_EXHAUSTED:"));
  EXPECT_THAT(answers[7], HasSubstr("max_named_features"));
  EXPECT_EQ(answers[8], "2 ok");  // the first line's a, and b

  // An error answers after the lines before it.
  vw.Send("-1 'p1 |u c\n1 |u c:zz\n'p2 |u c\n");
  const std::vector<std::string> after = vw.Lines(3);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], "1 p1");
  EXPECT_THAT(after[1], StartsWith("error: INVALID_ARGUMENT: vw line:"));
  EXPECT_EQ(after[2], "-1 p2");

  // A line past the limit that comes in parts is answered at once, and its
  // rest skipped.
  vw.Send(absl::StrCat("1 |u ", std::string(3000, 'y')));
  const std::vector<std::string> too_long = vw.Lines(1);
  ASSERT_EQ(too_long.size(), 1u);
  EXPECT_THAT(too_long[0], HasSubstr("vw_max_line_bytes"));
  vw.Send(absl::StrCat(std::string(3000, 'y'), " z\n'p3 |u c\n"));
  EXPECT_THAT(vw.Lines(1), ElementsAre("-1 p3"));
  absl::StatusOr<v1::Model> model = client.GetModel("p");
  ASSERT_TRUE(model.ok());
  EXPECT_EQ(model->stats().examples_seen(), 3u);
}

TEST(VwListenerTest, AnsweredLinesAreDurable) {
  TestServer server = VwServer("p");
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  VwSocket vw(server.server().vw_port());
  const std::vector<std::string> lines = VwLines(300, 3);
  size_t answered = 0;
  for (size_t start = 0; start < lines.size(); start += 50) {
    std::string text;
    for (size_t i = start; i < start + 50; ++i) {
      absl::StrAppend(&text, lines[i], "\n");
    }
    vw.Send(text);
    answered += vw.Lines(50).size();
  }
  ASSERT_EQ(answered, lines.size());
  // A crash now keeps every line answered.
  CrashCopy crash(server.data_dir());
  Client recovered = crash.Start();
  absl::StatusOr<v1::Model> model = recovered.GetModel("p");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->stats().examples_seen(), lines.size());
  EXPECT_EQ(Weights(recovered, "p"), Weights(client, "p"));
}

TEST(VwListenerTest, ListensOnLoopbackOrUnixSocketsUnlessToldOtherwise) {
  for (const char* address : {"0.0.0.0:0", ":0", "[::]:0"}) {
    ServerOptions options;
    TempDir dir;
    options.listen_address = "127.0.0.1:0";
    options.data_dir = dir.path();
    options.vw.emplace_back().address = address;
    absl::StatusOr<std::unique_ptr<Server>> refused = Server::Start(options);
    ASSERT_FALSE(refused.ok()) << address;
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
    EXPECT_THAT(refused.status().message(), HasSubstr("--vw_listen_remote"));
  }
  {
    TestServer remote = VwServer("p", VwAnswer::kScore, [](ServerOptions& o) {
      o.vw[0].address = "0.0.0.0:0";
      o.vw[0].remote = true;
    });
    Client client = remote.NewClient();
    ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
    VwSocket vw(remote.server().vw_port());
    vw.Send("|u a\n");
    EXPECT_THAT(vw.Lines(1), ElementsAre("0"));
  }
  TempDir sockets;
  const std::string path = sockets.File("vw.sock");
  TestServer server = VwServer("p", VwAnswer::kScore, [&](ServerOptions& o) {
    o.vw[0].address = absl::StrCat("unix:", path);
  });
  EXPECT_EQ(server.server().vw_port(), 0);
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  VwSocket vw(path);
  ASSERT_TRUE(vw.connected());
  vw.Send("1 |u a\n|u a\n");
  EXPECT_THAT(vw.Lines(2), ElementsAre("0", "2"));
}

TEST(VwListenerTest, LinesAreLearnedWhenTheClientHangsUpWithoutReading) {
  TempDir sockets;
  const std::string path = sockets.File("vw.sock");
  TestServer server = VwServer("p", VwAnswer::kScore, [&](ServerOptions& o) {
    o.vw[0].address = absl::StrCat("unix:", path);
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  const std::vector<std::string> lines = VwLines(3000, 11);
  {
    VwSocket vw(path);
    ASSERT_TRUE(vw.connected());
    std::string text;
    for (const std::string& line : lines) absl::StrAppend(&text, line, "\n");
    vw.Send(text);
  }  // closed, nothing read
  uint64_t seen = 0;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(20);
       seen < lines.size() && absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(20))) {
    absl::StatusOr<v1::Model> model = client.GetModel("p");
    ASSERT_TRUE(model.ok());
    seen = model->stats().examples_seen();
  }
  EXPECT_EQ(seen, lines.size());
}

TEST(VwListenerTest, ConnectionsAreStreamsToTheLimits) {
  TestServer server = VwServer("p", VwAnswer::kScore, [](ServerOptions& o) {
    o.streams.max_streams_per_client = 1;
  });
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  VwSocket first(server.server().vw_port());
  first.Send("|u a\n");
  ASSERT_THAT(first.Lines(1), ElementsAre("0"));
  VwSocket second(server.server().vw_port());
  const std::vector<std::string> refused = second.Lines(1);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], StartsWith("error: RESOURCE_EXHAUSTED:"));
  EXPECT_THAT(refused[0], HasSubstr("max_streams_per_client"));
  EXPECT_TRUE(second.Closed());
  first.CloseSend();  // the first closes, and a new one is served
  EXPECT_TRUE(first.Closed());
  for (int attempt = 0; attempt < 100; ++attempt) {
    VwSocket third(server.server().vw_port());
    third.Send("|u a\n");
    const std::vector<std::string> answer = third.Lines(1);
    if (answer == std::vector<std::string>{"0"}) return;
    absl::SleepFor(absl::Milliseconds(20));  // the gate not left yet
  }
  ADD_FAILURE() << "no connection served after the first closed";
}

TEST(VwListenerTest, ShutdownAnswersWhatItTookThenCloses) {
  TestServer server = VwServer("p");
  Client client = server.NewClient();
  ASSERT_TRUE(client.CreateModel(HashedModel("p", "perceptron")).ok());
  VwSocket vw(server.server().vw_port());
  vw.Send("1 |u a\n|u a\n");
  ASSERT_THAT(vw.Lines(2), ElementsAre("0", "2"));
  ASSERT_TRUE(server.server().Shutdown().ok());
  EXPECT_TRUE(vw.Closed());
}

}  // namespace
}  // namespace halfspace
