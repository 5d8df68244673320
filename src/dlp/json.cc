// RuleSet::RedactJson: redacts every string value of a JSON document, copying everything else verbatim.
//
// simdjson validates the document (structure and UTF-8); a small tokenizer then walks the raw bytes, so
// numbers, key order and whitespace come out exactly as they went in, and only changed values are
// re-escaped.
#include <cstring>

#include "base/ascii.h"
#include "dlp/engine.h"

namespace govern::dlp {
namespace {

unsigned ReadHex4(std::string_view s, size_t i) {
  unsigned v = 0;
  for (size_t k = 0; k < 4; ++k) {
    int h = i + k < s.size() ? HexDigitValue(s[i + k]) : -1;
    if (h < 0) return 0xFFFD;
    v = v * 16 + static_cast<unsigned>(h);
  }
  return v;
}

void AppendUtf8(unsigned cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The raw contents of a validated JSON string (between the quotes) to its UTF-8 value. A lone surrogate
// becomes U+FFFD.
std::string_view Unescape(std::string_view raw, std::string* out) {
  out->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out->push_back(c);
      continue;
    }
    char e = raw[++i];
    switch (e) {
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        unsigned cp = ReadHex4(raw, i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < raw.size() + 0 && raw[i + 1] == '\\' &&
            raw[i + 2] == 'u') {
          unsigned lo = ReadHex4(raw, i + 3);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        AppendUtf8(cp, out);
        break;
      }
      default:
        out->push_back(e);
        break;  // \" \\ \/
    }
  }
  return *out;
}

void AppendEscaped(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        if (u < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[u >> 4]);
          out->push_back(kHex[u & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

bool IsJsonSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

Result<Outcome> RuleSet::RedactJson(std::string_view json, std::string* out) const {
  Outcome outcome;
  if (json.size() > UINT32_MAX) return InvalidArgument("JSON document larger than 4 GiB");
  const Impl& impl = *impl_;
  internal::Lease w(*impl.db);
  w->padded.reserve(json.size() + simdjson::SIMDJSON_PADDING);
  w->padded.assign(json.data(), json.size());
  simdjson::dom::element root;
  if (auto error = w->parser.parse(w->padded.data(), w->padded.size(), false).get(root); error) {
    return InvalidArgument(std::string("invalid JSON: ") + simdjson::error_message(error));
  }

  // Fast path: a match inside a value is also a match in the whole document (quotes are not word
  // characters), so when the document has no finding and no secret-named key, no value has one either.
  // Escapes could hide a value's characters, and anchored custom patterns behave differently on the
  // whole document, so those take the slow path.
  if (impl.json_prefilter && std::memchr(json.data(), '\\', json.size()) == nullptr) {
    if (!impl.db->Find(w.get(), json, impl.enabled)) return ResourceExhausted("DLP scan failed");
    bool secret_key = false;
    for (const auto& r : w->raw) secret_key |= impl.db->PatternDetector(r.pattern) == impl.generic_secret;
    if (w->findings.empty() && !secret_key) return outcome;
  }

  bool started = false;
  bool pending_secret = false;  // the previous token was a key naming a secret
  size_t copied = 0;
  const size_t n = json.size();
  for (size_t i = 0; i < n;) {
    char c = json[i];
    if (c != '"') {
      if (!IsJsonSpace(c) && c != ':') pending_secret = false;
      ++i;
      continue;
    }
    size_t start = i + 1;
    size_t q = start;
    bool escaped = false;
    while (q < n && json[q] != '"') {
      if (json[q] == '\\') {
        escaped = true;
        ++q;
      }
      ++q;
    }
    if (q >= n) break;  // cannot happen on a validated document
    size_t k = q + 1;
    while (k < n && IsJsonSpace(json[k])) ++k;
    std::string_view raw = json.substr(start, q - start);
    if (k < n && json[k] == ':') {  // a key: never changed, but it may mark the value as a secret
      pending_secret = impl.generic_secret_enabled &&
                       internal::IsSecretKeyName(escaped ? Unescape(raw, &w->unescaped) : raw);
      i = q + 1;
      continue;
    }
    bool secret_value = pending_secret;
    pending_secret = false;
    std::string_view value = escaped ? Unescape(raw, &w->unescaped) : raw;
    if (!impl.db->Find(w.get(), value, impl.enabled)) return ResourceExhausted("DLP scan failed");
    if (secret_value && !internal::IsPlaceholderSecret(value)) {
      w->findings.clear();
      w->findings.push_back({impl.generic_secret, 0, value.size()});
    }
    if (!w->findings.empty()) {
      if (!started) {
        out->clear();
        out->reserve(n + 64);
        started = true;
      }
      out->append(json.substr(copied, i - copied));
      impl.Count(w.get(), &outcome);
      if (impl.Apply(w.get(), value, &w->redacted)) {
        out->append("null");
        outcome.dropped = true;
      } else {
        AppendEscaped(w->redacted, out);
      }
      copied = q + 1;
    }
    i = q + 1;
  }
  if (started) {
    out->append(json.substr(copied));
    outcome.changed = true;
  }
  return outcome;
}

}  // namespace govern::dlp
