// application/x-www-form-urlencoded bodies of OAuth requests (token, introspection, revocation, the
// sign-in form), read strictly: RFC 6749 section 3.1 says parameters must not repeat and that one sent
// without a value is treated as omitted. Outside input: fuzzed (form_fuzz.cc). Pure, thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::auth_service {

class Form {
 public:
  // kInvalidArgument (the message names the parameter) for a repeated parameter, a bad %-escape, a
  // name that is empty, more than `max_params` parameters, or a decoded byte below 0x20 other than in
  // values of `password` (which may hold anything but NUL).
  static Result<Form> Parse(std::string_view body, size_t max_params = 64);

  // The value, or nullopt when absent or empty.
  std::optional<std::string> Get(std::string_view name) const;
  std::string GetOr(std::string_view name, std::string_view fallback = "") const;
  const std::map<std::string, std::string, std::less<>>& values() const { return values_; }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

// Percent-encodes for a form or query value (unreserved characters kept).
std::string FormEncode(std::string_view s);

}  // namespace govern::auth_service
