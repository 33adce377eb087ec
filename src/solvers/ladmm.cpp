// Linearized ADMM on a scaled problem, lambda = mu = 1 (valid since
// ||K|| <= 1 after the scale pass; ProxImaL's linearized_admm).
#include "solvers/algorithm.h"

namespace proxc::internal {

namespace {

using namespace state_names;

class LinearizedAdmm : public Algorithm {
 public:
  SolverKind kind() const override { return SolverKind::LinearizedADMM; }
  bool unrolls() const override { return true; }

  StepProgram iteration(const Layout& l, int fuse) const override {
    Builder b(l);
    StepProgram prog;
    prog.name = std::string(name()) + "_iteration";
    std::vector<Step> x, z, u;
    for (size_t v = 0; v < l.vars.size(); ++v) x.push_back(step_input(l.name(v), l.vars[v]->shape));
    for (size_t i = 0; i < l.psi.size(); ++i) {
      z.push_back(step_input(state_names::z(i), l.psi[i]->arg->shape));
      u.push_back(step_input(state_names::u(i), l.psi[i]->arg->shape));
    }
    const Step one = scalar(1);  // lambda = mu = 1
    for (int f = 0; f < fuse; ++f) {
      std::vector<Step> v_i, x1, kx1, z1, u1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        v_i.push_back(step_binary(StepKind::Add, step_binary(StepKind::Sub, b.K(i, x), z[i]), u[i]));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        x1.push_back(b.prox_omega(step_binary(StepKind::Sub, x[v], b.KT(v, v_i)), one));
      }
      for (size_t i = 0; i < l.psi.size(); ++i) {
        kx1.push_back(b.K(i, x1));
        z1.push_back(step_prox(*l.psi[i], step_binary(StepKind::Add, kx1[i], u[i]), one));
        u1.push_back(step_binary(StepKind::Sub, step_binary(StepKind::Add, u[i], kx1[i]), z1[i]));
      }
      if (f + 1 == fuse) admm_residuals(b, kx1, z1, z, u1, one, &prog);  // rho = 1/lambda
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
