/// \file
/// The solve's compiled programs: each step program compiled with its loop
/// invariants apart (InvariantStep: Kᵀb of a deconvolution computed once per
/// solve, not once per iteration), timed into the summary's profile; and the
/// finiteness scan of a state.
#pragma once

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxc/solver.h"
#include "step/backend.h"

namespace proxc::internal {

// A step program compiled with its loop invariants (hoist_invariants) apart:
// the first run computes them, every run reads them (Kᵀb of a
// deconvolution is computed once per solve, not once per iteration). Each
// run's wall time is added to the summary's profile (SolverSummary::programs).
class InvariantStep {
 public:
  InvariantStep(std::unique_ptr<CompiledStep> step, std::unique_ptr<CompiledStep> setup, std::string name)
      : step_(std::move(step)), setup_(std::move(setup)), name_(std::move(name)) {}
  // Where run times go: the summary's profile (null: not timed).
  void profile_into(std::vector<SolverSummary::ProgramTime>* profile) { profile_ = profile; }
  bool blocked_in_time() const { return step_->blocked_in_time(); }
  StepOutputs run(StepInputs in) {
    bind(&in);
    const auto t = std::chrono::steady_clock::now();
    StepOutputs out = step_->run(in);
    account(name_, t);
    return out;
  }
  void run_into(StepInputs in, StepOutputs* out) {
    bind(&in);
    const auto t = std::chrono::steady_clock::now();
    step_->run_into(in, out);
    account(name_, t);
  }

 private:
  void bind(StepInputs* in) {
    if (setup_) {
      StepInputs data;
      data.data = in->data;  // replacement constants, if any
      const auto t = std::chrono::steady_clock::now();
      invariants_ = setup_->run(data);
      account(name_ + " setup", t);
      setup_.reset();
    }
    for (const auto& [k, a] : invariants_.arrays) in->buffers[k] = &a;
    for (const auto& [k, v] : invariants_.scalars) in->params[k] = v;
  }
  void account(const std::string& name, std::chrono::steady_clock::time_point t) {
    if (!profile_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    auto it = std::find_if(profile_->begin(), profile_->end(), [&](const auto& p) { return p.name == name; });
    if (it == profile_->end()) it = profile_->insert(profile_->end(), SolverSummary::ProgramTime{name, 0, 0});
    ++it->runs;
    it->seconds += s;
  }
  std::unique_ptr<CompiledStep> step_, setup_;
  std::string name_;
  std::vector<SolverSummary::ProgramTime>* profile_ = nullptr;
  StepOutputs invariants_;
};

// Compiles the programs with their invariants apart, all at once
// (Backend::compile_many).
std::vector<std::unique_ptr<InvariantStep>> compile_hoisted(Backend& backend,
                                                            const std::vector<StepProgram>& programs);

/// Whether every value of the arrays is finite (large states are scanned on
/// every core).
bool all_finite(const std::map<std::string, Array>& arrays);

}  // namespace proxc::internal
