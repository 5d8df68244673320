// Fuzz target for the bundle reader: gunzip, tar, signatures.json and manifest.json parsing and the
// verification steps. No input may crash, leak or hang it; whatever Verify accepts must be signed by the
// fixed test key, and whatever Inspect reads must describe the archive consistently.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bundle/bundle.h"
#include "bundle/keys.h"

namespace {

using namespace govern::bundle;

// The seeds in fuzz/corpus/bundle_reader_fuzz/ are signed with this key (seed bytes 0x01..0x20, key id
// "fuzz"), so mutations reach past the signature check when they leave the manifest alone.
const TrustStore& Trust() {
  static const TrustStore* trust = [] {
    uint8_t seed[32];
    for (int i = 0; i < 32; ++i) seed[i] = static_cast<uint8_t>(i + 1);
    auto key = SigningKey::FromSeed(seed, "fuzz");
    auto* t = new TrustStore;
    if (!key.ok() || !t->Add(*key->Public()).ok()) std::abort();
    return t;
  }();
  return *trust;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Limits limits;
  limits.max_archive_bytes = 1 << 20;
  limits.max_unpacked_bytes = 4 << 20;
  limits.max_files = 64;
  limits.max_file_bytes = 1 << 20;
  VerifyOptions options;
  options.limits = limits;
  Verdict v = Verify(in, Trust(), options);
  if (v.ok()) {
    if (!v.bundle || v.bundle->signed_by().empty()) std::abort();
    if (v.bundle->files().size() != v.bundle->manifest().files.size()) std::abort();
  } else if (v.bundle || v.detail.empty()) {
    std::abort();
  }
  Inspection inspection;
  Verdict i = Inspect(in, &inspection, limits);
  // Whatever verifies can be inspected.
  if (v.ok() && !i.ok()) std::abort();
  if (i.ok() && inspection.archive_files.size() > limits.max_files) std::abort();
  return 0;
}
