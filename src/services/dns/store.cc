#include "services/dns/store.h"

#include <algorithm>

#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/random.h"
#include "db/connection.h"
#include "db/pool.h"
#include "dns/rdata.h"
#include "dns/wire.h"
#include "dns/zonefile.h"

namespace govern::dns_service {
namespace {

constexpr uint16_t kSoa = 6, kDnskey = 48, kCds = 59, kCdnskey = 60;

std::string LowerText(std::string_view wire) {
  std::string w(wire);
  dns::LowerName(w);
  return dns::NameToText(w);
}

Status CheckInZone(std::string_view zone, const dns::Record& r) {
  auto apex = dns::NameFromText(zone);
  if (!apex.ok()) return apex.status();
  std::string owner = r.owner;
  dns::LowerName(owner);
  if (!dns::IsSubdomain(owner, *apex))
    return InvalidArgument("owner: " + dns::NameToText(r.owner) + " is not in " + std::string(zone));
  return OkStatus();
}

Status InsertRecord(db::Connection& c, std::string_view zone, const dns::Record& r) {
  return c
      .ExecPrepared("INSERT INTO dns_records (zone, owner, type, ttl, rdata) VALUES ($1, $2, $3, $4, $5)",
                    db::Params(zone, LowerText(r.owner), static_cast<int32_t>(r.type),
                               static_cast<int64_t>(r.ttl), db::Bytea{r.rdata}))
      .status();
}

}  // namespace

Result<std::vector<dns::Record>> ParseRRset(std::string_view zone, std::string_view owner,
                                            std::string_view type, uint32_t ttl,
                                            const std::vector<std::string>& rdatas) {
  if (owner.empty() || owner.find_first_of(" \t\n;()\"") != std::string_view::npos) {
    return InvalidArgument("owner: not a domain name");
  }
  auto t = dns::TypeFromText(type);
  if (!t.ok()) return InvalidArgument("type: " + t.status().message());
  if (*t == kDnskey || *t == 46 /*RRSIG*/ || *t == 47 /*NSEC*/ || *t == 50 /*NSEC3*/ ||
      *t == 51 /*NSEC3PARAM*/ || *t == kCds || *t == kCdnskey) {
    return InvalidArgument("type: " + std::string(type) + " records are made by the server");
  }
  std::vector<dns::Record> out;
  for (size_t i = 0; i < rdatas.size(); ++i) {
    if (rdatas[i].find('\n') != std::string::npos)
      return InvalidArgument("rdata[" + std::to_string(i) + "]: newline");
    std::string line =
        std::string(owner) + " " + std::to_string(ttl) + " IN " + std::string(type) + " " + rdatas[i];
    auto r = dns::ParseZoneFile(line, zone);
    if (!r.ok()) return InvalidArgument("rdata[" + std::to_string(i) + "]: " + r.status().message());
    if (r->size() != 1) return InvalidArgument("rdata[" + std::to_string(i) + "]: expected one record");
    out.push_back(std::move((*r)[0]));
  }
  return out;
}

const service_keys::KeyTable& DnsKeyTable() {
  static const service_keys::KeyTable table{
      .table = "dns_api_keys", .prefix = "gvd", .scopes = {"read", "write"}, .log_component = "dns"};
  return table;
}

std::vector<db::Migration> Migrations() {
  return {{1, "dns zones, records and keys", R"sql(
CREATE TABLE dns_zones (
  name text PRIMARY KEY,
  serial bigint NOT NULL,
  dnssec boolean NOT NULL,
  algorithm integer NOT NULL
);
CREATE TABLE dns_records (
  zone text NOT NULL REFERENCES dns_zones (name) ON DELETE CASCADE,
  owner text NOT NULL,
  type integer NOT NULL,
  ttl bigint NOT NULL,
  rdata bytea NOT NULL
);
CREATE INDEX dns_records_zone ON dns_records (zone, owner, type);
CREATE TABLE dns_zone_keys (
  zone text NOT NULL REFERENCES dns_zones (name) ON DELETE CASCADE,
  flags integer NOT NULL,
  algorithm integer NOT NULL,
  private_sealed bytea NOT NULL
);
)sql"},
          {2, "dns API keys", service_keys::TableSql(DnsKeyTable())},
          // Zones made before organisations belong to 'default', the org keys get when none is given.
          {3, "dns zones owned by an organisation", R"sql(
ALTER TABLE dns_zones ADD COLUMN org text NOT NULL DEFAULT 'default';
CREATE INDEX dns_zones_org ON dns_zones (org, name);
)sql"},
          // Secrets sealed (AES-256-GCM, the zone-key sealing key): a database read alone does not give
          // them; the server needs the raw secret, so it is sealed rather than hashed.
          {4, "dns TSIG keys", R"sql(
CREATE TABLE dns_tsig_keys (
  name text PRIMARY KEY,
  algorithm text NOT NULL CHECK (algorithm IN ('hmac-sha256', 'hmac-sha512')),
  secret_sealed bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
)sql"},
          // The transfer journal of each server (node: <data_dir>/dns/journal-node), so the first IXFR
          // after a restart is incremental. Per node because a signed zone's versions differ between
          // servers (each signs on its own); seq orders versions (serials wrap).
          {5, "dns transfer journal", R"sql(
CREATE TABLE dns_journal (
  node text NOT NULL,
  zone text NOT NULL REFERENCES dns_zones (name) ON DELETE CASCADE,
  serial bigint NOT NULL,
  seq bigserial NOT NULL,
  version bytea NOT NULL,
  PRIMARY KEY (node, zone, serial)
);
)sql"},
          // Key rollover (docs/dns.md "Key rollover"): each key has a state; a zone's rollover is one row
          // whose phase moves on by time (next_at, the database clock). Keys from before are active.
          {6, "dns key rollover", R"sql(
ALTER TABLE dns_zone_keys ADD COLUMN id bigserial PRIMARY KEY;
ALTER TABLE dns_zone_keys ADD COLUMN state text NOT NULL DEFAULT 'active'
  CHECK (state IN ('active', 'incoming', 'retiring'));
ALTER TABLE dns_zone_keys ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE dns_zones ADD COLUMN dnskey_ttl bigint NOT NULL DEFAULT 3600;
ALTER TABLE dns_zones ADD COLUMN publish_cds boolean NOT NULL DEFAULT false;
CREATE TABLE dns_rollovers (
  zone text PRIMARY KEY REFERENCES dns_zones (name) ON DELETE CASCADE,
  phase text NOT NULL CHECK (phase IN ('publish', 'switch', 'done')),
  from_algorithm integer NOT NULL,
  to_algorithm integer NOT NULL,
  propagation_delay bigint NOT NULL,
  parent_delay bigint NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  phase_started_at timestamptz NOT NULL DEFAULT now(),
  next_at timestamptz,
  completed_at timestamptz
);
CREATE INDEX dns_rollovers_due ON dns_rollovers (next_at) WHERE phase <> 'done';
)sql"},
          // The switch phase waits for the operator's word that the parent's DS names the new key.
          {7, "dns rollover waits for the parent's DS", R"sql(
ALTER TABLE dns_rollovers ADD COLUMN await_ds boolean NOT NULL DEFAULT true;
ALTER TABLE dns_rollovers ADD COLUMN ds_seen_at timestamptz;
)sql"},
          // Online denial per zone (docs/dns.md "Online denial"): zones from before keep the compact
          // denial they answered with; new ones get NSEC3 unless they ask otherwise.
          {8, "dns online denial per zone", R"sql(
ALTER TABLE dns_zones ADD COLUMN denial text NOT NULL DEFAULT 'compact'
  CHECK (denial IN ('compact', 'nsec3', 'nsec3-optout'));
ALTER TABLE dns_zones ALTER COLUMN denial SET DEFAULT 'nsec3';
)sql"}};
}

Status ValidateDenial(std::string_view denial) {
  if (denial == "nsec3" || denial == "nsec3-optout" || denial == "compact") return OkStatus();
  return InvalidArgument("denial: nsec3, nsec3-optout or compact");
}

Result<std::string> NormalizeZoneName(std::string_view text) {
  if (text.empty()) return InvalidArgument("name: empty");
  std::string t(text);
  if (t.back() != '.') t += '.';
  auto wire = dns::NameFromText(t);
  if (!wire.ok()) return InvalidArgument("name: " + wire.status().message());
  return LowerText(*wire);
}

Status Store::Bump(db::Connection& c, std::string_view zone, std::string_view org, int64_t at_least) {
  GOVERN_ASSIGN_OR_RETURN(
      db::Rows rows,
      // RFC 1982: serials live modulo 2^32; the next one is serial + 1 (wrapping),
      // or an imported file's serial when that is later in sequence space, i.e.
      // (file - next) mod 2^32 in [1, 2^31 - 1]. -1: no file serial.
      c.ExecPrepared("UPDATE dns_zones SET serial = CASE WHEN $2 >= 0 AND "
                     "(($2 - (serial + 1) % 4294967296) + 4294967296) % 4294967296 "
                     "BETWEEN 1 AND 2147483647 THEN $2 ELSE (serial + 1) % 4294967296 END "
                     "WHERE name = $1 AND ($3 = '' OR org = $3) RETURNING serial",
                     db::Params(zone, at_least, org)));
  if (rows.empty()) return NotFound("zone " + std::string(zone) + " does not exist");
  return c.ExecPrepared("SELECT pg_notify($1, $2)", db::Params(kNotifyChannel, zone)).status();
}

Status Store::CreateZone(const CreateZoneRequest& req) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(req.name));
  if (req.algorithm != 13 && req.algorithm != 15) return InvalidArgument("algorithm: 13 or 15");
  if (req.org.empty()) return InvalidArgument("org: empty");
  if (req.dnskey_ttl > 0x7fffffff) return InvalidArgument("dnskey_ttl: 0 to 2147483647");
  GOVERN_RETURN_IF_ERROR(ValidateDenial(req.denial));
  std::string soa =
      req.soa.empty() ? "ns1." + zone + " hostmaster." + zone + " 1 3600 600 1209600 300" : req.soa;
  GOVERN_ASSIGN_OR_RETURN(auto soa_rr, ParseRRset(zone, "@", "SOA", 3600, {soa}));
  std::vector<std::string> ns = req.ns.empty() ? std::vector<std::string>{"ns1." + zone} : req.ns;
  GOVERN_ASSIGN_OR_RETURN(auto ns_rr, ParseRRset(zone, "@", "NS", 3600, ns));
  std::string sealed;
  if (req.dnssec) {
    auto alg = static_cast<dns::Algorithm>(req.algorithm);
    GOVERN_ASSIGN_OR_RETURN(dns::SigningKey key, dns::SigningKey::Generate(alg, 257));
    GOVERN_ASSIGN_OR_RETURN(std::string priv, key.Private());
    GOVERN_ASSIGN_OR_RETURN(auto s, key_->Seal(crypto::AsBytes(priv), crypto::AsBytes(zone)));
    sealed.assign(s.begin(), s.end());
    std::fill(priv.begin(), priv.end(), '\0');
  }
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        c.ExecPrepared("INSERT INTO dns_zones (name, serial, dnssec, algorithm, org, dnskey_ttl, denial) "
                       "VALUES ($1, 1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING name",
                       db::Params(zone, req.dnssec, static_cast<int32_t>(req.algorithm), req.org,
                                  static_cast<int64_t>(req.dnskey_ttl), req.denial)));
    if (rows.empty()) return AlreadyExists("zone " + zone + " exists");
    for (const auto& r : soa_rr) GOVERN_RETURN_IF_ERROR(InsertRecord(c, zone, r));
    for (const auto& r : ns_rr) GOVERN_RETURN_IF_ERROR(InsertRecord(c, zone, r));
    if (req.dnssec) {
      GOVERN_RETURN_IF_ERROR(
          c.ExecPrepared("INSERT INTO dns_zone_keys (zone, flags, algorithm, private_sealed) "
                         "VALUES ($1, 257, $2, $3)",
                         db::Params(zone, static_cast<int32_t>(req.algorithm), db::Bytea{sealed}))
              .status());
    }
    return c.ExecPrepared("SELECT pg_notify($1, $2)", db::Params(kNotifyChannel, zone)).status();
  });
}

Status Store::DeleteZone(std::string_view name, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            c.ExecPrepared("DELETE FROM dns_zones WHERE name = $1 AND ($2 = '' OR org = $2) "
                                           "RETURNING name",
                                           db::Params(zone, org)));
    if (rows.empty()) return NotFound("zone " + zone + " does not exist");
    return c.ExecPrepared("SELECT pg_notify($1, $2)", db::Params(kNotifyChannel, zone)).status();
  });
}

Status Store::CheckOwner(std::string_view name, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c->ExecPrepared("SELECT 1 FROM dns_zones WHERE name = $1 AND "
                                                         "($2 = '' OR org = $2)",
                                                         db::Params(zone, org)));
  if (rows.empty()) return NotFound("zone " + zone + " does not exist");
  return OkStatus();
}

Result<std::vector<ZoneInfo>> Store::ListZones(std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          c->ExecPrepared("SELECT name, serial, dnssec, algorithm, org, denial FROM "
                                          "dns_zones WHERE ($1 = '' OR org = $1) ORDER BY name",
                                          db::Params(org)));
  std::vector<ZoneInfo> out;
  for (int i = 0; i < rows.size(); ++i) {
    ZoneInfo z;
    z.name = std::string(rows.Text(i, 0));
    GOVERN_ASSIGN_OR_RETURN(z.serial, rows.Int64(i, 1));
    GOVERN_ASSIGN_OR_RETURN(z.dnssec, rows.Bool(i, 2));
    GOVERN_ASSIGN_OR_RETURN(int64_t alg, rows.Int64(i, 3));
    z.algorithm = static_cast<int>(alg);
    z.org = std::string(rows.Text(i, 4));
    z.denial = std::string(rows.Text(i, 5));
    out.push_back(std::move(z));
  }
  return out;
}

Status Store::SetDenial(std::string_view name, std::string_view denial, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  GOVERN_RETURN_IF_ERROR(ValidateDenial(denial));
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("UPDATE dns_zones SET denial = $2 WHERE name = $1 AND ($3 = '' OR org = $3)",
                       db::Params(zone, denial, org))
            .status());
    return Bump(c, zone, org);  // NotFound (and a rollback) for a zone that is not there or not the org's
  });
}

Status Store::ReplaceRRset(std::string_view name, std::string_view owner, std::string_view type, uint32_t ttl,
                           const std::vector<std::string>& rdatas, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  GOVERN_ASSIGN_OR_RETURN(auto records, ParseRRset(zone, owner, type, ttl, rdatas));
  GOVERN_ASSIGN_OR_RETURN(uint16_t t, dns::TypeFromText(type));
  std::string owner_text;
  if (records.empty()) {
    auto w = dns::NameFromText(owner == "@" ? std::string_view(zone) : owner, *dns::NameFromText(zone));
    if (!w.ok()) return InvalidArgument("owner: " + w.status().message());
    owner_text = LowerText(*w);
    if (t == kSoa) return InvalidArgument("type: the SOA cannot be deleted");
  } else {
    owner_text = LowerText(records[0].owner);
    if (t == kSoa && records.size() != 1) return InvalidArgument("rdata: exactly one SOA");
  }
  for (const auto& r : records) GOVERN_RETURN_IF_ERROR(CheckInZone(zone, r));
  if (t == kSoa && owner_text != zone) return InvalidArgument("owner: the SOA is at the apex");
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(Bump(c, zone, org));
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("DELETE FROM dns_records WHERE zone = $1 AND owner = $2 AND type = $3",
                       db::Params(zone, owner_text, static_cast<int32_t>(t)))
            .status());
    for (const auto& r : records) GOVERN_RETURN_IF_ERROR(InsertRecord(c, zone, r));
    return CheckBuilds(c, zone);
  });
}

Status Store::ImportZoneFile(std::string_view name, std::string_view text, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  GOVERN_ASSIGN_OR_RETURN(auto records, dns::ParseZoneFile(text, zone));
  std::vector<dns::Record> keep;
  int64_t file_serial = -1;
  for (auto& r : records) {
    if (r.type == kSoa && r.rdata.size() >= 20) {
      file_serial = dns::Get32(reinterpret_cast<const uint8_t*>(r.rdata.data()) + r.rdata.size() - 20);
    }
    GOVERN_RETURN_IF_ERROR(CheckInZone(zone, r));
    if (r.type == kDnskey || r.type == 46 || r.type == 47 || r.type == 50 || r.type == 51 || r.type == kCds ||
        r.type == kCdnskey)
      continue;  // the server makes these
    keep.push_back(std::move(r));
  }
  // The same checks as serving: a file that does not build is refused before anything is stored.
  GOVERN_RETURN_IF_ERROR(dns::Zone::Build(zone, keep).status());
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(Bump(c, zone, org, file_serial));
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("DELETE FROM dns_records WHERE zone = $1", db::Params(zone)).status());
    for (const auto& r : keep) GOVERN_RETURN_IF_ERROR(InsertRecord(c, zone, r));
    return CheckBuilds(c, zone);
  });
}

namespace {
std::string TsigAad(std::string_view name) { return "tsig:" + std::string(name); }
}  // namespace

Result<std::string> Store::CreateTsigKey(std::string_view name_text, std::string_view algorithm) {
  if (algorithm.empty()) algorithm = "hmac-sha256";
  if (algorithm != "hmac-sha256" && algorithm != "hmac-sha512")
    return InvalidArgument("algorithm: hmac-sha256 or hmac-sha512");
  if (name_text.find(':') != std::string_view::npos) return InvalidArgument("name: no ':' in a key name");
  auto name = NormalizeZoneName(name_text);  // a key name is a domain name
  if (!name.ok()) return name.status();
  if (*name == ".") return InvalidArgument("name: the root is not a key name");
  std::vector<uint8_t> secret(algorithm == "hmac-sha256" ? 32 : 64);
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(secret));
  GOVERN_ASSIGN_OR_RETURN(auto sealed, key_->Seal(secret, crypto::AsBytes(TsigAad(*name))));
  std::string b64 = crypto::Base64Encode(secret);
  std::fill(secret.begin(), secret.end(), 0);
  GOVERN_RETURN_IF_ERROR(pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        c.ExecPrepared("INSERT INTO dns_tsig_keys (name, algorithm, secret_sealed) VALUES ($1, $2, $3) "
                       "ON CONFLICT DO NOTHING RETURNING name",
                       db::Params(*name, algorithm, db::Bytea{std::string(sealed.begin(), sealed.end())})));
    if (rows.empty()) return AlreadyExists("TSIG key " + *name + " exists");
    return c.ExecPrepared("SELECT pg_notify($1, $2)", db::Params(kNotifyChannel, kTsigPayload)).status();
  }));
  return *name + ":" + std::string(algorithm) + ":" + b64;
}

Result<std::vector<TsigKeyInfo>> Store::ListTsigKeys() {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c->ExecPrepared("SELECT name, algorithm, created_at::text FROM "
                                                         "dns_tsig_keys ORDER BY name"));
  std::vector<TsigKeyInfo> out;
  for (int i = 0; i < rows.size(); ++i)
    out.push_back({std::string(rows.Text(i, 0)), std::string(rows.Text(i, 1)), std::string(rows.Text(i, 2))});
  return out;
}

Status Store::DeleteTsigKey(std::string_view name_text) {
  GOVERN_ASSIGN_OR_RETURN(std::string name, NormalizeZoneName(name_text));
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        c.ExecPrepared("DELETE FROM dns_tsig_keys WHERE name = $1 RETURNING name", db::Params(name)));
    if (rows.empty()) return NotFound("TSIG key " + name + " does not exist");
    return c.ExecPrepared("SELECT pg_notify($1, $2)", db::Params(kNotifyChannel, kTsigPayload)).status();
  });
}

Result<std::vector<dns::TsigKey>> Store::LoadTsigKeys() {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c->ExecPrepared("SELECT name, algorithm, secret_sealed FROM "
                                                         "dns_tsig_keys ORDER BY name"));
  std::vector<dns::TsigKey> out;
  for (int i = 0; i < rows.size(); ++i) {
    std::string name(rows.Text(i, 0));
    GOVERN_ASSIGN_OR_RETURN(std::string sealed, rows.Bytes(i, 2));
    auto secret = key_->Open(crypto::AsBytes(sealed), crypto::AsBytes(TsigAad(name)));
    if (!secret.ok())
      return secret.status().WithContext("TSIG key " + name + ": does not open with this data dir's key");
    dns::TsigKey k;
    GOVERN_ASSIGN_OR_RETURN(k.name, dns::NameFromText(name));
    dns::LowerName(k.name);
    k.algorithm =
        rows.Text(i, 1) == "hmac-sha512" ? dns::TsigAlgorithm::kHmacSha512 : dns::TsigAlgorithm::kHmacSha256;
    k.secret = std::string(crypto::AsString(secret->span()));
    out.push_back(std::move(k));
  }
  return out;
}

Status Store::SaveJournalVersion(std::string_view node, std::string_view zone, uint32_t serial,
                                 std::string_view version, size_t keep) {
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows rows,
        c.ExecPrepared(
            "INSERT INTO dns_journal (node, zone, serial, version) "
            "SELECT $1, name, $3, $4 FROM dns_zones WHERE name = $2 "
            "ON CONFLICT (node, zone, serial) DO UPDATE SET version = EXCLUDED.version, "
            "seq = nextval(pg_get_serial_sequence('dns_journal', 'seq')) RETURNING seq",
            db::Params(node, zone, static_cast<int64_t>(serial), db::Bytea{std::string(version)})));
    if (rows.empty()) return OkStatus();  // the zone was deleted meanwhile
    return c
        .ExecPrepared(
            "DELETE FROM dns_journal WHERE node = $1 AND zone = $2 AND seq NOT IN "
            "(SELECT seq FROM dns_journal WHERE node = $1 AND zone = $2 ORDER BY seq DESC LIMIT $3)",
            db::Params(node, zone, static_cast<int64_t>(keep)))
        .status();
  });
}

Result<std::vector<std::pair<std::string, std::string>>> Store::LoadJournal(std::string_view node) {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                          c->ExecPrepared("SELECT zone, version FROM dns_journal WHERE node = $1 "
                                          "ORDER BY zone, seq",
                                          db::Params(node)));
  std::vector<std::pair<std::string, std::string>> out;
  for (int i = 0; i < rows.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(std::string v, rows.Bytes(i, 1));
    out.emplace_back(std::string(rows.Text(i, 0)), std::move(v));
  }
  return out;
}

Result<std::vector<Store::LoadedKey>> Store::LoadKeys(db::Connection& c, std::string_view zone) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows keys, c.ExecPrepared("SELECT id, flags, algorithm, private_sealed, state, "
                                                        "created_at::text FROM dns_zone_keys "
                                                        "WHERE zone = $1 ORDER BY id",
                                                        db::Params(zone)));
  std::vector<LoadedKey> out;
  for (int i = 0; i < keys.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(int64_t id, keys.Int64(i, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t flags, keys.Int64(i, 1));
    GOVERN_ASSIGN_OR_RETURN(int64_t alg, keys.Int64(i, 2));
    GOVERN_ASSIGN_OR_RETURN(std::string sealed, keys.Bytes(i, 3));
    auto priv = key_->Open(crypto::AsBytes(sealed), crypto::AsBytes(zone));
    if (!priv.ok())
      return priv.status().WithContext("zone " + std::string(zone) +
                                       ": key does not open with this data dir's key");
    GOVERN_ASSIGN_OR_RETURN(dns::SigningKey k, dns::SigningKey::FromPrivate(static_cast<dns::Algorithm>(alg),
                                                                            static_cast<uint16_t>(flags),
                                                                            crypto::AsString(priv->span())));
    out.push_back(LoadedKey{id, std::string(keys.Text(i, 4)), std::string(keys.Text(i, 5)),
                            std::make_shared<const dns::SigningKey>(std::move(k))});
  }
  return out;
}

Result<std::shared_ptr<const dns::Zone>> Store::LoadZoneOn(db::Connection& c, std::string_view zone) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows z,
                          c.ExecPrepared("SELECT serial, dnskey_ttl, publish_cds, denial FROM dns_zones "
                                         "WHERE name = $1",
                                         db::Params(zone)));
  if (z.empty()) return NotFound("zone " + std::string(zone) + " does not exist");
  GOVERN_ASSIGN_OR_RETURN(int64_t serial, z.Int64(0, 0));
  GOVERN_ASSIGN_OR_RETURN(int64_t dnskey_ttl, z.Int64(0, 1));
  GOVERN_ASSIGN_OR_RETURN(bool publish_cds, z.Bool(0, 2));
  const std::string denial(z.Text(0, 3));
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared("SELECT owner, type, ttl, rdata FROM dns_records "
                                                        "WHERE zone = $1",
                                                        db::Params(zone)));
  std::vector<dns::Record> records;
  records.reserve(rows.size());
  for (int i = 0; i < rows.size(); ++i) {
    dns::Record r;
    GOVERN_ASSIGN_OR_RETURN(r.owner, dns::NameFromText(rows.Text(i, 0)));
    GOVERN_ASSIGN_OR_RETURN(int64_t type, rows.Int64(i, 1));
    GOVERN_ASSIGN_OR_RETURN(int64_t ttl, rows.Int64(i, 2));
    GOVERN_ASSIGN_OR_RETURN(r.rdata, rows.Bytes(i, 3));
    r.type = static_cast<uint16_t>(type);
    r.ttl = static_cast<uint32_t>(ttl);
    if (r.type == kSoa && r.rdata.size() >= 20)
      dns::Put32(reinterpret_cast<uint8_t*>(r.rdata.data()) + r.rdata.size() - 20,
                 static_cast<uint32_t>(serial));
    records.push_back(std::move(r));
  }
  GOVERN_ASSIGN_OR_RETURN(auto keys, LoadKeys(c, zone));
  dns::ZoneKeys zk;
  if (keys.empty()) return dns::Zone::Build(zone, std::move(records), zk);
  // One active key signs the zone (a CSK); an incoming or retiring one joins the DNSKEY RRset and signs
  // it, and signs the data too when its algorithm differs (RFC 4035 section 2.2). CDS/CDNSKEY: both
  // keys while one comes in, then the active key alone (docs/dns.md "Key rollover").
  std::shared_ptr<const dns::SigningKey> active, other;
  bool incoming = false;
  for (const auto& k : keys) {
    if (k.state == "active" && !active) {
      active = k.key;
    } else {
      other = k.key;
      incoming = k.state == "incoming";
    }
  }
  if (!active) return FailedPrecondition("zone " + std::string(zone) + " has no active key");
  zk.ksk = zk.zsk = active;
  if (denial == "compact") {
    zk.nsec3 = nsec3_;  // the transfer form follows dns.transfer.denial
  } else {
    // One NSEC3 chain for our answers and the transfer form (RFC 9276: 0 iterations, no salt).
    zk.online_denial = dns::OnlineDenial::kNsec3;
    zk.nsec3 = dns::Nsec3Params{.enabled = true, .opt_out = denial == "nsec3-optout"};
  }
  zk.dnskey_ttl = zk.cds_ttl = static_cast<uint32_t>(dnskey_ttl);
  if (other) {
    zk.dnskey_also.push_back(other);
    if (other->algorithm() != active->algorithm()) zk.zone_also.push_back(other);
    zk.cds.push_back(active);
    if (incoming) zk.cds.push_back(other);
  } else if (publish_cds) {
    zk.cds.push_back(active);
  }
  return dns::Zone::Build(zone, std::move(records), zk);
}

Status Store::StartRollover(std::string_view name, const RolloverRequest& req, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  if (req.algorithm != 0 && req.algorithm != 13 && req.algorithm != 15)
    return InvalidArgument("algorithm: 13 or 15");
  if (req.propagation_delay < 0 || req.propagation_delay > 30 * 86400)
    return InvalidArgument("propagation_delay: 0 to 2592000 seconds");
  if (req.parent_delay < 0 || req.parent_delay > 90 * 86400)
    return InvalidArgument("parent_delay: 0 to 7776000 seconds");
  // The zone's algorithm is needed before the key is made (outside the transaction: key generation and
  // sealing need no database); the transaction re-checks it.
  int alg = req.algorithm;
  {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c->ExecPrepared("SELECT dnssec, algorithm FROM dns_zones WHERE "
                                                           "name = $1 AND ($2 = '' OR org = $2)",
                                                           db::Params(zone, org)));
    if (rows.empty()) return NotFound("zone " + zone + " does not exist");
    GOVERN_ASSIGN_OR_RETURN(bool dnssec, rows.Bool(0, 0));
    if (!dnssec) return FailedPrecondition("zone " + zone + " is not signed");
    GOVERN_ASSIGN_OR_RETURN(int64_t current, rows.Int64(0, 1));
    if (alg == 0) alg = static_cast<int>(current);
  }
  GOVERN_ASSIGN_OR_RETURN(dns::SigningKey key,
                          dns::SigningKey::Generate(static_cast<dns::Algorithm>(alg), 257));
  GOVERN_ASSIGN_OR_RETURN(std::string priv, key.Private());
  auto sealed_or = key_->Seal(crypto::AsBytes(priv), crypto::AsBytes(zone));
  std::fill(priv.begin(), priv.end(), '\0');
  if (!sealed_or.ok()) return sealed_or.status();
  std::string sealed(sealed_or->begin(), sealed_or->end());
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_RETURN_IF_ERROR(Bump(c, zone, org));  // locks the zone row: one rollover start at a time
    GOVERN_ASSIGN_OR_RETURN(db::Rows z, c.ExecPrepared("SELECT algorithm, dnskey_ttl FROM dns_zones "
                                                       "WHERE name = $1",
                                                       db::Params(zone)));
    GOVERN_ASSIGN_OR_RETURN(int64_t from_alg, z.Int64(0, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t dnskey_ttl, z.Int64(0, 1));
    GOVERN_ASSIGN_OR_RETURN(db::Rows busy, c.ExecPrepared("SELECT phase FROM dns_rollovers WHERE zone = $1 "
                                                          "AND phase <> 'done'",
                                                          db::Params(zone)));
    if (!busy.empty())
      return FailedPrecondition("zone " + zone + ": a rollover is in phase " + std::string(busy.Text(0, 0)));
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("INSERT INTO dns_zone_keys (zone, flags, algorithm, private_sealed, "
                       "state) VALUES ($1, 257, $2, $3, 'incoming')",
                       db::Params(zone, static_cast<int32_t>(alg), db::Bytea{sealed}))
            .status());
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared(
             "INSERT INTO dns_rollovers (zone, phase, from_algorithm, to_algorithm, propagation_delay, "
             "parent_delay, next_at, await_ds) VALUES ($1, 'publish', $2, $3, $4, $5, now() + "
             "make_interval(secs => $6), $7) "
             "ON CONFLICT (zone) DO UPDATE SET phase = 'publish', from_algorithm = $2, to_algorithm = $3, "
             "propagation_delay = $4, parent_delay = $5, started_at = now(), phase_started_at = now(), "
             "next_at = now() + make_interval(secs => $6), completed_at = NULL, await_ds = $7, "
             "ds_seen_at = NULL",
             db::Params(zone, static_cast<int32_t>(from_alg), static_cast<int32_t>(alg),
                        req.propagation_delay, req.parent_delay,
                        static_cast<double>(dnskey_ttl + req.propagation_delay), req.await_ds))
            .status());
    return CheckBuilds(c, zone);
  });
}

Status Store::AdvanceOne(db::Connection& c, const std::string& zone, bool* moved) {
  *moved = false;
  GOVERN_ASSIGN_OR_RETURN(db::Rows r, c.ExecPrepared("SELECT phase, propagation_delay, parent_delay, "
                                                     "to_algorithm FROM dns_rollovers WHERE zone = $1 AND "
                                                     "phase <> 'done' AND next_at <= now() AND NOT (phase = "
                                                     "'switch' AND await_ds AND ds_seen_at IS NULL) FOR "
                                                     "UPDATE",
                                                     db::Params(zone)));
  if (r.empty()) return OkStatus();  // another process moved it first
  std::string phase(r.Text(0, 0));
  GOVERN_ASSIGN_OR_RETURN(int64_t propagation, r.Int64(0, 1));
  GOVERN_ASSIGN_OR_RETURN(int64_t parent, r.Int64(0, 2));
  GOVERN_ASSIGN_OR_RETURN(int64_t to_alg, r.Int64(0, 3));
  *moved = true;
  GOVERN_RETURN_IF_ERROR(Bump(c, zone, ""));
  if (phase == "publish") {
    // The new key signs from now on; the old one stays in DNSKEY (and signs it) until every signature
    // it made has expired from caches and the parent's DS for it is gone.
    GOVERN_RETURN_IF_ERROR(c.ExecPrepared("UPDATE dns_zone_keys SET state = CASE state WHEN 'active' THEN "
                                          "'retiring' ELSE 'active' END WHERE zone = $1 AND state IN "
                                          "('active', 'incoming')",
                                          db::Params(zone))
                               .status());
    GOVERN_ASSIGN_OR_RETURN(db::Rows t,
                            c.ExecPrepared("SELECT greatest(coalesce(max(r.ttl), 0), z.dnskey_ttl) "
                                           "FROM dns_zones z LEFT JOIN dns_records r ON r.zone = "
                                           "z.name WHERE z.name = $1 GROUP BY z.dnskey_ttl",
                                           db::Params(zone)));
    GOVERN_ASSIGN_OR_RETURN(int64_t max_ttl, t.Int64(0, 0));
    int64_t wait = std::max(max_ttl + propagation, parent);
    GOVERN_RETURN_IF_ERROR(c.ExecPrepared("UPDATE dns_zones SET algorithm = $2 WHERE name = $1",
                                          db::Params(zone, static_cast<int32_t>(to_alg)))
                               .status());
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("UPDATE dns_rollovers SET phase = 'switch', phase_started_at = now(), "
                       "next_at = now() + make_interval(secs => $2) WHERE zone = $1",
                       db::Params(zone, static_cast<double>(wait)))
            .status());
  } else {
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("DELETE FROM dns_zone_keys WHERE zone = $1 AND state = 'retiring'", db::Params(zone))
            .status());
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("UPDATE dns_zones SET publish_cds = true WHERE name = $1", db::Params(zone)).status());
    GOVERN_RETURN_IF_ERROR(
        c.ExecPrepared("UPDATE dns_rollovers SET phase = 'done', phase_started_at = now(), "
                       "next_at = NULL, completed_at = now() WHERE zone = $1",
                       db::Params(zone))
            .status());
  }
  return CheckBuilds(c, zone);
}

Status Store::ConfirmDs(std::string_view name, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  return pool_->Transact([&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(db::Rows z, c.ExecPrepared("SELECT 1 FROM dns_zones WHERE name = $1 AND "
                                                       "($2 = '' OR org = $2)",
                                                       db::Params(zone, org)));
    if (z.empty()) return NotFound("zone " + zone + " does not exist");
    GOVERN_ASSIGN_OR_RETURN(db::Rows r, c.ExecPrepared("UPDATE dns_rollovers SET ds_seen_at = now() WHERE "
                                                       "zone = $1 AND phase IN ('publish', 'switch') "
                                                       "RETURNING phase",
                                                       db::Params(zone)));
    if (r.empty()) return FailedPrecondition("zone " + zone + ": no key rollover is in publish or switch");
    return OkStatus();
  });
}

Result<std::vector<std::string>> Store::AdvanceRollovers() {
  std::vector<std::string> due;
  {
    GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
    GOVERN_ASSIGN_OR_RETURN(db::Rows rows,
                            c->ExecPrepared("SELECT zone FROM dns_rollovers WHERE phase <> 'done' AND "
                                            "next_at <= now() AND NOT (phase = 'switch' AND await_ds AND "
                                            "ds_seen_at IS NULL) ORDER BY zone"));
    for (int i = 0; i < rows.size(); ++i) due.emplace_back(rows.Text(i, 0));
  }
  std::vector<std::string> moved;
  for (const auto& zone : due) {
    bool did = false;
    GOVERN_RETURN_IF_ERROR(pool_->Transact([&](db::Connection& c) { return AdvanceOne(c, zone, &did); }));
    if (did) moved.push_back(zone);
  }
  return moved;
}

Result<KeyStatus> Store::Keys(std::string_view name, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  KeyStatus out;
  GOVERN_RETURN_IF_ERROR(ReadOwnedZone(zone, org, [&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(auto apex, dns::NameFromText(zone));
    GOVERN_ASSIGN_OR_RETURN(auto keys, LoadKeys(c, zone));
    for (const auto& k : keys) {
      out.keys.push_back(ZoneKeyInfo{.id = k.id,
                                     .key_tag = k.key->key_tag(),
                                     .algorithm = static_cast<int>(k.key->algorithm()),
                                     .flags = k.key->flags(),
                                     .state = k.state,
                                     .ds = dns::RdataToText(dns::kDS, k.key->DsRdata(apex)),
                                     .dnskey = dns::RdataToText(dns::kDNSKEY, k.key->dnskey_rdata()),
                                     .created_at = k.created_at});
    }
    GOVERN_ASSIGN_OR_RETURN(
        db::Rows r,
        c.ExecPrepared("SELECT phase, from_algorithm, to_algorithm, propagation_delay, parent_delay, "
                       "started_at::text, phase_started_at::text, coalesce(next_at::text, ''), "
                       "coalesce(completed_at::text, ''), "
                       "coalesce(greatest(0, ceil(extract(epoch FROM next_at - now())))::bigint, 0), "
                       "await_ds, coalesce(ds_seen_at::text, '') "
                       "FROM dns_rollovers WHERE zone = $1",
                       db::Params(zone)));
    if (r.empty()) return OkStatus();
    out.rollover_present = true;
    RolloverInfo& ro = out.rollover;
    ro.phase = std::string(r.Text(0, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t fa, r.Int64(0, 1));
    GOVERN_ASSIGN_OR_RETURN(int64_t ta, r.Int64(0, 2));
    ro.from_algorithm = static_cast<int>(fa);
    ro.to_algorithm = static_cast<int>(ta);
    GOVERN_ASSIGN_OR_RETURN(ro.propagation_delay, r.Int64(0, 3));
    GOVERN_ASSIGN_OR_RETURN(ro.parent_delay, r.Int64(0, 4));
    ro.started_at = std::string(r.Text(0, 5));
    ro.phase_started_at = std::string(r.Text(0, 6));
    ro.next_at = std::string(r.Text(0, 7));
    ro.completed_at = std::string(r.Text(0, 8));
    GOVERN_ASSIGN_OR_RETURN(ro.seconds_left, r.Int64(0, 9));
    GOVERN_ASSIGN_OR_RETURN(ro.await_ds, r.Bool(0, 10));
    ro.ds_seen_at = std::string(r.Text(0, 11));
    return OkStatus();
  }));
  return out;
}

Status Store::CheckBuilds(db::Connection& c, std::string_view zone) {
  auto built = LoadZoneOn(c, zone);
  if (built.ok()) return OkStatus();
  if (built.status().code() == Code::kInvalidArgument || built.status().code() == Code::kFailedPrecondition) {
    return InvalidArgument("zone: " + built.status().message());
  }
  return built.status();
}

Result<std::shared_ptr<const dns::Zone>> Store::LoadZone(std::string_view name) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  return LoadZoneOn(*c, zone);
}

Result<std::vector<std::shared_ptr<const dns::Zone>>> Store::LoadAll() {
  GOVERN_ASSIGN_OR_RETURN(db::Pool::Lease c, pool_->Checkout());
  GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c->ExecPrepared("SELECT name FROM dns_zones ORDER BY name"));
  std::vector<std::shared_ptr<const dns::Zone>> out;
  for (int i = 0; i < rows.size(); ++i) {
    auto z = LoadZoneOn(*c, rows.Text(i, 0));
    if (z.status().code() == Code::kNotFound) continue;  // deleted meanwhile
    if (!z.ok()) return z.status();
    out.push_back(std::move(*z));
  }
  return out;
}

Result<std::shared_ptr<const dns::Zone>> Store::LoadZoneFor(std::string_view name, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(std::string zone, NormalizeZoneName(name));
  std::shared_ptr<const dns::Zone> out;
  GOVERN_RETURN_IF_ERROR(ReadOwnedZone(zone, org, [&](db::Connection& c) -> Status {
    GOVERN_ASSIGN_OR_RETURN(out, LoadZoneOn(c, zone));
    return OkStatus();
  }));
  return out;
}

Status Store::ReadOwnedZone(const std::string& zone, std::string_view org,
                            const std::function<Status(db::Connection&)>& read) {
  // One snapshot for the owner check and the read: a zone deleted and re-made by another org between
  // them cannot be read.
  return pool_->Transact(
      [&](db::Connection& c) -> Status {
        GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared("SELECT 1 FROM dns_zones WHERE name = $1 AND "
                                                              "($2 = '' OR org = $2)",
                                                              db::Params(zone, org)));
        if (rows.empty()) return NotFound("zone " + zone + " does not exist");
        return read(c);
      },
      db::TxOptions{.isolation = db::Isolation::kRepeatableRead, .read_only = true});
}

Result<std::vector<dns::Record>> Store::Records(std::string_view zone, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(auto z, LoadZoneFor(zone, org));
  return z->Records();
}

Result<std::string> Store::ExportZoneFile(std::string_view zone, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(auto records, Records(zone, org));
  return dns::PrintZoneFile(records);
}

Result<std::vector<dns::Record>> Store::DsRecords(std::string_view zone, std::string_view org) {
  GOVERN_ASSIGN_OR_RETURN(auto z, LoadZoneFor(zone, org));
  if (!z->signed_zone()) return FailedPrecondition("zone " + std::string(zone) + " is not signed");
  return z->DsRecords();
}

}  // namespace govern::dns_service
