// govern-dns-serve: serves zone files over UDP and TCP with the govern_dns library, for the e2e tests
// and benchmarks (the `govern serve dns` service replaces it in production).
//
//   govern-dns-serve --zone example.test.=FILE [--zone ...] [--address 127.0.0.1] [--port 5353]
//                    [--threads 1] [--sign DIR] [--algorithm 13|15] [--check]
//
// --sign DIR signs every zone online with one CSK per zone, kept in DIR/<zone>key (made on first run)
// and writes DIR/<zone>anchor (a delv trust-anchors block), DIR/<zone>ds and DIR/<zone>dnskey.
// --check parses the zones, prints them (signed, with an NSEC chain, under --sign) and exits. Prints
// "listening on PORT" once serving; stops on SIGTERM or SIGINT.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dns/dnssec.h"
#include "dns/rdata.h"
#include "dns/server.h"
#include "dns/wire.h"
#include "dns/zone.h"
#include "dns/zonefile.h"

namespace {
volatile sig_atomic_t stop_requested = 0;
void OnSignal(int) { stop_requested = 1; }

bool ReadFile(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}
bool WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << data;
  return static_cast<bool>(f);
}
int Usage() {
  std::fprintf(
      stderr,
      "usage: govern-dns-serve --zone NAME=FILE [--zone ...] [--address A] [--port N] [--threads N]\n"
      "                        [--sign DIR] [--algorithm 13|15] [--check]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace govern::dns;
  std::vector<std::pair<std::string, std::string>> zone_args;
  ServerOptions opt;
  opt.port = 5353;
  std::string sign_dir;
  int alg = 13;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--zone") {
      std::string v = next();
      size_t eq = v.find('=');
      if (eq == std::string::npos) return Usage();
      zone_args.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--address") {
      opt.address = next();
    } else if (a == "--port") {
      opt.port = static_cast<uint16_t>(std::stoi(next()));
    } else if (a == "--threads") {
      opt.udp_threads = std::stoi(next());
    } else if (a == "--sign") {
      sign_dir = next();
    } else if (a == "--algorithm") {
      alg = std::stoi(next());
    } else if (a == "--check") {
      check = true;
    } else {
      return Usage();
    }
  }
  if (zone_args.empty() || (alg != 13 && alg != 15)) return Usage();
  std::vector<std::shared_ptr<const Zone>> zones;
  for (auto& [name, file] : zone_args) {
    std::string text;
    if (!ReadFile(file, text)) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    auto records = ParseZoneFile(text, name);
    if (!records.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), records.status().message().c_str());
      return 1;
    }
    ZoneKeys keys;
    if (!sign_dir.empty()) {
      auto a = static_cast<Algorithm>(alg);
      std::string key_path = sign_dir + "/" + name + "key", key_text;
      std::shared_ptr<const SigningKey> key;
      if (ReadFile(key_path, key_text)) {
        auto k = SigningKey::FromPrivate(a, 257, key_text);
        if (!k.ok()) {
          std::fprintf(stderr, "%s: %s\n", key_path.c_str(), k.status().message().c_str());
          return 1;
        }
        key = std::make_shared<const SigningKey>(std::move(*k));
      } else {
        auto k = SigningKey::Generate(a, 257);
        if (!k.ok()) return 1;
        key = std::make_shared<const SigningKey>(std::move(*k));
        auto priv = key->Private();
        if (!priv.ok() || !WriteFile(key_path, *priv)) return 1;
      }
      keys.ksk = key;
      keys.zsk = key;
      std::string apex_text = name.back() == '.' ? name : name + ".";
      std::string dnskey = RdataToText(kDNSKEY, key->dnskey_rdata());
      // "257 3 13 BASE64" -> the trust-anchors block delv reads.
      std::string anchor = "trust-anchors {\n  " + apex_text + " static-key " +
                           dnskey.substr(0, dnskey.find(' ', 6)) + " \"" +
                           dnskey.substr(dnskey.find(' ', 6) + 1) + "\";\n};\n";
      WriteFile(sign_dir + "/" + name + "anchor", anchor);
      WriteFile(sign_dir + "/" + name + "dnskey", apex_text + " 3600 IN DNSKEY " + dnskey + "\n");
    }
    auto zone = Zone::Build(name, std::move(*records), keys);
    if (!zone.ok()) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), zone.status().message().c_str());
      return 1;
    }
    if (!sign_dir.empty()) WriteFile(sign_dir + "/" + name + "ds", PrintZoneFile((*zone)->DsRecords()));
    if (check)
      std::fputs(PrintZoneFile((*zone)->SignedRecords(static_cast<uint32_t>(::time(nullptr)))).c_str(),
                 stdout);
    zones.push_back(std::move(*zone));
  }
  if (check) return 0;
  auto holder = std::make_shared<ZoneSetHolder>(std::make_shared<const ZoneSet>(std::move(zones)));
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  auto server = Server::Start(opt, holder);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", (*server)->port());
  std::fflush(stdout);
  while (!stop_requested) ::usleep(100000);
  (*server)->Stop();
  return 0;
}
