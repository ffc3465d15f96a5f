#include "sandbox/owned_dirs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "sandbox/docker_command.h"
#include "sandbox/os_error.h"
#include "sandbox/unique_fd.h"

namespace sandbox {
namespace {

constexpr const char* kOwnerFile = ".mpes-owner";

std::string own_pid_namespace() {
  std::error_code ec;
  const auto link = std::filesystem::read_symlink("/proc/self/ns/pid", ec);
  return ec ? std::string() : link.string();
}

// The owner file of the directory `dir_fd`, as written (empty when there is none).
std::string read_owner(int dir_fd) {
  UniqueFd fd(::openat(dir_fd, kOwnerFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return "";
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

std::string directory_owner() { return docker_owner() + " " + own_pid_namespace(); }

bool directory_owner_alive(const std::string& owner, bool& judged) {
  judged = false;
  const auto space = owner.find(' ');
  if (space == std::string::npos) return true;  // not an owner: not ours to judge
  const std::string ns = owner.substr(space + 1);
  if (ns.empty() || ns != own_pid_namespace()) return true;  // its pid means nothing here
  judged = true;
  return docker_owner_alive(owner.substr(0, space));
}

std::string make_owned_dir(const std::string& base, std::string_view prefix) {
  std::string path = base + "/" + std::string(prefix) + "XXXXXX";
  if (::mkdtemp(path.data()) == nullptr) {
    const int err = errno;
    throw std::runtime_error(errno_text("cannot create the directory " + path, err));
  }
  const std::string owner = directory_owner();
  UniqueFd fd(::open((path + "/" + kOwnerFile).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd || ::write(fd.get(), owner.data(), owner.size()) != static_cast<ssize_t>(owner.size())) {
    const int err = errno;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
    throw std::runtime_error(errno_text("cannot write the owner of " + path, err));
  }
  return path;
}

std::vector<std::string> remove_dirs_of_gone_owners(const std::string& base, std::string_view prefix) {
  std::vector<std::string> gone;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    if (!entry.path().filename().string().starts_with(prefix)) continue;
    // Opened without following a link; ours (this uid) and a directory, or not considered.
    UniqueFd dir(::open(entry.path().c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!dir || ::fstat(dir.get(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    const std::string owner = read_owner(dir.get());
    bool judged = false;
    if (owner.empty() || directory_owner_alive(owner, judged) || !judged) continue;
    gone.push_back(entry.path().string());
  }
  for (const auto& path : gone) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);  // links inside are removed, never followed
  }
  return gone;
}

}  // namespace sandbox
