// Error-queue draining for every OpenSSL call in src/crypto.
#include "crypto/openssl_error.h"

#include <openssl/err.h>

#include <string>

namespace govern::crypto::internal {

Status OpensslError(std::string_view what, Code code) {
  std::string msg(what);
  bool first = true;
  while (unsigned long err = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(err, buf, sizeof buf);
    msg += first ? ": " : "; ";
    msg += buf;
    first = false;
  }
  return Status(code, std::move(msg));
}

void ClearOpensslErrors() { ERR_clear_error(); }

}  // namespace govern::crypto::internal
