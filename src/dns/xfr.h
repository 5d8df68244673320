// Zone transfers out (AXFR, RFC 5936; IXFR, RFC 1995) with TSIG (RFC 8945), transfer ACLs per zone,
// and the slow path of the server for every message the fast answer path does not take (transfer
// requests, TSIG-signed queries such as a secondary's SOA refresh).
//
// Versions: the first time a zone snapshot (serial) is transferred, its transfer form is made once
// (Zone::SignedRecords for a signed zone, with the RRSIGs of unchanged RRsets reused from the previous
// version so that only changed data differs) and kept in a per-zone Journal of the last N versions.
// IXFR from a serial the journal holds is one condensed difference (RFC 1995 section 4: deletions then
// additions from the client's version straight to the current one); from a serial it does not hold
// (older, or served by another replica, or before a restart) the answer is a whole zone in AXFR form.
// An up-to-date client gets the single current SOA.
//
// Transfers is immutable once made but for its journal (behind a mutex): safe to call from every
// server thread at once.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "dns/tsig.h"
#include "dns/zone.h"

namespace govern::dns {

// RFC 1982 serial number arithmetic: a < b in sequence space (undefined pairs, 2^31 apart, are not less).
inline bool SerialLess(uint32_t a, uint32_t b) {
  return a != b && ((a < b && b - a < 0x80000000u) || (a > b && a - b > 0x80000000u));
}

struct Netblock {
  int family = AF_INET;
  uint8_t addr[16] = {};
  int prefix = 32;
  // "127.0.0.1", "10.0.0.0/8", "::1", "2001:db8::/32".
  static Result<Netblock> Parse(std::string_view text);
  bool Contains(const sockaddr* peer) const;
};

struct ZoneTransferPolicy {
  std::vector<Netblock> allow;  // who may transfer; empty: nobody
  std::vector<std::string>
      keys;  // lower-case wire TSIG key names; non-empty: a request must be signed by one
};

struct NotifyTarget {
  std::string address;  // IP literal
  uint16_t port = 53;
  std::string key;  // lower-case wire TSIG key name; empty: unsigned
};

// Keys, ACLs and NOTIFY targets, read from text lines (config keys, command-line flags):
//   key:    "name:hmac-sha256:BASE64"                    (TsigKey::FromText)
//   acl:    "ZONE ADDR[/PREFIX]... [key=NAME]..."       ZONE "*" for every zone without its own line
//   notify: "ZONE ADDR:PORT|[V6]:PORT [key=NAME]"         ZONE "*" for every zone
struct TransferConfig {
  TsigKeyring keyring;
  std::map<std::string, ZoneTransferPolicy> acl;            // apex lower wire; "" = default
  std::map<std::string, std::vector<NotifyTarget>> notify;  // apex lower wire; "" = every zone
  size_t journal_versions = 32;                             // versions kept per zone for IXFR
  // Let ACLs and NOTIFY targets name keys not in `keyring` (yet): keys made later through the service's
  // API. Such a name fails closed until the key exists (BADKEY; NOTIFY not sent). Off: unknown is an error.
  bool allow_unknown_keys = false;

  Status AddKey(std::string_view text);
  Status AddAcl(std::string_view text);  // keys named must be added first
  Status AddNotify(std::string_view text);
  const ZoneTransferPolicy* PolicyFor(std::string_view apex) const;
  std::vector<NotifyTarget> NotifyFor(std::string_view apex) const;
};

// One version of a zone in transfer form.
struct TransferVersion {
  uint32_t serial = 0;
  std::vector<Record> records;    // the SOA first, then every other record (RRSIG/NSEC too when signed)
  std::vector<std::string> keys;  // per record (same order): lower owner, type, TTL, canonical RDATA
};

// A version in a self-contained byte form, to be kept outside the process (the service keeps the last
// versions of each zone in PostgreSQL so that IXFR stays incremental across restarts). DecodeVersion
// takes untrusted bytes: InvalidArgument for anything malformed, never a crash; it remakes `keys`.
std::string EncodeVersion(const TransferVersion& v);
Result<std::shared_ptr<const TransferVersion>> DecodeVersion(std::string_view bytes);

// The last versions of every zone (thread-safe).
class Journal {
 public:
  explicit Journal(size_t versions_per_zone) : max_(versions_per_zone < 1 ? 1 : versions_per_zone) {}
  // The version for this snapshot (made now if the newest kept one has another serial).
  std::shared_ptr<const TransferVersion> Current(const Zone& zone, uint32_t now);
  std::shared_ptr<const TransferVersion> Find(std::string_view apex, uint32_t serial) const;
  size_t max_versions() const { return max_; }

  // Called with every version Current makes (apex lower wire), outside the journal's lock, on the
  // thread that made it. Set once before the journal is used.
  using Sink = std::function<void(std::string_view apex, const std::shared_ptr<const TransferVersion>&)>;
  void SetSink(Sink sink) { sink_ = std::move(sink); }
  // Puts versions kept elsewhere (oldest first) in front of what the zone's journal holds, keeping the
  // newest max_versions(): after a restart the next version is made from the last one transferred
  // (reusing its RRSIGs) and IXFR from the restored serials is incremental.
  void Restore(std::string_view apex, std::vector<std::shared_ptr<const TransferVersion>> versions);

 private:
  size_t max_;
  Sink sink_;
  mutable std::mutex mu_;
  std::map<std::string, std::deque<std::shared_ptr<const TransferVersion>>, std::less<>> zones_;
};

// The condensed IXFR difference between two versions: records only in `from`, records only in `to`
// (SOAs excluded).
void Diff(const TransferVersion& from, const TransferVersion& to, std::vector<const Record*>& deleted,
          std::vector<const Record*>& added);

// True when a message must go through Transfers::Handle rather than the fast answer path: a transfer
// request, or any record beyond a single OPT in the additional section (TSIG), or records in answer
// or authority. Cheap: reads the header and skips the question name.
bool NeedsSlowPath(std::span<const uint8_t> packet);

class Transfers {
 public:
  explicit Transfers(TransferConfig config)
      : config_(std::move(config)),
        journal_(config_.journal_versions),
        keys_(std::make_shared<const TsigKeyring>(config_.keyring)) {}
  const TransferConfig& config() const { return config_; }
  // The TSIG keys requests are checked against: config().keyring until SetKeyring swaps in another set
  // (keys made through the service's API beside the configured ones). A swap acts on the next request;
  // one being answered keeps the keys it began with. ACLs and NOTIFY targets name keys: a key named
  // there and missing from the ring fails closed (BADKEY / no NOTIFY sent).
  std::shared_ptr<const TsigKeyring> keyring() const;
  void SetKeyring(TsigKeyring keys);
  Journal& journal() const { return journal_; }

  // Answers `packet` (from `peer`, over TCP or UDP) with zero or more messages, each handed to `send`
  // (which returns false to stop: the connection failed). UDP gets at most one message.
  void Handle(const ZoneSet& zones, std::span<const uint8_t> packet, const sockaddr* peer, bool tcp,
              uint32_t now, const std::function<bool(std::span<const uint8_t>)>& send) const;

  uint64_t transfers() const { return transfers_.load(std::memory_order_relaxed); }
  uint64_t incremental() const { return incremental_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  TransferConfig config_;
  mutable Journal journal_;
  mutable std::mutex keys_mu_;
  std::shared_ptr<const TsigKeyring> keys_;  // guarded by keys_mu_
  mutable std::atomic<uint64_t> transfers_{0}, incremental_{0}, refused_{0};
};

}  // namespace govern::dns
