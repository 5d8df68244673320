// Realistic text for the DLP benchmark: log lines, chat prompts and ~550-byte telemetry events.
//
// The generator is deterministic (seeded splitmix64). Lines repeat services, actions and templates and
// vary ids, numbers and words, like production logs and agent prompts. A configurable share of lines
// (default 3%) carries one sensitive value: an e-mail address, a Luhn-valid card, a phone number, an
// IBAN, a US SSN, an IP address, an AWS key id, a JWT, a GitHub token or a password assignment. Clean
// lines still contain the look-alikes detectors must reject: timestamps, versions, order numbers,
// durations and hex ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace govern::bench::dlp {

class TextGenerator {
 public:
  TextGenerator(uint64_t seed, double sensitive_share) : state_(seed), share_(sensitive_share) {}

  // One log line or chat prompt (60-400 bytes), no trailing newline.
  std::string Line();
  // One telemetry event as JSON, about 550 bytes.
  std::string Event();

 private:
  uint64_t Next();
  size_t Pick(size_t n) { return static_cast<size_t>(Next() % n); }
  bool Sensitive() { return static_cast<double>(Next() % 1000000) < share_ * 1e6; }
  std::string Word();
  std::string Sentence(size_t words);
  std::string Timestamp();
  std::string HexId(size_t n);
  std::string SensitiveValue();
  std::string OrderNumber();

  uint64_t state_;
  double share_;
};

}  // namespace govern::bench::dlp
