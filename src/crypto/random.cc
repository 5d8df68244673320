// Per-thread block buffer over RAND_bytes, wiped as it is consumed and discarded after fork.
#include "crypto/random.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>

#include "crypto/openssl_error.h"

namespace govern::crypto {
namespace {

constexpr size_t kBlock = 4096;

// Bumped in every child process right after fork(). A thread's buffer remembers the generation and pid
// it was filled in; a mismatch of either means the buffer was copied from a parent and must go.
std::atomic<uint64_t> fork_generation{0};

void OnForkChild() { fork_generation.fetch_add(1, std::memory_order_relaxed); }

void RegisterForkHandler() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &OnForkChild); });
}

struct Buffer {
  uint8_t bytes[kBlock];
  size_t pos = kBlock;  // bytes[pos..kBlock) are unused random bytes; pos == kBlock means empty
  uint64_t generation = 0;
  pid_t pid = 0;

  ~Buffer() { OPENSSL_cleanse(bytes, sizeof bytes); }

  void Discard() {
    OPENSSL_cleanse(bytes, sizeof bytes);
    pos = kBlock;
  }

  Status Refill() {
    if (RAND_bytes(bytes, static_cast<int>(kBlock)) != 1) {
      Discard();
      return internal::OpensslError("RAND_bytes", Code::kUnavailable);
    }
    pos = 0;
    generation = fork_generation.load(std::memory_order_relaxed);
    pid = getpid();
    return OkStatus();
  }
};

thread_local Buffer buffer;

}  // namespace

Status RandomBytes(std::span<uint8_t> out) {
  RegisterForkHandler();
  if (out.size() >= kBlock) {
    // Large draws gain nothing from the buffer. RAND_bytes takes an int length.
    size_t done = 0;
    while (done < out.size()) {
      size_t n = std::min<size_t>(out.size() - done, INT_MAX);
      if (RAND_bytes(out.data() + done, static_cast<int>(n)) != 1) {
        return internal::OpensslError("RAND_bytes", Code::kUnavailable);
      }
      done += n;
    }
    return OkStatus();
  }
  Buffer& b = buffer;
  if (b.pos < kBlock &&
      (b.generation != fork_generation.load(std::memory_order_relaxed) || b.pid != getpid())) {
    b.Discard();
  }
  size_t done = 0;
  while (done < out.size()) {
    if (b.pos == kBlock) GOVERN_RETURN_IF_ERROR(b.Refill());
    size_t n = std::min(out.size() - done, kBlock - b.pos);
    std::memcpy(out.data() + done, b.bytes + b.pos, n);
    OPENSSL_cleanse(b.bytes + b.pos, n);  // a byte handed out is never kept
    b.pos += n;
    done += n;
  }
  return OkStatus();
}

Result<SecretBytes> RandomSecret(size_t n) {
  SecretBytes s(n);
  GOVERN_RETURN_IF_ERROR(RandomBytes(s.span()));
  return s;
}

size_t RandomBufferedForTesting() {
  Buffer& b = buffer;
  if (b.generation != fork_generation.load(std::memory_order_relaxed) || b.pid != getpid()) return 0;
  return kBlock - b.pos;
}

}  // namespace govern::crypto
