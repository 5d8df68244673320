// Fuzz target: the client address from outside input (the first line is the peer address, the rest an
// X-Forwarded-For value) and CIDR parsing. Must never crash; a chosen address must format and parse back
// to itself, its limit key must parse as a block holding it, and an untrusted peer must be the answer.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "services/auth/limiter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::auth_service;
  static const std::vector<Cidr> trusted = *ParseCidrList({"10.0.0.0/8", "127.0.0.3", "fd00::/8"});
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string_view peer = in, xff;
  bool has_xff = false;
  if (size_t nl = in.find('\n'); nl != std::string_view::npos) {
    peer = in.substr(0, nl);
    xff = in.substr(nl + 1);
    has_xff = true;
  }
  (void)ParseCidr(in);
  auto client = ClientAddress(peer, has_xff ? std::optional<std::string_view>(xff) : std::nullopt, trusted);
  auto p = ParseIp(peer);
  if (client.has_value() != p.ok()) __builtin_trap();
  if (!client) return 0;
  bool peer_trusted = false;
  for (const Cidr& c : trusted) peer_trusted = peer_trusted || c.Contains(*p);
  if (!peer_trusted && !(*client == *p)) __builtin_trap();
  auto again = ParseIp(FormatIp(*client));
  if (!again.ok() || !(*again == *client)) __builtin_trap();
  auto block = ParseCidr(LimitKey(*client, 24, 64));
  if (!block.ok() || !block->Contains(*client)) __builtin_trap();
  return 0;
}
