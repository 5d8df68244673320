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

constexpr uint16_t kSoa = 6, kDnskey = 48;

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
      *t == 51 /*NSEC3PARAM*/) {
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
)sql"}};
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
        c.ExecPrepared(
            "INSERT INTO dns_zones (name, serial, dnssec, algorithm, org) VALUES ($1, 1, $2, $3, $4) "
            "ON CONFLICT DO NOTHING RETURNING name",
            db::Params(zone, req.dnssec, static_cast<int32_t>(req.algorithm), req.org)));
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
                          c->ExecPrepared("SELECT name, serial, dnssec, algorithm, org FROM "
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
    out.push_back(std::move(z));
  }
  return out;
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
    if (r.type == kDnskey || r.type == 46 || r.type == 47 || r.type == 50 || r.type == 51)
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

Result<std::shared_ptr<const dns::Zone>> Store::LoadZoneOn(db::Connection& c, std::string_view zone) {
  GOVERN_ASSIGN_OR_RETURN(db::Rows z,
                          c.ExecPrepared("SELECT serial FROM dns_zones WHERE name = $1", db::Params(zone)));
  if (z.empty()) return NotFound("zone " + std::string(zone) + " does not exist");
  GOVERN_ASSIGN_OR_RETURN(int64_t serial, z.Int64(0, 0));
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
  GOVERN_ASSIGN_OR_RETURN(db::Rows keys,
                          c.ExecPrepared("SELECT flags, algorithm, private_sealed FROM dns_zone_keys "
                                         "WHERE zone = $1",
                                         db::Params(zone)));
  dns::ZoneKeys zk;
  for (int i = 0; i < keys.size(); ++i) {
    GOVERN_ASSIGN_OR_RETURN(int64_t flags, keys.Int64(i, 0));
    GOVERN_ASSIGN_OR_RETURN(int64_t alg, keys.Int64(i, 1));
    GOVERN_ASSIGN_OR_RETURN(std::string sealed, keys.Bytes(i, 2));
    auto priv = key_->Open(crypto::AsBytes(sealed), crypto::AsBytes(zone));
    if (!priv.ok())
      return priv.status().WithContext("zone " + std::string(zone) +
                                       ": key does not open with this data dir's key");
    GOVERN_ASSIGN_OR_RETURN(dns::SigningKey k, dns::SigningKey::FromPrivate(static_cast<dns::Algorithm>(alg),
                                                                            static_cast<uint16_t>(flags),
                                                                            crypto::AsString(priv->span())));
    auto shared = std::make_shared<const dns::SigningKey>(std::move(k));
    zk.ksk = shared;
    zk.zsk = shared;
    zk.nsec3 = nsec3_;
  }
  return dns::Zone::Build(zone, std::move(records), zk);
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
  // One snapshot for the owner check and the load: a zone deleted and re-made by another org between
  // them cannot be read.
  GOVERN_RETURN_IF_ERROR(pool_->Transact(
      [&](db::Connection& c) -> Status {
        GOVERN_ASSIGN_OR_RETURN(db::Rows rows, c.ExecPrepared("SELECT 1 FROM dns_zones WHERE name = $1 AND "
                                                              "($2 = '' OR org = $2)",
                                                              db::Params(zone, org)));
        if (rows.empty()) return NotFound("zone " + zone + " does not exist");
        GOVERN_ASSIGN_OR_RETURN(out, LoadZoneOn(c, zone));
        return OkStatus();
      },
      db::TxOptions{.isolation = db::Isolation::kRepeatableRead, .read_only = true}));
  return out;
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
