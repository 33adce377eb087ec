// A solve as the tools run it (solve.h): passes, iterations, objective.
#include "pipeline/solve.h"

#include <chrono>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "pipeline/pipeline.h"
#include "support/error.h"

namespace proxc::internal {

SolveResult solve(const Problem& problem, const SolverOptions& options, Backend& backend) {
  options.validate();
  // Passes: continue the default pipeline, split for this solver.
  const auto t0 = std::chrono::steady_clock::now();
  PassManagerOptions po;
  po.pass.solver = options.solver;
  po.pass.norm = options.norm;
  po.pass.diagonalize = options.diagonalize;
  po.pass.circulant = !options.communicator;
  if (!options.absorb || !options.merge) {
    // The default pipeline without the passes switched off (a dump continues
    // its record: split_for_solver). absorb off keeps moving offsets into the
    // parameters, as ProxImaL's absorb=False does.
    po.pass.absorb_operators = options.absorb;
    po.pipeline.push_back("absorb");
    if (options.merge) po.pipeline.push_back("merge");
    po.pipeline.insert(po.pipeline.end(), {"split", "scale"});
  }
  const Problem p = split_for_solver(problem, po);
  const double passes_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The user's objective at the result, on the solve's backend (on the
  // emulator, a 2048² deconvolution's objective took longer than its 40
  // iterations on Halide) with its default schedule. With an autoscheduler
  // requested, on the emulator: an autoscheduler's fallback on it would make
  // the whole solve report the default schedule.
  ObjectiveHooks objective;
  const bool on_backend = backend.schedule_requested() == "default";
  if (on_backend) objective.programs.push_back(objective_program(problem));
  objective.evaluate = [&](const std::map<const ExprNode*, const Array*>& x,
                           const std::vector<std::function<StepOutputs(const StepInputs&)>>& runs,
                           SolverSummary* sum) {
    // A scaled problem (a dump of the scale pass) is a function of the
    // internal variable s = variable_scale()·x; x is in the user's units.
    const double scale = problem.variable_scale();
    std::map<const ExprNode*, Array> scaled;
    std::map<const ExprNode*, const Array*> at = x;
    if (scale != 1) {
      for (auto& [v, a] : at) {
        Array s = *a;
        for (float& e : s.data) e = static_cast<float>(e * scale);
        a = &(scaled[v] = std::move(s));
      }
    }
    ObjectiveReport obj;
    if (on_backend) {
      obj = evaluate_objective(runs.at(0), problem, at);
    } else {
      auto emulator = make_emulate_backend();
      obj = evaluate_objective(*emulator, problem, at);
    }
    sum->objective = obj.total;
    sum->has_projection = obj.has_projection;
    sum->objective_at_projection = obj.total_at_projection;
    sum->objective_leaves_out.clear();
    for (const FunctionTerm& t : problem.terms) {
      if (!term_has_value(t)) sum->objective_leaves_out.push_back(term_function_name(t));
    }
  };
  SolveResult result = run_solver(problem, p, options, backend, objective);
  result.summary.passes_s = passes_s;
  return result;
}

}  // namespace proxc::internal
