/// \file
/// The Backend interface: compiles a step program into something that runs on
/// buffers. The emulator (src/emulate) and the Halide backend implement it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "step/step.h"
#include "support/array.h"

namespace proxc::internal {

/// Run-time inputs of a compiled step program.
struct StepInputs {
  /// One array per Input node name (shape must match).
  std::map<std::string, const Array*> buffers;
  /// One value per Param name.
  std::map<std::string, double> params;
  /// Replacement data for Data nodes, by the constant node (optional; a
  /// missing entry uses the constant's own values). Changing data never
  /// recompiles; a kernel the pipeline convolves by in two passes (of rank
  /// one, hl::rank_one_factors) must be replaced by one of rank one.
  std::map<const ExprNode*, const Array*> data;
  /// Device residency (a backend whose keeps_arrays_on_device() is true): the
  /// run may leave its array outputs on the device, their host data stale,
  /// and read inputs from device copies an earlier such run left there
  /// (arrays are known by their host addresses, so they may change roles:
  /// the outputs of one run the inputs of the next). Until Backend::to_host(),
  /// the caller neither reads nor writes these arrays on the host, nor frees
  /// them. Ignored by other backends.
  bool resident = false;
};

/// What a run computed: array outputs in float32, rank-0 outputs (norms,
/// dots, values) in double.
struct StepOutputs {
  std::map<std::string, Array> arrays;
  std::map<std::string, double> scalars;
};

/// A compiled step program.
class CompiledStep {
 public:
  virtual ~CompiledStep() = default;
  /// Computes every output of the program. Missing or mis-shaped inputs are a
  /// UserError naming the input.
  virtual StepOutputs run(const StepInputs& inputs) = 0;
  /// Like run(), writing into *out: arrays already there with the right
  /// shape are reused instead of allocated (a solver's loop passes back the
  /// previous iteration's state). No array of *out may be an input.
  virtual void run_into(const StepInputs& inputs, StepOutputs* out) { *out = run(inputs); }
  /// Whether runs without a check compute the program's iterations blocked in
  /// time, strip by strip (SolverSummary::fuse_blocked_in_time).
  virtual bool blocked_in_time() const { return false; }
};

/// A way to compile step programs.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "emulate", "halide", ...
  virtual std::string name() const = 0;
  /// Machine epsilon of the arithmetic the backend computes in (checkers scale
  /// their tolerances by it).
  virtual double epsilon() const = 0;
  virtual std::unique_ptr<CompiledStep> compile(const StepProgram& program) = 0;
  /// Compiles several programs, at once where the backend can (the Halide
  /// backend compiles each pipeline on a thread of its own); in order.
  virtual std::vector<std::unique_ptr<CompiledStep>> compile_many(const std::vector<const StepProgram*>& programs) {
    std::vector<std::unique_ptr<CompiledStep>> out;
    for (const StepProgram* p : programs) out.push_back(compile(*p));
    return out;
  }
  /// The schedule asked for, and the one the last compile used ("default"
  /// unless an autoscheduler was asked for and succeeded).
  virtual std::string schedule_requested() const { return "default"; }
  virtual std::string schedule_used() const { return "default"; }
  /// The target asked for (a Halide target string, "host" by default) and
  /// the one the pipelines are compiled for, in full; a backend without
  /// targets (the emulator) says "emulator" for both.
  virtual std::string target_requested() const { return "emulator"; }
  virtual std::string target_used() const { return "emulator"; }
  /// Where the FFT stages of the programs compiled so far ran
  /// (SolverSummary::target_fft): "none" when they had none.
  virtual std::string fft_used() const { return "none"; }
  /// Whether runs with StepInputs::resident keep their arrays on a device
  /// (a GPU target in use).
  virtual bool keeps_arrays_on_device() const { return false; }
  /// Every array a resident run left on the device copied back to its host
  /// memory, and every device copy freed and forgotten: the host arrays are
  /// current and the caller's again.
  virtual void to_host() {}
  /// Like to_host() for `arrays`; the device copies of the others are
  /// dropped without coming back (their host memory keeps what it held).
  virtual void to_host_only(const std::vector<const Array*>& arrays) { to_host(); }
};

/// Checks that a run's inputs have every buffer and param `program` needs,
/// with the right shapes; UserError naming the first missing or mis-shaped
/// one. Made once per compiled program: its inputs and params are listed
/// once (each listing walks the whole program), not on every run.
class StepInputCheck {
 public:
  explicit StepInputCheck(const StepProgram& program);
  void operator()(const StepInputs& inputs) const;

 private:
  std::string name_;
  std::vector<std::pair<std::string, Shape>> inputs_;
  std::vector<std::string> params_;
};

}  // namespace proxc::internal
