// Internal: the compiled database, the pool of per-thread scan state, and RuleSet::Impl, shared by
// rule_set.cc (text) and json.cc (JSON documents). Not part of the public API.
#pragma once

#include <hs.h>
#include <simdjson.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dlp/detectors.h"
#include "dlp/rule_set.h"

namespace govern::dlp::internal {

// Built-in ids point at static storage, so a Finding of a built-in detector stays valid even after its
// RuleSet is gone; custom names are owned by the Database.
struct Detector {
  std::string_view id;
  std::string_view category;
  int priority = 0;
};

struct PatternEntry {
  unsigned detector;
  Validator validator;  // may be null
  bool som;             // reports its start; otherwise the validator finds it
};

struct RawMatch {
  unsigned pattern;
  size_t from;
  size_t to;
};

struct Candidate {
  unsigned detector;
  size_t begin;
  size_t end;
};

// Everything one scan needs, reused across scans so the steady state allocates nothing.
struct Worker {
  hs_scratch_t* scratch = nullptr;
  std::vector<RawMatch> raw;
  std::vector<Candidate> candidates;
  std::vector<Candidate> findings;  // resolved, ordered by begin
  std::vector<size_t> covered;      // per detector: end of the last accepted candidate
  std::vector<uint32_t> counts;     // per detector, for Outcome
  std::string sanitized;            // input with invalid UTF-8 replaced, when a UTF-8 rule needs it
  std::string unescaped;            // a JSON string value, unescaped
  std::string redacted;             // a JSON string value, redacted
  std::string padded;               // a JSON document copied with simdjson's padding
  simdjson::dom::parser parser;
  ~Worker();
};

// An immutable vectorscan database plus what its pattern ids mean. Shared by every RuleSet compiled
// from policies with the same patterns (all policies without custom rules share one).
class Database {
 public:
  ~Database();
  // detectors: the full detector table (built-ins first); patterns: what each hs id means.
  static Result<std::shared_ptr<const Database>> Build(
      std::vector<Detector> detectors, std::vector<PatternEntry> patterns,
      const std::vector<std::string>& expressions, const std::vector<unsigned>& flags,
      size_t first_custom_pattern, const std::vector<std::string>& custom_ids, bool has_utf8,
      std::vector<std::unique_ptr<std::string>> names);

  const std::vector<Detector>& detectors() const { return detectors_; }
  unsigned PatternDetector(unsigned pattern) const { return patterns_[pattern].detector; }

  // A worker for the calling thread; give it back with Release (the Lease below does).
  std::unique_ptr<Worker> Acquire() const;
  void Release(std::unique_ptr<Worker> w) const;

  // Fills w->findings for `text`. enabled: per detector. False when the text could not be scanned (over
  // 4 GiB, no memory for scratch): callers fail closed.
  bool Find(Worker* w, std::string_view text, const std::vector<uint8_t>& enabled) const;

 private:
  Database() = default;
  hs_database_t* db_ = nullptr;
  hs_scratch_t* prototype_ = nullptr;
  std::vector<Detector> detectors_;
  std::vector<std::unique_ptr<std::string>> names_;  // storage for custom rules' ids and categories
  std::vector<PatternEntry> patterns_;
  bool has_utf8_ = false;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Worker>> free_;
};

class Lease {
 public:
  explicit Lease(const Database& db) : db_(db), w_(db.Acquire()) {}
  ~Lease() { db_.Release(std::move(w_)); }
  Worker* operator->() { return w_.get(); }
  Worker* get() { return w_.get(); }

 private:
  const Database& db_;
  std::unique_ptr<Worker> w_;
};

// HMAC-SHA256(key, data) as 16 lower-case hex characters (the first 8 bytes). hmac.cc.
std::string HmacHex16(std::string_view key, std::string_view data);

}  // namespace govern::dlp::internal

namespace govern::dlp {

struct RuleSet::Impl {
  std::shared_ptr<const internal::Database> db;
  std::vector<uint8_t> enabled;  // per detector
  std::vector<Action> actions;   // per detector
  std::string hash_key;
  bool generic_secret_enabled = false;
  unsigned generic_secret = 0;  // its detector index
  bool json_prefilter = true;   // no anchored custom pattern: a whole-document scan finds every value match

  // Replaces the value text[f.begin, f.end) per its detector's action.
  void Replace(const internal::Candidate& f, std::string_view text, std::string* out) const;
  // Writes text with every finding in w->findings replaced; counts them. Returns true if dropped.
  bool Apply(internal::Worker* w, std::string_view text, std::string* out) const;
  void Count(internal::Worker* w, Outcome* outcome) const;
};

}  // namespace govern::dlp
