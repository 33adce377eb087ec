// The conjugate-gradient x-update (cg.h).
#include "solvers/cg.h"

#include <algorithm>
#include <cmath>

namespace proxc::internal {

CgPrograms cg_programs(const Layout& l) {
  Builder b(l);
  CgPrograms c;
  c.init.name = "cg_init";
  c.apply.name = "cg_apply";
  c.update.name = "cg_update";
  Step rho = step_param(state_names::kRho);
  std::vector<Step> z, u;
  for (size_t i = 0; i < l.psi.size(); ++i) {
    z.push_back(step_input(state_names::z(i), l.psi[i]->arg->shape));
    u.push_back(step_input(state_names::u(i), l.psi[i]->arg->shape));
  }
  // A applied to the variables' values p (one array per variable).
  auto apply_a = [&](const std::vector<Step>& p) {
    std::vector<Step> kp, ap;
    for (size_t i = 0; i < l.psi.size(); ++i) kp.push_back(b.K(i, p));
    for (size_t v = 0; v < l.vars.size(); ++v) {
      Step a = step_binary(StepKind::Mul, rho, b.KT(v, kp));
      for (const FunctionTerm* t : l.omega_of(v)) {
        Step qp = step_forward(t->arg, {p[v]});
        a = step_axpby(scalar(omega_hessian(*t)), step_adjoint(t->arg, 0, qp), scalar(1), a);
      }
      ap.push_back(a);
    }
    return ap;
  };
  // init: the right-hand side and the residual of the current x.
  std::vector<Step> x, zu;
  for (size_t v = 0; v < l.vars.size(); ++v) x.push_back(step_input(l.name(v), l.vars[v]->shape));
  for (size_t i = 0; i < l.psi.size(); ++i) zu.push_back(step_binary(StepKind::Sub, z[i], u[i]));
  const std::vector<Step> ax = apply_a(x);
  Step rr, bb;
  for (size_t v = 0; v < l.vars.size(); ++v) {
    Step rhs = step_binary(StepKind::Mul, rho, b.KT(v, zu));
    for (const FunctionTerm* t : l.omega_of(v)) {
      if (Step g = omega_linear(*t)) rhs = step_binary(StepKind::Add, rhs, g);
    }
    Step r = step_binary(StepKind::Sub, rhs, ax[v]);
    c.init.outputs.push_back({"r" + std::to_string(v), r});
    rr = sum_steps(rr, step_reduce(StepKind::SumSquares, r));
    bb = sum_steps(bb, step_reduce(StepKind::SumSquares, rhs));
  }
  c.init.outputs.push_back({"rr", rr});
  c.init.outputs.push_back({"bb", bb});
  // apply: the new direction and A of it.
  Step beta = step_param("beta");
  std::vector<Step> p;
  for (size_t v = 0; v < l.vars.size(); ++v) {
    Step r = step_input("r" + std::to_string(v), l.vars[v]->shape);
    Step q = step_input("q" + std::to_string(v), l.vars[v]->shape);
    p.push_back(step_axpby(scalar(1), r, beta, q));
  }
  const std::vector<Step> ap = apply_a(p);
  Step pap;
  for (size_t v = 0; v < l.vars.size(); ++v) {
    c.apply.outputs.push_back({"p" + std::to_string(v), p[v]});
    c.apply.outputs.push_back({"ap" + std::to_string(v), ap[v]});
    pap = sum_steps(pap, step_reduce(StepKind::Dot, p[v], ap[v]));
  }
  c.apply.outputs.push_back({"pap", pap});
  // update: the step along p.
  Step alpha = step_param("alpha");
  Step rr1;
  for (size_t v = 0; v < l.vars.size(); ++v) {
    const std::string n = std::to_string(v);
    Step xv = step_input(l.name(v), l.vars[v]->shape);
    Step pv = step_input("p" + n, l.vars[v]->shape);
    Step apv = step_input("ap" + n, l.vars[v]->shape);
    Step rv = step_input("r" + n, l.vars[v]->shape);
    Step r1 = step_axpby(scalar(1), rv, step_binary(StepKind::Sub, scalar(0), alpha), apv);
    c.update.outputs.push_back({l.name(v), step_axpby(scalar(1), xv, alpha, pv)});
    c.update.outputs.push_back({"r" + n, r1});
    rr1 = sum_steps(rr1, step_reduce(StepKind::SumSquares, r1));
  }
  c.update.outputs.push_back({"rr", rr1});
  return c;
}

void CgXUpdate::run(InvariantStep* program, StepInputs* in, StepOutputs* out) const {
  if (slabs_) {
    for (const auto& [k, a] : slabs_->masks()) in->buffers[k] = &a;
  }
  program->run_into(*in, out);
  if (slabs_) slabs_->combine(out);
}

bool CgXUpdate::run(std::map<std::string, Array>* state, double rho, int* steps) {
  StepInputs in;
  for (auto& [k, a] : *state) in.buffers[k] = &a;
  in.params[state_names::kRho] = rho;
  run(init_, &in, &init_out_);
  double rr = init_out_.scalars.at("rr");
  const double bnorm = std::sqrt(init_out_.scalars.at("bb"));
  for (size_t v = 0; v < l_.vars.size(); ++v) {
    const std::string r = "r" + std::to_string(v);
    std::swap(r_[r], init_out_.arrays.at(r));
  }
  // The iterate: the state's x until the first step writes x_ (the state is
  // left as it was should the solve break down).
  bool moved = false;
  StepOutputs* dir = &dir_[0];   // this step's p, ap
  StepOutputs* last = &dir_[1];  // the last step's
  double beta = 0;
  for (int k = 0; k < o_.cg_max_iters && std::sqrt(rr) > o_.cg_tol * std::max(bnorm, 1e-30); ++k) {
    StepInputs ain;
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      const std::string n = std::to_string(v);
      ain.buffers["r" + n] = &r_.at("r" + n);
      ain.buffers["q" + n] = k == 0 ? &r_.at("r" + n) : &last->arrays.at("p" + n);  // beta = 0 at k = 0
    }
    ain.params[state_names::kRho] = rho;
    ain.params["beta"] = beta;
    run(apply_, &ain, dir);
    const double pap = dir->scalars.at("pap");
    if (!(pap > 0)) break;
    StepInputs uin;
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      const std::string n = std::to_string(v);
      uin.buffers[l_.name(v)] = moved ? &x_.at(l_.name(v)) : &state->at(l_.name(v));
      uin.buffers["r" + n] = &r_.at("r" + n);
      uin.buffers["p" + n] = &dir->arrays.at("p" + n);
      uin.buffers["ap" + n] = &dir->arrays.at("ap" + n);
    }
    uin.params["alpha"] = rr / pap;
    run(update_, &uin, &update_out_);
    for (size_t v = 0; v < l_.vars.size(); ++v) {
      const std::string r = "r" + std::to_string(v);
      std::swap(x_[l_.name(v)], update_out_.arrays.at(l_.name(v)));
      std::swap(r_.at(r), update_out_.arrays.at(r));
    }
    moved = true;
    ++*steps;
    const double rr1 = update_out_.scalars.at("rr");
    beta = rr1 / rr;
    rr = rr1;
    std::swap(dir, last);
  }
  if (!moved) return true;
  bool finite = all_finite(x_);
  if (slabs_) finite = slabs_->sum(finite ? 0.0 : 1.0) == 0;  // every rank keeps its state, or none
  if (!finite) return false;  // the CG solve broke down: keep the last finite state
  // The new x into the state; the old one is the next x-update's storage.
  for (size_t v = 0; v < l_.vars.size(); ++v) std::swap(state->at(l_.name(v)), x_.at(l_.name(v)));
  return true;
}

}  // namespace proxc::internal
