#include "sandbox/memfd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace sandbox {

UniqueFd sealed_memfd(const char* name, std::string_view data) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, name, MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!fd) throw std::system_error(errno, std::generic_category(), "memfd_create");
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(n < 0 ? errno : EIO, std::generic_category(), std::string("writing the ") + name);
    done += static_cast<std::size_t>(n);
  }
  ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  ::lseek(fd.get(), 0, SEEK_SET);
  return fd;
}

}  // namespace sandbox
