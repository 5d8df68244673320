// Building, verifying and inspecting signed bundles (format 1, docs/bundles.md).
#include "bundle/bundle.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "bundle/tar.h"
#include "crypto/encoding.h"

namespace govern::bundle {

// Makes and fills Bundles: only Verify() does, so holding a Bundle means holding a verified one.
struct BundleAccess {
  static std::shared_ptr<Bundle> Create() { return std::shared_ptr<Bundle>(new Bundle()); }
  static Manifest& manifest(Bundle& b) { return b.manifest_; }
  static std::string& manifest_bytes(Bundle& b) { return b.manifest_bytes_; }
  static crypto::Sha256Digest& digest(Bundle& b) { return b.digest_; }
  static std::vector<std::string>& signed_by(Bundle& b) { return b.signed_by_; }
  static std::map<std::string, std::string, std::less<>>& files(Bundle& b) { return b.files_; }
};

namespace {

using nlohmann::json;

// Details quote what the archive holds; control bytes become '?' and the length is bounded, so a
// refusal printed to a terminal or a log line cannot carry escape sequences or flood it.
Verdict Refuse(Reason r, std::string detail) {
  constexpr size_t kMaxDetail = 512;
  if (detail.size() > kMaxDetail) detail = detail.substr(0, kMaxDetail) + "...";
  for (char& c : detail) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  Verdict v;
  v.reason = r;
  v.detail = std::move(detail);
  return v;
}

// [a-z0-9._-], 1..64: kind and bundle name end up in file names and URLs.
Status ValidateToken(std::string_view what, std::string_view v) {
  if (v.empty() || v.size() > 64) return InvalidArgument(std::string(what) + " must be 1 to 64 characters");
  for (char c : v) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) {
      return InvalidArgument(std::string(what) + " \"" + std::string(v) +
                             "\" has characters other than [a-z0-9._-]");
    }
  }
  return OkStatus();
}

Status ValidateOrg(std::string_view org) {
  if (org.empty() || org.size() > 256) return InvalidArgument("org must be 1 to 256 bytes");
  for (char c : org) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return InvalidArgument("org has a control byte");
  }
  return OkStatus();
}

bool Reserved(std::string_view name) { return name == kManifestName || name == kSignaturesName; }

// Paths, duplicates and reserved names of a manifest's file list. Codes: kInvalidArgument for a path,
// kAlreadyExists for a duplicate.
Status CheckFileNames(const std::vector<FileEntry>& files) {
  std::set<std::string_view> seen;
  for (const FileEntry& f : files) {
    GOVERN_RETURN_IF_ERROR(ValidatePath(f.name));
    if (Reserved(f.name)) return InvalidArgument("\"" + f.name + "\" is a reserved name");
    if (!seen.insert(f.name).second) return AlreadyExists("\"" + f.name + "\" is listed twice");
  }
  return OkStatus();
}

Result<Manifest> ParseManifestFields(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("manifest.json is not valid JSON");
  if (!j.is_object()) return InvalidArgument("manifest.json is not a JSON object");
  auto field = [&](const char* name) -> const json* {
    auto it = j.find(name);
    return it == j.end() ? nullptr : &*it;
  };
  static const std::set<std::string> kKnown = {"format",  "kind",    "name", "org",
                                               "version", "created", "files"};
  const json* format = field("format");
  if (!format || !format->is_number_unsigned())
    return InvalidArgument("manifest: \"format\" must be a number");
  if (format->get<uint64_t>() != kFormatVersion) {
    return Unimplemented("manifest format " + std::to_string(format->get<uint64_t>()) +
                         " is not supported (this build reads format " + std::to_string(kFormatVersion) +
                         ")");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!kKnown.count(it.key())) return InvalidArgument("manifest: unknown field \"" + it.key() + "\"");
  }
  Manifest m;
  auto str = [&](const char* name, std::string* out) -> Status {
    const json* v = field(name);
    if (!v || !v->is_string())
      return InvalidArgument(std::string("manifest: \"") + name + "\" must be a string");
    *out = v->get<std::string>();
    return OkStatus();
  };
  GOVERN_RETURN_IF_ERROR(str("kind", &m.kind));
  GOVERN_RETURN_IF_ERROR(str("name", &m.name));
  GOVERN_RETURN_IF_ERROR(str("org", &m.org));
  GOVERN_RETURN_IF_ERROR(ValidateToken("manifest: kind", m.kind));
  GOVERN_RETURN_IF_ERROR(ValidateToken("manifest: name", m.name));
  GOVERN_RETURN_IF_ERROR(ValidateOrg(m.org).WithContext("manifest"));
  const json* version = field("version");
  if (!version || !version->is_number_unsigned()) {
    return InvalidArgument("manifest: \"version\" must be a non-negative integer");
  }
  m.version = version->get<uint64_t>();
  std::string created;
  GOVERN_RETURN_IF_ERROR(str("created", &created));
  auto t = ParseTime(created);
  if (!t.ok()) return t.status().WithContext("manifest: \"created\"");
  m.created = *t;
  const json* files = field("files");
  if (!files || !files->is_array()) return InvalidArgument("manifest: \"files\" must be an array");
  for (const json& f : *files) {
    if (!f.is_object() || f.size() != 3) {
      return InvalidArgument("manifest: each file must be an object of name, size and sha256");
    }
    auto n = f.find("name");
    auto s = f.find("size");
    auto h = f.find("sha256");
    if (n == f.end() || !n->is_string() || s == f.end() || !s->is_number_unsigned() || h == f.end() ||
        !h->is_string()) {
      return InvalidArgument("manifest: each file must be an object of name, size and sha256");
    }
    FileEntry e;
    e.name = n->get<std::string>();
    e.size = s->get<uint64_t>();
    const std::string& hex = h->get_ref<const std::string&>();
    auto digest = crypto::HexDecode(hex);
    if (!digest.ok() || digest->size() != 32 || hex != crypto::HexEncode(*digest)) {
      return InvalidArgument("manifest: sha256 of a file must be 64 lower-case hex digits");
    }
    std::copy(digest->begin(), digest->end(), e.sha256.begin());
    m.files.push_back(std::move(e));
  }
  return m;
}

Result<std::vector<SignatureEntry>> ParseSignatures(std::string_view text, size_t max_signatures) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || j.size() != 1 || !j.contains("signatures") ||
      !j["signatures"].is_array()) {
    return InvalidArgument("signatures.json must be {\"signatures\": [...]}");
  }
  const json& list = j["signatures"];
  if (list.size() > max_signatures) {
    return InvalidArgument("more than " + std::to_string(max_signatures) + " signatures");
  }
  std::vector<SignatureEntry> out;
  std::set<std::string> ids;
  for (const json& s : list) {
    if (!s.is_object() || s.size() != 3) {
      return InvalidArgument("each signature must be an object of key_id, algorithm and signature");
    }
    auto id = s.find("key_id");
    auto alg = s.find("algorithm");
    auto sig = s.find("signature");
    if (id == s.end() || !id->is_string() || alg == s.end() || !alg->is_string() || sig == s.end() ||
        !sig->is_string()) {
      return InvalidArgument("each signature must be an object of key_id, algorithm and signature");
    }
    SignatureEntry e;
    e.key_id = id->get<std::string>();
    e.algorithm = alg->get<std::string>();
    GOVERN_RETURN_IF_ERROR(ValidateKeyId(e.key_id));
    if (!ids.insert(e.key_id).second) return InvalidArgument("key id \"" + e.key_id + "\" signs twice");
    auto raw = crypto::Base64Decode(sig->get_ref<const std::string&>());
    if (!raw.ok()) return InvalidArgument("signature by \"" + e.key_id + "\" is not base64");
    e.signature = std::move(*raw);
    out.push_back(std::move(e));
  }
  return out;
}

std::string SignaturesJson(const std::vector<SignatureEntry>& sigs) {
  std::string out = "{\n  \"signatures\": [";
  for (size_t i = 0; i < sigs.size(); ++i) {
    out += i ? ",\n    " : "\n    ";
    out += "{\"key_id\": " + json(sigs[i].key_id).dump() +
           ", \"algorithm\": " + json(sigs[i].algorithm).dump() + ", \"signature\": \"" +
           crypto::Base64Encode(std::span<const uint8_t>(sigs[i].signature)) + "\"}";
  }
  out += sigs.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

// The archive unpacked, with manifest.json and signatures.json found; the refusals common to Verify
// and Inspect.
struct Unpacked {
  std::vector<TarEntry> entries;
  const TarEntry* manifest = nullptr;
  const TarEntry* signatures = nullptr;
};

Verdict FromTarStatus(const Status& s) {
  switch (s.code()) {
    case Code::kResourceExhausted:
      return Refuse(Reason::kTooLarge, s.message());
    case Code::kInvalidArgument:
      return Refuse(Reason::kUnsafePath, s.message());
    case Code::kAlreadyExists:
      return Refuse(Reason::kDuplicateFile, s.message());
    default:
      return Refuse(Reason::kMalformedArchive, s.message());
  }
}

Verdict Unpack(std::string_view archive, const Limits& limits, Unpacked* out) {
  if (archive.size() > limits.max_archive_bytes) {
    return Refuse(Reason::kTooLarge, "archive is " + std::to_string(archive.size()) +
                                         " bytes, over the limit of " +
                                         std::to_string(limits.max_archive_bytes));
  }
  std::string unzipped;
  std::string_view tar = archive;
  if (IsGzip(archive)) {
    auto r = Gunzip(archive, limits.max_unpacked_bytes);
    if (!r.ok()) return FromTarStatus(r.status());
    unzipped = std::move(*r);
    tar = unzipped;
  } else if (archive.size() > limits.max_unpacked_bytes) {
    return Refuse(Reason::kTooLarge, "archive over the unpacked limit");
  }
  TarLimits tl;
  tl.max_entries = limits.max_files + 2;
  tl.max_entry_bytes = std::max(limits.max_file_bytes, limits.max_manifest_bytes);
  tl.max_total_bytes = limits.max_unpacked_bytes;
  auto entries = ReadTar(tar, tl);
  if (!entries.ok()) return FromTarStatus(entries.status());
  out->entries = std::move(*entries);
  size_t content = 0;
  for (const TarEntry& e : out->entries) {
    if (e.name == kManifestName) {
      out->manifest = &e;
    } else if (e.name == kSignaturesName) {
      out->signatures = &e;
    } else {
      ++content;
      if (e.data.size() > limits.max_file_bytes) {
        return Refuse(Reason::kTooLarge, "\"" + e.name + "\" is over the file size limit of " +
                                             std::to_string(limits.max_file_bytes) + " bytes");
      }
    }
  }
  if (content > limits.max_files) {
    return Refuse(Reason::kTooLarge, "more than " + std::to_string(limits.max_files) + " files");
  }
  if (!out->manifest) return Refuse(Reason::kMissingManifest, "the archive has no manifest.json");
  if (!out->signatures) return Refuse(Reason::kMissingManifest, "the archive has no signatures.json");
  for (const TarEntry* e : {out->manifest, out->signatures}) {
    if (e->data.size() > limits.max_manifest_bytes) {
      return Refuse(Reason::kTooLarge, e->name + " is over the limit of " +
                                           std::to_string(limits.max_manifest_bytes) + " bytes");
    }
  }
  return {};
}

// Parses and checks a manifest, with the reason for each kind of problem.
Verdict ReadManifest(std::string_view text, Manifest* out) {
  auto m = ParseManifestFields(text);
  if (!m.ok()) {
    return Refuse(
        m.status().code() == Code::kUnimplemented ? Reason::kUnsupportedFormat : Reason::kMalformedManifest,
        m.status().message());
  }
  if (Status s = CheckFileNames(m->files); !s.ok()) {
    return Refuse(s.code() == Code::kAlreadyExists ? Reason::kDuplicateFile : Reason::kUnsafePath,
                  "manifest: " + s.message());
  }
  *out = std::move(*m);
  return {};
}

std::string SignedMessage(std::string_view manifest) {
  std::string m(kSignedPrefix);
  m += manifest;
  return m;
}

}  // namespace

std::string_view ReasonName(Reason r) {
  switch (r) {
    case Reason::kOk:
      return "ok";
    case Reason::kMalformedArchive:
      return "malformed_archive";
    case Reason::kTooLarge:
      return "too_large";
    case Reason::kUnsafePath:
      return "unsafe_path";
    case Reason::kDuplicateFile:
      return "duplicate_file";
    case Reason::kMissingManifest:
      return "missing_manifest";
    case Reason::kMalformedSignatures:
      return "malformed_signatures";
    case Reason::kNoSignature:
      return "no_signature";
    case Reason::kUntrustedKey:
      return "untrusted_key";
    case Reason::kBadSignature:
      return "bad_signature";
    case Reason::kMalformedManifest:
      return "malformed_manifest";
    case Reason::kUnsupportedFormat:
      return "unsupported_format";
    case Reason::kWrongBundle:
      return "wrong_bundle";
    case Reason::kFileMissing:
      return "file_missing";
    case Reason::kFileNotInManifest:
      return "file_not_in_manifest";
    case Reason::kFileSizeMismatch:
      return "file_size_mismatch";
    case Reason::kFileHashMismatch:
      return "file_hash_mismatch";
    case Reason::kVersionTooOld:
      return "version_too_old";
    case Reason::kVersionReplayed:
      return "version_replayed";
    case Reason::kRejected:
      return "rejected";
  }
  return "unknown";
}

std::string Verdict::ToString() const {
  if (ok()) return "ok";
  return std::string(ReasonName(reason)) + ": " + detail;
}

Status Verdict::status() const {
  Code code = Code::kInvalidArgument;
  switch (reason) {
    case Reason::kOk:
      return OkStatus();
    case Reason::kNoSignature:
    case Reason::kUntrustedKey:
    case Reason::kBadSignature:
      code = Code::kUnauthenticated;
      break;
    case Reason::kFileMissing:
    case Reason::kFileNotInManifest:
    case Reason::kFileSizeMismatch:
    case Reason::kFileHashMismatch:
      code = Code::kDataLoss;
      break;
    case Reason::kVersionTooOld:
    case Reason::kVersionReplayed:
      code = Code::kFailedPrecondition;
      break;
    case Reason::kTooLarge:
      code = Code::kResourceExhausted;
      break;
    default:
      break;
  }
  return Status(code, ToString());
}

Status TrustStore::Add(PublicKey key) {
  auto it = keys_.find(key.key_id());
  if (it != keys_.end()) {
    if (it->second->Raw() == key.Raw()) return OkStatus();
    return AlreadyExists("two different trusted keys have the key id \"" + key.key_id() + "\"");
  }
  std::string id = key.key_id();
  keys_.emplace(std::move(id), std::make_shared<const PublicKey>(std::move(key)));
  return OkStatus();
}

Status TrustStore::AddText(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(PublicKey key, PublicKey::Parse(text));
  return Add(std::move(key));
}

const PublicKey* TrustStore::Find(std::string_view key_id) const {
  auto it = keys_.find(key_id);
  return it == keys_.end() ? nullptr : it->second.get();
}

const std::string* Bundle::File(std::string_view name) const {
  auto it = files_.find(name);
  return it == files_.end() ? nullptr : &it->second;
}

Verdict Verify(std::string_view archive, const TrustStore& trust, const VerifyOptions& options) {
  Unpacked u;
  if (Verdict v = Unpack(archive, options.limits, &u); !v.ok()) return v;

  // Signatures come before the manifest is even parsed: nothing the signer did not sign is interpreted.
  auto sigs = ParseSignatures(u.signatures->data, options.limits.max_signatures);
  if (!sigs.ok()) return Refuse(Reason::kMalformedSignatures, sigs.status().message());
  if (sigs->empty()) return Refuse(Reason::kNoSignature, "signatures.json lists no signature");
  std::string message = SignedMessage(u.manifest->data);
  std::vector<std::string> signed_by;
  std::string seen_ids;
  for (const SignatureEntry& s : *sigs) {
    seen_ids += (seen_ids.empty() ? "" : ", ") + s.key_id;
    const PublicKey* key = trust.Find(s.key_id);
    if (!key) continue;  // another verifier's key, e.g. the next one during a rotation
    if (s.algorithm != "ed25519") {
      return Refuse(Reason::kBadSignature, "signature by trusted key \"" + s.key_id + "\" uses algorithm \"" +
                                               s.algorithm + "\", not ed25519");
    }
    if (!key->key().Verify(crypto::AsBytes(message), s.signature).ok()) {
      return Refuse(Reason::kBadSignature,
                    "the signature by trusted key \"" + s.key_id +
                        "\" does not verify manifest.json (changed manifest or wrong key)");
    }
    signed_by.push_back(s.key_id);
  }
  if (signed_by.empty()) {
    return Refuse(Reason::kUntrustedKey, "signed by " + seen_ids + "; none of these key ids is trusted");
  }

  auto manifest = std::make_unique<Manifest>();
  if (Verdict v = ReadManifest(u.manifest->data, manifest.get()); !v.ok()) return v;
  if (!options.expected_kind.empty() && manifest->kind != options.expected_kind) {
    return Refuse(Reason::kWrongBundle,
                  "a \"" + manifest->kind + "\" bundle, not \"" + options.expected_kind + "\"");
  }
  if (!options.expected_org.empty() && manifest->org != options.expected_org) {
    return Refuse(Reason::kWrongBundle, "a bundle for organisation \"" + manifest->org + "\", not \"" +
                                            options.expected_org + "\"");
  }
  if (!options.expected_name.empty() && manifest->name != options.expected_name) {
    return Refuse(Reason::kWrongBundle,
                  "bundle \"" + manifest->name + "\", not \"" + options.expected_name + "\"");
  }

  std::shared_ptr<Bundle> out = BundleAccess::Create();
  auto& files = BundleAccess::files(*out);
  for (TarEntry& e : u.entries) {
    if (!Reserved(e.name)) files.emplace(std::move(e.name), std::move(e.data));
  }
  for (const FileEntry& f : manifest->files) {
    auto it = files.find(f.name);
    if (it == files.end())
      return Refuse(Reason::kFileMissing, "\"" + f.name + "\" is listed but not in the archive");
    if (it->second.size() != f.size) {
      return Refuse(Reason::kFileSizeMismatch, "\"" + f.name + "\" is " + std::to_string(it->second.size()) +
                                                   " bytes, the manifest says " + std::to_string(f.size));
    }
    auto digest = crypto::Sha256(it->second);
    if (!digest.ok()) return Refuse(Reason::kMalformedArchive, digest.status().message());
    if (*digest != f.sha256) {
      return Refuse(Reason::kFileHashMismatch, "\"" + f.name + "\" has SHA-256 " +
                                                   crypto::HexEncode(*digest) + ", the manifest says " +
                                                   crypto::HexEncode(f.sha256));
    }
  }
  if (files.size() != manifest->files.size()) {
    std::set<std::string_view> listed;
    for (const FileEntry& f : manifest->files) listed.insert(f.name);
    for (const auto& [name, data] : files) {
      if (!listed.count(name))
        return Refuse(Reason::kFileNotInManifest, "\"" + name + "\" is not in the manifest");
    }
  }
  if (manifest->version < options.min_version) {
    return Refuse(Reason::kVersionTooOld, "version " + std::to_string(manifest->version) + " is older than " +
                                              std::to_string(options.min_version));
  }
  auto digest = crypto::Sha256(u.manifest->data);
  if (!digest.ok()) return Refuse(Reason::kMalformedArchive, digest.status().message());
  BundleAccess::digest(*out) = *digest;
  BundleAccess::manifest(*out) = std::move(*manifest);
  BundleAccess::manifest_bytes(*out) = std::move(u.manifest->data);
  BundleAccess::signed_by(*out) = std::move(signed_by);
  Verdict v;
  v.bundle = std::move(out);
  return v;
}

Verdict Inspect(std::string_view archive, Inspection* out, const Limits& limits) {
  Unpacked u;
  if (Verdict v = Unpack(archive, limits, &u); !v.ok()) return v;
  auto sigs = ParseSignatures(u.signatures->data, limits.max_signatures);
  if (!sigs.ok()) return Refuse(Reason::kMalformedSignatures, sigs.status().message());
  auto manifest = std::make_unique<Manifest>();
  if (Verdict v = ReadManifest(u.manifest->data, manifest.get()); !v.ok()) return v;
  out->manifest = std::move(*manifest);
  out->manifest_bytes = u.manifest->data;
  out->signatures = std::move(*sigs);
  out->archive_files.clear();
  for (const TarEntry& e : u.entries) {
    if (Reserved(e.name)) continue;
    FileEntry f;
    f.name = e.name;
    f.size = e.data.size();
    auto d = crypto::Sha256(e.data);
    if (d.ok()) f.sha256 = *d;
    out->archive_files.push_back(std::move(f));
  }
  return {};
}

Result<std::string> Build(const BuildInput& input, const std::vector<const SigningKey*>& keys) {
  GOVERN_RETURN_IF_ERROR(ValidateToken("kind", input.kind));
  GOVERN_RETURN_IF_ERROR(ValidateToken("name", input.name));
  GOVERN_RETURN_IF_ERROR(ValidateOrg(input.org));
  if (input.created < 0) return InvalidArgument("created must not be before 1970");
  if (keys.empty()) return InvalidArgument("a bundle needs at least one signing key");
  Manifest m;
  m.kind = input.kind;
  m.name = input.name;
  m.org = input.org;
  m.version = input.version;
  m.created = input.created;
  for (const auto& [name, data] : input.files) {
    FileEntry f;
    f.name = name;
    f.size = data.size();
    GOVERN_ASSIGN_OR_RETURN(f.sha256, crypto::Sha256(data));
    m.files.push_back(std::move(f));
  }
  GOVERN_RETURN_IF_ERROR(CheckFileNames(m.files));
  std::string manifest = ManifestJson(m);
  std::string message = SignedMessage(manifest);
  std::vector<SignatureEntry> sigs;
  std::set<std::string_view> ids;
  for (const SigningKey* k : keys) {
    if (!ids.insert(k->key_id()).second) return InvalidArgument("key id \"" + k->key_id() + "\" given twice");
    GOVERN_ASSIGN_OR_RETURN(auto sig, k->Sign(crypto::AsBytes(message)));
    sigs.push_back({k->key_id(), "ed25519", std::vector<uint8_t>(sig.begin(), sig.end())});
  }
  std::vector<TarEntry> entries;
  entries.push_back({std::string(kManifestName), std::move(manifest)});
  entries.push_back({std::string(kSignaturesName), SignaturesJson(sigs)});
  for (const auto& [name, data] : input.files) entries.push_back({name, data});
  GOVERN_ASSIGN_OR_RETURN(std::string tar, WriteTar(entries, input.created));
  if (!input.gzip) return tar;
  return Gzip(tar);
}

std::string ManifestJson(const Manifest& m) {
  std::string out = "{\n";
  out += "  \"format\": " + std::to_string(m.format) + ",\n";
  out += "  \"kind\": " + json(m.kind).dump() + ",\n";
  out += "  \"name\": " + json(m.name).dump() + ",\n";
  out += "  \"org\": " + json(m.org).dump() + ",\n";
  out += "  \"version\": " + std::to_string(m.version) + ",\n";
  out += "  \"created\": \"" + FormatTime(m.created) + "\",\n";
  out += "  \"files\": [";
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileEntry& f = m.files[i];
    out += i ? ",\n    " : "\n    ";
    out += "{\"name\": " + json(f.name).dump() + ", \"size\": " + std::to_string(f.size) +
           ", \"sha256\": \"" + crypto::HexEncode(f.sha256) + "\"}";
  }
  out += m.files.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Result<Manifest> ParseManifest(std::string_view text) {
  GOVERN_ASSIGN_OR_RETURN(Manifest m, ParseManifestFields(text));
  GOVERN_RETURN_IF_ERROR(CheckFileNames(m.files));
  return m;
}

namespace {
// Howard Hinnant's civil-date algorithms (public domain), days since 1970-01-01.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
}  // namespace

std::string FormatTime(int64_t seconds) {
  int64_t days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400;
  int64_t rem = seconds - days * 86400;
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<long long>(y), m, d,
                static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                static_cast<long long>(rem % 60));
  return buf;
}

Result<int64_t> ParseTime(std::string_view t) {
  auto bad = [&] { return InvalidArgument("expected an RFC 3339 UTC time like 2026-11-30T04:30:00Z"); };
  if (t.size() != 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' ||
      t[19] != 'Z') {
    return bad();
  }
  auto num = [&](size_t pos, size_t len, int64_t* out) {
    int64_t v = 0;
    for (size_t i = pos; i < pos + len; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int64_t y, mo, d, h, mi, s;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &s)) {
    return bad();
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 59) return bad();
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + s;
  if (FormatTime(secs) != t) return bad();  // e.g. February 30th
  return secs;
}

}  // namespace govern::bundle
