// Shared libraries that are not good plugins, for the loader's errors (tests/graph/plugin_test.cpp):
// SL_BROKEN_OLD_ABI claims another streamline version (and has a SL_REGISTER_STAGES object, which
// must not run); SL_BROKEN_NO_ENTRY has no entry point;
// SL_BROKEN_THROWS registers a stage type that already exists; SL_BROKEN_OTHER_HEADERS is this
// version built against other headers (a checkout of another commit).
#include "graph/plugin.h"

#if defined(SL_BROKEN_OLD_ABI)
// Also registers a stage the way built-in files do: that must not run for a refused plugin.
#include "graph/stage.h"
static void register_stowaway(sl::StageRegistry& r) {
  sl::StageSchema s = r.get("center");
  s.type = "stowaway";
  r.add(std::move(s));
}
SL_REGISTER_STAGES(register_stowaway);
extern "C" __attribute__((visibility("default"))) const char* sl_plugin_abi() { return "streamline 0.0.1 (C++ 201703, libstdc++ cxx11 ABI 1)"; }
extern "C" __attribute__((visibility("default"))) void sl_plugin_register(sl::StageRegistry&) {}
#elif defined(SL_BROKEN_NO_ENTRY)
extern "C" __attribute__((visibility("default"))) int sl_something_else() { return 1; }
#elif defined(SL_BROKEN_THROWS)
#include "graph/stage.h"
static void register_again(sl::StageRegistry& r) {
  sl::StageSchema s = r.get("batch");  // a built-in type: registering it again is refused
  r.add(std::move(s));
}
SL_PLUGIN(register_again)
#elif defined(SL_BROKEN_OTHER_HEADERS)
extern "C" __attribute__((visibility("default"))) const char* sl_plugin_abi() {
  return "streamline " SL_VERSION " (headers 000000000000, C++ " SL_PLUGIN_STR(__cplusplus) ", libstdc++ cxx11 ABI " SL_PLUGIN_STR(
      _GLIBCXX_USE_CXX11_ABI) ")";
}
extern "C" __attribute__((visibility("default"))) void sl_plugin_register(sl::StageRegistry&) {}
#endif
