// Helpers shared by the bundle tests: deterministic keys, a standard bundle, raw tar surgery.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "bundle/keys.h"
#include "bundle/tar.h"
#include "crypto/encoding.h"

namespace govern::bundle {
// Reasons by name in test failure messages.
inline void PrintTo(Reason r, std::ostream* os) { *os << ReasonName(r); }
}  // namespace govern::bundle

namespace govern::bundle::testing {

// A key from a seed of 32 copies of `n`; `key_id` empty means the default id.
inline SigningKey Key(uint8_t n, std::string key_id = "") {
  std::vector<uint8_t> seed(32, n);
  auto k = SigningKey::FromSeed(seed, std::move(key_id));
  EXPECT_TRUE(k.ok()) << k.status().ToString();
  return std::move(*k);
}

inline TrustStore Trust(std::initializer_list<const SigningKey*> keys) {
  TrustStore t;
  for (const SigningKey* k : keys) EXPECT_TRUE(t.Add(*k->Public()).ok());
  return t;
}

inline BuildInput Input(uint64_t version, bool gzip = true) {
  BuildInput in;
  in.kind = "policy";
  in.org = "acme";
  in.version = version;
  in.created = 1795833000;  // 2026-11-28T02:30:00Z
  in.files["policies.cedar"] = "permit(principal, action, resource);\n";
  in.files["entities.json"] = "[]\n";
  in.files["limits.json"] = "{\"calls_per_minute\": 60}\n";
  in.gzip = gzip;
  return in;
}

inline std::string MustBuild(const BuildInput& in, std::vector<const SigningKey*> keys) {
  auto r = Build(in, keys);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::string();
}

// One tar member (header and padded data) without the end marker, for building archives WriteTar
// refuses to write: duplicates, unsafe names, other entry types.
inline std::string RawMember(std::string_view name, std::string_view data, char type = '0') {
  auto tar = WriteTar({{"placeholder", std::string(data)}}, 0);
  EXPECT_TRUE(tar.ok());
  std::string m = tar->substr(0, tar->size() - 1024);
  std::memset(m.data(), 0, 100);
  std::memcpy(m.data(), name.data(), std::min<size_t>(name.size(), 100));
  m[156] = type;
  std::memset(m.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(m[i]);
  std::snprintf(m.data() + 148, 8, "%06o", sum);
  m[155] = ' ';
  return m;
}

inline std::string EndMarker() { return std::string(1024, '\0'); }

// Entries of a plain (not gzip'd) archive.
inline std::vector<TarEntry> Entries(const std::string& tar) {
  auto e = ReadTar(tar, {});
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : std::vector<TarEntry>{};
}

inline std::string Raw(const std::vector<TarEntry>& entries) {
  std::string out;
  for (const TarEntry& e : entries) out += RawMember(e.name, e.data);
  return out + EndMarker();
}

// signatures.json signing `manifest` with each key.
inline std::string SignaturesFor(std::string_view manifest, std::vector<const SigningKey*> keys) {
  std::string out = "{\"signatures\": [";
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string msg = std::string(kSignedPrefix) + std::string(manifest);
    auto sig = keys[i]->Sign(crypto::AsBytes(msg));
    EXPECT_TRUE(sig.ok());
    out += (i ? ", " : "") + std::string("{\"key_id\": \"") + keys[i]->key_id() +
           "\", \"algorithm\": \"ed25519\", \"signature\": \"" +
           crypto::Base64Encode(std::span<const uint8_t>(sig->data(), sig->size())) + "\"}";
  }
  return out + "]}";
}

}  // namespace govern::bundle::testing
