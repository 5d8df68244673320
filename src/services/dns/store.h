// Store: the DNS service's zones, record sets and zone keys in PostgreSQL, and the compiled Zone
// snapshots built from them.
//
// Every change runs in one transaction that also bumps the zone's SOA serial (dns_zones.serial; the
// stored SOA RDATA's serial is replaced by it when a Zone is built) and sends
// NOTIFY govern_dns, '<zone>' so every server rebuilds that zone. Zone names are absolute, lower-case
// text ("example.com."). RDATA is validated with govern_dns's master-file parser and stored in wire form.
// Zone private keys are stored sealed with AES-256-GCM (AAD: the zone name).
// Thread-safe: every call checks out its own connection from the pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "crypto/aead.h"
#include "db/migrator.h"
#include "dns/tsig.h"
#include "dns/zone.h"
#include "services/keys/keys.h"

namespace govern::db {
class Pool;
class Connection;
}  // namespace govern::db

namespace govern::dns_service {

inline constexpr std::string_view kNotifyChannel = "govern_dns";
// The NOTIFY payload of a TSIG key change (never a zone name: those end with '.').
inline constexpr std::string_view kTsigPayload = "!tsig";

std::vector<db::Migration> Migrations();
// The zone API's keys (`gvd_...`, table dns_api_keys): scope "read" (GET routes) or "write" (every
// zone route). A key reaches only the zones of its organisation (dns_zones.org); others' zones are
// NotFound to it, as if they did not exist. The admin token (dns.api_token) reaches every zone.
const service_keys::KeyTable& DnsKeyTable();

// The organisation zones made without one belong to, and which zones from before migration 3 got.
inline constexpr std::string_view kDefaultOrg = "default";

// How a signed zone's own answers deny names and types (docs/dns.md "Online denial"):
//   "nsec3"        RFC 5155 from the zone's NSEC3 chain (0 iterations, no salt), each NSEC3 signed once per
//                  serial and kept; the zone's transfer form carries the same chain. Default for new zones.
//   "nsec3-optout" the same with opt-out (insecure delegations off the chain).
//   "compact"      RFC 9824 compact denial, one signature per answer for a name that does not exist; the
//                  transfer form follows dns.transfer.denial. Zones made before migration 8 keep it.
inline constexpr std::string_view kDefaultDenial = "nsec3";
Status ValidateDenial(std::string_view denial);

struct ZoneInfo {
  std::string name;
  std::string org;
  int64_t serial = 0;
  bool dnssec = false;
  int algorithm = 13;
  std::string denial;  // see kDefaultDenial
};

struct CreateZoneRequest {
  std::string name;
  std::string org = std::string(kDefaultOrg);  // the owning organisation
  bool dnssec = false;
  int algorithm = 13;  // 13 ECDSA P-256, 15 Ed25519
  // SOA RDATA in presentation form; empty: "ns1.<zone> hostmaster.<zone> 1 3600 600 1209600 300".
  std::string soa;
  std::vector<std::string> ns;  // NS targets at the apex; empty: ns1.<zone>
  uint32_t dnskey_ttl = 3600;   // TTL of DNSKEY, CDS and CDNSKEY (rollover waits follow it)
  std::string denial = std::string(kDefaultDenial);  // "nsec3", "nsec3-optout" or "compact"
};

// Key rollover (docs/dns.md "Key rollover"; RFC 7583 CSK roll with double DS, RFC 7344/8078 CDS).
// Phases, each entered in one transaction that bumps the serial and NOTIFYs:
//   publish: new key in DNSKEY, DNSKEY signed by both, data by the old key (and the new one too when
//            the algorithm changes), CDS/CDNSKEY for both; lasts dnskey_ttl + propagation_delay.
//   switch:  data signed by the new key (and the old one when the algorithm changes), DNSKEY still both
//            and signed by both, CDS/CDNSKEY for the new key only; lasts
//            max(largest TTL in the zone + propagation_delay, parent_delay), and, with await_ds (the
//            default), until the operator confirms the parent's DS names the new key (ConfirmDs): most
//            parents do not follow CDS, and removing the old key before the parent's DS changes makes
//            the zone bogus (RFC 7583 section 3.3).
//   done:    the old key is gone; CDS/CDNSKEY for the new key stay (they match the parent's DS).
struct RolloverRequest {
  int algorithm = 0;                 // 0: the active key's algorithm; 13 or 15
  int64_t propagation_delay = 3600;  // seconds for a change to reach every server and secondary
  int64_t parent_delay = 172800;     // seconds for the parent to follow CDS plus its DS TTL
  bool await_ds = true;              // switch ends only after ConfirmDs (see above)
};
struct ZoneKeyInfo {
  int64_t id = 0;
  int key_tag = 0;
  int algorithm = 0;
  int flags = 0;
  std::string state;   // "active" (signs the zone), "incoming", "retiring"
  std::string ds;      // DS RDATA in presentation form (SHA-256)
  std::string dnskey;  // DNSKEY RDATA in presentation form
  std::string created_at;
};
struct RolloverInfo {
  std::string phase;  // "publish", "switch", "done"
  int from_algorithm = 0, to_algorithm = 0;
  int64_t propagation_delay = 0, parent_delay = 0;
  std::string started_at, phase_started_at, next_at, completed_at;  // next_at empty when done
  int64_t seconds_left = 0;                                         // until next_at (0 when due)
  bool await_ds = false;
  std::string ds_seen_at;  // when ConfirmDs was called; empty: not yet
};
struct KeyStatus {
  std::vector<ZoneKeyInfo> keys;
  bool rollover_present = false;
  RolloverInfo rollover;
};

// One RRset as the API gives it (owner relative, absolute or "@"; type mnemonic; presentation RDATA)
// through the master-file parser, so the API accepts exactly what zone files do. Errors name the
// field ("rdata[0]: line 1: ..."). Records the server makes (DNSKEY, RRSIG, NSEC) are refused.
Result<std::vector<dns::Record>> ParseRRset(std::string_view zone, std::string_view owner,
                                            std::string_view type, uint32_t ttl,
                                            const std::vector<std::string>& rdatas);

// Normalizes "Example.COM" to "example.com."; InvalidArgument for a bad name.
Result<std::string> NormalizeZoneName(std::string_view text);

// A TSIG key made through the API, as listed (never its secret).
struct TsigKeyInfo {
  std::string name;       // text, lower-case, absolute ("xfr-key.")
  std::string algorithm;  // "hmac-sha256" or "hmac-sha512"
  std::string created_at;
};

class Store {
 public:
  Store(db::Pool* pool, std::shared_ptr<const crypto::Aes256GcmKey> key, dns::Nsec3Params nsec3 = {})
      : pool_(pool), key_(std::move(key)), nsec3_(std::move(nsec3)) {}

  // `org` below: the caller's organisation; a zone of another one is NotFound. Empty: any (admin).
  // The owner is checked inside each change's transaction, so a change never lands in a zone that was
  // deleted and re-created by another organisation meanwhile.
  Status CreateZone(const CreateZoneRequest& req);
  Status DeleteZone(std::string_view zone, std::string_view org = {});
  Result<std::vector<ZoneInfo>> ListZones(std::string_view org = {});
  // OkStatus when `zone` exists and belongs to `org` (any when empty), NotFound otherwise.
  Status CheckOwner(std::string_view zone, std::string_view org);
  // Changes how the zone denies online ("nsec3", "nsec3-optout", "compact"): bumps the serial and
  // NOTIFYs, so every server rebuilds it. InvalidArgument for another value.
  Status SetDenial(std::string_view zone, std::string_view denial, std::string_view org = {});
  // Replaces the RRset (owner, type) with `rdatas` (presentation form); empty `rdatas` deletes it.
  // `owner` is absolute or relative to the zone ('@' is the apex). Errors name the field.
  Status ReplaceRRset(std::string_view zone, std::string_view owner, std::string_view type, uint32_t ttl,
                      const std::vector<std::string>& rdatas, std::string_view org = {});
  // Replaces every record of the zone by a master file (it must hold the apex SOA). The serial becomes
  // the larger of the file's and the current one + 1.
  Status ImportZoneFile(std::string_view zone, std::string_view text, std::string_view org = {});
  // The zone's records (with the current serial; DNSKEY when signed) as a master file.
  Result<std::string> ExportZoneFile(std::string_view zone, std::string_view org = {});
  Result<std::vector<dns::Record>> Records(std::string_view zone, std::string_view org = {});
  // LoadZone for a caller of `org` (empty: any): the owner check and the load see one snapshot.
  Result<std::shared_ptr<const dns::Zone>> LoadZoneFor(std::string_view zone, std::string_view org);
  Result<std::vector<dns::Record>> DsRecords(std::string_view zone, std::string_view org = {});

  // Starts a key rollover (phase publish): FailedPrecondition for an unsigned zone or one whose
  // rollover is still running, InvalidArgument for a bad algorithm or delay.
  Status StartRollover(std::string_view zone, const RolloverRequest& req, std::string_view org = {});
  // The operator saw the parent's DS name the new key (and its TTL pass): the switch phase may end once
  // its time is up. FailedPrecondition when no rollover is in publish or switch.
  Status ConfirmDs(std::string_view zone, std::string_view org = {});
  // The zone's keys and its last rollover.
  Result<KeyStatus> Keys(std::string_view zone, std::string_view org = {});
  // Moves every rollover whose phase has run its time into the next phase (database clock); returns
  // the zones moved. Safe to run in many processes at once (each row is locked and re-checked).
  Result<std::vector<std::string>> AdvanceRollovers();

  // TSIG keys for transfers and NOTIFY (table dns_tsig_keys). The secret is random (32 bytes for
  // hmac-sha256, 64 for hmac-sha512), sealed with the zone-key sealing key (AAD "tsig:" + name) and
  // returned once, in the kdig -y form "name:hmac-sha256:BASE64". Each change NOTIFYs kTsigPayload.
  Result<std::string> CreateTsigKey(std::string_view name, std::string_view algorithm);
  Result<std::vector<TsigKeyInfo>> ListTsigKeys();
  Status DeleteTsigKey(std::string_view name);  // NotFound when absent
  Result<std::vector<dns::TsigKey>> LoadTsigKeys();

  // The transfer journal of server `node` (table dns_journal): one version (dns::EncodeVersion) of a
  // zone, keeping the newest `keep` of that zone; and every kept version, by zone, oldest first.
  Status SaveJournalVersion(std::string_view node, std::string_view zone, uint32_t serial,
                            std::string_view version, size_t keep);
  Result<std::vector<std::pair<std::string, std::string>>> LoadJournal(std::string_view node);

  // Builds the Zone snapshot of one zone (NotFound when it no longer exists) or of all.
  Result<std::shared_ptr<const dns::Zone>> LoadZone(std::string_view zone);
  Result<std::vector<std::shared_ptr<const dns::Zone>>> LoadAll();

 private:
  Result<std::shared_ptr<const dns::Zone>> LoadZoneOn(db::Connection& c, std::string_view zone);
  // Runs `read` in one read-only repeatable-read transaction after checking that `zone` exists and
  // (when `org` is not empty) belongs to `org`; NotFound otherwise.
  Status ReadOwnedZone(const std::string& zone, std::string_view org,
                       const std::function<Status(db::Connection&)>& read);
  // Inside a change's transaction, after it: the zone as it now stands builds (so no server ever
  // loads a zone it cannot serve); InvalidArgument (and so a rollback) otherwise.
  Status CheckBuilds(db::Connection& c, std::string_view zone);
  // Inside a transaction: serial + 1 (or `at_least`: an imported file's serial), NotFound for an
  // unknown zone or one of another org (`org` non-empty), and NOTIFY.
  Status Bump(db::Connection& c, std::string_view zone, std::string_view org, int64_t at_least = -1);
  struct LoadedKey {
    int64_t id;
    std::string state;
    std::string created_at;
    std::shared_ptr<const dns::SigningKey> key;
  };
  Result<std::vector<LoadedKey>> LoadKeys(db::Connection& c, std::string_view zone);
  Status AdvanceOne(db::Connection& c, const std::string& zone, bool* moved);

  db::Pool* pool_;
  std::shared_ptr<const crypto::Aes256GcmKey> key_;
  dns::Nsec3Params nsec3_;  // denial in the transfer form of signed zones (NSEC when not enabled)
};

}  // namespace govern::dns_service
