// The keys the bundle server signs with: the files named by policy.server.signing_key, or, when none
// is named, one key generated on first start and kept at <data_dir>/policy/signing.key (mode 0600, its
// public key beside it as signing.pub). Every key signs every bundle published while it is configured,
// which is how keys rotate (docs/policy-server.md).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "bundle/keys.h"

namespace govern::policy_service {

struct SigningKeys {
  std::vector<bundle::SigningKey> keys;    // in configuration order
  std::vector<bundle::PublicKey> publics;  // the same order
  std::string generated;                   // the key file made or reused under data_dir ("" when configured)
};

// Reads `paths` (private key files written by `govern policy keygen`), or when empty uses (creating it
// once) <data_dir>/policy/signing.key. Errors name the file.
Result<SigningKeys> LoadSigningKeys(const std::vector<std::string>& paths, const std::string& data_dir);

}  // namespace govern::policy_service
