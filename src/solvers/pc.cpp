// Pock–Chambolle (the primal-dual algorithm of Chambolle and Pock, ProxImaL's
// pock_chambolle) on a scaled problem, with step sizes tau, sigma and
// extrapolation theta (SolverOptions::steps; 1, 1 and 1 by default, valid
// since ||K|| <= 1 after the scale pass):
//   y⁺ = prox_{σf*}(y + σ K x̄),  x⁺ = prox_{τg}(x − τ Kᵀ y⁺),  x̄⁺ = x⁺ + θ (x⁺ − x).
#include <algorithm>
#include <cmath>

#include "solvers/algorithm.h"

namespace proxc::internal {

namespace {

using namespace state_names;

class PockChambolle : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::PockChambolle; }
  bool unrolls() const override { return true; }

  StepProgram iteration(const Layout& l, const SolverOptions& o) const override {
    const int fuse = o.fuse;
    const double tau = o.steps.pc_tau, sigma = o.steps.pc_sigma, theta = o.steps.pc_theta;
    Builder b(l);
    StepProgram prog;
    prog.name = std::string(name()) + "_iteration";
    std::vector<Step> x, xbar, y;
    for (size_t v = 0; v < l.vars.size(); ++v) {
      x.push_back(step_input(l.name(v), l.vars[v]->shape));
      xbar.push_back(step_input(state_names::xbar(v), l.vars[v]->shape));
    }
    for (size_t i = 0; i < l.psi.size(); ++i)
      y.push_back(step_input(state_names::y(i), l.psi[i]->arg->shape));
    // The prox weights: sigma for f's prox inside the conjugate's, 1/tau for omega's.
    const Step f_rho = scalar(sigma), x_rho = scalar(1 / tau);
    for (int f = 0; f < fuse; ++f) {
      std::vector<Step> y1, x1, xb1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        // y⁺ = z − σ prox_{f/σ}(z/σ), z = y + σ K x̄: the conjugate's prox by Moreau's identity.
        Step zi = step_binary(StepKind::Add, y[i], times(sigma, b.K(i, xbar)));
        y1.push_back(
            step_binary(StepKind::Sub, zi, times(sigma, step_prox(*l.psi[i], times(1 / sigma, zi), f_rho))));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        x1.push_back(b.prox_omega(step_binary(StepKind::Sub, x[v], times(tau, b.KT(v, y1))), x_rho));
        xb1.push_back(step_axpby(scalar(1 + theta), x1[v], scalar(-theta), x[v]));
      }
      if (f + 1 == fuse) residuals(b, x, x1, y, y1, tau, sigma, &prog);
      x = x1;
      xbar = xb1;
      y = y1;
    }
    for (size_t v = 0; v < l.vars.size(); ++v) {
      prog.outputs.push_back({l.name(v), x[v]});
      prog.outputs.push_back({state_names::xbar(v), xbar[v]});
    }
    for (size_t i = 0; i < l.psi.size(); ++i) prog.outputs.push_back({state_names::y(i), y[i]});
    return prog;
  }

  void init_state(const Layout& l, std::map<std::string, Array>* state) const override {
    for (size_t v = 0; v < l.vars.size(); ++v) (*state)[state_names::xbar(v)] = state->at(l.name(v));
    for (size_t i = 0; i < l.psi.size(); ++i) (*state)[state_names::y(i)] = Array(l.psi[i]->arg->shape);
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    info->eps_pri = std::sqrt(n) * o.eps_abs +
                    o.eps_rel * std::sqrt(std::max(out.scalars.at("pri_a"), out.scalars.at("pri_b")));
    info->eps_dual = std::sqrt(m) * o.eps_abs +
                     o.eps_rel * std::sqrt(std::max(out.scalars.at("dual_a"), out.scalars.at("dual_b")));
  }

 private:
  // PDHG residuals: p = (x − x⁺)/τ − Kᵀ(y − y⁺), d = (y − y⁺)/σ − K(x − x⁺), and
  // the tolerances' scale terms ‖x⁺‖, ‖Kᵀy⁺‖, ‖y⁺‖, ‖Kx⁺‖.
  static void residuals(const Builder& b, const std::vector<Step>& x, const std::vector<Step>& x1,
                        const std::vector<Step>& y, const std::vector<Step>& y1, double tau, double sigma,
                        StepProgram* prog) {
    const Layout& l = b.layout();
    std::vector<Step> dx = Builder::diff(x, x1), dy = Builder::diff(y, y1), pr, du, kx1, kty1;
    for (size_t v = 0; v < l.vars.size(); ++v) {
      pr.push_back(step_binary(StepKind::Sub, times(1 / tau, dx[v]), b.KT(v, dy)));
      kty1.push_back(b.KT(v, y1));
    }
    for (size_t i = 0; i < l.psi.size(); ++i) {
      du.push_back(step_binary(StepKind::Sub, times(1 / sigma, dy[i]), b.K(i, dx)));
      kx1.push_back(b.K(i, x1));
    }
    prog->outputs.push_back({kR2, Builder::norm2(pr)});
    prog->outputs.push_back({kS2, Builder::norm2(du)});
    prog->outputs.push_back({"pri_a", Builder::norm2(x1)});
    prog->outputs.push_back({"pri_b", Builder::norm2(kty1)});
    prog->outputs.push_back({"dual_a", Builder::norm2(y1)});
    prog->outputs.push_back({"dual_b", Builder::norm2(kx1)});
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_pock_chambolle() { return std::make_unique<PockChambolle>(); }

}  // namespace proxc::internal
