// Linearized ADMM on a scaled problem (ProxImaL's linearized_admm), with
// step sizes lambda and mu (SolverOptions::steps; 1 and 1 by default, valid
// since ||K|| <= 1 after the scale pass):
//   x⁺ = prox_{μg}(x − (μ/λ) Kᵀ(K x − z + u)),  z⁺ = prox_{λf}(K x⁺ + u),  u⁺ = u + K x⁺ − z⁺.
// With adaptive steps λ is the run-time parameter "ladmm_lambda" and μ moves with it (μ/λ fixed).
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
    // The prox weights 1/mu (the x-update) and 1/lambda (the z-update and the residuals); with
    // adaptive steps 1/lambda is computed per run from the parameter, and 1/mu = (lambda/mu)/lambda.
    const Step z_rho = o.adaptive_steps ? step_binary(StepKind::Div, scalar(1), step_param(kLambda))
                                        : scalar(1 / lambda);
    const Step x_rho = o.adaptive_steps ? times(lambda / mu, z_rho) : scalar(1 / mu);
    for (int f = 0; f < fuse; ++f) {
      std::vector<Step> v_i, x1, kx1, z1, u1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        v_i.push_back(step_binary(StepKind::Add, step_binary(StepKind::Sub, b.K(i, x), z[i]), u[i]));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        x1.push_back(
            b.prox_omega(v, step_binary(StepKind::Sub, x[v], times(mu / lambda, b.KT(v, v_i))), x_rho));
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

  // Residual balancing of the penalty 1/λ (penalty_factor, as admm's ρ): λ and μ (so μ ≤ λ/‖K‖²
  // still holds) and the scaled dual u = λy (so y is kept) are divided by the penalty's factor.
  static constexpr const char* kLambda = "ladmm_lambda";
  std::map<std::string, double> adaptive_params(const SolverOptions& o) const override {
    if (!o.adaptive_steps) return {};
    return {{kLambda, o.steps.ladmm_lambda}, {"_ladmm_changes", 0}};
  }
  bool adapt_rescales_state(const IterationInfo& info, const std::map<std::string, double>& params) const override {
    return penalty_factor(info, params.at("_ladmm_changes")) != 1;
  }
  bool adapt(const Layout& l, const IterationInfo& info, std::map<std::string, double>* params,
             std::map<std::string, Array>* state) const override {
    const double f = penalty_factor(info, params->at("_ladmm_changes"));
    if (f == 1) return false;
    params->at("_ladmm_changes") += 1;
    params->at(kLambda) /= f;
    scale_duals(l, 1 / f, state);
    return true;
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    admm_tolerances(out, m, n, o, info);
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_linearized_admm() { return std::make_unique<LinearizedAdmm>(); }

}  // namespace proxc::internal
