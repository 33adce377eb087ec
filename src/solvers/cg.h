/// \file
/// The conjugate-gradient x-update of admm (where it is not direct) and hqs.
/// It solves A x = rhs, with A p = rho·KᵀK p + omega's Hessian p and
/// rhs = rho·Kᵀ(z − u) + omega's linear part. CG's array operations run in
/// three step programs (on the backend: parallel and vectorized on Halide),
/// and the host keeps only scalars:
///   init:   r = rhs − A x, rr = ‖r‖², bb = ‖rhs‖²
///   apply:  p = r + beta·q, ap = A p, pap = <p, ap>    (q: the last direction)
///   update: x' = x + alpha·p, r' = r − alpha·ap, rr = ‖r'‖²
#pragma once

#include <map>
#include <string>

#include "solvers/compiled.h"
#include "solvers/layout.h"
#include "solvers/slabs.h"
#include "solvers/solver.h"

namespace proxc::internal {

struct CgPrograms {
  StepProgram init, apply, update;
};

CgPrograms cg_programs(const Layout& l);

/// The host side: runs the compiled programs, keeping their output arrays
/// from one x-update to the next as storage.
class CgXUpdate {
 public:
  /// `slabs`: this rank's in a distributed solve (each run's scalars summed
  /// over the ranks and its arrays' ghost rows exchanged), else null.
  CgXUpdate(const Layout& l, const SolverOptions& o, InvariantStep* init, InvariantStep* apply,
            InvariantStep* update, const Slabs* slabs = nullptr)
      : l_(l), o_(o), init_(init), apply_(apply), update_(update), slabs_(slabs) {}

  /// Solves from the state's x, by at most cg_max_iters steps to the
  /// relative tolerance cg_tol, and moves the new x into the state (its old
  /// arrays become storage). Returns false, the state untouched, when the
  /// solve broke down (a non-finite iterate). Adds its steps to *steps.
  bool run(std::map<std::string, Array>* state, double rho, int* steps);

 private:
  const Layout& l_;
  const SolverOptions& o_;
  InvariantStep *init_, *apply_, *update_;
  const Slabs* slabs_;
  // A run, then (distributed) its results combined over the ranks.
  void run(InvariantStep* program, StepInputs* in, StepOutputs* out) const;
  StepOutputs init_out_, update_out_, dir_[2];
  std::map<std::string, Array> r_, x_;  // the residual and the iterate
};

}  // namespace proxc::internal
