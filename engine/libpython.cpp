#include "engine/libpython.h"

#include <dlfcn.h>

#include <stdexcept>

namespace engine {
namespace {

template <typename Fn>
void resolve(void* handle, const std::string& path, const char* name, Fn& out) {
  void* sym = ::dlsym(handle, name);
  if (sym == nullptr) {
    throw std::runtime_error(path + " has no symbol " + name +
                             " (not a CPython 3.9+ shared library?)");
  }
  out = reinterpret_cast<Fn>(sym);
}

}  // namespace

LibPython LibPython::load(const std::string& path) {
  LibPython lib;
  lib.handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (lib.handle_ == nullptr) {
    const char* why = ::dlerror();
    throw std::runtime_error("cannot load libpython " + path + ": " + (why ? why : "unknown error"));
  }
  resolve(lib.handle_, path, "Py_InitializeEx", lib.Py_InitializeEx);
  resolve(lib.handle_, path, "Py_IsInitialized", lib.Py_IsInitialized);
  resolve(lib.handle_, path, "Py_GetVersion", lib.Py_GetVersion);
  resolve(lib.handle_, path, "PyRun_SimpleStringFlags", lib.PyRun_SimpleStringFlags);
  resolve(lib.handle_, path, "PyOS_BeforeFork", lib.PyOS_BeforeFork);
  resolve(lib.handle_, path, "PyOS_AfterFork_Parent", lib.PyOS_AfterFork_Parent);
  resolve(lib.handle_, path, "PyOS_AfterFork_Child", lib.PyOS_AfterFork_Child);
  return lib;
}

}  // namespace engine
