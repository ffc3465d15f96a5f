// What an OS error number means, said so that a user can act on it: the system's text, and when
// a process has run out of file descriptors, which limit that is and how to raise it.
#pragma once

#include <string>

namespace sandbox {

// strerror(err), with " (…: raise ulimit -n)" for EMFILE and the system-wide limit for ENFILE.
std::string errno_text(int err);
// "what: " and the same.
std::string errno_text(const std::string& what, int err);

}  // namespace sandbox
