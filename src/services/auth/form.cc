// Strict form-urlencoded parsing for the OAuth endpoints.
#include "services/auth/form.h"

namespace govern::auth_service {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> Decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%') {
      if (i + 2 >= s.size()) return InvalidArgument("a %-escape is cut short");
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi < 0 || lo < 0) return InvalidArgument("a %-escape is not two hex digits");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Result<Form> Form::Parse(std::string_view body, size_t max_params) {
  Form f;
  size_t count = 0;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t amp = body.find('&', pos);
    std::string_view pair =
        body.substr(pos, amp == std::string_view::npos ? std::string_view::npos : amp - pos);
    pos = amp == std::string_view::npos ? body.size() + 1 : amp + 1;
    if (pair.empty()) continue;
    if (++count > max_params)
      return InvalidArgument("more than " + std::to_string(max_params) + " parameters");
    size_t eq = pair.find('=');
    std::string_view raw_name = pair.substr(0, eq);
    std::string_view raw_value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    auto name = Decode(raw_name);
    if (!name.ok()) return InvalidArgument("a parameter name: " + name.status().message());
    if (name->empty()) return InvalidArgument("a parameter has no name");
    for (char c : *name) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        return InvalidArgument("a parameter name has a control character");
    }
    if (name->size() > 64) return InvalidArgument("a parameter name is longer than 64 bytes");
    auto value = Decode(raw_value);
    if (!value.ok()) return InvalidArgument("parameter " + *name + ": " + value.status().message());
    bool free_text = *name == "password";
    for (char c : *value) {
      unsigned char u = static_cast<unsigned char>(c);
      if (u == 0 || (!free_text && (u < 0x20 || u == 0x7f)))
        return InvalidArgument("parameter " + *name + " has a control character");
    }
    if (f.values_.contains(*name)) return InvalidArgument("parameter " + *name + " is repeated");
    f.values_.emplace(std::move(*name), std::move(*value));
  }
  return f;
}

std::optional<std::string> Form::Get(std::string_view name) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string Form::GetOr(std::string_view name, std::string_view fallback) const {
  auto v = Get(name);
  return v ? *v : std::string(fallback);
}

std::string FormEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' || u == '.' ||
        u == '_' || u == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

}  // namespace govern::auth_service
