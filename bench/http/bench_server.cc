// The server under test for bench/http/run: GET /hello answers a small JSON body over keep-alive.
// Usage: http_bench_server [--port N] [--workers N] [--reuse-port]. Prints "port=N" once
// listening, and stops gracefully on SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "net/http_server.h"
#include "net/problem.h"

int main(int argc, char** argv) {
  using namespace govern::net;
  ServerConfig cfg;
  cfg.workers = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--port") && i + 1 < argc)
      cfg.port = static_cast<uint16_t>(std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--workers") && i + 1 < argc)
      cfg.workers = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reuse-port"))
      cfg.reuse_port = true;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // the worker threads inherit the mask

  Router router;
  router.AddSync(Method::kGet, "/hello",
                 [](Request&) { return JsonResponse(R"({"message":"hello","ok":true})"); });
  Server server(cfg, std::move(router));
  govern::Status st = server.Start();
  if (!st.ok()) {
    std::fprintf(stderr, "http_bench_server: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("port=%u\n", server.port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  server.Stop();
  return 0;
}
