// The govern binary: every service in one executable.
#include <cstdio>

int main() {
  std::puts("govern 0.1.0");
  return 0;
}
