// One HTTP request and its response as the MCP endpoint sees them, independent of the HTTP
// library (mcp/http/listener.cpp adapts RESTinio to this). Everything runs on the io thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcp::http {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;           // "POST", "GET", ...
  std::string path;             // without the query
  HeaderList headers;           // names in lower case, values without surrounding whitespace
  std::string body;
  std::uint64_t connection = 0; // the connection it arrived on
  std::string peer;             // the client's address

  std::optional<std::string> header(std::string_view lower_name) const {
    for (const auto& [name, value] : headers) {
      if (name == lower_name) return value;
    }
    return std::nullopt;
  }
};

// The response to one Request: either send() once, or start() a streamed body, write() pieces and
// end() it. Calls after the connection closed are ignored.
class Response {
 public:
  virtual ~Response() = default;
  virtual void send(int status, HeaderList headers, std::string body) = 0;
  virtual void start(int status, HeaderList headers) = 0;
  virtual void write(std::string data) = 0;
  virtual void end() = 0;
  // Whom the bytes of this response count against while they are not written to the socket
  // (output_budget.h): its connection unless told otherwise (an initialize-era session).
  virtual void charge_to(std::string /*client*/) {}
};

}  // namespace mcp::http
