// gateway_stream_load: holds N concurrent streaming chat completions (OpenAI format, "stream": true)
// open through a proxy, for bench/gateway/run's memory-per-open-stream rows.
//   gateway_stream_load --port P --streams N [--host 127.0.0.1] [--window S] [--key KEY] [--model M]
//                       [--tokens T] [--in-flight K] [--open-timeout S]
// Opens the N connections (at most K not yet answered at a time), sends one request on each, and waits
// until every stream has received its first SSE event; then prints "open N <seconds>" and holds them all
// for S seconds, counting the events ("data:" lines) each stream receives, then prints one "result" line:
//   result streams=N open=O failed=F min_events=a median_events=b max_events=c max_gap_ms=g stalled=s
// where the counts are per stream within the window, max_gap_ms is the longest time any stream went
// without an event in the window (measured from the window's start), and stalled counts streams with a
// gap over 5 s. A stream that ends, errs or answers other than 200 counts as failed. Exit status 0 when
// every stream was open through the whole window and none stalled. The soft fd limit is raised to the
// hard one. Plain epoll on one thread: it only has to keep up with one event per stream per second.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace {

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

struct Stream {
  int fd = -1;
  enum State { kIdle, kConnecting, kSent, kAnswered, kOpen, kFailed } state = kIdle;
  std::string out;      // request bytes not yet written
  std::string head;     // response bytes until the end of the status line
  std::string tail;     // last bytes of the previous read, so a "data:" split across reads still counts
  int64_t events = 0;   // "data:" lines seen
  int64_t at_window = 0;
  int64_t last_event_ms = 0;
  int64_t max_gap_ms = 0;
};

[[noreturn]] void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --port P --streams N [--host H] [--window S] [--key KEY] [--model M] [--tokens T] "
               "[--in-flight K] [--open-timeout S]\n",
               argv0);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1", key = "gvg_bench", model = "gpt-stub";
  int port = 0;
  int64_t n = 0, window_s = 10, tokens = 600, in_flight = 256, open_timeout_s = 300;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) Usage(argv[0]);
    const char* v = argv[++i];
    if (a == "--port")
      port = std::atoi(v);
    else if (a == "--streams")
      n = std::atoll(v);
    else if (a == "--host")
      host = v;
    else if (a == "--window")
      window_s = std::atoll(v);
    else if (a == "--key")
      key = v;
    else if (a == "--model")
      model = v;
    else if (a == "--tokens")
      tokens = std::atoll(v);
    else if (a == "--in-flight")
      in_flight = std::max<int64_t>(1, std::atoll(v));
    else if (a == "--open-timeout")
      open_timeout_s = std::atoll(v);
    else
      Usage(argv[0]);
  }
  if (port <= 0 || n <= 0) Usage(argv[0]);
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "bad --host %s\n", host.c_str());
    return 2;
  }
  const std::string body = "{\"model\":\"" + model +
                           "\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"say hello to me\"}]}";
  const std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                              "\r\nAuthorization: Bearer " + key +
                              "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
                              "x-stub-output-tokens: " +
                              std::to_string(tokens) + "\r\nContent-Length: " + std::to_string(body.size()) +
                              "\r\n\r\n" + body;

  int ep = epoll_create1(EPOLL_CLOEXEC);
  std::vector<Stream> streams(static_cast<size_t>(n));
  int64_t next = 0, pending = 0, open = 0, failed = 0;
  std::string first_error;
  bool in_window = false;
  int64_t window_start = 0;
  auto fail = [&](Stream& s, size_t idx, const std::string& why) {
    if (s.state == Stream::kFailed) return;
    if (s.state != Stream::kOpen) --pending;
    else --open;
    s.state = Stream::kFailed;
    ++failed;
    if (first_error.empty()) first_error = "stream " + std::to_string(idx) + ": " + why;
    if (s.fd >= 0) close(s.fd);
    s.fd = -1;
  };
  auto start_one = [&](size_t idx) {
    Stream& s = streams[idx];
    s.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ++pending;
    if (s.fd < 0) {
      fail(s, idx, std::string("socket: ") + std::strerror(errno));
      return;
    }
    int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    s.state = Stream::kConnecting;
    s.out = request;
    if (connect(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
      fail(s, idx, std::string("connect: ") + std::strerror(errno));
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.u64 = idx;
    epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev);
  };
  auto on_data = [&](Stream& s, size_t idx, std::string_view data) {
    if (s.state == Stream::kSent) {
      s.head.append(data);
      size_t eol = s.head.find("\r\n");
      if (eol == std::string::npos) return;
      if (s.head.compare(0, 12, "HTTP/1.1 200") != 0) {
        fail(s, idx, "answer " + s.head.substr(0, eol));
        return;
      }
      s.state = Stream::kAnswered;
      data = std::string_view(s.head);
    }
    // Count "data:" at line starts; the tail carries the last 6 bytes over to the next read.
    std::string joined = s.tail;
    joined.append(data);
    const size_t from = s.tail.size();
    size_t pos = 0;
    int64_t found = 0;
    while ((pos = joined.find("data:", pos)) != std::string::npos) {
      if (pos + 5 > from && (pos == 0 || joined[pos - 1] == '\n')) ++found;
      pos += 5;
    }
    s.tail = joined.size() > 6 ? joined.substr(joined.size() - 6) : joined;
    if (!s.head.empty()) {
      s.head.clear();
      s.head.shrink_to_fit();
    }
    if (joined.find("[DONE]") != std::string::npos) {
      fail(s, idx, "stream ended ([DONE]) before the window's end: raise --tokens");
      return;
    }
    if (found == 0) return;
    const int64_t now = NowMs();
    if (in_window) s.max_gap_ms = std::max(s.max_gap_ms, now - std::max(s.last_event_ms, window_start));
    s.last_event_ms = now;
    s.events += found;
    if (s.state == Stream::kAnswered) {
      s.state = Stream::kOpen;
      --pending;
      ++open;
    }
  };

  const int64_t t0 = NowMs();
  std::vector<epoll_event> evs(1024);
  std::vector<char> buf(64 * 1024);
  for (;;) {
    while (!in_window && next < n && pending < in_flight) start_one(static_cast<size_t>(next++));
    const int64_t now = NowMs();
    if (!in_window && next == n && pending == 0) {
      in_window = true;
      window_start = now;
      for (auto& s : streams) s.at_window = s.events;
      std::printf("open %lld %.1f failed %lld\n", static_cast<long long>(open), static_cast<double>(now - t0) / 1000.0,
                  static_cast<long long>(failed));
      std::fflush(stdout);
    }
    if (!in_window && now - t0 > open_timeout_s * 1000) {
      std::printf("open-timeout open=%lld pending=%lld failed=%lld\n", static_cast<long long>(open),
                  static_cast<long long>(pending), static_cast<long long>(failed));
      return 1;
    }
    if (in_window && now - window_start >= window_s * 1000) break;
    int k = epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 100);
    for (int e = 0; e < k; ++e) {
      const size_t idx = evs[e].data.u64;
      Stream& s = streams[idx];
      if (s.state == Stream::kFailed) continue;
      if (s.state == Stream::kConnecting && (evs[e].events & (EPOLLOUT | EPOLLERR))) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          fail(s, idx, std::string("connect: ") + std::strerror(err));
          continue;
        }
        ssize_t w = write(s.fd, s.out.data(), s.out.size());
        if (w < 0 && errno != EAGAIN) {
          fail(s, idx, std::string("write: ") + std::strerror(errno));
          continue;
        }
        if (w > 0) s.out.erase(0, static_cast<size_t>(w));
        if (s.out.empty()) {
          s.state = Stream::kSent;
          s.out.shrink_to_fit();
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.u64 = idx;
          epoll_ctl(ep, EPOLL_CTL_MOD, s.fd, &ev);
        }
        continue;
      }
      if (evs[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        for (;;) {
          ssize_t r = read(s.fd, buf.data(), buf.size());
          if (r > 0) {
            on_data(s, idx, std::string_view(buf.data(), static_cast<size_t>(r)));
            if (s.state == Stream::kFailed) break;
            continue;
          }
          if (r == 0) fail(s, idx, "closed by the server");
          else if (errno != EAGAIN) fail(s, idx, std::string("read: ") + std::strerror(errno));
          break;
        }
      }
    }
  }
  const int64_t end = NowMs();
  std::vector<int64_t> counts;
  int64_t max_gap = 0, stalled = 0;
  for (auto& s : streams) {
    if (s.state != Stream::kOpen) continue;
    counts.push_back(s.events - s.at_window);
    const int64_t gap = std::max(s.max_gap_ms, end - std::max(s.last_event_ms, window_start));
    max_gap = std::max(max_gap, gap);
    if (gap > 5000) ++stalled;
  }
  std::sort(counts.begin(), counts.end());
  auto at = [&](size_t i) { return counts.empty() ? 0LL : static_cast<long long>(counts[i]); };
  std::printf("result streams=%lld open=%lld failed=%lld min_events=%lld median_events=%lld max_events=%lld "
              "max_gap_ms=%lld stalled=%lld\n",
              static_cast<long long>(n), static_cast<long long>(open), static_cast<long long>(failed), at(0),
              at(counts.size() / 2), counts.empty() ? 0LL : at(counts.size() - 1), static_cast<long long>(max_gap),
              static_cast<long long>(stalled));
  if (!first_error.empty()) std::printf("first failure: %s\n", first_error.c_str());
  std::fflush(stdout);
  for (auto& s : streams)
    if (s.fd >= 0) close(s.fd);
  return failed == 0 && stalled == 0 && open == n ? 0 : 1;
}
