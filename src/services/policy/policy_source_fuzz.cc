// Fuzz target: a publish request body (ParseSourceJson) and, when it parses, the validation the server
// runs before accepting a policy set (with a schema: its parser, the policy validator, the entities'
// conformance). Neither may crash, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "services/policy/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  auto src = govern::policy_service::ParseSourceJson(body);
  if (!src.ok()) return 0;
  std::string entities;
  auto errors = govern::policy_service::Validate(*src, &entities);
  for (const auto& e : errors) {
    if (e.message.empty() && e.file.empty()) __builtin_trap();
  }
  return 0;
}
