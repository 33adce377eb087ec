#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <future>
#include <thread>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "passes/pass_manager.h"
#include "solvers/solver.h"
#include "support/error.h"
#include "ir/printer.h"
#include "support/file_util.h"
#include "support/format.h"

namespace proxc::internal {

void SolverOptions::validate() const {
  check_solver_name(solver);
  user_assert(max_iters >= 1) << "SolverOptions.max_iters must be >= 1, got " << max_iters;
  user_assert(eps_abs >= 0 && std::isfinite(eps_abs)) << "SolverOptions.eps_abs must be finite and >= 0";
  user_assert(eps_rel >= 0 && std::isfinite(eps_rel)) << "SolverOptions.eps_rel must be finite and >= 0";
  user_assert(time_limit_s >= 0) << "SolverOptions.time_limit_s must be >= 0";
  user_assert(fuse >= 1 && fuse <= 64) << "SolverOptions.fuse must be in 1..64, got " << fuse;
  user_assert(fuse == 1 || solver == "pc" || solver == "ladmm")
      << "SolverOptions.fuse: only pc and ladmm unroll iterations (" << solver << " takes fuse = 1)";
  user_assert(check_every >= 1) << "SolverOptions.check_every must be >= 1, got " << check_every;
  user_assert(cg_max_iters >= 1) << "SolverOptions.cg_max_iters must be >= 1";
  user_assert(cg_tol > 0) << "SolverOptions.cg_tol must be > 0";
  user_assert(checkpoint_every >= 0) << "SolverOptions.checkpoint_every must be >= 0";
  user_assert(checkpoint_every == 0 || !checkpoint_path.empty())
      << "SolverOptions.checkpoint_every needs checkpoint_path";
  user_assert(hqs_rho_max >= 1 && std::isfinite(hqs_rho_max)) << "SolverOptions.hqs_rho_max must be finite and >= 1";
}

namespace {

using Clock = std::chrono::steady_clock;

// The enum value of a name the solver, a backend or a schedule reports.
template <typename Kind>
Kind kind_of(const std::string& name) {
  Kind k{};
  internal_assert(from_string(name, &k)) << "no such kind: '" << name << "'";
  return k;
}
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A step program compiled with its loop invariants (hoist_invariants) apart:
// the first run computes them, every run reads them (Kᵀb of a
// deconvolution is computed once per solve, not once per iteration). Each
// run's wall time is added to the summary's profile (SolverSummary::programs).
class InvariantStep {
 public:
  InvariantStep(std::unique_ptr<CompiledStep> step, std::unique_ptr<CompiledStep> setup, std::string name)
      : step_(std::move(step)), setup_(std::move(setup)), name_(std::move(name)) {}
  // Where run times go: the summary's profile (null: not timed).
  void profile_into(std::vector<SolverSummary::ProgramTime>* profile) { profile_ = profile; }
  StepOutputs run(StepInputs in) {
    bind(&in);
    const auto t = Clock::now();
    StepOutputs out = step_->run(in);
    account(name_, t);
    return out;
  }
  void run_into(StepInputs in, StepOutputs* out) {
    bind(&in);
    const auto t = Clock::now();
    step_->run_into(in, out);
    account(name_, t);
  }

 private:
  void bind(StepInputs* in) {
    if (setup_) {
      StepInputs data;
      data.data = in->data;  // replacement constants, if any
      const auto t = Clock::now();
      invariants_ = setup_->run(data);
      account(name_ + " setup", t);
      setup_.reset();
    }
    for (const auto& [k, a] : invariants_.arrays) in->buffers[k] = &a;
    for (const auto& [k, v] : invariants_.scalars) in->params[k] = v;
  }
  void account(const std::string& name, Clock::time_point t) {
    if (!profile_) return;
    const double s = std::chrono::duration<double>(Clock::now() - t).count();
    auto it = std::find_if(profile_->begin(), profile_->end(), [&](const auto& p) { return p.name == name; });
    if (it == profile_->end()) it = profile_->insert(profile_->end(), SolverSummary::ProgramTime{name, 0, 0});
    ++it->runs;
    it->seconds += s;
  }
  std::unique_ptr<CompiledStep> step_, setup_;
  std::string name_;
  std::vector<SolverSummary::ProgramTime>* profile_ = nullptr;
  StepOutputs invariants_;
};

// Compiles the programs with their invariants apart, all at once
// (Backend::compile_many).
std::vector<std::unique_ptr<InvariantStep>> compile_hoisted(Backend& backend, const std::vector<StepProgram>& programs) {
  std::vector<HoistSplit> splits;
  std::vector<const StepProgram*> all;
  for (const StepProgram& p : programs) splits.push_back(hoist_invariants(p));
  for (const HoistSplit& h : splits) {
    all.push_back(&h.rest);
    if (!h.setup.outputs.empty()) all.push_back(&h.setup);
  }
  auto compiled = backend.compile_many(all);
  std::vector<std::unique_ptr<InvariantStep>> out;
  size_t k = 0;
  for (const HoistSplit& h : splits) {
    auto step = std::move(compiled[k++]);
    std::unique_ptr<CompiledStep> setup;
    if (!h.setup.outputs.empty()) setup = std::move(compiled[k++]);
    out.push_back(std::make_unique<InvariantStep>(std::move(step), std::move(setup), h.rest.name));
  }
  return out;
}

// The split problem as the lowering sees it.
struct Layout {
  std::vector<Expr> vars;
  std::vector<const FunctionTerm*> psi;
  const FunctionTerm* omega = nullptr;
  std::string name(size_t i) const { return "x" + std::to_string(i); }
};

Layout layout_of(const Problem& p) {
  Layout l;
  l.vars = p.variables();
  for (const FunctionTerm& t : p.terms) {
    if (t.role == TermRole::Omega) l.omega = &t;
    else l.psi.push_back(&t);
  }
  return l;
}

int var_index(const std::vector<Expr>& vars, const ExprNode* v) {
  for (size_t i = 0; i < vars.size(); ++i) {
    if (vars[i].get() == v) return static_cast<int>(i);
  }
  return -1;
}

Step sum_steps(Step a, const Step& b) { return a ? step_binary(StepKind::Add, a, b) : b; }
Step scalar(double v) { return step_constant(v); }

// Builds the step nodes of one solver iteration.
class Builder {
 public:
  explicit Builder(const Layout& l) : l_(l) {}

  // K_i x for psi term i, from the variables' current steps.
  Step K(size_t i, const std::vector<Step>& x) const {
    std::vector<Step> xs;
    for (const Expr& v : linop_variables(l_.psi[i]->arg)) xs.push_back(x[static_cast<size_t>(var_index(l_.vars, v.get()))]);
    return step_forward(l_.psi[i]->arg, xs);
  }

  // Kᵀ y for variable v: the sum over the psi terms that use it.
  Step KT(size_t v, const std::vector<Step>& y) const {
    Step out;
    for (size_t i = 0; i < l_.psi.size(); ++i) {
      std::vector<Expr> vs = linop_variables(l_.psi[i]->arg);
      for (size_t j = 0; j < vs.size(); ++j) {
        if (vs[j] == l_.vars[v]) out = sum_steps(out, step_adjoint(l_.psi[i]->arg, static_cast<int>(j), y[i]));
      }
    }
    return out ? out : step_fill(0, l_.vars[v]->shape);
  }

  // prox of the omega term with respect to x (a direct least-squares solve),
  // or the identity when there is none.
  Step prox_omega(const Step& v, const Step& rho) const {
    if (!l_.omega) return v;
    const FunctionTerm& t = *l_.omega;
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
      denom = step_binary(StepKind::Add, step_binary(StepKind::Mul, scalar(a), step_binary(StepKind::Mul, w, w)), rho);
    } else {
      denom = step_binary(StepKind::Add, scalar(a), rho);
    }
    return step_binary(StepKind::Div, rhs, denom);
  }

  // ‖a‖² summed over a list, computed by checking runs only (kCheckParam).
  static Step norm2(const std::vector<Step>& a) {
    Step s;
    const Step check = step_param(kCheckParam);
    for (const Step& x : a) s = sum_steps(s, step_reduce(StepKind::SumSquares, x, nullptr, check));
    return s ? s : scalar(0);
  }
  static std::vector<Step> diff(const std::vector<Step>& a, const std::vector<Step>& b) {
    std::vector<Step> d;
    for (size_t i = 0; i < a.size(); ++i) d.push_back(step_binary(StepKind::Sub, a[i], b[i]));
    return d;
  }

  const Layout& l_;
};

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

// Residual outputs "r2", "s2" (squared norms) and the
// tolerances' scale terms, shared by the ADMM-type solvers:
// r = ‖Kx − z‖, s = ρ‖Kᵀ(z − z_prev)‖, eps_pri = √m·eps_abs + eps_rel·max(‖Kx‖, ‖z‖),
// eps_dual = √n·eps_abs + eps_rel·ρ‖Kᵀu‖.
void admm_residuals(const Builder& b, const std::vector<Step>& kx, const std::vector<Step>& z,
                    const std::vector<Step>& z_prev, const std::vector<Step>& u, const Step& rho, StepProgram* p) {
  const Step rho2 = step_binary(StepKind::Mul, rho, rho);
  p->outputs.push_back({"r2", Builder::norm2(Builder::diff(kx, z))});
  std::vector<Step> dz = Builder::diff(z, z_prev);
  std::vector<Step> ktdz, ktu;
  for (size_t v = 0; v < b.l_.vars.size(); ++v) {
    ktdz.push_back(b.KT(v, dz));
    ktu.push_back(b.KT(v, u));
  }
  p->outputs.push_back({"s2", step_binary(StepKind::Mul, rho2, Builder::norm2(ktdz))});
  p->outputs.push_back({"kx2", Builder::norm2(kx)});
  p->outputs.push_back({"znorm2", Builder::norm2(z)});  // not "z2": a state array may be named so
  p->outputs.push_back({"ktu2", step_binary(StepKind::Mul, rho2, Builder::norm2(ktu))});
}

// ADMM's x-update solves KᵀK x = Kᵀ(z − u). When every psi operand is a
// scaling of x, mul_elemwise(w, x) or conv(k, x) (one kernel), KᵀK is diagonal
// or circulant and the solve is direct: elementwise, or one FFT solve.
struct DirectGram {
  double identity = 0;                          // Σ s² over identity blocks
  std::vector<std::pair<double, Expr>> weights; // (s², w) per mul_elemwise block
  double conv_scale = 0;                        // Σ s² over conv blocks (one kernel)
  Expr kernel;
};

bool direct_gram(const Layout& l, DirectGram* g) {
  if (l.vars.size() != 1 || l.omega) return false;
  for (const FunctionTerm* t : l.psi) {
    double s = 1;
    Expr e = strip_scalings(t->arg, &s);
    if (e->is_variable()) {
      g->identity += s * s;
    } else if (e->kind == ExprKind::MulElemwise && e->args[1]->is_variable()) {
      g->weights.push_back({s * s, e->args[0]});
    } else if (e->kind == ExprKind::Conv && e->args[1]->is_variable() && (!g->kernel || g->kernel == e->args[0])) {
      g->kernel = e->args[0];
      g->conv_scale += s * s;
    } else {
      return false;
    }
  }
  if (g->kernel) return g->weights.empty() && g->identity > 0;  // circulant and invertible
  // Diagonal: invertible when Σ s²w² > 0 everywhere.
  for (size_t i = 0; i < static_cast<size_t>(num_elements(l.vars[0]->shape)); ++i) {
    double d = g->identity;
    for (const auto& [s2, w] : g->weights) d += s2 * w->constant->array.data[i] * w->constant->array.data[i];
    if (!(d > 0)) return false;
  }
  return true;
}

bool admm_is_direct(const Problem& p) {
  DirectGram g;
  return direct_gram(layout_of(p), &g);
}

}  // namespace

static StepProgram build_iteration_program(const Problem& p, const SolverOptions& o) {
  Layout l = layout_of(p);
  Builder b(l);
  StepProgram prog;
  prog.name = o.solver + "_iteration";
  std::vector<Step> x, xbar, y, z, u;
  for (size_t v = 0; v < l.vars.size(); ++v) x.push_back(step_input(l.name(v), l.vars[v]->shape));
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Shape& s = l.psi[i]->arg->shape;
    if (o.solver == "pc") y.push_back(step_input("y" + std::to_string(i), s));
    else {
      z.push_back(step_input("z" + std::to_string(i), s));
      u.push_back(step_input("u" + std::to_string(i), s));
    }
  }
  if (o.solver == "pc") {
    // tau = sigma = theta = 1 (||K|| <= 1 after scaling).
    for (size_t v = 0; v < l.vars.size(); ++v) xbar.push_back(step_input("xbar" + std::to_string(v), l.vars[v]->shape));
    const Step one = scalar(1);
    std::vector<Step> x0 = x, y0 = y;
    for (int f = 0; f < o.fuse; ++f) {
      std::vector<Step> y1, x1, xb1;
      for (size_t i = 0; i < l.psi.size(); ++i) {
        Step zi = step_binary(StepKind::Add, y[i], b.K(i, xbar));
        y1.push_back(step_binary(StepKind::Sub, zi, step_prox(*l.psi[i], zi, one)));
      }
      for (size_t v = 0; v < l.vars.size(); ++v) {
        x1.push_back(b.prox_omega(step_binary(StepKind::Sub, x[v], b.KT(v, y1)), one));
        xb1.push_back(step_axpby(scalar(2), x1[v], scalar(-1), x[v]));
      }
      if (f + 1 == o.fuse) {
        // PDHG residuals: p = (x − x⁺) − Kᵀ(y − y⁺), d = (y − y⁺) − K(x − x⁺).
        std::vector<Step> dx = Builder::diff(x, x1), dy = Builder::diff(y, y1), pr, du, kx1, kty1;
        for (size_t v = 0; v < l.vars.size(); ++v) {
          pr.push_back(step_binary(StepKind::Sub, dx[v], b.KT(v, dy)));
          kty1.push_back(b.KT(v, y1));
        }
        for (size_t i = 0; i < l.psi.size(); ++i) {
          du.push_back(step_binary(StepKind::Sub, dy[i], b.K(i, dx)));
          kx1.push_back(b.K(i, x1));
        }
        prog.outputs.push_back({"r2", Builder::norm2(pr)});
        prog.outputs.push_back({"s2", Builder::norm2(du)});
        prog.outputs.push_back({"pri_a", Builder::norm2(x1)});
        prog.outputs.push_back({"pri_b", Builder::norm2(kty1)});
        prog.outputs.push_back({"dual_a", Builder::norm2(y1)});
        prog.outputs.push_back({"dual_b", Builder::norm2(kx1)});
      }
      x = x1;
      xbar = xb1;
      y = y1;
    }
    for (size_t v = 0; v < l.vars.size(); ++v) {
      prog.outputs.push_back({l.name(v), x[v]});
      prog.outputs.push_back({"xbar" + std::to_string(v), xbar[v]});
    }
    for (size_t i = 0; i < l.psi.size(); ++i) prog.outputs.push_back({"y" + std::to_string(i), y[i]});
    (void)x0;
    (void)y0;
    return prog;
  }
  if (o.solver == "ladmm") {
    // lambda = mu = 1.
    const Step one = scalar(1);
    for (int f = 0; f < o.fuse; ++f) {
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
      if (f + 1 == o.fuse) admm_residuals(b, kx1, z1, z, u1, one, &prog);  // rho = 1/lambda
      x = x1;
      z = z1;
      u = u1;
    }
    for (size_t v = 0; v < l.vars.size(); ++v) prog.outputs.push_back({l.name(v), x[v]});
    for (size_t i = 0; i < l.psi.size(); ++i) {
      prog.outputs.push_back({"z" + std::to_string(i), z[i]});
      prog.outputs.push_back({"u" + std::to_string(i), u[i]});
    }
    return prog;
  }
  // admm and hqs: the x-update is a conjugate-gradient solve on the host (this
  // program takes the new x and does the rest of the iteration), or, for ADMM
  // with a diagonal or circulant KᵀK, a direct solve inside this program.
  Step rho = step_param("rho");
  DirectGram gram;
  if (o.solver == "admm" && direct_gram(l, &gram)) {
    std::vector<Step> zu;
    for (size_t i = 0; i < l.psi.size(); ++i) zu.push_back(step_binary(StepKind::Sub, z[i], u[i]));
    Step rhs = b.KT(0, zu);
    if (gram.kernel) {
      x[0] = step_circulant_solve(gram.kernel, rhs, scalar(gram.conv_scale), scalar(gram.identity));
    } else {
      Step d = scalar(gram.identity);
      for (const auto& [s2, w] : gram.weights) {
        Step wd = step_data(w);
        d = step_binary(StepKind::Add, d, step_binary(StepKind::Mul, scalar(s2), step_binary(StepKind::Mul, wd, wd)));
      }
      x[0] = step_binary(StepKind::Div, rhs, d);
    }
    prog.outputs.push_back({l.name(0), x[0]});
  }
  std::vector<Step> kx, z1, u1;
  for (size_t i = 0; i < l.psi.size(); ++i) {
    kx.push_back(b.K(i, x));
    if (o.solver == "admm") {
      z1.push_back(step_prox(*l.psi[i], step_binary(StepKind::Add, kx[i], u[i]), rho));
      u1.push_back(step_binary(StepKind::Sub, step_binary(StepKind::Add, u[i], kx[i]), z1[i]));
    } else {
      z1.push_back(step_prox(*l.psi[i], kx[i], rho));
      u1.push_back(u[i]);
    }
  }
  admm_residuals(b, kx, z1, z, u1, rho, &prog);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    prog.outputs.push_back({"z" + std::to_string(i), z1[i]});
    prog.outputs.push_back({"u" + std::to_string(i), u1[i]});
  }
  return prog;
}

StepProgram iteration_program(const Problem& p, const SolverOptions& o) {
  return eliminate_common_subexpressions(build_iteration_program(p, o));
}

namespace {

// The admm/hqs x-update solves A x = rhs by conjugate gradients, with
// A p = rho·KᵀK p + omega's Hessian p and rhs = rho·Kᵀ(z − u) + omega's linear
// part. CG's array operations run in these three step programs (on the
// backend: parallel and vectorized on Halide), the host keeps only scalars:
//   init:   r = rhs − A x, rr = ‖r‖², bb = ‖rhs‖²
//   apply:  p = r + beta·q, ap = A p, pap = <p, ap>    (q: the last direction)
//   update: x' = x + alpha·p, r' = r − alpha·ap, rr = ‖r'‖²
struct CgPrograms {
  StepProgram init, apply, update;
};

CgPrograms cg_programs(const Layout& l) {
  Builder b(l);
  CgPrograms c;
  c.init.name = "cg_init";
  c.apply.name = "cg_apply";
  c.update.name = "cg_update";
  Step rho = step_param("rho");
  std::vector<Step> z, u;
  for (size_t i = 0; i < l.psi.size(); ++i) {
    z.push_back(step_input("z" + std::to_string(i), l.psi[i]->arg->shape));
    u.push_back(step_input("u" + std::to_string(i), l.psi[i]->arg->shape));
  }
  // A applied to the variables' values p (one array per variable).
  auto apply_a = [&](const std::vector<Step>& p) {
    std::vector<Step> kp, ap;
    for (size_t i = 0; i < l.psi.size(); ++i) kp.push_back(b.K(i, p));
    for (size_t v = 0; v < l.vars.size(); ++v) {
      Step a = step_binary(StepKind::Mul, rho, b.KT(v, kp));
      if (l.omega) {
        // omega = α‖βQx − b‖² + <c, Qx> + γ‖Qx‖²: Hessian (2αβ² + 2γ)QᵀQ.
        const FunctionTerm& t = *l.omega;
        Step qp = step_forward(t.arg, {p[v]});
        a = step_axpby(scalar(2 * t.alpha * t.beta * t.beta + 2 * t.gamma), step_adjoint(t.arg, 0, qp), scalar(1), a);
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
    if (l.omega) {
      // omega's linear part 2αβQᵀb − Qᵀc.
      const FunctionTerm& t = *l.omega;
      auto data_or_fill = [&](const Param& q) { return q.array ? step_data(q.array) : step_fill(q.scalar, t.arg->shape); };
      if (!t.b.is_scalar(0)) {
        rhs = step_axpby(scalar(2 * t.alpha * t.beta), step_adjoint(t.arg, 0, data_or_fill(t.b)), scalar(1), rhs);
      }
      if (!t.c.is_scalar(0)) rhs = step_axpby(scalar(-1), step_adjoint(t.arg, 0, data_or_fill(t.c)), scalar(1), rhs);
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

// Whether no value of d[0, n) is inf or NaN (exponent bits all ones): adding
// one to the exponent field carries into the sign bit only then. AND, ADD and
// OR on 32-bit integers, which the compiler vectorizes with plain SSE2.
bool all_finite(const float* d, size_t n) {
  uint32_t carry = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, d + i, sizeof bits);
    carry |= (bits & 0x7f800000u) + 0x00800000u;
  }
  return (carry & 0x80000000u) == 0;
}

// Whether every array is finite. A check scans the whole state, which at
// 512² took about half as long as the check's pipeline on one core: large
// states are scanned in slices on every core.
bool all_finite(const std::map<std::string, Array>& arrays) {
  size_t total = 0;
  for (const auto& [name, a] : arrays) total += a.data.size();
  const size_t threads = total < (size_t{1} << 20) ? 1 : std::max(1u, std::thread::hardware_concurrency());
  // Slices of about total / threads values; thread t scans slices t, t + threads, ...
  const size_t per = std::max<size_t>(1, (total + threads - 1) / threads);
  std::vector<std::pair<const float*, size_t>> slices;
  for (const auto& [name, a] : arrays) {
    for (size_t at = 0; at < a.data.size(); at += per) slices.push_back({a.data.data() + at, std::min(per, a.data.size() - at)});
  }
  auto scan = [&slices, threads](size_t t) {
    for (size_t k = t; k < slices.size(); k += threads) {
      if (!all_finite(slices[k].first, slices[k].second)) return false;
    }
    return true;
  };
  std::vector<std::future<bool>> others;
  for (size_t t = 1; t < threads; ++t) others.push_back(std::async(std::launch::async, scan, t));
  bool finite = scan(0);
  for (auto& f : others) finite = f.get() && finite;
  return finite;
}

// Checkpoints: "PROXCKPT1\n", an 8-byte little-endian header length, a JSON
// header (solver, iteration, problem signature, arrays: name and shape), then
// the arrays' float32 values in header order.
void save_checkpoint(const std::string& path, const std::string& solver, const std::string& signature, int iteration,
                     const std::map<std::string, Array>& state) {
  nlohmann::ordered_json h;
  h["solver"] = solver;
  h["iteration"] = iteration;
  h["signature"] = signature;
  h["arrays"] = nlohmann::ordered_json::array();
  for (const auto& [name, a] : state) h["arrays"].push_back({{"name", name}, {"shape", a.shape}});
  std::string header = h.dump();
  std::string out = "PROXCKPT1\n";
  uint64_t len = header.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  for (const auto& [name, a] : state) {
    out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float));
  }
  write_file_atomic(path, out);
}

int load_checkpoint(const std::string& path, const std::string& solver, const std::string& signature,
                    std::map<std::string, Array>* state) {
  std::string bytes = read_file(path);
  user_assert(bytes.size() >= 18 && bytes.compare(0, 10, "PROXCKPT1\n") == 0) << path << ": not a proxc checkpoint";
  uint64_t len = 0;
  for (int i = 0; i < 8; ++i) len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[10 + i])) << (8 * i);
  user_assert(len <= bytes.size() - 18) << path << ": truncated checkpoint header";
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(bytes.substr(18, len));
    user_assert(h.is_object() && h.contains("solver") && h["solver"].is_string() && h.contains("signature") &&
                h["signature"].is_string() && h.contains("iteration") && h["iteration"].is_number_integer() &&
                h.contains("arrays") && h["arrays"].is_array())
        << path << ": corrupt checkpoint header";
    for (const auto& a : h["arrays"]) {
      user_assert(a.is_object() && a.contains("name") && a["name"].is_string() && a.contains("shape") &&
                  a["shape"].is_array())
          << path << ": corrupt checkpoint header";
    }
  } catch (const nlohmann::json::exception& e) {
    user_error << path << ": corrupt checkpoint header: " << e.what();
  }
  user_assert(h.value("solver", "") == solver) << path << ": the checkpoint is of the solver '" << h.value("solver", "")
                                               << "', not '" << solver << "'";
  user_assert(h.value("signature", "") == signature) << path << ": the checkpoint belongs to another problem";
  size_t off = 18 + len;
  user_assert(h["arrays"].size() == state->size()) << path << ": the checkpoint holds " << h["arrays"].size()
                                                   << " arrays, the solver state " << state->size();
  for (const auto& a : h.at("arrays")) {
    std::string name = a.at("name");
    auto it = state->find(name);
    user_assert(it != state->end()) << path << ": unexpected array '" << name << "'";
    Shape shape = a.at("shape").get<Shape>();
    user_assert(shape == it->second.shape) << path << ": array '" << name << "' has shape " << shape_to_string(shape);
    size_t n = it->second.data.size() * sizeof(float);
    user_assert(off + n <= bytes.size()) << path << ": truncated checkpoint data";
    std::memcpy(it->second.data.data(), bytes.data() + off, n);
    off += n;
  }
  user_assert(off == bytes.size()) << path << ": trailing bytes after the checkpoint data";
  int iteration = h.at("iteration").get<int>();
  user_assert(iteration >= 0) << path << ": negative iteration count";
  return iteration;
}

}  // namespace

SolveResult solve(const Problem& problem, const SolverOptions& options, Backend& backend) {
  options.validate();
  SolveResult result;
  SolverSummary& sum = result.summary;
  sum.solver = kind_of<SolverKind>(options.solver);
  sum.backend_requested = kind_of<BackendKind>(backend.name());
  sum.backend_used = sum.backend_requested;
  sum.schedule_requested = kind_of<ScheduleKind>(backend.schedule_requested());

  // Passes: continue the default pipeline, split for this solver.
  auto t0 = Clock::now();
  user_assert(problem.solver.empty() || problem.solver == options.solver)
      << "the problem was split for the solver '" << problem.solver << "'; solve it with --solver " << problem.solver
      << " or start from a dump taken before the split pass";
  PassManagerOptions po;
  po.pass.solver = options.solver;
  Problem p = run_passes(problem, po);
  try {
    verify_passes_invariants(p);
  } catch (const InternalError& e) {
    // A hand-edited or corrupt dump, not a bug of the passes that made it.
    user_error << "the problem's record of passes is inconsistent (" << e.what() << ")";
  }
  sum.passes_s = since(t0);
  sum.knorm = p.variable_scale() * p.variable_scale();
  Layout l = layout_of(p);
  user_assert(!l.vars.empty()) << "the problem has no variable";
  {
    // Refuse before allocating: the state (x and its companions, z/u or y per
    // psi term) and the pipelines' temporaries, about 4 buffers of each.
    double bytes = 4.0 * sizeof(float) * static_cast<double>(total_size(l.vars) + total_size(psi_args(l)));
    user_assert(bytes <= static_cast<double>(Limits::max_array_bytes()))
        << "solve: the solver's buffers need about " << format_bytes(bytes) << ", more than the limit of "
        << format_bytes(static_cast<double>(Limits::max_array_bytes())) << " (the machine's memory, or --max-memory)";
  }

  // Compile.
  t0 = Clock::now();
  std::vector<StepProgram> programs = {iteration_program(p, options)};
  const std::vector<StepProgram> cg = cg_step_programs(p, options);
  const bool host_cg = !cg.empty();
  programs.insert(programs.end(), cg.begin(), cg.end());
  // The user's objective at the result, on the solve's backend (on the
  // emulator, a 2048² deconvolution's objective took longer than its 40
  // iterations on Halide) with its default schedule. With an autoscheduler
  // requested, on the emulator as before: an autoscheduler's fallback on it
  // would make the whole solve report the default schedule.
  const bool objective_on_backend = backend.schedule_requested() == "default";
  if (objective_on_backend) programs.push_back(objective_program(problem));
  auto compiled = compile_hoisted(backend, programs);
  std::unique_ptr<InvariantStep> step = std::move(compiled[0]), cg_init, cg_apply, cg_update;
  std::unique_ptr<InvariantStep> objective = objective_on_backend ? std::move(compiled.back()) : nullptr;
  if (host_cg) {
    cg_init = std::move(compiled[1]);
    cg_apply = std::move(compiled[2]);
    cg_update = std::move(compiled[3]);
  }
  for (auto* s : {&step, &cg_init, &cg_apply, &cg_update}) {
    if (*s) (*s)->profile_into(&sum.programs);
  }
  // The CG runs' outputs, kept from one x-update to the next as storage.
  StepOutputs cg_init_out, cg_update_out, cg_dir[2];
  std::map<std::string, Array> cg_r, cg_x;  // the residual and the iterate
  sum.compile_s = since(t0);

  // State, in the scaled units s = sqrt(knorm)·x.
  const double scale = p.variable_scale();
  std::map<std::string, Array> state;
  std::vector<std::string> var_names;
  for (size_t v = 0; v < l.vars.size(); ++v) {
    Array x(l.vars[v]->shape);
    auto it = options.x0.find(PrintPlan(p).name(l.vars[v].get()));
    if (it != options.x0.end()) {
      user_assert(it->second.shape == x.shape) << "x0 for '" << l.vars[v]->name_hint << "' has shape "
                                               << shape_to_string(it->second.shape) << ", the variable "
                                               << shape_to_string(x.shape);
      for (size_t i = 0; i < x.data.size(); ++i) x.data[i] = static_cast<float>(it->second.data[i] * scale);
    }
    state[l.name(v)] = x;
    if (options.solver == "pc") state["xbar" + std::to_string(v)] = x;
  }
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Shape& s = l.psi[i]->arg->shape;
    if (options.solver == "pc") {
      state["y" + std::to_string(i)] = Array(s);
    } else {
      state["z" + std::to_string(i)] = Array(s);
      state["u" + std::to_string(i)] = Array(s);
    }
  }
  const double m = static_cast<double>(total_size(psi_args(l)));
  const double n = static_cast<double>(total_size(l.vars));

  // HQS continuation: rho = 1, 2√2, 8, ... up to 256, max_iters spread over the levels.
  std::vector<double> hqs_rhos;
  for (double r = 1; r < options.hqs_rho_max; r *= 2 * std::sqrt(2.0)) hqs_rhos.push_back(r);
  hqs_rhos.push_back(options.hqs_rho_max);

  // A signature of the split, scaled problem and the options that shape the
  // iterates, so a checkpoint only resumes the same run.
  const std::string signature = content_hash(print_text(p) + "|" + options.solver + "|" + std::to_string(options.fuse) +
                                             "|" + std::to_string(options.max_iters) + "|" +
                                             format_double(options.hqs_rho_max));
  int it = 0;
  if (!options.resume_path.empty()) it = load_checkpoint(options.resume_path, options.solver, signature, &state);
  auto checkpoint = [&](int iteration) {
    if (!options.checkpoint_path.empty()) save_checkpoint(options.checkpoint_path, options.solver, signature, iteration, state);
  };
  int last_checkpoint = it;
  int ran = it;  // iterations run (HQS skips the rest of a level once it converges there)
  auto start = Clock::now();
  sum.termination = Termination::MaxIterations;
  StepOutputs out;  // after the first iteration: the arrays of the state before last, reused as outputs
  // Convergence is checked every check_every iterations (see SolverOptions):
  // a run is a check when it crosses a multiple of check_every, ends the
  // solve, or follows a run after which the time limit was up or an
  // interrupt came. A failed check (divergence) returns the variables of the
  // last check that passed: kept here when runs between checks overwrite them.
  const bool copies = options.check_every > options.fuse;
  std::map<std::string, Array> checked_x;
  int checked_iteration = it;
  bool stop_next = false;
  auto keep_checked = [&] {
    checked_iteration = ran;
    if (!copies) return;
    for (size_t v = 0; v < l.vars.size(); ++v) checked_x[l.name(v)] = state.at(l.name(v));
  };
  keep_checked();
  // A run's outputs become the state; the arrays they replace are the next
  // run's output storage.
  auto adopt_outputs = [&] {
    for (auto& [k, a] : out.arrays) std::swap(state[k], a);
  };
  bool state_whole = true;  // false when a divergence left only the variables restored
  while (it < options.max_iters) {
    double rho = 1;
    size_t level = 0;
    if (options.solver == "hqs") {
      level = std::min(hqs_rhos.size() - 1, static_cast<size_t>(it) * hqs_rhos.size() / options.max_iters);
      rho = hqs_rhos[level];
    }
    if (host_cg) {
      // x-update: (rho·KᵀK + H_omega) x = rhs, by conjugate gradients from the
      // current x. The arrays are the programs' (cg_programs); the host keeps
      // the scalars and hands the outputs of one run to the next.
      StepInputs in;
      for (auto& [k, a] : state) in.buffers[k] = &a;
      in.params["rho"] = rho;
      cg_init->run_into(in, &cg_init_out);
      double rr = cg_init_out.scalars.at("rr");
      const double bnorm = std::sqrt(cg_init_out.scalars.at("bb"));
      for (size_t v = 0; v < l.vars.size(); ++v) {
        const std::string r = "r" + std::to_string(v);
        std::swap(cg_r[r], cg_init_out.arrays.at(r));
      }
      // The iterate: the state's x until the first step writes cg_x (the
      // state is left as it was should the solve break down).
      bool moved = false;
      StepOutputs* dir = &cg_dir[0];   // this step's p, ap
      StepOutputs* last = &cg_dir[1];  // the last step's
      double beta = 0;
      for (int k = 0; k < options.cg_max_iters && std::sqrt(rr) > options.cg_tol * std::max(bnorm, 1e-30); ++k) {
        StepInputs ain;
        for (size_t v = 0; v < l.vars.size(); ++v) {
          const std::string n = std::to_string(v);
          ain.buffers["r" + n] = &cg_r.at("r" + n);
          ain.buffers["q" + n] = k == 0 ? &cg_r.at("r" + n) : &last->arrays.at("p" + n);  // beta = 0 at k = 0
        }
        ain.params["rho"] = rho;
        ain.params["beta"] = beta;
        cg_apply->run_into(ain, dir);
        const double pap = dir->scalars.at("pap");
        if (!(pap > 0)) break;
        StepInputs uin;
        for (size_t v = 0; v < l.vars.size(); ++v) {
          const std::string n = std::to_string(v);
          uin.buffers[l.name(v)] = moved ? &cg_x.at(l.name(v)) : &state.at(l.name(v));
          uin.buffers["r" + n] = &cg_r.at("r" + n);
          uin.buffers["p" + n] = &dir->arrays.at("p" + n);
          uin.buffers["ap" + n] = &dir->arrays.at("ap" + n);
        }
        uin.params["alpha"] = rr / pap;
        cg_update->run_into(uin, &cg_update_out);
        for (size_t v = 0; v < l.vars.size(); ++v) {
          const std::string r = "r" + std::to_string(v);
          std::swap(cg_x[l.name(v)], cg_update_out.arrays.at(l.name(v)));
          std::swap(cg_r.at(r), cg_update_out.arrays.at(r));
        }
        moved = true;
        ++sum.cg_steps;
        const double rr1 = cg_update_out.scalars.at("rr");
        beta = rr1 / rr;
        rr = rr1;
        std::swap(dir, last);
      }
      if (moved) {
        if (!all_finite(cg_x)) {
          sum.termination = Termination::Diverged;  // the CG solve broke down: keep the last finite state
          break;
        }
        // The new x into the state; the old one is the next x-update's storage.
        for (size_t v = 0; v < l.vars.size(); ++v) std::swap(state.at(l.name(v)), cg_x.at(l.name(v)));
      }
    }
    StepInputs in;
    for (auto& [k, a] : state) in.buffers[k] = &a;
    if (options.solver == "admm" || options.solver == "hqs") in.params["rho"] = rho;
    const int done = it + options.fuse;  // fuse is 1 except for pc and ladmm
    const bool check = stop_next || done >= options.max_iters ||
                       (ran + options.fuse) / options.check_every > ran / options.check_every;
    in.params[kCheckParam] = check ? 1 : 0;
    step->run_into(in, &out);  // into the arrays of two iterations ago
    ran += options.fuse;
    if (!check) {
      adopt_outputs();
      it = done;
      stop_next = (options.interrupt && options.interrupt->load()) ||
                  (options.time_limit_s > 0 && since(start) >= options.time_limit_s);
      continue;
    }
    IterationInfo info;
    info.iteration = std::min(ran, options.max_iters);
    info.r = std::sqrt(out.scalars.at("r2"));
    info.s = std::sqrt(out.scalars.at("s2"));
    if (options.solver == "pc") {
      info.eps_pri = std::sqrt(n) * options.eps_abs +
                     options.eps_rel * std::sqrt(std::max(out.scalars.at("pri_a"), out.scalars.at("pri_b")));
      info.eps_dual = std::sqrt(m) * options.eps_abs +
                      options.eps_rel * std::sqrt(std::max(out.scalars.at("dual_a"), out.scalars.at("dual_b")));
    } else {
      info.eps_pri = std::sqrt(m) * options.eps_abs +
                     options.eps_rel * std::sqrt(std::max(out.scalars.at("kx2"), out.scalars.at("znorm2")));
      info.eps_dual = std::sqrt(n) * options.eps_abs + options.eps_rel * std::sqrt(out.scalars.at("ktu2"));
    }
    info.seconds = since(start);
    if (!std::isfinite(info.r) || !std::isfinite(info.s) || !all_finite(out.arrays)) {
      sum.termination = Termination::Diverged;
      if (copies && checked_iteration != ran - options.fuse) {
        // Runs since the last check overwrote the state: its variables were kept.
        for (auto& [k, a] : checked_x) state[k] = std::move(a);
        state_whole = false;
      }  // else the state before this run, still in `state`, passed the last check
      sum.iterations = checked_iteration;
      break;
    }
    adopt_outputs();
    it = done;
    result.history.push_back(info);
    sum.last = info;
    sum.iterations = info.iteration;
    keep_checked();
    const bool stopping = options.eps_abs > 0 || options.eps_rel > 0;
    if (stopping && info.r <= info.eps_pri && info.s <= info.eps_dual) {
      if (options.solver == "hqs" && level + 1 < hqs_rhos.size()) {
        // Converged for this rho: continue with the next, larger one.
        it = static_cast<int>(((level + 1) * static_cast<size_t>(options.max_iters) + hqs_rhos.size() - 1) /
                              hqs_rhos.size());
        continue;
      }
      sum.termination = Termination::Converged;
      break;
    }
    if (options.callback && !options.callback(info)) {
      sum.termination = Termination::UserStop;
      break;
    }
    if (options.checkpoint_every > 0 && it - last_checkpoint >= options.checkpoint_every) {
      checkpoint(it);
      last_checkpoint = it;
    }
    if (options.interrupt && options.interrupt->load()) {
      sum.termination = Termination::Interrupted;
      break;
    }
    if (options.time_limit_s > 0 && info.seconds >= options.time_limit_s) {
      sum.termination = Termination::TimeLimit;
      break;
    }
  }
  sum.iterate_s = since(start);
  // After the runs: an autoscheduled pipeline that failed when it ran fell
  // back to the default schedule then (HalideBackend).
  sum.schedule_used = kind_of<ScheduleKind>(backend.schedule_used());
  // A diverged state whose variables alone were restored is not saved over the last good checkpoint.
  if (!options.checkpoint_path.empty() && state_whole) checkpoint(it);

  // Back to the user's units, and the user's objective there. The passes keep
  // the variable nodes, so they are the user's; results are named as the
  // printer names them (unique even when two variables share a hint).
  std::map<const ExprNode*, const Array*> xs;
  PrintPlan names(p);
  for (size_t v = 0; v < l.vars.size(); ++v) {
    Array x = state.at(l.name(v));
    for (float& f : x.data) f = static_cast<float>(f / scale);
    const std::string& name = names.name(l.vars[v].get());
    result.x[name] = std::move(x);
    result.variables.emplace_back(l.vars[v], name);
    xs[l.vars[v].get()] = &result.x.at(name);
  }
  ObjectiveReport obj;
  if (objective) {
    obj = evaluate_objective([&](const StepInputs& in) { return objective->run(in); }, problem, xs);
  } else {
    auto emulator = make_emulate_backend();
    obj = evaluate_objective(*emulator, problem, xs);
  }
  sum.objective = obj.total;
  sum.has_projection = obj.has_projection;
  sum.objective_at_projection = obj.total_at_projection;
  return result;
}

std::vector<StepProgram> cg_step_programs(const Problem& p, const SolverOptions& o) {
  if (o.solver != "hqs" && !(o.solver == "admm" && !admm_is_direct(p))) return {};
  CgPrograms c = cg_programs(layout_of(p));
  return {c.init, c.apply, c.update};
}

}  // namespace proxc::internal
