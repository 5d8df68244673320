#include "gateway/dlp_screen.h"

#include <algorithm>

#include "gateway/json_util.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMarkerOpen = "[REDACTED:";

void AppendMarker(std::string* out, std::string_view detector) {
  out->append(kMarkerOpen);
  out->append(detector);
  out->push_back(']');
}

// Records a finding; true when it blocks (block mode, or a drop action in mask mode).
bool Note(const DlpProfile& p, const dlp::Finding& f, DlpReport* report) {
  report->AddRule(f.detector);
  if (p.mode == DlpMode::kBlock || f.action == dlp::Action::kDrop) {
    report->blocked = true;
    return true;
  }
  report->masked = true;
  return false;
}

bool ScreenString(const DlpProfile& p, Json& value, DlpReport* report) {
  if (!value.is_string() || report->blocked) return false;
  std::string out;
  if (!ScreenText(p, value.get_ref<const std::string&>(), &out, report)) return false;
  value = std::move(out);
  return true;
}

// Every string inside a JSON value (a tool_use input), keys excepted.
bool ScreenStrings(const DlpProfile& p, Json& value, DlpReport* report) {
  bool changed = false;
  if (value.is_string()) return ScreenString(p, value, report);
  if (value.is_object() || value.is_array()) {
    for (auto& v : value) {
      if (report->blocked) break;
      changed |= ScreenStrings(p, v, report);
    }
  }
  return changed;
}

Json* Member(Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

// OpenAI content: a string, or parts with "text". A text or arguments field that is not a string (not
// the format, but some servers send objects) has every string inside it screened: nothing where the
// format puts text passes unread.
bool ScreenOpenAIContent(const DlpProfile& p, Json& content, DlpReport* report) {
  if (content.is_string()) return ScreenString(p, content, report);
  bool changed = false;
  if (content.is_array()) {
    for (auto& part : content) {
      if (Json* t = Member(part, "text")) changed |= ScreenStrings(p, *t, report);
    }
  } else if (content.is_object()) {
    changed |= ScreenStrings(p, content, report);
  }
  return changed;
}

bool ScreenOpenAIMessage(const DlpProfile& p, Json& m, DlpReport* report) {
  bool changed = false;
  if (Json* c = Member(m, "content")) changed |= ScreenOpenAIContent(p, *c, report);
  if (Json* calls = Member(m, "tool_calls"); calls && calls->is_array()) {
    for (auto& call : *calls) {
      if (Json* fn = Member(call, "function"))
        if (Json* args = Member(*fn, "arguments")) changed |= ScreenStrings(p, *args, report);
    }
  }
  if (Json* fn = Member(m, "function_call"))
    if (Json* args = Member(*fn, "arguments")) changed |= ScreenStrings(p, *args, report);
  return changed;
}

// Anthropic content: a string, or blocks (text, tool_use input, tool_result content).
bool ScreenAnthropicContent(const DlpProfile& p, Json& content, DlpReport* report) {
  if (content.is_string()) return ScreenString(p, content, report);
  bool changed = false;
  if (!content.is_array()) return false;
  for (auto& block : content) {
    if (report->blocked) break;
    std::string_view type = detail::StrField(block, "type");
    if (type == "text") {
      if (Json* t = Member(block, "text")) changed |= ScreenString(p, *t, report);
    } else if (type == "tool_use") {
      if (Json* in = Member(block, "input")) changed |= ScreenStrings(p, *in, report);
    } else if (type == "tool_result") {
      if (Json* c = Member(block, "content")) changed |= ScreenAnthropicContent(p, *c, report);
    }
  }
  return changed;
}

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// OpenAI: the screener of tool call `tool` of choice `choice` (text screeners use the choice index).
constexpr int64_t kToolsPerChoice = 1 << 12;
int64_t ToolKey(int64_t choice, int64_t tool) {
  return -(std::clamp<int64_t>(choice, 0, 1 << 20) * kToolsPerChoice +
           std::clamp<int64_t>(tool, 0, kToolsPerChoice - 1) + 1);
}
int64_t ToolChoice(int64_t key) { return (-key - 1) / kToolsPerChoice; }
int64_t ToolIndex(int64_t key) { return (-key - 1) % kToolsPerChoice; }
Json ToolDelta(int64_t tool, std::string args) {
  return {{"index", tool}, {"function", {{"arguments", std::move(args)}}}};
}

// Anthropic: a content_block_delta carrying `text` as the block's kind of delta.
SseEvent AnthropicDelta(int64_t index, bool json, std::string text) {
  Json d = {{"type", "content_block_delta"},
            {"index", index},
            {"delta", json ? Json{{"type", "input_json_delta"}, {"partial_json", std::move(text)}}
                           : Json{{"type", "text_delta"}, {"text", std::move(text)}}}};
  SseEvent e;
  e.event = "content_block_delta";
  e.data = detail::Dump(d);
  return e;
}

}  // namespace

std::string_view DlpModeName(DlpMode m) {
  switch (m) {
    case DlpMode::kOff:
      return "off";
    case DlpMode::kMask:
      return "mask";
    case DlpMode::kBlock:
      return "block";
  }
  return "off";
}

void DlpReport::AddRule(std::string_view id) {
  if (std::find(rules.begin(), rules.end(), id) == rules.end()) rules.emplace_back(id);
}

void DlpReport::Merge(const DlpReport& other) {
  masked |= other.masked;
  blocked |= other.blocked;
  for (const auto& r : other.rules) AddRule(r);
}

std::string DlpReport::RuleList() const {
  std::string s;
  for (const auto& r : rules) {
    if (!s.empty()) s += ", ";
    s += r;
  }
  return s;
}

std::string DlpBlockMessage(std::string_view what, const DlpReport& report) {
  std::string m(what);
  m += " blocked by data loss prevention";
  if (!report.rules.empty()) m += " (rules: " + report.RuleList() + ")";
  return m;
}

bool ScreenText(const DlpProfile& p, std::string_view text, std::string* out, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules || text.empty() || report->blocked) return false;
  thread_local std::vector<dlp::Finding> findings;
  p.rules->Scan(text, &findings);
  if (findings.empty()) return false;
  for (const auto& f : findings) {
    if (Note(p, f, report)) return false;
  }
  out->clear();
  size_t pos = 0;
  for (const auto& f : findings) {
    out->append(text.substr(pos, f.begin - pos));
    AppendMarker(out, f.detector);
    pos = f.end;
  }
  out->append(text.substr(pos));
  return true;
}

bool ScreenOpenAIChat(const DlpProfile& p, Json& body, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules) return false;
  bool changed = false;
  if (Json* msgs = Member(body, "messages"); msgs && msgs->is_array()) {
    for (auto& m : *msgs) changed |= ScreenOpenAIMessage(p, m, report);
  }
  if (Json* choices = Member(body, "choices"); choices && choices->is_array()) {
    for (auto& c : *choices) {
      if (Json* m = Member(c, "message")) changed |= ScreenOpenAIMessage(p, *m, report);
    }
  }
  return changed && !report->blocked;
}

bool ScreenAnthropicMessages(const DlpProfile& p, Json& body, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules) return false;
  bool changed = false;
  if (Json* sys = Member(body, "system")) changed |= ScreenAnthropicContent(p, *sys, report);
  if (Json* msgs = Member(body, "messages"); msgs && msgs->is_array()) {
    for (auto& m : *msgs) {
      if (Json* c = Member(m, "content")) changed |= ScreenAnthropicContent(p, *c, report);
    }
  }
  // An answer: its content blocks.
  if (Json* c = Member(body, "content"); c && c->is_array()) changed |= ScreenAnthropicContent(p, *c, report);
  return changed && !report->blocked;
}

// ---- StreamScreener ----

StreamScreener::StreamScreener(const DlpProfile& profile) : profile_(&profile) {}

bool StreamScreener::Push(std::string_view text, std::string* out) {
  if (report_.blocked) return false;
  if (profile_->mode == DlpMode::kOff || !profile_->rules) {
    out->append(text);
    return true;
  }
  buf_.append(text);
  const DlpStreamOptions& o = profile_->stream;
  if (held() < o.hold + std::max<size_t>(o.step, 1)) return true;  // nothing worth a scan yet
  return Release(false, out);
}

bool StreamScreener::Finish(std::string* out) {
  if (report_.blocked) return false;
  if (held() == 0) return true;
  return Release(true, out);
}

bool StreamScreener::Release(bool final, std::string* out) {
  const DlpStreamOptions& o = profile_->stream;
  std::string_view window(buf_);
  size_t cut = final ? window.size() : window.size() - std::min(o.hold, held());
  if (cut < ctx_) cut = ctx_;
  profile_->rules->Scan(window, &findings_);
  // Findings are ordered by start and do not overlap. A finding reaching past the cut may still grow
  // (or turn out not to be one): it is held whole, and so is everything after it.
  for (const auto& f : findings_) {
    if (f.end <= ctx_) continue;  // in released text: screened when it was released
    if (f.end > cut) {
      cut = std::max(ctx_, std::min(cut, f.begin));
      break;
    }
    if (Note(*profile_, f, &report_)) {
      buf_.clear();
      ctx_ = 0;
      return false;
    }
  }
  // Never split a UTF-8 character (a held finding's start is already a boundary).
  while (cut > ctx_ && cut < window.size() && IsContinuation(window[cut])) --cut;
  size_t pos = ctx_;
  for (const auto& f : findings_) {  // the settled findings, as above
    if (f.end <= ctx_) continue;
    if (f.end > cut) break;
    size_t begin = std::max(f.begin, ctx_);  // a finding that began in released text: its rest
    out->append(window.substr(pos, begin - pos));
    AppendMarker(out, f.detector);
    pos = f.end;
  }
  if (cut > pos) out->append(window.substr(pos, cut - pos));
  // Keep `context` released bytes before the held text, for the next scan's left context.
  size_t keep_from = cut > o.context ? cut - o.context : 0;
  while (keep_from > 0 && IsContinuation(buf_[keep_from])) --keep_from;
  buf_.erase(0, keep_from);
  ctx_ = cut - keep_from;
  if (!final && held() > o.max_held) {
    // A finding that keeps growing (a private key without its END line): fail closed.
    for (const auto& f : findings_) {
      if (f.end > cut) {
        report_.AddRule(f.detector);
        break;
      }
    }
    report_.blocked = true;
    buf_.clear();
    ctx_ = 0;
    return false;
  }
  return true;
}

// ---- DlpStreamFilter ----

StreamScreener& DlpStreamFilter::For(int64_t index) {
  auto it = screeners_.find(index);
  if (it == screeners_.end()) it = screeners_.emplace(index, StreamScreener(*profile_)).first;
  return it->second;
}

bool DlpStreamFilter::Flush(int64_t index, std::string* tail) {
  auto it = screeners_.find(index);
  if (it == screeners_.end()) return true;
  bool ok = it->second.Finish(tail);
  report_.Merge(it->second.report());
  if (ok) screeners_.erase(it);  // a later block of the same index starts afresh
  return ok;
}

const DlpReport& DlpStreamFilter::report() {
  for (const auto& [i, s] : screeners_) report_.Merge(s.report());
  return report_;
}

SseEvent DlpStreamFilter::OpenAIChunk(int64_t index, std::string text) const {
  Json c = Json::object();
  for (const char* k : {"id", "object", "created", "model", "system_fingerprint"}) {
    if (last_chunk_.is_object() && last_chunk_.contains(k)) c[k] = last_chunk_[k];
  }
  Json delta = index >= 0 ? Json{{"content", std::move(text)}}
                          : Json{{"tool_calls", Json::array({ToolDelta(ToolIndex(index), std::move(text))})}};
  c["choices"] = Json::array({{{"index", index >= 0 ? index : ToolChoice(index)},
                               {"delta", std::move(delta)},
                               {"finish_reason", nullptr}}});
  SseEvent ev;
  ev.data = detail::Dump(c);
  return ev;
}

bool DlpStreamFilter::Feed(const SseEvent& ev, std::vector<SseEvent>* out) {
  if (report_.blocked) return false;
  if (profile_->mode == DlpMode::kOff || !profile_->rules) {
    out->push_back(ev);
    return true;
  }
  if (!anthropic_ && ev.IsDone()) {
    if (!Finish(out)) return false;
    out->push_back(ev);
    return true;
  }
  auto parsed = detail::ParseJson(ev.data, "event");
  if (!parsed.ok() || !parsed->is_object()) {
    out->push_back(ev);
    return true;
  }
  Json& j = *parsed;
  bool changed = false;
  if (!anthropic_) {
    Json* choices = Member(j, "choices");
    if (choices == nullptr || !choices->is_array() || choices->empty()) {
      // The usage chunk (no choices) comes after every finish: nothing held for it.
      out->push_back(ev);
      return true;
    }
    last_chunk_ = Json::object();
    for (const char* k : {"id", "object", "created", "model", "system_fingerprint"}) {
      if (j.contains(k)) last_chunk_[k] = j[k];
    }
    int64_t pos = 0;
    for (auto& c : *choices) {
      int64_t index = pos++;
      if (Json* i = Member(c, "index"); i && i->is_number_integer()) index = i->get<int64_t>();
      Json* delta = Member(c, "delta");
      Json* content = delta ? Member(*delta, "content") : nullptr;
      released_.clear();
      bool had_text = content && content->is_string();
      bool touched = false;
      if (had_text) {
        StreamScreener& s = For(index);
        bool ok = s.Push(content->get_ref<const std::string&>(), &released_);
        if (!ok) {
          report_.Merge(s.report());
          return false;
        }
        touched = true;
      }
      // Tool-call argument fragments: one screener per call.
      Json* calls = delta ? Member(*delta, "tool_calls") : nullptr;
      if (calls && calls->is_array()) {
        int64_t k = 0;
        for (auto& call : *calls) {
          int64_t tool = k++;
          if (Json* ti = Member(call, "index"); ti && ti->is_number_integer()) tool = ti->get<int64_t>();
          Json* fn = Member(call, "function");
          Json* args = fn ? Member(*fn, "arguments") : nullptr;
          if (!args || !args->is_string()) continue;
          std::string piece;
          StreamScreener& s = For(ToolKey(index, tool));
          if (!s.Push(args->get_ref<const std::string&>(), &piece)) {
            report_.Merge(s.report());
            return false;
          }
          *args = std::move(piece);
          changed = true;
        }
      }
      Json* finish = Member(c, "finish_reason");
      Json tool_tails = Json::array();
      if (finish && !finish->is_null()) {
        size_t before = released_.size();
        if (!Flush(index, &released_)) return false;
        touched |= released_.size() > before;
        std::vector<int64_t> keys;
        for (const auto& [key, s] : screeners_) {
          if (key < 0 && ToolChoice(key) == ToolChoice(ToolKey(index, 0))) keys.push_back(key);
        }
        for (int64_t key : keys) {
          std::string tail;
          if (!Flush(key, &tail)) return false;
          if (!tail.empty()) tool_tails.push_back(ToolDelta(ToolIndex(key), std::move(tail)));
        }
      }
      if (!tool_tails.empty()) {
        changed = true;
        if (delta == nullptr || !delta->is_object()) {
          c["delta"] = Json::object();
          delta = &c["delta"];
        }
        Json& dc = (*delta)["tool_calls"];
        if (!dc.is_array()) dc = Json::array();
        for (auto& t : tool_tails) dc.push_back(std::move(t));
      }
      if (!touched) continue;
      changed = true;
      if (delta != nullptr && delta->is_object()) {
        (*delta)["content"] = released_;
      } else {
        c["delta"] = {{"content", released_}};
      }
    }
  } else {
    std::string_view type = detail::StrField(j, "type");
    int64_t index = 0;
    if (Json* i = Member(j, "index"); i && i->is_number_integer()) index = i->get<int64_t>();
    if (type == "content_block_delta") {
      Json* delta = Member(j, "delta");
      std::string_view dtype = delta ? detail::StrField(*delta, "type") : "";
      if (dtype == "text_delta" || dtype == "input_json_delta") {
        bool json = dtype == "input_json_delta";
        if (Json* t = Member(*delta, json ? "partial_json" : "text"); t && t->is_string()) {
          json_blocks_[index] = json;
          released_.clear();
          StreamScreener& s = For(index);
          if (!s.Push(t->get_ref<const std::string&>(), &released_)) {
            report_.Merge(s.report());
            return false;
          }
          *t = released_;
          changed = true;
        }
      }
    } else if (type == "content_block_stop") {
      released_.clear();
      if (!Flush(index, &released_)) return false;
      if (!released_.empty()) out->push_back(AnthropicDelta(index, json_blocks_[index], released_));
    } else if (type == "message_stop" || type == "message_delta") {
      std::vector<SseEvent> tail;
      if (!Finish(&tail)) return false;
      for (auto& e : tail) out->push_back(std::move(e));
    }
  }
  if (!changed) {
    out->push_back(ev);
    return true;
  }
  SseEvent copy;
  copy.event = ev.event;
  copy.id = ev.id;
  copy.retry = ev.retry;
  copy.data = detail::Dump(j);
  out->push_back(std::move(copy));
  return true;
}

bool DlpStreamFilter::Finish(std::vector<SseEvent>* out) {
  if (report_.blocked) return false;
  std::vector<int64_t> open;
  for (const auto& [i, s] : screeners_) open.push_back(i);
  for (int64_t index : open) {
    std::string tail;
    if (!Flush(index, &tail)) return false;
    if (tail.empty()) continue;
    if (!anthropic_) {
      out->push_back(OpenAIChunk(index, std::move(tail)));
    } else {
      out->push_back(AnthropicDelta(index, json_blocks_[index], std::move(tail)));
    }
  }
  return true;
}

// ---- configuration ----

const DlpProfile& DlpConfig::For(std::string_view org) const {
  static const DlpProfile kOff;
  if (auto it = orgs.find(std::string(org)); it != orgs.end()) return *it->second;
  return default_profile ? *default_profile : kOff;
}

namespace {

Result<std::shared_ptr<const DlpProfile>> ParseProfile(const Json& j, const std::string& path) {
  if (!j.is_object()) return InvalidArgument(path + " must be an object");
  auto p = std::make_shared<DlpProfile>();
  GOVERN_ASSIGN_OR_RETURN(auto mode, detail::OptString(j, "mode", path));
  if (!mode || *mode == "off") {
    p->mode = DlpMode::kOff;
  } else if (*mode == "mask") {
    p->mode = DlpMode::kMask;
  } else if (*mode == "block") {
    p->mode = DlpMode::kBlock;
  } else {
    return InvalidArgument(path + ".mode must be off, mask or block");
  }
  dlp::Policy policy;
  if (auto it = j.find("disabled"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument(path + ".disabled must be an array of strings");
    for (const auto& d : *it) {
      if (!d.is_string()) return InvalidArgument(path + ".disabled must be an array of strings");
      policy.disabled.push_back(d.get<std::string>());
    }
  }
  if (auto it = j.find("custom_rules"); it != j.end()) {
    if (!it->is_array()) return InvalidArgument(path + ".custom_rules must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& r = (*it)[i];
      std::string rp = path + ".custom_rules[" + std::to_string(i) + "]";
      if (!r.is_object()) return InvalidArgument(rp + " must be an object");
      dlp::CustomRule rule;
      GOVERN_ASSIGN_OR_RETURN(rule.id, detail::ReqString(r, "id", rp));
      GOVERN_ASSIGN_OR_RETURN(rule.pattern, detail::ReqString(r, "pattern", rp));
      GOVERN_ASSIGN_OR_RETURN(auto cat, detail::OptString(r, "category", rp));
      if (cat) rule.category = *cat;
      GOVERN_ASSIGN_OR_RETURN(auto caseless, detail::OptBool(r, "caseless", rp));
      rule.caseless = caseless.value_or(false);
      GOVERN_ASSIGN_OR_RETURN(auto utf8, detail::OptBool(r, "utf8", rp));
      rule.utf8 = utf8.value_or(false);
      GOVERN_ASSIGN_OR_RETURN(auto prio, detail::OptInt(r, "priority", rp));
      if (prio) rule.priority = static_cast<int>(*prio);
      policy.custom_rules.push_back(std::move(rule));
    }
  }
  GOVERN_ASSIGN_OR_RETURN(auto hold, detail::OptInt(j, "hold_bytes", path));
  if (hold) {
    if (*hold < 16 || *hold > 65536) return InvalidArgument(path + ".hold_bytes must be 16..65536");
    p->stream.hold = static_cast<size_t>(*hold);
    p->stream.step = std::max<size_t>(1, p->stream.hold / 2);
    p->stream.context = std::max<size_t>(p->stream.context, p->stream.hold / 2);
  }
  GOVERN_ASSIGN_OR_RETURN(auto max_held, detail::OptInt(j, "max_held_bytes", path));
  if (max_held) {
    if (*max_held < static_cast<int64_t>(p->stream.hold) || *max_held > (16 << 20))
      return InvalidArgument(path + ".max_held_bytes must be at least hold_bytes and at most 16 MiB");
    p->stream.max_held = static_cast<size_t>(*max_held);
  }
  if (p->mode != DlpMode::kOff) {
    auto rules = dlp::RuleSet::Compile(policy);
    if (!rules.ok()) return InvalidArgument(path + ": " + rules.status().message());
    p->rules = std::move(*rules);
  }
  return std::shared_ptr<const DlpProfile>(std::move(p));
}

}  // namespace

Result<std::shared_ptr<const DlpConfig>> ParseDlpConfig(const Json& j) {
  if (!j.is_object()) return InvalidArgument("dlp must be an object");
  auto c = std::make_shared<DlpConfig>();
  if (auto it = j.find("default"); it != j.end()) {
    GOVERN_ASSIGN_OR_RETURN(c->default_profile, ParseProfile(*it, "dlp.default"));
  }
  if (auto it = j.find("orgs"); it != j.end()) {
    if (!it->is_object()) return InvalidArgument("dlp.orgs must be an object");
    for (const auto& [org, p] : it->items()) {
      GOVERN_ASSIGN_OR_RETURN(auto profile, ParseProfile(p, "dlp.orgs." + org));
      c->orgs.emplace(org, std::move(profile));
    }
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "default" && k != "orgs") return InvalidArgument("dlp: unknown field " + k);
  }
  return std::shared_ptr<const DlpConfig>(std::move(c));
}

Result<std::shared_ptr<const DlpConfig>> DlpConfigFromRoutesFile(std::string_view json) {
  GOVERN_ASSIGN_OR_RETURN(Json j, detail::ParseJson(json, "gateway config"));
  if (j.is_object()) {
    if (auto it = j.find("dlp"); it != j.end()) return ParseDlpConfig(*it);
  }
  return std::shared_ptr<const DlpConfig>(std::make_shared<DlpConfig>());
}

}  // namespace govern::gateway
