// Linearized ADMM on a scaled problem (ProxImaL's linearized_admm), with
// step sizes lambda and mu (SolverOptions::steps; 1 and 1 by default, valid
// since ||K|| <= 1 after the scale pass):
//   x⁺ = prox_{μg}(x − (μ/λ) Kᵀ(K x − z + u)),  z⁺ = prox_{λf}(K x⁺ + u),  u⁺ = u + K x⁺ − z⁺.
#include "solvers/algorithm.h"

namespace proxc::internal {

namespace {

using namespace state_names;

class LinearizedAdmm : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::LinearizedADMM; }
  bool unrolls() const override { return true; }

  StepProgram iteration(const Layout& l, const SolverOptions& o) const override {
    const int fuse = o.fuse;
    const double lambda = o.steps.ladmm_lambda, mu = o.steps.ladmm_mu;
    Builder b(l);
    StepProgram prog;
    prog.name = std::string(name()) + "_iteration";
    prog.unrolled = fuse;
    std::vector<Step> x, z, u;
    for (size_t v = 0; v < l.vars.size(); ++v) x.push_back(step_input(l.name(v), l.vars[v]->shape));
    for (size_t i = 0; i < l.psi.size(); ++i) {
      z.push_back(step_input(state_names::z(i), l.psi[i]->arg->shape));
      u.push_back(step_input(state_names::u(i), l.psi[i]->arg->shape));
    }
    // The prox weights 1/mu (the x-update) and 1/lambda (the z-update and the residuals).
    const Step x_rho = scalar(1 / mu), z_rho = scalar(1 / lambda);
    for (int f = 0; f < fuse; ++f) {
      std::vector<Step> v_i, x1, kx1, z1, u1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        v_i.push_back(step_binary(StepKind::Add, step_binary(StepKind::Sub, b.K(i, x), z[i]), u[i]));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        x1.push_back(b.prox_omega(step_binary(StepKind::Sub, x[v], times(mu / lambda, b.KT(v, v_i))), x_rho));
      }
      for (size_t i = 0; i < l.psi.size(); ++i) {
        kx1.push_back(b.K(i, x1));
        z1.push_back(step_prox(*l.psi[i], step_binary(StepKind::Add, kx1[i], u[i]), z_rho));
        u1.push_back(step_binary(StepKind::Sub, step_binary(StepKind::Add, u[i], kx1[i]), z1[i]));
      }
      if (f + 1 == fuse) admm_residuals(b, kx1, z1, z, u1, z_rho, &prog);  // rho = 1/lambda
      x = x1;
      z = z1;
      u = u1;
    }
    for (size_t v = 0; v < l.vars.size(); ++v) prog.outputs.push_back({l.name(v), x[v]});
    for (size_t i = 0; i < l.psi.size(); ++i) {
      prog.outputs.push_back({state_names::z(i), z[i]});
      prog.outputs.push_back({state_names::u(i), u[i]});
    }
    return prog;
  }

  void init_state(const Layout& l, std::map<std::string, Array>* state) const override {
    init_split_state(l, state);
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    admm_tolerances(out, m, n, o, info);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_linearized_admm() { return std::make_unique<LinearizedAdmm>(); }

}  // namespace proxc::internal
