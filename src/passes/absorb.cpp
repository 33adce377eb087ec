// absorb: folds what the functions' parameters can carry out of the operand.
//
// Guarantees afterwards, for every term alpha·f(beta·v − b) + <c, v> + gamma||v||² + d
// with operand v:
// - v has no constant offset that linear operators and sums can carry out of
//   it: v = L + e0 with L linear and e0 a constant expression (offsets in any
//   position and sign, under negation, scalar factors and single-operand
//   linear operators: conv(k, x + c) = conv(k, x) + conv(k, c)) becomes L,
//   and the parameters take e0 exactly:
//     f(beta·(L + e0) − b) = f(beta·L − (b − beta·e0)),
//     <c, L + e0> = <c, L> + <c, e0>,
//     gamma||L + e0||² = gamma||L||² + <2·gamma·e0, L> + gamma||e0||²;
//   new array parameters are constant expressions of the old ones, folded
//   (emulate/fold.h), so that a printed problem writes `b=0.5 * b`. An offset
//   inside a stack (vstack of an affine part) stays;
// - an outermost scalar factor (`s * e`, `-e`) is carried by beta, c and gamma;
// - nonneg(mul_elemwise(w, e)) with every w > 0 (and b, c, gamma zero) is nonneg(e);
// - sum_squares of an operator with a diagonal or circulant Gram matrix
//   (a variable, mul_elemwise(w, x), conv(k, x), or a scaling of these), with
//   c = 0 and gamma = 0, becomes least_squares (same value; a solver may take its
//   prox with respect to x by a direct solve);
// - the objective is unchanged at every point (up to rounding; the constants
//   <c, e0> and gamma||e0||² are summed into d from the data as it is now).

#include <cmath>
#include <unordered_map>

#include "emulate/fold.h"
#include "emulate/linop.h"
#include "passes/pass.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

bool is_scalar_constant(const Expr& e) { return e->is_constant() && e->rank() == 0; }

// Values in double: a scalar as written, a derived constant's exact values.
double scalar_value(const Expr& e) { return emulate::constant_at(e.get(), e->constant->array, 0); }

// What a derived constant was folded from, else the node itself: the
// simplifications below look through folding.
const Expr& unfolded(const Expr& e) {
  if (e->is_constant() && e->constant->source.type == ConstantSource::Type::Derived) return e->constant->source.expr;
  return e;
}

// s·e for a constant expression, folded, with s·(t·e) = (s·t)·e and −e kept short.
Expr times(double s, const Expr& e) {
  const Expr& u = unfolded(e);
  if (s == 1) return e;
  if (is_scalar_constant(e)) return make_scalar_constant(s * scalar_value(e));
  if (u->kind == ExprKind::Neg) return times(-s, u->args[0]);
  if (u->kind == ExprKind::Scale) return times(s * u->scalar, u->args[0]);
  return fold_constant(s == -1 ? make_neg(e) : make_scale(s, e));
}

// a + s·e for constant expressions (a null: 0), folded.
Expr plus(const Expr& a, double s, const Expr& e) {
  if (!a) return times(s, e);
  if (is_scalar_constant(a) && is_scalar_constant(e)) return make_scalar_constant(scalar_value(a) + s * scalar_value(e));
  if (is_scalar_constant(a) && scalar_value(a) == 0) return times(s, e);
  Expr se = times(s, e);
  const Expr& u = unfolded(se);
  if (u->kind == ExprKind::Neg) return fold_constant(make_sub(a, u->args[0]));
  return fold_constant(make_add(a, se));
}

// A parameter as a constant expression (a scalar one as a scalar constant).
Expr as_expr(const Param& p) { return p.array ? p.array : make_scalar_constant(p.scalar); }

// A constant expression as a parameter (a scalar one as a scalar).
Param as_param(const Expr& e) { return is_scalar_constant(e) ? Param::of(scalar_value(e)) : Param::of(e); }

// Value i of a parameter or a folded constant, broadcasting rank 0.
double at(const Param& p, size_t i) {
  return p.array ? emulate::constant_at(p.array.get(), p.array->constant->array, i) : p.scalar;
}

// An operand split as linear + offset: the offset a folded constant (null:
// none), the linear part null when the operand is a constant.
struct Affine {
  Expr linear;
  Expr offset;
};

using AffineMemo = std::unordered_map<const ExprNode*, Affine>;

Affine split_affine_node(const Expr& e, AffineMemo* memo);

// Each node once (a DAG may share a node on many paths: `a1 = a0 + a0`, ...).
Affine split_affine(const Expr& e, AffineMemo* memo) {
  auto it = memo->find(e.get());
  if (it != memo->end()) return it->second;
  Affine out = split_affine_node(e, memo);
  (*memo)[e.get()] = out;
  return out;
}

Affine split_affine_node(const Expr& e, AffineMemo* memo) {
  if (!e->has_variable) return {nullptr, fold_constant(e)};  // builders fold: a no-op but for hand-built IR
  const auto& a = e->args;
  switch (e->kind) {
    case ExprKind::Add:
    case ExprKind::Sub: {
      const double sign = e->kind == ExprKind::Add ? 1 : -1;
      Affine l = split_affine(a[0], memo), r = split_affine(a[1], memo);
      Expr linear;
      if (!l.linear) {
        linear = sign > 0 ? r.linear : make_neg(r.linear);
      } else if (!r.linear) {
        linear = l.linear;
      } else {
        linear = with_args(e, {l.linear, r.linear});
      }
      Expr offset = l.offset;
      if (r.offset) offset = plus(l.offset, sign, r.offset);
      return {linear, offset};
    }
    case ExprKind::Neg:
    case ExprKind::Scale: {
      Affine x = split_affine(a[0], memo);
      const double s = e->kind == ExprKind::Neg ? -1 : e->scalar;
      return {with_args(e, {x.linear}), x.offset ? times(s, x.offset) : nullptr};
    }
    default: break;
  }
  // A linear operator of one operand: op(L + e0) = op(L) + op(e0), when e0
  // has the operand's shape (a broadcast scalar would need an array).
  const std::vector<size_t> at_ = linear_positions(*e);
  if (at_.size() != 1) return {e, nullptr};
  const size_t i = at_[0];
  Affine x = split_affine(a[i], memo);
  if (!x.offset || x.offset->shape != a[i]->shape) return {e, nullptr};
  std::vector<Expr> lin = a, off = a;
  lin[i] = x.linear;
  // op(s·y) = s·op(y): the factor stays outside, where times() merges it.
  const Expr& e0 = x.offset;
  const Expr& u = unfolded(e0);
  double s = 1;
  off[i] = e0;
  if (u->kind == ExprKind::Neg || u->kind == ExprKind::Scale) {
    s = u->kind == ExprKind::Neg ? -1 : u->scalar;
    off[i] = u->args[0];
  }
  return {with_args(e, lin), times(s, fold_constant(with_args(e, off)))};
}

// v = L + e0 into the parameters (see the file comment). False when v has no offset.
bool absorb_offset(FunctionTerm* t) {
  AffineMemo memo;
  Affine s = split_affine(t->arg, &memo);
  if (!s.offset || !s.linear) return false;
  const Expr& e0 = s.offset;
  const int64_t n = num_elements(t->arg->shape);
  // d += <c, e0> + gamma||e0||², from the data.
  double d = t->d;
  const Param off = Param::of(e0);
  for (int64_t i = 0; i < n; ++i) {
    const double v = at(off, static_cast<size_t>(i));
    d += at(t->c, static_cast<size_t>(i)) * v + t->gamma * v * v;
  }
  if (t->gamma != 0) t->c = as_param(plus(as_expr(t->c), 2 * t->gamma, e0));
  t->b = as_param(plus(as_expr(t->b), -t->beta, e0));
  t->d = d;
  t->arg = s.linear;
  return true;
}

bool absorb_once(FunctionTerm* t) {
  if (absorb_offset(t)) return true;
  const Expr& v = t->arg;
  const auto& a = v->args;
  switch (v->kind) {
    case ExprKind::Scale:
    case ExprKind::Neg: {
      double s = v->kind == ExprKind::Scale ? v->scalar : -1.0;
      if (s == 0) return false;
      // f(beta·s·e − b), <c, s·e> = <s·c, e>, gamma||s·e||² = gamma·s²||e||².
      t->beta *= s;
      t->c = as_param(times(s, as_expr(t->c)));
      t->gamma *= s * s;
      t->arg = a[0];
      return true;
    }
    case ExprKind::MulElemwise: {
      if (t->kind != FunctionKind::Nonneg || !t->b.is_scalar(0) || !t->c.is_scalar(0) || t->gamma != 0) return false;
      for (float w : a[0]->constant->array.data) {
        if (!(w > 0)) return false;
      }
      t->arg = a[1];
      return true;
    }
    default:
      return false;
  }
}

// Whether a direct least-squares operator is a conv (solved by FFTs), not diagonal.
bool circulant_operator(const Expr& e) {
  double unused = 1;
  return strip_scalings(e, &unused)->kind == ExprKind::Conv;
}

}  // namespace

Problem absorb_pass(const Problem& p, const PassOptions& o) {
  // It would strip the scale pass's 1/knorm from the psi operands.
  user_assert(p.knorm == 0) << "absorb: the problem is already scaled (knorm = " << p.knorm
                            << "); run absorb before the scale pass";
  Problem out = p;
  for (FunctionTerm& t : out.terms) {
    // Least-squares terms already carry their operator; leave them be.
    if (t.kind == FunctionKind::LeastSquares) continue;
    if (!o.absorb_operators) {  // offsets only
      while (absorb_offset(&t)) {
      }
      t = make_term(t);
      continue;
    }
    while (absorb_once(&t)) {
    }
    if (o.diagonalize && t.kind == FunctionKind::SumSquares && t.c.is_scalar(0) && t.gamma == 0 &&
        is_direct_least_squares_operator(t.arg) && (o.circulant || !circulant_operator(t.arg))) {
      t.kind = FunctionKind::LeastSquares;
    }
    t = make_term(t);
  }
  out.passes_run.push_back("absorb");
  return out;
}

}  // namespace proxc::internal
