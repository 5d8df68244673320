// C2SP signed notes with Ed25519 signatures, and the checkpoint body Govern puts in them.
#include "audit/checkpoint.h"

#include <cstring>

#include "audit/json_canonical.h"
#include "crypto/bytes.h"
#include "crypto/encoding.h"
#include "crypto/sha256.h"

namespace govern::audit {
namespace {

constexpr std::string_view kEmDashSpace = "\xe2\x80\x94 ";
constexpr uint8_t kEd25519Type = 0x01;

// Decodes one UTF-8 code point at s[i] (already validated).
uint32_t CodePointAt(std::string_view s, size_t& i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t len = (b0 & 0xE0) == 0xC0 ? 2 : (b0 & 0xF0) == 0xE0 ? 3 : 4;
  uint32_t cp = b0 & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3F);
  i += len;
  return cp;
}

bool IsUnicodeSpace(uint32_t cp) {
  return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

Status CheckKeyName(std::string_view name) {
  if (name.empty()) return InvalidArgument("key name: empty");
  if (!internal::IsValidUtf8(name)) return InvalidArgument("key name: not valid UTF-8");
  for (size_t i = 0; i < name.size();) {
    const uint32_t cp = CodePointAt(name, i);
    if (cp < 0x20 || cp == 0x7F || IsUnicodeSpace(cp) || cp == '+') {
      return InvalidArgument("key name: contains a space, '+' or a control character");
    }
  }
  return OkStatus();
}

// UTF-8 with no control character but newline (signed-note's rule for the whole note).
Status CheckNoteChars(std::string_view text, std::string_view what) {
  if (!internal::IsValidUtf8(text)) return InvalidArgument(std::string(what) + ": not valid UTF-8");
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<uint8_t>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7F) {
      return InvalidArgument(std::string(what) + ": control character at byte " + std::to_string(i));
    }
  }
  return OkStatus();
}

std::array<uint8_t, 4> KeyIdOfRaw(std::string_view name, const std::array<uint8_t, 32>& raw) {
  std::string in(name);
  in.push_back('\n');
  in.push_back(static_cast<char>(kEd25519Type));
  in.append(reinterpret_cast<const char*>(raw.data()), raw.size());
  auto digest = crypto::Sha256(in);
  std::array<uint8_t, 4> id{};
  if (digest.ok()) std::memcpy(id.data(), digest->data(), 4);
  return id;
}

Result<uint64_t> ParseDecimal(std::string_view s, std::string_view what) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) {
    return InvalidArgument(std::string(what) + ": not a decimal number without leading zeros");
  }
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return InvalidArgument(std::string(what) + ": not a decimal number");
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return InvalidArgument(std::string(what) + ": too large");
    v = v * 10 + d;
  }
  return v;
}

}  // namespace

std::string CheckpointOrigin(std::string_view org) { return "govern.audit/" + std::string(org); }

std::array<uint8_t, 4> KeyId(std::string_view name, const crypto::Ed25519PublicKey& key) {
  return KeyIdOfRaw(name, key.Raw());
}

Result<std::string> FormatVerifierKey(std::string_view name, const crypto::Ed25519PublicKey& key) {
  GOVERN_RETURN_IF_ERROR(CheckKeyName(name));
  const auto raw = key.Raw();
  std::vector<uint8_t> typed;
  typed.push_back(kEd25519Type);
  typed.insert(typed.end(), raw.begin(), raw.end());
  return std::string(name) + "+" + crypto::HexEncode(KeyIdOfRaw(name, raw)) + "+" +
         crypto::Base64Encode(typed);
}

Result<VerifierKey> ParseVerifierKey(std::string_view vkey) {
  const size_t p1 = vkey.find('+');
  if (p1 == std::string_view::npos) return InvalidArgument("verifier key: expected name+id+key");
  const size_t p2 = vkey.find('+', p1 + 1);
  if (p2 == std::string_view::npos) return InvalidArgument("verifier key: expected name+id+key");
  const std::string_view name = vkey.substr(0, p1), hex = vkey.substr(p1 + 1, p2 - p1 - 1),
                         b64 = vkey.substr(p2 + 1);
  GOVERN_RETURN_IF_ERROR(CheckKeyName(name).WithContext("verifier key"));
  if (hex.size() != 8) return InvalidArgument("verifier key: key id must be 8 hex digits");
  auto id = crypto::HexDecode(hex);
  if (!id.ok() || crypto::HexEncode(*id) != hex) {
    return InvalidArgument("verifier key: key id must be 8 lower-case hex digits");
  }
  auto typed = crypto::Base64Decode(b64);
  if (!typed.ok()) return InvalidArgument("verifier key: bad base64: " + typed.status().message());
  if (typed->size() != 33 || (*typed)[0] != kEd25519Type) {
    return InvalidArgument("verifier key: not an Ed25519 key (type 0x01 and 32 bytes)");
  }
  auto key = crypto::Ed25519PublicKey::FromRaw(std::span<const uint8_t>(typed->data() + 1, 32));
  if (!key.ok()) return key.status().WithContext("verifier key");
  VerifierKey out{std::string(name), {}, std::move(*key)};
  out.id = KeyId(name, out.key);
  if (std::memcmp(out.id.data(), id->data(), 4) != 0) {
    return InvalidArgument("verifier key: key id does not match the name and key");
  }
  return out;
}

Result<VerifierKey> VerifierKeyFor(std::string_view name, const crypto::Ed25519PrivateKey& key) {
  GOVERN_RETURN_IF_ERROR(CheckKeyName(name));
  GOVERN_ASSIGN_OR_RETURN(auto pub, key.PublicKey());
  VerifierKey out{std::string(name), {}, std::move(pub)};
  out.id = KeyId(name, out.key);
  return out;
}

Result<std::string> SignNote(std::string_view text, std::string_view key_name,
                             const crypto::Ed25519PrivateKey& key) {
  GOVERN_RETURN_IF_ERROR(CheckKeyName(key_name));
  if (text.empty() || text.back() != '\n') return InvalidArgument("note text: must end in a newline");
  GOVERN_RETURN_IF_ERROR(CheckNoteChars(text, "note text"));
  GOVERN_ASSIGN_OR_RETURN(auto pub, key.PublicKey());
  GOVERN_ASSIGN_OR_RETURN(auto sig, key.Sign(crypto::AsBytes(text)));
  std::vector<uint8_t> blob(4 + sig.size());
  const auto id = KeyIdOfRaw(key_name, pub.Raw());
  std::memcpy(blob.data(), id.data(), 4);
  std::memcpy(blob.data() + 4, sig.data(), sig.size());
  std::string out(text);
  out += "\n";
  out += kEmDashSpace;
  out += key_name;
  out += ' ';
  out += crypto::Base64Encode(blob);
  out += '\n';
  return out;
}

Result<std::string> OpenNote(std::string_view note, const std::vector<VerifierKey>& keys) {
  if (note.size() > kMaxNoteBytes) {
    return InvalidArgument("signed note: longer than " + std::to_string(kMaxNoteBytes) + " bytes");
  }
  GOVERN_RETURN_IF_ERROR(CheckNoteChars(note, "signed note"));
  if (note.empty() || note.back() != '\n') return InvalidArgument("signed note: must end in a newline");
  const size_t split = note.rfind("\n\n");
  if (split == std::string_view::npos) {
    return InvalidArgument("signed note: no blank line before the signatures");
  }
  const std::string_view text = note.substr(0, split + 1);
  std::string_view sigs = note.substr(split + 2);
  if (sigs.empty()) return InvalidArgument("signed note: no signature lines");
  size_t count = 0;
  bool verified = false;
  for (size_t line_no = 1; !sigs.empty(); ++line_no) {
    const size_t nl = sigs.find('\n');
    const std::string_view line = sigs.substr(0, nl);
    sigs.remove_prefix(nl + 1);
    const std::string where = "signed note: signature line " + std::to_string(line_no);
    if (++count > kMaxNoteSignatures) return InvalidArgument("signed note: too many signatures");
    if (line.substr(0, kEmDashSpace.size()) != kEmDashSpace) {
      return InvalidArgument(where + ": must start with an em dash and a space");
    }
    const std::string_view rest = line.substr(kEmDashSpace.size());
    const size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return InvalidArgument(where + ": expected a name and a signature");
    const std::string_view name = rest.substr(0, sp), b64 = rest.substr(sp + 1);
    if (!CheckKeyName(name).ok()) return InvalidArgument(where + ": bad key name");
    auto blob = crypto::Base64Decode(b64);
    if (!blob.ok() || blob->size() < 5) return InvalidArgument(where + ": bad base64 signature");
    for (const VerifierKey& key : keys) {
      if (key.name != name || std::memcmp(key.id.data(), blob->data(), 4) != 0) continue;
      const std::span<const uint8_t> sig(blob->data() + 4, blob->size() - 4);
      if (!key.key.Verify(crypto::AsBytes(text), sig).ok()) {
        return Unauthenticated("signed note: the signature by " + key.name + " does not verify");
      }
      verified = true;
    }
  }
  if (!verified) return Unauthenticated("signed note: not signed by a known key");
  return std::string(text);
}

Result<std::string> CheckpointBody(const Checkpoint& c) {
  if (c.origin.empty()) return InvalidArgument("checkpoint: empty origin");
  if (c.origin.find('\n') != std::string::npos) return InvalidArgument("checkpoint: origin has a newline");
  GOVERN_RETURN_IF_ERROR(CheckNoteChars(c.origin, "checkpoint origin"));
  if (c.time_us < kMinTimeUs || c.time_us > kMaxTimeUs)
    return InvalidArgument("checkpoint: time out of range");
  std::string out = c.origin;
  out += '\n';
  out += std::to_string(c.size);
  out += '\n';
  out += crypto::Base64Encode(c.root);
  out += "\nchain ";
  out += HashToHex(c.chain_head);
  out += "\ntime ";
  out += FormatTime(c.time_us);
  out += '\n';
  return out;
}

Result<std::string> SignCheckpoint(const Checkpoint& checkpoint, std::string_view key_name,
                                   const crypto::Ed25519PrivateKey& key) {
  GOVERN_ASSIGN_OR_RETURN(std::string body, CheckpointBody(checkpoint));
  return SignNote(body, key_name, key);
}

Result<Checkpoint> ParseCheckpointBody(std::string_view body) {
  GOVERN_RETURN_IF_ERROR(CheckNoteChars(body, "checkpoint"));
  if (body.empty() || body.back() != '\n') return InvalidArgument("checkpoint: must end in a newline");
  std::vector<std::string_view> lines;
  for (std::string_view rest = body; !rest.empty();) {
    const size_t nl = rest.find('\n');
    lines.push_back(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
  }
  if (lines.size() != 5) {
    return InvalidArgument("checkpoint: expected 5 lines (origin, size, root, chain, time), got " +
                           std::to_string(lines.size()));
  }
  Checkpoint c;
  if (lines[0].empty()) return InvalidArgument("checkpoint: line 1: empty origin");
  c.origin = std::string(lines[0]);
  GOVERN_ASSIGN_OR_RETURN(c.size, ParseDecimal(lines[1], "checkpoint: line 2 (size)"));
  auto root = crypto::Base64Decode(lines[2]);
  if (!root.ok() || root->size() != 32) {
    return InvalidArgument("checkpoint: line 3: the root must be 32 bytes in base64");
  }
  std::memcpy(c.root.data(), root->data(), 32);
  constexpr std::string_view kChain = "chain ", kTime = "time ";
  if (lines[3].substr(0, kChain.size()) != kChain)
    return InvalidArgument("checkpoint: line 4: expected \"chain <hex>\"");
  const std::string_view head_hex = lines[3].substr(kChain.size());
  auto head = HashFromHex(head_hex);
  if (!head.ok() || HashToHex(*head) != head_hex) {
    return InvalidArgument("checkpoint: line 4: the chain head must be 64 lower-case hex digits");
  }
  c.chain_head = *head;
  if (lines[4].substr(0, kTime.size()) != kTime)
    return InvalidArgument("checkpoint: line 5: expected \"time <RFC 3339>\"");
  auto t = ParseTime(lines[4].substr(kTime.size()));
  if (!t.ok()) return t.status().WithContext("checkpoint: line 5");
  c.time_us = *t;
  return c;
}

Result<Checkpoint> OpenCheckpoint(std::string_view note, const std::vector<VerifierKey>& keys) {
  GOVERN_ASSIGN_OR_RETURN(std::string text, OpenNote(note, keys));
  return ParseCheckpointBody(text);
}

}  // namespace govern::audit
