// A client of a server's VW listener (server/vw_listener.h) for tests:
// writes lines, reads answer lines, over TCP loopback or a Unix socket.

#ifndef HALFSPACE_TESTS_VW_SOCKET_H_
#define HALFSPACE_TESTS_VW_SOCKET_H_

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace halfspace {

class VwSocket {
 public:
  explicit VwSocket(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at = {};
    at.sin_family = AF_INET;
    at.sin_port = htons(port);
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0;
    Timeout();
  }
  explicit VwSocket(const std::string& unix_path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un at = {};
    at.sun_family = AF_UNIX;
    std::memcpy(at.sun_path, unix_path.data(), unix_path.size());
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0;
    Timeout();
  }
  ~VwSocket() { close(fd_); }

  bool connected() const { return connected_; }

  void Send(absl::string_view text) {
    while (!text.empty()) {
      const ssize_t n = send(fd_, text.data(), text.size(), MSG_NOSIGNAL);
      ASSERT_GT(n, 0) << std::strerror(errno);
      text.remove_prefix(n);
    }
  }
  void CloseSend() { shutdown(fd_, SHUT_WR); }

  // The next n answer lines (fewer if the listener closes first, or after
  // the read timeout).
  std::vector<std::string> Lines(size_t n) {
    std::vector<std::string> lines;
    while (lines.size() < n) {
      const size_t end = buffer_.find('\n');
      if (end != std::string::npos) {
        lines.push_back(buffer_.substr(0, end));
        buffer_.erase(0, end + 1);
        continue;
      }
      char chunk[65536];
      const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) break;
      buffer_.append(chunk, got);
    }
    return lines;
  }

  // Whether the listener closed the connection (after what is buffered).
  bool Closed() {
    char c;
    return buffer_.empty() && recv(fd_, &c, 1, 0) == 0;
  }

 private:
  void Timeout() {
    timeval wait = {20, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

}  // namespace halfspace

#endif  // HALFSPACE_TESTS_VW_SOCKET_H_
