// TSIG (RFC 8945): HMAC-SHA256 / HMAC-SHA512 transaction signatures for zone transfers, NOTIFY and
// the SOA queries of secondaries.
//
// FindTsig locates the TSIG record at the end of a message; VerifyMessage checks it against a keyring
// (the checks of RFC 8945 section 5.2 in order: key and algorithm -> BADKEY, MAC -> BADSIG/BADTRUNC,
// time -> BADTIME); TsigSigner signs a stream of messages: the first with the request MAC (if any) and
// every TSIG variable, each later one with the previous MAC and the timers only (section 5.3.1), so a
// multi-message AXFR carries a running MAC. The same signer, given the MAC of a request we sent,
// verifies the stream of answers to it. Keys and keyrings are immutable values: safe to share between
// threads; a TsigSigner belongs to one transfer (one thread).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace govern::dns {

inline constexpr uint16_t kTSIG = 250;
inline constexpr uint16_t kClassANY = 255;
inline constexpr uint8_t kNotAuth = 9;  // the RCODE of every TSIG error response
enum TsigError : uint16_t { kTsigNoError = 0, kBadSig = 16, kBadKey = 17, kBadTime = 18, kBadTrunc = 22 };
inline constexpr uint16_t kDefaultFudge = 300;

enum class TsigAlgorithm : uint8_t { kHmacSha256, kHmacSha512 };

struct TsigKey {
  std::string name;  // lower-case wire form
  TsigAlgorithm algorithm = TsigAlgorithm::kHmacSha256;
  std::string secret;  // raw bytes

  // "name:hmac-sha256:BASE64" or "hmac-sha512:name:BASE64" or "name:BASE64" (hmac-sha256), the forms
  // of kdig/dig -y. Errors say which part is wrong.
  static Result<TsigKey> FromText(std::string_view text);
  std::string algorithm_name() const;  // wire form: "hmac-sha256."
  size_t mac_size() const { return algorithm == TsigAlgorithm::kHmacSha256 ? 32 : 64; }
};

class TsigKeyring {
 public:
  TsigKeyring() = default;
  explicit TsigKeyring(std::vector<TsigKey> keys) : keys_(std::move(keys)) {}
  const TsigKey* Find(std::string_view lower_name) const;
  bool empty() const { return keys_.empty(); }
  const std::vector<TsigKey>& keys() const { return keys_; }

 private:
  std::vector<TsigKey> keys_;
};

// The TSIG record of a message, as read.
struct TsigRecord {
  size_t offset = 0;      // where the TSIG RR starts: the message without it is [0, offset)
  std::string key_name;   // lower-case wire
  std::string algorithm;  // lower-case wire
  uint64_t time_signed = 0;
  uint16_t fudge = 0;
  std::string mac;
  uint16_t original_id = 0;
  uint16_t error = 0;
  std::string other;
};

// nullopt when the message has no TSIG; an error (answer FORMERR) when a TSIG is malformed or is not
// the last record of the message, or the message itself cannot be walked.
Result<std::optional<TsigRecord>> FindTsig(std::span<const uint8_t> message);

struct TsigCheck {
  uint16_t error = kTsigNoError;  // BADKEY, BADSIG, BADTRUNC or BADTIME (0 when good)
  const TsigKey* key = nullptr;   // set unless BADKEY
};
// Verifies a request's TSIG (RFC 8945 section 5.2). `now` in seconds since the epoch.
TsigCheck VerifyRequest(std::span<const uint8_t> message, const TsigRecord& tsig, const TsigKeyring& keys,
                        uint64_t now);

// Signs (or verifies) the messages of one exchange.
class TsigSigner {
 public:
  // `request_mac`: the MAC of the request being answered (empty for a request we originate).
  TsigSigner(const TsigKey& key, std::string request_mac) : key_(key), prior_mac_(std::move(request_mac)) {}
  // Appends a TSIG record to `message` (a complete DNS message) and bumps ARCOUNT. The first call
  // signs all TSIG variables; later calls sign the previous MAC, the message and the timers only.
  // `error`/`other` are for BADTIME answers.
  void Sign(std::vector<uint8_t>& message, uint64_t now, uint16_t error = 0, std::string_view other = {});
  // Verifies a message of the answer stream to a request signed by this signer (call Sign on the
  // request first; its MAC becomes the prior MAC). Messages without a TSIG are accepted only between
  // signed ones (at most 99 in a row, RFC 8945 section 5.3.1); the first must be signed.
  Status Verify(std::span<const uint8_t> message, uint64_t now);
  const std::string& last_mac() const { return prior_mac_; }

 private:
  TsigKey key_;
  std::string prior_mac_;
  bool sign_first_ = true;
  bool verify_first_ = true;
  std::string unsigned_run_;  // messages since the last signed one (for Verify)
  int unsigned_count_ = 0;
};

// An unsigned TSIG error answer (BADKEY, BADSIG, BADTRUNC: RFC 8945 section 5.3.2): appends a TSIG
// with no MAC and the error to `message`, whose RCODE the caller has set to NOTAUTH.
void AppendUnsignedTsigError(std::vector<uint8_t>& message, const TsigRecord& request, uint16_t error,
                             uint64_t now);

// The MAC over raw data with the key's algorithm.
std::string TsigMac(const TsigKey& key, std::string_view data);

}  // namespace govern::dns
