// Fuzz target: the DLP stream screener and the SSE filter over any bytes.
// Byte 0 picks the mode (bit 0: block, else mask), the format (bit 1: Anthropic) and the piece length
// ((byte >> 2) + 1). The rest is (1) pushed as text in pieces: in block mode what is released must be a
// prefix of the input, and nothing is released after the block; the held text stays bounded; and
// (2) parsed as an SSE stream whose events go through DlpStreamFilter and ResponsesDlpFilter (any event
// data, valid or not); every event the latter relays is a JSON object or relayed as it came.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/dlp_responses.h"
#include "gateway/dlp_screen.h"
#include "gateway/sse.h"

namespace {

using namespace govern::gateway;

std::shared_ptr<const DlpProfile> Make(const char* mode) {
  auto c = ParseDlpConfig(
      nlohmann::json::parse(std::string(R"({"default":{"mode":")") + mode + R"(","max_held_bytes":4096}})"));
  if (!c.ok()) std::abort();
  return (*c)->default_profile;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto mask = Make("mask");
  static const auto block = Make("block");
  if (size == 0) return 0;
  const bool is_block = data[0] & 1;
  const bool anthropic = data[0] & 2;
  const size_t piece = (data[0] >> 2) + 1;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const DlpProfile& p = is_block ? *block : *mask;

  StreamScreener s(p);
  std::string out;
  bool ok = true;
  for (size_t i = 0; i < text.size() && ok; i += piece) {
    ok = s.Push(text.substr(i, piece), &out);
    if (ok && s.held() > p.stream.max_held + piece) std::abort();
  }
  if (ok) ok = s.Finish(&out);
  if (is_block) {
    if (out.size() > text.size() || text.substr(0, out.size()) != out) std::abort();
    if (ok != s.report().rules.empty()) std::abort();
  }
  if (!ok) {
    std::string more;
    if (s.Push("x", &more) || !more.empty()) std::abort();
  }

  SseParser parser(1 << 16);
  std::vector<SseEvent> events;
  if (!parser.Feed(text, events).ok()) return 0;
  DlpStreamFilter f(p, anthropic);
  std::vector<SseEvent> relayed;
  for (const auto& e : events) {
    if (!f.Feed(e, &relayed)) break;
  }
  (void)f.Finish(&relayed);
  (void)f.report();

  ResponsesDlpFilter r(p);
  relayed.clear();
  for (const auto& e : events) {
    if (!r.Feed(e, &relayed)) break;
  }
  (void)r.Finish(&relayed);
  if (r.blocked() && r.Feed(SseEvent{}, &relayed)) std::abort();  // nothing passes once blocked
  (void)r.report();
  return 0;
}
