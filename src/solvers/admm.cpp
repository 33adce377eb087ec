// ADMM with penalty rho = steps.admm_rho (ProxImaL's admm), and the iteration program it
// shares with HQS. The x-update solves (rho·KᵀK + omega's Hessian) x = rhs:
// directly inside the program when that matrix is diagonal or circulant (one
// variable: DirectGram), else by conjugate gradients on the host before each
// run of the program (cg.h).
#include "solvers/algorithm.h"

namespace proxc::internal {

using namespace state_names;

// Whether the x-update is direct (direct_gram), an FFT solve only where `circulant`.
bool penalty_direct(const Layout& l, bool circulant, DirectGram* gram) {
  return direct_gram(l, gram) && (circulant || !gram->kernel);
}

StepProgram penalty_iteration(const Layout& l, const std::string& name, bool update_duals, bool circulant) {
  DirectGram gram;
  const DirectGram* direct = penalty_direct(l, circulant, &gram) ? &gram : nullptr;
  Builder b(l);
  StepProgram prog;
  prog.name = name + "_iteration";
  std::vector<Step> x, z, u;
  for (size_t v = 0; v < l.vars.size(); ++v) x.push_back(step_input(l.name(v), l.vars[v]->shape));
  for (size_t i = 0; i < l.psi.size(); ++i) {
    z.push_back(step_input(state_names::z(i), l.psi[i]->arg->shape));
    u.push_back(step_input(state_names::u(i), l.psi[i]->arg->shape));
  }
  Step rho = step_param(kRho);
  if (direct) {
    // (ρ·KᵀK + H) x = ρ·Kᵀ(z − u) + g; without omega terms ρ cancels.
    const bool with_omega = !l.omega.empty();
    std::vector<Step> zu;
    for (size_t i = 0; i < l.psi.size(); ++i) zu.push_back(step_binary(StepKind::Sub, z[i], u[i]));
    Step rhs = b.KT(0, zu);
    if (with_omega) {
      rhs = step_binary(StepKind::Mul, rho, rhs);
      for (const FunctionTerm* t : l.omega) {
        if (Step g = omega_linear(*t)) rhs = step_binary(StepKind::Add, rhs, g);
      }
    }
    x[0] = direct_solve(*direct, rhs, with_omega ? rho : Step());
    prog.outputs.push_back({l.name(0), x[0]});
  }
  std::vector<Step> kx, z1, u1;
  for (size_t i = 0; i < l.psi.size(); ++i) {
    kx.push_back(b.K(i, x));
    if (update_duals) {
      z1.push_back(step_prox(*l.psi[i], step_binary(StepKind::Add, kx[i], u[i]), rho));
      u1.push_back(step_binary(StepKind::Sub, step_binary(StepKind::Add, u[i], kx[i]), z1[i]));
    } else {
      z1.push_back(step_prox(*l.psi[i], kx[i], rho));
      u1.push_back(u[i]);
    }
  }
  admm_residuals(b, kx, z1, z, u1, rho, &prog);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    prog.outputs.push_back({state_names::z(i), z1[i]});
    prog.outputs.push_back({state_names::u(i), u1[i]});
  }
  return prog;
}

// Whether the x-update of penalty_iteration is a CG solve on the host.
bool penalty_host_cg(const Layout& l, bool circulant) {
  DirectGram gram;
  return !penalty_direct(l, circulant, &gram);
}

namespace {

class Admm : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::ADMM; }

  StepProgram iteration(const Layout& l, const SolverOptions&) const override {
    return penalty_iteration(l, name(), /*update_duals=*/true, /*circulant=*/true);
  }

  bool host_cg(const Layout& l, const SolverOptions&) const override { return penalty_host_cg(l, true); }

  void init_state(const Layout& l, std::map<std::string, Array>* state) const override {
    init_split_state(l, state);
  }
  bool takes_rho() const override { return true; }
  std::vector<double> rho_levels(const SolverOptions& o) const override { return {o.steps.admm_rho}; }

  // Residual balancing of ρ (penalty_factor): the scaled dual u = y/ρ is
  // rescaled so that y is kept. At checks only; ρ stays within
  // 2^±kMaxPenaltyChanges of its start.
  std::map<std::string, double> adaptive_params(const SolverOptions& o) const override {
    if (!o.adaptive_steps) return {};
    return {{kRho, o.steps.admm_rho}, {"_admm_changes", 0}};
  }
  bool adapt_rescales_state(const IterationInfo& info, const std::map<std::string, double>& params) const override {
    return penalty_factor(info, params.at("_admm_changes")) != 1;
  }
  bool adapt(const Layout& l, const IterationInfo& info, std::map<std::string, double>* params,
             std::map<std::string, Array>* state) const override {
    const double f = penalty_factor(info, params->at("_admm_changes"));
    if (f == 1) return false;
    params->at("_admm_changes") += 1;
    params->at(kRho) *= f;
    scale_duals(l, 1 / f, state);
    return true;
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    admm_tolerances(out, m, n, o, info);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_admm() { return std::make_unique<Admm>(); }

}  // namespace proxc::internal
