// Compiling a Policy into one vectorscan database, and scanning/redacting text with it.
#include "dlp/rule_set.h"

#include <algorithm>
#include <climits>
#include <string>

#include "dlp/engine.h"

namespace govern::dlp {

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kMask:
      return "mask";
    case Action::kPartialMask:
      return "partial";
    case Action::kHash:
      return "hash";
    case Action::kDrop:
      return "drop";
  }
  return "mask";
}

Result<Action> ParseAction(std::string_view name) {
  for (Action a : {Action::kMask, Action::kPartialMask, Action::kHash, Action::kDrop}) {
    if (name == ActionName(a)) return a;
  }
  return InvalidArgument("unknown DLP action \"" + std::string(name) + "\" (mask, partial, hash, drop)");
}

namespace internal {
namespace {

int OnMatch(unsigned id, unsigned long long from, unsigned long long to, unsigned /*flags*/, void* ctx) {
  auto* raw = static_cast<std::vector<RawMatch>*>(ctx);
  // Unbounded patterns report every end for one start; keep the longest so the buffer stays small.
  // (Patterns without start tracking report from = 0: never merge those.)
  if (from != 0 && !raw->empty() && raw->back().pattern == id && raw->back().from == from) {
    raw->back().to = to;
    return 0;
  }
  raw->push_back({id, static_cast<size_t>(from), static_cast<size_t>(to)});
  return 0;
}

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Replaces every byte that is not part of a well-formed UTF-8 sequence with '?', keeping offsets.
void SanitizeUtf8(std::string_view in, std::string* out) {
  out->assign(in.data(), in.size());
  size_t i = 0;
  while (i < in.size()) {
    auto c = static_cast<unsigned char>(in[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= in.size() && !(c == 0xC0 || c == 0xC1 || c > 0xF4);
    for (size_t k = 1; ok && k < len; ++k) ok = IsContinuation(in[i + k]);
    if (ok && len == 3) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(in[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (!ok) {
      (*out)[i] = '?';
      ++i;
    } else {
      i += len;
    }
  }
}

}  // namespace

Worker::~Worker() {
  if (scratch != nullptr) hs_free_scratch(scratch);
}

Database::~Database() {
  if (prototype_ != nullptr) hs_free_scratch(prototype_);
  if (db_ != nullptr) hs_free_database(db_);
}

Result<std::shared_ptr<const Database>> Database::Build(
    std::vector<Detector> detectors, std::vector<PatternEntry> patterns,
    const std::vector<std::string>& expressions, const std::vector<unsigned>& flags,
    size_t first_custom_pattern, const std::vector<std::string>& custom_ids, bool has_utf8,
    std::vector<std::unique_ptr<std::string>> names) {
  std::shared_ptr<Database> d(new Database());
  d->detectors_ = std::move(detectors);
  d->names_ = std::move(names);
  d->patterns_ = std::move(patterns);
  d->has_utf8_ = has_utf8;
  if (expressions.empty()) return std::shared_ptr<const Database>(d);  // every detector disabled
  std::vector<const char*> exprs;
  std::vector<unsigned> ids;
  for (size_t i = 0; i < expressions.size(); ++i) {
    exprs.push_back(expressions[i].c_str());
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_compile_error_t* error = nullptr;
  if (hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()),
                       HS_MODE_BLOCK, nullptr, &d->db_, &error) != HS_SUCCESS) {
    std::string message = error != nullptr ? error->message : "unknown error";
    int index = error != nullptr ? error->expression : -1;
    hs_free_compile_error(error);
    if (index >= 0 && static_cast<size_t>(index) >= first_custom_pattern) {
      size_t rule = static_cast<size_t>(index) - first_custom_pattern;
      return InvalidArgument("custom rule " + std::to_string(rule) + " (\"" + custom_ids[rule] +
                             "\"): vectorscan: " + message);
    }
    return Internal("compiling DLP patterns (expression " + std::to_string(index) +
                    "): vectorscan: " + message);
  }
  if (hs_alloc_scratch(d->db_, &d->prototype_) != HS_SUCCESS) {
    return ResourceExhausted("allocating vectorscan scratch");
  }
  return std::shared_ptr<const Database>(d);
}

std::unique_ptr<Worker> Database::Acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<Worker> w = std::move(free_.back());
      free_.pop_back();
      return w;
    }
  }
  auto w = std::make_unique<Worker>();
  if (prototype_ != nullptr && hs_clone_scratch(prototype_, &w->scratch) != HS_SUCCESS) w->scratch = nullptr;
  w->covered.resize(detectors_.size());
  w->counts.resize(detectors_.size());
  return w;
}

void Database::Release(std::unique_ptr<Worker> w) const {
  if (w == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(w));
}

bool Database::Find(Worker* w, std::string_view text, const std::vector<uint8_t>& enabled) const {
  w->findings.clear();
  w->raw.clear();
  if (db_ == nullptr || text.empty()) return true;
  if (text.size() > UINT_MAX) return false;  // vectorscan scans at most 4 GiB at once
  if (w->scratch == nullptr && hs_clone_scratch(prototype_, &w->scratch) != HS_SUCCESS) {
    w->scratch = nullptr;
    return false;
  }
  // UTF-8 custom rules have undefined results on malformed UTF-8: give them a same-length clean copy.
  const std::string_view original = text;
  if (has_utf8_ && !simdjson::validate_utf8(text.data(), text.size())) {
    SanitizeUtf8(text, &w->sanitized);
    text = w->sanitized;
  }
  if (hs_scan(db_, text.data(), static_cast<unsigned>(text.size()), 0, w->scratch, OnMatch, &w->raw) !=
      HS_SUCCESS) {
    return false;
  }
  if (w->raw.empty()) return true;  // the fast path: nothing matched, nothing allocated

  std::sort(w->raw.begin(), w->raw.end(), [](const RawMatch& a, const RawMatch& b) {
    return a.from != b.from ? a.from < b.from : a.to > b.to;
  });
  std::fill(w->covered.begin(), w->covered.end(), 0);
  w->candidates.clear();
  for (const RawMatch& r : w->raw) {
    const PatternEntry& p = patterns_[r.pattern];
    size_t covered = w->covered[p.detector];
    if (p.som && covered != 0 && r.from < covered && r.to <= covered) continue;  // inside one we already have
    Span s{r.from, r.to, p.detector};
    if (p.validator != nullptr && !p.validator(text, &s)) continue;
    if (!enabled[s.detector]) continue;
    // Never split a character: widen to UTF-8 boundaries (a custom pattern may match any byte).
    // (On the original bytes: the sanitized copy has no continuation bytes where the input had stray ones.)
    while (s.begin > 0 && IsContinuation(original[s.begin])) --s.begin;
    while (s.end < original.size() && IsContinuation(original[s.end])) ++s.end;
    if (s.end <= s.begin) continue;
    w->candidates.push_back({s.detector, s.begin, s.end});
    w->covered[p.detector] = std::max(covered, s.end);
  }
  // Leftmost-longest; then higher priority; then detector order: deterministic whatever the scan order.
  std::sort(w->candidates.begin(), w->candidates.end(), [this](const Candidate& a, const Candidate& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end > b.end;
    int pa = detectors_[a.detector].priority, pb = detectors_[b.detector].priority;
    if (pa != pb) return pa > pb;
    return a.detector < b.detector;
  });
  size_t taken_end = 0;
  for (const Candidate& c : w->candidates) {
    if (!w->findings.empty() && c.begin < taken_end) continue;
    w->findings.push_back(c);
    taken_end = c.end;
  }
  return true;
}

}  // namespace internal

using internal::Candidate;
using internal::Worker;

namespace {

char LowerAscii(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsAlnumAscii(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// What is hashed: the value's letters and digits for numbers people write in many ways (so a card
// hashes the same with spaces or dashes), lower case for e-mail, the exact bytes otherwise.
std::string HashInput(std::string_view category, std::string_view detector, std::string_view value) {
  std::string v;
  if (category == "financial" || category == "national_id" || detector == "phone") {
    for (char c : value) {
      if (IsAlnumAscii(c)) v.push_back(c);
    }
  } else if (detector == "email") {
    for (char c : value) v.push_back(LowerAscii(c));
  } else {
    v.assign(value);
  }
  return v;
}

}  // namespace

void RuleSet::Impl::Replace(const Candidate& f, std::string_view text, std::string* out) const {
  const internal::Detector& d = db->detectors()[f.detector];
  std::string_view value = text.substr(f.begin, f.end - f.begin);
  switch (actions[f.detector]) {
    case Action::kMask:
    case Action::kDrop:
      out->append("[REDACTED:").append(d.id).push_back(']');
      return;
    case Action::kPartialMask: {
      // Keep the last four letters/digits, but at most a third of them so a short value is never shown
      // whole; every other letter, digit or non-ASCII character becomes '*'.
      size_t alnum = 0;
      for (char c : value) alnum += IsAlnumAscii(c) ? 1 : 0;
      const size_t keep = std::min<size_t>(4, alnum / 3);
      size_t keep_from = value.size();
      for (size_t kept = 0; kept < keep && keep_from > 0;) {
        if (IsAlnumAscii(value[--keep_from])) ++kept;
      }
      for (size_t i = 0; i < value.size(); ++i) {
        char c = value[i];
        auto u = static_cast<unsigned char>(c);
        if (i >= keep_from && u < 0x80) {
          out->push_back(c);
        } else if (IsAlnumAscii(c) || (u >= 0x80 && (u & 0xC0) != 0x80)) {
          out->push_back('*');
        } else if (u < 0x80) {
          out->push_back(c);
        }
      }
      return;
    }
    case Action::kHash:
      out->append("[HASH:").append(d.id).push_back(':');
      out->append(internal::HmacHex16(hash_key, HashInput(d.category, d.id, value))).push_back(']');
      return;
  }
}

bool RuleSet::Impl::Apply(Worker* w, std::string_view text, std::string* out) const {
  for (const Candidate& f : w->findings) {
    if (actions[f.detector] == Action::kDrop) return true;
  }
  out->clear();
  out->reserve(text.size() + 16 * w->findings.size());
  size_t at = 0;
  for (const Candidate& f : w->findings) {
    out->append(text.substr(at, f.begin - at));
    Replace(f, text, out);
    at = f.end;
  }
  out->append(text.substr(at));
  return false;
}

void RuleSet::Impl::Count(Worker* w, Outcome* outcome) const {
  for (const Candidate& f : w->findings) ++w->counts[f.detector];
  const auto& detectors = db->detectors();
  for (size_t d = 0; d < w->counts.size(); ++d) {
    if (w->counts[d] == 0) continue;
    bool found = false;
    for (auto& c : outcome->counts) {
      if (c.detector == detectors[d].id) {
        c.count += w->counts[d];
        found = true;
      }
    }
    if (!found) outcome->counts.push_back({detectors[d].id, w->counts[d]});
    w->counts[d] = 0;
  }
}

namespace {

bool ValidName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

// Policies without custom rules share one database of every built-in, compiled on first use.
// It is immutable, so sharing it across threads and organisations is safe.
Result<std::shared_ptr<const internal::Database>> BuildDatabase(const std::vector<uint8_t>* builtin_enabled,
                                                                const std::vector<CustomRule>& custom) {
  std::vector<internal::Detector> detectors;
  for (const DetectorInfo& d : BuiltinDetectors()) detectors.push_back({d.id, d.category, d.priority});
  std::vector<std::unique_ptr<std::string>> names;
  std::vector<internal::PatternEntry> patterns;
  std::vector<std::string> expressions;
  std::vector<unsigned> flags;
  for (const internal::BuiltinPattern& p : internal::BuiltinPatterns()) {
    if (builtin_enabled != nullptr && !(*builtin_enabled)[p.detector] &&
        (p.also < 0 || !(*builtin_enabled)[static_cast<size_t>(p.also)])) {
      continue;
    }
    patterns.push_back({p.detector, p.validator, p.som});
    expressions.emplace_back(p.expression);
    flags.push_back(p.som ? HS_FLAG_SOM_LEFTMOST : 0u);
  }
  size_t first_custom = expressions.size();
  std::vector<std::string> ids;
  bool has_utf8 = false;
  for (const CustomRule& r : custom) {
    patterns.push_back({static_cast<unsigned>(detectors.size()), nullptr, true});
    names.push_back(std::make_unique<std::string>(r.id));
    std::string_view id = *names.back();
    names.push_back(std::make_unique<std::string>(r.category));
    detectors.push_back({id, *names.back(), r.priority});
    expressions.push_back(r.pattern);
    unsigned f = HS_FLAG_SOM_LEFTMOST;
    if (r.caseless) f |= HS_FLAG_CASELESS;
    if (r.utf8) f |= HS_FLAG_UTF8 | HS_FLAG_UCP;
    has_utf8 = has_utf8 || r.utf8;
    flags.push_back(f);
    ids.push_back(r.id);
  }
  return internal::Database::Build(std::move(detectors), std::move(patterns), expressions, flags,
                                   first_custom, ids, has_utf8, std::move(names));
}

Result<std::shared_ptr<const internal::Database>> SharedBuiltinDatabase() {
  static const Result<std::shared_ptr<const internal::Database>> kShared = BuildDatabase(nullptr, {});
  return kShared;
}

// A pattern that can only match at the start or end of the text cannot be checked on a whole JSON
// document on behalf of each of its values. Conservative: any anchor-like character counts.
bool MayBeAnchored(std::string_view pattern) {
  return pattern.find_first_of("^$") != std::string_view::npos ||
         pattern.find("\\A") != std::string_view::npos || pattern.find("\\z") != std::string_view::npos ||
         pattern.find("\\Z") != std::string_view::npos;
}

}  // namespace

Result<std::shared_ptr<const RuleSet>> RuleSet::Compile(const Policy& policy) {
  auto builtins = BuiltinDetectors();
  auto impl = std::make_unique<Impl>();
  size_t total = builtins.size() + policy.custom_rules.size();
  auto builtin_id = [&](std::string_view s) {
    for (const auto& d : builtins) {
      if (d.id == s) return true;
    }
    return false;
  };
  // Check custom rules one by one first, so an error names the rule (index and id) precisely.
  for (size_t i = 0; i < policy.custom_rules.size(); ++i) {
    const CustomRule& r = policy.custom_rules[i];
    std::string where = "custom rule " + std::to_string(i) + " (\"" + r.id + "\")";
    if (!ValidName(r.id)) return InvalidArgument(where + ": id must be 1-64 characters of [a-z0-9_]");
    if (!ValidName(r.category))
      return InvalidArgument(where + ": category must be 1-64 characters of [a-z0-9_]");
    if (builtin_id(r.id)) return InvalidArgument(where + ": id is a built-in detector's");
    for (size_t j = 0; j < i; ++j) {
      if (policy.custom_rules[j].id == r.id) return InvalidArgument(where + ": duplicate id");
    }
    unsigned flags = HS_FLAG_SOM_LEFTMOST | (r.caseless ? HS_FLAG_CASELESS : 0u) |
                     (r.utf8 ? HS_FLAG_UTF8 | HS_FLAG_UCP : 0u);
    hs_expr_info_t* info = nullptr;
    hs_compile_error_t* error = nullptr;
    if (hs_expression_info(r.pattern.c_str(), flags, &info, &error) != HS_SUCCESS) {
      std::string message = error != nullptr ? error->message : "unknown error";
      hs_free_compile_error(error);
      return InvalidArgument(where + ": vectorscan: " + message);
    }
    bool empty = info->min_width == 0;
    std::free(info);
    if (empty) return InvalidArgument(where + ": pattern can match the empty string");
    if (r.pattern.find('\0') != std::string::npos) return InvalidArgument(where + ": pattern contains NUL");
  }
  // Detector table: built-ins by index, then custom rules.
  std::vector<std::string_view> ids, categories;
  for (const auto& d : builtins) {
    ids.push_back(d.id);
    categories.push_back(d.category);
  }
  for (const auto& r : policy.custom_rules) {
    ids.push_back(r.id);
    categories.push_back(r.category);
  }
  auto known = [&](std::string_view s) {
    return std::find(ids.begin(), ids.end(), s) != ids.end() ||
           std::find(categories.begin(), categories.end(), s) != categories.end();
  };
  impl->enabled.assign(total, 1);
  for (const std::string& name : policy.disabled) {
    if (!known(name)) return InvalidArgument("disabled: no detector or category \"" + name + "\"");
    for (size_t d = 0; d < total; ++d) {
      if (ids[d] == name || categories[d] == name) impl->enabled[d] = 0;
    }
  }
  impl->actions.assign(total, policy.default_action);
  std::vector<uint8_t> by_id(total, 0);
  for (const auto& [name, action] : policy.actions) {
    if (!known(name)) return InvalidArgument("actions: no detector or category \"" + name + "\"");
    for (size_t d = 0; d < total; ++d) {
      if (ids[d] == name) {
        impl->actions[d] = action;
        by_id[d] = 1;
      } else if (categories[d] == name && !by_id[d]) {
        impl->actions[d] = action;
      }
    }
  }
  for (size_t d = 0; d < total; ++d) {
    if (impl->enabled[d] && impl->actions[d] == Action::kHash && policy.hash_key.empty()) {
      return InvalidArgument("detector \"" + std::string(ids[d]) +
                             "\" hashes but the policy has no hash_key");
    }
  }
  impl->hash_key = policy.hash_key;
  for (size_t d = 0; d < builtins.size(); ++d) {
    if (builtins[d].id == "generic_secret") {
      impl->generic_secret_enabled = impl->enabled[d] != 0;
      impl->generic_secret = static_cast<unsigned>(d);
    }
  }
  if (policy.custom_rules.empty()) {
    GOVERN_ASSIGN_OR_RETURN(impl->db, SharedBuiltinDatabase());
  } else {
    std::vector<uint8_t> builtin_enabled(impl->enabled.begin(), impl->enabled.begin() + builtins.size());
    GOVERN_ASSIGN_OR_RETURN(impl->db, BuildDatabase(&builtin_enabled, policy.custom_rules));
    for (const auto& r : policy.custom_rules)
      impl->json_prefilter = impl->json_prefilter && !MayBeAnchored(r.pattern);
  }
  return std::shared_ptr<const RuleSet>(new RuleSet(std::move(impl)));
}

RuleSet::RuleSet(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RuleSet::~RuleSet() = default;

std::vector<Finding> RuleSet::Scan(std::string_view text) const {
  std::vector<Finding> out;
  Scan(text, &out);
  return out;
}

void RuleSet::Scan(std::string_view text, std::vector<Finding>* out) const {
  out->clear();
  internal::Lease w(*impl_->db);
  if (!impl_->db->Find(w.get(), text, impl_->enabled)) {
    out->push_back({"unscannable", "error", 0, text.size(), Action::kDrop});  // fail closed
    return;
  }
  const auto& detectors = impl_->db->detectors();
  for (const Candidate& c : w->findings) {
    const auto& d = detectors[c.detector];
    out->push_back({d.id, d.category, c.begin, c.end, impl_->actions[c.detector]});
  }
}

Outcome RuleSet::Redact(std::string_view text, std::string* out) const {
  Outcome outcome;
  internal::Lease w(*impl_->db);
  if (!impl_->db->Find(w.get(), text, impl_->enabled)) {  // could not scan: fail closed
    out->clear();
    outcome.changed = outcome.dropped = true;
    outcome.counts.push_back({"unscannable", 1});
    return outcome;
  }
  if (w->findings.empty()) return outcome;
  impl_->Count(w.get(), &outcome);
  outcome.changed = true;
  if (impl_->Apply(w.get(), text, out)) {
    out->clear();
    outcome.dropped = true;
  }
  return outcome;
}

std::vector<DetectorInfo> RuleSet::Detectors() const {
  std::vector<DetectorInfo> out;
  const auto& detectors = impl_->db->detectors();
  for (size_t d = 0; d < detectors.size(); ++d) {
    if (impl_->enabled[d]) out.push_back({detectors[d].id, detectors[d].category, detectors[d].priority});
  }
  return out;
}

}  // namespace govern::dlp
