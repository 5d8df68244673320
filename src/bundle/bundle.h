// Signed bundles: a set of named files with a manifest (each file's size and SHA-256, a monotonically
// increasing version) signed with Ed25519, carried as one .tar.gz. docs/bundles.md is the format.
//
// Build() makes an archive; Verify() checks one against a TrustStore and returns either an immutable
// Bundle or the Reason it was refused (a distinct code per kind of problem, for the caller to report);
// Inspect() reads one without trusting it, for `govern policy inspect`. Every input is bounded by
// Limits. All functions are pure; a TrustStore is immutable once built and a Bundle is immutable, so
// both may be shared between threads freely.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bundle/keys.h"
#include "crypto/sha256.h"

namespace govern::bundle {

inline constexpr std::string_view kManifestName = "manifest.json";
inline constexpr std::string_view kSignaturesName = "signatures.json";
inline constexpr int kFormatVersion = 1;

// Why a bundle was refused. The names (ReasonName) are stable: logs, CLI output and status endpoints
// carry them.
enum class Reason {
  kOk = 0,
  kMalformedArchive,     // "malformed_archive": truncated, bad tar/gzip, a non-regular entry
  kTooLarge,             // "too_large": archive, unpacked size, file count or one file over Limits
  kUnsafePath,           // "unsafe_path": absolute, "..", ".", empty component, control bytes
  kDuplicateFile,        // "duplicate_file": the same name twice in the archive or the manifest
  kMissingManifest,      // "missing_manifest": no manifest.json or no signatures.json
  kMalformedSignatures,  // "malformed_signatures": signatures.json is not the documented form
  kNoSignature,          // "no_signature": signatures.json lists no signature
  kUntrustedKey,         // "untrusted_key": no signature is by a key in the trust store
  kBadSignature,         // "bad_signature": a trusted key's signature does not verify the manifest
  kMalformedManifest,    // "malformed_manifest": signed, but not a valid format-1 manifest
  kUnsupportedFormat,    // "unsupported_format": a manifest "format" this build does not know
  kWrongBundle,          // "wrong_bundle": for another consumer (kind), organisation or bundle name
  kFileMissing,          // "file_missing": listed in the manifest, absent from the archive
  kFileNotInManifest,    // "file_not_in_manifest": in the archive, not listed in the manifest
  kFileSizeMismatch,     // "file_size_mismatch"
  kFileHashMismatch,     // "file_hash_mismatch"
  kVersionTooOld,        // "version_too_old": older than the minimum (the loaded version)
  kVersionReplayed,      // "version_replayed": the loaded version number with different content
  kRejected,             // "rejected": verified, but the consumer could not use it (e.g. a policy error)
};

std::string_view ReasonName(Reason r);

struct Limits {
  size_t max_archive_bytes = size_t{32} << 20;    // the archive as received (gzip'd or not)
  size_t max_unpacked_bytes = size_t{128} << 20;  // the tar after gunzip
  size_t max_files = 1024;                        // content files, besides manifest and signatures
  size_t max_file_bytes = size_t{64} << 20;       // one content file
  size_t max_manifest_bytes = size_t{1} << 20;    // manifest.json and signatures.json each
  size_t max_signatures = 16;
};

struct FileEntry {
  std::string name;
  uint64_t size = 0;
  crypto::Sha256Digest sha256{};
};

struct Manifest {
  int format = kFormatVersion;
  std::string kind;  // the consumer: "policy", "gateway", ...
  std::string name;  // the bundle's name within the organisation, e.g. "default"
  std::string org;
  uint64_t version = 0;
  int64_t created = 0;           // seconds since the epoch, UTC (RFC 3339 in the JSON)
  std::vector<FileEntry> files;  // sorted by name
};

struct SignatureEntry {
  std::string key_id;
  std::string algorithm;  // "ed25519"
  std::vector<uint8_t> signature;
};

// The Ed25519 signature covers kSignedPrefix followed by the exact bytes of manifest.json, so a bundle
// key's signature can never be replayed as anything else.
inline constexpr std::string_view kSignedPrefix = "govern-bundle-manifest-v1\n";

// The keys a verifier trusts, by key id; several at once so that keys can rotate.
class TrustStore {
 public:
  // Refuses a second, different key under an id already present (the same key again is a no-op).
  Status Add(PublicKey key);
  // Parses a public key file and adds it.
  Status AddText(std::string_view text);
  const PublicKey* Find(std::string_view key_id) const;
  size_t size() const { return keys_.size(); }

 private:
  std::map<std::string, std::shared_ptr<const PublicKey>, std::less<>> keys_;
};

// A verified bundle. Immutable.
class Bundle {
 public:
  const Manifest& manifest() const { return manifest_; }
  uint64_t version() const { return manifest_.version; }
  // The exact signed manifest bytes and their SHA-256, which identifies the content (an ETag).
  const std::string& manifest_bytes() const { return manifest_bytes_; }
  const crypto::Sha256Digest& digest() const { return digest_; }
  // The key ids whose signatures verified (trusted keys only).
  const std::vector<std::string>& signed_by() const { return signed_by_; }
  // A content file's bytes, or nullptr when the bundle has no such file.
  const std::string* File(std::string_view name) const;
  const std::map<std::string, std::string, std::less<>>& files() const { return files_; }

 private:
  friend struct BundleAccess;  // only Verify() makes one
  Bundle() = default;
  Manifest manifest_;
  std::string manifest_bytes_;
  crypto::Sha256Digest digest_{};
  std::vector<std::string> signed_by_;
  std::map<std::string, std::string, std::less<>> files_;
};

// A Bundle, or the reason it was refused.
struct Verdict {
  Reason reason = Reason::kOk;
  std::string detail;                    // human-readable, names the file, key or byte offset
  std::shared_ptr<const Bundle> bundle;  // non-null exactly when ok()

  bool ok() const { return reason == Reason::kOk; }
  // "bad_signature: <detail>", or "ok".
  std::string ToString() const;
  // ok, or a Status whose code fits the reason (kUnauthenticated for key and signature problems,
  // kDataLoss for content that does not match, kFailedPrecondition for versions, kResourceExhausted
  // for size limits, kInvalidArgument otherwise) and whose message is ToString().
  Status status() const;
};

struct VerifyOptions {
  Limits limits;
  // A version below this is kVersionTooOld (equal is accepted: BundleSlot decides about equal versions).
  uint64_t min_version = 0;
  // When non-empty, a bundle of another kind, organisation or name is kWrongBundle (versions count per
  // org/kind/name, so a verifier must not take another bundle's higher version for its own).
  std::string expected_kind;
  std::string expected_org;
  std::string expected_name;
};

// Verification order (each step runs only when the previous passed; docs/bundles.md says why):
// archive size, gunzip (bounded), tar structure and paths, manifest.json and signatures.json present,
// signatures (at least one by a trusted key and none by a trusted key that fails), then the manifest is
// parsed, kind/org, every file's presence, size and SHA-256, and last the version.
Verdict Verify(std::string_view archive, const TrustStore& trust, const VerifyOptions& options = {});

// The content of one bundle to build.
struct BuildInput {
  std::string kind;
  std::string name = "default";
  std::string org;
  uint64_t version = 0;
  int64_t created = 0;                       // seconds since the epoch; passed in, so builds are reproducible
  std::map<std::string, std::string> files;  // name -> content
  bool gzip = true;
};

// A signed archive, one signature per key (in the given order). Refuses unsafe or reserved file names,
// an empty kind, org or name, no keys, and duplicate key ids.
Result<std::string> Build(const BuildInput& input, const std::vector<const SigningKey*>& keys);

// What Inspect() reads without trusting it.
struct Inspection {
  Manifest manifest;  // as the archive claims it (unverified)
  std::string manifest_bytes;
  std::vector<SignatureEntry> signatures;
  // Every content file in the archive with its actual size and SHA-256.
  std::vector<FileEntry> archive_files;
};

// Reads an archive's manifest, signatures and files without checking signatures or hashes. The same
// structural refusals as Verify (as a Verdict whose bundle is null); ok when it could read everything.
Verdict Inspect(std::string_view archive, Inspection* out, const Limits& limits = {});

// Manifest JSON, as Build writes it (exposed for tests and tools).
std::string ManifestJson(const Manifest& m);
// Strict parse of manifest JSON: kInvalidArgument naming the field; kUnimplemented for an unknown format.
Result<Manifest> ParseManifest(std::string_view json);
// RFC 3339 UTC "2026-11-30T04:30:00Z" and back (only that form).
std::string FormatTime(int64_t seconds);
Result<int64_t> ParseTime(std::string_view text);

}  // namespace govern::bundle
