// The black-box operator registry (include/proxc/black_box.h): a process-wide
// table of descriptors, keyed by name and by 64-bit id. Plain C++, no other
// dependency, so that ahead-of-time programs link it through libproxc_runtime.
#include "proxc/black_box.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "blackbox/identifier.h"

namespace {

struct Entry {
  std::string name;
  proxc_black_box op;
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

thread_local std::string t_failure;

}  // namespace

extern "C" int proxc_register_black_box(const proxc_black_box* op) {
  if (!op || !proxc::internal::is_identifier(op->name)) return 1;
  if (!op->forward || !op->adjoint) return 2;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const uint64_t id = proxc_black_box_id(op->name);
  auto it = r.by_name.find(op->name);
  if (it != r.by_name.end()) {
    const proxc_black_box& o = it->second->op;
    const bool same = o.forward == op->forward && o.adjoint == op->adjoint && o.output_shape == op->output_shape &&
                      o.user == op->user && o.norm_bound == op->norm_bound;
    return same ? 0 : 3;
  }
  if (r.by_id.count(id)) return 3;  // a different name with the same id
  auto e = std::make_unique<Entry>();
  e->name = op->name;
  e->op = *op;
  e->op.name = e->name.c_str();
  r.by_id[id] = e.get();
  r.by_name[e->name] = std::move(e);
  return 0;
}

extern "C" const proxc_black_box* proxc_find_black_box(const char* name) {
  if (!name) return nullptr;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : &it->second->op;
}

extern "C" const proxc_black_box* proxc_find_black_box_by_id(uint64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.by_id.find(id);
  return it == r.by_id.end() ? nullptr : &it->second->op;
}

extern "C" const char* proxc_black_box_failure(void) { return t_failure.c_str(); }
extern "C" void proxc_black_box_set_failure(const char* message) { t_failure = message ? message : ""; }
extern "C" void proxc_black_box_clear_failure(void) { t_failure.clear(); }
