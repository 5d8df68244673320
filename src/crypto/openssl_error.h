// Internal to src/crypto: turns OpenSSL's per-thread error queue into a Status, and empties it.
//
// Every failing OpenSSL call in this folder goes through OpensslError, so no error is left queued on the
// thread (a stale queue entry would be blamed on the next, unrelated TLS or crypto call).
#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"

namespace govern::crypto::internal {

// A Status of `code` whose message is "what: <every queued OpenSSL error>"; drains the queue.
Status OpensslError(std::string_view what, Code code = Code::kInternal);

// Discards whatever is queued (after a call whose failure is an expected answer, such as a bad signature).
void ClearOpensslErrors();

// unique_ptr with an OpenSSL free function as deleter.
template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
template <typename T, void (*Free)(T*)>
using Ptr = std::unique_ptr<T, Deleter<T, Free>>;

}  // namespace govern::crypto::internal
