// Fuzz target: the token endpoint's request parsing (the form and client authentication from the
// body and an Authorization header taken from the first line of the input). Must never crash, and a
// parsed form must survive re-encoding unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "services/auth/form.h"
#include "services/auth/grants.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::auth_service;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view header, body = in;
  if (size_t nl = in.find('\n'); nl != std::string_view::npos) {
    header = in.substr(0, nl);
    body = in.substr(nl + 1);
  }
  auto form = Form::Parse(body);
  if (!form.ok()) return 0;
  std::string again;
  for (const auto& [k, v] : form->values()) {
    if (!again.empty()) again += '&';
    again += FormEncode(k) + "=" + FormEncode(v);
  }
  auto reparsed = Form::Parse(again);
  if (!reparsed.ok() || reparsed->values() != form->values()) __builtin_trap();
  Reply error;
  auto auth =
      ReadClientAuth(*form, header.empty() ? std::nullopt : std::optional<std::string_view>(header), &error);
  if (!auth && error.body.empty()) __builtin_trap();
  (void)ValidCodeVerifier(form->GetOr("code_verifier"));
  return 0;
}
