// The run queue: which waiting runs may start, and in which order, within --max-concurrent-runs.
// Runs of one client are offered in arrival order; clients take turns: a free slot goes first to
// the client with the fewest runs going, then to the one whose last run started longest ago (a
// client that has not run yet counts as the longest ago), so a burst from one client cannot starve
// another's call, also one that arrives after the burst has started. A run that is
// not ready yet (its environment is installing, its zygote is warming) keeps its place without
// holding a slot, and the runs behind it are offered. Pure bookkeeping: it runs nothing itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace engine {

class Scheduler {
 public:
  using Id = std::uint64_t;
  // What the owner did with an offered run.
  enum class Step {
    started,  // it runs now and holds a slot until finished(id)
    waiting,  // not ready: it stays queued, and the runs behind it are offered
    dropped,  // it leaves the queue without ever holding a slot (refused, failed, answered)
  };

  explicit Scheduler(unsigned max_running);

  void enqueue(Id id, const std::string& client = {});
  // A queued run that will not start (cancelled while queued): true when it was queued.
  bool remove(Id id);
  // A started run ended: its slot is free. Unknown ids are ignored.
  void finished(Id id);
  // Offers queued runs to `step`, in turn order, while a slot is free. `step` may call
  // enqueue/remove/finished for any run (also the offered one) while it is being offered.
  void pump(const std::function<Step(Id)>& step);
  // Every queued run, in turn order, removed from the queue (the server is stopping).
  std::vector<Id> take_queued();

  std::size_t queued() const { return queued_; }
  std::size_t running() const { return running_.size(); }
  unsigned max_running() const { return max_running_; }
  bool is_queued(Id id) const { return client_of_.count(id) != 0; }
  bool is_running(Id id) const { return running_.count(id) != 0; }

 private:
  void forget_if_idle(const std::string& client);
  // The queued runs in the order they are offered: the first of each client in turn, then the
  // second of each, and so on.
  std::vector<Id> offer_order() const;

  unsigned max_running_;
  std::map<std::string, std::deque<Id>> by_client_;
  std::deque<std::string> turn_;  // clients with queued runs, by arrival (ties go to the front)
  std::map<Id, std::string> client_of_;
  std::map<Id, std::string> running_;  // run -> its client
  struct ClientRecord {
    unsigned running = 0;
    std::uint64_t last_start = 0;  // 0: none since it last had nothing queued or running
  };
  std::map<std::string, ClientRecord> clients_;  // clients with runs queued or running
  std::uint64_t starts_ = 0;
  std::size_t queued_ = 0;
  std::optional<Id> offering_;   // the run being offered, while `step` runs
  bool offered_ended_ = false;   // it started and already ended within `step`
};

}  // namespace engine
