// Address parsing, client address selection and the in-memory token buckets (see limiter.h).
#include "services/auth/limiter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>

#include "base/ascii.h"

namespace govern::auth_service {

Result<IpAddr> ParseIp(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() > 45) return InvalidArgument("not an IP address");
  std::string s(text);
  IpAddr a;
  if (s.find(':') == std::string::npos) {
    // inet_pton takes only the strict dotted-quad form: no octal, no shortened forms.
    if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) != 1) return InvalidArgument("not an IP address");
    a.v4 = true;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) != 1) return InvalidArgument("not an IP address");
  static constexpr std::array<uint8_t, 12> kMapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(kMapped.begin(), kMapped.end(), a.bytes.begin())) {
    IpAddr v4;
    std::copy(a.bytes.begin() + 12, a.bytes.end(), v4.bytes.begin());
    v4.v4 = true;
    return v4;
  }
  return a;
}

std::string FormatIp(const IpAddr& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(a.v4 ? AF_INET : AF_INET6, a.bytes.data(), buf, sizeof buf);
  return buf;
}

IpAddr Mask(const IpAddr& a, int v4_bits, int v6_bits) {
  const int width = a.v4 ? 32 : 128;
  const int bits = std::clamp(a.v4 ? v4_bits : v6_bits, 0, width);
  IpAddr m = a;
  for (int i = 0; i < width / 8; ++i) {
    const int keep = std::clamp(bits - i * 8, 0, 8);
    m.bytes[i] &= static_cast<uint8_t>(keep == 0 ? 0 : 0xff << (8 - keep));
  }
  return m;
}

std::string LimitKey(const IpAddr& a, int v4_bits, int v6_bits) {
  const int width = a.v4 ? 32 : 128;
  const int bits = std::clamp(a.v4 ? v4_bits : v6_bits, 0, width);
  return FormatIp(Mask(a, v4_bits, v6_bits)) + "/" + std::to_string(bits);
}

bool Cidr::Contains(const IpAddr& a) const { return a.v4 == base.v4 && Mask(a, bits, bits) == base; }

Result<Cidr> ParseCidr(std::string_view text) {
  auto slash = text.find('/');
  GOVERN_ASSIGN_OR_RETURN(IpAddr a, ParseIp(text.substr(0, slash)));
  const int width = a.v4 ? 32 : 128;
  int bits = width;
  if (slash != std::string_view::npos) {
    std::string_view b = text.substr(slash + 1);
    if (b.empty() || b.size() > 3 ||
        !std::all_of(b.begin(), b.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return InvalidArgument("bad prefix length in '" + std::string(text) + "'");
    bits = std::stoi(std::string(b));
    if (bits > width) return InvalidArgument("prefix length past the address in '" + std::string(text) + "'");
  }
  return Cidr{Mask(a, bits, bits), bits};
}

Result<std::vector<Cidr>> ParseCidrList(const std::vector<std::string>& items) {
  std::vector<Cidr> out;
  for (const std::string& item : items) {
    auto c = ParseCidr(item);
    if (!c.ok()) return InvalidArgument("auth.trusted_proxies: '" + item + "': " + c.status().message());
    out.push_back(*c);
  }
  return out;
}

namespace {
bool Trusted(const IpAddr& a, const std::vector<Cidr>& trusted) {
  return std::any_of(trusted.begin(), trusted.end(), [&](const Cidr& c) { return c.Contains(a); });
}
}  // namespace

std::optional<IpAddr> ClientAddress(std::string_view peer_ip, std::optional<std::string_view> forwarded_for,
                                    const std::vector<Cidr>& trusted) {
  auto peer = ParseIp(peer_ip);
  if (!peer.ok()) return std::nullopt;
  IpAddr client = *peer;
  if (!forwarded_for || !Trusted(client, trusted)) return client;
  std::string_view rest = *forwarded_for;
  while (true) {
    auto comma = rest.rfind(',');
    std::string_view hop = TrimAscii(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
    auto a = ParseIp(hop);
    if (!a.ok()) return client;  // garbage where a client should be: stop at the last trusted hop
    client = *a;
    if (!Trusted(client, trusted) || comma == std::string_view::npos) return client;
    rest = rest.substr(0, comma);
  }
}

AddressLimiter::AddressLimiter(Options o) : o_(o) {
  o_.per_minute = std::max(o_.per_minute, 1e-6);
  o_.burst = std::max(o_.burst, 1.0);
  o_.capacity = std::max<size_t>(o_.capacity, 1);
}

double AddressLimiter::Refilled(const Entry& e, int64_t now_us) const {
  const double dt = static_cast<double>(std::max<int64_t>(now_us - e.at_us, 0)) / 60e6;
  return std::min(o_.burst, e.tokens + dt * o_.per_minute);
}

int64_t AddressLimiter::WaitFor(double tokens) const {
  if (tokens >= 1.0) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil((1.0 - tokens) * 60.0 / o_.per_minute)));
}

int64_t AddressLimiter::Check(std::string_view key, int64_t now_us) {
  std::lock_guard lk(mu_);
  auto it = table_.find(std::string(key));
  if (it == table_.end()) return 0;
  return WaitFor(Refilled(it->second, now_us));
}

int64_t AddressLimiter::Spend(std::string_view key, int64_t now_us) {
  std::lock_guard lk(mu_);
  std::string k(key);
  auto it = table_.find(k);
  if (it == table_.end()) {
    if (table_.size() >= o_.capacity) {
      table_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(k);
    it = table_.emplace(std::move(k), Entry{o_.burst, now_us, lru_.begin()}).first;
  } else {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  }
  Entry& e = it->second;
  e.tokens = std::max(Refilled(e, now_us) - 1.0, 0.0);  // refused attempts are not spent, so no debt
  e.at_us = now_us;
  return WaitFor(e.tokens);
}

int64_t AddressLimiter::Acquire(std::string_view key, int64_t now_us) {
  std::lock_guard lk(mu_);
  std::string k(key);
  auto it = table_.find(k);
  if (it != table_.end()) {
    if (int64_t wait = WaitFor(Refilled(it->second, now_us)); wait > 0) return wait;  // nothing taken
    lru_.splice(lru_.begin(), lru_, it->second.lru);
  } else {
    if (table_.size() >= o_.capacity) {
      table_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(k);
    it = table_.emplace(std::move(k), Entry{o_.burst, now_us, lru_.begin()}).first;
  }
  Entry& e = it->second;
  e.tokens = std::max(Refilled(e, now_us) - 1.0, 0.0);
  e.at_us = now_us;
  return 0;
}

void AddressLimiter::Refund(std::string_view key, int64_t now_us) {
  std::lock_guard lk(mu_);
  auto it = table_.find(std::string(key));
  if (it == table_.end()) return;  // evicted meanwhile: a new key starts full anyway
  Entry& e = it->second;
  e.tokens = std::min(o_.burst, Refilled(e, now_us) + 1.0);
  e.at_us = now_us;
  if (e.tokens >= o_.burst) {
    lru_.erase(e.lru);
    table_.erase(it);
  }
}

size_t AddressLimiter::size() const {
  std::lock_guard lk(mu_);
  return table_.size();
}

}  // namespace govern::auth_service
