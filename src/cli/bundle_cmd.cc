// `govern policy keygen|sign|inspect|verify` over src/bundle.
#include "cli/bundle_cmd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "bundle/bundle.h"
#include "bundle/keys.h"
#include "bundle/tar.h"
#include "crypto/encoding.h"

namespace govern::cli {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kKind = "policy";

// Ends the command with an exit code (see bundle_cmd.h).
[[noreturn]] void Exit(int code) {
  if (code == 0) throw CLI::Success();
  throw CLI::RuntimeError(code);
}

[[noreturn]] void Fail(const std::string& what, int code = 1) {
  std::fprintf(stderr, "govern: %s\n", what.c_str());
  Exit(code);
}

// Reads a whole file, refusing one larger than `max_bytes` before reading it.
Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return NotFound(path + ": not a readable regular file");
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return ErrnoStatus(ec.value(), path);
  if (size > max_bytes) {
    return ResourceExhausted(path + ": " + std::to_string(size) + " bytes, over the limit of " +
                             std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, path);
  std::string data(static_cast<size_t>(size), '\0');
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (static_cast<size_t>(in.gcount()) != size) return DataLoss(path + ": short read");
  return data;
}

struct KeygenArgs {
  std::string out_private;
  std::string out_public;
  std::string key_id;
};

void Keygen(const KeygenArgs& a) {
  auto key = bundle::SigningKey::Generate(a.key_id);
  if (!key.ok()) Fail("policy keygen: " + key.status().message(), 2);
  auto pub = key->Public();
  auto priv = key->Text();
  if (!pub.ok() || !priv.ok()) Fail("policy keygen: cannot export the key");
  if (Status s = WriteNewFile(a.out_private, crypto::AsString(priv->span()), 0600); !s.ok()) {
    Fail("policy keygen: " + s.message());
  }
  if (Status s = WriteNewFile(a.out_public, pub->Text(), 0644); !s.ok()) {
    ::unlink(a.out_private.c_str());
    Fail("policy keygen: " + s.message());
  }
  std::printf(
      "key id %s\nprivate key: %s (keep it secret)\npublic key:  %s (give it to verifiers: --trust)\n",
      key->key_id().c_str(), a.out_private.c_str(), a.out_public.c_str());
  Exit(0);
}

struct SignArgs {
  std::string dir;
  std::vector<std::string> files;
  uint64_t version = 0;
  std::string org;
  std::string name = "default";
  std::vector<std::string> keys;
  std::string out;
  int64_t created = -1;
  bool no_gzip = false;
};

void Sign(const SignArgs& a) {
  bundle::Limits limits;
  if (a.dir.empty() == a.files.empty()) Fail("policy sign: give either --dir or --file NAME=PATH", 2);
  bundle::BuildInput in;
  in.kind = std::string(kKind);
  in.name = a.name;
  in.org = a.org;
  in.version = a.version;
  in.created = a.created >= 0 ? a.created : static_cast<int64_t>(std::time(nullptr));
  in.gzip = !a.no_gzip;
  auto add = [&](std::string name, const std::string& path) {
    if (Status s = bundle::ValidatePath(name); !s.ok()) Fail("policy sign: " + s.message(), 2);
    auto data = ReadFile(path, limits.max_file_bytes);
    if (!data.ok()) Fail("policy sign: " + data.status().message());
    if (!in.files.emplace(std::move(name), std::move(*data)).second)
      Fail("policy sign: a file name given twice", 2);
  };
  if (!a.dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(a.dir, ec)) Fail("policy sign: " + a.dir + " is not a directory", 2);
    // The archive being written may sit in the directory (a re-sign): it is not part of the bundle.
    std::error_code out_ec;
    fs::path out = fs::weakly_canonical(a.out, out_ec);
    for (auto it = fs::recursive_directory_iterator(a.dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory()) continue;
      std::error_code same_ec;
      if (fs::weakly_canonical(it->path(), same_ec) == out) continue;
      std::string rel = fs::relative(it->path(), a.dir).generic_string();
      if (!it->is_regular_file() || it->is_symlink()) {
        Fail("policy sign: " + rel + " is not a regular file (bundles hold regular files only)");
      }
      add(rel, it->path().string());
    }
    if (ec) Fail("policy sign: read " + a.dir + ": " + ec.message());
    if (in.files.empty()) Fail("policy sign: " + a.dir + " holds no files");
  }
  for (const std::string& f : a.files) {
    size_t eq = f.find('=');
    if (eq == std::string::npos || eq == 0) Fail("policy sign: --file " + f + ": expected NAME=PATH", 2);
    add(f.substr(0, eq), f.substr(eq + 1));
  }
  std::vector<bundle::SigningKey> keys;
  for (const std::string& path : a.keys) {
    auto text = ReadFile(path, 4096);
    if (!text.ok()) Fail("policy sign: " + text.status().message());
    auto key = bundle::SigningKey::Parse(*text);
    std::fill(text->begin(), text->end(), '\0');
    if (!key.ok()) Fail("policy sign: " + path + ": " + key.status().message());
    keys.push_back(std::move(*key));
  }
  std::vector<const bundle::SigningKey*> key_ptrs;
  std::string ids;
  for (const auto& k : keys) {
    key_ptrs.push_back(&k);
    ids += (ids.empty() ? "" : ", ") + k.key_id();
  }
  auto archive = bundle::Build(in, key_ptrs);
  if (!archive.ok()) Fail("policy sign: " + archive.status().message(), 2);
  if (archive->size() > limits.max_archive_bytes) {
    Fail("policy sign: the bundle is " + std::to_string(archive->size()) + " bytes, over the limit of " +
         std::to_string(limits.max_archive_bytes) + " that verifiers accept");
  }
  if (Status s = ReplaceFileDurably(a.out, *archive); !s.ok()) Fail("policy sign: " + s.message());
  std::printf("signed policy bundle %s/%s version %llu: %zu files, %zu bytes, key %s -> %s\n", in.org.c_str(),
              in.name.c_str(), static_cast<unsigned long long>(in.version), in.files.size(), archive->size(),
              ids.c_str(), a.out.c_str());
  Exit(0);
}

void Inspect(const std::string& path) {
  bundle::Limits limits;
  auto data = ReadFile(path, limits.max_archive_bytes);
  if (!data.ok()) Fail("policy inspect: " + data.status().message());
  bundle::Inspection in;
  bundle::Verdict v = bundle::Inspect(*data, &in, limits);
  if (!v.ok()) Fail("policy inspect: " + path + ": " + v.ToString());
  const bundle::Manifest& m = in.manifest;
  std::printf("bundle   %s/%s (kind %s)\nversion  %llu\ncreated  %s\nmanifest sha256 %s\n", m.org.c_str(),
              m.name.c_str(), m.kind.c_str(), static_cast<unsigned long long>(m.version),
              bundle::FormatTime(m.created).c_str(),
              crypto::HexEncode(crypto::Sha256(in.manifest_bytes).value_or({})).c_str());
  std::printf("files (as listed; the state column compares the archive, no trust involved):\n");
  std::map<std::string, const bundle::FileEntry*> actual;
  for (const auto& f : in.archive_files) actual[f.name] = &f;
  for (const auto& f : m.files) {
    auto it = actual.find(f.name);
    const char* state = it == actual.end()                                             ? "MISSING"
                        : it->second->size != f.size || it->second->sha256 != f.sha256 ? "CHANGED"
                                                                                       : "ok";
    std::printf("  %-8s %10llu  %s  %s\n", state, static_cast<unsigned long long>(f.size),
                crypto::HexEncode(f.sha256).c_str(), f.name.c_str());
    if (it != actual.end()) actual.erase(it);
  }
  for (const auto& [name, f] : actual) {
    std::printf("  %-8s %10llu  %s  %s\n", "EXTRA", static_cast<unsigned long long>(f->size),
                crypto::HexEncode(f->sha256).c_str(), name.c_str());
  }
  std::printf("signatures (not verified; use `govern policy verify --trust`):\n");
  for (const auto& s : in.signatures) {
    std::printf("  key id %s  %s  %zu bytes\n", s.key_id.c_str(), s.algorithm.c_str(), s.signature.size());
  }
  if (in.signatures.empty()) std::printf("  (none)\n");
  Exit(0);
}

struct VerifyArgs {
  std::string file;
  std::vector<std::string> trust;
  uint64_t min_version = 0;
  std::string org;
  std::string name;
};

void Verify(const VerifyArgs& a) {
  bundle::VerifyOptions o;
  o.min_version = a.min_version;
  o.expected_kind = std::string(kKind);
  o.expected_org = a.org;
  o.expected_name = a.name;
  bundle::TrustStore trust;
  for (const std::string& path : a.trust) {
    auto text = ReadFile(path, 4096);
    if (!text.ok()) Fail("policy verify: " + text.status().message(), 2);
    if (Status s = trust.AddText(*text); !s.ok()) Fail("policy verify: " + path + ": " + s.message(), 2);
  }
  auto data = ReadFile(a.file, o.limits.max_archive_bytes);
  if (!data.ok() && data.status().code() == Code::kResourceExhausted) {
    Fail("policy verify: refused: " + std::string(bundle::ReasonName(bundle::Reason::kTooLarge)) + ": " +
         data.status().message());
  }
  if (!data.ok()) Fail("policy verify: " + data.status().message());
  bundle::Verdict v = bundle::Verify(*data, trust, o);
  if (!v.ok()) Fail("policy verify: refused: " + v.ToString());
  const bundle::Bundle& b = *v.bundle;
  std::string ids;
  for (const auto& id : b.signed_by()) ids += (ids.empty() ? "" : ", ") + id;
  std::printf("ok: policy bundle %s/%s version %llu, %zu files, signed by %s\n", b.manifest().org.c_str(),
              b.manifest().name.c_str(), static_cast<unsigned long long>(b.version()), b.files().size(),
              ids.c_str());
  Exit(0);
}

}  // namespace

void AddPolicyBundleCommands(CLI::App& policy) {
  auto keygen_args = std::make_shared<KeygenArgs>();
  CLI::App* keygen = policy.add_subcommand("keygen", "Create an Ed25519 bundle signing key pair");
  keygen->add_option("--out-private", keygen_args->out_private, "Private key file to create (mode 0600)")
      ->required();
  keygen->add_option("--out-public", keygen_args->out_public, "Public key file to create")->required();
  keygen->add_option("--key-id", keygen_args->key_id,
                     "Key id (default: the first 16 hex digits of SHA-256 of the public key)");
  keygen->callback([keygen_args] { Keygen(*keygen_args); });

  auto sign_args = std::make_shared<SignArgs>();
  CLI::App* sign = policy.add_subcommand("sign", "Build and sign a policy bundle (.tar.gz)");
  auto* dir = sign->add_option("--dir", sign_args->dir, "Bundle every regular file under this directory");
  auto* file =
      sign->add_option("--file", sign_args->files, "NAME=PATH: add one file under NAME (repeatable)");
  dir->excludes(file);
  sign->add_option("--version", sign_args->version,
                   "Bundle version; agents refuse one not above what they run")
      ->required();
  sign->add_option("--org", sign_args->org, "Organisation")->required();
  sign->add_option("--name", sign_args->name, "Bundle name within the organisation")->capture_default_str();
  sign->add_option("--key", sign_args->keys, "Private key file (repeat to sign with several keys)")
      ->required();
  sign->add_option("--out", sign_args->out, "Archive to write")->required();
  sign->add_option("--created", sign_args->created, "Creation time, seconds since the epoch (default: now)");
  sign->add_flag("--no-gzip", sign_args->no_gzip, "Write a plain .tar");
  sign->callback([sign_args] { Sign(*sign_args); });

  auto inspect_file = std::make_shared<std::string>();
  CLI::App* inspect = policy.add_subcommand(
      "inspect",
      "Print a bundle's manifest, files, signatures and key ids (no trust needed, nothing verified)");
  inspect->add_option("file", *inspect_file, "Bundle archive")->required();
  inspect->callback([inspect_file] { Inspect(*inspect_file); });

  auto verify_args = std::make_shared<VerifyArgs>();
  CLI::App* verify = policy.add_subcommand("verify", "Verify a bundle; exit 1 with the reason when refused");
  verify->add_option("file", verify_args->file, "Bundle archive")->required();
  verify->add_option("--trust", verify_args->trust, "Trusted public key file (repeatable)")->required();
  verify->add_option("--min-version", verify_args->min_version, "Refuse versions below this");
  verify->add_option("--org", verify_args->org, "Refuse bundles for another organisation");
  verify->add_option("--name", verify_args->name, "Refuse bundles with another name");
  verify->callback([verify_args] { Verify(*verify_args); });
}

}  // namespace govern::cli
