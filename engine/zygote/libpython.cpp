#include "engine/zygote/libpython.h"

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
  resolve(lib.handle_, path, "PyImport_AddModule", lib.PyImport_AddModule);
  resolve(lib.handle_, path, "PyModule_GetDict", lib.PyModule_GetDict);
  resolve(lib.handle_, path, "PyDict_GetItemString", lib.PyDict_GetItemString);
  resolve(lib.handle_, path, "PyObject_CallObject", lib.PyObject_CallObject);
  resolve(lib.handle_, path, "Py_DecRef", lib.Py_DecRef);
  resolve(lib.handle_, path, "PyErr_Print", lib.PyErr_Print);
  resolve(lib.handle_, path, "PyTuple_Size", lib.PyTuple_Size);
  resolve(lib.handle_, path, "PyTuple_GetItem", lib.PyTuple_GetItem);
  resolve(lib.handle_, path, "PyEval_EvalCode", lib.PyEval_EvalCode);
  resolve(lib.handle_, path, "PyDict_SetItemString", lib.PyDict_SetItemString);
  resolve(lib.handle_, path, "PyErr_Fetch", lib.PyErr_Fetch);
  resolve(lib.handle_, path, "PyErr_NormalizeException", lib.PyErr_NormalizeException);
  resolve(lib.handle_, path, "PyException_SetTraceback", lib.PyException_SetTraceback);
  resolve(lib.handle_, path, "PyLong_FromLongLong", lib.PyLong_FromLongLong);
  resolve(lib.handle_, path, "PyLong_AsLongLong", lib.PyLong_AsLongLong);
  resolve(lib.handle_, path, "PyErr_Clear", lib.PyErr_Clear);
  resolve(lib.handle_, path, "PyErr_Occurred", lib.PyErr_Occurred);
  resolve(lib.handle_, path, "PyEval_SaveThread", lib.PyEval_SaveThread);
  resolve(lib.handle_, path, "PyEval_RestoreThread", lib.PyEval_RestoreThread);
  return lib;
}

void* LibPython::main_function(const char* name) const {
  void* main = PyImport_AddModule("__main__");
  if (main == nullptr) return nullptr;
  void* dict = PyModule_GetDict(main);
  return dict == nullptr ? nullptr : PyDict_GetItemString(dict, name);
}

bool LibPython::set_int(void* dict, const char* name, long long value) const {
  void* object = PyLong_FromLongLong(value);
  if (object == nullptr) {
    PyErr_Clear();
    return false;
  }
  const bool ok = PyDict_SetItemString(dict, name, object) == 0;
  Py_DecRef(object);
  if (!ok) PyErr_Clear();
  return ok;
}

long long LibPython::get_int(void* dict, const char* name, long long fallback) const {
  void* object = PyDict_GetItemString(dict, name);  // borrowed
  if (object == nullptr) return fallback;
  const long long value = PyLong_AsLongLong(object);
  if (value == -1 && PyErr_Occurred() != nullptr) {  // not an int (a real -1 sets no error)
    PyErr_Clear();
    return fallback;
  }
  return value;
}

bool LibPython::call(void* function) const {
  void* result = PyObject_CallObject(function, nullptr);
  if (result == nullptr) {
    PyErr_Print();
    return false;
  }
  Py_DecRef(result);
  return true;
}

void LibPython::run_steps(void* begin, void* finish, void* failed, void* globals_dict) const {
  void* steps = PyObject_CallObject(begin, nullptr);
  if (steps == nullptr) {
    PyErr_Print();
    return;
  }
  void* value = nullptr;
  const ssize_t n = PyTuple_Size(steps);
  for (ssize_t i = 0; i < n; ++i) {
    void* step = PyTuple_GetItem(steps, i);
    void* code = step == nullptr ? nullptr : PyTuple_GetItem(step, 0);
    void* globals = step == nullptr ? nullptr : PyTuple_GetItem(step, 1);
    if (code == nullptr || globals == nullptr) {
      PyErr_Print();
      return;
    }
    if (value != nullptr) Py_DecRef(value);
    value = PyEval_EvalCode(code, globals, globals);
    if (value == nullptr) {
      void* type = nullptr;
      void* exception = nullptr;
      void* traceback = nullptr;
      PyErr_Fetch(&type, &exception, &traceback);
      PyErr_NormalizeException(&type, &exception, &traceback);
      if (exception != nullptr && traceback != nullptr) PyException_SetTraceback(exception, traceback);
      if (exception != nullptr) PyDict_SetItemString(globals_dict, "_MPES_ERROR", exception);
      for (void* ref : {type, exception, traceback, steps}) {
        if (ref != nullptr) Py_DecRef(ref);
      }
      call(failed);
      return;
    }
  }
  Py_DecRef(steps);
  if (value != nullptr) {
    PyDict_SetItemString(globals_dict, "_MPES_VALUE", value);
    Py_DecRef(value);
  }
  call(finish);
}

}  // namespace engine
