#include "frontend/plugin.h"

#include <dlfcn.h>

#include <mutex>

#include "proxc/black_box.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

// What the plugin being initialised registered, and its first failure.
struct Session {
  std::vector<std::string> names;
  std::string failure;
};
Session* g_session = nullptr;
std::mutex g_plugin_mutex;

int register_for_plugin(const proxc_black_box* op) {
  int rc = proxc_register_black_box(op);
  if (!g_session) return rc;  // called after proxc_plugin_init returned
  const std::string name = op && op->name ? op->name : "(null)";
  if (rc == 0) {
    g_session->names.push_back(name);
  } else if (g_session->failure.empty()) {
    g_session->failure = rc == 1   ? "the operator name \"" + name + "\" is not an identifier"
                         : rc == 2 ? "operator \"" + name + "\" lacks its forward or adjoint callback"
                                   : "operator \"" + name + "\" clashes with a registered one (the same name with "
                                     "other callbacks, or another name with the same 64-bit id)";
  }
  return rc;
}

}  // namespace

std::vector<std::string> load_plugin(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_plugin_mutex);
  // A path without a slash would search the library path; the user meant a file.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  user_assert(h) << path << ": cannot load the plugin: " << ::dlerror();
  using Init = int (*)(proxc_register_black_box_fn);
  auto init = reinterpret_cast<Init>(::dlsym(h, "proxc_plugin_init"));
  user_assert(init) << path << ": not a proxc plugin (it exports no proxc_plugin_init function)";
  Session s;
  struct Guard {
    explicit Guard(Session* s) { g_session = s; }
    ~Guard() { g_session = nullptr; }
  };
  int rc = 0;
  {
    Guard guard(&s);
    try {
      rc = init(register_for_plugin);
    } catch (...) {
      user_error << path << ": proxc_plugin_init threw an exception";
    }
  }
  user_assert(s.failure.empty()) << path << ": " << s.failure;
  user_assert(rc == 0) << path << ": proxc_plugin_init failed (returned " << rc << ")";
  return s.names;
}

}  // namespace proxc::internal
