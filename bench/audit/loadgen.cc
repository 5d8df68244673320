// audit_loadgen: concurrent writers appending to `govern serve audit` replicas, for the e2e replica
// test and the benchmark.
//
//   audit_loadgen --urls http://127.0.0.1:7730,... --pg CONNINFO --orgs 50 --writers 64 --duration 10
//                 [--acked FILE] [--summary FILE] [--read-every N] [--org-prefix P] [--run-id ID]
//                 [--threads N]
//
// Makes an append and a read key per organisation (straight in PostgreSQL with the service's key
// library), then runs `writers` writers. Writer w appends to organisation (w + n) % orgs, one entry
// per request, with the idempotency key "<run>-w<w>-<n>"; on a connection error or a 5xx it retries
// the same key on the next replica until the deadline (plus a grace period to finish), so every
// append it started is acknowledged exactly once or reported as failed. Every ack goes to --acked as
// "org idempotency_key seq entry_hash"; with --read-every N, every Nth ack is read back at once from
// another replica (read-after-ack; its latency is reported). The summary (JSON) holds entries/s, the
// p50/p99 append latency, retries, failures, the read-after-ack median and the loadgen's own CPU
// seconds (cpu_s). Exit 1 when an append
// failed or was refused, or an acknowledged entry read back as 404.
//
// The writers are state machines on a few event-loop threads (--threads, default 2; epoll, non-blocking
// keep-alive connections: a writer's connection per replica it uses), not a thread each: the loadgen
// shares the cores with what it measures, and a thread per writer cost a wake-up and two context
// switches per request. Each writer still has one request in flight at a time, and every request is
// sent in one write (head and body together). A request unanswered for 30 s counts as a lost
// connection (retried like one).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "db/connection.h"
#include "report.h"
#include "services/audit/schema.h"
#include "services/keys/keys.h"

namespace {

using json = nlohmann::json;
using Steady = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> urls;
  std::string pg;
  int orgs = 1;
  int writers = 64;
  double duration_s = 10;
  std::string acked;
  std::string summary;
  int read_every = 0;
  std::string org_prefix = "org";
  std::string run_id;
  int threads = 2;
};

// One HTTP/1.1 reply parsed from the front of a connection's input.
struct Reply {
  int status = 0;
  bool close = false;
  std::string body;
};

// Parses a complete reply at the front of `in` (Content-Length or chunked, like the server sends) and
// removes it. 1: a reply; 0: more input needed; -1: not HTTP.
int TakeReply(std::string& in, Reply& out) {
  const size_t header_end = in.find("\r\n\r\n");
  if (header_end == std::string::npos) return 0;
  std::string_view head(in.data(), header_end);
  if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) return -1;
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (head[i] < '0' || head[i] > '9') return -1;
    status = status * 10 + (head[i] - '0');
  }
  int64_t content_length = -1;
  bool chunked = false, close = false;
  size_t pos = head.find("\r\n");
  pos = pos == std::string_view::npos ? head.size() : pos + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = line.substr(0, colon), value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    auto is = [&](std::string_view want) {
      return name.size() == want.size() &&
             std::equal(name.begin(), name.end(), want.begin(),
                        [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a + 32 : a) == b; });
    };
    if (is("content-length")) {
      content_length = 0;
      for (char c : value) {
        if (c < '0' || c > '9') break;
        content_length = content_length * 10 + (c - '0');
      }
    } else if (is("transfer-encoding")) {
      chunked = value.find("chunked") != std::string_view::npos;
    } else if (is("connection")) {
      close = value.find("close") != std::string_view::npos;
    }
  }
  size_t at = header_end + 4;
  out.body.clear();
  if (chunked) {
    for (;;) {
      const size_t e = in.find("\r\n", at);
      if (e == std::string::npos) return 0;
      const size_t size = std::strtoul(in.c_str() + at, nullptr, 16);
      if (in.size() < e + 2 + size + 2) return 0;
      out.body.append(in, e + 2, size);
      at = e + 2 + size + 2;
      if (size == 0) break;  // (trailers are not expected from our server)
    }
  } else if (content_length > 0) {
    if (in.size() < at + static_cast<size_t>(content_length)) return 0;
    out.body.assign(in, at, static_cast<size_t>(content_length));
    at += static_cast<size_t>(content_length);
  }
  out.status = status;
  out.close = close;
  in.erase(0, at);
  return 1;
}

void AppendInt(std::string& s, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

int Usage(const char* why) {
  std::fprintf(stderr, "audit_loadgen: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace govern;
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--urls") {
      std::stringstream ss(next());
      std::string u;
      while (std::getline(ss, u, ',')) o.urls.push_back(u);
    } else if (a == "--pg") {
      o.pg = next();
    } else if (a == "--orgs") {
      o.orgs = std::stoi(next());
    } else if (a == "--writers") {
      o.writers = std::stoi(next());
    } else if (a == "--duration") {
      o.duration_s = std::stod(next());
    } else if (a == "--acked") {
      o.acked = next();
    } else if (a == "--summary") {
      o.summary = next();
    } else if (a == "--read-every") {
      o.read_every = std::stoi(next());
    } else if (a == "--org-prefix") {
      o.org_prefix = next();
    } else if (a == "--threads") {
      o.threads = std::stoi(next());
    } else if (a == "--run-id") {
      o.run_id = next();
    } else {
      return Usage(("unknown argument " + a).c_str());
    }
  }
  if (o.urls.empty() || o.pg.empty() || o.orgs < 1 || o.writers < 1) {
    return Usage("--urls and --pg are required; --orgs and --writers must be positive");
  }
  if (o.run_id.empty())
    o.run_id = "r" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000007);

  // Keys, one append and one read key per organisation.
  std::vector<std::string> orgs, append_keys, read_keys;
  {
    auto conn = db::Connection::Connect(o.pg);
    if (!conn.ok()) return Usage(("connect: " + conn.status().message()).c_str());
    auto ok = (*conn)->ExecScript("SELECT 1");
    (void)ok;
    for (int i = 0; i < o.orgs; ++i) {
      std::string org = o.org_prefix + std::to_string(i);
      auto a = service_keys::CreateKey(**conn, audit_service::AuditKeyTable(), org, "append", "loadgen");
      auto r = service_keys::CreateKey(**conn, audit_service::AuditKeyTable(), org, "read", "loadgen");
      if (!a.ok() || !r.ok()) {
        return Usage(("create keys (is the audit service's schema in place?): " +
                      (a.ok() ? r.status() : a.status()).message())
                         .c_str());
      }
      orgs.push_back(org);
      append_keys.push_back(*a);
      read_keys.push_back(*r);
    }
  }

  // host:port of each replica (URLs are http://HOST:PORT).
  std::vector<std::pair<std::string, int>> targets;
  for (const std::string& u : o.urls) {
    std::string hp = u.substr(u.find("//") + 2);
    size_t colon = hp.rfind(':');
    if (colon == std::string::npos) return Usage("--urls must be http://HOST:PORT");
    targets.emplace_back(hp.substr(0, colon), std::stoi(hp.substr(colon + 1)));
  }
  std::mutex out_mu;
  std::map<std::string, int64_t> retry_reasons;       // why appends were retried (status and a few words)
  std::map<std::string, int64_t> read_error_reasons;  // why read-after-ack reads failed (not 404)
  std::FILE* acked = o.acked.empty() ? nullptr : std::fopen(o.acked.c_str(), "a");
  if (!o.acked.empty() && acked == nullptr) return Usage("cannot open --acked");
  const size_t nrep = targets.size();
  if (nrep > 255) return Usage("at most 255 --urls");
  // The fixed parts of each request: "POST ... Idempotency-Key: " per organisation and replica, the GET
  // per organisation and replica up to the seq.
  std::vector<std::vector<std::string>> post_head(orgs.size()), get_head(orgs.size());
  for (size_t g = 0; g < orgs.size(); ++g) {
    for (const auto& [host, port] : targets) {
      post_head[g].push_back("POST /v1/audit/" + orgs[g] + "/entries HTTP/1.1\r\nHost: " + host + ":" +
                             std::to_string(port) + "\r\nAuthorization: Bearer " + append_keys[g] +
                             "\r\nIdempotency-Key: ");
      get_head[g].push_back("GET /v1/audit/" + orgs[g] + "/entries/");
    }
  }
  std::vector<std::string> get_tail;  // after the seq, per replica and organisation: index g * nrep + r
  for (size_t g = 0; g < orgs.size(); ++g) {
    for (const auto& [host, port] : targets) {
      get_tail.push_back(" HTTP/1.1\r\nHost: " + host + ":" + std::to_string(port) +
                         "\r\nAuthorization: Bearer " + read_keys[g] + "\r\nContent-Length: 0\r\n\r\n");
    }
  }
  std::vector<sockaddr_in> addrs(nrep);
  for (size_t r = 0; r < nrep; ++r) {
    addrs[r].sin_family = AF_INET;
    addrs[r].sin_port = htons(static_cast<uint16_t>(targets[r].second));
    if (::inet_pton(AF_INET, targets[r].first.c_str(), &addrs[r].sin_addr) != 1)
      return Usage("--urls hosts must be IPv4 addresses");
  }

  std::atomic<int64_t> entries{0}, retries{0}, failed{0}, rejected{0}, read_failures{0}, read_errors{0};
  std::vector<bench::LatencyRecorder> lat(o.writers), reads(o.writers);
  const auto start = Steady::now();
  const auto stop_new =
      start + std::chrono::duration_cast<Steady::duration>(std::chrono::duration<double>(o.duration_s));
  const auto give_up = stop_new + std::chrono::seconds(60);  // an append in flight may retry this long
  constexpr auto kIoTimeout = std::chrono::seconds(30);      // a silent server: a lost connection
  constexpr auto kRetryPause = std::chrono::milliseconds(20);

  // A writer: one append (then maybe one read) in flight at a time, on its connection to a replica.
  struct Conn {
    int fd = -1;
    bool connecting = false;
    bool want_out = false;  // EPOLLOUT registered (connecting or a partial send)
    std::string in;
  };
  enum class Phase { kAppend, kRead, kPause, kDone };
  struct Writer {
    int w = 0;
    int64_t n = -1;  // next() counts up before each append
    int org = 0;
    size_t replica = 0;  // where appends go (moves on after a failure)
    size_t active = 0;   // the replica of the request in flight
    Phase phase = Phase::kAppend;
    std::string idem, body, req;
    size_t sent = 0;
    Steady::time_point t0, r0, deadline;  // deadline: of the I/O in flight, or the end of a pause
    std::vector<Conn> conns;
    std::string lines;
    Reply reply;
  };
  std::vector<Writer> ws(static_cast<size_t>(o.writers));
  const int nthreads = std::max(1, std::min(o.threads, o.writers));

  auto loop = [&](int t) {
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
      std::perror("audit_loadgen: epoll_create1");
      std::exit(2);
    }
    int live = 0;
    auto close_conn = [&](Conn& c) {
      if (c.fd >= 0) ::close(c.fd);  // (closing removes it from the epoll set)
      c.fd = -1;
      c.connecting = c.want_out = false;
      c.in.clear();
    };
    auto set_out = [&](Writer& wr, size_t r, bool out) {
      Conn& c = wr.conns[r];
      if (c.want_out == out) return;
      c.want_out = out;
      epoll_event ev{};
      ev.events = EPOLLIN | (out ? static_cast<uint32_t>(EPOLLOUT) : 0u);
      ev.data.u64 = (static_cast<uint64_t>(wr.w) << 8) | r;
      ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
    };
    std::function<void(Writer&)> next;
    // A failed connection or a 5xx for an append: the same key again on the next replica, after a pause.
    auto append_failed = [&](Writer& wr, std::string why) {
      ++retries;
      {
        std::lock_guard lk(out_mu);
        ++retry_reasons[why];
      }
      wr.replica = (wr.replica + 1) % nrep;
      wr.phase = Phase::kPause;
      wr.deadline = Steady::now() + kRetryPause;
    };
    auto read_failed = [&](Writer& wr, std::string why) {
      ++read_errors;  // the other replica was down (killed, restarting), or shed the read (503)
      {
        std::lock_guard lk(out_mu);
        ++read_error_reasons[why];
      }
      next(wr);
    };
    auto conn_failed = [&](Writer& wr, const char* what) {
      close_conn(wr.conns[wr.active]);
      std::string why = std::string("error connection: ") + what;
      if (wr.phase == Phase::kRead) return read_failed(wr, why.substr(0, 66));
      append_failed(wr, why.substr(0, 66));
    };
    // Writes what is left of wr.req; false when the connection failed (handled).
    auto flush = [&](Writer& wr) -> bool {
      Conn& c = wr.conns[wr.active];
      while (wr.sent < wr.req.size()) {
        ssize_t k = ::send(c.fd, wr.req.data() + wr.sent, wr.req.size() - wr.sent, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
          set_out(wr, wr.active, true);
          return true;
        }
        if (k <= 0) {
          conn_failed(wr, "send");
          return false;
        }
        wr.sent += static_cast<size_t>(k);
      }
      set_out(wr, wr.active, false);
      return true;
    };
    // Sends wr.req to replica r, connecting first when needed.
    auto send = [&](Writer& wr, size_t r) {
      wr.active = r;
      wr.sent = 0;
      wr.deadline = Steady::now() + kIoTimeout;
      Conn& c = wr.conns[r];
      if (c.fd < 0) {
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (c.fd < 0) return conn_failed(wr, "socket");
        int one = 1;
        ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int rc = ::connect(c.fd, reinterpret_cast<const sockaddr*>(&addrs[r]), sizeof addrs[r]);
        if (rc != 0 && errno != EINPROGRESS) return conn_failed(wr, std::strerror(errno));
        c.connecting = rc != 0;
        c.want_out = c.connecting;
        epoll_event ev{};
        ev.events = EPOLLIN | (c.connecting ? static_cast<uint32_t>(EPOLLOUT) : 0u);
        ev.data.u64 = (static_cast<uint64_t>(wr.w) << 8) | r;
        if (::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev) != 0) return conn_failed(wr, "epoll");
        if (c.connecting) return;
      }
      flush(wr);
    };
    auto send_append = [&](Writer& wr) {
      wr.phase = Phase::kAppend;
      wr.req = post_head[wr.org][wr.replica];
      wr.req += wr.idem;
      wr.req += "\r\nContent-Type: application/json\r\nContent-Length: ";
      AppendInt(wr.req, static_cast<int64_t>(wr.body.size()));
      wr.req += "\r\n\r\n";
      wr.req += wr.body;
      send(wr, wr.replica);
    };
    next = [&](Writer& wr) {
      if (wr.lines.size() > 64 * 1024 && acked != nullptr) {
        std::lock_guard lk(out_mu);
        std::fputs(wr.lines.c_str(), acked);
        wr.lines.clear();
      }
      ++wr.n;
      if (Steady::now() >= stop_new) {
        for (Conn& c : wr.conns) close_conn(c);
        wr.phase = Phase::kDone;
        --live;
        if (acked != nullptr) {
          std::lock_guard lk(out_mu);
          std::fputs(wr.lines.c_str(), acked);
        }
        return;
      }
      const int64_t n = wr.n;
      wr.org = static_cast<int>((wr.w + n) % o.orgs);
      wr.idem = o.run_id;
      wr.idem += "-w";
      AppendInt(wr.idem, wr.w);
      wr.idem += '-';
      AppendInt(wr.idem, n);
      wr.body = R"({"actor":"user)";
      AppendInt(wr.body, n % 97);
      wr.body += R"(","action":")";
      wr.body += n % 5 == 0 ? "doc.delete" : "doc.read";
      wr.body += R"(","target":"doc)";
      AppendInt(wr.body, n);
      wr.body += R"(","outcome":"success","details":{"writer":)";
      AppendInt(wr.body, wr.w);
      wr.body += R"(,"n":)";
      AppendInt(wr.body, n);
      wr.body += "}}";
      wr.t0 = Steady::now();
      send_append(wr);
    };
    auto on_reply = [&](Writer& wr, const Reply& r) {
      if (wr.phase == Phase::kRead) {
        if (r.status == 200) {
          reads[wr.w].Record(
              std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - wr.r0).count());
        } else if (r.status == 404) {
          ++read_failures;  // an acknowledged entry that another replica cannot see: a bug
        } else {
          return read_failed(wr, std::to_string(r.status) + " " + r.body.substr(0, 60));
        }
        return next(wr);
      }
      if (r.status == 200 || r.status == 201) {
        lat[wr.w].Record(std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - wr.t0).count());
        // "seq":N and "entry_hash":"..." without a full JSON parse (the loadgen shares the cores).
        uint64_t seq = 0;
        std::string_view hash;
        if (size_t at = r.body.find("\"seq\":"); at != std::string::npos) {
          std::from_chars(r.body.data() + at + 6, r.body.data() + r.body.size(), seq);
        }
        if (size_t at = r.body.find("\"entry_hash\":\""); at != std::string::npos)
          hash = std::string_view(r.body).substr(at + 14, 64);
        if (acked != nullptr) {
          wr.lines += orgs[wr.org];
          wr.lines += ' ';
          wr.lines += wr.idem;
          wr.lines += ' ';
          AppendInt(wr.lines, static_cast<int64_t>(seq));
          wr.lines += ' ';
          wr.lines += hash;
          wr.lines += '\n';
        }
        ++entries;
        if (o.read_every > 0 && wr.n % o.read_every == 0) {
          const size_t other = (wr.replica + 1) % nrep;
          wr.phase = Phase::kRead;
          wr.req = get_head[wr.org][other];
          AppendInt(wr.req, static_cast<int64_t>(seq));
          wr.req += get_tail[static_cast<size_t>(wr.org) * nrep + other];
          wr.r0 = Steady::now();
          return send(wr, other);
        }
        return next(wr);
      }
      if (r.status >= 500) return append_failed(wr, std::to_string(r.status) + " " + r.body.substr(0, 60));
      ++rejected;
      std::fprintf(stderr, "audit_loadgen: %d %s\n", r.status, r.body.substr(0, 200).c_str());
      next(wr);
    };
    auto on_event = [&](Writer& wr, size_t r, uint32_t events) {
      Conn& c = wr.conns[r];
      if (c.fd < 0) return;
      const bool busy = (wr.phase == Phase::kAppend || wr.phase == Phase::kRead) && wr.active == r;
      if (!busy) {  // an idle connection: the server closed it (or sent something unasked): drop it
        close_conn(c);
        return;
      }
      if (c.connecting) {
        if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
          return conn_failed(wr, "connect");
        c.connecting = false;
        if (!flush(wr)) return;
      } else if ((events & EPOLLOUT) != 0 && wr.sent < wr.req.size()) {
        if (!flush(wr)) return;
      }
      if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) == 0) return;
      char buf[16384];
      ssize_t k;
      do {
        k = ::recv(c.fd, buf, sizeof buf, 0);
      } while (k < 0 && errno == EINTR);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (k <= 0) return conn_failed(wr, "receive");
      c.in.append(buf, static_cast<size_t>(k));
      int got = TakeReply(c.in, wr.reply);
      if (got == 0) return;
      if (got < 0) return conn_failed(wr, "bad status line");
      if (wr.reply.close) close_conn(c);
      on_reply(wr, wr.reply);
    };

    for (int w = t; w < o.writers; w += nthreads) {
      Writer& wr = ws[static_cast<size_t>(w)];
      wr.w = w;
      wr.replica = static_cast<size_t>(w) % nrep;
      wr.conns.resize(nrep);
      ++live;
    }
    for (int w = t; w < o.writers; w += nthreads) next(ws[static_cast<size_t>(w)]);
    std::vector<epoll_event> evs(512);
    auto last_scan = Steady::now();
    while (live > 0) {
      int k = ::epoll_wait(ep, evs.data(), static_cast<int>(evs.size()), 5);
      for (int i = 0; i < k; ++i) {
        const uint64_t d = evs[static_cast<size_t>(i)].data.u64;
        on_event(ws[d >> 8], d & 0xff, evs[static_cast<size_t>(i)].events);
      }
      const auto now = Steady::now();
      if (now - last_scan < std::chrono::milliseconds(5)) continue;
      last_scan = now;
      for (int w = t; w < o.writers; w += nthreads) {  // pauses that ended, requests that timed out
        Writer& wr = ws[static_cast<size_t>(w)];
        if (wr.phase == Phase::kDone || now < wr.deadline) continue;
        if (wr.phase == Phase::kPause) {
          if (now >= give_up) {
            ++failed;
            next(wr);
          } else {
            send_append(wr);
          }
        } else {
          conn_failed(wr, "timed out");
        }
      }
    }
    ::close(ep);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nthreads));
  for (int t = 0; t < nthreads; ++t) threads.emplace_back(loop, t);
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Steady::now() - start).count();
  if (acked != nullptr) std::fclose(acked);
  // The load generator's own CPU (it shares the cores with the replicas and PostgreSQL).
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                       static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  bench::LatencyRecorder all, all_reads;
  for (auto& l : lat) all.Merge(l);
  for (auto& l : reads) all_reads.Merge(l);
  json s = {{"entries", entries.load()},
            {"seconds", secs},
            {"entries_per_s", static_cast<double>(entries.load()) / std::min(secs, o.duration_s + 1e-9)},
            {"p50_ms", all.Percentile(50) / 1e6},
            {"p99_ms", all.Percentile(99) / 1e6},
            {"retries", retries.load()},
            {"failed", failed.load()},
            {"rejected", rejected.load()},
            {"reads", all_reads.count()},
            {"read_after_ack_median_ms", all_reads.Percentile(50) / 1e6},
            {"read_failures", read_failures.load()},
            {"read_errors", read_errors.load()},
            {"retry_reasons", retry_reasons},
            {"read_error_reasons", read_error_reasons},
            {"cpu_s", cpu_s}};
  std::printf("%s\n", s.dump().c_str());
  if (!o.summary.empty()) {
    std::ofstream f(o.summary);
    f << s.dump() << "\n";
  }
  return failed.load() == 0 && rejected.load() == 0 && read_failures.load() == 0 ? 0 : 1;
}
