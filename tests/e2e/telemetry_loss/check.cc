// telemetry_loss_check: after a zero-loss scenario, proves that every acknowledged event is stored
// exactly once, with the content that was sent, across PostgreSQL and the Parquet archive.
//
//   telemetry_loss_check --pg CONNINFO --archive-dir DIR --org ORG --acked FILE [--wait SECONDS]
//                        [--min-archived N]
//
// FILE is telemetry_loadgen's acked file ("id<TAB>content-hash" per acknowledged event). Every stored
// event of ORG is read without deduplication: PostgreSQL's rows page by page (QueryRecent) and every
// manifest-listed file whole (Archive::ReadFile). Fails (exit 1) when an acknowledged id is missing,
// when any id is stored more than once (in PostgreSQL, in the archive, or in both), or when a stored
// event's content hash differs from the one acknowledged. Stored events that were never acknowledged
// are allowed (a reply lost to a kill), once each. With --wait it re-reads until nothing acknowledged is
// missing or the time is up (ingest catching up after a restart), then checks. --min-archived fails
// the run when fewer events than N are in the archive (so a compaction scenario cannot pass without
// compacting).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <unordered_map>

#include "generator.h"  // bench/telemetry: benchgen::ContentHash
#include "db/pool.h"
#include "services/telemetry/archive.h"
#include "services/telemetry/query.h"
#include "storage/objstore/local_store.h"

namespace {

using govern::Result;
using govern::Status;
namespace telemetry = govern::telemetry;

struct Seen {
  int pg = 0;
  int archive = 0;
  std::string hash;  // of the first copy found
};

struct Args {
  std::string pg, archive_dir, org, acked;
  int wait_s = 0;
  int64_t min_archived = 0;
};

Status ReadStored(govern::db::Pool& pool, telemetry::Archive& archive, const std::string& org,
                  std::unordered_map<std::string, Seen>* seen, int64_t* archived) {
  seen->clear();
  *archived = 0;
  auto conn = pool.Checkout();
  if (!conn.ok()) return conn.status();
  telemetry::EventQuery q;
  q.org = org;
  q.newest_first = false;
  q.limit = 5000;
  for (;;) {
    auto page = telemetry::QueryRecent(**conn, q);
    if (!page.ok()) return page.status();
    for (const auto& e : *page) {
      Seen& s = (*seen)[e.event.id];
      if (s.pg + s.archive == 0) s.hash = telemetry::benchgen::ContentHash(e.event);
      ++s.pg;
    }
    if (page->size() < q.limit) break;
    q.after = page->back().key();
  }
  auto files = archive.ListFiles(**conn, org, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max());
  if (!files.ok()) return files.status();
  for (const auto& f : *files) {
    auto rows = archive.ReadFile(f);
    if (!rows.ok()) return rows.status();
    for (const auto& e : *rows) {
      Seen& s = (*seen)[e.event.id];
      if (s.pg + s.archive == 0) s.hash = telemetry::benchgen::ContentHash(e.event);
      ++s.archive;
      ++*archived;
    }
  }
  return govern::OkStatus();
}

int Run(const Args& a) {
  std::unordered_map<std::string, std::string> acked;  // id -> content hash
  {
    std::ifstream in(a.acked);
    if (!in) {
      std::fprintf(stderr, "check: cannot read %s\n", a.acked.c_str());
      return 2;
    }
    std::string line;
    while (std::getline(in, line)) {
      auto tab = line.find('\t');
      if (tab == std::string::npos) continue;
      acked[line.substr(0, tab)] = line.substr(tab + 1);
    }
  }
  auto pool = govern::db::Pool::Create({.conninfo = a.pg, .max_size = 2});
  if (!pool.ok()) {
    std::fprintf(stderr, "check: %s\n", pool.status().ToString().c_str());
    return 2;
  }
  auto store = govern::objstore::LocalStore::Open(a.archive_dir);
  if (!store.ok()) {
    std::fprintf(stderr, "check: %s\n", store.status().ToString().c_str());
    return 2;
  }
  telemetry::Archive archive(pool->get(), store->get());
  std::unordered_map<std::string, Seen> seen;
  int64_t archived = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.wait_s);
  size_t missing = 0;
  for (;;) {
    if (Status s = ReadStored(**pool, archive, a.org, &seen, &archived); !s.ok()) {
      std::fprintf(stderr, "check: %s\n", s.ToString().c_str());
      return 2;
    }
    missing = 0;
    for (const auto& [id, hash] : acked) missing += seen.count(id) == 0 ? 1 : 0;
    if (missing == 0 || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  size_t duplicated = 0, mismatched = 0, unacked = 0, in_pg = 0;
  for (const auto& [id, s] : seen) {
    in_pg += s.pg > 0 ? 1 : 0;
    if (s.pg + s.archive > 1) {
      if (duplicated++ < 5) std::fprintf(stderr, "stored %d times (pg %d, archive %d): %s\n", s.pg + s.archive, s.pg, s.archive, id.c_str());
    }
    auto it = acked.find(id);
    if (it == acked.end()) {
      ++unacked;
    } else if (it->second != s.hash) {
      if (mismatched++ < 5) std::fprintf(stderr, "content differs: %s\n", id.c_str());
    }
  }
  size_t shown = 0;
  for (const auto& [id, hash] : acked) {
    if (seen.count(id) == 0 && shown++ < 5) std::fprintf(stderr, "missing: %s\n", id.c_str());
  }
  std::printf(
      "acknowledged %zu  stored %zu (postgres %zu, archive %lld)  missing %zu  duplicated %zu  "
      "content differs %zu  stored but unacknowledged %zu\n",
      acked.size(), seen.size(), in_pg, static_cast<long long>(archived), missing, duplicated, mismatched,
      unacked);
  bool ok = missing == 0 && duplicated == 0 && mismatched == 0 && !acked.empty();
  if (archived < a.min_archived) {
    std::printf("only %lld events archived, expected at least %lld\n", static_cast<long long>(archived),
                static_cast<long long>(a.min_archived));
    ok = false;
  }
  if (acked.empty()) std::printf("nothing was acknowledged: the scenario proved nothing\n");
  std::printf("%s\n", ok ? "OK: every acknowledged event stored exactly once" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--pg") a.pg = v;
    else if (k == "--archive-dir") a.archive_dir = v;
    else if (k == "--org") a.org = v;
    else if (k == "--acked") a.acked = v;
    else if (k == "--wait") a.wait_s = std::stoi(v);
    else if (k == "--min-archived") a.min_archived = std::stoll(v);
    else {
      std::fprintf(stderr, "check: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.pg.empty() || a.archive_dir.empty() || a.org.empty() || a.acked.empty()) {
    std::fprintf(stderr, "usage: telemetry_loss_check --pg CONNINFO --archive-dir DIR --org ORG --acked FILE [--wait S] [--min-archived N]\n");
    return 2;
  }
  return Run(a);
}
