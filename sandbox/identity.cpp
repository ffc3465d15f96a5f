#include "sandbox/identity.h"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "sandbox/setup_error.h"

namespace sandbox {
namespace {

[[noreturn]] void fail(const std::string& step, int err) {
  throw SetupError("sandbox: " + step + " failed: " + std::strerror(err));
}

bool read_caps(__user_cap_data_struct (&data)[2]) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  return syscall(SYS_capget, &header, &data[0]) == 0;
}

bool has_effective(const __user_cap_data_struct (&data)[2], unsigned cap) {
  return (data[cap / 32].effective & (1u << (cap % 32))) != 0;
}

}  // namespace

void drop_identity() {
  // A new session: no controlling terminal, so nothing can be pushed into the server's tty.
  if (setsid() < 0 && getsid(0) != getpid()) fail("setsid (new session)", errno);

  if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) fail("PR_SET_NO_NEW_PRIVS", errno);

  __user_cap_data_struct caps[2]{};
  if (!read_caps(caps)) fail("capget", errno);
  const bool can_setpcap = has_effective(caps, CAP_SETPCAP);

  // Bounding set (needs CAP_SETPCAP). Without CAP_SETPCAP it cannot be changed, but then
  // no_new_privs already keeps execve from granting anything from it.
  for (unsigned long cap = 0;; ++cap) {
    const int present = prctl(PR_CAPBSET_READ, cap, 0UL, 0UL, 0UL);
    if (present < 0) break;  // EINVAL: past the kernel's last capability
    if (present == 0) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0UL, 0UL, 0UL) != 0 && can_setpcap) {
      fail("dropping capability " + std::to_string(cap) + " from the bounding set", errno);
    }
  }
  // Ambient set; EINVAL only on kernels without ambient capabilities (< 4.3).
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0 && errno != EINVAL) {
    fail("clearing ambient capabilities", errno);
  }
  if (can_setpcap) {
    // uid 0 (inside the user namespace) gains nothing from execve or setuid, for good.
    const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                               SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                               SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    if (prctl(PR_SET_SECUREBITS, bits, 0UL, 0UL, 0UL) != 0) fail("PR_SET_SECUREBITS", errno);
  }
  // Effective, permitted and inheritable sets, all empty.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct none[2]{};
  if (syscall(SYS_capset, &header, &none[0]) != 0) fail("capset (drop all capabilities)", errno);

  // Verify rather than trust: a run must never start with a capability.
  __user_cap_data_struct after[2]{};
  if (!read_caps(after)) fail("capget", errno);
  for (const auto& d : after) {
    if (d.effective != 0 || d.permitted != 0 || d.inheritable != 0) {
      throw SetupError("sandbox: capabilities are still present after dropping them");
    }
  }
  if (prctl(PR_GET_NO_NEW_PRIVS, 0UL, 0UL, 0UL, 0UL) != 1) {
    throw SetupError("sandbox: no_new_privs is not set after PR_SET_NO_NEW_PRIVS");
  }
}

}  // namespace sandbox
