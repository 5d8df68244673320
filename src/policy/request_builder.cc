// RequestBuilder: requests built into reusable storage, and a small JSON reader for the common shape
// of a context (objects, arrays, strings, integers, booleans). The reader never decides anything the
// general path would decide differently: whatever it does not handle plainly (escape objects, \u
// escapes, fractions, nulls, duplicate keys, any syntax error) it hands to the general path, which
// then gives exactly Request::Make's value or error.
#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "policy/cedar.h"
#include "policy/entity_store.h"
#include "policy/extensions.h"

namespace govern::policy {

struct RequestBuilder::State {
  RequestData data;  // data.arena holds the general JSON path's values; the rest point into pools
  Uid uids[3];
  bool uid_set[3] = {false, false, false};
  Status status;
  RecordData root;
  bool general = false;  // the context came from the general JSON path

  std::vector<std::unique_ptr<std::string>> strings;
  size_t n_strings = 0;
  std::vector<std::unique_ptr<Uid>> ents;
  size_t n_ents = 0;
  std::vector<std::unique_ptr<RecordData>> records;
  size_t n_records = 0;
  std::vector<std::unique_ptr<SetData>> sets;
  size_t n_sets = 0;
  std::vector<std::unique_ptr<IpAddr>> ips;
  size_t n_ips = 0;
  std::string error;  // an extension constructor's complaint

  struct Frame {
    RecordData* rec;
    SetData* set;
  };
  std::vector<Frame> stack;
  std::string scratch;  // an unescaped JSON string

  State() {
    data.principal = &uids[0];
    data.action = &uids[1];
    data.resource = &uids[2];
    data.context = Value::Record(&root);
    stack.push_back({&root, nullptr});
  }

  void ClearContext() {
    root.fields.clear();
    n_strings = n_ents = n_records = n_sets = n_ips = 0;
    stack.clear();
    stack.push_back({&root, nullptr});
    if (general) {
      data.arena.Clear();
      data.context = Value::Record(&root);
      general = false;
    }
  }

  template <typename T>
  static T* Take(std::vector<std::unique_ptr<T>>& pool, size_t& n) {
    if (n == pool.size()) pool.push_back(std::make_unique<T>());
    return pool[n++].get();
  }

  void Fail(Status s) {
    if (status.ok()) status = std::move(s);
  }

  // Adds `v` to the innermost open record (under `key`) or set.
  bool Add(std::string_view key, Value v) {
    if (!status.ok()) return false;
    Frame& f = stack.back();
    if (f.set) {
      f.set->elems.push_back(v);  // duplicates are removed when the set is closed
      return true;
    }
    auto& fields = f.rec->fields;
    auto it = std::lower_bound(fields.begin(), fields.end(), key,
                               [](const Field& a, std::string_view k) { return a.key < k; });
    if (it != fields.end() && it->key == key) {
      Fail(InvalidArgument("context: duplicate key `" + std::string(key) + "`"));
      return false;
    }
    it = fields.emplace(it);
    it->key.assign(key.data(), key.size());
    it->hash = HashBytes(key);
    it->value = v;
    return true;
  }

  Value Str(std::string_view v) {
    std::string* s = Take(strings, n_strings);
    s->assign(v.data(), v.size());
    return Value::Str(s);
  }

  bool SetUid(Uid* u, std::string_view type, std::string_view id, const char* what) {
    bool same_type = u->hash != 0 && u->type == type;  // validated when it was set
    if (same_type && u->id == id) return true;
    if (!same_type && !ValidEntityTypeName(type)) {
      Fail(InvalidArgument(std::string(what) + ": `" + std::string(type) +
                           "` is not a valid entity type name"));
      return false;
    }
    u->type.assign(type.data(), type.size());
    u->id.assign(id.data(), id.size());
    u->hash = HashBytes(u->id, HashBytes(u->type));
    return true;
  }

  void Open(std::string_view key, bool set) {
    if (!status.ok()) return;
    if (set) {
      SetData* s = Take(sets, n_sets);
      s->elems.clear();
      if (Add(key, Value::Set(s))) stack.push_back({nullptr, s});
    } else {
      RecordData* r = Take(records, n_records);
      r->fields.clear();
      if (Add(key, Value::Record(r))) stack.push_back({r, nullptr});
    }
  }

  void Close() {
    if (!status.ok()) return;
    if (stack.size() <= 1) {
      Fail(FailedPrecondition("context: End() without an open record or set"));
      return;
    }
    if (SetData* s = stack.back().set) {
      // Cedar sets hold each value once; the elements are complete only now.
      auto& e = s->elems;
      size_t w = 0;
      for (size_t k = 0; k < e.size(); ++k) {
        bool dup = false;
        for (size_t j = 0; j < w && !dup; ++j) dup = ValueEquals(e[j], e[k]);
        if (!dup) e[w++] = e[k];
      }
      e.resize(w);
    }
    stack.pop_back();
  }
};

namespace {

// ---- the context JSON reader ----

class FastJson {
 public:
  FastJson(std::string_view text, RequestBuilder::State* s)
      : p_(text.data()), end_(text.data() + text.size()), s_(s) {}

  // True if the whole text was read as a plain object into the builder; false means "use the general
  // path" (not necessarily an error).
  bool Run() {
    Ws();
    if (p_ == end_ || *p_ != '{') return false;
    ++p_;
    if (!ObjectBody()) return false;
    Ws();
    return p_ == end_ && s_->status.ok();
  }

 private:
  static constexpr int kMaxDepth = 64;
  static constexpr size_t kMaxSet = 64;

  void Ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // After '{': members then '}'.
  bool ObjectBody() {
    Ws();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    for (;;) {
      Ws();
      std::string_view key;
      if (!String(&key)) return false;
      if (key.size() >= 2 && key[0] == '_' && key[1] == '_') return false;  // a possible escape object
      // A key with escapes points into scratch, which the value's string overwrites: keep it.
      if (!key.empty() && key.data() == s_->scratch.data()) key = *s_->Str(key).s;
      Ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      if (!Member(key)) return false;
      Ws();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == '}') {
        ++p_;
        return true;
      }
      return false;
    }
  }

  bool ArrayBody() {
    Ws();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return true;
    }
    for (size_t n = 0;; ++n) {
      if (n == kMaxSet) return false;  // large sets: the general path dedupes them in linear time
      if (!Member("")) return false;
      Ws();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        continue;
      }
      if (*p_ == ']') {
        ++p_;
        return true;
      }
      return false;
    }
  }

  bool Member(std::string_view key) {
    Ws();
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': {
        if (++depth_ > kMaxDepth) return false;
        ++p_;
        s_->Open(key, false);
        if (!s_->status.ok() || !ObjectBody()) return false;
        s_->Close();
        --depth_;
        return s_->status.ok();
      }
      case '[': {
        if (++depth_ > kMaxDepth) return false;
        ++p_;
        s_->Open(key, true);
        if (!s_->status.ok() || !ArrayBody()) return false;
        s_->Close();
        --depth_;
        return s_->status.ok();
      }
      case '"': {
        std::string_view v;
        if (!String(&v)) return false;
        return s_->Add(key, s_->Str(v));
      }
      case 't':
        if (end_ - p_ < 4 || std::memcmp(p_, "true", 4) != 0) return false;
        p_ += 4;
        return s_->Add(key, Value::Bool(true));
      case 'f':
        if (end_ - p_ < 5 || std::memcmp(p_, "false", 5) != 0) return false;
        p_ += 5;
        return s_->Add(key, Value::Bool(false));
      default: {
        int64_t v = 0;
        if (!Integer(&v)) return false;
        return s_->Add(key, Value::Long(v));
      }
    }
  }

  bool Integer(int64_t* out) {
    bool neg = false;
    if (p_ < end_ && *p_ == '-') {
      neg = true;
      ++p_;
    }
    if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0' && p_ + 1 < end_ && p_[1] >= '0' && p_[1] <= '9') return false;
    uint64_t limit = neg ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    uint64_t v = 0;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
      uint64_t d = static_cast<uint64_t>(*p_ - '0');
      if (v > (limit - d) / 10) return false;  // out of range: the general path says so
      v = v * 10 + d;
      ++p_;
    }
    if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) return false;
    *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
    return true;
  }

  // Length of a valid UTF-8 sequence starting at p (a non-ASCII lead byte), or 0.
  size_t Utf8(const unsigned char* p) const {
    size_t avail = static_cast<size_t>(end_ - reinterpret_cast<const char*>(p));
    unsigned c = p[0];
    auto cont = [&](size_t k) { return k < avail && (p[k] & 0xC0) == 0x80; };
    if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
      if (!cont(1) || !cont(2)) return 0;
      if (c == 0xE0 && p[1] < 0xA0) return 0;  // overlong
      if (c == 0xED && p[1] > 0x9F) return 0;  // surrogates
      return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
      if (!cont(1) || !cont(2) || !cont(3)) return 0;
      if (c == 0xF0 && p[1] < 0x90) return 0;  // overlong
      if (c == 0xF4 && p[1] > 0x8F) return 0;  // above U+10FFFF
      return 4;
    }
    return 0;
  }

  // A JSON string at p_; the view points into the input, or into scratch when it had escapes.
  bool String(std::string_view* out) {
    if (p_ == end_ || *p_ != '"') return false;
    ++p_;
    const char* start = p_;
    bool escaped = false;
    s_->scratch.clear();
    while (p_ < end_) {
      unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        if (escaped) {
          s_->scratch.append(start, p_);
          *out = s_->scratch;
        } else {
          *out = std::string_view(start, static_cast<size_t>(p_ - start));
        }
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (p_ + 1 >= end_) return false;
        char e = p_[1];
        char r;
        switch (e) {
          case '"':
          case '\\':
          case '/':
            r = e;
            break;
          case 'b':
            r = '\b';
            break;
          case 'f':
            r = '\f';
            break;
          case 'n':
            r = '\n';
            break;
          case 'r':
            r = '\r';
            break;
          case 't':
            r = '\t';
            break;
          default:
            return false;  // \u and anything invalid: the general path
        }
        s_->scratch.append(start, p_);
        s_->scratch.push_back(r);
        escaped = true;
        p_ += 2;
        start = p_;
        continue;
      }
      if (c >= 0x80) {
        size_t n = Utf8(reinterpret_cast<const unsigned char*>(p_));
        if (n == 0) return false;
        p_ += n;
        continue;
      }
      ++p_;
    }
    return false;
  }

  const char* p_;
  const char* end_;
  RequestBuilder::State* s_;
  int depth_ = 0;
};

Value CloneValue(const Value& v, Arena* a) {
  switch (v.kind) {
    case Kind::kString:
      return Value::Str(a->Str(*v.s));
    case Kind::kEntity:
      return Value::Entity(a->MakeUid(v.e->type, v.e->id));
    case Kind::kIp:
      return Value::Ip(a->New<IpAddr>(*v.ip));
    case Kind::kSet: {
      std::vector<Value> elems;
      elems.reserve(v.set->elems.size());
      for (const Value& e : v.set->elems) elems.push_back(CloneValue(e, a));
      return a->MakeSet(std::move(elems));
    }
    case Kind::kRecord: {
      std::vector<Field> fields;
      fields.reserve(v.rec->fields.size());
      for (const Field& f : v.rec->fields) fields.push_back(Field{f.key, 0, CloneValue(f.value, a)});
      return a->MakeRecord(std::move(fields));
    }
    default:
      return v;
  }
}

}  // namespace

RequestBuilder::RequestBuilder() : s_(std::make_unique<State>()) {}
RequestBuilder::~RequestBuilder() = default;
RequestBuilder::RequestBuilder(RequestBuilder&&) noexcept = default;
RequestBuilder& RequestBuilder::operator=(RequestBuilder&&) noexcept = default;

RequestBuilder& RequestBuilder::Reset() {
  s_->ClearContext();
  s_->status = OkStatus();
  return *this;
}

RequestBuilder& RequestBuilder::Principal(std::string_view type, std::string_view id) {
  s_->uid_set[0] = s_->SetUid(&s_->uids[0], type, id, "request principal");
  return *this;
}
RequestBuilder& RequestBuilder::Action(std::string_view type, std::string_view id) {
  s_->uid_set[1] = s_->SetUid(&s_->uids[1], type, id, "request action");
  return *this;
}
RequestBuilder& RequestBuilder::Resource(std::string_view type, std::string_view id) {
  s_->uid_set[2] = s_->SetUid(&s_->uids[2], type, id, "request resource");
  return *this;
}

RequestBuilder& RequestBuilder::String(std::string_view key, std::string_view value) {
  s_->Add(key, s_->Str(value));
  return *this;
}
RequestBuilder& RequestBuilder::Long(std::string_view key, int64_t value) {
  s_->Add(key, Value::Long(value));
  return *this;
}
RequestBuilder& RequestBuilder::Bool(std::string_view key, bool value) {
  s_->Add(key, Value::Bool(value));
  return *this;
}
RequestBuilder& RequestBuilder::Entity(std::string_view key, std::string_view type, std::string_view id) {
  Uid scratch;
  if (!s_->SetUid(&scratch, type, id, "context entity")) return *this;
  Uid* u = State::Take(s_->ents, s_->n_ents);
  u->type.assign(type.data(), type.size());
  u->id.assign(id.data(), id.size());
  u->hash = scratch.hash;
  s_->Add(key, Value::Entity(u));
  return *this;
}
namespace {

// The reference's message prefix for a constructor's error (as CallExtension words it).
Status BadExtension(std::string_view key, const char* fn, std::string_view text, const std::string& error) {
  return InvalidArgument("context: `" + std::string(key) + "`: " + fn + "(\"" + std::string(text) +
                         "\"): " + error);
}

}  // namespace

RequestBuilder& RequestBuilder::Ip(std::string_view key, std::string_view text) {
  if (!s_->status.ok()) return *this;
  IpAddr* ip = State::Take(s_->ips, s_->n_ips);
  if (!ParseIp(text, ip, &s_->error)) {
    s_->Fail(BadExtension(key, "ip", text, s_->error));
    return *this;
  }
  s_->Add(key, Value::Ip(ip));
  return *this;
}
RequestBuilder& RequestBuilder::Decimal(std::string_view key, std::string_view text) {
  int64_t v = 0;
  if (!s_->status.ok()) return *this;
  if (!ParseDecimal(text, &v, &s_->error)) {
    s_->Fail(BadExtension(key, "decimal", text, s_->error));
    return *this;
  }
  return DecimalScaled(key, v);
}
RequestBuilder& RequestBuilder::Datetime(std::string_view key, std::string_view text) {
  int64_t v = 0;
  if (!s_->status.ok()) return *this;
  if (!ParseDatetime(text, &v, &s_->error)) {
    s_->Fail(BadExtension(key, "datetime", text, s_->error));
    return *this;
  }
  return DatetimeMillis(key, v);
}
RequestBuilder& RequestBuilder::Duration(std::string_view key, std::string_view text) {
  int64_t v = 0;
  if (!s_->status.ok()) return *this;
  if (!ParseDuration(text, &v, &s_->error)) {
    s_->Fail(BadExtension(key, "duration", text, s_->error));
    return *this;
  }
  return DurationMillis(key, v);
}
RequestBuilder& RequestBuilder::DecimalScaled(std::string_view key, int64_t ten_thousandths) {
  s_->Add(key, Value::Scalar(Kind::kDecimal, ten_thousandths));
  return *this;
}
RequestBuilder& RequestBuilder::DatetimeMillis(std::string_view key, int64_t millis_since_epoch) {
  s_->Add(key, Value::Scalar(Kind::kDatetime, millis_since_epoch));
  return *this;
}
RequestBuilder& RequestBuilder::DurationMillis(std::string_view key, int64_t millis) {
  s_->Add(key, Value::Scalar(Kind::kDuration, millis));
  return *this;
}

RequestBuilder& RequestBuilder::BeginRecord(std::string_view key) {
  s_->Open(key, false);
  return *this;
}
RequestBuilder& RequestBuilder::BeginSet(std::string_view key) {
  s_->Open(key, true);
  return *this;
}
RequestBuilder& RequestBuilder::End() {
  s_->Close();
  return *this;
}

Status RequestBuilder::ContextJson(std::string_view json) {
  s_->ClearContext();
  s_->status = OkStatus();
  if (json.empty()) return OkStatus();
  if (FastJson(json, s_.get()).Run()) return OkStatus();
  // The general path: nlohmann's DOM, then the same conversion as Request::Make.
  s_->ClearContext();
  s_->status = OkStatus();
  s_->general = true;
  Status st;
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    st = InvalidArgument("context: invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const nlohmann::json::exception& e) {
    st = InvalidArgument(std::string("context: invalid JSON: ") + e.what());
  }
  if (st.ok() && !c.is_object()) st = InvalidArgument("request context: expected a JSON object");
  Value v;
  if (st.ok()) st = ValueFromJson(c, &s_->data.arena, "context", &v);
  if (st.ok() && v.kind != Kind::kRecord) st = InvalidArgument("request context: expected a record");
  if (!st.ok()) {
    s_->status = st;
    return st;
  }
  s_->data.context = v;
  return OkStatus();
}

Status RequestBuilder::status() const {
  if (!s_->status.ok()) return s_->status;
  if (s_->stack.size() != 1) return FailedPrecondition("context: a record or set is still open");
  static const char* kNames[3] = {"request principal", "request action", "request resource"};
  for (int k = 0; k < 3; ++k) {
    if (!s_->uid_set[k]) return FailedPrecondition(std::string(kNames[k]) + ": not set");
  }
  return OkStatus();
}

const RequestData& RequestBuilder::data() const { return s_->data; }

Result<Request> RequestBuilder::Build() const {
  GOVERN_RETURN_IF_ERROR(status());
  auto data = std::make_shared<RequestData>();
  data->principal = data->arena.MakeUid(s_->uids[0].type, s_->uids[0].id);
  data->action = data->arena.MakeUid(s_->uids[1].type, s_->uids[1].id);
  data->resource = data->arena.MakeUid(s_->uids[2].type, s_->uids[2].id);
  data->context = CloneValue(s_->data.context, &data->arena);
  Request r;
  r.impl_ = std::move(data);
  return r;
}

}  // namespace govern::policy
