#include "services/dns/service.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "base/file.h"
#include "base/log.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"
#include "db/connection.h"
#include "db/pool.h"
#include "dns/notify.h"
#include "dns/rdata.h"
#include "dns/server.h"
#include "dns/wire.h"
#include "dns/xfr.h"
#include "net/http_server.h"
#include "net/json.h"
#include "net/problem.h"
#include "services/dns/api_json.h"
#include "services/dns/store.h"
#include "services/dns/swap.h"
#include "services/http_config.h"
#include "services/job_queue.h"

namespace govern::dns_service {
namespace {

using namespace std::chrono_literals;

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, "read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The key that seals zone private keys: 64 hex digits in dns.key_file, or in <data_dir>/dns/zone-keys.key
// (made on first start). Replicas that share a database must share this key.
Result<std::shared_ptr<const crypto::Aes256GcmKey>> LoadSealingKey(const std::string& configured,
                                                                   const std::string& data_dir) {
  std::string path = configured;
  if (path.empty()) {
    if (data_dir.empty()) return FailedPrecondition("no dns.key_file and no data_dir to keep one in");
    std::string dir = data_dir + "/dns";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return ErrnoStatus(ec.value(), "create " + dir);
    path = dir + "/zone-keys.key";
    if (!std::filesystem::exists(path)) {
      std::array<uint8_t, 32> raw{};
      GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(raw));
      Status s = WriteNewFile(path, crypto::HexEncode(raw) + "\n", 0600);
      if (!s.ok() && s.code() != Code::kAlreadyExists) return s;
    }
  }
  GOVERN_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  auto raw = crypto::HexDecode(text);
  if (!raw.ok() || raw->size() != 32)
    return InvalidArgument(path + ": a zone-key sealing key is 64 hex digits");
  GOVERN_ASSIGN_OR_RETURN(crypto::Aes256GcmKey key, crypto::Aes256GcmKey::Create(*raw));
  return std::make_shared<const crypto::Aes256GcmKey>(std::move(key));
}

int HttpStatusFor(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
      return 409;
    case Code::kUnavailable:
      return 503;
    default:
      return 500;
  }
}

net::Response Problem(const Status& s, const net::Request& req) {
  return net::ProblemResponse(HttpStatusFor(s), s.message(), req.path);
}

nlohmann::json RecordJson(const dns::Record& r) {
  return {{"owner", dns::NameToText(r.owner)},
          {"type", dns::TypeToText(r.type)},
          {"ttl", r.ttl},
          {"rdata", dns::RdataToText(r.type, r.rdata)}};
}

class DnsService final : public services::Service {
 public:
  std::string_view name() const override { return "dns"; }
  std::string_view summary() const override {
    return "authoritative DNS (UDP/TCP, online DNSSEC) over zones in PostgreSQL, changed by an HTTP API; "
           "replicas follow changes by LISTEN/NOTIFY";
  }

  void DeclareConfig(config::Schema& schema) const override {
    schema.Add({.key = "dns.listen",
                .type = config::Type::kString,
                .default_value = "127.0.0.1:5353",
                .help = "UDP and TCP address of the DNS server. Port 0 picks a free port.",
                .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    schema.Add({.key = "dns.udp_threads",
                .type = config::Type::kInt,
                .default_value = "1",
                .help = "UDP threads (one SO_REUSEPORT socket each).",
                .min = 1,
                .max = 256});
    schema.Add({.key = "dns.api_listen",
                .type = config::Type::kString,
                .default_value = "127.0.0.1:8053",
                .help = "Address of the zone API (HTTP). Off when dns.api_token is empty.",
                .validate = [](std::string_view v) { return services::ParseListen(v).status(); }});
    schema.Add({.key = "dns.api_token",
                .type = config::Type::kString,
                .default_value = "",
                .help = "Bearer token for the zone API; empty: no API in this process (a replica).",
                .secret = true});
    schema.Add({.key = "dns.key_file",
                .type = config::Type::kString,
                .default_value = "",
                .help = "File with the 64-hex-digit key that seals zone private keys in the database; "
                        "empty: <data_dir>/dns/zone-keys.key, made on first start. Replicas must share it."});
    // Zone transfers to secondaries (AXFR/IXFR with TSIG) and NOTIFY: docs/dns.md "Secondaries".
    schema.Add({.key = "dns.transfer.tsig_keys",
                .type = config::Type::kStringList,
                .default_value = "",
                .help = "TSIG keys for transfers and NOTIFY, each NAME:hmac-sha256:BASE64 (or hmac-sha512), "
                        "as kdig -y takes them.",
                .secret = true});
    schema.Add({.key = "dns.transfer.acl",
                .type = config::Type::kStringList,
                .default_value = "",
                .help = "Who may transfer which zone, each 'ZONE ADDR[/PREFIX]... [key=NAME]...' (ZONE * for "
                        "every zone without its own entry; with key= a request must be signed by one of the "
                        "keys). Empty: no transfers."});
    schema.Add({.key = "dns.transfer.notify",
                .type = config::Type::kStringList,
                .default_value = "",
                .help =
                    "Secondaries told of every change (RFC 1996 NOTIFY), each 'ZONE ADDR:PORT [key=NAME]' "
                    "(ZONE * for every zone; [V6]:PORT for IPv6)."});
    schema.Add({.key = "dns.transfer.notify_attempts",
                .type = config::Type::kInt,
                .default_value = "5",
                .help = "NOTIFY sends per change and secondary before giving up (the secondary's refresh "
                        "timer still catches up).",
                .min = 1,
                .max = 20});
    schema.Add({.key = "dns.transfer.notify_timeout",
                .type = config::Type::kDuration,
                .default_value = "1s",
                .help = "Wait for a NOTIFY answer before the first resend; doubled after each send.",
                .min = 10,
                .max = 60000});
    schema.Add({.key = "dns.transfer.denial",
                .type = config::Type::kEnum,
                .default_value = "nsec",
                .help = "Authenticated denial in the transferred form of signed zones whose own answers use "
                        "compact denial (a zone's \"denial\": \"compact\"): an NSEC chain, or NSEC3 (RFC "
                        "5155; 0 iterations, no salt) with or without opt-out. Zones answering with NSEC3 "
                        "(the default for new zones) transfer that same chain.",
                .choices = {"nsec", "nsec3", "nsec3-optout"}});
    schema.Add({.key = "dns.transfer.journal_versions",
                .type = config::Type::kInt,
                .default_value = "32",
                .help =
                    "Versions of each zone kept for IXFR (in memory, and saved in the database so IXFR stays "
                    "incremental across restarts); older serials get a full transfer.",
                .min = 1,
                .max = 10000});
    // Key rollover (docs/dns.md "Key rollover"): defaults for POST .../keys/rollover.
    schema.Add({.key = "dns.rollover.propagation_delay",
                .type = config::Type::kDuration,
                .default_value = "1h",
                .help = "Key rollover: time for a zone change to reach every server and secondary; added to "
                        "the DNSKEY TTL before the new key signs, and to the largest TTL before the old key "
                        "goes. A rollover request may give its own (propagation_delay, seconds).",
                .min = 0,
                .max = int64_t{30} * 86400 * 1000});
    schema.Add({.key = "dns.rollover.parent_delay",
                .type = config::Type::kDuration,
                .default_value = "48h",
                .help = "Key rollover: time for the parent to replace the DS set with the one CDS/CDNSKEY "
                        "name, plus the parent's DS TTL; the old key stays in DNSKEY at least this long "
                        "after the new one signs. A rollover request may give its own (parent_delay).",
                .min = 0,
                .max = int64_t{30} * 86400 * 1000});
    schema.Add({.key = "dns.rollover.check_interval",
                .type = config::Type::kDuration,
                .default_value = "1s",
                .help = "How often each server looks for rollover phases that are due (one indexed query).",
                .min = 50,
                .max = 3600 * 1000});
    // Response rate limiting (UDP): off by default, as in BIND and Knot; docs/dns.md "Rate limiting".
    schema.Add({.key = "dns.rrl.rate",
                .type = config::Type::kInt,
                .default_value = "0",
                .help =
                    "Responses per second per client netblock and answer over UDP; 0 turns rate "
                    "limiting off. 20 suits a public authoritative server (BIND's documented example: 5-20).",
                .min = 0,
                .max = 65535});
    schema.Add({.key = "dns.rrl.slip",
                .type = config::Type::kInt,
                .default_value = "2",
                .help = "Every slip-th limited response is sent truncated (TC) so real clients retry over "
                        "TCP; 0 drops them all, 1 truncates them all.",
                .min = 0,
                .max = 10});
    schema.Add({.key = "dns.rrl.ipv4_prefix",
                .type = config::Type::kInt,
                .default_value = "24",
                .help = "IPv4 clients are counted together per netblock of this prefix length.",
                .min = 8,
                .max = 32});
    schema.Add({.key = "dns.rrl.ipv6_prefix",
                .type = config::Type::kInt,
                .default_value = "56",
                .help = "IPv6 clients are counted together per netblock of this prefix length.",
                .min = 16,
                .max = 128});
  }

  std::vector<db::Migration> Migrations() const override { return dns_service::Migrations(); }

  Status Start(const services::Context& ctx) override {
    ctx_ = ctx;
    if (ctx.db == nullptr) return FailedPrecondition("dns: needs the database");
    GOVERN_ASSIGN_OR_RETURN(auto key, LoadSealingKey(ctx.config->GetString("dns.key_file"), ctx.data_dir));
    std::string denial = ctx.config->GetString("dns.transfer.denial");
    dns::Nsec3Params nsec3{.enabled = denial != "nsec", .opt_out = denial == "nsec3-optout"};
    store_ = std::make_unique<Store>(ctx.db, key, nsec3);

    // LISTEN before the first load, so no change between them is missed.
    auto lease = ctx.db->Checkout();
    if (!lease.ok()) return lease.status().WithContext("dns: listener connection");
    listener_.emplace(std::move(*lease));
    GOVERN_RETURN_IF_ERROR((*listener_)->Listen(kNotifyChannel));
    seen_reconnects_ = (*listener_)->reconnects();
    GOVERN_ASSIGN_OR_RETURN(auto zones, store_->LoadAll());
    size_t n = zones.size();
    holder_ = std::make_shared<dns::ZoneSetHolder>(std::make_shared<const dns::ZoneSet>(std::move(zones)));

    GOVERN_ASSIGN_OR_RETURN(services::ListenAddress dns_addr,
                            services::ParseListen(ctx.config->GetString("dns.listen")));
    dns::ServerOptions so;
    so.address = dns_addr.host.empty() ? "0.0.0.0" : dns_addr.host;
    so.port = dns_addr.port;
    so.udp_threads = static_cast<int>(ctx.config->GetInt("dns.udp_threads"));
    so.rrl.responses_per_second = static_cast<int>(ctx.config->GetInt("dns.rrl.rate"));
    so.rrl.slip = static_cast<int>(ctx.config->GetInt("dns.rrl.slip"));
    so.rrl.ipv4_prefix = static_cast<int>(ctx.config->GetInt("dns.rrl.ipv4_prefix"));
    so.rrl.ipv6_prefix = static_cast<int>(ctx.config->GetInt("dns.rrl.ipv6_prefix"));
    // TSIG keys made through the API join the configured ones before ACLs and NOTIFY targets are read,
    // so those may name either.
    GOVERN_ASSIGN_OR_RETURN(auto api_tsig, store_->LoadTsigKeys());
    GOVERN_ASSIGN_OR_RETURN(transfer_, TransferConfigFrom(*ctx.config, api_tsig));
    transfers_ = std::make_shared<dns::Transfers>(transfer_);
    GOVERN_RETURN_IF_ERROR(RestoreJournal(ctx.data_dir));
    so.transfers = transfers_;
    if (!transfer_.notify.empty()) {
      dns::NotifyOptions no;
      no.attempts = static_cast<int>(ctx.config->GetInt("dns.transfer.notify_attempts"));
      no.first_timeout_ms = static_cast<int>(ctx.config->GetDuration("dns.transfer.notify_timeout").count());
      auto notifier = dns::Notifier::Start(transfer_.keyring, no);
      if (!notifier.ok()) return notifier.status().WithContext("dns: NOTIFY socket");
      notifier_ = std::move(*notifier);
    }
    auto server = dns::Server::Start(so, holder_);
    if (!server.ok())
      return server.status().WithContext("dns: start server on " + ctx.config->GetString("dns.listen"));
    server_ = std::move(*server);
    dns_host_ = so.address;
    NotifyChanged(nullptr, *holder_->Load());  // secondaries catch up with changes made while we were down
    watcher_ = std::thread([this] { Watch(); });
    // Every server moves rollover phases on when due (the first to lock a row does it; the others find
    // it moved), so rollovers advance with no API process running.
    rollover_interval_ = ctx.config->GetDuration("dns.rollover.check_interval");
    rollover_defaults_.propagation_delay =
        ctx.config->GetDuration("dns.rollover.propagation_delay").count() / 1000;
    rollover_defaults_.parent_delay = ctx.config->GetDuration("dns.rollover.parent_delay").count() / 1000;
    roller_ = std::thread([this] { Roll(); });

    token_ = ctx.config->GetString("dns.api_token");
    if (!token_.empty()) {
      GOVERN_ASSIGN_OR_RETURN(net::ServerConfig sc, services::MakeServerConfig(ctx, name()));
      GOVERN_ASSIGN_OR_RETURN(services::ListenAddress api,
                              services::ParseListen(ctx.config->GetString("dns.api_listen")));
      sc.address = api.host;
      sc.port = api.port;
      api_host_ = api.host;
      jobs_ = std::make_unique<services::JobQueue>(4, std::numeric_limits<size_t>::max());
      keys_ = std::make_unique<service_keys::KeyCache>(ctx.db, DnsKeyTable(),
                                                       service_keys::KeyCacheOptions{.clock = ctx.clock});
      net::Router router;
      AddRoutes(router);
      http_ = std::make_unique<net::Server>(std::move(sc), std::move(router));
      GOVERN_RETURN_IF_ERROR(http_->Start().WithContext("dns: start API server"));
    }
    log::Info("dns", "serving",
              {{"zones", n}, {"address", services::FormatListen(dns_host_, server_->port())}});
    return OkStatus();
  }

  std::vector<services::Endpoint> Endpoints() const override {
    std::vector<services::Endpoint> out;
    if (server_) {
      out.push_back({"dns", "dns/udp", services::FormatListen(dns_host_, server_->port())});
      out.push_back({"dns", "dns/tcp", services::FormatListen(dns_host_, server_->port())});
    }
    if (http_) out.push_back({"dns", "http", services::FormatListen(api_host_, http_->port())});
    return out;
  }

  void Stop() override {
    if (http_) http_->Stop();
    if (keys_) keys_->Shutdown();
    jobs_.reset();
    keys_.reset();
    stop_ = true;
    if (watcher_.joinable()) watcher_.join();
    if (roller_.joinable()) roller_.join();
    if (server_) server_->Stop();
    notifier_.reset();
    if (listener_) {
      (void)(*listener_)->Unlisten(kNotifyChannel);
      listener_.reset();
    }
  }

 private:
  // Rebuilds `zone` alone and swaps in a set that keeps every other zone as it was.
  Status ReloadZone(const std::string& zone) {
    auto apex = dns::NameFromText(zone);
    if (!apex.ok()) return apex.status();
    dns::LowerName(*apex);
    auto built = store_->LoadZone(zone);
    if (!built.ok() && built.status().code() != Code::kNotFound) return built.status();
    std::shared_ptr<const dns::Zone> replacement;
    if (built.ok()) replacement = std::move(*built);
    auto before = holder_->Load();
    auto after = WithZone(*before, *apex, std::move(replacement));
    holder_->Store(after);
    NotifyChanged(before.get(), *after);
    return OkStatus();
  }

  // The transfer journal survives restarts: every version made is saved under this server's node id
  // (<data_dir>/dns/journal-node, made on first start), and the saved ones are put back at start,
  // before the server takes requests. Saving runs on the transferring thread (the slow path), and a
  // failed save only costs a full transfer after the next restart.
  Status RestoreJournal(const std::string& data_dir) {
    if (data_dir.empty()) return OkStatus();  // nowhere to keep a node id: in memory only
    std::string path = data_dir + "/dns/journal-node";
    std::error_code ec;
    std::filesystem::create_directories(data_dir + "/dns", ec);
    if (!std::filesystem::exists(path)) {
      std::array<uint8_t, 16> raw{};
      GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(raw));
      Status s = WriteNewFile(path, crypto::HexEncode(raw) + "\n", 0600);
      if (!s.ok() && s.code() != Code::kAlreadyExists) return s;
    }
    GOVERN_ASSIGN_OR_RETURN(std::string node, ReadWholeFile(path));
    while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
    if (node.empty()) return InvalidArgument(path + ": empty");
    node_ = node;
    GOVERN_ASSIGN_OR_RETURN(auto rows, store_->LoadJournal(node_));
    std::map<std::string, std::vector<std::shared_ptr<const dns::TransferVersion>>> by_zone;
    for (auto& [zone, bytes] : rows) {
      auto v = dns::DecodeVersion(bytes);
      if (!v.ok()) {  // a bad row costs one full transfer, never the start
        log::Warn("dns", "journal version unreadable; skipped",
                  {{"zone", zone}, {"error", v.status().message()}});
        continue;
      }
      auto apex = dns::NameFromText(zone);
      if (!apex.ok()) continue;
      dns::LowerName(*apex);
      by_zone[*apex].push_back(std::move(*v));
    }
    for (auto& [apex, versions] : by_zone) transfers_->journal().Restore(apex, std::move(versions));
    size_t keep = transfer_.journal_versions;
    transfers_->journal().SetSink([this, keep](std::string_view apex,
                                               const std::shared_ptr<const dns::TransferVersion>& v) {
      Status s =
          store_->SaveJournalVersion(node_, dns::NameToText(apex), v->serial, dns::EncodeVersion(*v), keep);
      if (!s.ok())
        log::Warn("dns", "journal version not saved",
                  {{"zone", dns::NameToText(apex)}, {"error", s.message()}});
    });
    return OkStatus();
  }

  // The configured TSIG keys and the API's (a configured one wins a name both have), swapped into the
  // transfer handler and the notifier: later requests use them, no restart.
  dns::TsigKeyring MergedKeyring(const std::vector<dns::TsigKey>& api) const {
    std::vector<dns::TsigKey> keys = config_tsig_;
    for (const auto& k : api) {
      bool configured = false;
      for (const auto& c : config_tsig_) configured = configured || c.name == k.name;
      if (!configured) keys.push_back(k);
    }
    return dns::TsigKeyring(std::move(keys));
  }

  Status ReloadTsig() {
    GOVERN_ASSIGN_OR_RETURN(auto api, store_->LoadTsigKeys());
    dns::TsigKeyring ring = MergedKeyring(api);
    if (notifier_) notifier_->SetKeys(ring);
    transfers_->SetKeyring(std::move(ring));
    return OkStatus();
  }

  Status ReloadAll() {
    GOVERN_RETURN_IF_ERROR(ReloadTsig());
    GOVERN_ASSIGN_OR_RETURN(auto zones, store_->LoadAll());
    auto before = holder_->Load();
    auto after = std::make_shared<const dns::ZoneSet>(std::move(zones));
    holder_->Store(after);
    NotifyChanged(before.get(), *after);
    return OkStatus();
  }

  Result<dns::TransferConfig> TransferConfigFrom(const config::Config& c,
                                                 const std::vector<dns::TsigKey>& api) {
    dns::TransferConfig t;
    for (const auto& k : c.GetStringList("dns.transfer.tsig_keys"))
      GOVERN_RETURN_IF_ERROR(t.AddKey(k).WithContext("dns.transfer.tsig_keys"));
    config_tsig_ = t.keyring.keys();
    t.keyring = MergedKeyring(api);
    t.allow_unknown_keys = true;  // may name a key made later through the API
    for (const auto& a : c.GetStringList("dns.transfer.acl"))
      GOVERN_RETURN_IF_ERROR(t.AddAcl(a).WithContext("dns.transfer.acl"));
    for (const auto& n : c.GetStringList("dns.transfer.notify"))
      GOVERN_RETURN_IF_ERROR(t.AddNotify(n).WithContext("dns.transfer.notify"));
    t.journal_versions = static_cast<size_t>(c.GetInt("dns.transfer.journal_versions"));
    // A name in an ACL or NOTIFY target that no key has yet: probably a key still to be made through
    // the API, possibly a typo; it fails closed either way, so say so once.
    std::set<std::string> named;
    for (const auto& [zone, p] : t.acl) named.insert(p.keys.begin(), p.keys.end());
    for (const auto& [zone, targets] : t.notify)
      for (const auto& n : targets)
        if (!n.key.empty()) named.insert(n.key);
    for (const auto& n : named)
      if (!t.keyring.Find(n))
        log::Warn("dns", "TSIG key named in dns.transfer.acl/notify does not exist (yet)",
                  {{"key", dns::NameToText(n)}});
    return t;
  }

  // NOTIFY (RFC 1996) for every zone of `after` whose serial is not the one in `before` (null: all).
  void NotifyChanged(const dns::ZoneSet* before, const dns::ZoneSet& after) {
    if (!notifier_) return;
    for (const auto& z : after.zones()) {
      const dns::Zone* old = before ? before->Find(z->apex()) : nullptr;
      if (old && old->apex() == z->apex() && old->serial() == z->serial()) continue;
      auto targets = transfer_.NotifyFor(z->apex());
      if (targets.empty()) continue;
      const dns::Node* apex = z->Find(z->apex());
      notifier_->Send(apex ? apex->owner : z->apex(), z->soa().ttl, z->soa().rdatas[0], targets);
    }
  }

  void Roll() {
    auto next = std::chrono::steady_clock::now();
    while (!stop_) {
      if (std::chrono::steady_clock::now() < next) {
        std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(rollover_interval_, 100ms));
        continue;
      }
      next = std::chrono::steady_clock::now() + rollover_interval_;
      auto moved = store_->AdvanceRollovers();
      if (!moved.ok()) {
        log::Warn("dns", "key rollover step failed", {{"error", moved.status().message()}});
        continue;
      }
      for (const auto& zone : *moved) log::Info("dns", "key rollover moved on", {{"zone", zone}});
    }
  }

  void Watch() {
    db::Connection& c = **listener_;
    bool need_full = false;
    while (!stop_) {
      auto n = c.WaitForNotification(200ms);
      if (!n.ok() || c.reconnects() != seen_reconnects_) {
        if (!n.ok()) {
          log::Warn("dns", "LISTEN connection lost; reconnecting", {{"error", n.status().message()}});
          if (!c.Reconnect().ok()) {
            std::this_thread::sleep_for(500ms);
            continue;
          }
        }
        seen_reconnects_ = c.reconnects();
        need_full = true;  // notifications sent while it was down are lost
      }
      std::set<std::string> changed;
      if (n.ok() && n->has_value()) {
        changed.insert((*n)->payload);
        for (;;) {
          auto more = c.PollNotification();
          if (!more.ok() || !more->has_value()) break;
          changed.insert((**more).payload);
        }
      }
      if (need_full) {
        Status s = ReloadAll();
        if (!s.ok()) {
          log::Warn("dns", "reload of all zones failed", {{"error", s.message()}});
          std::this_thread::sleep_for(200ms);
          continue;
        }
        need_full = false;
        reloads_all_++;
        continue;
      }
      for (const auto& zone : changed) {
        Status s = zone == kTsigPayload ? ReloadTsig() : ReloadZone(zone);
        if (!s.ok()) {
          log::Warn("dns", "zone reload failed", {{"zone", zone}, {"error", s.message()}});
          need_full = true;
        }
      }
    }
  }

  enum class Need { kRead, kWrite, kAdmin };

  // Registers a route whose handler runs on the job threads once the caller is allowed: the admin
  // token (dns.api_token) may do everything, on every organisation's zones (the handler gets an empty
  // org); a gvd_ key with scope "write" every zone route, "read" the GET routes, both only on its own
  // organisation's zones (the handler gets the key's org); key management needs the admin token.
  using Handler = std::function<net::Response(net::Request&, const std::string& org)>;
  void Route(net::Router& router, net::Method m, std::string_view pattern, Need need, Handler fn) {
    router.Add(m, pattern, [this, fn, need](net::Request&& req, net::Responder out) {
      auto run = [this, fn](std::shared_ptr<net::Request> q, std::shared_ptr<net::Responder> o,
                            std::string org) {
        jobs_->Post([q, o, fn, org = std::move(org)] { o->Send(fn(*q, org)); });
      };
      auto q = std::make_shared<net::Request>(std::move(req));
      auto o = std::make_shared<net::Responder>(std::move(out));
      std::string_view bearer = net::BearerToken(*q).value_or("");
      if (!bearer.empty() && crypto::ConstantTimeEquals(bearer, token_)) return run(q, o, "");
      if (bearer.empty() || !bearer.starts_with("gvd_") || keys_ == nullptr || need == Need::kAdmin) {
        net::Response r = net::ProblemResponse(
            401,
            need == Need::kAdmin ? "the admin token (dns.api_token) is required"
                                 : "a bearer token is required: dns.api_token or a gvd_ key",
            q->path);
        r.headers.Set("WWW-Authenticate", "Bearer");
        return o->Send(std::move(r));
      }
      keys_->Verify(std::string(bearer), [q, o, need, run](Result<service_keys::KeyIdentity> who) {
        if (!who.ok()) {
          if (who.status().code() == Code::kUnauthenticated)
            return o->Send(net::ProblemResponse(401, who.status().message(), q->path));
          return o->Send(net::ProblemResponse(503, "the key store is unavailable; retry later", q->path));
        }
        if (need == Need::kWrite && who->scope != "write")
          return o->Send(net::ProblemResponse(403, "this key has scope 'read'; this needs 'write'", q->path));
        // A key's org is never empty (ValidateOrg), so it can never mean "every organisation".
        if (who->org.empty())
          return o->Send(net::ProblemResponse(403, "this key has no organisation", q->path));
        run(q, o, who->org);
      });
    });
  }

  void AddRoutes(net::Router& router) {
    Route(router, net::Method::kGet, "/v1/dns/zones", Need::kRead,
          [this](net::Request& req, const std::string& org) {
            auto zones = store_->ListZones(org);
            if (!zones.ok()) return Problem(zones.status(), req);
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& z : *zones) {
              arr.push_back({{"name", z.name},
                             {"org", z.org},
                             {"serial", z.serial},
                             {"dnssec", z.dnssec},
                             {"algorithm", z.algorithm},
                             {"denial", z.denial}});
            }
            return net::JsonResponse(nlohmann::json{{"zones", arr}}.dump());
          });
    Route(router, net::Method::kPost, "/v1/dns/zones", Need::kWrite,
          [this](net::Request& req, const std::string& org) {
            auto parsed = ParseCreateZoneBody(req.body);
            if (!parsed.ok()) return Problem(parsed.status(), req);
            CreateZoneRequest cr = std::move(*parsed);
            // A key makes zones of its own organisation; the admin token names any (default: "default").
            if (!org.empty()) {
              if (cr.org != org && cr.org != kDefaultOrg)
                return Problem(InvalidArgument("org: a key makes zones of its own organisation only"), req);
              cr.org = org;
            } else if (Status v = service_keys::ValidateOrg(cr.org); !v.ok()) {
              return Problem(InvalidArgument("org: " + v.message()), req);
            }
            Status s = store_->CreateZone(cr);
            if (!s.ok()) return Problem(s, req);
            return net::JsonResponse(nlohmann::json{{"name", *NormalizeZoneName(cr.name)}}.dump(), 201);
          });
    Route(router, net::Method::kDelete, "/v1/dns/zones/{zone}", Need::kWrite,
          [this](net::Request& req, const std::string& org) {
            Status s = store_->DeleteZone(req.Param("zone"), org);
            if (!s.ok()) return Problem(s, req);
            return net::Response(204, "");
          });
    Route(router, net::Method::kGet, "/v1/dns/zones/{zone}/records", Need::kRead,
          [this](net::Request& req, const std::string& org) {
            auto records = store_->Records(req.Param("zone"), org);
            if (!records.ok()) return Problem(records.status(), req);
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& r : *records) arr.push_back(RecordJson(r));
            return net::JsonResponse(nlohmann::json{{"records", arr}}.dump());
          });
    auto put_rrset = [this](net::Request& req, const std::string& org) {
      auto body = ParseRRsetBody(req.body);
      if (!body.ok()) return Problem(body.status(), req);
      uint32_t ttl = body->ttl;
      std::vector<std::string> rdatas = std::move(body->rdata);
      Status s =
          store_->ReplaceRRset(req.Param("zone"), req.Param("owner"), req.Param("type"), ttl, rdatas, org);
      if (!s.ok()) return Problem(s, req);
      return net::Response(204, "");
    };
    Route(router, net::Method::kPut, "/v1/dns/zones/{zone}/rrsets/{owner}/{type}", Need::kWrite, put_rrset);
    Route(router, net::Method::kDelete, "/v1/dns/zones/{zone}/rrsets/{owner}/{type}", Need::kWrite,
          [this](net::Request& req, const std::string& org) {
            Status s =
                store_->ReplaceRRset(req.Param("zone"), req.Param("owner"), req.Param("type"), 0, {}, org);
            if (!s.ok()) return Problem(s, req);
            return net::Response(204, "");
          });
    Route(router, net::Method::kPost, "/v1/dns/zones/{zone}/file", Need::kWrite,
          [this](net::Request& req, const std::string& org) {
            Status s = store_->ImportZoneFile(req.Param("zone"), req.body, org);
            if (!s.ok()) return Problem(s, req);
            return net::Response(204, "");
          });
    Route(router, net::Method::kGet, "/v1/dns/zones/{zone}/file", Need::kRead,
          [this](net::Request& req, const std::string& org) {
            auto text = store_->ExportZoneFile(req.Param("zone"), org);
            if (!text.ok()) return Problem(text.status(), req);
            return net::Response(200, std::move(*text), "text/dns");
          });
    // How the zone's answers deny (docs/dns.md "Online denial"): {"denial":
    // "nsec3"|"nsec3-optout"|"compact"}.
    Route(router, net::Method::kPut, "/v1/dns/zones/{zone}/denial", Need::kWrite,
          [this](net::Request& req, const std::string& org) {
            auto denial = ParseDenialBody(req.body);
            if (!denial.ok()) return Problem(denial.status(), req);
            Status s = store_->SetDenial(req.Param("zone"), *denial, org);
            if (!s.ok()) return Problem(s, req);
            return net::Response(204, "");
          });
    Route(router, net::Method::kGet, "/v1/dns/zones/{zone}/ds", Need::kRead,
          [this](net::Request& req, const std::string& org) {
            auto zone = store_->LoadZoneFor(req.Param("zone"), org);
            if (!zone.ok()) return Problem(zone.status(), req);
            if (!(*zone)->signed_zone()) return Problem(FailedPrecondition("zone is not signed"), req);
            nlohmann::json ds = nlohmann::json::array(), dnskey = nlohmann::json::array();
            for (const auto& r : (*zone)->DsRecords()) ds.push_back(dns::PrintRecord(r));
            for (const auto& r : (*zone)->Records()) {
              if (r.type == 48) dnskey.push_back(dns::PrintRecord(r));
            }
            return net::JsonResponse(nlohmann::json{{"ds", ds}, {"dnskey", dnskey}}.dump());
          });
    // Keys and rollover (docs/dns.md "Key rollover").
    auto keys_json = [this](net::Request& req, const std::string& org, int status) {
      auto ks = store_->Keys(req.Param("zone"), org);
      if (!ks.ok()) return Problem(ks.status(), req);
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& k : ks->keys) {
        keys.push_back({{"key_tag", k.key_tag},
                        {"algorithm", k.algorithm},
                        {"flags", k.flags},
                        {"state", k.state},
                        {"ds", k.ds},
                        {"dnskey", k.dnskey},
                        {"created_at", k.created_at}});
      }
      nlohmann::json out{{"keys", keys}, {"rollover", nullptr}};
      if (ks->rollover_present) {
        const RolloverInfo& r = ks->rollover;
        out["rollover"] = {
            {"phase", r.phase},
            {"from_algorithm", r.from_algorithm},
            {"to_algorithm", r.to_algorithm},
            {"propagation_delay", r.propagation_delay},
            {"parent_delay", r.parent_delay},
            {"started_at", r.started_at},
            {"phase_started_at", r.phase_started_at},
            {"next_at", r.next_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.next_at)},
            {"seconds_left", r.seconds_left},
            {"await_ds", r.await_ds},
            {"ds_seen_at", r.ds_seen_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.ds_seen_at)},
            {"completed_at",
             r.completed_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.completed_at)}};
      }
      net::Response resp = net::JsonResponse(out.dump());
      resp.status = status;
      return resp;
    };
    Route(router, net::Method::kGet, "/v1/dns/zones/{zone}/keys", Need::kRead,
          [keys_json](net::Request& req, const std::string& org) { return keys_json(req, org, 200); });
    Route(router, net::Method::kPost, "/v1/dns/zones/{zone}/keys/rollover", Need::kWrite,
          [this, keys_json](net::Request& req, const std::string& org) {
            auto body = ParseRolloverBody(req.body, rollover_defaults_);
            if (!body.ok()) return Problem(body.status(), req);
            Status s = store_->StartRollover(req.Param("zone"), *body, org);
            if (!s.ok()) return Problem(s, req);
            return keys_json(req, org, 202);
          });
    // The parent's DS names the new key: the switch phase may end (when its time is up).
    Route(router, net::Method::kPost, "/v1/dns/zones/{zone}/keys/rollover/ds-seen", Need::kWrite,
          [this, keys_json](net::Request& req, const std::string& org) {
            Status s = store_->ConfirmDs(req.Param("zone"), org);
            if (!s.ok()) return Problem(s, req);
            return keys_json(req, org, 200);
          });
    // TSIG keys (admin token only): POST {"name","algorithm"} -> 201 with the secret (shown once), list
    // without secrets, delete. Applied by every server through NOTIFY, no restart.
    Route(router, net::Method::kPost, "/v1/dns/tsig-keys", Need::kAdmin,
          [this](net::Request& req, const std::string&) {
            auto j = nlohmann::json::parse(req.body, nullptr, false);
            if (j.is_discarded() || !j.is_object())
              return Problem(InvalidArgument("body: not a JSON object"), req);
            auto name = j.find("name");
            if (name == j.end() || !name->is_string())
              return Problem(InvalidArgument("name: a string is required"), req);
            std::string alg = "hmac-sha256";
            if (auto it = j.find("algorithm"); it != j.end()) {
              if (!it->is_string())
                return Problem(InvalidArgument("algorithm: hmac-sha256 or hmac-sha512"), req);
              alg = it->get<std::string>();
            }
            if (auto wire = dns::NameFromText(NormalizeZoneName(name->get<std::string>()).value_or("."));
                wire.ok()) {
              dns::LowerName(*wire);
              for (const auto& c : config_tsig_)
                if (c.name == *wire)
                  return Problem(
                      AlreadyExists("TSIG key " + dns::NameToText(c.name) + " is in dns.transfer.tsig_keys"),
                      req);
            }
            auto key = store_->CreateTsigKey(name->get<std::string>(), alg);
            if (!key.ok()) return Problem(key.status(), req);
            size_t c1 = key->find(':'), c2 = key->rfind(':');
            return net::JsonResponse(nlohmann::json{{"name", key->substr(0, c1)},
                                                    {"algorithm", alg},
                                                    {"secret", key->substr(c2 + 1)},
                                                    {"key", *key}}
                                         .dump(),
                                     201);
          });
    Route(router, net::Method::kGet, "/v1/dns/tsig-keys", Need::kAdmin,
          [this](net::Request& req, const std::string&) {
            auto keys = store_->ListTsigKeys();
            if (!keys.ok()) return Problem(keys.status(), req);
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& c : config_tsig_) {
              arr.push_back({{"name", dns::NameToText(c.name)},
                             {"algorithm",
                              c.algorithm == dns::TsigAlgorithm::kHmacSha256 ? "hmac-sha256" : "hmac-sha512"},
                             {"source", "config"}});
            }
            for (const auto& k : *keys)
              arr.push_back({{"name", k.name},
                             {"algorithm", k.algorithm},
                             {"created_at", k.created_at},
                             {"source", "api"}});
            return net::JsonResponse(nlohmann::json{{"keys", arr}}.dump());
          });
    Route(router, net::Method::kDelete, "/v1/dns/tsig-keys/{name}", Need::kAdmin,
          [this](net::Request& req, const std::string&) {
            Status s = store_->DeleteTsigKey(req.Param("name"));
            if (!s.ok()) return Problem(s, req);
            return net::Response(204, "");
          });
    // API keys (admin token only): POST {"org","scope","name"} -> 201 {"key"} (shown once), list, revoke.
    Route(router, net::Method::kPost, "/v1/dns/keys", Need::kAdmin,
          [this](net::Request& req, const std::string&) {
            auto j = nlohmann::json::parse(req.body, nullptr, false);
            if (j.is_discarded() || !j.is_object())
              return Problem(InvalidArgument("body: not a JSON object"), req);
            auto str = [&](const char* k, const char* dflt) -> std::optional<std::string> {
              auto it = j.find(k);
              if (it == j.end()) return std::string(dflt);
              if (!it->is_string()) return std::nullopt;
              return it->get<std::string>();
            };
            auto org = str("org", "default"), scope = str("scope", ""), kname = str("name", "");
            if (!org || !scope || !kname)
              return Problem(InvalidArgument("body: org, scope and name are strings"), req);
            if (Status s = service_keys::ValidateOrg(*org); !s.ok())
              return Problem(InvalidArgument("org: " + s.message()), req);
            if (Status s = DnsKeyTable().CheckScope(*scope); !s.ok())
              return Problem(InvalidArgument("scope: " + s.message()), req);
            auto lease = ctx_.db->Checkout();
            if (!lease.ok()) return Problem(Unavailable("database: " + lease.status().message()), req);
            auto key = service_keys::CreateKey(**lease, DnsKeyTable(), *org, *scope, *kname);
            if (!key.ok()) return Problem(key.status(), req);
            return net::JsonResponse(nlohmann::json{{"key", *key}}.dump(), 201);
          });
    Route(router, net::Method::kGet, "/v1/dns/keys", Need::kAdmin,
          [this](net::Request& req, const std::string&) {
            auto lease = ctx_.db->Checkout();
            if (!lease.ok()) return Problem(Unavailable("database: " + lease.status().message()), req);
            auto keys = service_keys::ListKeys(**lease, DnsKeyTable());
            if (!keys.ok()) return Problem(keys.status(), req);
            nlohmann::json arr = nlohmann::json::array();
            for (const auto& k : *keys) {
              arr.push_back({{"key_id", k.key_id},
                             {"org", k.org},
                             {"scope", k.scope},
                             {"name", k.name},
                             {"created_at", k.created_at},
                             {"revoked_at", k.revoked_at ? *k.revoked_at : ""}});
            }
            return net::JsonResponse(nlohmann::json{{"keys", arr}}.dump());
          });
    Route(
        router, net::Method::kDelete, "/v1/dns/keys/{key_id}", Need::kAdmin,
        [this](net::Request& req, const std::string&) {
          auto lease = ctx_.db->Checkout();
          if (!lease.ok()) return Problem(Unavailable("database: " + lease.status().message()), req);
          Status s = service_keys::RevokeKey(**lease, DnsKeyTable(), req.Param("key_id"));
          if (!s.ok()) return Problem(s, req);
          keys_->Forget(req.Param("key_id"));  // at once in this process; other replicas within the cache TTL
          return net::Response(204, "");
        });
  }

  services::Context ctx_;
  std::unique_ptr<Store> store_;
  std::optional<db::Pool::Lease> listener_;
  int seen_reconnects_ = 0;
  std::shared_ptr<dns::ZoneSetHolder> holder_;
  std::unique_ptr<dns::Server> server_;
  dns::TransferConfig transfer_;
  std::string node_;                           // this server's journal node id
  std::vector<dns::TsigKey> config_tsig_;      // dns.transfer.tsig_keys
  std::shared_ptr<dns::Transfers> transfers_;  // also held by the server
  std::unique_ptr<dns::Notifier> notifier_;
  std::string dns_host_, api_host_, token_;
  std::thread watcher_;
  std::thread roller_;
  std::chrono::milliseconds rollover_interval_{1000};
  RolloverRequest rollover_defaults_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> reloads_all_{0};
  std::unique_ptr<services::JobQueue> jobs_;
  std::unique_ptr<service_keys::KeyCache> keys_;
  std::unique_ptr<net::Server> http_;
};

}  // namespace

std::unique_ptr<services::Service> NewDnsService() { return std::make_unique<DnsService>(); }

}  // namespace govern::dns_service
