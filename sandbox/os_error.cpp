#include "sandbox/os_error.h"

#include <cerrno>
#include <cstring>

namespace sandbox {

std::string errno_text(int err) {
  std::string text = std::strerror(err);
  if (err == EMFILE) text += " (the server has reached its open-file limit: raise ulimit -n)";
  if (err == ENFILE) text += " (the system's open-file table is full: fs.file-max)";
  return text;
}

std::string errno_text(const std::string& what, int err) { return what + ": " + errno_text(err); }

}  // namespace sandbox
