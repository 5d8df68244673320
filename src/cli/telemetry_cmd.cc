// `govern telemetry ...`: API keys, the write-ahead log, the ingest cursor, exports and DLP policies.
#include "cli/telemetry_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/database.h"
#include "db/connection.h"
#include "db/pool.h"
#include "services/telemetry/api_keys.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/archive_config.h"
#include "services/telemetry/dlp_policies.h"
#include "services/telemetry/ingest.h"
#include "services/telemetry/ndjson.h"
#include "services/telemetry/record.h"
#include "services/telemetry/schema.h"
#include "services/telemetry/service.h"
#include "storage/wal.h"

namespace govern::cli {
namespace {

int Fail(const Status& s) {
  std::fprintf(stderr, "govern: %s\n", s.message().c_str());
  return 1;
}

// A connection to the database `govern serve` uses, with the telemetry tables in place, and a small pool.
class TelemetryStore : public ServiceDatabase {
 public:
  Status Open(const config::Config& cfg) {
    GOVERN_RETURN_IF_ERROR(ServiceDatabase::Open(cfg, "telemetry", telemetry::Migrations()));
    auto pool = db::Pool::Create({.conninfo = conninfo(), .max_size = 2});
    if (!pool.ok()) return pool.status().WithContext("connect to PostgreSQL");
    pool_ = std::move(*pool);
    return OkStatus();
  }
  db::Pool& pool() { return *pool_; }

 private:
  std::unique_ptr<db::Pool> pool_;  // closes before the connection and the private cluster
};

// Opens the telemetry WAL the way the service does, explaining the lock when the service holds it.
Result<std::unique_ptr<wal::Log>> OpenWal(const config::Config& cfg) {
  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(cfg.GetString("data_dir"), ec).lexically_normal();
  std::string dir = telemetry::WalDir(cfg, data_dir);
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound("no telemetry write-ahead log at " + dir + " (set data_dir or telemetry.wal_dir)");
  }
  auto log = wal::Log::Open(dir);
  if (!log.ok() && log.status().code() == Code::kFailedPrecondition) {
    return FailedPrecondition("the telemetry write-ahead log at " + dir +
                              " is in use: a running govern (serve telemetry or up) holds its lock. "
                              "Stop it first.");
  }
  if (!log.ok()) return log.status().WithContext("open " + dir);
  return log;
}

std::string ReadAll(std::FILE* f) {
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

// RFC 3339 in UTC with nanoseconds: 2026-11-30T01:02:03.123456789Z.
std::string FormatTime(int64_t unix_nanos) {
  int64_t secs = unix_nanos / 1'000'000'000;
  int64_t nanos = unix_nanos % 1'000'000'000;
  if (nanos < 0) {
    nanos += 1'000'000'000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(nanos));
  return buf;
}

// value_json back into JSON (it always is JSON; a malformed one is shown as its text).
nlohmann::ordered_json JsonValue(const std::string& text) {
  auto v = nlohmann::ordered_json::parse(text, nullptr, false);
  if (v.is_discarded()) return text;
  return v;
}

nlohmann::ordered_json Attributes(const std::vector<telemetry::Attribute>& attrs) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& a : attrs) out[a.key] = JsonValue(a.value_json);
  return out;
}

nlohmann::ordered_json EventJson(uint64_t seq, const telemetry::Event& e) {
  nlohmann::ordered_json j;
  j["seq"] = seq;
  j["id"] = e.id;
  j["org"] = e.org;
  j["time"] = FormatTime(e.time_unix_nanos);
  j["time_unix_nanos"] = e.time_unix_nanos;
  j["observed_unix_nanos"] = e.observed_unix_nanos;
  j["type"] = e.type;
  j["severity_text"] = e.severity_text;
  j["severity_number"] = e.severity_number;
  switch (e.body_kind) {
    case telemetry::BodyKind::kNone:
      j["body"] = nullptr;
      break;
    case telemetry::BodyKind::kString:
      j["body"] = e.body;
      break;
    case telemetry::BodyKind::kJson:
      j["body"] = JsonValue(e.body);
      break;
  }
  j["attributes"] = Attributes(e.attributes);
  j["resource_attributes"] = Attributes(e.resource_attributes);
  j["service_name"] = e.service_name;
  j["scope_name"] = e.scope_name;
  j["scope_version"] = e.scope_version;
  j["trace_id"] = e.trace_id_hex;
  j["span_id"] = e.span_id_hex;
  j["flags"] = e.flags;
  j["dropped_attributes_count"] = e.dropped_attributes_count;
  return j;
}

}  // namespace

TelemetryCommand::TelemetryCommand(CLI::App& app) {
  telemetry_ = app.add_subcommand(
      "telemetry", "Telemetry: API keys, write-ahead log, ingest cursor, export, DLP policies");
  telemetry_->require_subcommand(1);
  keys_.emplace(
      *telemetry_,
      ServiceKeysCommand::Options{
          .service = "telemetry",
          .migrations = telemetry::Migrations,
          .table = &telemetry::IngestKeys(),
          .keys_help = "API keys: one organisation each, stored hashed",
          .org_help = "Organisation the key sends or reads as",
          .scope_help = "ingest (send events) or query (read them)",
          .scope = "ingest",
          .revoke_help = "Revoke a key; running services stop accepting it within telemetry.key_cache_ttl",
          .key_id_help = "The key's id (the 12 characters after gvk_)",
          .ttl_key = "telemetry.key_cache_ttl"});

  CLI::App* wal = telemetry_->add_subcommand("wal", "The telemetry write-ahead log");
  wal->require_subcommand(1);
  wal_inspect_ = wal->add_subcommand(
      "inspect",
      "Print the WAL's records (sequence, events, organisations, receive time); the service "
      "must not be running");
  wal_inspect_->add_option("--from", from_, "First sequence to print (default: the oldest kept)");
  wal_inspect_->add_option("--limit", limit_, "Most records to print (default: all)");
  wal_inspect_->add_flag("--events", events_, "Also print every event, one JSON object per line");

  CLI::App* ingest = telemetry_->add_subcommand("ingest", "The ingest cursor (WAL -> PostgreSQL)");
  ingest->require_subcommand(1);
  ingest_status_ = ingest->add_subcommand("status", "Where ingest stands in the write-ahead log");
  ingest_replay_ = ingest->add_subcommand(
      "replay",
      "Move the ingest cursor back to SEQ so ingest stores the WAL's records from there again (events "
      "already stored are skipped by id); the service must not be running");
  ingest_replay_->add_option("--from", from_, "WAL sequence to replay from")->required();
  ingest_skip_ = ingest->add_subcommand(
      "skip",
      "Move the ingest cursor past the record SEQ it is stopped on (a record PostgreSQL refuses); its "
      "events are not stored. The service must not be running");
  ingest_skip_->add_option("--seq", from_, "The record to skip: must be where the cursor stands")->required();
  for (CLI::App* c : {ingest_status_, ingest_replay_, ingest_skip_}) {
    c->add_option("--cursor", cursor_, "Cursor name (telemetry.ingest.cursor)");
  }

  export_ = telemetry_->add_subcommand(
      "export", "Write one organisation's hour (PostgreSQL and archive) to a local Parquet file");
  export_->add_option("--org", org_, "Organisation")->required();
  export_->add_option("--hour", hour_, "The hour, UTC: 2026-11-30T14")->required();
  export_->add_option("--out", out_, "Parquet file to write")->required();

  CLI::App* dlp = telemetry_->add_subcommand("dlp-policy", "An organisation's DLP policy for query results");
  dlp->require_subcommand(1);
  dlp_get_ = dlp->add_subcommand("get", "Print the stored policy (never its hash key)");
  dlp_set_ = dlp->add_subcommand("set", "Validate and store a policy (JSON, see docs/telemetry-query.md)");
  dlp_set_->add_option("file", file_, "JSON file, or - for standard input")->required();
  dlp_delete_ = dlp->add_subcommand("delete", "Remove the policy (the built-in detectors with mask apply)");
  for (CLI::App* c : {dlp_get_, dlp_set_, dlp_delete_}) c->add_option("--org", org_, "Organisation")->required();
}

bool TelemetryCommand::parsed() const { return telemetry_->parsed(); }

int TelemetryCommand::Run(const config::Config& cfg) {
  if (keys_->parsed()) return keys_->Run(cfg);
  if (wal_inspect_->parsed()) return WalInspect(cfg);
  if (ingest_status_->parsed() || ingest_replay_->parsed() || ingest_skip_->parsed()) return Ingest(cfg);
  if (export_->parsed()) return Export(cfg);
  if (dlp_get_->parsed() || dlp_set_->parsed() || dlp_delete_->parsed()) return DlpPolicy(cfg);
  return 2;
}

int TelemetryCommand::Ingest(const config::Config& cfg) {
  std::string cursor = cursor_.empty() ? cfg.GetString("telemetry.ingest.cursor") : cursor_;
  // The WAL first: its lock proves the service is not running (a running ingester owns the cursors).
  auto log = OpenWal(cfg);
  if (!log.ok()) return Fail(log.status());
  TelemetryStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  // One row per ingest worker (telemetry.ingest.workers); the lowest is the first record not stored.
  auto rows = telemetry::ListIngestCursors(store.conn(), cursor);
  if (!rows.ok()) return Fail(rows.status());
  if (rows->empty()) return Fail(NotFound("no ingest cursor \"" + cursor + "\": ingest has not run yet"));
  uint64_t at = rows->front().next_seq;
  for (const telemetry::IngestCursorRow& r : *rows) at = std::min(at, r.next_seq);
  uint64_t first = (*log)->FirstSequence(), durable = (*log)->DurableSequence();
  if (ingest_status_->parsed()) {
    std::printf("cursor %s  next %llu  wal %llu..%llu  unstored records %llu\n", cursor.c_str(),
                static_cast<unsigned long long>(at), static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(durable),
                static_cast<unsigned long long>(durable + 1 > at ? durable + 1 - at : 0));
    for (const telemetry::IngestCursorRow& r : *rows) {
      // (Not the word "next": scripts read the overall figure from the first line.)
      std::printf("  worker %zu/%zu  row %s  at %llu\n", r.shard, r.shards, r.name.c_str(),
                  static_cast<unsigned long long>(r.next_seq));
    }
    if (rows->size() != rows->front().shards || rows->back().shards != rows->front().shards) {
      std::printf("  (rows of more than one layout: the next start of ingest merges them)\n");
    }
    return 0;
  }
  if (ingest_replay_->parsed()) {
    if (from_ < first || from_ > at) {
      return Fail(InvalidArgument("--from " + std::to_string(from_) +
                                  " must lie between the oldest record the WAL keeps (" +
                                  std::to_string(first) + ") and the cursor (" + std::to_string(at) + ")"));
    }
    auto before = telemetry::ReplayIngestFrom(store.pool(), cursor, from_);
    if (!before.ok()) return Fail(before.status());
    std::printf("moved cursor %s from %llu to %llu\n", cursor.c_str(), static_cast<unsigned long long>(at),
                static_cast<unsigned long long>(from_));
    return 0;
  }
  if (from_ > durable) return Fail(InvalidArgument("record " + std::to_string(from_) + " is not in the WAL"));
  auto owner = telemetry::SkipIngestRecord(store.pool(), cursor, from_);
  if (!owner.ok()) return Fail(owner.status());
  std::printf("moved cursor %s from %llu to %llu\n", owner->name.c_str(),
              static_cast<unsigned long long>(from_), static_cast<unsigned long long>(from_ + owner->shards));
  return 0;
}

int TelemetryCommand::Export(const config::Config& cfg) {
  if (Status s = telemetry::ValidateOrg(org_); !s.ok()) return Fail(s);
  auto t = telemetry::ParseRfc3339Nanos(hour_ + ":00:00Z");
  if (!t.ok() || telemetry::HourOf(*t) != *t) {
    return Fail(InvalidArgument("--hour \"" + hour_ + "\": expected a UTC hour like 2026-11-30T14"));
  }
  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(cfg.GetString("data_dir"), ec).lexically_normal();
  auto objects = telemetry::OpenArchiveStore(cfg, data_dir);
  if (!objects.ok()) return Fail(objects.status());
  TelemetryStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  telemetry::Archive archive(&store.pool(), objects->get());
  if (Status s = archive.ExportHour(store.conn(), org_, *t, out_); !s.ok()) return Fail(s);
  std::fprintf(stderr, "wrote %s\n", out_.c_str());
  return 0;
}

int TelemetryCommand::DlpPolicy(const config::Config& cfg) {
  if (Status s = telemetry::ValidateOrg(org_); !s.ok()) return Fail(s);
  std::string doc;
  if (dlp_set_->parsed()) {
    std::FILE* f = file_ == "-" ? stdin : std::fopen(file_.c_str(), "rb");
    if (f == nullptr) return Fail(ErrnoStatus(errno, "open " + file_));
    doc = ReadAll(f);
    if (f != stdin) std::fclose(f);
    if (auto parsed = telemetry::ParseDlpPolicy(doc); !parsed.ok()) return Fail(parsed.status());
  }
  TelemetryStore store;
  if (Status s = store.Open(cfg); !s.ok()) return Fail(s);
  if (dlp_get_->parsed()) {
    auto p = telemetry::GetDlpPolicy(store.conn(), org_);
    if (!p.ok()) return Fail(p.status());
    if (!p->has_value()) {
      std::fprintf(stderr, "organisation %s has no policy: the built-in detectors mask\n", org_.c_str());
      return 0;
    }
    std::printf("%s\n", (*p)->c_str());
    return 0;
  }
  if (dlp_set_->parsed()) {
    auto stored = telemetry::SetDlpPolicy(store.conn(), org_, doc);
    if (!stored.ok()) return Fail(stored.status());
    std::printf("%s\n", stored->c_str());
    std::fprintf(stderr, "stored; running services apply it within a few seconds\n");
    return 0;
  }
  auto deleted = telemetry::DeleteDlpPolicy(store.conn(), org_);
  if (!deleted.ok()) return Fail(deleted.status());
  std::fprintf(stderr, *deleted ? "deleted\n" : "organisation %s had no policy\n", org_.c_str());
  return 0;
}

int TelemetryCommand::WalInspect(const config::Config& cfg) {
  auto log = OpenWal(cfg);
  if (!log.ok()) return Fail(log.status());
  uint64_t from = std::max(from_, (*log)->FirstSequence());
  auto reader = (*log)->NewReader(from);
  if (!reader.ok()) return Fail(reader.status());
  uint64_t printed = 0;
  for (;;) {
    if (limit_ != 0 && printed >= limit_) break;
    auto rec = (*reader)->Next();
    if (!rec.ok()) return Fail(rec.status());
    if (!rec->has_value()) break;
    const wal::Record& r = **rec;
    auto batch = telemetry::DecodeRecord(r.data);
    if (!batch.ok()) {
      std::printf("seq %llu  undecodable: %s\n", static_cast<unsigned long long>(r.seq),
                  batch.status().message().c_str());
      ++printed;
      continue;
    }
    std::set<std::string> orgs;
    for (const auto& e : batch->events) orgs.insert(e.org);
    std::string org_list;
    for (const auto& o : orgs) org_list += (org_list.empty() ? "" : ",") + o;
    std::printf("seq %llu  events %zu  orgs %s  received %s\n", static_cast<unsigned long long>(r.seq),
                batch->events.size(), org_list.c_str(), FormatTime(batch->received_unix_nanos).c_str());
    if (events_) {
      for (const auto& e : batch->events) std::printf("%s\n", EventJson(r.seq, e).dump().c_str());
    }
    ++printed;
  }
  std::fprintf(stderr, "%llu records printed; the log holds %llu to %llu\n",
               static_cast<unsigned long long>(printed),
               static_cast<unsigned long long>((*log)->FirstSequence()),
               static_cast<unsigned long long>((*log)->DurableSequence()));
  return 0;
}

}  // namespace govern::cli
