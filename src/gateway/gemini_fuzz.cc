// Fuzz target: Gemini answers and streams (outside input from a provider). The first byte splits the
// input; the stream adapter must give the same bytes fed whole or in two pieces, and nothing may crash
// or throw. The whole input is also read as a generateContent answer and as an embeddings answer.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/gemini.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::gateway;
  if (size == 0) return 0;
  std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t split = data[0] % size;
  split = split > all.size() ? all.size() : split;
  (void)gemini::ToChatResponse(all, "m", 0);
  if (auto e = gemini::ToEmbeddingsResponse(all, "m", split); e.ok() && e->data.size() != split) std::abort();
  gemini::StreamToChat whole("m", 0), pieces("m", 0);
  std::string a, b;
  bool ok_a = whole.Feed(all, a).ok();
  bool ok_b = pieces.Feed(all.substr(0, split), b).ok() && pieces.Feed(all.substr(split), b).ok();
  if (ok_a && ok_b) {
    whole.Finish(a);
    pieces.Finish(b);
    if (a != b) std::abort();
  }
  return 0;
}
