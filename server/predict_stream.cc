#include "server/predict_stream.h"

#include <string>

#include "server/feedback.h"
#include "server/model_stream.h"
#include "server/predict.h"

namespace halfspace {
namespace {

class PredictReactor final
    : public ModelStream<v1::PredictStreamRequest, v1::PredictStreamResponse> {
 public:
  PredictReactor(const ServiceParts& parts,
                 grpc::CallbackServerContext* context)
      : ModelStream("PredictStream", Permission::kPredict, parts, context) {
    Start(call().status());
  }

 private:
  absl::Status Answer(const std::string& model,
                      v1::PredictStreamRequest& request,
                      v1::PredictStreamResponse& response,
                      uint64_t& lsn) override {
    return PredictAndRemember(parts(), call().principal(), model, request,
                              scratch_, call().stop(), response, lsn);
  }

  PredictScratch scratch_;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* StartPredictStream(
    const ServiceParts& parts, grpc::CallbackServerContext* context) {
  return new PredictReactor(parts, context);
}

}  // namespace halfspace
