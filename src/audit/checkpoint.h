// Signed checkpoints: a C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint) in a C2SP signed note
// (https://c2sp.org/signed-note) with an Ed25519 signature, carrying an organisation's Merkle root and
// tree size plus, in two extension lines, its hash-chain head and the time it was signed:
//
//   govern.audit/acme\n
//   1234\n
//   <base64 Merkle root>\n
//   chain <64 lower-case hex digits: entry_hash of entry 1234>\n
//   time 2026-11-30T07:25:47.123456Z\n
//   \n
//   — <key name> <base64(4-byte key id || 64-byte signature)>\n
//
// The signature is over the note text: everything up to and including the newline before the blank
// line. docs/audit-format.md has the byte-exact form and how to check one with other tools.
//
// Pure functions: thread-safe (the keys are immutable). OpenCheckpoint parses outside input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "audit/entry.h"
#include "base/status.h"
#include "crypto/signature.h"

namespace govern::audit {

struct Checkpoint {
  std::string origin;   // e.g. "govern.audit/<org>"; see CheckpointOrigin
  uint64_t size = 0;    // entries covered: seq 1..size
  Hash root{};          // MTH of the first `size` leaves
  Hash chain_head{};    // entry_hash of entry `size` (kGenesisHash when size is 0)
  int64_t time_us = 0;  // when it was signed, Unix µs UTC

  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

// The origin Govern uses for an organisation's log: "govern.audit/" + org.
std::string CheckpointOrigin(std::string_view org);

// A key that may sign checkpoints, as verifiers hold it.
struct VerifierKey {
  std::string name;             // the signed-note key name (no whitespace, no '+')
  std::array<uint8_t, 4> id{};  // first 4 bytes of SHA-256(name || 0x0A || 0x01 || public key)
  crypto::Ed25519PublicKey key;
};

// The signed-note key id of an Ed25519 key.
std::array<uint8_t, 4> KeyId(std::string_view name, const crypto::Ed25519PublicKey& key);
// The signed-note verifier key text "<name>+<8 hex key id>+<base64(0x01 || public key)>", for
// publishing the public key (golang.org/x/mod/sumdb/note reads the same form).
// kInvalidArgument for a bad name (empty, whitespace, '+', non-UTF-8 or control characters).
Result<std::string> FormatVerifierKey(std::string_view name, const crypto::Ed25519PublicKey& key);
// Parses that text (strict; checks the id against the key): kInvalidArgument otherwise.
Result<VerifierKey> ParseVerifierKey(std::string_view vkey);
// The verifier key of a private key, for the signer's own checks.
Result<VerifierKey> VerifierKeyFor(std::string_view name, const crypto::Ed25519PrivateKey& key);

// ---- Signed notes (c2sp.org/signed-note), any text --------------------------------------------------

// Longest note OpenNote accepts, and most signature lines (signed-note asks for at least 16).
inline constexpr size_t kMaxNoteBytes = 64 * 1024;
inline constexpr size_t kMaxNoteSignatures = 64;

// `text` (non-empty, ending in a newline, UTF-8 without control characters but newline) followed by a
// blank line and one Ed25519 signature line by `key_name`.
Result<std::string> SignNote(std::string_view text, std::string_view key_name,
                             const crypto::Ed25519PrivateKey& key);
// Verifies a signed note against `keys` (the rules of OpenCheckpoint below) and returns its text.
Result<std::string> OpenNote(std::string_view note, const std::vector<VerifierKey>& keys);

// ---- Checkpoints ------------------------------------------------------------------------------------

// The note text (unsigned body) of a checkpoint. kInvalidArgument for an origin that is empty, has a
// newline or control characters, or a time out of range.
Result<std::string> CheckpointBody(const Checkpoint& checkpoint);

// The signed note: body, blank line, one signature line.
Result<std::string> SignCheckpoint(const Checkpoint& checkpoint, std::string_view key_name,
                                   const crypto::Ed25519PrivateKey& key);

// Verifies and parses a signed checkpoint note. At least one signature line must be by a key in
// `keys` (same name and key id) and verify; signature lines by other keys are ignored (cosigners,
// witnesses), as signed-note says. Errors: kInvalidArgument for a malformed note (which line and
// why), kUnauthenticated when no known key signed it or a known key's signature does not verify.
Result<Checkpoint> OpenCheckpoint(std::string_view note, const std::vector<VerifierKey>& keys);

// Parses the body alone without any signature check (for tools that show a checkpoint).
Result<Checkpoint> ParseCheckpointBody(std::string_view body);

}  // namespace govern::audit
