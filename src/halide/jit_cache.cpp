// The in-process cache of compiled pipelines: one entry per structural key,
// JIT-compiled or loaded from the on-disk cache (backend_impl.h).
#include "halide/backend_impl.h"

namespace proxc::internal {

namespace {

std::mutex g_cache_mutex;  // guards g_cache only: pipelines compile in parallel
std::map<std::string, std::shared_ptr<Entry>> g_cache;

}  // namespace

void build_entry(Entry* e, const StepProgram& p, const HalideOptions& o, const Halide::Target& target,
                 const hl::Lowered& mine, const std::string& key);

// The compiled pipeline of p (lowered into *mine): this process's, the on-disk
// cache's, or compiled now. Thread-safe: different pipelines compile at once.
std::shared_ptr<Entry> compiled_entry(const StepProgram& p, const HalideOptions& o,
                                      const Halide::Target& target, hl::Lowered* mine) {
  *mine = lower_for(p, target);
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
  bool writable = false;
  // GPU pipelines are compiled in memory: their device buffers are managed
  // by the JIT's runtime (Part::run copies the outputs back and frees them).
  if (!dir.empty() && !target.has_gpu_feature()) {
    const FolderTrust trust = prepare_cache_folder(dir);
    if (!trust.exists) {
      static std::once_flag not_a_folder;
      std::call_once(not_a_folder, [&] {
        warn("the pipeline cache " + dir +
             " is not a folder and cannot be made one; pipelines are compiled in memory");
      });
      dir.clear();
    } else {
      // A folder this process may not write, or one others may write, still
      // serves the entries it holds that are this user's or root's; new
      // ones are compiled in memory.
      stem = (std::filesystem::path(dir) / content_hash(std::string(kBuildId) + "|" + key)).string();
      writable = trust.writable;
      if (!writable) {
        static std::once_flag once;
        std::call_once(once, [&] {
          warn("the pipeline cache folder " + dir + " is used read-only: " + trust.why +
               "; new pipelines are compiled in memory");
        });
      }
    }
  }
  // One process compiles an entry; another that wants it at the same time
  // waits, then loads it (held until this entry is built). Without a
  // compiler to link entries, nothing is written, not even the lock.
  std::unique_ptr<FileLock> lock;
  if (writable && cache_linker_available()) lock = std::make_unique<FileLock>(stem + ".so.lock");
  if (!stem.empty()) {
    // The entry and the shared runtime it links, each checked against its checksum before dlopen maps it.
    std::string schedule_why;
    if (verify_cache_entry(stem + ".so") && !cache_runtime(dir, aot_target(o.target)).empty() &&
        load_library(stem + ".so", nargs, &e->library)) {
      e->schedule_used =
          is_trusted_file(stem + ".schedule", &schedule_why) ? read_file(stem + ".schedule") : "default";
      ++g_cache_loads;
      return;
    }
  }
  check_compile_room();
  e->lowered = o.schedule == "default" ? mine : lower_scheduled(p, o.schedule, target, &e->schedule_used);
  ++g_compiles;
  auto build = [&] {
    // A fallback is not cached: the autoscheduler may work next time.
    if (!stem.empty() && writable && e->schedule_used == o.schedule) {
      bool cached = false;
      try {
        cached =
            compile_to_cache(e->lowered, aot_target(o.target), stem + ".so", e->schedule_used == "default");
      } catch (const Halide::Error&) {
        // Not for the cache (a full disk?): the JIT below says what is wrong, if anything.
      }
      if (cached) {
        ScratchFolder scratch(dir);
        publish_bytes(scratch, e->schedule_used, stem + ".schedule");
        prune_cache(dir);
        if (load_library(stem + ".so", nargs, &e->library)) return;
      }
    }
    std::map<std::string, Halide::JITExtern> externs = {
        {"proxc_circulant_solve", Halide::JITExtern(proxc_circulant_solve)},
        {"proxc_fft_conv", Halide::JITExtern(proxc_fft_conv)},
        {"proxc_fft_r2c_device", Halide::JITExtern(proxc_fft_r2c_device)},
        {"proxc_fft_c2r_device", Halide::JITExtern(proxc_fft_c2r_device)},
        {"proxc_black_box_stage", Halide::JITExtern(proxc_black_box_stage)},
        {"proxc_prox_fn_stage", Halide::JITExtern(proxc_prox_fn_stage)},
        {"proxc_prox_fn_value_stage", Halide::JITExtern(proxc_prox_fn_value_stage)}};
    e->lowered.pipeline.set_jit_externs(externs);
    e->lowered.pipeline.jit_handlers().custom_malloc = cached_malloc;
    e->lowered.pipeline.jit_handlers().custom_free = cached_free;
    // As a cache entry is compiled (compile_to_cache): the backend passes
    // whole buffers and checks their shapes before each run, so neither
    // bounds queries nor, where nothing of the user's can fail, Halide's
    // buffer assertions are needed; their lowering (add_image_checks) grows
    // faster than the pipeline (4.5 of 21 s for 50 terms).
    Halide::Target jit = target;
    if (!target.has_gpu_feature()) {
      jit = jit.with_feature(Halide::Target::NoBoundsQuery);
      if (e->lowered.graph->black_boxes().empty() && e->lowered.graph->prox_fns().empty() &&
          e->schedule_used == "default")
        jit = jit.with_feature(Halide::Target::NoAsserts);
    }
    e->lowered.pipeline.compile_jit(jit);
  };
  try {
    build();
  } catch (const Halide::Error& err) {
    // An autoscheduler's schedule that does not compile (say, one that
    // unrolls a loop whose extent is a run-time size) falls back too.
    if (e->schedule_used == "default") throw;
    warn_schedule_fallback(
        "the " + e->schedule_used + " schedule of " + program_label(p) + " does not compile", err.what());
    e->lowered = lower_for(p, target);
    e->schedule_used = "default";
    build();
  }
}

void halide_forget_compiled() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache.clear();
}

}  // namespace proxc::internal
