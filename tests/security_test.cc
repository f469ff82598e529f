// Who may call: bearer tokens with permissions per model name pattern, TLS
// and mutual TLS with certificates re-read while serving, health open to
// all, reflection that can be turned off.

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/halfspace_client.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/auth.h"
#include "src/proto/grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/temp_dir.h"
#include "tests/test_server.h"

namespace halfspace {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kAdmin[] = "admin-0123456789abcdef";
constexpr char kTrainer[] = "trainer-0123456789abcdef";
constexpr char kReader[] = "reader-0123456789abcdef";

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Writes the tokens file the tests share into `dir`; returns its path.
std::string WriteTokens(const TempDir& dir) {
  const std::string path = dir.File("tokens");
  WriteFile(path, absl::StrCat("# who          may\n", kAdmin, " admin:*\n",
                               kTrainer, "  train:spam-*   # the pipeline\n",
                               kReader, " predict:*\n"));
  return path;
}

class TokensTest : public ::testing::Test {
 protected:
  Client As(const std::string& token) {
    Client client = server_.NewClient();
    client.set_token(token);
    return client;
  }

  TempDir dir_;
  const std::string tokens_ = WriteTokens(dir_);
  TestServer server_{[this](ServerOptions& o) { o.tokens_file = tokens_; }};
  Client admin_ = As(kAdmin);
};

TEST_F(TokensTest, ACallWithoutAKnownTokenIsUnauthenticated) {
  ASSERT_TRUE(
      admin_.CreateModel("spam-1", TextAlgorithm("perceptron"), 1).ok());
  for (const std::string& token :
       {std::string(), std::string("not-a-token-at-all"),
        std::string(kAdmin) + "x"}) {
    absl::Status s = As(token).GetModel("spam-1").status();
    EXPECT_TRUE(absl::IsUnauthenticated(s)) << token << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("authorization: Bearer"));
  }
  // The streams too.
  std::unique_ptr<TrainingStream> stream = As("").Train("spam-1");
  (void)stream->Send({{{1}, 1}});
  EXPECT_TRUE(absl::IsUnauthenticated(stream->Finish()));
  std::unique_ptr<PredictionStream> predictions = As("").PredictStream();
  v1::PredictStreamRequest request;
  request.set_model("spam-1");
  request.add_instances()->add_dense(1);
  EXPECT_FALSE(predictions->Predict(request).ok());
  EXPECT_TRUE(absl::IsUnauthenticated(predictions->Finish()));
}

// Remembering predictions for delayed labels changes the model: it needs
// the train permission, as the feedback does.
TEST_F(TokensTest, RememberingAndFeedbackNeedTheTrainPermission) {
  ASSERT_TRUE(
      admin_.CreateModel("spam-1", TextAlgorithm("perceptron"), 1).ok());
  v1::PredictRequest remember;
  remember.set_model("spam-1");
  remember.set_remember(true);
  remember.add_instances()->add_dense(1);
  absl::StatusOr<std::vector<v1::Prediction>> denied =
      As(kReader).Predict(remember);
  EXPECT_TRUE(absl::IsPermissionDenied(denied.status())) << denied.status();
  std::unique_ptr<PredictionStream> stream = As(kReader).PredictStream();
  v1::PredictStreamRequest streamed;
  streamed.set_model("spam-1");
  streamed.set_remember(true);
  streamed.add_instances()->add_dense(1);
  EXPECT_TRUE(absl::IsPermissionDenied(stream->Predict(streamed).status()));
  absl::StatusOr<std::vector<v1::Prediction>> remembered =
      As(kTrainer).Predict(remember);
  ASSERT_TRUE(remembered.ok()) << remembered.status();
  v1::FeedbackRequest feedback;
  feedback.set_model("spam-1");
  feedback.add_feedback()->set_example_id((*remembered)[0].example_id());
  feedback.mutable_feedback(0)->set_label(1);
  EXPECT_TRUE(
      absl::IsPermissionDenied(As(kReader).Feedback(feedback).status()));
  absl::StatusOr<v1::FeedbackResponse> learned =
      As(kTrainer).Feedback(feedback);
  ASSERT_TRUE(learned.ok()) << learned.status();
  EXPECT_FALSE(learned->results(0).has_error());
}

TEST_F(TokensTest, EachTokenDoesWhatItsPermissionsAllowAndNoMore) {
  ASSERT_TRUE(
      admin_.CreateModel("spam-1", TextAlgorithm("perceptron"), 1).ok());
  ASSERT_TRUE(admin_.CreateModel("ham", TextAlgorithm("perceptron"), 1).ok());
  Client trainer = As(kTrainer);
  Client reader = As(kReader);

  // The trainer trains spam-*, and may read what it trains.
  std::unique_ptr<TrainingStream> stream = trainer.Train("spam-1");
  ASSERT_TRUE(stream->Send({{{1}, 1}}).ok());
  ASSERT_TRUE(stream->Receive().ok());
  EXPECT_TRUE(trainer.Predict("spam-1", {{1}}).ok());
  // ... but nothing else.
  stream = trainer.Train("ham");
  (void)stream->Send({{{1}, 1}});
  absl::Status denied = stream->Finish();
  EXPECT_TRUE(absl::IsPermissionDenied(denied)) << denied;
  EXPECT_THAT(denied.message(),
              HasSubstr("this token has no train permission on model 'ham'"));
  EXPECT_TRUE(absl::IsPermissionDenied(trainer.Predict("ham", {{1}}).status()));
  std::unique_ptr<PredictionStream> predictions = trainer.PredictStream();
  v1::PredictStreamRequest request;
  request.add_instances()->add_dense(1);
  for (const char* model : {"spam-1", "ham", "spam-1"}) {
    request.set_model(model);
    absl::Status s = predictions->Predict(request).status();
    EXPECT_EQ(absl::IsPermissionDenied(s), model == std::string("ham")) << s;
  }
  EXPECT_TRUE(predictions->Finish().ok());  // a denial is in-band
  EXPECT_TRUE(absl::IsPermissionDenied(trainer.DeleteModel("spam-1")));

  // The reader reads everything and changes nothing.
  EXPECT_TRUE(reader.Predict("ham", {{1}}).ok());
  predictions = reader.PredictStream();
  request.set_model("ham");
  EXPECT_TRUE(predictions->Predict(request).ok());
  EXPECT_TRUE(predictions->Finish().ok());
  EXPECT_TRUE(reader.GetWeights("spam-1").ok());
  EXPECT_TRUE(absl::IsPermissionDenied(reader.DeleteModel("ham")));
  EXPECT_TRUE(absl::IsPermissionDenied(
      reader.CreateModel("new", TextAlgorithm("perceptron"), 1).status()));
  EXPECT_TRUE(
      absl::IsPermissionDenied(reader.SetWeights("ham", {1}, 0).status()));
  stream = reader.Train("spam-1");
  (void)stream->Send({{{1}, 1}});
  EXPECT_TRUE(absl::IsPermissionDenied(stream->Finish()));

  // The admin does everything.
  EXPECT_TRUE(admin_.SetWeights("ham", {2}, 1).ok());
  EXPECT_TRUE(admin_.DeleteModel("ham").ok());
  EXPECT_EQ(admin_.GetModel("spam-1")->stats().examples_seen(), 1u);
}

TEST_F(TokensTest, ADenialDoesNotTellWhetherAModelExists) {
  ASSERT_TRUE(admin_.CreateModel("ham", TextAlgorithm("perceptron"), 1).ok());
  Client trainer = As(kTrainer);
  absl::Status exists = trainer.GetModel("ham").status();
  absl::Status missing = trainer.GetModel("eggs").status();
  EXPECT_TRUE(absl::IsPermissionDenied(exists));
  EXPECT_TRUE(absl::IsPermissionDenied(missing));
  EXPECT_EQ(std::string(exists.message()).find("ham") != std::string::npos,
            std::string(missing.message()).find("eggs") != std::string::npos);
  // Where it may look, it learns what anyone would.
  EXPECT_TRUE(absl::IsNotFound(trainer.GetModel("spam-none").status()));
}

TEST_F(TokensTest, ListModelsShowsOnlyTheModelsATokenMaySee) {
  for (const char* name : {"ham", "spam-1", "spam-2"}) {
    ASSERT_TRUE(admin_.CreateModel(name, TextAlgorithm("perceptron"), 1).ok());
  }
  auto names = [](Client& client) {
    std::vector<std::string> out;
    absl::StatusOr<std::vector<v1::Model>> models = client.ListModels();
    EXPECT_TRUE(models.ok()) << models.status();
    if (models.ok()) {
      for (const v1::Model& m : *models) out.push_back(m.name());
    }
    return out;
  };
  Client trainer = As(kTrainer);
  EXPECT_THAT(names(trainer), ElementsAre("spam-1", "spam-2"));
  EXPECT_THAT(names(admin_), ElementsAre("ham", "spam-1", "spam-2"));
}

TEST_F(TokensTest, HealthNeedsNoToken) {
  auto health = grpc::health::v1::Health::NewStub(server_.NewChannel());
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(health->Check(&context, request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(TokensTest, ReloadingTheFileChangesWhoMayCall) {
  Client trainer = As(kTrainer);
  EXPECT_TRUE(absl::IsNotFound(trainer.GetModel("spam-1").status()));
  WriteFile(tokens_, absl::StrCat(kAdmin, " admin:*\n"));
  ASSERT_TRUE(server_.server().ReloadTokens().ok());
  EXPECT_TRUE(absl::IsUnauthenticated(trainer.GetModel("spam-1").status()));
  // A file that does not parse leaves the tokens in force.
  WriteFile(tokens_, "short admin:*\n");
  absl::Status bad = server_.server().ReloadTokens();
  EXPECT_THAT(bad.message(),
              HasSubstr("line 1: a token must have at least 16"));
  EXPECT_TRUE(absl::IsNotFound(admin_.GetModel("spam-1").status()));
}

TEST(TokenPolicyTest, RefusesFilesItCannotEnforce) {
  const std::string token(16, 'x');
  for (const auto& [text, why] :
       std::vector<std::pair<std::string, std::string>>{
           {token, "line 1: the token grants nothing"},
           {token + " root:*", "unknown permission 'root'"},
           {token + " admin:", "has no pattern"},
           {"\n" + token + " admin:*\n" + token + " predict:*",
            "line 3: the token is listed twice"},
           {token + " predict:* calls_per_second=-0.5", "a number >= 0"},
           {token + " predict:* examples_burst=nan", "a number >= 0"},
       }) {
    absl::StatusOr<std::shared_ptr<const TokenPolicy>> policy =
        TokenPolicy::Parse(text);
    EXPECT_TRUE(absl::IsInvalidArgument(policy.status())) << text;
    EXPECT_THAT(policy.status().message(), HasSubstr(why));
  }
  absl::StatusOr<std::shared_ptr<const TokenPolicy>> empty =
      TokenPolicy::Parse("# nobody\n\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
}

// The scheme in any case, as HTTP's; the token compared whole, its first
// byte as its last.
TEST(AuthenticatorTest, TakesTheSchemeInAnyCaseAndOnlyTheWholeToken) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<Authenticator>> auth =
      Authenticator::Open(WriteTokens(dir));
  ASSERT_TRUE(auth.ok()) << auth.status();
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER "}) {
    const std::string header = absl::StrCat(scheme, kReader);
    EXPECT_TRUE((*auth)->Authenticate(&header).ok()) << header;
  }
  std::string first = kReader, last = kReader;
  first.front() = 'R';
  last.back() = 'F';
  for (const std::string& header :
       {"Bearer " + first, "Bearer " + last,
        "Bearer " + std::string(kReader).substr(1), std::string("Bearer"),
        absl::StrCat("Basic ", kReader), std::string(kReader)}) {
    EXPECT_TRUE(
        absl::IsUnauthenticated((*auth)->Authenticate(&header).status()))
        << header;
  }
}

TEST(ReflectionTest, CanBeTurnedOff) {
  TestServer server([](ServerOptions& o) { o.reflection = false; });
  using grpc::reflection::v1alpha::ServerReflection;
  auto reflection = ServerReflection::NewStub(server.NewChannel());
  grpc::ClientContext context;
  auto stream = reflection->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest list;
  list.set_list_services("");
  stream->Write(list);
  grpc::reflection::v1alpha::ServerReflectionResponse services;
  EXPECT_FALSE(stream->Read(&services));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// --- TLS
// ----------------------------------------------------------------------

// A certificate authority and certificates it signs, made with openssl.
class Certificates {
 public:
  explicit Certificates(const std::string& name) : name_(name) {
    Run(absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt "
        "ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=",
        name, "-ca -keyout ", File("ca.key"), " -out ", File("ca.pem")));
    WriteFile(File("san.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  }

  // Makes `who`.pem and `who`.key, signed by the CA.
  void Issue(const std::string& who) {
    Run(absl::StrCat(
        "openssl req -newkey ec -pkeyopt "
        "ec_paramgen_curve:prime256v1 -nodes -subj /CN=",
        who, " -keyout ", File(who + ".key"), " -out ", File(who + ".csr")));
    Run(absl::StrCat("openssl x509 -req -days 2 -in ", File(who + ".csr"),
                     " -CA ", File("ca.pem"), " -CAkey ", File("ca.key"),
                     " -CAcreateserial -extfile ", File("san.ext"), " -out ",
                     File(who + ".pem")));
  }

  std::string File(const std::string& name) const {
    return dir_.File(name_ + "-" + name);
  }
  std::string Text(const std::string& name) const {
    return ReadText(File(name));
  }

 private:
  static void Run(const std::string& command) {
    ASSERT_EQ(std::system((command + " 2>/dev/null").c_str()), 0) << command;
  }

  const std::string name_;
  TempDir dir_;
};

// A client that trusts `ca` and, if given, shows `who`'s certificate.
Client TlsClient(const TestServer& server, const Certificates& ca,
                 const std::string& who = "") {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca.Text("ca.pem");
  if (!who.empty()) {
    options.pem_cert_chain = ca.Text(who + ".pem");
    options.pem_private_key = ca.Text(who + ".key");
  }
  return Client(
      grpc::CreateChannel(server.target(), grpc::SslCredentials(options)),
      absl::Seconds(5));
}

TEST(TlsTest, ServesTlsAndMutualTlsAndReloadsItsCertificate) {
  Certificates first("first");
  first.Issue("server");
  first.Issue("client");
  Certificates other("other");  // a CA the server does not trust
  other.Issue("client");
  TempDir dir;
  const std::string cert = dir.File("server.pem"), key = dir.File("server.key");
  WriteFile(cert, first.Text("server.pem"));
  WriteFile(key, first.Text("server.key"));
  TestServer server([&](ServerOptions& o) {
    o.tls.cert_file = cert;
    o.tls.key_file = key;
    o.tls.client_ca_file = first.File("ca.pem");
    o.tls.reload_interval = absl::Seconds(1);
  });

  EXPECT_TRUE(TlsClient(server, first, "client")
                  .CreateModel("m", TextAlgorithm("perceptron"), 1)
                  .ok());
  // No client certificate, one from a CA the server does not trust, or no
  // TLS at all: no call gets through.
  EXPECT_FALSE(TlsClient(server, first).GetModel("m").ok());
  Client untrusted(
      grpc::CreateChannel(
          server.target(),
          grpc::SslCredentials({first.Text("ca.pem"), other.Text("client.key"),
                                other.Text("client.pem")})),
      absl::Seconds(5));
  EXPECT_FALSE(untrusted.GetModel("m").ok());
  EXPECT_FALSE(server.NewClient().GetModel("m").ok());  // plaintext

  // A new certificate (from a new CA) is served without a restart.
  Certificates renewed("renewed");
  renewed.Issue("server");
  WriteFile(key, renewed.Text("server.key"));
  WriteFile(cert, renewed.Text("server.pem"));
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = renewed.Text("ca.pem");
  options.pem_cert_chain = first.Text("client.pem");
  options.pem_private_key = first.Text("client.key");
  absl::Status seen = absl::UnknownError("not tried");
  for (int i = 0; i < 100 && !seen.ok(); ++i) {
    // A new channel each time: an old one keeps its connection.
    Client client(
        grpc::CreateChannel(server.target(), grpc::SslCredentials(options)),
        absl::Seconds(5));
    seen = client.GetModel("m").status();
    if (!seen.ok()) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(seen.ok()) << seen;
}

TEST(TlsTest, WithoutClientCaAnyClientWithTlsGetsIn) {
  Certificates ca("plain");
  ca.Issue("server");
  TestServer server([&](ServerOptions& o) {
    o.tls.cert_file = ca.File("server.pem");
    o.tls.key_file = ca.File("server.key");
  });
  EXPECT_TRUE(TlsClient(server, ca)
                  .CreateModel("m", TextAlgorithm("perceptron"), 1)
                  .ok());
  EXPECT_FALSE(server.NewClient().GetModel("m").ok());
}

TEST(TlsTest, TheClientConnectsWithTlsAndAToken) {
  Certificates ca("both");
  ca.Issue("server");
  ca.Issue("client");
  TempDir dir;
  const std::string tokens = WriteTokens(dir);
  TestServer server([&](ServerOptions& o) {
    o.tls.cert_file = ca.File("server.pem");
    o.tls.key_file = ca.File("server.key");
    o.tls.client_ca_file = ca.File("ca.pem");
    o.tokens_file = tokens;
  });
  Client::ConnectOptions options;
  options.tls_ca_file = ca.File("ca.pem");
  options.tls_cert_file = ca.File("client.pem");
  options.tls_key_file = ca.File("client.key");
  options.token = kAdmin;
  absl::StatusOr<Client> admin = Client::Connect(server.target(), options);
  ASSERT_TRUE(admin.ok()) << admin.status();
  EXPECT_TRUE(admin->CreateModel("m", TextAlgorithm("perceptron"), 1).ok());
  options.token = "";
  EXPECT_TRUE(absl::IsUnauthenticated(
      Client::Connect(server.target(), options)->GetModel("m").status()));
  options.tls_ca_file = dir.File("missing.pem");
  EXPECT_TRUE(
      absl::IsNotFound(Client::Connect(server.target(), options).status()));
}

TEST(ServerOptionsTest, TlsAndTokenFlagsAreChecked) {
  ServerOptions options;
  options.tls.cert_file = "/nonexistent/cert.pem";
  EXPECT_THAT(ValidateServerOptions(options).message(),
              HasSubstr("--tls_cert and --tls_key: give both"));
  options.tls.key_file = "/nonexistent/key.pem";
  EXPECT_THAT(ValidateServerOptions(options).message(),
              HasSubstr("--tls_cert=/nonexistent/cert.pem: cannot read"));
  options = ServerOptions();
  options.tls.client_ca_file = "/etc/hostname";
  EXPECT_THAT(ValidateServerOptions(options).message(),
              HasSubstr("--tls_client_ca needs --tls_cert"));
  options = ServerOptions();
  options.tokens_file = "/nonexistent/tokens";
  EXPECT_THAT(ValidateServerOptions(options).message(),
              HasSubstr("--tokens_file=/nonexistent/tokens: cannot read"));
  // Without TLS or tokens, the default address is this machine's only.
  EXPECT_EQ(ListenAddress(ServerOptions()), "127.0.0.1:50051");
  options.tokens_file = "tokens";
  EXPECT_EQ(ListenAddress(options), "0.0.0.0:50051");
  options.listen_address = "10.0.0.1:7000";
  EXPECT_EQ(ListenAddress(options), "10.0.0.1:7000");
}

}  // namespace
}  // namespace halfspace
