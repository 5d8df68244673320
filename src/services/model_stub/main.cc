// model_stub: the model stub as a small program of its own, for e2e tests and benchmarks that
// should not need the whole govern binary. Prints "listening <host>:<port>" once serving; stops on
// SIGINT/SIGTERM.
//   model_stub [--listen 127.0.0.1:0] [--tokens-per-second N] [--threads N] [--aws-key ID:SECRET]
// --aws-key: Bedrock requests (/model/...) must be SigV4-signed with this key pair (bedrock_stub.h).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "services/http_config.h"
#include "services/model_stub/server.h"

int main(int argc, char** argv) {
  using namespace govern;
  std::string listen = "127.0.0.1:7760";
  model_stub::ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen")
      listen = next();
    else if (a == "--tokens-per-second")
      o.tokens_per_second = std::atoll(next().c_str());
    else if (a == "--threads")
      o.threads = std::atoi(next().c_str());
    else if (a == "--aws-key") {  // Bedrock: check SigV4 signatures with this key pair
      std::string v = next();
      o.stub.aws_access_key_id = v.substr(0, v.find(':'));
      o.stub.aws_secret_access_key = v.find(':') == std::string::npos ? "" : v.substr(v.find(':') + 1);
    } else {
      std::fprintf(stderr, "usage: %s [--listen HOST:PORT] [--tokens-per-second N] [--threads N]\n", argv[0]);
      return 2;
    }
  }
  auto addr = services::ParseListen(listen);
  if (!addr.ok()) {
    std::fprintf(stderr, "--listen: %s\n", addr.status().message().c_str());
    return 2;
  }
  o.host = addr->host.empty() ? "0.0.0.0" : addr->host;
  o.port = addr->port;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server threads start, so they inherit it
  auto server = model_stub::StubServer::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening %s\n", services::FormatListen(o.host, (*server)->port()).c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  return 0;
}
