// The internal options' validate: the rules of solvers/options.h.
#include "solvers/options.h"

#include <memory>

namespace proxc::internal {

void SolverOptions::validate() const {
  check_solver_options(*this, Algorithm::create(solver)->kind(), OptionSpelling::Api);  // a known name first
}

}  // namespace proxc::internal
