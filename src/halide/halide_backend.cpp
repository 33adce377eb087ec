#include "halide/halide_backend.h"

#include <Halide.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <sstream>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <future>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include <dlfcn.h>
#include <unistd.h>

#include "fft/fft.h"
#include "halide/black_box_extern.h"
#include "halide/fft_extern.h"
#include "halide/lower.h"
#include "support/blocks.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

namespace {

std::atomic<int> g_compiles{0};
std::atomic<int> g_cache_loads{0};

using halide_ops::Graph;

Halide::Target parse_target(const std::string& s) {
  if (s == "host") return Graph::with_default_features(Halide::get_jit_target_from_environment());
  user_assert(Halide::Target::validate_target_string(s)) << "--target: '" << s << "' is not a Halide target string";
  return Graph::with_default_features(Halide::Target(s));
}

std::vector<int> halide_dims(const Shape& s) {
  std::vector<int> d;
  for (auto it = s.rbegin(); it != s.rend(); ++it) d.push_back(static_cast<int>(*it));
  return d;
}

Halide::Buffer<float> wrap(const Array& a) {
  float* p = const_cast<float*>(a.data.data());
  if (a.shape.empty()) return Halide::Buffer<float>::make_scalar(p);
  return Halide::Buffer<float>(p, halide_dims(a.shape));
}

// Root buffers of a pipeline are allocated on every run; fresh pages cost a
// page fault each, which dominated the per-iteration time. They come from the
// block store (support/blocks.h), which keeps freed blocks for the next run
// and backs large ones with huge pages.
constexpr size_t kHeader = 128;  // keeps Halide's alignment and stores the size

void* cached_malloc(Halide::JITUserContext*, size_t n) {
  void* p = nullptr;
  if (n > SIZE_MAX - kHeader) return nullptr;
  try {
    p = allocate_block(n + kHeader);
  } catch (const std::bad_alloc&) {
    return nullptr;  // Halide reports the failed allocation
  }
  *static_cast<size_t*>(p) = n;
  return static_cast<char*>(p) + kHeader;
}

void cached_free(Halide::JITUserContext*, void* ptr) {
  if (!ptr) return;
  void* p = static_cast<char*>(ptr) - kHeader;
  free_block(p, *static_cast<size_t*>(p) + kHeader);
}

void* raw_malloc(void*, size_t n) { return cached_malloc(nullptr, n); }
void raw_free(void*, void* p) { cached_free(nullptr, p); }

// ---- Schedules ----

struct Autoscheduler {
  const char* option;  // --schedule value
  const char* name;    // its registered name
  const char* plugin;  // its library ("" when this build has none)
};

#ifndef PROXC_PLUGIN_MULLAPUDI2016
#define PROXC_PLUGIN_MULLAPUDI2016 ""
#endif
#ifndef PROXC_PLUGIN_ADAMS2019
#define PROXC_PLUGIN_ADAMS2019 ""
#endif
#ifndef PROXC_PLUGIN_LI2018
#define PROXC_PLUGIN_LI2018 ""
#endif

const Autoscheduler kAutoschedulers[] = {
    {"mullapudi2016", "Mullapudi2016", PROXC_PLUGIN_MULLAPUDI2016},
    {"adams2019", "Adams2019", PROXC_PLUGIN_ADAMS2019},
    {"li2018", "Li2018", PROXC_PLUGIN_LI2018},
};

const Autoscheduler* find_autoscheduler(const std::string& s) {
  for (const Autoscheduler& a : kAutoschedulers) {
    if (s == a.option) return &a;
  }
  return nullptr;
}

void warn(const std::string& what) { std::fprintf(stderr, "proxc: warning: %s\n", what.c_str()); }

// How warnings name a step program.
std::string program_label(const StepProgram& p) { return p.name.empty() ? "a step program" : p.name; }

// Warns that an autoscheduler's schedule did not work (`head` says how;
// `why`: Halide's message) and the default schedule is used instead.
void warn_schedule_fallback(const std::string& head, std::string why) {
  while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
  warn(head + " (" + why + "); using the default schedule");
}

// The plugin library of an autoscheduler: in $PROXC_HALIDE_PLUGIN_DIR when
// set (a Halide built elsewhere), else where Debian's Halide put it.
std::string plugin_path(const Autoscheduler& a) {
  const char* dir = std::getenv("PROXC_HALIDE_PLUGIN_DIR");
  if (dir && *dir) return std::string(dir) + "/libautoschedule_" + a.option + ".so";
  return a.plugin;
}

// Lowers `p` with the schedule asked for. An autoscheduler that fails (or is
// missing) leaves the default schedule and a warning; *used says which ran.
hl::Lowered lower_scheduled(const StepProgram& p, const std::string& schedule, const Halide::Target& t,
                            std::string* used) {
  *used = "default";
  const Autoscheduler* as = find_autoscheduler(schedule);
  if (!as) return hl::lower(p);
  std::string why;
  const std::string plugin = plugin_path(*as);
  hl::Lowered L = hl::lower(p, halide_ops::Schedule::None);
  if (!L.spectra_sources.empty() || !L.otf_sources.empty()) {
    why = "Halide 14's autoschedulers cannot schedule around the FFT extern stage of this pipeline";
  } else if (!L.graph->black_boxes().empty()) {
    // An autoscheduler may call the extern stage per tile, from several
    // threads: each call would run the user's whole operator.
    why = "the pipeline calls black-box operators, which must run once on whole arrays";
  } else if (plugin.empty() || !std::filesystem::exists(plugin)) {
    why = "its plugin " + (plugin.empty() ? std::string("libautoschedule_") + as->option + ".so" : plugin) +
          " is not installed (libhalide14-0-dev ships it)";
  } else {
    // Adams2019's beam search takes minutes per pipeline; greedy (beam 1)
    // unless the user sets HL_BEAM_SIZE.
    if (std::string(as->option) == "adams2019") ::setenv("HL_BEAM_SIZE", "1", 0);
    try {
      L.graph->set_estimates(L.extent_values, L.scalar_values);
      L.graph->auto_schedule(plugin, as->name, t);
      L.pipeline = L.graph->pipeline();
      *used = schedule;
      return L;
    } catch (const Halide::Error& e) {
      why = e.what();
    }
  }
  warn_schedule_fallback("--schedule " + schedule + " failed for " + program_label(p), why);
  return hl::lower(p);
}

// ---- The on-disk cache ----

constexpr const char* kBuildId = "proxc " __DATE__ " " __TIME__ " halide " PROXC_HALIDE_LIBRARY;

Halide::Target aot_target(const std::string& s) {
  if (s == "host") return Graph::with_default_features(Halide::get_host_target());
  return parse_target(s);
}

using ArgvFunction = int (*)(void**);

struct LoadedLibrary {
  void* handle = nullptr;
  ArgvFunction fn = nullptr;
  int num_arguments = 0;
};

thread_local std::string g_halide_error;
void record_halide_error(void*, const char* msg) { g_halide_error += msg; }

// Opens a cached pipeline; nothing (and a warning) when it is unusable.
bool load_library(const std::string& path, int expected_args, LoadedLibrary* out) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    warn(std::string("cannot load the cached pipeline ") + path + ": " + ::dlerror());
    return false;
  }
  auto fn = reinterpret_cast<ArgvFunction>(::dlsym(h, "proxc_cached_argv"));
  auto meta = reinterpret_cast<const halide_filter_metadata_t* (*)()>(::dlsym(h, "proxc_cached_metadata"));
  auto set_malloc = reinterpret_cast<halide_malloc_t (*)(halide_malloc_t)>(::dlsym(h, "halide_set_custom_malloc"));
  auto set_free = reinterpret_cast<halide_free_t (*)(halide_free_t)>(::dlsym(h, "halide_set_custom_free"));
  auto set_error =
      reinterpret_cast<halide_error_handler_t (*)(halide_error_handler_t)>(::dlsym(h, "halide_set_error_handler"));
  if (!fn || !meta || !set_malloc || !set_free || !set_error || meta()->num_arguments != expected_args) {
    warn("the cached pipeline " + path + " does not have the expected entry points; compiling again");
    ::dlclose(h);
    return false;
  }
  set_malloc(raw_malloc);
  set_free(raw_free);
  set_error(record_halide_error);
  out->handle = h;
  out->fn = fn;
  out->num_arguments = meta()->num_arguments;
  return true;
}

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

// Runs a shell command; its exit status, and its output in *log.
int run_command(const std::string& cmd, std::string* log) {
  int rc = -1;
  if (FILE* f = ::popen((cmd + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, f)) *log += buf;
    rc = ::pclose(f);
  }
  return rc;
}

// Links objects into the shared object `so` (written whole or not at all).
bool link_shared(const std::string& so, const std::string& inputs, const std::string& extra) {
  namespace fs = std::filesystem;
  std::string tmp = so + ".tmp" + std::to_string(::getpid());
  const char* cxx = std::getenv("CXX");
  std::string cmd = std::string(cxx && *cxx ? cxx : "c++") + " -shared -Wl,-Bsymbolic " + extra + " -o " +
                    shell_quote(tmp) + " " + inputs + " -lpthread -ldl";
  std::string log;
  std::error_code ec;
  if (run_command(cmd, &log) != 0) {
    fs::remove(tmp, ec);
    warn("cannot link a cached pipeline (" + cmd + "): " + log);
    return false;
  }
  fs::rename(tmp, so, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
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
  if (fs::exists(so)) return name;
  const std::string obj = so + ".tmp" + std::to_string(::getpid()) + ".o";
  std::error_code ec;
  try {
    Halide::compile_standalone_runtime(obj, t);
  } catch (const Halide::Error&) {
    fs::remove(obj, ec);
    return "";
  }
  const bool ok = link_shared(so, shell_quote(obj), "-Wl,-soname," + name);
  fs::remove(obj, ec);
  return ok ? name : "";
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
bool compile_to_cache(hl::Lowered& L, const Halide::Target& t, const std::string& so_path, bool trusted_schedule) {
  namespace fs = std::filesystem;
  const std::string dir = fs::path(so_path).parent_path().string();
  std::shared_future<std::string> runtime = shared_runtime(dir, t);
  // Unique per thread too: two pipelines may compile at once.
  static std::atomic<int> serial{0};
  std::string obj = so_path + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(serial++) + ".o";
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
  if (L.graph->black_boxes().empty() && trusted_schedule) pt = pt.with_feature(Halide::Target::NoAsserts);
  L.pipeline.compile_to_object(obj, L.graph->arguments(), "proxc_cached", pt);
  std::error_code ec;
  if (runtime.get().empty()) {  // no shared runtime (no C++ compiler?): the JIT instead
    fs::remove(obj, ec);
    return false;
  }
  std::string inputs = shell_quote(obj) + " " + shell_quote((fs::path(dir) / runtime.get()).string()) +
                       " -Wl,-rpath,'$ORIGIN'";
  const bool ok = link_shared(so_path, inputs, "");
  fs::remove(obj, ec);
  return ok;
}

// Keeps the cache folder under 1 GiB: the least recently written entries go first.
void prune_cache(const std::string& dir) {
  namespace fs = std::filesystem;
  constexpr uintmax_t kLimit = uintmax_t{1} << 30, kTarget = uintmax_t{3} << 28;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  uintmax_t total = 0;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
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
    total -= std::min(total, size);
  }
}

// A compiled pipeline shared by every program with the same structural key:
// JIT-compiled, or a shared object from the on-disk cache.
struct Entry {
  hl::Lowered lowered;  // the JIT pipeline (when `library` is not loaded)
  LoadedLibrary library;
  std::string schedule_used = "default";
  std::mutex mutex;  // binding parameters and running are not reentrant
  // Held while the entry is built: another thread wanting the same pipeline
  // waits for it instead of compiling it again.
  std::mutex build_mutex;
  bool built = false;
};

std::mutex g_cache_mutex;  // guards g_cache only: pipelines compile in parallel
std::map<std::string, std::shared_ptr<Entry>> g_cache;

void build_entry(Entry* e, const StepProgram& p, const HalideOptions& o, const Halide::Target& target,
                 const hl::Lowered& mine, const std::string& key);

// The compiled pipeline of p (lowered into *mine): this process's, the on-disk
// cache's, or compiled now. Thread-safe: different pipelines compile at once.
std::shared_ptr<Entry> compiled_entry(const StepProgram& p, const HalideOptions& o, const Halide::Target& target,
                                      hl::Lowered* mine) {
  *mine = hl::lower(p);
  std::string key = target.to_string() + "|" + o.schedule + "|" + mine->key;
  std::shared_ptr<Entry> e;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    std::shared_ptr<Entry>& slot = g_cache[key];
    if (!slot) slot = std::make_shared<Entry>();
    e = slot;
  }
  std::lock_guard<std::mutex> lock(e->build_mutex);
  if (!e->built) {
    // A build that throws leaves the entry unbuilt: the next use tries again.
    build_entry(e.get(), p, o, target, *mine, key);
    e->built = true;
  }
  return e;
}

void build_entry(Entry* e, const StepProgram& p, const HalideOptions& o, const Halide::Target& target,
                 const hl::Lowered& mine, const std::string& key) {
  const int nargs = static_cast<int>(mine.graph->arguments().size() + mine.outputs.size());
  std::string dir = halide_cache_dir(o);
  std::string stem;
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (::access(dir.c_str(), W_OK) == 0) {
      stem = (std::filesystem::path(dir) / content_hash(std::string(kBuildId) + "|" + key)).string();
    } else {
      static std::once_flag once;
      std::call_once(once, [&] { warn("the pipeline cache folder " + dir + " is not writable; compiling in memory"); });
    }
  }
  if (!stem.empty()) {
    if (std::filesystem::exists(stem + ".so") && load_library(stem + ".so", nargs, &e->library)) {
      std::string used = std::filesystem::exists(stem + ".schedule") ? read_file(stem + ".schedule") : "default";
      e->schedule_used = used;
      ++g_cache_loads;
      return;
    }
  }
  e->lowered = o.schedule == "default" ? mine : lower_scheduled(p, o.schedule, target, &e->schedule_used);
  ++g_compiles;
  auto build = [&] {
    // A fallback is not cached: the autoscheduler may work next time.
    if (!stem.empty() && e->schedule_used == o.schedule) {
      bool cached = false;
      try {
        cached = compile_to_cache(e->lowered, aot_target(o.target), stem + ".so", e->schedule_used == "default");
      } catch (const Halide::Error&) {
        // Not for the cache (a full disk?): the JIT below says what is wrong, if anything.
      }
      if (cached) {
        write_file_atomic(stem + ".schedule", e->schedule_used);
        prune_cache(dir);
        if (load_library(stem + ".so", nargs, &e->library)) return;
      }
    }
    std::map<std::string, Halide::JITExtern> externs = {
        {"proxc_circulant_solve", Halide::JITExtern(proxc_circulant_solve)},
        {"proxc_fft_conv", Halide::JITExtern(proxc_fft_conv)},
        {"proxc_black_box_stage", Halide::JITExtern(proxc_black_box_stage)}};
    e->lowered.pipeline.set_jit_externs(externs);
    e->lowered.pipeline.jit_handlers().custom_malloc = cached_malloc;
    e->lowered.pipeline.jit_handlers().custom_free = cached_free;
    e->lowered.pipeline.compile_jit(target);
  };
  try {
    build();
  } catch (const Halide::Error& err) {
    // An autoscheduler's schedule that does not compile (say, one that
    // unrolls a loop whose extent is a run-time size) falls back too.
    if (e->schedule_used == "default") throw;
    warn_schedule_fallback("the " + e->schedule_used + " schedule of " + program_label(p) + " does not compile", err.what());
    e->lowered = hl::lower(p);
    e->schedule_used = "default";
    build();
  }
}

// One compiled pipeline of a step program, and how to run it: binds a run's
// buffers and scalars to the pipeline's arguments.
class Part {
 public:
  // *fell_back is set when an autoscheduled pipeline of this part fails when
  // it runs and the default schedule runs instead (its backend's
  // schedule_used then says "default").
  Part(StepProgram p, std::shared_ptr<std::atomic<bool>> fell_back)
      : program_(std::move(p)), fell_back_(std::move(fell_back)) {}

  // Lowers and compiles (or finds) the pipeline; may run on another thread.
  void compile(const HalideOptions& o, const Halide::Target& t) {
    options_ = o;
    target_ = t;
    entry_ = compiled_entry(program_, o, t, &mine_);
    // |otf|² of each circulant solve's kernel, from this program's data.
    for (const auto& [k, dims] : mine_.spectra_sources) spectra_.emplace_back(k, dims, kernel_spectrum);
    for (const auto& [k, dims] : mine_.otf_sources) otfs_.emplace_back(k, dims, kernel_otf_array);
  }
  const std::string& schedule_used() const { return entry_->schedule_used; }

  // One run: inputs from `next` (by input name) or else from in.buffers;
  // array outputs into out->arrays, scalar ones into out->scalars.
  void run(const StepInputs& in, const std::map<std::string, const Array*>& next, StepOutputs* out_ptr) {
    StepOutputs& out = *out_ptr;
    halide_ops::Graph& G = *mine_.graph;
    // Every argument in the pipeline's order (Graph::arguments), then the outputs.
    std::vector<Halide::Buffer<>> keep;
    std::vector<void*> argv;
    std::vector<double> doubles;
    std::vector<float> floats;
    std::vector<int> ints;
    doubles.reserve(G.params().size() + mine_.outputs.size());
    floats.reserve(G.scalars().size());
    ints.reserve(G.extent_slots().size());
    auto buffer = [&](Halide::Buffer<> b) {
      keep.push_back(b);
      argv.push_back(keep.back().raw_buffer());
    };
    keep.reserve(G.inputs().size() + G.data().size() + G.spectra().size() + G.otfs().size() + mine_.outputs.size());
    for (auto& [name, ip] : G.inputs()) {
      auto it = next.find(name);
      buffer(wrap(it != next.end() ? *it->second : *in.buffers.at(name)));
    }
    const bool check = run_checks(in.params);
    for (auto& [name, param] : G.params()) {
      doubles.push_back(name == kCheckParam ? (check ? 1.0 : 0.0) : in.params.at(name));
      argv.push_back(&doubles.back());
    }
    for (auto& [i, ip] : G.data()) {
      const ExprNode* node = mine_.data_nodes[static_cast<size_t>(i)];
      auto it = in.data.find(node);
      buffer(wrap(it != in.data.end() ? *it->second : node->constant->array));
    }
    for (auto& [i, ip] : G.spectra()) buffer(wrap(spectra_[static_cast<size_t>(i)].current(in)));
    for (auto& [i, ip] : G.otfs()) buffer(wrap(otfs_[static_cast<size_t>(i)].current(in)));
    for (auto& [i, p] : G.scalars()) {
      floats.push_back(static_cast<float>(mine_.scalar_values[static_cast<size_t>(i)]));
      argv.push_back(&floats.back());
    }
    for (auto& [i, p] : G.extent_slots()) {
      ints.push_back(static_cast<int>(mine_.extent_values[static_cast<size_t>(i)]));
      argv.push_back(&ints.back());
    }
    std::vector<double> scalars(mine_.outputs.size());
    for (size_t i = 0; i < mine_.outputs.size(); ++i) {
      const hl::LoweredOutput& o = mine_.outputs[i];
      if (o.rank == 0) {
        buffer(Halide::Buffer<double>::make_scalar(&scalars[i]));
      } else {
        Array& a = out.arrays[o.name];
        if (a.shape != o.shape || a.data.size() != static_cast<size_t>(num_elements(o.shape))) a = Array(o.shape);
        buffer(wrap(a));
      }
    }
    // A user black box that fails is the user's error, reported as such.
    auto black_box_failure = [] {
      std::string why = proxc_black_box_failure();
      user_assert(why.empty()) << why;
    };
    // The run; "" or Halide's error. (Halide checks every buffer's bounds
    // before it computes anything: a run that fails so wrote nothing.)
    auto attempt = [&]() -> std::string {
      std::lock_guard<std::mutex> lock(entry_->mutex);
      proxc_black_box_clear_failure();
      if (entry_->library.fn) {
        g_halide_error.clear();
        int rc = entry_->library.fn(argv.data());
        if (rc != 0) black_box_failure();
        return rc == 0 ? std::string() : "the cached pipeline failed (" + std::to_string(rc) + "): " + g_halide_error;
      }
      try {
        run_jit(argv);
      } catch (const Halide::Error& e) {
        black_box_failure();
        return e.what();
      }
      return std::string();
    };
    std::string failed = attempt();
    if (!failed.empty() && entry_->schedule_used != "default") {
      // An autoscheduler's schedule that compiles but reads out of bounds
      // (Halide 14's Adams2019 on a deconvolution's Kᵀb setup): the default
      // schedule instead, as for one that does not compile.
      warn_schedule_fallback("the " + entry_->schedule_used + " schedule of " + program_label(program_) + " fails when it runs",
                             failed);
      HalideOptions fallback = options_;
      fallback.schedule = "default";
      entry_ = compiled_entry(program_, fallback, target_, &mine_);
      fell_back_->store(true);
      failed = attempt();
    }
    internal_assert(failed.empty()) << "the pipeline of " << program_.name << " failed: " << failed;
    for (size_t i = 0; i < mine_.outputs.size(); ++i) {
      if (mine_.outputs[i].rank == 0) out.scalars[mine_.outputs[i].name] = scalars[i];
    }
  }

 private:
  // Binds the arguments to the shared pipeline's parameters and realizes it.
  void run_jit(const std::vector<void*>& argv) {
    halide_ops::Graph& G = *entry_->lowered.graph;
    size_t k = 0;
    auto next_buffer = [&]() { return Halide::Buffer<>(*static_cast<halide_buffer_t*>(argv[k++])); };
    for (auto& [name, ip] : G.inputs()) ip.set(next_buffer());
    for (auto& [name, p] : G.params()) p.set(*static_cast<double*>(argv[k++]));
    for (auto& [i, ip] : G.data()) ip.set(next_buffer());
    for (auto& [i, ip] : G.spectra()) ip.set(next_buffer());
    for (auto& [i, ip] : G.otfs()) ip.set(next_buffer());
    for (auto& [i, p] : G.scalars()) p.set(*static_cast<float*>(argv[k++]));
    for (auto& [i, p] : G.extent_slots()) p.set(*static_cast<int*>(argv[k++]));
    std::vector<Halide::Buffer<>> outs;
    while (k < argv.size()) outs.push_back(next_buffer());
    entry_->lowered.pipeline.realize(Halide::Realization(outs));
  }

  StepProgram program_;
  std::shared_ptr<std::atomic<bool>> fell_back_;
  HalideOptions options_;
  Halide::Target target_;
  hl::Lowered mine_;
  std::shared_ptr<Entry> entry_;
  // A run-time argument computed on the host from a kernel: |otf|² for a
  // circulant solve, the otf for an FFT convolution. Replacement kernel data
  // changes it: recomputed once per replacement array.
  struct KernelArgument {
    const ExprNode* kernel;
    Shape dims;
    Array (*make)(const Array&, const Shape&);
    const Array* from;
    Array value;
    KernelArgument(const ExprNode* k, Shape d, Array (*m)(const Array&, const Shape&))
        : kernel(k), dims(std::move(d)), make(m), from(&k->constant->array), value(m(*from, dims)) {}
    const Array& current(const StepInputs& in) {
      auto it = in.data.find(kernel);
      const Array* data = it != in.data.end() ? it->second : &kernel->constant->array;
      if (data != from) {
        value = make(*data, dims);
        from = data;
      }
      return value;
    }
  };
  std::vector<KernelArgument> spectra_, otfs_;
};

// A step program as one pipeline, or, when it has a convergence check, as
// two (split_check): the iteration, and the check that reads the
// iteration's results. The two compile at once, on two threads (LLVM's code
// generation is most of a compile, and the check's reductions were more than
// half of one pipeline's code); a run without a check runs only the first.
class HalideStep : public CompiledStep {
 public:
  // The parts, not compiled yet: compile_jobs() lists their compiles, which
  // HalideBackend runs at once with other steps' (compile_many).
  HalideStep(const StepProgram& p, const std::shared_ptr<std::atomic<bool>>& fell_back)
      : check_inputs_(p), check_outputs_(p.check_outputs()) {
    p.verify();
    CheckSplit split = split_check(p);
    if (check_outputs_.empty() || recomputes_an_iteration(split.check)) {
      iteration_ = std::make_unique<Part>(p, fell_back);
      return;
    }
    next_inputs_ = split.next_inputs;
    iteration_ = std::make_unique<Part>(std::move(split.iteration), fell_back);
    check_ = std::make_unique<Part>(std::move(split.check), fell_back);
  }

  std::vector<std::function<void()>> compile_jobs(const HalideOptions& o, const Halide::Target& t) {
    std::vector<std::function<void()>> jobs = {[this, &o, &t] { iteration_->compile(o, t); }};
    if (check_) jobs.push_back([this, &o, &t] { check_->compile(o, t); });
    return jobs;
  }
  // The schedule its parts used (after the compiles).
  std::string schedule_used() const {
    const std::string& a = iteration_->schedule_used();
    return !check_ || a == check_->schedule_used() ? a : "default";
  }

  StepOutputs run(const StepInputs& in) override {
    StepOutputs out;
    run_into(in, &out);
    return out;
  }

  void run_into(const StepInputs& in, StepOutputs* out) override {
    check_inputs_(in);
    iteration_->run(in, {}, out);
    if (!run_checks(in.params)) {
      // Outputs a run without a check did not compute are absent (as in the emulator).
      for (const std::string& name : check_outputs_) out->scalars.erase(name);
    } else if (check_) {
      std::map<std::string, const Array*> next;
      for (const auto& [output, input] : next_inputs_) next[input] = &out->arrays.at(output);
      check_->run(in, next, out);
    }
  }

 private:
  // Whether a check program computes a prox or a solve: it then recomputes
  // iterations the program does not output (those --fuse N unrolls before
  // its last one), and is better left gated in the iteration's pipeline.
  static bool recomputes_an_iteration(const StepProgram& check) {
    for (const Step& n : check.nodes()) {
      if (n->kind == StepKind::Prox || n->kind == StepKind::CirculantSolve) return true;
    }
    return false;
  }

  StepInputCheck check_inputs_;
  std::set<std::string> check_outputs_;
  std::unique_ptr<Part> iteration_, check_;
  std::map<std::string, std::string> next_inputs_;
};

// Runs the jobs at once, one thread each (the first on the caller's), and
// rethrows the first failure once all have finished.
void run_at_once(const std::vector<std::function<void()>>& jobs) {
  std::vector<std::future<void>> others;
  for (size_t i = 1; i < jobs.size(); ++i) others.push_back(std::async(std::launch::async, jobs[i]));
  std::exception_ptr failed;
  try {
    if (!jobs.empty()) jobs[0]();
  } catch (...) {
    failed = std::current_exception();
  }
  for (auto& f : others) {
    try {
      f.get();
    } catch (...) {
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
}

class HalideBackend : public Backend {
 public:
  explicit HalideBackend(const HalideOptions& o) : options_(o), target_(parse_target(o.target)) {
    check_schedule_name(o.schedule);
    // Large FFTs planned by measurement, once per machine: the plans kept
    // in the cache folder (see proxc_fft_set_wisdom_file).
    const std::string dir = halide_cache_dir(o);
    if (!dir.empty()) proxc_fft_set_wisdom_file((std::filesystem::path(dir) / "fftwf.wisdom").c_str());
  }
  std::string name() const override { return "halide"; }
  double epsilon() const override { return 1.1920928955078125e-07; }
  std::unique_ptr<CompiledStep> compile(const StepProgram& program) override {
    return std::move(compile_many({&program}).front());
  }
  // Every part of every program compiles at once: LLVM's code generation,
  // most of a compile, runs on one thread per pipeline.
  // schedule_used() then reports these programs: a fallback of an earlier
  // compile's (which keep their own flag) no longer counts.
  std::vector<std::unique_ptr<CompiledStep>> compile_many(const std::vector<const StepProgram*>& programs) override {
    fell_back_ = std::make_shared<std::atomic<bool>>(false);
    compiles_ = 0;
    std::vector<std::unique_ptr<HalideStep>> steps;
    std::vector<std::function<void()>> jobs;
    for (const StepProgram* p : programs) {
      steps.push_back(std::make_unique<HalideStep>(*p, fell_back_));
      for (auto& j : steps.back()->compile_jobs(options_, target_)) jobs.push_back(std::move(j));
    }
    run_at_once(jobs);
    std::vector<std::unique_ptr<CompiledStep>> out;
    for (auto& s : steps) {
      const std::string used = s->schedule_used();
      // One fallback among several pipelines makes the whole "default".
      schedule_used_ = compiles_++ == 0 || used == schedule_used_ ? used : "default";
      out.push_back(std::move(s));
    }
    return out;
  }
  std::string schedule_requested() const override { return options_.schedule; }
  // The schedule of the last compile_many's programs: "default" when one of
  // them used it, or after a run-time fallback (Part::run) of any of their
  // pipelines.
  std::string schedule_used() const override {
    if (fell_back_->load()) return "default";
    return compiles_ ? schedule_used_ : options_.schedule;
  }

 private:
  std::shared_ptr<std::atomic<bool>> fell_back_ = std::make_shared<std::atomic<bool>>(false);
  HalideOptions options_;
  Halide::Target target_;
  int compiles_ = 0;
  std::string schedule_used_ = "default";
};

}  // namespace

std::unique_ptr<Backend> make_halide_backend(const HalideOptions& options) {
  return std::make_unique<HalideBackend>(options);
}

int halide_compile_count() { return g_compiles.load(); }
int halide_cache_load_count() { return g_cache_loads.load(); }

void halide_forget_compiled() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache.clear();
}

const std::vector<std::string>& halide_schedules() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Autoscheduler& a : kAutoschedulers) n.push_back(a.option);
    return n;
  }();
  return names;
}

void check_schedule_name(const std::string& schedule) {
  if (schedule == "default" || find_autoscheduler(schedule)) return;
  std::string all = "default";
  for (const std::string& n : halide_schedules()) all += ", " + n;
  throw UserError("--schedule: unknown schedule '" + schedule + "' (one of: " + all + ")");
}

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

Array kernel_otf_array(const Array& kernel, const Shape& dims) {
  Array a;
  a.shape = dims;
  a.shape.back() = dims.back() / 2 + 1;
  a.shape.push_back(2);
  for (const auto& z : fft::kernel_otf(kernel, dims)) {
    a.data.push_back(static_cast<float>(z.real()));
    a.data.push_back(static_cast<float>(z.imag()));
  }
  return a;
}

Array kernel_spectrum(const Array& kernel, const Shape& dims) {
  Array a;
  a.shape = dims;
  a.shape.back() = dims.back() / 2 + 1;
  for (const auto& z : fft::kernel_otf(kernel, dims)) a.data.push_back(static_cast<float>(std::norm(z)));
  return a;
}

namespace {
const ExprNode* mine_or(const hl::Lowered& L, size_t i) { return L.data_nodes[i]; }

std::string float_literal(double v) {
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "-INFINITY";
  char buf[64];
  std::snprintf(buf, sizeof buf, "static_cast<float>(%.17g)", v);
  return buf;
}
}  // namespace

AotArtifacts halide_compile_aot(const StepProgram& program, const std::string& dir, const std::string& name,
                                const HalideOptions& options) {
  user_assert(!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
      << "compile_aot: the function name must be an identifier, got '" << name << "'";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  user_assert(!ec) << dir << ": cannot create the output folder: " << ec.message();
  check_schedule_name(options.schedule);
  Halide::Target t = aot_target(options.target);
  std::string used;
  hl::Lowered L = lower_scheduled(program, options.schedule, t, &used);
  std::vector<Halide::Argument> args = L.graph->arguments();
  std::string stem = (std::filesystem::path(dir) / name).string();
  L.pipeline.compile_to_static_library(stem, args, name, t);
  AotArtifacts a;
  a.library = stem + ".a";
  a.header = stem + ".h";
  a.needs_fft_runtime = !L.graph->spectra().empty() || !L.graph->otfs().empty();
  a.black_boxes.assign(L.graph->black_boxes().begin(), L.graph->black_boxes().end());
  // The wrapper: every run-time argument the caller provides, the scalar and
  // extent slots filled in with this program's values.
  std::ostringstream w, m;
  w << "// Generated by proxc: calls " << name << "() with the scalars and sizes of the problem it was\n"
    << "// compiled from. Link " << name << ".a"
    << (a.needs_fft_runtime || !a.black_boxes.empty() ? ", libproxc_runtime.a" : "")
    << (a.black_boxes.empty() ? "" : ", libproxc_black_box.a") << (a.needs_fft_runtime ? " and -lfftw3f_threads -lfftw3f" : "")
    << " and -lpthread -ldl.\n";
  if (!a.black_boxes.empty()) {
    w << "// It calls the black-box operators";
    for (const std::string& b : a.black_boxes) w << " " << b;
    w << ": register each with proxc_register_black_box\n// (proxc/black_box.h) before the first call.\n";
  }
  w << "#pragma once\n#include <cmath>\n#include \"" << name << ".h\"\n\n";
  w << "inline int " << name << "_call(";
  std::vector<std::string> params, call;
  m << "{\n \"function\": \"" << name << "\",\n \"arguments\": [\n";
  auto manifest = [&](const std::string& n, const std::string& kind, const std::string& extra) {
    m << (call.empty() ? "" : ",\n") << "  {\"name\": \"" << n << "\", \"kind\": \"" << kind << "\"" << extra << "}";
  };
  halide_ops::Graph& G = *L.graph;
  for (auto& [n, ip] : G.inputs()) {
    manifest(n, "input", "");
    params.push_back("halide_buffer_t* in_" + n);
    call.push_back("in_" + n);
  }
  for (auto& [n, p] : G.params()) {
    manifest(n, "param", "");
    params.push_back("double p_" + n);
    call.push_back("p_" + n);
  }
  for (auto& [i, ip] : G.data()) {
    const ExprNode* node = mine_or(L, static_cast<size_t>(i));
    std::string extra = ", \"constant\": \"" + node->name_hint + "\"";
    if (node->constant->source.type == ConstantSource::Type::File) {
      extra += ", \"path\": \"" + node->constant->source.path + "\"";
    }
    manifest("data" + std::to_string(i), "data", extra);
    params.push_back("halide_buffer_t* data" + std::to_string(i));
    call.push_back("data" + std::to_string(i));
  }
  for (auto& [i, ip] : G.spectra()) {
    manifest("spectrum" + std::to_string(i), "spectrum",
             ", \"kernel\": \"" + L.spectra_sources[static_cast<size_t>(i)].first->name_hint + "\"");
    params.push_back("halide_buffer_t* spectrum" + std::to_string(i));
    call.push_back("spectrum" + std::to_string(i));
  }
  for (auto& [i, ip] : G.otfs()) {
    manifest("otf" + std::to_string(i), "otf",
             ", \"kernel\": \"" + L.otf_sources[static_cast<size_t>(i)].first->name_hint + "\"");
    params.push_back("halide_buffer_t* otf" + std::to_string(i));
    call.push_back("otf" + std::to_string(i));
  }
  for (auto& [i, p] : G.scalars()) call.push_back(float_literal(L.scalar_values[static_cast<size_t>(i)]));
  for (auto& [i, p] : G.extent_slots()) call.push_back(std::to_string(L.extent_values[static_cast<size_t>(i)]));
  for (const auto& o : L.outputs) {
    manifest(o.name, "output", o.rank == 0 ? ", \"type\": \"float64\", \"rank\": 0" : ", \"type\": \"float32\"");
    params.push_back("halide_buffer_t* out_" + o.name);
    call.push_back("out_" + o.name);
  }
  m << "\n ],\n \"black_boxes\": [";
  for (size_t i = 0; i < a.black_boxes.size(); ++i) m << (i ? ", " : "") << "\"" << a.black_boxes[i] << "\"";
  m << "]\n}\n";
  for (size_t i = 0; i < params.size(); ++i) w << (i ? ", " : "") << params[i];
  w << ") {\n  return " << name << "(";
  for (size_t i = 0; i < call.size(); ++i) w << (i ? ", " : "") << call[i];
  w << ");\n}\n";
  a.wrapper = stem + "_call.h";
  a.manifest = stem + ".json";
  write_file_atomic(a.wrapper, w.str());
  write_file_atomic(a.manifest, m.str());
  return a;
}

std::string halide_emit(const StepProgram& program, const std::string& kind, const HalideOptions& options) {
  check_schedule_name(options.schedule);
  user_assert(kind == "stmt" || kind == "c" || kind == "html" || kind == "source")
      << "--emit: unknown form '" << kind << "' (step, source, stmt, c or html)";
  if (kind == "source") {
    const Autoscheduler* as = find_autoscheduler(options.schedule);
    if (!as) return hl::generator_source(program, hl::lower(program));
    return hl::generator_source(program, hl::lower(program, halide_ops::Schedule::None), plugin_path(*as), as->name);
  }
  Halide::Target t = parse_target(options.target);
  std::string used;
  hl::Lowered L = lower_scheduled(program, options.schedule, t, &used);
  std::vector<Halide::Argument> args = L.graph->arguments();
  std::string tmp = (std::filesystem::temp_directory_path() / ("proxc_emit_" + std::to_string(::getpid()))).string();
  std::string path = tmp + (kind == "stmt" ? ".stmt" : kind == "c" ? ".c" : ".html");
  if (kind == "stmt") L.pipeline.compile_to_lowered_stmt(path, args, Halide::Text, t);
  else if (kind == "html") L.pipeline.compile_to_lowered_stmt(path, args, Halide::HTML, t);
  else L.pipeline.compile_to_c(path, args, "proxc_step", t);
  std::string text = read_file(path);
  std::remove(path.c_str());
  return text;
}

}  // namespace proxc::internal
