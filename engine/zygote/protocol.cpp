#include "engine/zygote/protocol.h"

#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <type_traits>

namespace engine::zygote {
namespace {

constexpr std::uint32_t kMagic = 0x315a504d;  // "MPZ1"
// A string field never makes a message exceed kMaxMessageBytes (the fixed fields are tiny).
constexpr std::size_t kMaxStringBytes = 1024;

enum class Type : std::uint32_t {
  ready = 1, run = 2, started = 3, exited = 4, refused = 5,
  step = 6, step_started = 7, step_exited = 8, holder_ready = 9, prepare = 10,
  spare = 11, spare_linked = 12, taken = 13, holder_spare = 14
};

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_integral_v<T>);
    const auto at = bytes_.size();
    bytes_.resize(at + sizeof value);
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  void put(const std::string& text) {
    // Cut at a UTF-8 character boundary so the text stays valid.
    std::size_t n = std::min(text.size(), kMaxStringBytes);
    while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
    put(static_cast<std::uint32_t>(n));
    bytes_.insert(bytes_.end(), text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n));
  }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T& value) {
    static_assert(std::is_integral_v<T>);
    if (bytes_.size() - pos_ < sizeof value) return false;
    std::memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return true;
  }
  bool get(std::string& text) {
    std::uint32_t n = 0;
    if (!get(n) || n > kMaxStringBytes || bytes_.size() - pos_ < n) return false;
    text.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == bytes_.size(); }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

Received receive(int socket_fd, int flags);

void header(Writer& w, Type type) {
  w.put(kMagic);
  w.put(static_cast<std::uint32_t>(type));
}

}  // namespace

std::vector<std::uint8_t> encode(const Message& message) {
  Writer w;
  if (const auto* m = std::get_if<ReadyMessage>(&message)) {
    header(w, Type::ready);
    w.put(m->python_version);
    w.put(m->rss_bytes);
    w.put(m->tasks);
    w.put(m->warnings);
  } else if (const auto* r = std::get_if<RunMessage>(&message)) {
    header(w, Type::run);
    w.put(r->run_id);
    w.put(r->timeout_seconds);
    w.put(r->flags);
  } else if (const auto* s = std::get_if<StartedMessage>(&message)) {
    header(w, Type::started);
    w.put(s->run_id);
    w.put(s->pid);
  } else if (const auto* e = std::get_if<ExitedMessage>(&message)) {
    header(w, Type::exited);
    w.put(e->run_id);
    w.put(e->wait_status);
    w.put(e->user_cpu_us);
    w.put(e->system_cpu_us);
    w.put(e->max_rss_kb);
    w.put(e->flags);
    w.put(e->zygote_rss_bytes);
    w.put(e->detail);
  } else if (const auto* f = std::get_if<RefusedMessage>(&message)) {
    header(w, Type::refused);
    w.put(f->run_id);
    w.put(f->reason);
  } else if (const auto* st = std::get_if<StepMessage>(&message)) {
    header(w, Type::step);
    w.put(st->step_id);
    w.put(st->step_number);
    w.put(st->cpu_seconds);
    w.put(st->flags);
  } else if (const auto* ss = std::get_if<StepStartedMessage>(&message)) {
    header(w, Type::step_started);
    w.put(ss->step_id);
    w.put(ss->pid);
  } else if (const auto* se = std::get_if<StepExitedMessage>(&message)) {
    header(w, Type::step_exited);
    w.put(se->step_id);
    w.put(se->wait_status);
    w.put(se->user_cpu_us);
    w.put(se->system_cpu_us);
    w.put(se->max_rss_kb);
    w.put(se->pid);
  } else if (const auto* hr = std::get_if<HolderReadyMessage>(&message)) {
    header(w, Type::holder_ready);
    w.put(hr->step_id);
    w.put(hr->exit_code);
    w.put(hr->tasks);
    w.put(hr->user_cpu_us);
    w.put(hr->system_cpu_us);
    w.put(hr->max_rss_kb);
  } else if (const auto* pr = std::get_if<PrepareMessage>(&message)) {
    header(w, Type::prepare);
    w.put(pr->reserved);
  } else if (const auto* sp = std::get_if<SpareMessage>(&message)) {
    header(w, Type::spare);
    w.put(sp->pid);
    w.put(sp->direct);
  } else if (const auto* sl = std::get_if<SpareLinkedMessage>(&message)) {
    header(w, Type::spare_linked);
    w.put(sl->pid);
    w.put(sl->ok);
    w.put(sl->reason);
  } else if (const auto* tk = std::get_if<TakenMessage>(&message)) {
    header(w, Type::taken);
    w.put(tk->run_id);
    w.put(tk->pid);
  } else if (const auto* hs = std::get_if<HolderSpareMessage>(&message)) {
    header(w, Type::holder_spare);
    w.put(hs->pid);
    w.put(hs->generation);
  }
  return w.take();
}

bool decode(std::span<const std::uint8_t> bytes, Message& out, std::string& error) {
  if (bytes.size() > kMaxMessageBytes) {
    error = "message of " + std::to_string(bytes.size()) + " bytes exceeds the limit";
    return false;
  }
  Reader r(bytes);
  std::uint32_t magic = 0, type = 0;
  if (!r.get(magic) || !r.get(type)) {
    error = "message shorter than its header";
    return false;
  }
  if (magic != kMagic) {
    error = "bad magic (not a zygote protocol message)";
    return false;
  }
  bool ok = false;
  switch (static_cast<Type>(type)) {
    case Type::ready: {
      ReadyMessage m;
      ok = r.get(m.python_version) && r.get(m.rss_bytes) && r.get(m.tasks) && r.get(m.warnings);
      out = std::move(m);
      break;
    }
    case Type::run: {
      RunMessage m;
      ok = r.get(m.run_id) && r.get(m.timeout_seconds) && r.get(m.flags);
      out = m;
      break;
    }
    case Type::started: {
      StartedMessage m;
      ok = r.get(m.run_id) && r.get(m.pid);
      out = m;
      break;
    }
    case Type::exited: {
      ExitedMessage m;
      ok = r.get(m.run_id) && r.get(m.wait_status) && r.get(m.user_cpu_us) &&
           r.get(m.system_cpu_us) && r.get(m.max_rss_kb) && r.get(m.flags) &&
           r.get(m.zygote_rss_bytes) && r.get(m.detail);
      out = std::move(m);
      break;
    }
    case Type::refused: {
      RefusedMessage m;
      ok = r.get(m.run_id) && r.get(m.reason);
      out = std::move(m);
      break;
    }
    case Type::step: {
      StepMessage m;
      ok = r.get(m.step_id) && r.get(m.step_number) && r.get(m.cpu_seconds) && r.get(m.flags);
      out = m;
      break;
    }
    case Type::step_started: {
      StepStartedMessage m;
      ok = r.get(m.step_id) && r.get(m.pid);
      out = m;
      break;
    }
    case Type::step_exited: {
      StepExitedMessage m;
      ok = r.get(m.step_id) && r.get(m.wait_status) && r.get(m.user_cpu_us) && r.get(m.system_cpu_us) &&
           r.get(m.max_rss_kb) && r.get(m.pid);
      out = m;
      break;
    }
    case Type::holder_ready: {
      HolderReadyMessage m;
      ok = r.get(m.step_id) && r.get(m.exit_code) && r.get(m.tasks) && r.get(m.user_cpu_us) &&
           r.get(m.system_cpu_us) && r.get(m.max_rss_kb);
      out = m;
      break;
    }
    case Type::prepare: {
      PrepareMessage m;
      ok = r.get(m.reserved);
      out = m;
      break;
    }
    case Type::spare: {
      SpareMessage m;
      ok = r.get(m.pid) && r.get(m.direct);
      out = m;
      break;
    }
    case Type::taken: {
      TakenMessage m;
      ok = r.get(m.run_id) && r.get(m.pid);
      out = m;
      break;
    }
    case Type::holder_spare: {
      HolderSpareMessage m;
      ok = r.get(m.pid) && r.get(m.generation);
      out = m;
      break;
    }
    case Type::spare_linked: {
      SpareLinkedMessage m;
      ok = r.get(m.pid) && r.get(m.ok) && r.get(m.reason);
      out = std::move(m);
      break;
    }
    default:
      error = "unknown message type " + std::to_string(type);
      return false;
  }
  if (!ok) {
    error = "truncated message of type " + std::to_string(type);
    return false;
  }
  if (!r.done()) {
    error = "trailing bytes after message of type " + std::to_string(type);
    return false;
  }
  return true;
}

namespace {
int send_with(int socket_fd, const Message& message, std::span<const int> fds, int flags);
}  // namespace

int send_message(int socket_fd, const Message& message, std::span<const int> fds) {
  return send_with(socket_fd, message, fds, MSG_NOSIGNAL);
}

int send_message_now(int socket_fd, const Message& message, std::span<const int> fds) {
  return send_with(socket_fd, message, fds, MSG_NOSIGNAL | MSG_DONTWAIT);
}

namespace {

int send_with(int socket_fd, const Message& message, std::span<const int> fds, int flags) {
  if (fds.size() > kMaxFdsPerMessage) return EINVAL;
  auto bytes = encode(message);
  iovec iov{bytes.data(), bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)]{};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t n = ::sendmsg(socket_fd, &msg, flags);
    if (n >= 0) return 0;
    if (errno != EINTR) return errno;
  }
}

}  // namespace

Received receive_message(int socket_fd) { return receive(socket_fd, MSG_DONTWAIT); }

Received receive_message_blocking(int socket_fd) { return receive(socket_fd, 0); }

namespace {

Received receive(int socket_fd, int flags) {
  Received result;
  // Not zeroed: a message is read at every run's start and end (the server's READY handling
  // spent a quarter of its time zeroing a heap buffer); only the n bytes received are read.
  std::array<std::uint8_t, kMaxMessageBytes + 1> buffer;
  iovec iov{buffer.data(), buffer.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)]{};
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC | flags);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      result.status = Received::Status::would_block;
    } else {
      result.error = std::string("recvmsg: ") + std::strerror(errno);
    }
    return result;
  }
  // Take ownership of every fd first, so none leaks whatever else is wrong with the message.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      result.fds.emplace_back(fd);
    }
  }
  if (n == 0 && result.fds.empty()) {
    result.status = Received::Status::eof;
    return result;
  }
  if ((msg.msg_flags & MSG_TRUNC) != 0) {
    result.error = "message truncated";
    result.fds.clear();
    return result;
  }
  if (!decode({buffer.data(), static_cast<std::size_t>(n)}, result.message, result.error)) {
    result.fds.clear();
    return result;
  }
  // Fds that could not be installed (EMFILE) or did not fit are gone; the message is still
  // whole, and its receiver answers it (a spare it cannot use, a run it cannot start).
  result.fds_truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
  result.status = Received::Status::message;
  return result;
}

}  // namespace

}  // namespace engine::zygote
