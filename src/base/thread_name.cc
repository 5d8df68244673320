#include "base/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <cstring>

namespace govern {

void NameThisThread(std::string_view name) {
  char buf[16];
  const size_t n = std::min(name.size(), sizeof buf - 1);
  std::memcpy(buf, name.data(), n);
  buf[n] = '\0';
  ::pthread_setname_np(::pthread_self(), buf);
}

}  // namespace govern
