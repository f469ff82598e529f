// Runs the real halfspace-server binary as a child process: it stores models
// at SIGTERM and loads them at the next start, refuses a corrupt data
// directory, and the halfspace CLI talks to it.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/connected.h"
#include "tests/server_process.h"
#include "tests/temp_dir.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs a shell command and returns what it printed.
std::string RunCommand(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  pclose(pipe);
  return output;
}

TEST(ProcessTest, SigtermStoresModelsAndTheNextStartLoadsThem) {
  TempDir dir;
  const std::string data = dir.File("data");
  {
    ServerProcess server(data, dir.File("first.log"));
    ASSERT_TRUE(server.WaitUntilReady()) << ReadFile(dir.File("first.log"));
    Client client = Client::Connect(server.target());
    ASSERT_TRUE(
        client.CreateModel("notes", *ParseAlgorithm("perceptron"), 2).ok());
    absl::StatusOr<FitReport> report =
        client.Fit("notes", {{{1, 2}, 1}, {{2, 1}, -1}, {{0, 0}, -1}});
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(server.Stop(SIGTERM), 0);
  }
  EXPECT_THAT(ReadFile(dir.File("first.log")), HasSubstr("shutting down"));
  EXPECT_TRUE(std::filesystem::exists(dir.File("data/notes.model")));

  ServerProcess server(data, dir.File("second.log"));
  ASSERT_TRUE(server.WaitUntilReady()) << ReadFile(dir.File("second.log"));
  Client client = Client::Connect(server.target());
  absl::StatusOr<v1::GetWeightsResponse> w = client.GetWeights("notes");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->weights(), ElementsAre(-2, 2));
  EXPECT_EQ(w->bias(), -1);
  EXPECT_EQ(client.GetModel("notes")->stats().updates(), 5u);
  // An idle connection from this client must not hold up the drain.
  const absl::Time stop_start = absl::Now();
  EXPECT_EQ(server.Stop(SIGINT), 0);
  EXPECT_LT(absl::Now() - stop_start, absl::Seconds(4))
      << "the 5 s drain timeout ran out with no call in flight";
}

// One bad model file never takes the others down: the server starts,
// serves the good models (here, files the previous format version wrote),
// reports the bad ones, and leaves their files as they were.
TEST(ProcessTest, ServesTheGoodModelsAndReportsACorruptOne) {
  TempDir dir;
  const std::string data = dir.File("data");
  std::filesystem::create_directories(data);
  for (const char* name : {"binary_sgd", "animals", "standardized"}) {
    std::filesystem::copy_file(
        absl::StrCat(HALFSPACE_SOURCE_DIR, "/tests/data/format_v1/", name,
                     ".model"),
        absl::StrCat(data, "/", name, ".model"));
  }
  std::string flipped = ReadFile(data + "/standardized.model");
  flipped[flipped.size() / 2] ^= 1;
  std::ofstream(data + "/standardized.model", std::ios::binary) << flipped;
  std::ofstream(data + "/broken.model") << "not a model";

  ServerProcess server(data, dir.File("log"));
  ASSERT_TRUE(server.WaitUntilReady());
  Client client(Connected(grpc::CreateChannel(
      server.target(), grpc::InsecureChannelCredentials())));
  EXPECT_EQ(client.GetModel("binary_sgd")->stats().examples_seen(), 40u);
  EXPECT_TRUE(client.Predict("animals", {{1, 0}}).ok());
  absl::StatusOr<v1::Model> broken = client.GetModel("broken");
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_THAT(broken->unavailable_reason(), HasSubstr("bad magic"));
  EXPECT_THAT(client.GetModel("standardized")->unavailable_reason(),
              HasSubstr("checksum mismatch"));
  const absl::Status refused = client.Predict("broken", {{1}}).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(refused.message(), HasSubstr("is unavailable"));
  absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->size(), 4u);
  EXPECT_EQ(server.Stop(SIGTERM), 0);

  EXPECT_THAT(ReadFile(dir.File("log")), HasSubstr("broken.model"));
  EXPECT_EQ(ReadFile(data + "/broken.model"), "not a model");
  EXPECT_EQ(ReadFile(data + "/standardized.model"), flipped);
}

// The exit status of `command`, its output appended to `output`.
int ExitStatus(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[256];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ProcessTest, BadFlagsExitWithStatus2AndNameTheFlag) {
  TempDir dir;
  const std::string server =
      absl::StrCat(HALFSPACE_SERVER_BINARY, " --data_dir=", dir.File("data"));
  for (const char* flag :
       {"--max_message_bytes=0", "--max_message_bytes=-1", "--listen=:70000",
        "--listen=localhost", "--listen=unix:", "--snapshot_interval=-5s",
        "--log_level=bogus", "--durability=maybe", "--checkpoint_bytes=-1",
        "--log_segment_bytes=1", "--max_models=0", "--max_classes=5000",
        "--max_streams=-1", "--max_model_bytes=2000000000",
        "--max_named_features=0", "--tokens_file=/nonexistent",
        "--tls_cert=/etc/hostname", "--tls_reload_interval=0s",
        "--log_format=xml"}) {
    std::string output;
    EXPECT_EQ(ExitStatus(absl::StrCat(server, " ", flag), output), 2) << flag;
    const std::string name(flag, std::string(flag).find('='));
    EXPECT_THAT(output, HasSubstr(name)) << flag;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("data")))
      << "a server with bad flags touched its data directory";
  std::string help;
  ExitStatus(absl::StrCat(HALFSPACE_SERVER_BINARY, " --help"), help);
  for (const char* flag :
       {"--listen", "--data_dir", "--durability", "--snapshot_interval",
        "--max_message_bytes", "--max_model_bytes", "--max_total_model_bytes",
        "--max_streams_per_client", "--max_interaction_products"}) {
    EXPECT_THAT(help, HasSubstr(flag));
  }
}

TEST(ProcessTest, SighupRereadsTheTokensAndTheLogSaysWhoCanCall) {
  TempDir dir;
  const std::string tokens = dir.File("tokens");
  const std::string first(20, 'a'), second(20, 'b');
  std::ofstream(tokens) << first << " admin:*\n";
  ServerProcess server(dir.File("data"), dir.File("log"),
                       {absl::StrCat("--tokens_file=", tokens)});
  ASSERT_TRUE(server.WaitUntilReady());
  Client client = Client::Connect(server.target());
  client.set_token(first);
  EXPECT_TRUE(client.CreateModel("m", *ParseAlgorithm("perceptron"), 1).ok());

  std::ofstream(tokens, std::ios::trunc) << second << " admin:*\n";
  kill(server.pid(), SIGHUP);
  absl::Status old = absl::OkStatus();
  for (int i = 0; i < 100 && old.ok(); ++i) {
    old = client.GetModel("m").status();
    if (old.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(absl::IsUnauthenticated(old)) << old;
  client.set_token(second);
  EXPECT_TRUE(client.GetModel("m").ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  const std::string log = ReadFile(dir.File("log"));
  EXPECT_THAT(log, HasSubstr("listening on 127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("no TLS, bearer tokens"));
  EXPECT_THAT(log, HasSubstr("SIGHUP: tokens reloaded"));
}

TEST(ProcessTest, JsonLogLinesTieACallToItsRequestId) {
  TempDir dir;
  ServerProcess server(dir.File("data"), dir.File("log"),
                       {"--log_format=json", "--log_level=debug"});
  ASSERT_TRUE(server.WaitUntilReady());
  auto stub = v1::HalfspaceService::NewStub(Connected(grpc::CreateChannel(
      server.target(), grpc::InsecureChannelCredentials())));
  grpc::ClientContext context;
  context.AddMetadata("x-request-id", "create-0042");
  v1::CreateModelRequest create;
  create.set_model("m");
  *create.mutable_algorithm() = *ParseAlgorithm("perceptron");
  create.set_dimension(2);
  v1::CreateModelResponse created;
  ASSERT_TRUE(stub->CreateModel(&context, create, &created).ok());
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::istringstream lines(ReadFile(dir.File("log")));
  std::string line;
  int objects = 0;
  bool tied = false;
  while (std::getline(lines, line)) {
    EXPECT_THAT(line, ::testing::MatchesRegex(R"(\{"time":".*"\})")) << line;
    ++objects;
    tied |=
        line.find(R"("request_id":"create-0042","msg":"created model 'm')") !=
        std::string::npos;
  }
  EXPECT_GT(objects, 3);
  EXPECT_TRUE(tied) << ReadFile(dir.File("log"));
}

TEST(ProcessTest, ASecondServerOnAPortInUseExitsAndSaysWhy) {
  TempDir dir;
  ServerProcess first(dir.File("data1"), dir.File("log1"));
  ASSERT_TRUE(first.WaitUntilReady());
  ServerProcess second(dir.File("data2"), dir.File("log2"), {}, first.port());
  EXPECT_EQ(second.Wait(), 1);
  EXPECT_THAT(ReadFile(dir.File("log2")), HasSubstr("cannot listen on"));
}

TEST(ProcessTest, ServesOnAUnixSocketAndReplacesOnlyAStaleOne) {
  TempDir dir;
  const std::string socket = dir.File("halfspace.sock");
  const std::string address = absl::StrCat("unix:", socket);
  uint64_t seen = 0;
  {
    ServerProcess server(dir.File("data"), dir.File("log1"), {}, address);
    ASSERT_TRUE(server.WaitUntilReady()) << ReadFile(dir.File("log1"));
    Client client = Client::Connect(address);
    ASSERT_TRUE(
        client.CreateModel("notes", *ParseAlgorithm("perceptron"), 2).ok());
    ASSERT_TRUE(client.Fit("notes", {{{1, 2}, 1}, {{2, 1}, -1}}).ok());
    absl::StatusOr<v1::Model> model = client.GetModel("notes");
    ASSERT_TRUE(model.ok()) << model.status();
    seen = model->stats().examples_seen();
    ASSERT_GT(seen, 0u);

    // A second server on the socket in use exits; the first goes on.
    ServerProcess second(dir.File("data2"), dir.File("log2"), {}, address);
    EXPECT_EQ(second.Wait(), 1);
    EXPECT_THAT(ReadFile(dir.File("log2")),
                HasSubstr("a server is answering there"));
    model = client.GetModel("notes");
    ASSERT_TRUE(model.ok()) << model.status();
    EXPECT_EQ(model->stats().examples_seen(), seen);
    server.Stop(SIGKILL);  // leaves its socket file behind
  }
  ASSERT_TRUE(std::filesystem::exists(socket));
  ServerProcess restarted(dir.File("data"), dir.File("log3"), {}, address);
  ASSERT_TRUE(restarted.WaitUntilReady()) << ReadFile(dir.File("log3"));
  absl::StatusOr<v1::Model> model = Client::Connect(address).GetModel("notes");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->stats().examples_seen(), seen) << "acknowledged, so kept";
  EXPECT_EQ(restarted.Stop(SIGTERM), 0);
  EXPECT_FALSE(std::filesystem::exists(socket)) << "left at a clean stop";
}

TEST(ProcessTest, ASecondServerOnADataDirectoryInUseExitsAndSaysWhy) {
  TempDir dir;
  ServerProcess first(dir.File("data"), dir.File("log1"));
  ASSERT_TRUE(first.WaitUntilReady());
  ServerProcess second(dir.File("data"), dir.File("log2"));
  EXPECT_EQ(second.Wait(), 1);
  EXPECT_THAT(ReadFile(dir.File("log2")), HasSubstr("is in use by another"));
}

// Parses one line of the tool's --json output as `message`, ignoring the
// fields the tool adds (a result's "index").
template <typename Message>
Message FromJson(const std::string& line) {
  Message message;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  EXPECT_TRUE(
      google::protobuf::util::JsonStringToMessage(line, &message, options).ok())
      << line;
  return message;
}

TEST(ProcessTest, CommandLineToolChecksHealthAndPrintsJson) {
  TempDir dir;
  std::string cli;
  std::string output;
  auto run = [&output](const std::string& command) {
    output.clear();
    return ExitStatus(command, output);
  };
  {
    ServerProcess server(dir.File("data"), dir.File("log"));
    ASSERT_TRUE(server.WaitUntilReady());
    cli =
        absl::StrCat(HALFSPACE_CLI_BINARY, " --server=", server.target(), " ");
    EXPECT_EQ(run(cli + "health"), 0);
    EXPECT_EQ(output, "SERVING\n");
    EXPECT_EQ(run(cli + "health halfspace.v1.HalfspaceService"), 0);
    EXPECT_EQ(run(cli + "health no.such.Service"), 1);
    EXPECT_THAT(output, HasSubstr("NOT_FOUND"));

    EXPECT_EQ(run(cli + "--json create notes --dimension=2"), 0);
    const v1::Model model = FromJson<v1::Model>(output);
    EXPECT_EQ(model.name(), "notes");
    EXPECT_TRUE(model.algorithm().has_perceptron());
    std::ofstream(dir.File("notes.csv")) << "1,1,2\n-1,2,1\n-1,0,0\n0,1,1\n";
    EXPECT_EQ(run(cli + "--json train notes " + dir.File("notes.csv")),
              1);  // one example was rejected
    const std::vector<std::string> lines =
        absl::StrSplit(output, '\n', absl::SkipEmpty());
    ASSERT_GE(lines.size(), 5u) << output;
    EXPECT_EQ(lines[1].rfind("{\"index\":1,", 0), 0u) << lines[1];
    const v1::ExampleResult second = FromJson<v1::ExampleResult>(lines[1]);
    EXPECT_EQ(second.score(), 5.0);  // w = (1, 2), b = 1 at (2, 1)
    EXPECT_TRUE(second.updated());
    const v1::ExampleResult rejected = FromJson<v1::ExampleResult>(lines[3]);
    EXPECT_EQ(rejected.error().code(), 3) << lines[3];
    EXPECT_EQ(lines[4],
              "{\"examples\":3,\"updates\":3,\"average_loss\":"
              "1.6666666666666667,\"rejected\":1}");
    EXPECT_EQ(run(cli + "--json predict notes 1,2"), 0);
    const v1::Prediction p = FromJson<v1::Prediction>(output);
    EXPECT_EQ(p.label(), 1);
    EXPECT_EQ(p.score(), 0.0);  // sign(0) = +1
    EXPECT_EQ(run(cli + "--json list"), 0);
    EXPECT_EQ(FromJson<v1::Model>(output).stats().examples_seen(), 3u);
    server.Stop(SIGTERM);
  }
  EXPECT_EQ(run(cli + "health"), 1);
  EXPECT_THAT(output, HasSubstr("UNAVAILABLE"));
}

// The command-line tool against a server process: `cli` is the command
// that reaches it, `dir` holds the server's data and the tests' files.
class CommandLineToolTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server.WaitUntilReady()); }

  TempDir dir;
  ServerProcess server{dir.File("data"), dir.File("log")};
  const std::string cli =
      absl::StrCat(HALFSPACE_CLI_BINARY, " --server=", server.target(), " ");
};

TEST_F(CommandLineToolTest, ReportsProgressOnStandardError) {
  RunCommand(cli +
             "create animals --dimension=2 "
             "--algorithm=softmax_regression");
  std::ofstream(dir.File("animals.csv")) << "cat,1,0\ndog,0,1\nbird,-1,-1\n";
  const std::string fit = absl::StrCat("fit animals ", dir.File("animals.csv"),
                                       " --max_passes=3 > ", dir.File("out"),
                                       " 2> ", dir.File("err"));
  // In braces: the redirections inside win over RunCommand's 2>&1.
  auto run = [&](const std::string& command) {
    RunCommand("{ " + cli + command + "; }");
  };
  run("--progress=always " + fit);
  EXPECT_THAT(ReadFile(dir.File("err")),
              HasSubstr("fit: 3 examples, "));  // not a terminal: plain lines
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("pass 1: "));
  EXPECT_THAT(ReadFile(dir.File("out")), HasSubstr("passes=3"));
  EXPECT_THAT(ReadFile(dir.File("out")), Not(HasSubstr("fit:")));
  run("--progress=never " + fit);
  EXPECT_EQ(ReadFile(dir.File("err")), "");
  run(fit);  // auto: quick work reports nothing
  EXPECT_EQ(ReadFile(dir.File("err")), "");
  run("--progress=always --summary train animals " + dir.File("animals.csv") +
      " 2> " + dir.File("err"));
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("train: 3 examples, "));
  EXPECT_THAT(ReadFile(dir.File("err")), HasSubstr("mistakes (accuracy "));
}

TEST_F(CommandLineToolTest, CreatesTrainsFitsAndPredicts) {
  EXPECT_THAT(RunCommand(cli + "create notes --dimension=2"),
              HasSubstr("perceptron { learning_rate: 1 margin_threshold: 0 }"));
  std::ofstream(dir.File("notes.csv"))
      << "# label,x1,x2\n1,2,3\n1,3,1\n-1,0,1\n-1,1,-1\n0,1,1\n";
  const std::string train =
      RunCommand(cli + "train notes " + dir.File("notes.csv"));
  EXPECT_THAT(train, HasSubstr("0: score=0  margin=0  updated=yes"));
  EXPECT_THAT(train, HasSubstr("4: error: label is 0"));
  EXPECT_THAT(train, HasSubstr("examples=4  updates=3  average_loss="));
  EXPECT_THAT(train, HasSubstr("1 of 5 examples were rejected"));
  std::ofstream(dir.File("clean.csv")) << "1,2,3\n1,3,1\n-1,0,1\n-1,1,-1\n";
  EXPECT_THAT(RunCommand(cli + "fit notes " + dir.File("clean.csv")),
              HasSubstr("converged=yes"));
  EXPECT_THAT(RunCommand(cli + "weights notes"), HasSubstr("w=1,1\nb=-3"));
  EXPECT_THAT(RunCommand(cli + "evaluate notes " + dir.File("clean.csv")),
              HasSubstr("examples=4  rejected=0  accuracy=1\n"));
  EXPECT_THAT(RunCommand(cli + "predict notes 3,1"),
              HasSubstr("label=1  score=1  distance=0.707107"));
  EXPECT_THAT(RunCommand(cli + "list"), HasSubstr("examples_seen=16"));
  EXPECT_THAT(RunCommand(cli + "get nope"), HasSubstr("NOT_FOUND"));
  EXPECT_THAT(RunCommand(cli + "export notes " + dir.File("notes.hspm")),
              HasSubstr("exported 'notes' to "));
  EXPECT_THAT(RunCommand(cli + "import copy " + dir.File("notes.hspm")),
              HasSubstr("copy  perceptron"));
  EXPECT_THAT(RunCommand(cli + "weights copy"), HasSubstr("w=1,1\nb=-3"));
  EXPECT_THAT(
      RunCommand(cli + "create lr --dimension=2 "
                       "--algorithm='sgd { loss: LOSS_LOG alpha: 0.01 }'"),
      HasSubstr("sgd { learning_rate: 1 loss: LOSS_LOG "
                "penalty: PENALTY_L2 alpha: 0.01"));
  EXPECT_THAT(RunCommand(cli + "create animals --dimension=2 "
                               "--algorithm=multiclass_perceptron "
                               "--classes=cat,dog"),
              HasSubstr("classes: cat,dog"));
  std::ofstream(dir.File("animals.csv")) << "cat,1,0\ndog,0,1\nbird,-1,-1\n";
  EXPECT_THAT(RunCommand(cli + "fit animals " + dir.File("animals.csv")),
              HasSubstr("converged=yes"));
  EXPECT_THAT(RunCommand(cli + "predict animals -- -2,-2"),
              HasSubstr("class=bird  cat:"));
  EXPECT_THAT(RunCommand(cli + "create x --dimension=2 "
                               "--algorithm='perceptron { l2: 1 }'"),
              HasSubstr("is not an algorithm"));
  EXPECT_THAT(RunCommand(cli + "create x --dimension=2 --algorithm=svm"),
              HasSubstr("'svm' is not an algorithm"));
  std::ofstream(dir.File("fractional.csv")) << "0.5,1,1\n";
  EXPECT_THAT(RunCommand(cli + "train notes " + dir.File("fractional.csv")),
              HasSubstr("fractional.csv:1: the label 0.5 is not an integer"));
  // Training exits non-zero when an example was rejected, so that a shell
  // can tell.
  ASSERT_THAT(RunCommand(cli + "create piped --dimension=2"),
              HasSubstr("piped"));
  EXPECT_NE(std::system((cli + "train piped " + dir.File("notes.csv") +
                         " > /dev/null 2>&1")
                            .c_str()),
            0);
  // From a pipe, in LibSVM, totals only.
  const std::string piped =
      RunCommand("printf '1 1:2 2:3\\n-1 2:1\\n' | " + cli +
                 "train piped - --format=libsvm --summary");
  EXPECT_THAT(piped, HasSubstr("examples=2  updates="));
  EXPECT_THAT(piped, HasSubstr("rejected=0"));
  EXPECT_THAT(piped, Not(HasSubstr("0: score")));
  EXPECT_EQ(std::system(("printf '1 1:2 2:3\\n' | " + cli +
                         "train piped - --format=libsvm > /dev/null")
                            .c_str()),
            0);
  EXPECT_EQ(server.Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace halfspace
