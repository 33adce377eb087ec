// The shared parts of every solver's programs (layout.h).
#include "solvers/layout.h"

#include "support/error.h"

namespace proxc::internal {

namespace {

int var_index(const std::vector<Expr>& vars, const ExprNode* v) {
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].get() == v) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

Layout layout_of(const Problem& p) {
  Layout l;
  l.vars = p.variables();
  for (const FunctionTerm& t : p.terms) {
    if (t.role == TermRole::Omega)
      l.omega.push_back(&t);
    else
      l.psi.push_back(&t);
  }
  return l;
}

std::vector<const FunctionTerm*> Layout::omega_of(size_t v) const {
  std::vector<const FunctionTerm*> of;
  for (const FunctionTerm* t : omega) {
    if (linop_variables(t->arg).front() == vars[v]) of.push_back(t);
  }
  return of;
}

int64_t total_size(const std::vector<Expr>& es) {
  int64_t n = 0;
  for (const Expr& e : es) n += num_elements(e->shape);
  return n;
}

std::vector<Expr> psi_args(const Layout& l) {
  std::vector<Expr> a;
  for (const FunctionTerm* t : l.psi) a.push_back(t->arg);
  return a;
}

Step sum_steps(Step a, const Step& b) { return a ? step_binary(StepKind::Add, a, b) : b; }
Step scalar(double v) { return step_constant(v); }

Step times(double s, const Step& v) { return s == 1 ? v : step_binary(StepKind::Mul, scalar(s), v); }

Step Builder::K(size_t i, const std::vector<Step>& x) const {
  std::vector<Step> xs;
  for (const Expr& v : linop_variables(l_.psi[i]->arg))
    xs.push_back(x[static_cast<size_t>(var_index(l_.vars, v.get()))]);
  return step_forward(l_.psi[i]->arg, xs);
}

Step Builder::KT(size_t v, const std::vector<Step>& y) const {
  Step out;
  for (size_t i = 0; i < l_.psi.size(); ++i) {
    std::vector<Expr> vs = linop_variables(l_.psi[i]->arg);
    for (size_t j = 0; j < vs.size(); ++j) {
      if (vs[j] == l_.vars[v]) out = sum_steps(out, step_adjoint(l_.psi[i]->arg, static_cast<int>(j), y[i]));
    }
  }
  return out ? out : step_fill(0, l_.vars[v]->shape);
}

Step Builder::prox_omega(size_t var, const Step& v, const Step& rho) const {
  const std::vector<const FunctionTerm*> omega = l_.omega_of(var);
  if (omega.empty()) return v;
  if (omega.size() > 1) {
    // Several least squares (the split pass checked that one solve takes them):
    // (ρ·I + Σ H_j) x = ρ·v + Σ g_j.
    DirectGram g;
    g.psi.identity = 1;
    Step rhs = step_binary(StepKind::Mul, rho, v);
    for (const FunctionTerm* t : omega) {
      internal_assert(t->kind == FunctionKind::LeastSquares &&
                      add_gram_block(t->arg, omega_hessian(*t), &g, &g.omega))
          << "omega terms that no direct solve takes";
      if (Step lin = omega_linear(*t)) rhs = step_binary(StepKind::Add, rhs, lin);
    }
    return direct_solve(g, rhs, rho);
  }
  const FunctionTerm& t = *omega[0];
  if (t.kind != FunctionKind::LeastSquares) return step_prox(t, v, rho);  // a function of x itself
  // Q = s · base, base ∈ {x, mul_elemwise(w, x), conv(k, x)}.
  double s = 1;
  Expr base = strip_scalings(t.arg, &s);
  // (2αβ² + 2γ)s²·baseᵀbase x + ρ x = 2αβs·baseᵀb − s·baseᵀc + ρ v
  const double a = (2 * t.alpha * t.beta * t.beta + 2 * t.gamma) * s * s;
  auto data_or_fill = [&](const Param& p) {
    return p.array ? step_data(p.array) : step_fill(p.scalar, base->shape);
  };
  auto base_t = [&](const Step& y) { return base->is_variable() ? y : step_adjoint(base, 0, y); };
  Step rhs = step_binary(StepKind::Mul, rho, v);
  if (!t.b.is_scalar(0)) {
    rhs = step_axpby(scalar(2 * t.alpha * t.beta * s), base_t(data_or_fill(t.b)), scalar(1), rhs);
  }
  if (!t.c.is_scalar(0)) rhs = step_axpby(scalar(-s), base_t(data_or_fill(t.c)), scalar(1), rhs);
  if (base->kind == ExprKind::Conv) return step_circulant_solve(base->args[0], rhs, scalar(a), rho);
  Step denom = rho;
  if (base->kind == ExprKind::MulElemwise) {
    Step w = step_data(base->args[0]);
    denom = step_binary(StepKind::Add,
                        step_binary(StepKind::Mul, scalar(a), step_binary(StepKind::Mul, w, w)), rho);
  } else {
    denom = step_binary(StepKind::Add, scalar(a), rho);
  }
  return step_binary(StepKind::Div, rhs, denom);
}

Step Builder::norm2(const std::vector<Step>& a) {
  Step s;
  const Step check = step_param(kCheckParam);
  for (const Step& x : a) s = sum_steps(s, step_reduce(StepKind::SumSquares, x, nullptr, check));
  return s ? s : scalar(0);
}

std::vector<Step> Builder::diff(const std::vector<Step>& a, const std::vector<Step>& b) {
  std::vector<Step> d;
  for (size_t i = 0; i < a.size(); ++i) d.push_back(step_binary(StepKind::Sub, a[i], b[i]));
  return d;
}

void admm_residuals(const Builder& b, const std::vector<Step>& kx, const std::vector<Step>& z,
                    const std::vector<Step>& z_prev, const std::vector<Step>& u, const Step& rho,
                    StepProgram* p) {
  const Step rho2 = step_binary(StepKind::Mul, rho, rho);
  p->outputs.push_back({state_names::kR2, Builder::norm2(Builder::diff(kx, z))});
  std::vector<Step> dz = Builder::diff(z, z_prev);
  std::vector<Step> ktdz, ktu;
  for (size_t v = 0; v < b.layout().vars.size(); ++v) {
    ktdz.push_back(b.KT(v, dz));
    ktu.push_back(b.KT(v, u));
  }
  p->outputs.push_back({state_names::kS2, step_binary(StepKind::Mul, rho2, Builder::norm2(ktdz))});
  p->outputs.push_back({"kx2", Builder::norm2(kx)});
  p->outputs.push_back({"znorm2", Builder::norm2(z)});  // not "z2": a state array may be named so
  p->outputs.push_back({"ktu2", step_binary(StepKind::Mul, rho2, Builder::norm2(ktu))});
}

double omega_hessian(const FunctionTerm& t) {
  internal_assert(t.kind == FunctionKind::LeastSquares)
      << to_string(t.kind) << " as a least-squares omega term";
  return 2 * t.alpha * t.beta * t.beta + 2 * t.gamma;
}

Step omega_linear(const FunctionTerm& t) {
  internal_assert(t.kind == FunctionKind::LeastSquares)
      << to_string(t.kind) << " as a least-squares omega term";
  auto data_or_fill = [&](const Param& q) {
    return q.array ? step_data(q.array) : step_fill(q.scalar, t.arg->shape);
  };
  Step y;
  if (!t.b.is_scalar(0)) y = times(2 * t.alpha * t.beta, data_or_fill(t.b));
  if (!t.c.is_scalar(0))
    y = y ? step_binary(StepKind::Sub, y, data_or_fill(t.c)) : times(-1, data_or_fill(t.c));
  return y ? step_adjoint(t.arg, 0, y) : Step();
}

bool add_gram_block(const Expr& q, double coefficient, DirectGram* g, DirectGram::Part* part) {
  double s = 1;
  const Expr e = strip_scalings(q, &s);
  const double c = coefficient * s * s;
  if (e->is_variable()) {
    part->identity += c;
  } else if (e->kind == ExprKind::MulElemwise && e->args[1]->is_variable()) {
    part->weights.push_back({c, e->args[0]});
  } else if (is_circular_conv(*e) && e->args[1]->is_variable() && (!g->kernel || g->kernel == e->args[0])) {
    g->kernel = e->args[0];
    part->conv_scale += c;
  } else {
    return false;
  }
  return true;
}

bool direct_gram(const Layout& l, DirectGram* g) {
  if (l.vars.size() != 1) return false;
  for (const FunctionTerm* t : l.psi) {
    if (!add_gram_block(t->arg, 1, g, &g->psi)) return false;
  }
  for (const FunctionTerm* t : l.omega) {
    if (!add_gram_block(t->arg, omega_hessian(*t), g, &g->omega)) return false;
  }
  // ρ > 0 and every coefficient ≥ 0: the matrix is invertible when the sum of
  // both parts' coefficients is positive (everywhere, for a diagonal one).
  const double identity = g->psi.identity + g->omega.identity;
  if (g->kernel) return g->psi.weights.empty() && g->omega.weights.empty() && identity > 0;
  for (size_t i = 0; i < static_cast<size_t>(num_elements(l.vars[0]->shape)); ++i) {
    double d = identity;
    for (const DirectGram::Part* part : {&g->psi, &g->omega}) {
      for (const auto& [c, w] : part->weights)
        d += c * w->constant->array.data[i] * w->constant->array.data[i];
    }
    if (!(d > 0)) return false;
  }
  return true;
}

Step direct_solve(const DirectGram& g, const Step& rhs, const Step& rho) {
  // ρ·p + h, or p + h without ρ (a scalar when h is 0: no node for it).
  auto coefficient = [&](const Step& p, double h) {
    const Step rp = rho ? step_binary(StepKind::Mul, rho, p) : p;
    return h == 0 ? rp : step_binary(StepKind::Add, rp, scalar(h));
  };
  const Step identity = coefficient(scalar(g.psi.identity), g.omega.identity);
  if (g.kernel) {
    return step_circulant_solve(g.kernel, rhs, coefficient(scalar(g.psi.conv_scale), g.omega.conv_scale),
                                identity);
  }
  Step d = identity;
  for (const DirectGram::Part* part : {&g.psi, &g.omega}) {
    for (const auto& [c, w] : part->weights) {
      const Step wd = step_data(w);
      const Step cw = part == &g.psi ? coefficient(scalar(c), 0) : scalar(c);
      d = step_binary(StepKind::Add, d, step_binary(StepKind::Mul, cw, step_binary(StepKind::Mul, wd, wd)));
    }
  }
  return step_binary(StepKind::Div, rhs, d);
}

}  // namespace proxc::internal
