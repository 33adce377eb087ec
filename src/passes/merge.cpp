// merge: folds a plain quadratic into another term on the same operand.
//
// Guarantees afterwards: no two unsplit terms share an operand node where one
// of them is sum_squares with scalar b and c and the other can take the
// quadratic into its gamma, c and d while those stay scalars:
//   alpha1·||beta1·v − b1||² + c1·Σv + gamma1||v||² + d1
//     = (alpha1·beta1² + gamma1)·||v||² + (c1 − 2·alpha1·beta1·b1)·Σv + (alpha1·b1²·n + d1).
// The merged term takes the place of the earlier of the two. Every prox stays
// closed-form (each function's prox handles gamma and c). The objective is
// unchanged. least_squares terms and terms already split are left alone.

#include "passes/pass.h"

namespace proxc::internal {

namespace {

bool is_plain_quadratic(const FunctionTerm& t) {
  return t.kind == FunctionKind::SumSquares && !t.b.is_array() && !t.c.is_array() && t.role == TermRole::Unassigned;
}

// Folds quadratic q into t; false when t's c is an array and would change.
bool fold(const FunctionTerm& q, FunctionTerm* t) {
  const double n = static_cast<double>(num_elements(q.arg->shape));
  const double dc = q.c.scalar - 2 * q.alpha * q.beta * q.b.scalar;
  if (t->c.is_array() && dc != 0) return false;
  t->gamma += q.alpha * q.beta * q.beta + q.gamma;
  if (!t->c.is_array()) t->c = Param::of(t->c.scalar + dc);
  t->d += q.alpha * q.b.scalar * q.b.scalar * n + q.d;
  return true;
}

}  // namespace

Problem merge_pass(const Problem& p, const PassOptions&) {
  Problem out = p;
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < out.terms.size() && !changed; ++i) {
      for (size_t j = i + 1; j < out.terms.size() && !changed; ++j) {
        FunctionTerm& a = out.terms[i];
        FunctionTerm& b = out.terms[j];
        if (a.arg != b.arg || a.role != TermRole::Unassigned || b.role != TermRole::Unassigned) continue;
        if (a.kind == FunctionKind::LeastSquares || b.kind == FunctionKind::LeastSquares) continue;
        // Fold the quadratic into the other term (into the earlier one when both are quadratics).
        if (is_plain_quadratic(b)) {
          FunctionTerm merged = a;
          if (!fold(b, &merged)) continue;
          a = make_term(merged);
          out.terms.erase(out.terms.begin() + static_cast<long>(j));
          changed = true;
        } else if (is_plain_quadratic(a)) {
          FunctionTerm merged = b;
          if (!fold(a, &merged)) continue;
          a = make_term(merged);
          out.terms.erase(out.terms.begin() + static_cast<long>(j));
          changed = true;
        }
      }
    }
  }
  out.passes_run.push_back("merge");
  return out;
}

}  // namespace proxc::internal
