// Lines of Vowpal Wabbit's daemon protocol as the server's listener reads
// them: each line's head (label, tag), its features parsed as a labelled
// or an unlabelled line, predicted and learned by each model kind, and the
// answer line made of the result or the error. An answer is one line,
// whatever the input's bytes and the model's numbers.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "client/example_text.h"
#include "server/convert.h"
#include "server/train_batch.h"
#include "server/vw_protocol.h"
#include "tests/fuzz/fuzz_models.h"

namespace halfspace {
namespace {

void Check(bool invariant) {
  if (!invariant) __builtin_trap();
}

// Whether `text` is one line: its only newline the last byte.
bool OneLine(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

}  // namespace
}  // namespace halfspace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace halfspace;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const std::shared_ptr<ResourceBudget> budget = FuzzBudget();
  std::vector<std::unique_ptr<Model>> models = FuzzModels(budget);
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    line = TrimLine(line);
    if (line.empty()) continue;
    std::string answer;
    absl::StatusOr<VwLineHead> head = ReadVwLineHead(line);
    if (!head.ok()) {
      AppendVwError(head.status(), answer);
      Check(OneLine(answer));
      continue;
    }
    Check(head->tag.find_first_of(" \t|") == absl::string_view::npos);
    // Any number an answer may show, from the line's first bytes.
    double any = 0;
    std::memcpy(&any, line.data(), std::min(line.size(), sizeof any));
    AppendVwAnswer(any, head->tag, answer);
    Check(OneLine(answer));
    for (std::unique_ptr<Model>& model : models) {
      v1::TrainRequest request;
      v1::Example& example = *request.add_examples();
      const std::string labelled =
          head->labeled ? std::string(line) : absl::StrCat("1 ", line);
      const absl::Status parsed = ParseExampleLine(
          labelled, ExampleFormat::kVw, model->multiclass(), example);
      answer.clear();
      if (!parsed.ok()) {
        AppendVwError(parsed, answer);
        Check(OneLine(answer));
        continue;
      }
      NamedParts named;
      const FeatureInput instance = FromProto(example.features(), named);
      Prediction prediction[1];
      std::vector<std::string> classes;
      if (model->Predict({&instance, 1}, prediction, &classes).ok() &&
          !model->multiclass()) {
        AppendVwAnswer(prediction[0].score, head->tag, answer);
        Check(OneLine(answer));
      }
      if (!head->labeled) continue;
      TrainScratch scratch;
      Check(PrepareRequest(*model, request, scratch).ok());
      TrainBatch batch;
      (void)LearnPrepared(Trainer(nullptr), *model, request, batch, scratch);
    }
  }
  return 0;
}
