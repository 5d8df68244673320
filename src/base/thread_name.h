// Names the calling thread as `top -H`, `ps -L`, perf and /proc/<pid>/task/<tid>/comm show it, so that
// an operator (and the benchmarks, which split a service's CPU by role) can tell its threads apart.
//
// Thread-safety: names only the calling thread.
#pragma once

#include <string_view>

namespace govern {

// Linux keeps 15 bytes of a thread's name: a longer `name` is cut there. Failure is ignored (a name is
// a label, not state).
void NameThisThread(std::string_view name);

}  // namespace govern
