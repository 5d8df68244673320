// DLP for the Responses and embeddings APIs (dlp_responses.h).
#include "gateway/dlp_responses.h"

#include "gateway/json_util.h"
#include "gateway/openai.h"

namespace govern::gateway {
namespace {

using Json = nlohmann::json;

// A string; or, where the format puts a string but the sender gave an object or array, every string
// inside it (nothing where the format has text passes unread). Numbers (token arrays) are left alone.
bool ScreenValue(const DlpProfile& p, Json& v, DlpReport* report) {
  if (report->blocked) return false;
  if (v.is_object() || v.is_array()) {
    bool changed = false;
    for (auto& inner : v) {
      if (report->blocked) break;
      changed |= ScreenValue(p, inner, report);
    }
    return changed;
  }
  if (!v.is_string()) return false;
  std::string out;
  if (!ScreenText(p, v.get_ref<const std::string&>(), &out, report)) return false;
  v = std::move(out);
  return true;
}

bool ScreenField(const DlpProfile& p, Json& obj, const char* key, DlpReport* report) {
  if (!obj.is_object()) return false;
  auto it = obj.find(key);
  return it != obj.end() && ScreenValue(p, *it, report);
}

// A message's content: a string or parts with "text" (input_text, output_text) or "refusal".
bool ScreenContent(const DlpProfile& p, Json& content, DlpReport* report) {
  if (content.is_string()) return ScreenValue(p, content, report);
  bool changed = false;
  if (!content.is_array()) return false;
  for (auto& part : content) {
    bool masked = ScreenField(p, part, "text", report);
    masked |= ScreenField(p, part, "refusal", report);
    // Logprobs carry the tokens, the masked text's too.
    if (masked && part.contains("logprobs")) part["logprobs"] = Json::array();
    changed |= masked;
  }
  return changed;
}

// One input or output item.
bool ScreenItem(const DlpProfile& p, Json& item, DlpReport* report) {
  if (!item.is_object()) return false;
  bool changed = false;
  if (auto it = item.find("content"); it != item.end()) changed |= ScreenContent(p, *it, report);
  changed |= ScreenField(p, item, "arguments", report);  // function_call
  changed |= ScreenField(p, item, "output", report);     // function_call_output (a string)
  return changed;
}

int64_t IntField(const Json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

bool ScreenResponsesRequest(const DlpProfile& p, Json& body, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules || !body.is_object()) return false;
  bool changed = ScreenField(p, body, "instructions", report);
  if (auto it = body.find("input"); it != body.end()) {
    if (it->is_string()) {
      changed |= ScreenValue(p, *it, report);
    } else if (it->is_array()) {
      for (auto& item : *it) changed |= ScreenItem(p, item, report);
    }
  }
  return changed && !report->blocked;
}

bool ScreenResponsesAnswer(const DlpProfile& p, Json& response, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules || !response.is_object()) return false;
  bool changed = false;
  if (auto it = response.find("output"); it != response.end() && it->is_array()) {
    for (auto& item : *it) changed |= ScreenItem(p, item, report);
  }
  return changed && !report->blocked;
}

bool ScreenEmbeddingsRequest(const DlpProfile& p, Json& body, DlpReport* report) {
  if (p.mode == DlpMode::kOff || !p.rules || !body.is_object()) return false;
  bool changed = false;
  if (auto it = body.find("input"); it != body.end()) {
    if (it->is_string()) {
      changed |= ScreenValue(p, *it, report);
    } else if (it->is_array()) {
      for (auto& v : *it) changed |= ScreenValue(p, v, report);  // token arrays are skipped
    }
  }
  return changed && !report->blocked;
}

std::string ResponsesDlpBlockEvent(std::string_view message, int64_t sequence_number) {
  Json body = {{"type", "error"},
               {"code", "dlp_blocked"},
               {"message", message},
               {"param", nullptr},
               {"sequence_number", sequence_number},
               {"error", openai::ErrorJson(message, "invalid_request_error", "dlp_blocked")["error"]}};
  return FormatSseEvent("error", detail::Dump(body));
}

// ---- ResponsesDlpFilter ----

const DlpReport& ResponsesDlpFilter::report() {
  for (const auto& [k, part] : parts_) {
    if (part.screener) report_.Merge(part.screener->report());
  }
  return report_;
}

ResponsesDlpFilter::Part& ResponsesDlpFilter::PartFor(const Key& key, const Json& ev,
                                                      std::string_view delta_type) {
  Part& part = parts_[key];
  if (part.done) part = Part();  // a part that ended and begins again (not seen from OpenAI)
  if (!part.screener) {
    part.screener = std::make_unique<StreamScreener>(*profile_);
    part.ids = Json::object();
    for (const char* k : {"item_id", "output_index", "content_index"}) {
      if (auto it = ev.find(k); it != ev.end()) part.ids[k] = *it;
    }
    part.delta_type = std::string(delta_type);
  }
  return part;
}

void ResponsesDlpFilter::Emit(Json ev, std::vector<SseEvent>* out) {
  if (auto it = ev.find("sequence_number"); it != ev.end() && it->is_number_integer()) {
    int64_t seq = it->get<int64_t>();
    if (seq >= 0 && seq < (int64_t{1} << 53)) {  // what a provider can send (a JSON number's exact range)
      *it = seq + added_;
      last_seq_ = seq + added_;
    }
  }
  SseEvent e;
  e.event = detail::StrField(ev, "type");
  e.data = detail::Dump(ev);
  out->push_back(std::move(e));
}

// Releases a part's held tail as one more delta event (numbered after the last one relayed).
bool ResponsesDlpFilter::Flush(const Key& key, std::vector<SseEvent>* out) {
  auto it = parts_.find(key);
  if (it == parts_.end() || it->second.done) return true;
  Part& part = it->second;
  std::string tail;
  bool ok = part.screener->Finish(&tail);
  report_.Merge(part.screener->report());
  if (!ok) {
    report_.blocked = true;
    return false;
  }
  part.done = true;
  if (tail.empty()) return true;
  part.released += tail;
  Json d = part.ids;
  d["type"] = part.delta_type;
  d["delta"] = std::move(tail);
  if (last_seq_ >= 0 &&
      last_seq_ <
          (int64_t{1} << 60)) {  // numbered after the last event relayed; the later ones move up by one
    d["sequence_number"] = last_seq_ + 1;
    ++added_;
    last_seq_ += 1;
  }
  SseEvent e;
  e.event = part.delta_type;
  e.data = detail::Dump(d);
  out->push_back(std::move(e));
  return true;
}

bool ResponsesDlpFilter::Replace(const Key& key, Json& text) {
  if (!text.is_string()) return true;
  if (auto it = parts_.find(key); it != parts_.end() && it->second.done) {
    text = it->second.released;
    return true;
  }
  ScreenValue(*profile_, text, &report_);
  return !report_.blocked;
}

bool ResponsesDlpFilter::ReplaceItem(int64_t output_index, Json& item) {
  if (!item.is_object()) return true;
  if (auto it = item.find("arguments"); it != item.end() && !Replace({output_index, -1}, *it)) return false;
  if (auto c = item.find("content"); c != item.end() && c->is_array()) {
    for (size_t i = 0; i < c->size(); ++i) {
      Json& part = (*c)[i];
      if (!part.is_object()) continue;
      for (const char* field : {"text", "refusal"}) {
        if (auto t = part.find(field);
            t != part.end() && !Replace({output_index, static_cast<int64_t>(i)}, *t))
          return false;
      }
    }
  }
  if (auto o = item.find("output"); o != item.end()) {
    ScreenValue(*profile_, *o, &report_);
    if (report_.blocked) return false;
  }
  return true;
}

bool ResponsesDlpFilter::Feed(const SseEvent& ev, std::vector<SseEvent>* out) {
  if (report_.blocked) return false;
  if (profile_->mode == DlpMode::kOff || !profile_->rules) {
    out->push_back(ev);
    return true;
  }
  auto parsed = detail::ParseJson(ev.data, "event");
  if (!parsed.ok() || !parsed->is_object()) {
    out->push_back(ev);  // not ours to read: relayed as it came
    return true;
  }
  Json& j = *parsed;
  std::string type(detail::StrField(j, "type"));
  if (type.empty()) type = ev.event;
  const int64_t output_index = IntField(j, "output_index", 0);
  const int64_t content_index = IntField(j, "content_index", 0);
  const bool text_delta = type == "response.output_text.delta" || type == "response.refusal.delta";
  const bool args_delta = type == "response.function_call_arguments.delta";
  if (text_delta || args_delta) {
    Key key{output_index, args_delta ? -1 : content_index};
    Part& part = PartFor(key, j, type);
    auto d = j.find("delta");
    if (d != j.end() && d->is_string()) {
      std::string released;
      if (!part.screener->Push(d->get_ref<const std::string&>(), &released)) {
        report_.Merge(part.screener->report());
        report_.blocked = true;
        return false;
      }
      part.released += released;
      *d = std::move(released);
      // Logprobs carry the provider's tokens, which no longer line up with the screened deltas and
      // would give away what a mask hides.
      if (auto lp = j.find("logprobs"); lp != j.end()) *lp = Json::array();
    }
    Emit(std::move(j), out);
    return true;
  }
  bool ok = true;
  if (type == "response.output_text.done" || type == "response.refusal.done" ||
      type == "response.function_call_arguments.done") {
    Key key{output_index, type == "response.function_call_arguments.done" ? -1 : content_index};
    if (!Flush(key, out)) return false;
    const char* field = type == "response.output_text.done" ? "text"
                        : type == "response.refusal.done"   ? "refusal"
                                                            : "arguments";
    if (auto t = j.find(field); t != j.end()) ok = Replace(key, *t);
    if (auto lp = j.find("logprobs"); lp != j.end()) *lp = Json::array();
  } else if (type == "response.content_part.done" || type == "response.content_part.added") {
    Key key{output_index, content_index};
    if (auto part = j.find("part"); part != j.end() && part->is_object()) {
      for (const char* field : {"text", "refusal"}) {
        if (auto t = part->find(field); t != part->end() && ok) ok = Replace(key, *t);
      }
    }
  } else if (type == "response.output_item.done" || type == "response.output_item.added") {
    if (type == "response.output_item.done") {
      // The item's parts end with it (a provider may skip a part's own .done event).
      for (const auto& [key, part] : parts_) {
        if (key.first == output_index && !Flush(key, out)) return false;
      }
    }
    if (auto item = j.find("item"); item != j.end()) ok = ReplaceItem(output_index, *item);
  } else if (auto resp = j.find("response"); resp != j.end() && resp->is_object()) {
    // response.created / in_progress / completed / incomplete / failed: the whole response so far.
    if (auto output = resp->find("output"); output != resp->end() && output->is_array()) {
      if (type != "response.created" && type != "response.in_progress") {
        for (const auto& [key, part] : parts_) {
          if (!Flush(key, out)) return false;
        }
      }
      for (size_t i = 0; i < output->size() && ok; ++i)
        ok = ReplaceItem(static_cast<int64_t>(i), (*output)[i]);
    }
  }
  if (!ok) return false;
  Emit(std::move(j), out);
  return true;
}

bool ResponsesDlpFilter::Finish(std::vector<SseEvent>* out) {
  if (report_.blocked) return false;
  for (const auto& [key, part] : parts_) {
    if (!Flush(key, out)) return false;
  }
  return true;
}

}  // namespace govern::gateway
