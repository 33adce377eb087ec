#include "check/check.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "fft/fft.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"

namespace proxc::internal {

namespace {

Array random_array(const Shape& s, std::mt19937_64* rng) {
  Array a(s);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (float& v : a.data) v = n(*rng);
  return a;
}

std::string input_name(size_t i) { return "x" + std::to_string(i); }

// Inputs for each variable of k, in linop_variables order.
std::vector<Step> variable_inputs(const std::vector<Expr>& vars) {
  std::vector<Step> xs;
  for (size_t i = 0; i < vars.size(); ++i) xs.push_back(step_input(input_name(i), vars[i]->shape));
  return xs;
}

}  // namespace

std::vector<Expr> operators_of(const Expr& k) {
  std::vector<Expr> out;
  for_each_node({k}, [&](const Expr& e) { if (!e->is_variable()) out.push_back(e); }, nullptr,
                [](const ExprNode& n) { return n.has_variable; });
  return out;
}

Expr isolate_operator(const Expr& op) {
  std::vector<Expr> args;
  for (const Expr& a : op->args) {
    if (!a->has_variable) {
      args.push_back(a);
    } else if (a->rank() <= 4) {
      args.push_back(make_variable(a->shape, "x"));
    } else {
      // Operands of rank 5 or 6 (a black box of a colour volume's gradient):
      // a flat variable reshaped, the same operator on the same space.
      args.push_back(make_reshape(make_variable({num_elements(a->shape)}, "x"), a->shape));
    }
  }
  return with_args(op, args);
}

double rounding_work(const Expr& k) {
  double w = 0;
  for (const Expr& n : operators_of(k)) {
    switch (n->kind) {
      case ExprKind::Conv: {  // the taps of each output: the kernel's first dims axes
        const Shape& ks = n->args[0]->shape;
        w += static_cast<double>(num_elements(Shape(ks.begin(), ks.begin() + static_cast<long>(n->ints[0]))));
        break;
      }
      case ExprKind::Grad: w += 2.0 * static_cast<double>(n->ints[0]); break;
      case ExprKind::Warp: w += 4; break;
      case ExprKind::MulColor: w += 3; break;
      case ExprKind::PxwiseMatrixmult: {  // M terms per entry forward, N in the adjoint
        const Shape& as = n->args[0]->shape;
        w += static_cast<double>(std::max(as[as.size() - 2], as.back()));
        break;
      }
      // The user's code is unknown: counted as 16 float32 roundings (see
      // dot_test, which also computes at float precision at least).
      case ExprKind::BlackBox: w += 16; break;
      default: w += 1; break;
    }
  }
  return std::max(w, 1.0);
}

DotTestResult dot_test(Backend& backend, const Expr& k, uint64_t seed) {
  std::vector<Expr> vars = linop_variables(k);
  std::vector<Step> xs = variable_inputs(vars);
  Step y = step_input("y", k->shape);
  Step kx = step_forward(k, xs);
  StepProgram p;
  p.name = "dot_test";
  p.outputs.push_back({"lhs", step_reduce(StepKind::Dot, kx, y)});
  p.outputs.push_back({"kx2", step_reduce(StepKind::SumSquares, kx)});
  p.outputs.push_back({"y2", step_reduce(StepKind::SumSquares, y)});
  for (size_t i = 0; i < vars.size(); ++i) {
    Step kty = step_adjoint(k, static_cast<int>(i), y);
    p.outputs.push_back({"rhs" + std::to_string(i), step_reduce(StepKind::Dot, xs[i], kty)});
    p.outputs.push_back({"kty2_" + std::to_string(i), step_reduce(StepKind::SumSquares, kty)});
    p.outputs.push_back({"x2_" + std::to_string(i), step_reduce(StepKind::SumSquares, xs[i])});
  }
  std::mt19937_64 rng(seed);
  std::vector<Array> data;
  for (const Expr& v : vars) data.push_back(random_array(v->shape, &rng));
  Array ydata = random_array(k->shape, &rng);
  StepInputs in;
  for (size_t i = 0; i < vars.size(); ++i) in.buffers[input_name(i)] = &data[i];
  in.buffers["y"] = &ydata;
  StepOutputs out = backend.compile(p)->run(in);

  DotTestResult r;
  r.what = print_expression(k);
  r.lhs = out.scalars.at("lhs");
  double x2 = 0, kty2 = 0;
  for (size_t i = 0; i < vars.size(); ++i) {
    r.rhs += out.scalars.at("rhs" + std::to_string(i));
    x2 += out.scalars.at("x2_" + std::to_string(i));
    kty2 += out.scalars.at("kty2_" + std::to_string(i));
  }
  r.error = std::fabs(r.lhs - r.rhs);
  r.scale = std::sqrt(out.scalars.at("kx2") * out.scalars.at("y2")) + std::sqrt(x2 * kty2);
  // Black boxes compute in float32 whatever the backend's precision.
  bool black_box = false;
  for (const Expr& n : operators_of(k)) black_box = black_box || n->kind == ExprKind::BlackBox;
  const double eps = black_box ? std::max(backend.epsilon(), 1.1920928955078125e-07) : backend.epsilon();
  r.tolerance = 8 * eps * rounding_work(k) * r.scale;
  r.passed = std::isfinite(r.error) && r.error <= r.tolerance;
  return r;
}

namespace {

// The eigenvalue of largest magnitude of the symmetric tridiagonal matrix
// with diagonal a and off-diagonal b (b[i] joins rows i and i + 1): its
// largest and its smallest eigenvalue by bisection on Sturm counts (the
// number of negative pivots of the LDLᵀ factorization of T − xI is the
// number of eigenvalues below x), within Gershgorin's bounds.
double largest_magnitude_eigenvalue(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t m = a.size();
  double lo = 0, hi = 0;
  for (size_t i = 0; i < m; ++i) {
    const double r = (i > 0 ? std::fabs(b[i - 1]) : 0.0) + (i + 1 < m ? std::fabs(b[i]) : 0.0);
    hi = std::max(hi, a[i] + r);
    lo = std::min(lo, a[i] - r);
  }
  auto below = [&](double x) {  // eigenvalues < x
    size_t count = 0;
    double d = 1;
    for (size_t i = 0; i < m; ++i) {
      d = a[i] - x - (i > 0 ? b[i - 1] * b[i - 1] / d : 0.0);
      if (d == 0) d = -1e-300;  // (a zero pivot: x is an eigenvalue; counted below)
      if (d < 0) ++count;
    }
    return count;
  };
  // The x in [l, h] where below(x) first reaches `count`, to rounding.
  auto bisect = [&](double l, double h, size_t count) {
    for (int it = 0; it < 200 && h - l > 1e-15 * std::max(std::fabs(h), std::fabs(l)); ++it) {
      const double mid = 0.5 * (l + h);
      (below(mid) >= count ? h : l) = mid;
    }
    return h;
  };
  const double largest = bisect(lo, hi, m), smallest = bisect(lo, hi, 1);
  return std::max(largest, -smallest);
}

}  // namespace

NormEstimate estimate_norm(Backend& backend, const Expr& k, int max_iters, uint64_t seed, double tol,
                           bool rescale) {
  // Lanczos iteration on KᵀK from a random vector, the Krylov method with
  // which ProxImaL estimates ||K|| (est_CompGraph_norm: scipy's eigs on KᵀK,
  // ARPACK's Lanczos for a symmetric operator): step j applies KᵀK to the
  // unit vector v_j, and the largest eigenvalue of the j×j tridiagonal
  // matrix of the recurrence's coefficients (the largest Ritz value)
  // estimates ||K||², from below. The power iteration's iterates lie in the
  // same Krylov spaces; Lanczos converges much faster where the largest
  // singular values lie close together (blurs, gradients): after 100 steps on the
  // deconvolution example's vstack(conv, grad) (96×128), 2.99949 against
  // the power iteration's 2.99143, of 2.99972. Only the last two vectors are
  // kept (no reorthogonalization beyond v_j's: the largest Ritz value stays
  // a lower bound to rounding, its duplicates are harmless).
  std::vector<Expr> vars = linop_variables(k);
  std::vector<Step> xs = variable_inputs(vars);
  Step kx = step_forward(k, xs);
  StepProgram p;
  p.name = "lanczos_step";
  for (size_t i = 0; i < vars.size(); ++i) {
    p.outputs.push_back({"g" + std::to_string(i), step_adjoint(k, static_cast<int>(i), kx)});
  }
  auto compiled = backend.compile(p);
  std::mt19937_64 rng(seed);
  std::vector<Array> v, prev;
  for (const Expr& var : vars) v.push_back(random_array(var->shape, &rng));
  auto dot = [](const std::vector<Array>& x, const std::vector<Array>& y) {
    double s = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      for (size_t e = 0; e < x[i].data.size(); ++e) s += static_cast<double>(x[i].data[e]) * y[i].data[e];
    }
    return s;
  };
  // x ← x − c·y.
  auto subtract = [](std::vector<Array>* x, double c, const std::vector<Array>& y) {
    for (size_t i = 0; i < x->size(); ++i) {
      float* d = (*x)[i].data.data();
      for (size_t e = 0; e < (*x)[i].data.size(); ++e) d[e] = static_cast<float>(d[e] - c * y[i].data[e]);
    }
  };
  auto scale = [](std::vector<Array>* x, double c) {
    for (Array& a : *x) {
      for (float& f : a.data) f = static_cast<float>(f * c);
    }
  };
  NormEstimate est;
  const double n0 = std::sqrt(dot(v, v));
  if (!(n0 > 0)) return est;
  scale(&v, 1 / n0);
  std::vector<double> alpha, beta;
  double theta = 0;
  for (int it = 1; it <= max_iters; ++it) {
    StepInputs in;
    for (size_t i = 0; i < v.size(); ++i) in.buffers[input_name(i)] = &v[i];
    StepOutputs out = compiled->run(in);
    est.iterations = it;
    std::vector<Array> w;
    for (size_t i = 0; i < v.size(); ++i) w.push_back(std::move(out.arrays.at("g" + std::to_string(i))));
    // <v, KᵀK v> (not ||K v||², equal for a true adjoint: a black box's
    // inconsistent pair keeps the Rayleigh quotient of what it computes).
    const double a = dot(v, w);
    // KᵀK v is of the order of ||K||² in float32: above about 1e19 it
    // overflows, below 1e-19 it underflows. Then the iteration runs again on
    // K divided by ProxImaL's bound (the estimate scaled back).
    if (it == 1 && rescale && (!std::isfinite(a) || a > 1e18 || a < 1e-18)) {
      const double bound = norm_bound(k);
      if (std::isfinite(bound) && bound > 0) {
        NormEstimate e = estimate_norm(backend, make_scale(1 / bound, k), max_iters, seed, tol, false);
        e.value *= bound;
        return e;
      }
    }
    if (!std::isfinite(a)) {  // no estimate (as the power iteration's 0)
      theta = 0;
      est.finite = false;
      break;
    }
    alpha.push_back(a);
    subtract(&w, a, v);
    if (!beta.empty()) subtract(&w, beta.back(), prev);
    subtract(&w, dot(w, v), v);  // v_j's share once more: rounding in float
    // The Ritz value of largest magnitude, as the power iteration found the
    // dominant eigenvalue: KᵀK is positive semi-definite, unless a black
    // box's adjoint has the wrong sign.
    const double next = largest_magnitude_eigenvalue(alpha, beta);
    const double b = std::sqrt(dot(w, w));
    // Converged: the estimate moved by less than tol relative, or the
    // recurrence's residual b is that small (the Krylov space is invariant
    // to rounding, e.g. K = c·I: no Ritz value is then further than b from
    // an eigenvalue).
    const bool converged = (it > 1 && std::fabs(next - theta) <= tol * next) || !(b > tol * next);
    theta = next;
    if (converged) break;
    beta.push_back(b);
    scale(&w, 1 / b);
    prev = std::move(v);
    v = std::move(w);
  }
  est.value = std::sqrt(theta);
  return est;
}

namespace {
// Schur's test for an operator of one variable with nonnegative entries
// (interpolation weights, |k| of a convolution): ||W|| <= sqrt(max row sum ·
// max column sum), the row sums W·1 and the column sums Wᵀ·1 (1 of the
// output's shape, which may differ from the input's).
double schur_bound(const Expr& w) {
  const Expr var = linop_variables(w)[0];
  emulate::Tensor ones(var->shape), out_ones(w->shape);
  std::fill(ones.data.begin(), ones.data.end(), 1.0);
  std::fill(out_ones.data.begin(), out_ones.data.end(), 1.0);
  double rows = 0, cols = 0;
  const emulate::Tensor row_sums = emulate::forward(w, {{var.get(), &ones}}, false);
  const auto col_sums = emulate::adjoint(w, out_ones);
  for (double r : row_sums.data) rows = std::max(rows, r);
  for (double c : col_sums.at(var.get()).data) cols = std::max(cols, c);
  return std::sqrt(rows * cols);
}

// An upper bound of the largest singular value of the rows × cols matrix m
// (row-major). Up to 8 rows or columns: the square root of the largest
// eigenvalue of its Gram matrix of the smaller side, by cyclic Jacobi
// rotations to double rounding (exact but for rounding). Beyond, or should the
// rotations not converge: Schur's test, sqrt(max row sum · max column sum) of
// |m|, O(rows · cols).
double largest_singular_value(const float* m, size_t rows, size_t cols) {
  auto schur = [&] {
    double row = 0, col = 0;
    for (size_t i = 0; i < rows; ++i) {
      double r = 0;
      for (size_t j = 0; j < cols; ++j) r += std::fabs(m[i * cols + j]);
      row = std::max(row, r);
    }
    for (size_t j = 0; j < cols; ++j) {
      double c = 0;
      for (size_t i = 0; i < rows; ++i) c += std::fabs(m[i * cols + j]);
      col = std::max(col, c);
    }
    return std::sqrt(row * col);
  };
  const bool by_rows = rows <= cols;  // M Mᵀ (rows × rows), else Mᵀ M
  const size_t d = by_rows ? rows : cols, inner = by_rows ? cols : rows;
  if (d > 8) return schur();
  double g[64];
  for (size_t i = 0; i < d; ++i) {
    for (size_t j = 0; j < d; ++j) {
      double s = 0;
      for (size_t k = 0; k < inner; ++k) {
        s += by_rows ? double{m[i * cols + k]} * m[j * cols + k] : double{m[k * cols + i]} * m[k * cols + j];
      }
      g[i * d + j] = s;
    }
  }
  auto at = [&](size_t i, size_t j) -> double& { return g[i * d + j]; };
  bool converged = false;
  for (int sweep = 0; sweep < 64 && !converged; ++sweep) {
    double off = 0, diag = 0;
    for (size_t i = 0; i < d; ++i) {
      diag += at(i, i) * at(i, i);
      for (size_t j = i + 1; j < d; ++j) off += at(i, j) * at(i, j);
    }
    converged = off <= 1e-32 * diag;
    for (size_t p = 0; p < d && !converged; ++p) {
      for (size_t q = p + 1; q < d; ++q) {
        if (at(p, q) == 0) continue;
        // The rotation that zeroes entry (p, q) (Jacobi's method).
        const double theta = (at(q, q) - at(p, p)) / (2 * at(p, q));
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t k = 0; k < d; ++k) {
          const double kp = at(k, p), kq = at(k, q);
          at(k, p) = c * kp - s * kq;
          at(k, q) = s * kp + c * kq;
        }
        for (size_t k = 0; k < d; ++k) {
          const double pk = at(p, k), qk = at(q, k);
          at(p, k) = c * pk - s * qk;
          at(q, k) = s * pk + c * qk;
        }
      }
    }
  }
  if (!converged) return schur();
  double largest = 0;
  for (size_t i = 0; i < d; ++i) largest = std::max(largest, at(i, i));
  return std::sqrt(largest);
}
}  // namespace

double norm_bound(const Expr& k) {
  std::unordered_map<const ExprNode*, double> memo;
  // Operands first, so every operand's bound is known when its user is reached.
  for (const Expr& n : operators_of(k)) {
    auto b = [&](size_t i) {
      const Expr& a = n->args[i];
      if (!a->has_variable) return 0.0;
      if (a->is_variable()) return 1.0;
      return memo.at(a.get());
    };
    double v = 0;
    switch (n->kind) {
      case ExprKind::Variable:
      case ExprKind::Constant: break;
      case ExprKind::Grad: v = 2 * std::sqrt(static_cast<double>(n->ints[0])) * b(0); break;
      case ExprKind::Conv: {
        const Array& kern = n->args[0]->constant->array;
        if (is_circular_conv(*n)) {
          Shape dims(n->shape.begin(), n->shape.begin() + kern.rank());
          v = fft::conv_norm(kern, dims) * b(1);
          break;
        }
        // Zero or replicate boundary, or a kernel per slice: Schur's test on
        // the convolution with |k| (rows via |K|·1, columns via |K|ᵀ·1; a
        // replicated border pixel's column gathers the overhang).
        auto d = std::make_shared<ConstantData>();
        d->array = kern;
        for (float& w : d->array.data) w = std::fabs(w);
        v = schur_bound(make_conv(make_constant(d, "k"), make_variable(n->shape, "x"), n->str, n->ints[0])) * b(1);
        break;
      }
      case ExprKind::MulElemwise: {
        double m = 0;
        for (float w : n->args[0]->constant->array.data) m = std::max(m, std::fabs(static_cast<double>(w)));
        v = m * b(1);
        break;
      }
      case ExprKind::UnevenSubsample: {
        // KᵀK is diagonal: how often each entry is read. ProxImaL's bound 1
        // holds only when no entry is read twice.
        std::map<int64_t, int64_t> reads;
        int64_t most = 0;
        for (int64_t src : emulate::uneven_sources(n.get(), n->args[1]->constant->array)) {
          if (src >= 0) most = std::max(most, ++reads[src]);
        }
        v = std::sqrt(static_cast<double>(most)) * b(0);
        break;
      }
      case ExprKind::Subsample:
      case ExprKind::Reshape:
      case ExprKind::Transpose:
      case ExprKind::Crop:
      case ExprKind::Neg: v = b(0); break;
      case ExprKind::Scale: v = std::fabs(n->scalar) * b(0); break;
      case ExprKind::Add:
      case ExprKind::Sub: v = b(0) + b(1); break;
      case ExprKind::VStack: {
        double s = 0;
        for (size_t i = 0; i < n->args.size(); ++i) s += b(i) * b(i);
        v = std::sqrt(s);
        break;
      }
      case ExprKind::MulColor: {
        double m[9];
        if (n->args.size() > 1) {
          for (int i = 0; i < 9; ++i) m[i] = n->args[1]->constant->array.data[static_cast<size_t>(i)];
        } else {
          named_color_matrix(n->str, m);
        }
        double f = 0;
        for (double e : m) f += e * e;
        v = std::sqrt(f) * b(0);
        break;
      }
      case ExprKind::PxwiseMatrixmult: {
        // Block diagonal: the largest of the pixels' matrices' norms.
        const Array& a = n->args[0]->constant->array;
        const size_t rows = static_cast<size_t>(a.shape[a.shape.size() - 2]),
                     cols = static_cast<size_t>(a.shape.back());
        const size_t size = rows * cols;
        double most = 0;
        for (size_t p = 0; p < a.data.size(); p += size) {
          const float* m = a.data.data() + p;
          // A pixel whose matrix is its neighbour's (a constant field) adds nothing.
          if (p > 0 && std::equal(m, m + size, m - size)) continue;
          most = std::max(most, largest_singular_value(m, rows, cols));
        }
        v = most * b(1);
        break;
      }
      case ExprKind::Warp: {
        // Schur's test on the interpolation weights (nonnegative).
        v = schur_bound(isolate_operator(n)) * b(0);
        break;
      }
      case ExprKind::BlackBox: {
        // The bound the operator declares, else a Lanczos estimate (from
        // below) with a 1 % margin, stopped when a step adds less than 1e-4
        // relative to ||K||²: measured, its error then was under 0.1 %, on
        // the lens example's spatially varying blur (31 steps: 0.99926 of
        // 0.99998 after 400) and on the deconvolution example's
        // vstack(conv, grad) (34 steps: 2.99704 of 2.99972). Each step
        // costs the black box's own two calls; 1e-6 took more than 100.
        double own = registered_black_box(n->str).norm_bound;
        if (!(own > 0)) {
          auto backend = make_emulate_backend();
          own = 1.01 * estimate_norm(*backend, isolate_operator(n), 100, 2, 1e-4, false).value;
        }
        v = own * b(0);
        break;
      }
    }
    memo[n.get()] = v;
  }
  if (k->is_variable()) return 1.0;
  return memo.at(k.get());
}

StepProgram objective_program(const Problem& p) {
  std::vector<Expr> vars = p.variables();
  std::unordered_map<const ExprNode*, Step> inputs;
  for (size_t i = 0; i < vars.size(); ++i) inputs[vars[i].get()] = step_input(input_name(i), vars[i]->shape);
  StepProgram prog;
  prog.name = "objective";
  for (size_t t = 0; t < p.terms.size(); ++t) {
    const FunctionTerm& term = p.terms[t];
    std::vector<Step> xs;
    for (const Expr& v : linop_variables(term.arg)) xs.push_back(inputs.at(v.get()));
    Step kx = step_forward(term.arg, xs, /*affine=*/true);
    prog.outputs.push_back({"term" + std::to_string(t), step_value(term, kx)});
  }
  return prog;
}

ObjectiveReport evaluate_objective(Backend& backend, const Problem& p,
                                   const std::map<const ExprNode*, const Array*>& x) {
  auto compiled = backend.compile(objective_program(p));
  return evaluate_objective([&](const StepInputs& in) { return compiled->run(in); }, p, x);
}

ObjectiveReport evaluate_objective(const std::function<StepOutputs(const StepInputs&)>& run_program,
                                   const Problem& p, const std::map<const ExprNode*, const Array*>& x) {
  std::vector<Expr> vars = p.variables();
  bool has_projection = false;
  for (const FunctionTerm& term : p.terms) {
    has_projection = has_projection || term.kind == FunctionKind::Nonneg || term.kind == FunctionKind::Box;
  }
  auto run = [&](const std::vector<const Array*>& values, std::vector<double>* terms) {
    StepInputs in;
    for (size_t i = 0; i < vars.size(); ++i) in.buffers[input_name(i)] = values[i];
    StepOutputs out = run_program(in);
    double total = 0;
    for (size_t t = 0; t < p.terms.size(); ++t) {
      terms->push_back(out.scalars.at("term" + std::to_string(t)));
      total += terms->back();
    }
    return total;
  };
  std::vector<const Array*> values;
  for (const Expr& v : vars) {
    auto it = x.find(v.get());
    user_assert(it != x.end() && it->second) << "objective: no value for variable '" << v->name_hint << "'";
    user_assert(it->second->shape == v->shape) << "objective: the value of variable '" << v->name_hint
                                               << "' has shape " << shape_to_string(it->second->shape)
                                               << ", the variable " << shape_to_string(v->shape);
    values.push_back(it->second);
  }
  ObjectiveReport r;
  r.total = run(values, &r.terms);
  r.has_projection = has_projection;
  if (has_projection) {
    std::vector<Array> projected;
    for (const Array* a : values) {
      projected.push_back(*a);
      for (float& f : projected.back().data) f = std::max(f, 0.0f);
    }
    std::vector<const Array*> pv;
    for (const Array& a : projected) pv.push_back(&a);
    r.total_at_projection = run(pv, &r.terms_at_projection);
  }
  return r;
}

namespace {

double max_abs_of(const Array& a) {
  double m = 0;
  for (float v : a.data) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

ParityResult compare_arrays(const std::string& what, const Array& got, const Array& ref, double tolerance) {
  ParityResult r;
  r.what = what;
  r.tolerance = tolerance;
  if (got.shape != ref.shape) {
    r.error = std::numeric_limits<double>::infinity();
    return r;
  }
  for (size_t i = 0; i < ref.data.size(); ++i) {
    double d = std::fabs(static_cast<double>(got.data[i]) - ref.data[i]);
    if (!(d <= r.error)) r.error = d;  // NaN counts as infinitely wrong
  }
  r.passed = r.error <= tolerance;
  return r;
}

double param_entry(const Param& p, size_t i) {
  if (!p.array) return p.scalar;
  const Array& a = p.array->constant->array;
  return a.data.size() == 1 ? a.data[0] : a.data[i];
}

// S of the value tolerance: the sum of |each term| the value adds up.
double value_scale(const FunctionTerm& t, const Array& v) {
  double s = std::fabs(t.d);
  for (size_t i = 0; i < v.data.size(); ++i) {
    double x = v.data[i];
    s += std::fabs(param_entry(t.c, i) * x) + t.gamma * x * x;
    if (t.kind == FunctionKind::SumEntries) s += t.alpha * std::fabs(t.beta * x - param_entry(t.b, i));
  }
  return 2 * s;
}

}  // namespace

std::vector<ParityResult> parity_check(Backend& backend, Backend& reference, const Problem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double eps = backend.epsilon();
  // One program with every operator's forward and adjoint and every prox:
  // one compilation.
  StepProgram prog;
  prog.name = "parity";
  StepInputs in;
  std::deque<Array> arrays;  // stable addresses for `in`
  auto input = [&](const std::string& name, Array a) {
    arrays.push_back(std::move(a));
    in.buffers[name] = &arrays.back();
    return step_input(name, arrays.back().shape);
  };
  struct OpCase {
    Expr k;
    double in_max = 0;
    int nvars = 0;
  };
  std::vector<OpCase> ops;
  std::unordered_set<const ExprNode*> seen;
  for (const FunctionTerm& t : p.terms) {
    for (const Expr& op : operators_of(t.arg)) {
      if (!seen.insert(op.get()).second) continue;
      OpCase c;
      c.k = isolate_operator(op);
      std::vector<Expr> vars = linop_variables(c.k);
      c.nvars = static_cast<int>(vars.size());
      const std::string id = std::to_string(ops.size());
      std::vector<Step> xs;
      for (size_t i = 0; i < vars.size(); ++i) {
        xs.push_back(input("op" + id + "_x" + std::to_string(i), random_array(vars[i]->shape, &rng)));
        c.in_max = std::max(c.in_max, max_abs_of(arrays.back()));
      }
      Step y = input("op" + id + "_y", random_array(c.k->shape, &rng));
      c.in_max = std::max(c.in_max, max_abs_of(arrays.back()));
      prog.outputs.push_back({"fwd" + id, step_forward(c.k, xs)});
      for (int i = 0; i < c.nvars; ++i) prog.outputs.push_back({"adj" + id + "_" + std::to_string(i), step_adjoint(c.k, i, y)});
      ops.push_back(c);
    }
  }
  // Prox inputs: positive (inside every function's domain), at rho = 1.
  for (size_t j = 0; j < p.terms.size(); ++j) {
    const FunctionTerm& t = p.terms[j];
    Array v = random_array(t.arg->shape, &rng);
    for (float& f : v.data) f = std::fabs(f) + 0.05f;
    Step vs = input("v" + std::to_string(j), std::move(v));
    prog.outputs.push_back({"prox" + std::to_string(j), step_prox(t, vs, step_param("rho"))});
  }
  in.params["rho"] = 1.0;
  StepOutputs got = backend.compile(prog)->run(in);
  StepOutputs ref = reference.compile(prog)->run(in);

  std::vector<ParityResult> out;
  for (size_t n = 0; n < ops.size(); ++n) {
    const OpCase& c = ops[n];
    const std::string text = print_expression(c.k);
    const double scale = c.in_max * std::max(1.0, norm_bound(c.k));
    auto compare = [&](const std::string& name, const std::string& what) {
      const Array& r = ref.arrays.at(name);
      double tol = 16 * eps * rounding_work(c.k) * std::max({1.0, max_abs_of(r), scale});
      out.push_back(compare_arrays(what, got.arrays.at(name), r, tol));
    };
    compare("fwd" + std::to_string(n), "forward " + text);
    for (int i = 0; i < c.nvars; ++i) {
      compare("adj" + std::to_string(n) + "_" + std::to_string(i),
              "adjoint " + text + (c.nvars > 1 ? " (operand " + std::to_string(i) + ")" : ""));
    }
  }
  // Values, at the reference's prox outputs (inside every indicator's set).
  StepProgram values;
  values.name = "parity_values";
  StepInputs vin;
  for (size_t j = 0; j < p.terms.size(); ++j) {
    const FunctionTerm& t = p.terms[j];
    const std::string id = std::to_string(j);
    const Array& r = ref.arrays.at("prox" + id);
    double tol = 64 * eps * std::max({1.0, max_abs_of(r), max_abs_of(*in.buffers.at("v" + id))});
    out.push_back(compare_arrays("prox " + std::string(to_string(t.kind)) + " (term " + id + ")",
                                 got.arrays.at("prox" + id), r, tol));
    vin.buffers["z" + id] = &r;
    values.outputs.push_back({"value" + id, step_value(t, step_input("z" + id, t.arg->shape))});
  }
  StepOutputs gv = backend.compile(values)->run(vin);
  StepOutputs rv = reference.compile(values)->run(vin);
  for (size_t j = 0; j < p.terms.size(); ++j) {
    const std::string id = std::to_string(j);
    ParityResult r;
    r.what = "value " + std::string(to_string(p.terms[j].kind)) + " (term " + id + ")";
    double g = gv.scalars.at("value" + id), e = rv.scalars.at("value" + id);
    r.tolerance = 8 * eps * (1 + std::fabs(e) + value_scale(p.terms[j], *vin.buffers.at("z" + id)));
    if (std::isinf(e) || std::isinf(g)) {
      r.error = g == e ? 0 : std::numeric_limits<double>::infinity();
    } else {
      r.error = std::fabs(g - e);
      if (std::isnan(r.error)) r.error = std::numeric_limits<double>::infinity();
    }
    r.passed = r.error <= r.tolerance;
    out.push_back(r);
  }
  return out;
}

}  // namespace proxc::internal
