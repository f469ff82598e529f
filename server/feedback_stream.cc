#include "server/feedback_stream.h"

#include <string>

#include "server/feedback.h"
#include "server/model_stream.h"

namespace halfspace {
namespace {

class FeedbackReactor final : public ModelStream<v1::FeedbackStreamRequest,
                                                 v1::FeedbackStreamResponse> {
 public:
  FeedbackReactor(const ServiceParts& parts,
                  grpc::CallbackServerContext* context)
      : ModelStream("FeedbackStream", Permission::kTrain, parts, context) {
    Start(call().status());
  }

 private:
  absl::Status Answer(const std::string& model,
                      v1::FeedbackStreamRequest& request,
                      v1::FeedbackStreamResponse& response,
                      uint64_t& lsn) override {
    absl::StatusOr<std::shared_ptr<Model>> found =
        parts().registry->Lookup(model);
    if (!found.ok()) return found.status();
    v1::FeedbackRequest feedback;
    feedback.set_model(model);
    feedback.mutable_feedback()->Swap(request.mutable_feedback());
    v1::FeedbackResponse learned;
    absl::Status s =
        LearnFeedback(**found, parts(), feedback, call().stop(), learned, lsn);
    response.mutable_results()->Swap(learned.mutable_results());
    return s;
  }
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>*
StartFeedbackStream(const ServiceParts& parts,
                    grpc::CallbackServerContext* context) {
  return new FeedbackReactor(parts, context);
}

}  // namespace halfspace
