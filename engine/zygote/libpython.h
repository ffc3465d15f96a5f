// The embedded interpreter, loaded at run time: dlopen of the selected interpreter's shared
// libpython and a handful of functions resolved by name, each present in every CPython from
// 3.9 to 3.15. One zygote binary thus serves every version; nothing links libpython at build time.
#pragma once

#include <sys/types.h>

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
  // To run a script's steps from C (run_steps).
  ssize_t (*PyTuple_Size)(void* tuple) = nullptr;
  void* (*PyTuple_GetItem)(void* tuple, ssize_t index) = nullptr;
  void* (*PyEval_EvalCode)(void* code, void* globals, void* locals) = nullptr;
  int (*PyDict_SetItemString)(void* dict, const char* key, void* value) = nullptr;
  void (*PyErr_Fetch)(void** type, void** value, void** traceback) = nullptr;
  void (*PyErr_NormalizeException)(void** type, void** value, void** traceback) = nullptr;
  int (*PyException_SetTraceback)(void* exception, void* traceback) = nullptr;
  // For sessions (engine/zygote/session_holder.h): integers between C and the runner, and the
  // GIL released while a holder waits (so that a session's own threads keep running).
  void* (*PyLong_FromLongLong)(long long value) = nullptr;
  long long (*PyLong_AsLongLong)(void* object) = nullptr;
  void (*PyErr_Clear)() = nullptr;
  void* (*PyErr_Occurred)() = nullptr;
  void* (*PyEval_SaveThread)() = nullptr;
  void (*PyEval_RestoreThread)(void* thread_state) = nullptr;

  int run(const std::string& code) const { return PyRun_SimpleStringFlags(code.c_str(), nullptr); }
  // A function of __main__ (borrowed; it lives as long as the interpreter), or nullptr.
  void* main_function(const char* name) const;
  // Calls it without arguments; false (traceback printed to stderr) when it raised.
  bool call(void* function) const;
  // Runs a script the way `python3 script.py` does, with no Python frame beneath it:
  // begin() returns a tuple of (code, globals) steps, each evaluated here as the interpreter
  // evaluates a script's module code; then, with the value of the last step in
  // `globals_dict["_MPES_VALUE"]`, finish(); or, when a step raised, with the exception (its
  // traceback set) in `globals_dict["_MPES_ERROR"]`, failed(). Nothing of ours holds a
  // reference to either meanwhile. finish and failed are expected not to return.
  void run_steps(void* begin, void* finish, void* failed, void* globals_dict) const;
  // dict[name] = value (an int); false when it could not be set.
  bool set_int(void* dict, const char* name, long long value) const;
  // dict[name] as an int, or `fallback` when absent or not an int.
  long long get_int(void* dict, const char* name, long long fallback) const;

 private:
  void* handle_ = nullptr;  // deliberately never dlclose'd: the interpreter lives as long as we do
};

}  // namespace engine
