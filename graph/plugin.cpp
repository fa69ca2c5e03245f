#include "graph/plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "graph/error.h"

namespace sl {

namespace {
std::mutex g_mu;
std::vector<std::string> g_loaded;
}  // namespace

std::string plugin_abi() { return SL_PLUGIN_ABI; }

std::vector<std::string> loaded_plugins() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_loaded;
}

bool plugin_loaded(const std::string& path) {
  std::error_code ec;
  const std::string canon = std::filesystem::canonical(path, ec).string();
  if (ec) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  return std::find(g_loaded.begin(), g_loaded.end(), canon) != g_loaded.end();
}

void load_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(path, "plugin not found (no such file)");
  const std::string canon = fs::canonical(path, ec).string();
  StageRegistry& reg = StageRegistry::instance();  // the built-in stages first
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& p : g_loaded)
    if (p == canon) return;
  // RTLD_NOW: an engine symbol the program does not provide is an error here, not a crash later.
  void* h = ::dlopen(canon.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    fail(path, std::string("cannot load the plugin: ") + (why ? why : "unknown reason"));
  }
  // Never dlclose()d: its stages' code and schemas stay in use until the process ends.
  using AbiFn = const char* (*)();
  using RegisterFn = void (*)(StageRegistry&);
  auto abi = reinterpret_cast<AbiFn>(::dlsym(h, "sl_plugin_abi"));
  auto add = reinterpret_cast<RegisterFn>(::dlsym(h, "sl_plugin_register"));
  // SL_REGISTER_STAGES objects of the library were queued while it loaded, not run: they run
  // here, after the checks, like its entry point.
  std::vector<StageRegisterFn> queued = take_late_registrars();
  if (!abi || !add)
    fail(path, "not a streamline plugin: no sl_plugin_abi/sl_plugin_register entry point (define one with "
               "SL_PLUGIN(your_register_function) from graph/plugin.h)");
  const std::string theirs = abi();
  if (theirs != plugin_abi())
    fail(path, "built for " + theirs + ", but this program is " + plugin_abi() +
                   "; rebuild the plugin against this streamline");
  reg.set_origin(canon);
  try {
    for (StageRegisterFn fn : queued) fn(reg);
    add(reg);
  } catch (const std::exception& e) {
    reg.set_origin("built-in");
    fail(path, std::string("registering its stages failed: ") + e.what());
  }
  reg.set_origin("built-in");
  g_loaded.push_back(canon);
}

}  // namespace sl
