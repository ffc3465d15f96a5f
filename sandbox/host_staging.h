// Host paths made reachable for an unprivileged identity that may not traverse a private parent.
//
// When the server runs as root, bubblewrap runs as an unprivileged uid, which cannot traverse
// private directories such as /root (mode 0700) to reach e.g. a pyenv interpreter or a cache
// under root's home. bwrap binds by path (even --ro-bind-fd and --bind-fd resolve the fd back to
// a path), so the server stages such paths: in a private mount namespace of the process that
// then becomes bwrap, a tmpfs (mode 0755) covers each "hide point" (the topmost untraversable
// directory) and the needed paths are bound back into it at their own place, from fds opened
// while still root. Nothing else of the hide point is visible, the host's mount table is
// untouched, and each bound path keeps its own mount flags (a writable target stays writable).
// The runner (sandbox/process.h) carries the plan out in the child, before the identity drop.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace sandbox {

struct HostStaging {
  std::vector<std::string> hide_points;  // tmpfs over each, in order
  std::vector<std::string> dirs;         // then created, in order (parents first)
  std::vector<std::string> files;        // then created empty, as mount points for files
  std::vector<std::size_t> bound;        // indexes into the input paths that are bound back
  std::vector<std::string> bound_paths;  // those paths, in the same order
  bool empty() const { return hide_points.empty(); }
};

// `paths` are absolute and canonical; `is_dir(i)` says whether paths[i] is a directory;
// `traversable(dir)` whether the unprivileged uid may search `dir`.
HostStaging plan_host_staging(const std::vector<std::string>& paths,
                              const std::function<bool(std::size_t)>& is_dir,
                              const std::function<bool(const std::string&)>& traversable);

// The same, from this host's file system: a directory is traversable when others may search it
// (the unprivileged uid is neither its owner nor in its group). Throws std::runtime_error
// naming a path that does not exist.
HostStaging plan_host_staging(const std::vector<std::string>& paths);

}  // namespace sandbox
