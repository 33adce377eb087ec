// run_passes and check of the public API (proxc/passes.h, proxc/check.h).
#include "api/access.h"
#include "check/check_command.h"
#include "emulate/emulate_backend.h"
#include "halide/halide_backend.h"
#include "ir/expr.h"
#include "pipeline/pipeline.h"
#include "support/error.h"

namespace proxc {

using internal::Access;

std::vector<std::string> pass_names() { return internal::default_pipeline(); }

Problem run_passes(const Problem& problem, const PassOptions& options) {
  user_assert(!Access::impl(problem).problem.terms.empty())
      << "run_passes: the problem has no objective (call Problem::minimize first)";
  internal::PassManagerOptions o;
  o.pipeline = options.pipeline;
  o.pass.solver = to_string(options.solver);
  o.pass.norm = to_string(options.norm);
  o.pass.absorb_operators = options.absorb_operators;
  for (SplitRole r : options.roles)
    o.pass.roles.push_back(r == SplitRole::Omega ? internal::TermRole::Omega : internal::TermRole::Psi);
  o.dump_dir = options.dump_dir;
  o.print_after_all = options.print_after_all;
  o.verify_each = options.verify_each;
  o.time_passes = options.time_passes;
  o.log = options.log;
  return Access::make_problem(internal::run_passes(Access::impl(problem).problem, o));
}

CheckReport check(const Problem& problem, const CheckOptions& options) {
  user_assert(!Access::impl(problem).problem.terms.empty())
      << "check: the problem has no objective (call Problem::minimize first)";
  internal::emulate::EmulateDebug debug;
  if (!options.debug_break_adjoint.empty()) {
    user_assert(internal::expr_kind_from_string(options.debug_break_adjoint, &debug.broken_kind))
        << "--debug-break-adjoint: unknown operator '" << options.debug_break_adjoint << "'";
    debug.break_adjoint = true;
  }
  std::unique_ptr<internal::Backend> backend, reference;
  if (options.backend == BackendKind::Halide) {
    internal::HalideOptions h;
    h.target = options.target;
    backend = internal::make_halide_backend(h);
    // A compiled backend is also compared node by node with the emulator (a
    // broken adjoint then breaks the emulator's: the comparison must fail).
    reference = internal::make_emulate_backend(debug);
  } else {
    backend = internal::make_emulate_backend(debug);
  }
  internal::ProblemCheck c =
      internal::check_problem(*backend, Access::impl(problem).problem, options.seed, reference.get());
  CheckReport r;
  r.passed = c.passed;
  r.norm_estimate = c.norm.value;
  r.norm_bound = c.bound;
  r.text = internal::format_check_text(c);
  r.json = internal::format_check_json(c);
  return r;
}

}  // namespace proxc
