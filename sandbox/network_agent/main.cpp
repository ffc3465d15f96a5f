// mcp-python-exec-sandbox-network: the network agent (sandbox/network_agent.h). Started by the
// server inside a user-mode network, its request socket at fd 3.
#include <sys/prctl.h>

#include <csignal>

#include "sandbox/network_agent.h"

int main() {
  // Nothing of it outlives its starter (the process runner asked for the same; this holds
  // should it be started by hand).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return sandbox::serve_network_agent(3);
}
