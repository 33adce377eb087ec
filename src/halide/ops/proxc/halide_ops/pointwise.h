/// \file
/// proxc::halide_ops::Graph: pointwise operations. Part of the Halide-op library
/// (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline Val Graph::binary(const std::string& op, const Val& a, const Val& b, const Ext& ext) {
  std::function<Halide::Expr(Halide::Expr, Halide::Expr)> fn;
  if (op == "add")
    fn = [](Halide::Expr x, Halide::Expr y) { return x + y; };
  else if (op == "sub")
    fn = [](Halide::Expr x, Halide::Expr y) { return x - y; };
  else if (op == "mul")
    fn = [](Halide::Expr x, Halide::Expr y) { return x * y; };
  else if (op == "div")
    fn = [](Halide::Expr x, Halide::Expr y) { return x / y; };
  else if (op == "min")
    fn = [](Halide::Expr x, Halide::Expr y) { return Halide::min(x, y); };
  else if (op == "max")
    fn = [](Halide::Expr x, Halide::Expr y) { return Halide::max(x, y); };
  else
    fail("binary: unknown operation " + op);
  // By a scalar: one reciprocal per run, then a multiplication per element
  // (a division's throughput is a tenth of a multiplication's; the result
  // is within 1.5 ulp of x / y instead of 0.5). At 512², where an
  // iteration is bound by its arithmetic, Pock–Chambolle's x-update
  // divides by 1 + τ: ≈ 9 % of the iteration (A/B, best of 8).
  if (op == "div" && b.rank() == 0) fn = [](Halide::Expr x, Halide::Expr y) { return x * (1.0f / y); };
  // An array and a (double) scalar: float32 arithmetic, the scalar rounded
  // to float once per run, as axpby's (in double, each element was
  // widened, multiplied at half the vector width, and narrowed back).
  const bool mixed = (a.rank() == 0) != (b.rank() == 0);
  auto operand = [&](const Val& o, const Coords& i) {
    return mixed && o.rank() == 0 ? Halide::cast<float>(at(o, i)) : at(o, i);
  };
  Val v = define(op, extents(ext), [&](const Coords& i) { return fn(operand(a, i), operand(b, i)); });
  v.loads = inline_loads({&a, &b});
  return rec(v, "binary", op, a, b, ext);
}

inline Val Graph::unary(const std::string& op, const Val& a, const Ext& ext) {
  std::function<Halide::Expr(Halide::Expr)> fn;
  if (op == "neg")
    fn = [](Halide::Expr x) { return -x; };
  else if (op == "abs")
    fn = [](Halide::Expr x) { return Halide::abs(x); };
  else if (op == "sqrt")
    fn = [](Halide::Expr x) { return Halide::sqrt(x); };
  else if (op == "sign")
    fn = [](Halide::Expr x) { return Halide::select(x > 0, 1.0f, x < 0, -1.0f, 0.0f); };
  else
    fail("unary: unknown operation " + op);
  Val v = define(op, extents(ext), [&](const Coords& i) { return fn(at(a, i)); });
  v.loads = inline_loads({&a});
  return rec(v, "unary", op, a, ext);
}

inline Val Graph::axpby(const Val& a, const Val& x, const Val& b, const Val& y, const Ext& ext) {
  Val v = define("axpby", extents(ext), [&](const Coords& i) {
    return Halide::cast<float>(at(a, i)) * at(x, i) + Halide::cast<float>(at(b, i)) * at(y, i);
  });
  v.loads = inline_loads({&a, &x, &b, &y});
  return rec(v, "axpby", a, x, b, y, ext);
}

inline Val Graph::sum(const std::vector<Val>& parts, const Ext& ext) {
  return rec(define("acc", extents(ext),
                    [&](const Coords& i) {
                      Halide::Expr s = call(parts[0], i);
                      for (size_t k = 1; k < parts.size(); ++k) s = s + call(parts[k], i);
                      return s;
                    }),
             "sum", parts, ext);
}

}  // namespace proxc::halide_ops
