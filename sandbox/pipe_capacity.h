// How much a pipe holds before its writer blocks. A pipe starts at 64 KiB; each write that fills
// it waits for the reader, one wake-up of each side per 64 KiB. Growing it to 1 MiB moves a
// megabyte in one or two wake-ups instead of sixteen.
#pragma once

namespace sandbox {

// Grows the capacity of the pipe `fd` to at least `bytes`; never shrinks it. Returns the capacity
// it has afterwards, or -1 when `fd` is not a pipe. Past the caller's limits (pipe-max-size for an
// unprivileged caller, pipe-user-pages-soft/-hard for its user) the pipe keeps the capacity it had.
int grow_pipe(int fd, int bytes);

}  // namespace sandbox
