// The CSPRNG: random bytes from OpenSSL's RAND_bytes, drawn in 4 KiB blocks per thread.
//
// Small draws (a 12-byte nonce, a 16-byte salt, a 32-byte token) are served from a per-thread buffer
// that is refilled with one RAND_bytes call when used up, so they do not pay RAND_bytes' locking each
// time. Bytes handed out are wiped from the buffer at once, and the buffer is wiped when the thread
// ends. After fork() the child discards the buffer it inherited (a pthread_atfork handler, checked
// together with the pid), so parent and child never hand out the same bytes. Draws larger than the
// block go straight to RAND_bytes. Thread-safe: each thread has its own buffer.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "crypto/bytes.h"

namespace govern::crypto {

// Fills `out` with cryptographically secure random bytes. Fails only when OpenSSL's DRBG cannot be
// seeded (the error is returned, never ignored: callers must not proceed with predictable bytes).
Status RandomBytes(std::span<uint8_t> out);

// `n` random bytes in a SecretBytes (for keys).
Result<SecretBytes> RandomSecret(size_t n);

// Bytes of the calling thread's buffer not yet handed out (for tests).
size_t RandomBufferedForTesting();

}  // namespace govern::crypto
