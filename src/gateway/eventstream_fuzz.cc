// Fuzz target: AWS event-stream frames and Bedrock ConverseStream answers (outside input from a
// provider). The first byte splits the input. The decoder must give the same messages fed whole or in
// two pieces, and re-encoding what it decoded must give back exactly the bytes it consumed; the stream
// adapter must give the same output either way; the whole input is also read as a Converse answer and
// as an InvokeModel embeddings answer.
// Nothing may crash or throw.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/bedrock.h"
#include "gateway/eventstream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace govern::gateway;
  if (size == 0) return 0;
  std::string_view all(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t split = data[0] % size;
  split = split > all.size() ? all.size() : split;

  // An InvokeModel embeddings answer (Titan, Cohere), `split` texts sent.
  for (auto m : {bedrock::EmbeddingModel::kTitanV2, bedrock::EmbeddingModel::kCohere}) {
    openai::EmbeddingsResponse out;
    (void)bedrock::AppendEmbeddings(all, m, split, out);
  }

  eventstream::Decoder whole, pieces;
  std::vector<eventstream::Message> a, b;
  bool ok_a = whole.Feed(all, a).ok();
  bool ok_b = pieces.Feed(all.substr(0, split), b).ok();
  ok_b = ok_b && pieces.Feed(all.substr(split), b).ok();
  if (ok_a != ok_b || a.size() != b.size()) std::abort();
  std::string again;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].payload != b[i].payload || a[i].headers.size() != b[i].headers.size()) std::abort();
    auto bytes = eventstream::Encode(a[i]);
    if (!bytes.ok()) std::abort();
    again += *bytes;
  }
  if (ok_a && again != all.substr(0, all.size() - whole.buffered())) std::abort();

  (void)bedrock::ToChatResponse(all, "m", 0);
  bedrock::StreamToChat s1("m", 0), s2("m", 0);
  std::string o1, o2;
  bool f1 = s1.Feed(all, o1).ok();
  bool f2 = s2.Feed(all.substr(0, split), o2).ok() && s2.Feed(all.substr(split), o2).ok();
  if (f1 && f2) {
    s1.Finish(o1);
    s2.Finish(o2);
    if (o1 != o2) std::abort();
  }
  return 0;
}
