// The prox-function registry (include/proxc/prox_fn.h): a process-wide table
// of descriptors, keyed by name and by 64-bit id, like the black boxes'.
// Plain C++, no other dependency, so that ahead-of-time programs link it
// through libproxc_runtime.
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "blackbox/identifier.h"
#include "proxc/prox_fn.h"

namespace {

struct Entry {
  std::string name;
  std::vector<std::string> param_names;
  std::vector<const char*> param_name_ptrs;
  std::vector<double> param_defaults;
  proxc_prox_fn fn;
};

struct Registry {
  std::mutex mutex;
  // Entries are never removed: pointers handed out stay valid.
  std::map<std::string, std::unique_ptr<Entry>> by_name;
  std::map<uint64_t, Entry*> by_id;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: callable from any static destructor
  return *r;
}

bool valid_params(const proxc_prox_fn* fn) {
  if (fn->num_params < 0 || fn->num_params > PROXC_PROX_FN_MAX_PARAMS) return false;
  if (fn->num_params > 0 && (!fn->param_names || !fn->param_defaults)) return false;
  static const std::set<std::string> reserved = {"alpha", "beta", "b", "c", "gamma", "d"};
  std::set<std::string> seen;
  for (int i = 0; i < fn->num_params; ++i) {
    const char* n = fn->param_names[i];
    if (!proxc::internal::is_identifier(n) || reserved.count(n) || !seen.insert(n).second) return false;
    if (!std::isfinite(fn->param_defaults[i])) return false;
  }
  return true;
}

bool same(const Entry& e, const proxc_prox_fn* fn) {
  const proxc_prox_fn& o = e.fn;
  if (o.prox != fn->prox || o.value != fn->value || o.check != fn->check || o.user != fn->user ||
      o.num_params != fn->num_params) {
    return false;
  }
  for (int i = 0; i < fn->num_params; ++i) {
    if (e.param_names[static_cast<size_t>(i)] != fn->param_names[i] ||
        e.param_defaults[static_cast<size_t>(i)] != fn->param_defaults[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int proxc_register_prox_fn(const proxc_prox_fn* fn) {
  if (!fn || !proxc::internal::is_identifier(fn->name)) return 1;
  if (!fn->prox) return 2;
  if (!valid_params(fn)) return 4;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uint64_t id = proxc_prox_fn_id(fn->name);
  auto it = r.by_name.find(fn->name);
  if (it != r.by_name.end()) return same(*it->second, fn) ? 0 : 3;
  if (r.by_id.count(id)) return 3;  // a different name with the same id
  auto e = std::make_unique<Entry>();
  e->name = fn->name;
  for (int i = 0; i < fn->num_params; ++i) {
    e->param_names.emplace_back(fn->param_names[i]);
    e->param_defaults.push_back(fn->param_defaults[i]);
  }
  for (const std::string& n : e->param_names) e->param_name_ptrs.push_back(n.c_str());
  e->fn = *fn;
  e->fn.name = e->name.c_str();
  e->fn.param_names = e->param_name_ptrs.empty() ? nullptr : e->param_name_ptrs.data();
  e->fn.param_defaults = e->param_defaults.empty() ? nullptr : e->param_defaults.data();
  r.by_id[id] = e.get();
  r.by_name[e->name] = std::move(e);
  return 0;
}

extern "C" const proxc_prox_fn* proxc_find_prox_fn(const char* name) {
  if (!name) return nullptr;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : &it->second->fn;
}

extern "C" const proxc_prox_fn* proxc_find_prox_fn_by_id(uint64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_id.find(id);
  return it == r.by_id.end() ? nullptr : &it->second->fn;
}
