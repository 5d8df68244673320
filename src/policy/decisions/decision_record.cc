// DecisionRecord encoding and decision ids (see decision_record.h).
#include "policy/decisions/decision_record.h"

#include <cstring>

#include "crypto/random.h"

namespace govern::policy {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void PutFixed64(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out->append(buf, 8);
}

void PutString(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Reads from a byte range that shrinks as it is consumed; every read checks what is left first.
class Input {
 public:
  explicit Input(std::string_view in) : in_(in) {}
  bool empty() const { return in_.empty(); }
  size_t left() const { return in_.size(); }

  Status Byte(std::string_view what, uint8_t* out) {
    if (in_.empty()) return Truncated(what);
    *out = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return OkStatus();
  }
  Status Fixed64(std::string_view what, uint64_t* out) {
    if (in_.size() < 8) return Truncated(what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in_[i])} << (8 * i);
    in_.remove_prefix(8);
    *out = v;
    return OkStatus();
  }
  Status Varint(std::string_view what, uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in_.empty()) return Truncated(what);
      const uint8_t b = static_cast<uint8_t>(in_[0]);
      in_.remove_prefix(1);
      if (shift == 63 && b > 1) break;  // would overflow 64 bits
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) {
        // One encoding per value (so one per record): a zero final byte after others is padding.
        if (b == 0 && shift > 0) {
          return InvalidArgument("decision record: " + std::string(what) +
                                 ": varint not in its shortest form");
        }
        *out = v;
        return OkStatus();
      }
    }
    return InvalidArgument("decision record: " + std::string(what) + ": varint too long");
  }
  Status Bytes(std::string_view what, size_t n, std::string_view* out) {
    if (in_.size() < n) return Truncated(what);
    *out = in_.substr(0, n);
    in_.remove_prefix(n);
    return OkStatus();
  }
  Status String(std::string_view what, std::string* out) {
    uint64_t n = 0;
    GOVERN_RETURN_IF_ERROR(Varint(what, &n));
    if (n > in_.size()) return Truncated(what);
    out->assign(in_.data(), static_cast<size_t>(n));
    in_.remove_prefix(static_cast<size_t>(n));
    return OkStatus();
  }
  Status StringList(std::string_view what, std::vector<std::string>* out) {
    uint64_t n = 0;
    GOVERN_RETURN_IF_ERROR(Varint(what, &n));
    // Every string takes at least its one length byte: a count beyond the bytes left is a lie, refused
    // before reserving anything for it.
    if (n > in_.size()) return Truncated(what);
    out->resize(static_cast<size_t>(n));
    for (auto& s : *out) GOVERN_RETURN_IF_ERROR(String(what, &s));
    return OkStatus();
  }

 private:
  static Status Truncated(std::string_view what) {
    return InvalidArgument("decision record: " + std::string(what) + ": truncated");
  }
  std::string_view in_;
};

constexpr char kHex[] = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view RecordedDecisionName(RecordedDecision d) {
  switch (d) {
    case RecordedDecision::kAllow:
      return "allow";
    case RecordedDecision::kDeny:
      return "deny";
    case RecordedDecision::kApprovalRequired:
      return "approval_required";
  }
  return "unknown";
}

bool DecisionId::empty() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::string DecisionId::ToString() const {
  std::string s(36, '-');
  size_t o = 0;
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++o;  // the dashes stay
    s[o++] = kHex[bytes[i] >> 4];
    s[o++] = kHex[bytes[i] & 0xf];
  }
  return s;
}

Result<DecisionId> DecisionId::Parse(std::string_view text) {
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' || text[18] != '-' || text[23] != '-') {
    return InvalidArgument("decision id: expected 8-4-4-4-12 hex digits");
  }
  DecisionId id;
  size_t o = 0;
  for (size_t i = 0; i < 16; ++i) {
    if (text[o] == '-') ++o;
    const int hi = HexValue(text[o]);
    const int lo = HexValue(text[o + 1]);
    if (hi < 0 || lo < 0) return InvalidArgument("decision id: expected hex digits");
    id.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
    o += 2;
  }
  return id;
}

Result<DecisionIdGenerator> DecisionIdGenerator::Create() {
  uint8_t b[8];
  GOVERN_RETURN_IF_ERROR(crypto::RandomBytes(b));
  uint64_t prefix = 0;
  std::memcpy(&prefix, b, sizeof(prefix));
  return DecisionIdGenerator(prefix);
}

DecisionId DecisionIdGenerator::Next(int64_t time_ns) {
  const uint32_t n = counter_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t ms =
      static_cast<uint64_t>(time_ns < 0 ? 0 : time_ns / 1'000'000) & ((uint64_t{1} << 48) - 1);
  const uint64_t rnd = prefix_ & ((uint64_t{1} << 42) - 1);
  DecisionId id;
  auto& b = id.bytes;
  for (int i = 0; i < 6; ++i) b[i] = static_cast<uint8_t>(ms >> (40 - 8 * i));
  // Version 7 and 12 bits of the prefix.
  b[6] = static_cast<uint8_t>(0x70 | ((rnd >> 38) & 0x0f));
  b[7] = static_cast<uint8_t>(rnd >> 30);
  // Variant 10 and the remaining 30 bits of the prefix, then the counter.
  b[8] = static_cast<uint8_t>(0x80 | ((rnd >> 24) & 0x3f));
  b[9] = static_cast<uint8_t>(rnd >> 16);
  b[10] = static_cast<uint8_t>(rnd >> 8);
  b[11] = static_cast<uint8_t>(rnd);
  b[12] = static_cast<uint8_t>(n >> 24);
  b[13] = static_cast<uint8_t>(n >> 16);
  b[14] = static_cast<uint8_t>(n >> 8);
  b[15] = static_cast<uint8_t>(n);
  return id;
}

void EncodeDecision(const DecisionRecord& r, std::string* out) {
  EncodeDecision(r, r.id, r.time_ns, r.context_kind, r.context, out);
}

void EncodeDecision(const DecisionRecord& r, const DecisionId& id, int64_t time_ns, ContextKind context_kind,
                    std::string_view context, std::string* out) {
  size_t size = 4 + 16 + 8 + 8;
  for (std::string_view s : {std::string_view(r.organisation), std::string_view(r.principal),
                             std::string_view(r.action), std::string_view(r.resource), context}) {
    size += VarintSize(s.size()) + s.size();
  }
  for (const auto* list : {&r.determining_policies, &r.erroring_policies}) {
    size += VarintSize(list->size());
    for (const auto& s : *list) size += VarintSize(s.size()) + s.size();
  }
  out->reserve(out->size() + size);
  const char head[4] = {static_cast<char>(kDecisionRecordVersion), static_cast<char>(r.decision),
                        static_cast<char>(context_kind), 0};
  out->append(head, 4);
  out->append(reinterpret_cast<const char*>(id.bytes.data()), id.bytes.size());
  PutFixed64(out, static_cast<uint64_t>(time_ns));
  PutFixed64(out, r.bundle_version);
  PutString(out, r.organisation);
  PutString(out, r.principal);
  PutString(out, r.action);
  PutString(out, r.resource);
  for (const auto* list : {&r.determining_policies, &r.erroring_policies}) {
    PutVarint(out, list->size());
    for (const auto& s : *list) PutString(out, s);
  }
  PutString(out, context);
}

Result<DecisionRecord> DecodeDecision(std::string_view bytes) {
  Input in(bytes);
  DecisionRecord r;
  uint8_t version = 0, decision = 0, kind = 0, flags = 0;
  GOVERN_RETURN_IF_ERROR(in.Byte("version", &version));
  if (version != kDecisionRecordVersion) {
    return InvalidArgument("decision record: unknown version " + std::to_string(version));
  }
  GOVERN_RETURN_IF_ERROR(in.Byte("decision", &decision));
  if (decision < 1 || decision > 3) {
    return InvalidArgument("decision record: unknown decision " + std::to_string(decision));
  }
  r.decision = static_cast<RecordedDecision>(decision);
  GOVERN_RETURN_IF_ERROR(in.Byte("context kind", &kind));
  if (kind > 2) return InvalidArgument("decision record: unknown context kind " + std::to_string(kind));
  r.context_kind = static_cast<ContextKind>(kind);
  GOVERN_RETURN_IF_ERROR(in.Byte("flags", &flags));
  if (flags != 0) return InvalidArgument("decision record: unknown flags " + std::to_string(flags));
  std::string_view id;
  GOVERN_RETURN_IF_ERROR(in.Bytes("id", 16, &id));
  std::memcpy(r.id.bytes.data(), id.data(), 16);
  uint64_t time = 0;
  GOVERN_RETURN_IF_ERROR(in.Fixed64("time", &time));
  r.time_ns = static_cast<int64_t>(time);
  GOVERN_RETURN_IF_ERROR(in.Fixed64("bundle version", &r.bundle_version));
  GOVERN_RETURN_IF_ERROR(in.String("organisation", &r.organisation));
  GOVERN_RETURN_IF_ERROR(in.String("principal", &r.principal));
  GOVERN_RETURN_IF_ERROR(in.String("action", &r.action));
  GOVERN_RETURN_IF_ERROR(in.String("resource", &r.resource));
  GOVERN_RETURN_IF_ERROR(in.StringList("determining policies", &r.determining_policies));
  GOVERN_RETURN_IF_ERROR(in.StringList("erroring policies", &r.erroring_policies));
  GOVERN_RETURN_IF_ERROR(in.String("context", &r.context));
  if (!in.empty()) {
    return InvalidArgument("decision record: " + std::to_string(in.left()) + " bytes after the record");
  }
  if (r.context_kind == ContextKind::kHash && r.context.size() != 32) {
    return InvalidArgument("decision record: a context hash must be 32 bytes");
  }
  if (r.context_kind == ContextKind::kNone && !r.context.empty()) {
    return InvalidArgument("decision record: context bytes without a context kind");
  }
  return r;
}

}  // namespace govern::policy
