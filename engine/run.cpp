#include "engine/run.h"

namespace engine {

std::string_view to_string(EndReason reason) {
  switch (reason) {
    case EndReason::exit: return "exit";
    case EndReason::signal: return "signal";
    case EndReason::timeout: return "timeout";
    case EndReason::memory_limit: return "memory_limit";
    case EndReason::cpu_limit: return "cpu_limit";
    case EndReason::process_limit: return "process_limit";
    case EndReason::file_size_limit: return "file_size_limit";
    case EndReason::cancelled: return "cancelled";
    case EndReason::sandbox_error: return "sandbox_error";
    case EndReason::install_failed: return "install_failed";
    case EndReason::refused: return "refused";
  }
  return "exit";
}

}  // namespace engine
