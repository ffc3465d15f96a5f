// Run slots shared fairly between clients: a call that needs a slot waits in its client's queue,
// and a freed slot goes to the waiting client with the fewest runs going, and among those to the
// one served least recently (a client that was idle first), so one client with a hundred calls
// queued does not hold up another with one. Single-threaded (the io thread).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "engine/event_loop.h"

namespace mcp {

class FairQueue {
 public:
  // Holds a call's place: waiting, then its slot. Destroying it withdraws the call from the
  // queue or frees the slot for the next one.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    bool started() const;

    struct Entry;
    struct State;
    Ticket(std::weak_ptr<State> queue, std::shared_ptr<Entry> entry);

   private:
    std::weak_ptr<State> queue_;
    std::shared_ptr<Entry> entry_;
  };

  FairQueue(asio::io_context& io, std::size_t slots, std::size_t max_waiting_per_client);
  ~FairQueue();
  FairQueue(const FairQueue&) = delete;
  FairQueue& operator=(const FairQueue&) = delete;

  // `start` runs on the io context (never inside this call) when the call gets its slot.
  // nullptr when `client` already has max_waiting_per_client calls waiting.
  std::unique_ptr<Ticket> submit(const std::string& client, std::function<void()> start);

  std::size_t running() const;
  std::size_t waiting() const;

 private:
  std::shared_ptr<Ticket::State> state_;
};

}  // namespace mcp
