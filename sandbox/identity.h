// Who the run is: a new session (no controlling terminal, no TIOCSTI into ours), no
// capabilities in any set, and no_new_privs. Called in the child after mounts, before seccomp.
#pragma once

namespace sandbox {

void drop_identity();  // throws SetupError

}  // namespace sandbox
