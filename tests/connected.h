// A channel a test's first call can rely on.

#ifndef HALFSPACE_TESTS_CONNECTED_H_
#define HALFSPACE_TESTS_CONNECTED_H_

#include <chrono>
#include <memory>

#include "grpcpp/channel.h"

namespace halfspace {

// `channel`, once connected (or after 10 s, when its calls then fail and
// say why): a first call made without wait_for_ready never races the
// connection's setup, whose first attempt can fail on a busy machine.
inline std::shared_ptr<grpc::Channel> Connected(
    std::shared_ptr<grpc::Channel> channel) {
  channel->WaitForConnected(std::chrono::system_clock::now() +
                            std::chrono::seconds(10));
  return channel;
}

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_CONNECTED_H_
