// A solve as the tools run it (solve.h): passes, iterations, objective.
#include "pipeline/solve.h"

#include <chrono>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "pipeline/pipeline.h"
#include "solvers/rank_agreement.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"

namespace proxc::internal {

namespace {

// What the ranks of a distributed solve must agree on (rank_agreement.h):
// the problem, its data, and every option that shapes the iterations or
// the collective calls between them (a time limit and an interrupt are
// decided by all ranks together, so they may differ).
std::vector<RankFacet> rank_facets(const Problem& problem, const SolverOptions& o) {
  TextPrintOptions text;
  text.hash_inline = true;
  std::string data;
  for_each_node(problem_roots(problem), [&](const Expr& e) {
    if (!e->is_constant()) return;
    const auto& a = e->constant->array;
    data += shape_to_string(a.shape) + content_hash(std::string(reinterpret_cast<const char*>(a.data.data()),
                                                                a.data.size() * sizeof(float)));
  });
  std::string x0;
  for (const auto& [name, a] : o.x0) {
    x0 += name + shape_to_string(a.shape) +
          content_hash(std::string(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float)));
  }
  const StepSizes& s = o.steps;
  auto d = [](double v) { return format_double(v); };
  auto i = [](int64_t v) { return std::to_string(v); };
  return {{"the problem", print_text(problem, text)},
          {"the data", data},
          {"SolverOptions.x0", x0},
          {"SolverOptions.solver", o.solver},
          {"SolverOptions.absorb, merge, diagonalize, norm",
           i(o.absorb) + i(o.merge) + i(o.diagonalize) + o.norm},
          {"SolverOptions.max_iters", i(o.max_iters)},
          {"SolverOptions.eps_abs, eps_rel", d(o.eps_abs) + "|" + d(o.eps_rel)},
          {"SolverOptions.fuse", i(o.fuse)},
          {"SolverOptions.check_every", i(o.check_every) + i(o.proximal_stopping)},
          {"SolverOptions.cg_max_iters, cg_tol", i(o.cg_max_iters) + "|" + d(o.cg_tol)},
          {"SolverOptions.hqs_*", d(o.hqs_rho_0) + "|" + d(o.hqs_rho_scale) + "|" + d(o.hqs_rho_max) + "|" +
                                      i(o.hqs_max_inner_iters)},
          {"SolverOptions.steps", d(s.pc_tau) + "|" + d(s.pc_sigma) + "|" + d(s.pc_theta) + "|" +
                                      d(s.ladmm_lambda) + "|" + d(s.ladmm_mu) + "|" + d(s.admm_rho) + "|" +
                                      i(o.adaptive_steps)},
          {"SolverOptions.objective_each_check", i(o.objective_each_check || bool(o.iterate_callback))},
          {"SolverOptions.snapshot_every", i(o.snapshot_every)},
          {"SolverOptions.checkpoint_every", i(o.checkpoint_path.empty() ? -1 : o.checkpoint_every)},
          {"SolverOptions.resume_path", i(!o.resume_path.empty())}};
}

}  // namespace

SolveResult solve(const Problem& problem, const SolverOptions& options, Backend& backend) {
  options.validate();
  // Before anything that differs between ranks could make one wait for
  // the others forever.
  if (options.communicator) check_ranks_agree(*options.communicator, rank_facets(problem, options));
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
