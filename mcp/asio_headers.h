// The parts of standalone asio the MCP layer uses. g++ 12 flags a false "potential null pointer
// dereference" inside asio's scheduler (asio/detail/impl/scheduler.ipp) once it is inlined; the
// warning is attributed to asio's own lines, so silencing it around these includes keeps
// -Wnull-dereference fully active for our code.
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
#include <asio/write.hpp>
#pragma GCC diagnostic pop
