// Where the server keeps what outlives one start: dependency environments, the installers'
// downloads (engine/environments/store.h) and the default interpreter's probe
// (engine/interpreters/probe_cache.h). One resolution for all of them.
#pragma once

#include <string>

namespace engine {

// The first of: `configured` (--cache-dir); $XDG_CACHE_HOME/mcp-python-exec-sandbox;
// $HOME/.cache/mcp-python-exec-sandbox; <home of the server's user in the account database>/
// .cache/mcp-python-exec-sandbox (a service started without HOME); and, last,
// /tmp/mcp-python-exec-sandbox-<uid> when claim_private_dir() accepts it. Variables count only
// when they hold an absolute path. "" when there is none (the caller says to use --cache-dir).
std::string cache_dir(const std::string& configured = {});

// Creates `path` (mode 0700) when it is missing; true when it is then a directory, not a
// symlink, owned by this process's uid, that no one else may write or enter: a directory in a
// shared place (/tmp) that another user could have created first is not used.
bool claim_private_dir(const std::string& path);

}  // namespace engine
