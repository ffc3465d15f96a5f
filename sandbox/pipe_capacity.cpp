#include "sandbox/pipe_capacity.h"

#include <fcntl.h>

namespace sandbox {

int grow_pipe(int fd, int bytes) {
  const int now = ::fcntl(fd, F_GETPIPE_SZ);
  if (now < 0 || now >= bytes) return now;
  const int grown = ::fcntl(fd, F_SETPIPE_SZ, bytes);  // the kernel rounds up to a power of two pages
  return grown < 0 ? now : grown;
}

}  // namespace sandbox
