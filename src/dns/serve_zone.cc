// govern-dns-serve: serves zone files over UDP and TCP with the govern_dns library, for the e2e tests
// and benchmarks (the `govern serve dns` service replaces it in production).
//
//   govern-dns-serve --zone example.test.=FILE [--zone ...] [--address 127.0.0.1] [--port 5353]
//                    [--threads 1] [--sign DIR] [--unsigned NAME]... [--algorithm 13|15] [--check]
//                    [--tsig NAME:hmac-sha256:BASE64]... [--allow-transfer "ZONE ADDR[/N]... [key=NAME]"]...
//                    [--notify "ZONE ADDR:PORT [key=NAME]"]... [--rrl-rate N] [--rrl-slip N]
//                    [--denial nsec3|compact] [--nsec3 | --nsec3-optout]
//
// SIGHUP re-reads every zone file and swaps the new zones in; zones whose serial moved are NOTIFYed
// to their --notify targets (and to them all at start).
// --denial: how signed zones deny online. nsec3 (the default, as for new zones of `govern serve dns`):
// from the zone's NSEC3 chain, each NSEC3 signed once (RFC 5155); compact: RFC 9824, one signature per
// answer for a name that does not exist.
// --nsec3 / --nsec3-optout: signed zones are transferred (and --check printed) with an NSEC3 chain
// (RFC 5155; 0 iterations, no salt, as RFC 9276 advises; opt-out leaves insecure delegations off it).
// With --denial nsec3 the chain is always NSEC3 (opt-out with --nsec3-optout) and online answers use it.
// --sign DIR signs every zone (but those named by --unsigned NAME) online with one CSK per zone, kept in
// DIR/<zone>key (made on first run) and writes DIR/<zone>anchor (a delv trust-anchors block), DIR/<zone>ds
// and DIR/<zone>dnskey.
// --check parses the zones, prints them (signed, with an NSEC chain, under --sign) and exits. Prints
// "listening on PORT" once serving; stops on SIGTERM or SIGINT.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "dns/dnssec.h"
#include "dns/notify.h"
#include "dns/rdata.h"
#include "dns/server.h"
#include "dns/wire.h"
#include "dns/zone.h"
#include "dns/zonefile.h"

namespace {
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
      "                        [--sign DIR] [--unsigned NAME]... [--algorithm 13|15] [--check]\n"
      "                        [--nsec3 | --nsec3-optout]\n"
      "                        [--tsig KEY]... [--allow-transfer ACL]... [--notify TARGET]...\n"
      "                        [--rrl-rate N] [--rrl-slip N] [--denial nsec3|compact]\n");
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
  TransferConfig xfr;
  std::vector<std::string> acl_args, notify_args;
  bool transfers = false;
  std::vector<std::string> unsigned_zones;  // left unsigned under --sign
  Nsec3Params nsec3;                        // transfer form of signed zones: NSEC3 instead of NSEC
  OnlineDenial denial = OnlineDenial::kNsec3;
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
    } else if (a == "--nsec3") {
      nsec3.enabled = true;
    } else if (a == "--nsec3-optout") {
      nsec3.enabled = true;
      nsec3.opt_out = true;
    } else if (a == "--denial") {
      std::string v = next();
      if (v == "nsec3") {
        denial = OnlineDenial::kNsec3;
      } else if (v == "compact") {
        denial = OnlineDenial::kCompact;
      } else {
        return Usage();
      }
    } else if (a == "--unsigned") {
      unsigned_zones.push_back(next());
    } else if (a == "--check") {
      check = true;
    } else if (a == "--tsig") {
      transfers = true;
      if (auto st = xfr.AddKey(next()); !st.ok()) {
        std::fprintf(stderr, "--tsig: %s\n", st.message().c_str());
        return 2;
      }
    } else if (a == "--allow-transfer") {
      transfers = true;
      acl_args.push_back(next());
    } else if (a == "--notify") {
      transfers = true;
      notify_args.push_back(next());
    } else if (a == "--rrl-rate") {
      opt.rrl.responses_per_second = std::stoi(next());
    } else if (a == "--rrl-slip") {
      opt.rrl.slip = std::stoi(next());
    } else {
      return Usage();
    }
  }
  if (zone_args.empty() || (alg != 13 && alg != 15)) return Usage();
  for (const auto& t : acl_args) {
    if (auto st = xfr.AddAcl(t); !st.ok()) {
      std::fprintf(stderr, "--allow-transfer: %s\n", st.message().c_str());
      return 2;
    }
  }
  for (const auto& t : notify_args) {
    if (auto st = xfr.AddNotify(t); !st.ok()) {
      std::fprintf(stderr, "--notify: %s\n", st.message().c_str());
      return 2;
    }
  }
  std::vector<std::shared_ptr<const Zone>> zones;
  auto load = [&]() -> bool {
    zones.clear();
    for (auto& [name, file] : zone_args) {
      std::string text;
      if (!ReadFile(file, text)) {
        std::fprintf(stderr, "cannot read %s\n", file.c_str());
        return false;
      }
      auto records = ParseZoneFile(text, name);
      if (!records.ok()) {
        std::fprintf(stderr, "%s: %s\n", file.c_str(), records.status().message().c_str());
        return false;
      }
      ZoneKeys keys;
      bool sign = !sign_dir.empty() &&
                  std::find(unsigned_zones.begin(), unsigned_zones.end(), name) == unsigned_zones.end();
      if (sign) {
        auto a = static_cast<Algorithm>(alg);
        std::string key_path = sign_dir + "/" + name + "key", key_text;
        std::shared_ptr<const SigningKey> key;
        if (ReadFile(key_path, key_text)) {
          auto k = SigningKey::FromPrivate(a, 257, key_text);
          if (!k.ok()) {
            std::fprintf(stderr, "%s: %s\n", key_path.c_str(), k.status().message().c_str());
            return false;
          }
          key = std::make_shared<const SigningKey>(std::move(*k));
        } else {
          auto k = SigningKey::Generate(a, 257);
          if (!k.ok()) return false;
          key = std::make_shared<const SigningKey>(std::move(*k));
          auto priv = key->Private();
          if (!priv.ok() || !WriteFile(key_path, *priv)) return false;
        }
        keys.ksk = key;
        keys.zsk = key;
        keys.nsec3 = nsec3;
        keys.online_denial = denial;
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
        return false;
      }
      if (sign) WriteFile(sign_dir + "/" + name + "ds", PrintZoneFile((*zone)->DsRecords()));
      if (check)
        std::fputs(PrintZoneFile((*zone)->SignedRecords(static_cast<uint32_t>(::time(nullptr)))).c_str(),
                   stdout);
      zones.push_back(std::move(*zone));
    }
    return true;
  };
  if (!load()) return 1;
  if (check) return 0;
  auto holder = std::make_shared<ZoneSetHolder>(std::make_shared<const ZoneSet>(zones));
  // The main thread sleeps in sigwait until a signal comes (no polling: the benchmark counts every
  // CPU-second of the process). Blocked here, before any thread starts, so every thread inherits the
  // mask and only sigwait takes them.
  sigset_t wait_for;
  sigemptyset(&wait_for);
  sigaddset(&wait_for, SIGTERM);
  sigaddset(&wait_for, SIGINT);
  sigaddset(&wait_for, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &wait_for, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<Notifier> notifier;
  if (transfers) {
    auto n = Notifier::Start(xfr.keyring, NotifyOptions{.attempts = 5, .first_timeout_ms = 500});
    if (!n.ok()) {
      std::fprintf(stderr, "%s\n", n.status().message().c_str());
      return 1;
    }
    notifier = std::move(*n);
    opt.transfers = std::make_shared<const Transfers>(xfr);
  }
  auto notify = [&](const Zone& z) {
    if (!notifier) return;
    auto targets = xfr.NotifyFor(z.apex());
    if (targets.empty()) return;
    const Node* apex = z.Find(z.apex());
    std::vector<Record> recs = z.Records();
    for (const auto& r : recs) {
      if (r.type != kSOA) continue;
      notifier->Send(apex ? apex->owner : z.apex(), z.soa().ttl, r.rdata, targets);
      break;
    }
  };
  auto server = Server::Start(opt, holder);
  if (!server.ok()) {
    std::fprintf(stderr, "%s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", (*server)->port());
  std::fflush(stdout);
  for (const auto& z : zones) notify(*z);
  while (true) {
    int sig = 0;
    if (sigwait(&wait_for, &sig) != 0 || sig != SIGHUP) break;
    auto before = holder->Load();
    if (!load()) {
      std::fprintf(stderr, "reload failed; still serving the old zones\n");
      continue;
    }
    holder->Store(std::make_shared<const ZoneSet>(zones));
    for (const auto& z : zones) {
      const Zone* old = before->Find(z->apex());
      if (old == nullptr || old->apex() != z->apex() || old->serial() != z->serial()) notify(*z);
    }
    std::printf("reloaded\n");
    std::fflush(stdout);
  }
  (*server)->Stop();
  return 0;
}
