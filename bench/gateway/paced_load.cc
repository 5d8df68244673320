// gateway_paced_load: open-loop HTTP load at a fixed rate, for bench/gateway/run's paced rows (the overhead
// at 2,000-3,000 requests/s that BENCHMARKS.md states; wrk only runs closed-loop, wrk2 is not in Debian).
//   gateway_paced_load --port P --rate R [--seconds S] [--warmup S] [--conns C] [--host H] [--key KEY]
//                      [--model M]
// Request k is due at start + k/R whatever became of the earlier ones: it goes out at once on an idle
// keep-alive connection, or, when all C are busy, as soon as one is free. Latency is measured from when a
// request was due, so a server that falls behind is not hidden by the client slowing down with it
// ("coordinated omission"). Each request is a non-streamed chat completion (OpenAI format) with a
// virtual key; answers must be Content-Length framed. Prints one line over the requests due after the
// warm-up:
//   result rate=R seconds=S sent=N answered=A errors=E late=L p50_us=.. p90_us=.. p99_us=.. p999_us=..
//   max_us=..
// where late counts requests that waited for a free connection. Exit status 0 when every request was
// answered 2xx. One thread: epoll and a timerfd.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace {

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Conn {
  int fd = -1;
  bool busy = false;
  int64_t due = 0;  // when the request in flight was due
  std::string in;
};

[[noreturn]] void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s --port P --rate R [--seconds S] [--warmup S] [--conns C] [--host H] [--key KEY] "
               "[--model M]\n",
               argv0);
  std::exit(2);
}

// The length of the whole response at the front of `in` (head and Content-Length body), 0 while the head
// is incomplete, -1 when it has no Content-Length. Sets *status.
int64_t ResponseLength(const std::string& in, int* status) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return 0;
  *status = in.size() > 12 ? std::atoi(in.c_str() + 9) : 0;
  std::string head = in.substr(0, end + 2);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t cl = head.find("\r\ncontent-length:");
  if (cl == std::string::npos) return -1;
  return static_cast<int64_t>(end + 4) + std::atoll(head.c_str() + cl + 17);
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1", key = "gvg_bench", model = "gpt-stub";
  int port = 0, conns = 32;
  double rate = 0, seconds = 5, warmup = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) Usage(argv[0]);
    const char* v = argv[++i];
    if (a == "--port")
      port = std::atoi(v);
    else if (a == "--rate")
      rate = std::atof(v);
    else if (a == "--seconds")
      seconds = std::atof(v);
    else if (a == "--warmup")
      warmup = std::atof(v);
    else if (a == "--conns")
      conns = std::max(1, std::atoi(v));
    else if (a == "--host")
      host = v;
    else if (a == "--key")
      key = v;
    else if (a == "--model")
      model = v;
    else
      Usage(argv[0]);
  }
  if (port <= 0 || rate <= 0 || seconds <= 0 || warmup < 0) Usage(argv[0]);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "bad --host %s\n", host.c_str());
    return 2;
  }
  const std::string body = "{\"model\":\"" + model +
                           "\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                           "{\"role\":\"user\",\"content\":\"say hello to me\"}]}";
  const std::string request =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
      "\r\nAuthorization: Bearer " + key +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
      body;

  int ep = epoll_create1(EPOLL_CLOEXEC);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  epoll_event tev{};
  tev.events = EPOLLIN;
  tev.data.u64 = UINT64_MAX;
  epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &tev);

  std::vector<Conn> cs(static_cast<size_t>(conns));
  std::vector<size_t> idle;
  auto open_conn = [&](size_t i) -> bool {
    Conn& c = cs[i];
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.fd < 0 || connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
      return false;
    }
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int fl = fcntl(c.fd, F_GETFL);
    fcntl(c.fd, F_SETFL, fl | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = i;
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    c.busy = false;
    c.in.clear();
    idle.push_back(i);
    return true;
  };
  for (size_t i = 0; i < cs.size(); ++i) {
    if (!open_conn(i)) return 1;
  }

  const int64_t period = static_cast<int64_t>(1e9 / rate);
  const int64_t total = static_cast<int64_t>((warmup + seconds) * rate);
  const int64_t start = NowNs() + 1'000'000;  // 1 ms to arm the timer
  const int64_t measure_from = start + static_cast<int64_t>(warmup * 1e9);
  const int64_t give_up = start + static_cast<int64_t>((warmup + seconds + 30) * 1e9);
  int64_t next_k = 0, sent = 0, answered = 0, errors = 0, late = 0, in_flight = 0;
  std::deque<int64_t> backlog;  // due times of requests waiting for a free connection
  std::vector<int64_t> lat_ns;
  lat_ns.reserve(static_cast<size_t>(seconds * rate) + 16);

  auto send_on = [&](size_t i, int64_t due) {
    Conn& c = cs[i];
    c.busy = true;
    c.due = due;
    ++sent;
    ++in_flight;
    size_t off = 0;
    while (off < request.size()) {
      ssize_t n = ::send(c.fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
      if (n > 0) {
        off += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        break;  // a small request into an empty socket buffer: anything else is a broken connection
      }
    }
    if (off < request.size()) ++errors;  // the read side sees the connection fail and reopens it
  };
  auto dispatch = [&](int64_t due) {
    if (!idle.empty()) {
      size_t i = idle.back();
      idle.pop_back();
      send_on(i, due);
    } else {
      backlog.push_back(due);
    }
  };
  auto arm = [&](int64_t at) {
    itimerspec its{};
    its.it_value.tv_sec = at / 1'000'000'000;
    its.it_value.tv_nsec = at % 1'000'000'000;
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, nullptr);
  };
  auto freed = [&](size_t i) {
    cs[i].busy = false;
    if (!backlog.empty()) {
      int64_t due = backlog.front();
      backlog.pop_front();
      if (due >= measure_from) ++late;
      send_on(i, due);
    } else {
      idle.push_back(i);
    }
  };
  arm(start);

  epoll_event evs[64];
  while (next_k < total || in_flight > 0 || !backlog.empty()) {
    if (NowNs() > give_up) {
      std::fprintf(stderr, "gave up: %lld requests unanswered\n", static_cast<long long>(in_flight));
      errors += in_flight + static_cast<int64_t>(backlog.size());
      break;
    }
    int n = epoll_wait(ep, evs, 64, 1000);
    for (int e = 0; e < n; ++e) {
      if (evs[e].data.u64 == UINT64_MAX) {
        uint64_t expirations;
        (void)!read(tfd, &expirations, sizeof expirations);
        int64_t now = NowNs();
        while (next_k < total && start + next_k * period <= now) dispatch(start + next_k++ * period);
        if (next_k < total) arm(start + next_k * period);
        continue;
      }
      size_t i = static_cast<size_t>(evs[e].data.u64);
      Conn& c = cs[i];
      bool broken = false;
      char buf[16384];
      for (;;) {
        ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(r));
          continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        broken = true;  // closed or failed
        break;
      }
      while (c.busy) {
        int status = 0;
        int64_t len = ResponseLength(c.in, &status);
        if (len < 0) {
          broken = true;
          break;
        }
        if (len == 0 || static_cast<int64_t>(c.in.size()) < len) break;
        c.in.erase(0, static_cast<size_t>(len));
        int64_t now = NowNs();
        --in_flight;
        ++answered;
        if (status < 200 || status > 299) ++errors;
        if (c.due >= measure_from) lat_ns.push_back(now - c.due);
        freed(i);
      }
      if (broken) {
        if (c.busy) {
          --in_flight;
          ++errors;
        }
        epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
        close(c.fd);
        if (!open_conn(i)) return 1;
        idle.pop_back();
        freed(i);
      }
    }
  }

  std::sort(lat_ns.begin(), lat_ns.end());
  auto pct = [&](double p) -> long long {
    if (lat_ns.empty()) return 0;
    size_t idx = std::min(lat_ns.size() - 1, static_cast<size_t>(p * static_cast<double>(lat_ns.size())));
    return static_cast<long long>(lat_ns[idx] / 1000);
  };
  std::printf(
      "result rate=%.0f seconds=%.1f sent=%lld answered=%lld errors=%lld late=%lld p50_us=%lld p90_us=%lld "
      "p99_us=%lld p999_us=%lld max_us=%lld\n",
      rate, seconds, static_cast<long long>(sent), static_cast<long long>(answered),
      static_cast<long long>(errors), static_cast<long long>(late), pct(0.50), pct(0.90), pct(0.99),
      pct(0.999), lat_ns.empty() ? 0LL : static_cast<long long>(lat_ns.back() / 1000));
  return errors == 0 && answered == sent ? 0 : 1;
}
