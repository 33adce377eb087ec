// The Halide backend: compiled step programs (one pipeline, or an iteration
// and its check), bound to their buffers and run (halide_backend.h).
#include <set>

#include "halide/backend_impl.h"

namespace proxc::internal {

namespace {

// The arrays resident runs (StepInputs::resident) keep on a GPU, by their
// host addresses: each one's Halide buffer, which wraps the host memory and
// owns the device copy, and whether the device copy is newer than the host's.
// A solve's state stays on the device from run to run: copied there when a
// run first reads it, back when the host asks (to_host). Shared by every
// step of one backend; the table has a mutex of its own, but to_host() is
// the backend's: two solves at once on one backend would take each other's
// arrays back (each solve of the API has a backend of its own).
class DeviceArrays {
 public:
  // The buffer a resident run reads: the device copy where there is one
  // (current: an earlier run wrote it, or copied it there), else the host
  // data, copied to the device by the run.
  Halide::Buffer<> input(const Array& a) {
    std::lock_guard<std::mutex> lock(mutex_);
    Mirror& m = mirror(a);
    return m.buffer;
  }
  // The buffer a resident run writes: on the device, newer than the host's
  // from then on.
  Halide::Buffer<> output(Array& a) {
    std::lock_guard<std::mutex> lock(mutex_);
    Mirror& m = mirror(a);
    m.buffer.set_host_dirty(false);  // (overwritten whole: nothing to copy up)
    m.device_newer = true;
    return m.buffer;
  }
  // Whether any of these arrays has a device copy.
  bool holds(const std::vector<const Array*>& arrays) const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Array* a : arrays) {
      if (a && mirrors_.count(a->data.data())) return true;
    }
    return false;
  }
  // Every array (only: those of `only`) copied back where its device copy
  // is newer; every device copy freed and forgotten.
  void to_host(const std::vector<const Array*>* only = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::set<const float*> wanted;
    if (only) {
      for (const Array* a : *only) wanted.insert(a->data.data());
    }
    std::string failed;
    for (auto& [host, m] : mirrors_) {
      if (m.device_newer && failed.empty() && (!only || wanted.count(host))) {
        const int rc = m.buffer.copy_to_host();
        if (rc != 0) failed = "copying an array from the GPU failed (" + std::to_string(rc) + ")";
      }
      m.buffer.device_free();
    }
    mirrors_.clear();
    if (!failed.empty()) throw Halide::RuntimeError(failed);
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return mirrors_.size();
  }
  // The device copy of host memory about to be freed or reallocated, dropped
  // (a later array at that address is another array).
  void forget(const float* host) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mirrors_.find(host);
    if (it == mirrors_.end()) return;
    it->second.buffer.device_free();
    mirrors_.erase(it);
  }
  ~DeviceArrays() {
    // (The owner called to_host() unless it is unwinding an error: the device copies are dropped.)
    for (auto& [host, m] : mirrors_) m.buffer.device_free();
  }

 private:
  struct Mirror {
    Halide::Buffer<> buffer;
    Shape shape;
    bool device_newer = false;
  };
  Mirror& mirror(const Array& a) {
    auto it = mirrors_.find(a.data.data());
    if (it != mirrors_.end() && it->second.shape != a.shape) {
      // Another array at the address of one that was freed without forget(): its copy is stale.
      it->second.buffer.device_free();
      mirrors_.erase(it);
      it = mirrors_.end();
    }
    if (it == mirrors_.end()) {
      Mirror m;
      m.buffer = wrap(a);
      m.buffer.set_host_dirty(true);  // copied to the device by the first run that reads it
      m.shape = a.shape;
      it = mirrors_.emplace(a.data.data(), std::move(m)).first;
    }
    return it->second;
  }
  mutable std::mutex mutex_;
  std::map<const float*, Mirror> mirrors_;
};

// One compiled pipeline of a step program, and how to run it: binds a run's
// buffers and scalars to the pipeline's arguments.
class Part {
 public:
  // *fell_back is set when an autoscheduled pipeline of this part fails when
  // it runs and the default schedule runs instead (its backend's
  // schedule_used then says "default"). `device`: the backend's resident
  // arrays.
  Part(StepProgram p, std::shared_ptr<std::atomic<bool>> fell_back, std::shared_ptr<DeviceArrays> device)
      : program_(std::move(p)), fell_back_(std::move(fell_back)), device_(std::move(device)) {}

  // Lowers and compiles (or finds) the pipeline; may run on another thread.
  void compile(const HalideOptions& o, const Halide::Target& t) {
    options_ = o;
    target_ = t;
    entry_ = compiled_entry(program_, o, t, &mine_);
    derived_arguments();
  }
  const std::string& schedule_used() const { return entry_->schedule_used; }
  // Whether its pipeline runs blocked in time (the default schedule's lowering, Graph::temporal_blocking).
  bool blocked_in_time() const { return entry_->schedule_used == "default" && mine_.blocked_in_time; }
  // Where its FFT stages run: 0 (it has none), -1 (FFTW on the host), or the device_fft api.
  int fft_stages() const {
    if (mine_.spectra_sources.empty() && mine_.otf_sources.empty()) return 0;
    return entry_->schedule_used == "default" && mine_.device_fft != 0 ? mine_.device_fft : -1;
  }

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
    keep.reserve(G.inputs().size() + G.data().size() + G.spectra().size() + G.otfs().size() +
                 mine_.outputs.size());
    // On a GPU, a resident run's arrays stay there (DeviceArrays); any other
    // run reads and writes host memory, so arrays an earlier resident run
    // left on the device come back first.
    const bool resident = in.resident && target_.has_gpu_feature() && device_ && !entry_->library.fn;
    if (!resident && device_ && device_->size() > 0) {
      std::vector<const Array*> arrays;
      for (auto& [name, ip] : G.inputs()) {
        auto it = next.find(name);
        arrays.push_back(it != next.end() ? it->second : in.buffers.at(name));
      }
      for (const auto& [name, a] : out.arrays) arrays.push_back(&a);
      if (device_->holds(arrays)) device_->to_host();
    }
    auto input = [&](const Array& a) { buffer(resident ? device_->input(a) : Halide::Buffer<>(wrap(a))); };
    // A kernel's derived array rebuilt for new data frees the old one: its device copy goes too.
    auto derived = [&](KernelArgument& k) -> const Array& {
      const float* before = k.value.data.data();
      const Array& now = k.current(in);
      if (device_ && now.data.data() != before) device_->forget(before);
      return now;
    };
    for (auto& [name, ip] : G.inputs()) {
      auto it = next.find(name);
      input(it != next.end() ? *it->second : *in.buffers.at(name));
    }
    const bool check = run_checks(in.params);
    for (auto& [name, param] : G.params()) {
      doubles.push_back(name == kCheckParam ? (check ? 1.0 : 0.0) : in.params.at(name));
      argv.push_back(&doubles.back());
    }
    std::vector<Array> factors;  // of replacement kernel data, for this run: no device copy outlives it
    factors.reserve(G.data().size());
    struct ForgetFactors {
      DeviceArrays* device;
      const std::vector<Array>& arrays;
      ~ForgetFactors() {
        for (const Array& a : arrays) {
          if (device) device->forget(a.data.data());
        }
      }
    } forget_factors{device_.get(), factors};
    for (auto& [i, ip] : G.data()) {
      const ExprNode* node = mine_.data_nodes[static_cast<size_t>(i)];
      auto it = in.data.find(node);
      auto f = mine_.factors.find(node);
      if (f != mine_.factors.end() && in.data.count(f->second.first)) {
        // A separable kernel's factor, of the run's replacement kernel: it must be of rank one too.
        const auto [kernel, axis] = f->second;
        auto uv = hl::rank_one_factors(*in.data.at(kernel));
        user_assert(uv) << "kernel " << kernel->name_hint
                        << ": the pipeline convolves by the two factors of a kernel of rank one, and the "
                           "replacement data is not of rank one (solve the problem again to compile for it)";
        factors.push_back(std::move(axis == 0 ? uv->first : uv->second));
        input(factors.back());
        continue;
      }
      input(it != in.data.end() ? *it->second : node->constant->array);
    }
    for (auto& [i, ip] : G.spectra()) input(derived(spectra_[static_cast<size_t>(i)]));
    for (auto& [i, ip] : G.otfs()) input(derived(otfs_[static_cast<size_t>(i)]));
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
        if (a.shape != o.shape || a.data.size() != static_cast<size_t>(num_elements(o.shape))) {
          if (device_) device_->forget(a.data.data());
          a = Array(o.shape);
        }
        buffer(resident ? device_->output(a) : Halide::Buffer<>(wrap(a)));
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
        return rc == 0 ? std::string()
                       : "the cached pipeline failed (" + std::to_string(rc) + "): " + g_halide_error;
      }
      try {
        run_jit(argv, keep, resident);
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
      warn_schedule_fallback(
          "the " + entry_->schedule_used + " schedule of " + program_label(program_) + " fails when it runs",
          failed);
      // Another lowering, whose arguments need not be this one's in number or
      // order (argv was built for the graph just replaced): the run again,
      // from its arguments. (It reused argv, and the solve went on with a
      // wrong Kᵀb: residuals of 5.6e8 where the default schedule's are 9.2.)
      options_.schedule = "default";
      entry_ = compiled_entry(program_, options_, target_, &mine_);
      derived_arguments();
      fell_back_->store(true);
      run(in, next, out_ptr);
      return;
    }
    // On a GPU, a failed run is the device's (its memory, its driver's kernel compile), not proxc's.
    user_assert(failed.empty() || !target_.has_gpu_feature())
        << "the GPU pipeline of " << program_label(program_) << " failed on " << target_.to_string() << ": "
        << failed;
    internal_assert(failed.empty()) << "the pipeline of " << program_.name << " failed: " << failed;
    for (size_t i = 0; i < mine_.outputs.size(); ++i) {
      if (mine_.outputs[i].rank == 0) out.scalars[mine_.outputs[i].name] = scalars[i];
    }
  }

 private:
  // Binds the arguments to the shared pipeline's parameters and realizes it:
  // argv in the pipeline's order, its buffers those of `buffers`, in order.
  // A resident run's arrays are the backend's device copies (DeviceArrays),
  // left there; otherwise each buffer wraps host memory that is current, a
  // GPU pipeline copies it to the device and the outputs back.
  void run_jit(const std::vector<void*>& argv, const std::vector<Halide::Buffer<>>& buffers, bool resident) {
    halide_ops::Graph& G = *entry_->lowered.graph;
    size_t k = 0, b = 0;
    const bool gpu = target_.has_gpu_feature();
    auto next_buffer = [&](bool input = true) {
      Halide::Buffer<> buf = buffers.at(b++);
      internal_assert(buf.raw_buffer() == argv[k]) << "run_jit: the buffers are not the arguments'";
      ++k;
      if (gpu && input && !resident) buf.set_host_dirty(true);
      return buf;
    };
    for (auto& [name, ip] : G.inputs()) ip.set(next_buffer());
    for (auto& [name, p] : G.params()) p.set(*static_cast<double*>(argv[k++]));
    for (auto& [i, ip] : G.data()) ip.set(next_buffer());
    for (auto& [i, ip] : G.spectra()) ip.set(next_buffer());
    for (auto& [i, ip] : G.otfs()) ip.set(next_buffer());
    for (auto& [i, p] : G.scalars()) p.set(*static_cast<float*>(argv[k++]));
    for (auto& [i, p] : G.extent_slots()) p.set(*static_cast<int*>(argv[k++]));
    std::vector<Halide::Buffer<>> outs;
    while (k < argv.size()) outs.push_back(next_buffer(false));
    // The device copies of this run's own buffers are freed however the run
    // ends (the resident ones are the backend's).
    struct FreeDevice {
      halide_ops::Graph& G;
      std::vector<Halide::Buffer<>>& outs;
      bool on, resident;
      ~FreeDevice() {
        if (!on) return;
        for (Halide::Buffer<>& b : outs) {
          if (!resident || b.dimensions() == 0) b.device_free();
        }
        if (resident) return;
        for (auto& [name, ip] : G.inputs()) ip.get().device_free();
        for (auto& [i, ip] : G.data()) ip.get().device_free();
        for (auto& [i, ip] : G.spectra()) ip.get().device_free();
        for (auto& [i, ip] : G.otfs()) ip.get().device_free();
      }
    } free_device{G, outs, gpu, resident};
    entry_->lowered.pipeline.realize(Halide::Realization(outs));
    if (gpu) {
      // The outputs back in the host arrays (a resident run's scalars only).
      for (Halide::Buffer<>& b : outs) {
        if (resident && b.dimensions() > 0) continue;
        const int rc = b.copy_to_host();
        if (rc != 0) throw Halide::RuntimeError("copying an output from the GPU failed (" + std::to_string(rc) + ")");
      }
    }
  }

  StepProgram program_;
  std::shared_ptr<std::atomic<bool>> fell_back_;
  std::shared_ptr<DeviceArrays> device_;
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

  // |otf|² of each circulant solve's kernel, from this program's data (for mine_'s lowering).
  void derived_arguments() {
    spectra_.clear();
    otfs_.clear();
    for (const auto& [k, dims] : mine_.spectra_sources) spectra_.emplace_back(k, dims, kernel_spectrum);
    for (const auto& [k, dims] : mine_.otf_sources) otfs_.emplace_back(k, dims, kernel_otf_array);
  }
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
  // `default_cpu`: the default schedule on a CPU target (the one that blocks in time).
  HalideStep(const StepProgram& p, const std::shared_ptr<std::atomic<bool>>& fell_back,
             const std::shared_ptr<DeviceArrays>& device, bool default_cpu)
      : check_inputs_(p), check_outputs_(p.check_outputs()) {
    p.verify();
    CheckSplit split = split_check(p);
    const bool unrolled_check = !check_outputs_.empty() && recomputes_an_iteration(split.check);
    if (unrolled_check && default_cpu && hl::blocks_in_time(split.iteration)) {
      // --fuse N: a checking run runs p; the others, its iterations without the check (whose
      // reductions read an iteration before the last), blocked in time (Graph::temporal_blocking).
      iteration_ = std::make_unique<Part>(std::move(split.iteration), fell_back, device);
      checked_ = std::make_unique<Part>(p, fell_back, device);
      return;
    }
    if (check_outputs_.empty() || unrolled_check) {
      iteration_ = std::make_unique<Part>(p, fell_back, device);
      return;
    }
    next_inputs_ = split.next_inputs;
    iteration_ = std::make_unique<Part>(std::move(split.iteration), fell_back, device);
    check_ = std::make_unique<Part>(std::move(split.check), fell_back, device);
  }

  std::vector<std::function<void()>> compile_jobs(const HalideOptions& o, const Halide::Target& t) {
    std::vector<std::function<void()>> jobs = {[this, &o, &t] { iteration_->compile(o, t); }};
    if (check_) jobs.push_back([this, &o, &t] { check_->compile(o, t); });
    if (checked_) jobs.push_back([this, &o, &t] { checked_->compile(o, t); });
    return jobs;
  }
  // The schedule its parts used (after the compiles).
  std::string schedule_used() const {
    const std::string& a = iteration_->schedule_used();
    for (const Part* other : {check_.get(), checked_.get()}) {
      if (other && other->schedule_used() != a) return "default";
    }
    return a;
  }
  // Its runs without a check run iteration_.
  bool blocked_in_time() const override { return iteration_->blocked_in_time(); }
  // Its parts' fft_stages.
  std::set<int> fft_stages() const {
    std::set<int> s = {iteration_->fft_stages()};
    if (check_) s.insert(check_->fft_stages());
    if (checked_) s.insert(checked_->fft_stages());
    return s;
  }

  StepOutputs run(const StepInputs& in) override {
    StepOutputs out;
    run_into(in, &out);
    return out;
  }

  void run_into(const StepInputs& in, StepOutputs* out) override {
    halide_boundary([&] { run_parts(in, out); });
  }

 private:
  void run_parts(const StepInputs& in, StepOutputs* out) {
    check_inputs_(in);
    if (checked_ && run_checks(in.params)) {
      checked_->run(in, {}, out);
      return;
    }
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

  // Whether a check program computes a prox or a solve: it then recomputes
  // iterations the program does not output (those --fuse N unrolls before
  // its last one), and is better left gated in the whole program's pipeline.
  static bool recomputes_an_iteration(const StepProgram& check) {
    for (const Step& n : check.nodes()) {
      if (n->kind == StepKind::Prox || n->kind == StepKind::CirculantSolve) return true;
    }
    return false;
  }

  StepInputCheck check_inputs_;
  std::set<std::string> check_outputs_;
  std::unique_ptr<Part> iteration_, check_;
  std::unique_ptr<Part> checked_;  ///< --fuse N: the whole program, for checking runs
  std::map<std::string, std::string> next_inputs_;
};

// Runs the jobs at once, one thread each (the first on the caller's), and
// rethrows the first failure once all have finished.
void run_at_once(const std::vector<std::function<void()>>& jobs) {
  std::vector<std::future<void>> others;
  for (size_t i = 1; i < jobs.size(); ++i) {
    others.push_back(std::async(std::launch::async, [&jobs, i] { halide_boundary(jobs[i]); }));
  }
  std::exception_ptr failed;
  try {
    if (!jobs.empty()) halide_boundary(jobs[0]);
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

// The most operations one program may have for the Halide backend. Halide's
// lowering grows with the square of a program's operations (bounds inference
// over a graph in which every term's dual update reads the shared x-update):
// about 16 operations a function term, 100 terms compiling in 44 s on one
// core of a 2-core machine and 50 in 11.5 s, so 3072 (about 190 terms)
// compile in a few minutes. Larger programs are refused before Halide
// starts, naming the way that works (the emulator has no compile).
constexpr size_t kMaxProgramOperations = 3072;

void check_program_size(const StepProgram& p) {
  const size_t n = p.nodes().size();
  user_assert(n <= kMaxProgramOperations)
      << "the Halide backend compiles programs of at most " << kMaxProgramOperations
      << " operations (about 190 function terms), and this problem's " << p.name << " has " << n
      << (p.unrolled > 1 ? " (" + std::to_string(p.unrolled) + " iterations unrolled: fuse fewer)" : std::string())
      << ": Halide's compile time grows with the square of that number (100 terms take about 45 s). Solve it with "
         "--backend emulate, or with fewer terms (one term of a stacked operator in place of many alike)";
}

class HalideBackend : public Backend {
 public:
  explicit HalideBackend(const HalideOptions& o)
      : options_(o), target_(parse_target(o.target)), requested_target_(o.target) {
    check_schedule_name(o.schedule);
    // A GPU target runs proxc's GPU schedules where this machine can run
    // them; otherwise its CPU part, which the summary reports as the target
    // used, and a warning says why.
    if (target_.has_gpu_feature()) {
      const std::string why = gpu_unavailable(target_);
      if (why.empty()) {
        target_ = with_gpu_features(target_);
        options_.target = target_.to_string();
      } else {
        options_.target = without_gpu_features(target_);
        target_ = parse_target(options_.target);
        internal_assert(!target_.has_gpu_feature()) << options_.target << " still has a GPU feature";
        warn("--target " + o.target + ": " + why + "; the pipelines run on the CPU, compiled for " +
             target_.to_string());
      }
    }
    // Large FFTs planned by measurement, once per machine: the plans kept
    // in the cache folder (see proxc_fft_set_wisdom_file), where it is this
    // user's alone (wisdom from a folder others write is not read either).
    const std::string dir = halide_cache_dir(o);
    if (!dir.empty() && prepare_cache_folder(dir).writable) {
      proxc_fft_set_wisdom_file((std::filesystem::path(dir) / "fftwf.wisdom").c_str());
    }
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
  std::vector<std::unique_ptr<CompiledStep>> compile_many(
      const std::vector<const StepProgram*>& programs) override {
    fell_back_ = std::make_shared<std::atomic<bool>>(false);
    compiles_ = 0;
    std::vector<std::unique_ptr<HalideStep>> steps;
    std::vector<std::function<void()>> jobs;
    const bool default_cpu =
        options_.schedule == "default" && schedule_for(target_) == halide_ops::Schedule::Default;
    for (const StepProgram* p : programs) {
      check_program_size(*p);
      steps.push_back(std::make_unique<HalideStep>(*p, fell_back_, device_, default_cpu));
      for (auto& j : steps.back()->compile_jobs(options_, target_)) jobs.push_back(std::move(j));
    }
    if (std::isfinite(address_space_left())) {
      // Under an address-space limit, one compile at a time (check_compile_room).
      for (auto& job : jobs) halide_boundary(job);
    } else {
      run_at_once(jobs);
    }
    std::vector<std::unique_ptr<CompiledStep>> out;
    for (auto& s : steps) {
      const std::string used = s->schedule_used();
      // One fallback among several pipelines makes the whole "default".
      schedule_used_ = compiles_++ == 0 || used == schedule_used_ ? used : "default";
      for (int k : s->fft_stages()) {
        if (k != 0) fft_stages_.insert(k);
      }
      out.push_back(std::move(s));
    }
    return out;
  }
  std::string schedule_requested() const override { return options_.schedule; }
  std::string target_requested() const override { return requested_target_; }
  std::string target_used() const override { return target_.to_string(); }
  std::string fft_used() const override { return fft_report(fft_stages_); }
  bool keeps_arrays_on_device() const override { return target_.has_gpu_feature(); }
  void to_host() override {
    halide_boundary([&] { device_->to_host(); });
  }
  void to_host_only(const std::vector<const Array*>& arrays) override {
    halide_boundary([&] { device_->to_host(&arrays); });
  }
  // The schedule of the last compile_many's programs: "default" when one of
  // them used it, or after a run-time fallback (Part::run) of any of their
  // pipelines.
  std::string schedule_used() const override {
    if (fell_back_->load()) return "default";
    return compiles_ ? schedule_used_ : options_.schedule;
  }

 private:
  std::shared_ptr<std::atomic<bool>> fell_back_ = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<DeviceArrays> device_ = std::make_shared<DeviceArrays>();
  HalideOptions options_;
  Halide::Target target_;
  std::string requested_target_;  // as given (options_.target may be its CPU part)
  int compiles_ = 0;
  std::string schedule_used_ = "default";
  std::set<int> fft_stages_;  // of every pipeline compiled (Part::fft_stages, less the 0s)
};

}  // namespace

std::unique_ptr<Backend> make_halide_backend(const HalideOptions& options) {
  return halide_boundary([&]() -> std::unique_ptr<Backend> { return std::make_unique<HalideBackend>(options); });
}

int halide_compile_count() { return g_compiles.load(); }
int halide_cache_load_count() { return g_cache_loads.load(); }

}  // namespace proxc::internal
