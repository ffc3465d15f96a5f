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
