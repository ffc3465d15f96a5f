// Finding a program the way the shell does: one rule for every place the server looks up a
// program by name (bubblewrap, uv, the interpreters on $PATH).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandbox {

// What an unset $PATH means here (the order of a shell's default).
inline constexpr std::string_view kDefaultSearchPath = "/usr/local/bin:/usr/bin:/bin";

// The directories a search path names, in order, each absolute. As POSIX reads PATH (and as
// execvp and `command -v` do), an empty entry means the current directory, and so does a
// relative entry resolved against it: both are turned into absolute paths now, so that a later
// chdir cannot change where a program is found.
std::vector<std::string> path_directories(std::string_view search_path);

// The value of $PATH, or kDefaultSearchPath when it is unset.
std::string search_path();

// Absolute path of an executable regular file: `name` itself when it contains '/' (relative to
// the current directory), else the first `dir/name` for dir in path_directories(search_path).
// nullopt when there is none.
std::optional<std::string> find_executable(const std::string& name, std::string_view search_path);
// The same on $PATH (search_path()).
std::optional<std::string> find_executable(const std::string& name);

}  // namespace sandbox
