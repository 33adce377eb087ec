// absorb: folds what the functions' parameters can carry out of the operand.
//
// Guarantees afterwards, for every term alpha·f(beta·v − b) + <c, v> + gamma||v||² + d
// with operand v:
// - an outermost constant offset `e − b0` (or `e + b0` with a scalar b0) is gone
//   from v and carried by b (and d, c) — when the new parameters are scalars or
//   reuse an existing constant (b = 0 and beta = 1: b becomes b0 itself);
// - an outermost scalar factor (`s * e`, `-e`) is carried by beta (and c, gamma)
//   when c is a scalar;
// - nonneg(mul_elemwise(w, e)) with every w > 0 (and b, c, gamma zero) is nonneg(e);
// - sum_squares of an operator with a diagonal or circulant Gram matrix
//   (a variable, mul_elemwise(w, x), conv(k, x), or a scaling of these), with
//   c = 0 and gamma = 0, becomes least_squares (same value; a solver may take its
//   prox with respect to x by a direct solve);
// - the objective is unchanged at every point (up to rounding).
// It never creates new data arrays: what would need one stays in the operand.

#include <cmath>

#include "passes/pass.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

bool is_scalar_constant(const Expr& e) {
  return e->is_constant() && e->constant->source.type == ConstantSource::Type::Scalar;
}

double scalar_value(const Expr& e) { return e->constant->source.scalar; }

// Σ c_i·b0_i over the operand's entries (broadcasting scalars).
double inner(const Param& c, const Expr& b0, int64_t n) {
  const Array* ca = c.array ? &c.array->constant->array : nullptr;
  const Array& ba = b0->constant->array;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) {
    double cv = ca ? (ca->data.size() == 1 ? ca->data[0] : ca->data[static_cast<size_t>(i)]) : c.scalar;
    double bv = ba.data.size() == 1 ? ba.data[0] : ba.data[static_cast<size_t>(i)];
    s += cv * bv;
  }
  return s;
}

// Moves an offset b0 out of v = e + sign·b0. Returns false when the new
// parameters would need a new array.
bool absorb_offset(FunctionTerm* t, const Expr& e, const Expr& b0, double sign) {
  const int64_t n = num_elements(t->arg->shape);
  // f(beta·(e + sign·b0) − b) = f(beta·e − (b − sign·beta·b0))
  Param nb;
  if (is_scalar_constant(b0) && !t->b.is_array()) {
    nb = Param::of(t->b.scalar - sign * t->beta * scalar_value(b0));
  } else if (sign < 0 && t->b.is_scalar(0) && t->beta == 1 && b0->shape == t->arg->shape) {
    nb = Param::of(b0);
  } else {
    return false;
  }
  // <c, e + s·b0> = <c, e> + s·<c, b0>;  gamma||e + s·b0||² = gamma||e||² + 2·s·gamma<b0, e> + gamma||b0||².
  if (t->gamma != 0 && !(is_scalar_constant(b0) && !t->c.is_array())) return false;
  double d = t->d + sign * inner(t->c, b0, n);
  if (t->gamma != 0) {
    double bv = scalar_value(b0);
    t->c = Param::of(t->c.scalar + 2 * sign * t->gamma * bv);
    d += t->gamma * bv * bv * static_cast<double>(n);
  }
  t->b = nb;
  t->d = d;
  t->arg = e;
  return true;
}

bool absorb_once(FunctionTerm* t) {
  const Expr& v = t->arg;
  const auto& a = v->args;
  switch (v->kind) {
    case ExprKind::Sub:
      if (!a[1]->has_variable) return absorb_offset(t, a[0], a[1], -1);
      return false;
    case ExprKind::Add:
      if (!a[1]->has_variable && is_scalar_constant(a[1])) return absorb_offset(t, a[0], a[1], +1);
      if (!a[0]->has_variable && is_scalar_constant(a[0])) return absorb_offset(t, a[1], a[0], +1);
      return false;
    case ExprKind::Scale:
    case ExprKind::Neg: {
      if (t->c.is_array()) return false;
      double s = v->kind == ExprKind::Scale ? v->scalar : -1.0;
      if (s == 0) return false;
      // f(beta·s·e − b), <c, s·e> = <s·c, e>, gamma||s·e||² = gamma·s²||e||².
      t->beta *= s;
      t->c = Param::of(t->c.scalar * s);
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

}  // namespace

Problem absorb_pass(const Problem& p, const PassOptions&) {
  Problem out = p;
  for (FunctionTerm& t : out.terms) {
    // Least-squares terms already carry their operator; leave them be.
    if (t.kind == FunctionKind::LeastSquares) continue;
    while (absorb_once(&t)) {
    }
    if (t.kind == FunctionKind::SumSquares && t.c.is_scalar(0) && t.gamma == 0 &&
        is_direct_least_squares_operator(t.arg)) {
      t.kind = FunctionKind::LeastSquares;
    }
    t = make_term(t);
  }
  out.passes_run.push_back("absorb");
  return out;
}

}  // namespace proxc::internal
