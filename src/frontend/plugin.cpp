#include "frontend/plugin.h"

#include <dlfcn.h>

#include <mutex>

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"
#include "nlm/nlm.h"
#include "support/error.h"
#include "support/names.h"

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

int register_prox_for_plugin(const proxc_prox_fn* fn) {
  int rc = proxc_register_prox_fn(fn);
  if (!g_session) return rc;
  const std::string name = fn && fn->name ? fn->name : "(null)";
  if (rc == 0 && NameScope::is_reserved(name)) {
    if (g_session->failure.empty()) {
      g_session->failure = "prox function \"" + name + "\" has a name the language reserves (a built-in "
                           "function, operator or keyword); choose another name";
    }
    return 3;
  }
  if (rc == 0) {
    g_session->names.push_back(name);
  } else if (g_session->failure.empty()) {
    g_session->failure = rc == 1   ? "the prox function name \"" + name + "\" is not an identifier"
                         : rc == 2 ? "prox function \"" + name + "\" lacks its prox callback"
                         : rc == 4 ? "prox function \"" + name + "\" declares bad parameters (more than " +
                                         std::to_string(PROXC_PROX_FN_MAX_PARAMS) +
                                         ", a name that is not an identifier, repeated or one of alpha, beta, b, c, "
                                         "gamma, d, or a default that is not finite)"
                                   : "prox function \"" + name + "\" clashes with a registered one (the same name "
                                     "with other callbacks, or another name with the same 64-bit id)";
  }
  return rc;
}

}  // namespace

void register_builtin_prox_fns() {
  static const int rc = proxc_nlm_register(proxc_register_prox_fn);
  internal_assert(rc == 0) << "registering patch_NLM failed (" << rc << ")";
}

std::vector<std::string> load_plugin(const std::string& path) {
  register_builtin_prox_fns();  // first: a plugin's function of the same name then clashes
  std::lock_guard<std::mutex> lock(g_plugin_mutex);
  // A path without a slash would search the library path; the user meant a file.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  user_assert(h) << path << ": cannot load the plugin: " << ::dlerror();
  using Init = int (*)(proxc_register_black_box_fn);
  using InitProx = int (*)(proxc_register_prox_fn_fn);
  auto init = reinterpret_cast<Init>(::dlsym(h, "proxc_plugin_init"));
  auto init_prox = reinterpret_cast<InitProx>(::dlsym(h, "proxc_plugin_init_prox"));
  user_assert(init || init_prox) << path
                                 << ": not a proxc plugin (it exports neither proxc_plugin_init nor "
                                    "proxc_plugin_init_prox)";
  Session s;
  struct Guard {
    explicit Guard(Session* s) { g_session = s; }
    ~Guard() { g_session = nullptr; }
  };
  int rc = 0;
  const char* which = "proxc_plugin_init";
  {
    Guard guard(&s);
    try {
      if (init) rc = init(register_for_plugin);
      if (rc == 0 && s.failure.empty() && init_prox) {
        which = "proxc_plugin_init_prox";
        rc = init_prox(register_prox_for_plugin);
      }
    } catch (...) {
      user_error << path << ": " << which << " threw an exception";
    }
  }
  user_assert(s.failure.empty()) << path << ": " << s.failure;
  user_assert(rc == 0) << path << ": " << which << " failed (returned " << rc << ")";
  return s.names;
}

}  // namespace proxc::internal
