// HttpConnection: one keep-alive HTTP/1.1 client connection over plain blocking sockets, for the
// telemetry load generator and benchmark (POST a body, read the status, Retry-After and body; reads
// Content-Length and chunked replies). Connects lazily; any failure closes it and returns Unavailable,
// and the next Post() connects again. A 30 s receive timeout turns a silent server into a failure.
// Not thread-safe: one per thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::telemetry::loadgen {

class HttpConnection {
 public:
  HttpConnection(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~HttpConnection() { Close(); }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    in_.clear();
  }

  struct Reply {
    int status = 0;
    double retry_after_s = -1;  // -1: absent or not delta-seconds
    std::string status_line;
    std::string body;
  };

  // Sends one request and reads its reply. Unavailable on any connection failure (the caller
  // reconnects and retries).
  Result<Reply> Post(const std::string& head, std::string_view body) {
    if (fd_ < 0) GOVERN_RETURN_IF_ERROR(Connect());
    std::string req = head;
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    if (!WriteAll(req) || !WriteAll(body)) return Fail("send");
    Reply reply;
    size_t header_end;
    while ((header_end = in_.find("\r\n\r\n")) == std::string::npos) {
      if (!ReadMore()) return Fail("receive headers");
    }
    std::string_view head_view(in_.data(), header_end);
    size_t line_end = head_view.find("\r\n");
    reply.status_line = std::string(head_view.substr(0, line_end));
    if (reply.status_line.size() < 12 || reply.status_line.compare(0, 5, "HTTP/") != 0)
      return Fail("bad status line");
    reply.status = std::atoi(reply.status_line.c_str() + 9);
    int64_t content_length = -1;
    bool chunked = false, close = false;
    size_t pos = line_end == std::string_view::npos ? head_view.size() : line_end + 2;
    while (pos < head_view.size()) {
      size_t e = head_view.find("\r\n", pos);
      if (e == std::string_view::npos) e = head_view.size();
      std::string_view line = head_view.substr(pos, e - pos);
      pos = e + 2;
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      std::string name(line.substr(0, colon));
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (name == "content-length")
        content_length = std::atoll(std::string(value).c_str());
      else if (name == "transfer-encoding")
        chunked = value.find("chunked") != std::string_view::npos;
      else if (name == "connection")
        close = value.find("close") != std::string_view::npos;
      else if (name == "retry-after" && !value.empty() &&
               std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
        reply.retry_after_s = std::atof(std::string(value).c_str());
    }
    in_.erase(0, header_end + 4);
    if (chunked) {
      for (;;) {
        size_t e;
        while ((e = in_.find("\r\n")) == std::string::npos)
          if (!ReadMore()) return Fail("receive chunk");
        const size_t size = std::strtoul(in_.substr(0, e).c_str(), nullptr, 16);
        while (in_.size() < e + 2 + size + 2)
          if (!ReadMore()) return Fail("receive chunk");
        reply.body.append(in_, e + 2, size);
        in_.erase(0, e + 2 + size + 2);
        if (size == 0) break;  // (trailers are not expected from our server)
      }
    } else if (content_length > 0) {
      while (in_.size() < static_cast<size_t>(content_length))
        if (!ReadMore()) return Fail("receive body");
      reply.body = in_.substr(0, static_cast<size_t>(content_length));
      in_.erase(0, static_cast<size_t>(content_length));
    }
    if (close) Close();
    return reply;
  }

 private:
  Status Connect() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Unavailable(std::string("socket: ") + std::strerror(errno));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A server that stops answering counts as a lost connection (the batch is sent again), not a hang.
    timeval timeout{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    if (::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1) {
      Close();
      return InvalidArgument("not an IPv4 address: " + host_);
    }
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      Status s = Unavailable(std::string("connect: ") + std::strerror(errno));
      Close();
      return s;
    }
    return Status::Ok();
  }
  bool WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  bool ReadMore() {
    char buf[16384];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      in_.append(buf, static_cast<size_t>(n));
      return true;
    }
  }
  Status Fail(const char* what) {
    Close();
    return Unavailable(std::string("connection: ") + what);
  }

  std::string host_;
  int port_;
  int fd_ = -1;
  std::string in_;
};

}  // namespace govern::telemetry::loadgen
