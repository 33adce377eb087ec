// The on-disk cache of compiled pipelines: shared objects keyed by structure,
// target, schedule and build, against one shared Halide runtime per target
// (backend_impl.h).
#include <sys/resource.h>
#include <sys/stat.h>

#include <cerrno>

#include "halide/backend_impl.h"

namespace proxc::internal {

thread_local std::string g_halide_error;

namespace {
void record_halide_error(void*, const char* msg) { g_halide_error += msg; }
}  // namespace

// Opens a cached pipeline; nothing (and a warning) when it is unusable.
bool load_library(const std::string& path, int expected_args, LoadedLibrary* out) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    warn(std::string("cannot load the cached pipeline ") + path + ": " + ::dlerror());
    return false;
  }
  auto fn = reinterpret_cast<ArgvFunction>(::dlsym(h, "proxc_cached_argv"));
  auto meta = reinterpret_cast<const halide_filter_metadata_t* (*)()>(::dlsym(h, "proxc_cached_metadata"));
  auto set_malloc =
      reinterpret_cast<halide_malloc_t (*)(halide_malloc_t)>(::dlsym(h, "halide_set_custom_malloc"));
  auto set_free = reinterpret_cast<halide_free_t (*)(halide_free_t)>(::dlsym(h, "halide_set_custom_free"));
  auto set_error = reinterpret_cast<halide_error_handler_t (*)(halide_error_handler_t)>(
      ::dlsym(h, "halide_set_error_handler"));
  if (!fn || !meta || meta()->num_arguments != expected_args) {
    warn("the cached pipeline " + path + " does not have the expected entry points; compiling again");
    ::dlclose(h);
    return false;
  }
  // Halide links into a pipeline only the runtime it calls: one that never
  // allocates nor fails (a few scalars of its parameters) has no setters.
  if (set_malloc) set_malloc(raw_malloc);
  if (set_free) set_free(raw_free);
  if (set_error) set_error(record_halide_error);
  out->handle = h;
  out->fn = fn;
  out->num_arguments = meta()->num_arguments;
  return true;
}

namespace {

// The checksum a cache entry's sidecar records: of its file name (so that two
// entries swapped do not pass) and its bytes.
std::string entry_checksum(const std::string& so, const std::string& bytes) {
  return content_hash(std::filesystem::path(so).filename().string() + "|" + bytes);
}

}  // namespace

bool verify_cache_entry(const std::string& so) {
  std::string why, sum_why;
  if (!is_trusted_file(so, &why)) {
    if (why.empty()) return false;  // not there
  } else if (!is_trusted_file(so + ".sum", &sum_why)) {
    why = sum_why.empty() ? "it has no checksum" : "its checksum file " + so + ".sum: " + sum_why;
  } else {
    try {
      if (read_file(so + ".sum") != entry_checksum(so, read_file(so))) {
        why = "its checksum does not match (truncated, damaged or swapped)";
      }
    } catch (const UserError& e) {
      why = e.what();
    }
  }
  if (why.empty()) return true;
  // Not removed: another process may be writing this entry right now (its
  // checksum first, then the file); the rebuild replaces both.
  warn("the cache entry " + so + " is unusable: " + why + "; building it again");
  return false;
}

namespace {

// The compiler driver that links cache entries: $CXX, else c++.
std::string linker_driver() {
  const char* cxx = std::getenv("CXX");
  return cxx && *cxx ? cxx : "c++";
}

// What the cache folder `dir` may be used for: folder_trust's answer, and
// read-only under a file size limit (file_size_limit_below_objects).
FolderTrust cache_trust(const std::string& dir) {
  FolderTrust t = folder_trust(dir);
  const std::string limit = t.writable ? file_size_limit_below_objects() : "";
  if (!limit.empty()) {
    t.writable = false;
    t.why = limit + ", and writing a compiled pipeline past it would end the process";
  }
  return t;
}

}  // namespace

bool cache_linker_available() {
  // Asked through the shell that links (link_shared): its PATH, a $CXX
  // with a wrapper or arguments, quoting, all as the link will see them.
  static const bool found = [] {
    const std::string driver = linker_driver();
    std::string log;
    if (run_command(driver + " --version", &log) == 0) return true;
    const char* cxx = std::getenv("CXX");
    warn("no C++ compiler to link compiled pipelines into the on-disk cache (" +
         (cxx && *cxx ? "$CXX, " + driver + "," : driver) +
         " does not run): each process compiles its pipelines again; install one (Debian: apt-get install g++) "
         "or set CXX, or say --cache-dir off");
    return false;
  }();
  return found;
}

// Links objects into the shared object `so` (published whole with its
// checksum sidecar, both made in `scratch`).
bool link_shared(const ScratchFolder& scratch, const std::string& so, const std::string& inputs,
                 const std::string& extra) {
  if (scratch.path().empty()) return false;
  const std::string tmp = scratch.file(std::filesystem::path(so).filename().string());
  std::string cmd = linker_driver() + " -shared -Wl,-Bsymbolic " + extra + " -o " + shell_quote(tmp) + " " +
                    inputs + " -lpthread -ldl";
  std::string log;
  if (run_command(cmd, &log) != 0) {
    warn("cannot link a cached pipeline (" + cmd + "): " + log);
    return false;
  }
  std::string bytes;
  try {
    bytes = read_file(tmp);
  } catch (const UserError& e) {
    warn(std::string("cannot read a linked cache entry: ") + e.what());
    return false;
  }
  if (!publish_bytes(scratch, entry_checksum(so, bytes), so + ".sum")) {
    warn("cannot write the cache entry's checksum " + so + ".sum");
    return false;
  }
  return publish_file(tmp, so);
}

// The Halide runtime (allocation, thread pool, errors) of target t, compiled
// once into the cache folder as runtime-<hash>.so and shared by the cached
// pipelines of that target, which are compiled without one: every pipeline
// would otherwise compile it again (1.4 s alone, in a fresh process).
// Its file name, or "" when it cannot be built (pipelines then run
// JIT-compiled instead).
std::string build_shared_runtime(const std::string& dir, const Halide::Target& t) {
  namespace fs = std::filesystem;
  std::string hash = content_hash(std::string(kBuildId) + "|" + t.to_string());
  hash = hash.substr(hash.find(':') + 1, 24);  // hex digits only: the name is also the soname
  const std::string name = "runtime-" + hash + ".so";
  const std::string so = (fs::path(dir) / name).string();
  const bool writable = cache_trust(dir).writable && cache_linker_available();
  // One process builds it; the others wait for it and load it.
  std::unique_ptr<FileLock> lock;
  if (writable) lock = std::make_unique<FileLock>(so + ".lock");
  if (verify_cache_entry(so)) return name;
  if (!writable) return "";
  ScratchFolder scratch(dir);
  if (scratch.path().empty()) return "";
  const std::string obj = scratch.file("runtime.o");
  try {
    Halide::compile_standalone_runtime(obj, t);
  } catch (const Halide::Error&) {
    return "";
  }
  return link_shared(scratch, so, shell_quote(obj), "-Wl,-soname," + name) ? name : "";
}

// The shared runtime of (dir, t), built at most once per process and on a
// thread of its own: a first compile into an empty folder compiles the
// runtime and its pipeline at once, on two cores.
std::shared_future<std::string> shared_runtime(const std::string& dir, const Halide::Target& t) {
  static std::mutex m;
  static std::map<std::string, std::shared_future<std::string>> started;
  std::lock_guard<std::mutex> lock(m);
  std::shared_future<std::string>& f = started[dir + "|" + t.to_string()];
  // Built before, and the file since removed (the folder emptied): again.
  if (f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready && !f.get().empty() &&
      !std::filesystem::exists(std::filesystem::path(dir) / f.get())) {
    f = {};
  }
  if (!f.valid()) f = std::async(std::launch::async, build_shared_runtime, dir, t).share();
  return f;
}

// Compiles L into <dir>/<hash>.so (written whole or not at all), against the
// folder's shared runtime. False and a warning when it cannot (no C++
// compiler, a read-only folder).
bool compile_to_cache(hl::Lowered& L, const Halide::Target& t, const std::string& so_path,
                      bool trusted_schedule) {
  namespace fs = std::filesystem;
  // Without a linker the object would be compiled for nothing, then again by the JIT.
  if (!cache_linker_available()) return false;
  const std::string dir = fs::path(so_path).parent_path().string();
  std::shared_future<std::string> runtime = shared_runtime(dir, t);
  // A folder of this compile's own: no other process or user can plant a
  // name in it, and two pipelines compiling at once each have theirs.
  ScratchFolder scratch(dir);
  if (scratch.path().empty()) return false;
  const std::string obj = scratch.file("pipeline.o");
  // Halide errors propagate: the JIT would fail the same way.
  // No bounds-query code either: the backend always passes whole buffers
  // (less code for LLVM to compile). No runtime: the folder's shared one.
  // No assertions unless a black box may fail (its extern stage's result is
  // checked by one) or an autoscheduler made the schedule: the backend
  // checks every buffer's shape before a run (StepInputCheck) and allocates
  // the outputs itself, so the pipeline's own checks of its arguments are
  // code for LLVM that never fails (a third of a superresolution pipeline's
  // compile) with proxc's schedule; an autoscheduler's may read out of
  // bounds (Adams2019 on a deconvolution's setup), which the checks catch:
  // the run then falls back to the default schedule (Part::run).
  Halide::Target pt = t.with_feature(Halide::Target::NoBoundsQuery).with_feature(Halide::Target::NoRuntime);
  if (L.graph->black_boxes().empty() && L.graph->prox_fns().empty() && trusted_schedule) pt = pt.with_feature(Halide::Target::NoAsserts);
  // A compiler that runs and cannot link (no linker behind it): known once
  // the runtime failed, and the object would go unused.
  if (runtime.wait_for(std::chrono::seconds(0)) == std::future_status::ready && runtime.get().empty()) return false;
  L.pipeline.compile_to_object(obj, L.graph->arguments(), "proxc_cached", pt);
  if (runtime.get().empty()) return false;  // no shared runtime (no C++ compiler?): the JIT instead
  std::string inputs = shell_quote(obj) + " " + shell_quote((fs::path(dir) / runtime.get()).string()) +
                       " -Wl,-rpath,'$ORIGIN'";
  return link_shared(scratch, so_path, inputs, "");
}

// Keeps the cache folder under 1 GiB: the least recently written entries go first.
void prune_cache(const std::string& dir) {
  namespace fs = std::filesystem;
  constexpr uintmax_t kLimit = uintmax_t{1} << 30, kTarget = uintmax_t{3} << 28;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  uintmax_t total = 0;
  std::error_code ec;
  remove_stale_scratch(dir);  // what interrupted processes left, an hour old
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    if (!f.is_regular_file(ec) || f.is_symlink(ec)) continue;
    // Shared runtimes stay: every cached pipeline of their target needs one.
    if (f.path().extension() != ".so" || f.path().filename().string().rfind("runtime-", 0) == 0) continue;
    total += f.file_size(ec);
    entries.push_back({f.last_write_time(ec), f.path()});
  }
  if (total <= kLimit) return;
  std::sort(entries.begin(), entries.end());
  for (const auto& [t, path] : entries) {
    if (total <= kTarget) break;
    uintmax_t size = fs::file_size(path, ec);
    fs::path meta = path;
    meta.replace_extension(".schedule");
    fs::remove(path, ec);
    fs::remove(meta, ec);
    fs::remove(path.string() + ".sum", ec);
    fs::remove(path.string() + ".lock", ec);
    total -= std::min(total, size);
  }
}

FolderTrust prepare_cache_folder(const std::string& dir) {
  FolderTrust trust = cache_trust(dir);
  if (trust.exists) return trust;
  // Made this user's alone, whatever the umask: a cache others may write is
  // one they could fill with code this process would load.
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(dir).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) trust = cache_trust(dir);
  return trust;
}

std::string cache_runtime(const std::string& dir, const Halide::Target& t) { return shared_runtime(dir, t).get(); }

std::string halide_cache_dir(const HalideOptions& options) {
  std::string d = options.cache_dir;
  if (d.empty()) {
    const char* env = std::getenv("PROXC_CACHE_DIR");
    if (env && *env) {
      d = env;
    } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
      d = std::string(xdg) + "/proxc";
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      d = std::string(home) + "/.cache/proxc";
    }
  }
  return d == "off" ? "" : d;
}

}  // namespace proxc::internal
