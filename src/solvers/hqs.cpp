// Half-quadratic splitting with continuation (ProxImaL's rho_0, rho_scale,
// rho_max): rho = hqs_rho_0, · hqs_rho_scale, ... below hqs_rho_max, then
// hqs_rho_max; each level at most hqs_max_inner_iters iterations (0: max_iters
// spread over the levels); a level that converges early hands over to the next. The x-update is
// admm's: a direct solve where ρKᵀK + H is diagonal or circulant (as ProxImaL's
// try_diagonalize; circulant not on slabs), a CG solve on the host otherwise; the z-update the psi
// terms' proxes at Kx (no dual variable: u stays 0).
#include <cmath>

#include "solvers/algorithm.h"

namespace proxc::internal {

StepProgram penalty_iteration(const Layout& l, const std::string& name, bool update_duals, bool circulant);
bool penalty_host_cg(const Layout& l, bool circulant);

namespace {

class Hqs : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::HQS; }

  // The direct solve is exact: CG's relative tolerance, against a right-hand
  // side of ρ's order, left x biased by about cg_tol·ρ·|x| at the late levels
  // (3.7e-3 on norm1(X) + sum_squares(X - B), B up to 49, at ρ = 256).
  // On slabs (--distributed) an FFT solve of the whole image cannot run: there
  // hqs keeps its CG x-update where the direct one would be circulant.
  StepProgram iteration(const Layout& l, const SolverOptions& o) const override {
    return penalty_iteration(l, name(), /*update_duals=*/false, /*circulant=*/!o.communicator);
  }

  bool host_cg(const Layout& l, const SolverOptions& o) const override {
    return penalty_host_cg(l, !o.communicator);
  }
  void init_state(const Layout& l, std::map<std::string, Array>* state) const override {
    init_split_state(l, state);
  }
  bool takes_rho() const override { return true; }

  std::vector<double> rho_levels(const SolverOptions& o) const override {
    std::vector<double> levels;
    for (double r = o.hqs_rho_0; r < o.hqs_rho_max; r *= o.hqs_rho_scale) levels.push_back(r);
    levels.push_back(o.hqs_rho_max);
    return levels;
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    admm_tolerances(out, m, n, o, info);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_hqs() { return std::make_unique<Hqs>(); }

}  // namespace proxc::internal
