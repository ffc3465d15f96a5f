#include "engine/sessions/session_table.h"

#include <openssl/rand.h>
#include <sys/random.h>

#include <array>
#include <stdexcept>

namespace engine {

std::string new_session_id() {
  std::array<unsigned char, 16> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    // OpenSSL draws from the kernel too; getrandom is the fallback it would have used.
    std::size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::getrandom(bytes.data() + got, bytes.size() - got, 0);
      if (n <= 0) throw std::runtime_error("no random bytes for a session id (RAND_bytes and getrandom failed)");
      got += static_cast<std::size_t>(n);
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(32);
  for (const unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 15]);
  }
  return id;
}

bool looks_like_session_id(std::string_view text) {
  if (text.size() != 32) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<std::string> session_capacity_error(std::size_t existing, std::size_t creating, unsigned max_sessions) {
  if (existing + creating < max_sessions) return std::nullopt;
  return "at most " + std::to_string(max_sessions) + " sessions may exist at once (--max-sessions " +
         std::to_string(max_sessions) + "), and " + std::to_string(existing + creating) +
         " do: close one with close_session (sessions idle for --session-idle-seconds close by themselves)";
}

std::string unknown_session_message(std::string_view id) {
  return "unknown session '" + std::string(id.substr(0, 64)) +
         "': no session of yours has this id (it may have been closed, expired after "
         "--session-idle-seconds, or ended with the server); create_session makes a new one";
}

}  // namespace engine
