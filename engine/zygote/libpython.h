// The embedded interpreter, loaded at run time: dlopen of the selected interpreter's shared
// libpython and a handful of functions resolved by name, each present in every CPython from
// 3.9 to 3.15. One zygote binary thus serves every version; nothing links libpython at build time.
#pragma once

#include <string>

namespace engine {

class LibPython {
 public:
  // dlopen(path, RTLD_NOW | RTLD_GLOBAL): global, so extension modules find the C API.
  // Throws std::runtime_error naming the library and the missing symbol.
  static LibPython load(const std::string& path);

  void (*Py_InitializeEx)(int initsigs) = nullptr;
  int (*Py_IsInitialized)() = nullptr;
  const char* (*Py_GetVersion)() = nullptr;
  // PyCompilerFlags* is passed as nullptr: the stable meaning of "no flags".
  int (*PyRun_SimpleStringFlags)(const char* command, void* flags) = nullptr;
  void (*PyOS_BeforeFork)() = nullptr;
  void (*PyOS_AfterFork_Parent)() = nullptr;
  void (*PyOS_AfterFork_Child)() = nullptr;
  // To call a Python function without parsing source each time (the parser's page faults
  // would land on a run's critical path). All borrowed references, all in the stable ABI.
  void* (*PyImport_AddModule)(const char* name) = nullptr;
  void* (*PyModule_GetDict)(void* module) = nullptr;
  void* (*PyDict_GetItemString)(void* dict, const char* key) = nullptr;
  void* (*PyObject_CallObject)(void* callable, void* args) = nullptr;
  void (*Py_DecRef)(void* object) = nullptr;
  void (*PyErr_Print)() = nullptr;

  int run(const std::string& code) const { return PyRun_SimpleStringFlags(code.c_str(), nullptr); }
  // A function of __main__ (borrowed; it lives as long as the interpreter), or nullptr.
  void* main_function(const char* name) const;
  // Calls it without arguments; false (traceback printed to stderr) when it raised.
  bool call(void* function) const;

 private:
  void* handle_ = nullptr;  // deliberately never dlclose'd: the interpreter lives as long as we do
};

}  // namespace engine
