// Fuzz target for the checkpoint and signed-note parsers: no input may crash them; a body that parses
// re-encodes to exactly the input, a verifier key re-formats to exactly the input, and a note opens
// only with a signature from the fixed test key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "audit/checkpoint.h"

namespace {

const std::vector<govern::audit::VerifierKey>& Keys() {
  static const auto* keys = [] {
    auto* k = new std::vector<govern::audit::VerifierKey>();
    // The golang.org/x/mod/sumdb/note test key, so seeds can carry its real signatures.
    k->push_back(
        govern::audit::ParseVerifierKey("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
            .value());
    return k;
  }();
  return *keys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::audit;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  if (auto c = ParseCheckpointBody(in); c.ok()) {
    auto body = CheckpointBody(*c);
    if (!body.ok() || *body != in) std::abort();
  }
  if (auto k = ParseVerifierKey(in); k.ok()) {
    auto again = FormatVerifierKey(k->name, k->key);
    if (!again.ok() || *again != in) std::abort();
  }
  if (auto text = OpenNote(in, Keys()); text.ok()) {
    if (in.substr(0, text->size()) != *text) std::abort();
  }
  (void)OpenCheckpoint(in, Keys());
  return 0;
}
