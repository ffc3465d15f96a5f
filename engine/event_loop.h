// The parts of standalone asio the server uses (the engine and the MCP layer include this one
// header). g++ 12 flags a false "potential null pointer dereference" inside asio's scheduler
// (asio/detail/impl/scheduler.ipp) once it is inlined; the warning is attributed to asio's own
// lines, so silencing it around these includes (included before anything else that pulls asio in)
// keeps -Wnull-dereference active for our code.
#pragma once

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <asio/buffer.hpp>
#include <asio/error.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/thread_pool.hpp>
#include <asio/write.hpp>
#pragma GCC diagnostic pop

#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace engine {

// Hands `fd` to the event loop: `d` owns it from then on. The loop's registration (epoll_ctl)
// can fail, with ENOSPC once the host user's epoll watches (fs.epoll.max_user_watches) are used
// up, which runs mapped to the server's own user can do: so it never throws. On failure `fd` is
// closed and the error returned, for the caller to fail only what needed it.
inline std::error_code adopt_fd(asio::posix::stream_descriptor& d, int fd) {
  std::error_code ec;
  d.assign(fd, ec);
  if (ec) ::close(fd);
  return ec;
}

// "cannot watch <what>: <error>", and for ENOSPC which limit is used up.
inline std::string watch_failure(const std::string& what, std::error_code ec) {
  std::string text = "cannot watch " + what + ": " + ec.message();
  if (ec.value() == ENOSPC && ec.category() == asio::error::get_system_category()) {
    text += " (the epoll watches of the server's user are used up: fs.epoll.max_user_watches; runs "
            "of a server started unprivileged share that user's)";
  }
  return text;
}

}  // namespace engine
