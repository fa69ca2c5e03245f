// Plugins: shared libraries of stages that a pipeline lists ("plugins": [...]) or the CLI loads
// (--plugin). A plugin registers its stages through the same API as the built-in ones
// (StageRegistry::add), from the one entry point SL_PLUGIN defines, and carries the streamline
// ABI it was compiled against: a plugin built for another version or standard library is
// refused with a clear error and never called. `streamline stages` shows where each stage came
// from. A plugin links nothing of streamline: the engine's symbols resolve against the program
// that loads it (streamline, sl_tests: built with exported symbols).
//
//   // my_stages.cpp, built as a MODULE library against find_package(streamline)
//   #include "graph/plugin.h"
//   void register_my_stages(sl::StageRegistry& r) { r.add(...); }
//   SL_PLUGIN(register_my_stages)
#pragma once
#include <string>
#include <vector>

#include "graph/registry.h"

#ifndef SL_VERSION
#error "SL_VERSION is defined by the streamline build (or its CMake package)"
#endif

#define SL_PLUGIN_STR2(x) #x
#define SL_PLUGIN_STR(x) SL_PLUGIN_STR2(x)
// What must match between a plugin and the program loading it: the version (the headers' types)
// and the C++ standard library's ABI.
#define SL_PLUGIN_ABI                                                                              \
  "streamline " SL_VERSION " (C++ " SL_PLUGIN_STR(__cplusplus) ", libstdc++ cxx11 ABI " SL_PLUGIN_STR( \
      _GLIBCXX_USE_CXX11_ABI) ")"

#define SL_PLUGIN(register_fn)                                                            \
  extern "C" __attribute__((visibility("default"))) const char* sl_plugin_abi() { return SL_PLUGIN_ABI; } \
  extern "C" __attribute__((visibility("default"))) void sl_plugin_register(::sl::StageRegistry& r) {    \
    register_fn(r);                                                                       \
  }

namespace sl {

// This program's ABI string (what a plugin's sl_plugin_abi() must return).
std::string plugin_abi();

// Loads the shared library at `path` and registers its stages (their origin: the canonical
// path). Loading a file already loaded does nothing. Throws sl::Error naming the file and the
// reason: missing, not a loadable shared library (the loader's message), no sl_plugin_abi or
// sl_plugin_register entry point, another ABI, or an error its registration threw (a stage type
// registered twice, a schema without docs...).
void load_plugin(const std::string& path);

// The plugins loaded so far, by canonical path; whether `path` is one of them.
std::vector<std::string> loaded_plugins();
bool plugin_loaded(const std::string& path);

}  // namespace sl
