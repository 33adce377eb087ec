// Pock–Chambolle (the primal-dual algorithm of Chambolle and Pock, ProxImaL's
// pock_chambolle) on a scaled problem, with step sizes tau, sigma and
// extrapolation theta (SolverOptions::steps; 1, 1 and 1 by default, valid
// since ||K|| <= 1 after the scale pass):
//   y⁺ = prox_{σf*}(y + σ K x̄),  x⁺ = prox_{τg}(x − τ Kᵀ y⁺),  x̄⁺ = x⁺ + θ (x⁺ − x).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "solvers/algorithm.h"

namespace proxc::internal {

namespace {

using namespace state_names;

// The step sizes as the program uses them: constants, or with adaptive
// steps the run-time parameters "pc_tau" and "pc_sigma" (the host changes
// them at checks, no recompiling).
struct Steps {
  bool adaptive;
  double tau, sigma;
  Step T, S, inv_T, inv_S;
  Steps(const SolverOptions& o) : adaptive(o.adaptive_steps), tau(o.steps.pc_tau), sigma(o.steps.pc_sigma) {
    T = adaptive ? step_param("pc_tau") : scalar(tau);
    S = adaptive ? step_param("pc_sigma") : scalar(sigma);
    inv_T = adaptive ? step_binary(StepKind::Div, scalar(1), T) : scalar(1 / tau);
    inv_S = adaptive ? step_binary(StepKind::Div, scalar(1), S) : scalar(1 / sigma);
  }
  // τ·v, σ·v, v/τ, v/σ (v itself for a constant 1: the default program has no such node).
  Step tau_times(const Step& v) const { return adaptive ? step_binary(StepKind::Mul, T, v) : times(tau, v); }
  Step sigma_times(const Step& v) const {
    return adaptive ? step_binary(StepKind::Mul, S, v) : times(sigma, v);
  }
  Step over_tau(const Step& v) const {
    return adaptive ? step_binary(StepKind::Mul, inv_T, v) : times(1 / tau, v);
  }
  Step over_sigma(const Step& v) const {
    return adaptive ? step_binary(StepKind::Mul, inv_S, v) : times(1 / sigma, v);
  }
};

class PockChambolle : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::PockChambolle; }
  bool unrolls() const override { return true; }

  StepProgram iteration(const Layout& l, const SolverOptions& o) const override {
    const int fuse = o.fuse;
    const double sigma = o.steps.pc_sigma, theta = o.steps.pc_theta;
    const Steps st(o);
    Builder b(l);
    StepProgram prog;
    prog.name = std::string(name()) + "_iteration";
    prog.unrolled = fuse;
    std::vector<Step> x, xbar, y;
    for (size_t v = 0; v < l.vars.size(); ++v) {
      x.push_back(step_input(l.name(v), l.vars[v]->shape));
      xbar.push_back(step_input(state_names::xbar(v), l.vars[v]->shape));
    }
    for (size_t i = 0; i < l.psi.size(); ++i)
      y.push_back(step_input(state_names::y(i), l.psi[i]->arg->shape));
    ProximalCheck pc;
    if (o.proximal_stopping) {
      for (size_t v = 0; v < l.vars.size(); ++v) {
        pc.xc.push_back(step_input(pc_xc(v), l.vars[v]->shape));
        pc.dxc.push_back(step_input(pc_dxc(v), l.vars[v]->shape));
      }
      for (size_t i = 0; i < l.psi.size(); ++i) pc.yc.push_back(step_input(pc_yc(i), l.psi[i]->arg->shape));
    }
    // The prox weights: sigma for f's prox inside the conjugate's, 1/tau for omega's.
    const Step f_rho = st.S, x_rho = st.inv_T;
    for (int f = 0; f < fuse; ++f) {
      std::vector<Step> y1, x1, xb1, kxbar, kty1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        // y⁺ = z − σ prox_{f/σ}(z/σ), z = y + σ K x̄: the conjugate's prox by Moreau's identity.
        kxbar.push_back(b.K(i, xbar));
        Step zi = step_binary(StepKind::Add, y[i], st.sigma_times(kxbar[i]));
        y1.push_back(
            step_binary(StepKind::Sub, zi, st.sigma_times(step_prox(*l.psi[i], st.over_sigma(zi), f_rho))));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        kty1.push_back(b.KT(v, y1));
        x1.push_back(b.prox_omega(v, step_binary(StepKind::Sub, x[v], st.tau_times(kty1[v])), x_rho));
        xb1.push_back(step_axpby(scalar(1 + theta), x1[v], scalar(-theta), x[v]));
      }
      if (f + 1 == fuse && o.proximal_stopping) proximal_residuals(b, x, x1, y, y1, pc, sigma, theta, &prog);
      else if (f + 1 == fuse) residuals(b, {x, x1, y, y1, kxbar, kty1}, st, &prog);
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

  // ProxImaL refreshes its u and z at iterations i with i % C in {0, C − 1}
  // (i counted from 0, C = check_every) and tests them at i % C == 0, i > 0.
  // The state a test reads is the variable, its change and the duals at the
  // refresh before i − 1: at i − C, or at i − 2 when C = 1 (every iteration
  // refreshes). So after each run that refreshes at i % C == 0 the state
  // becomes (x_i, x_i − x_{i−1}, y_i), one run later when C = 1; at i = 0
  // the change is x_0 itself (ProxImaL's K x starts at zero).
  void after_run(const Layout& l, const SolverOptions& o, int iteration, const std::map<std::string, Array>& prev,
                 std::map<std::string, Array>* state) const override {
    if (!o.proximal_stopping || iteration % o.check_every != 0) return;
    std::map<std::string, Array> rec;
    for (size_t v = 0; v < l.vars.size(); ++v) {
      const Array& x = state->at(l.name(v));
      Array dx = x;
      if (iteration > 0) {
        const Array& before = prev.at(l.name(v));
        for (size_t k = 0; k < dx.data.size(); ++k) dx.data[k] -= before.data[k];
      }
      rec[pc_xc(v)] = x;
      rec[pc_dxc(v)] = std::move(dx);
    }
    for (size_t i = 0; i < l.psi.size(); ++i) rec[pc_yc(i)] = state->at(state_names::y(i));
    if (o.check_every > 1) {
      for (auto& [k, a] : rec) (*state)[k] = std::move(a);
      return;
    }
    // C = 1: the record waits one run in "pending_".
    for (auto& [k, a] : rec) {
      Array& pending = state->at("pending_" + k);
      (*state)[k] = std::move(pending);
      pending = std::move(a);
    }
  }

  bool after_run_uses_arrays(const SolverOptions& o, int iteration) const override {
    return o.proximal_stopping && iteration % o.check_every == 0;
  }

  void init_check_state(const Layout& l, const SolverOptions& o, std::map<std::string, Array>* state) const override {
    if (!o.proximal_stopping) return;
    const std::vector<std::string> copies = o.check_every > 1 ? std::vector<std::string>{""}
                                                               : std::vector<std::string>{"", "pending_"};
    for (const std::string& pre : copies) {
      for (size_t v = 0; v < l.vars.size(); ++v) {
        (*state)[pre + pc_xc(v)] = Array(l.vars[v]->shape);
        (*state)[pre + pc_dxc(v)] = Array(l.vars[v]->shape);
      }
      for (size_t i = 0; i < l.psi.size(); ++i) (*state)[pre + pc_yc(i)] = Array(l.psi[i]->arg->shape);
    }
  }

  // Goldstein, Li and Yuan (2015), "Adaptive primal-dual splitting methods
  // for statistical learning and image processing", with their Δ = 1.5,
  // η = 0.95, α₀ = 0.5 and scale s = 1 (the scaled problem's): a primal
  // residual r more than Δ times the dual s makes the primal step larger,
  // τ/(1 − α), and the dual smaller, σ(1 − α) (the reverse when s > Δ r);
  // τσ is kept, and α shrinks by η with each change, so the steps settle.
  // At checks only (every check_every iterations).
  std::map<std::string, double> adaptive_params(const SolverOptions& o) const override {
    if (!o.adaptive_steps) return {};
    return {{"pc_tau", o.steps.pc_tau}, {"pc_sigma", o.steps.pc_sigma}, {"_pc_alpha", 0.5}};
  }
  bool adapt(const Layout&, const IterationInfo& info, std::map<std::string, double>* params,
             std::map<std::string, Array>*) const override {
    constexpr double kDelta = 1.5, kEta = 0.95;
    double &tau = params->at("pc_tau"), &sigma = params->at("pc_sigma"), &alpha = params->at("_pc_alpha");
    if (info.r > kDelta * info.s) {
      tau /= 1 - alpha;
      sigma *= 1 - alpha;
    } else if (info.s > kDelta * info.r) {
      tau *= 1 - alpha;
      sigma /= 1 - alpha;
    } else {
      return false;
    }
    alpha *= kEta;
    return true;
  }

  void tolerances(const StepOutputs& out, double m, double n, const SolverOptions& o,
                  IterationInfo* info) const override {
    if (o.proximal_stopping) {
      // ProxImaL's: eps_pri = √m·eps_abs + eps_rel·max(‖K x‖, ‖z‖), eps_dual = √n·eps_abs + eps_rel·‖Kᵀu‖/σ.
      info->eps_pri = std::sqrt(m) * o.eps_abs +
                      o.eps_rel * std::sqrt(std::max(out.scalars.at("pri_a"), out.scalars.at("pri_b")));
      info->eps_dual = std::sqrt(n) * o.eps_abs + o.eps_rel * std::sqrt(out.scalars.at("dual_a")) / o.steps.pc_sigma;
      return;
    }
    info->eps_pri = std::sqrt(n) * o.eps_abs +
                    o.eps_rel * std::sqrt(std::max(out.scalars.at("pri_a"), out.scalars.at("pri_b")));
    info->eps_dual = std::sqrt(m) * o.eps_abs +
                     o.eps_rel * std::sqrt(std::max(out.scalars.at("dual_a"), out.scalars.at("dual_b")));
  }

 private:
  struct ProximalCheck {
    std::vector<Step> xc, dxc, yc;
  };

  // ProxImaL's residuals at iteration i (x = x_{i−1}, x1 = x_i, y, y1 alike;
  // c: the check state): its u_{i−1} = y/σ + θ K(x − xc), z_i = u_{i−1} +
  // K x − y1/σ, z_{i−1} = yc/σ + θ K dxc + K xc − y/σ, u_i = y1/σ +
  // θ K(x1 − x); r = ‖K x − z_i‖, s = ‖σ Kᵀ(z_i − z_{i−1})‖, and the
  // tolerances' ‖K x‖, ‖z_i‖, ‖Kᵀ u_i‖.
  static void proximal_residuals(const Builder& b, const std::vector<Step>& x, const std::vector<Step>& x1,
                                 const std::vector<Step>& y, const std::vector<Step>& y1, const ProximalCheck& c,
                                 double sigma, double theta, StepProgram* prog) {
    const Layout& l = b.layout();
    const std::vector<Step> since_c = Builder::diff(x, c.xc), dx = Builder::diff(x1, x);
    std::vector<Step> r, kx, z, dz, u;
    for (size_t i = 0; i < l.psi.size(); ++i) {
      const Step ex = times(theta, b.K(i, since_c));
      r.push_back(step_binary(StepKind::Sub, times(1 / sigma, step_binary(StepKind::Sub, y1[i], y[i])), ex));
      kx.push_back(b.K(i, x));
      z.push_back(step_binary(StepKind::Sub, kx[i], r[i]));
      Step zp = step_binary(StepKind::Add, times(1 / sigma, step_binary(StepKind::Sub, c.yc[i], y[i])),
                            step_binary(StepKind::Add, times(theta, b.K(i, c.dxc)), b.K(i, c.xc)));
      dz.push_back(times(sigma, step_binary(StepKind::Sub, z[i], zp)));
      u.push_back(step_binary(StepKind::Add, times(1 / sigma, y1[i]), times(theta, b.K(i, dx))));
    }
    std::vector<Step> s, ktu;
    for (size_t v = 0; v < l.vars.size(); ++v) {
      s.push_back(b.KT(v, dz));
      ktu.push_back(b.KT(v, u));
    }
    prog->outputs.push_back({kR2, Builder::norm2(r)});
    prog->outputs.push_back({kS2, Builder::norm2(s)});
    prog->outputs.push_back({"pri_a", Builder::norm2(kx)});
    prog->outputs.push_back({"pri_b", Builder::norm2(z)});
    prog->outputs.push_back({"dual_a", Builder::norm2(ktu)});
  }

  // One iteration's steps that the residuals read: x, x⁺, y, y⁺, and the
  // K x̄ and Kᵀy⁺ the updates computed.
  struct Iterates {
    const std::vector<Step>&x, &x1, &y, &y1, &kxbar, &kty1;
  };

  // The residuals of the optimality conditions at (x⁺, y⁺), exact for this
  // order of updates (y⁺ from x̄, then x⁺ from y⁺): x⁺'s prox step gives
  // (x − x⁺)/τ − Kᵀy⁺ ∈ ∂g(x⁺), y⁺'s gives (y − y⁺)/σ + K x̄ ∈ ∂f*(y⁺), and
  // the optimum has −Kᵀy⁺ ∈ ∂g(x⁺), K x⁺ ∈ ∂f*(y⁺); so
  //   p = (x − x⁺)/τ,  d = (y − y⁺)/σ + K x̄ − K x⁺
  // (the primal and dual residuals of Goldstein, Li and Yuan, 2015, with
  // their iteration's order of updates swapped), and the tolerances' scale
  // terms ‖x⁺‖, ‖Kᵀy⁺‖, ‖y⁺‖, ‖Kx⁺‖. K x̄ and Kᵀy⁺ are the updates' own, so
  // a check adds one application of K.
  static void residuals(const Builder& b, const Iterates& it, const Steps& st, StepProgram* prog) {
    const Layout& l = b.layout();
    std::vector<Step> dx = Builder::diff(it.x, it.x1), dy = Builder::diff(it.y, it.y1), pr, du, kx1;
    for (size_t v = 0; v < l.vars.size(); ++v) pr.push_back(st.over_tau(dx[v]));
    for (size_t i = 0; i < l.psi.size(); ++i) {
      kx1.push_back(b.K(i, it.x1));
      du.push_back(step_binary(StepKind::Add, st.over_sigma(dy[i]),
                               step_binary(StepKind::Sub, it.kxbar[i], kx1[i])));
    }
    prog->outputs.push_back({kR2, Builder::norm2(pr)});
    prog->outputs.push_back({kS2, Builder::norm2(du)});
    prog->outputs.push_back({"pri_a", Builder::norm2(it.x1)});
    prog->outputs.push_back({"pri_b", Builder::norm2(it.kty1)});
    prog->outputs.push_back({"dual_a", Builder::norm2(it.y1)});
    prog->outputs.push_back({"dual_b", Builder::norm2(kx1)});
  }
};

}  // namespace

std::unique_ptr<Algorithm> make_pock_chambolle() { return std::make_unique<PockChambolle>(); }

}  // namespace proxc::internal
