// The distinct refusals of the WebAuthn ceremonies, carried inside a Status.
//
// Every failing function of this folder returns a Status whose message starts with "webauthn.<name>: "
// (for example "webauthn.origin_not_allowed: https://evil.example"); ErrorOf() reads the Error back so
// the auth service can map each refusal to its own answer and metric without parsing text. Call it on
// the Status as returned: WithContext() puts text before the prefix. Inputs that
// do not parse are kInvalidArgument (Error::kMalformed and the unsupported-kind errors); failed checks
// are kUnauthenticated. Pure functions: thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace govern::webauthn {

enum class Error {
  kNone = 0,                // ok, or a Status that did not come from this folder
  kMalformed,               // JSON, base64url, CBOR, authenticator data or a COSE key that does not parse
  kWrongType,               // clientData.type is not "webauthn.create" / "webauthn.get"
  kChallengeMismatch,       // clientData.challenge is not the challenge issued for this ceremony
  kOriginNotAllowed,        // clientData.origin is not in the allowed list
  kCrossOriginNotAllowed,   // clientData.crossOrigin is true and the relying party does not allow it
  kRpIdHashMismatch,        // authenticatorData.rpIdHash != SHA-256(RP ID)
  kUserNotPresent,          // UP flag clear
  kUserNotVerified,         // UV flag clear while user verification is required
  kBackupFlagsInvalid,      // BS without BE, or BE differs from what was registered
  kNoCredentialData,        // registration without attested credential data (AT flag)
  kCredentialIdMismatch,    // registration: rawId differs from the credential id in authenticator data
  kCredentialIdTooLong,     // credential id over 1023 bytes (§7.1 step 23)
  kAlgorithmNotAllowed,     // the credential key's algorithm is not among those offered
  kUnsupportedKey,          // a COSE key of a type, curve or algorithm this library does not take
  kUnsupportedAttestation,  // an attestation format other than none and packed, or ECDAA
  kAttestationNotAllowed,   // an attestation type the relying party's policy refuses (none, self)
  kInvalidAttestation,      // a packed attestation whose signature or certificate fails
  kUnknownCredential,       // the assertion names a credential other than the stored one
  kCredentialNotAllowed,    // the credential is not in allowCredentials
  kUserHandleMissing,       // a discoverable-credential sign-in without a userHandle
  kUserHandleMismatch,      // userHandle is not the credential owner's user id
  kBadSignature,            // the assertion or attestation signature does not verify
  kSignCountNotIncreased,   // a non-zero counter did not move forward: replay or a cloned authenticator
  kWrongCode,               // TOTP: the code matches no time step in the window
  kCodeReused,              // TOTP: the code's time step is not after the last one used
};

std::string_view ErrorName(Error e);

// The Error a Status of this folder carries, kNone for ok or any other Status.
Error ErrorOf(const Status& s);

// A Status carrying `e` (kInvalidArgument for parse and support errors, kUnauthenticated otherwise).
Status MakeError(Error e, std::string_view detail);

}  // namespace govern::webauthn
