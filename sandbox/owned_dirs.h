// Temporary directories a server process owns on the host (the docker backend's runtime
// directory, the unsandboxed backend's directory per warm interpreter). Each holds a file naming
// its owner: the process (boot, pid, start time) in its pid namespace. A server that ends
// normally removes its own; one killed outright cannot, so the next server to make such a
// directory removes those whose owner is gone. A directory is only ever judged when it belongs
// to this uid and its owner lived in this pid namespace: what another user's or another
// namespace's server holds is left alone, as is anything without an owner file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

// This process as an owner: "<boot id>:<pid>:<start time> <pid namespace>".
std::string directory_owner();
// Whether `owner` (as directory_owner() wrote it) still runs; false for an owner of another
// boot or a pid whose process is gone or is another process now. `judged` is set to false
// (and true returned) when it is not ours to say: another pid namespace, or not an owner.
bool directory_owner_alive(const std::string& owner, bool& judged);

// mkdtemp("<base>/<prefix>XXXXXX"), mode 0700, holding the owner file. Throws
// std::runtime_error naming the path and the reason.
std::string make_owned_dir(const std::string& base, std::string_view prefix);

// Removes, with what they hold, the "<base>/<prefix>*" directories of this uid whose owner
// (of this pid namespace) is gone. Returns the paths removed.
std::vector<std::string> remove_dirs_of_gone_owners(const std::string& base, std::string_view prefix);

}  // namespace sandbox
