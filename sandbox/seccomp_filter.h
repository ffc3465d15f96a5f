// The syscall filter: compiled once (in the zygote, before any fork) with libseccomp, installed
// in each child as the last step before user code.
#pragma once

#include <cstdint>
#include <vector>

#include "sandbox/policy.h"

namespace sandbox {

class SeccompProgram {
 public:
  static SeccompProgram compile(const Policy& policy);  // throws SetupError
  void install() const;  // in the child; requires no_new_privs; throws SetupError
  bool empty() const { return bpf_.empty(); }

 private:
  std::vector<std::uint8_t> bpf_;  // exported BPF program (struct sock_filter array)
};

}  // namespace sandbox
