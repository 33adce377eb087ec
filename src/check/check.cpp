#include "check/check.h"

#include <cmath>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "emulate/linop.h"
#include "fft/fft.h"
#include "ir/printer.h"
#include "support/error.h"

namespace proxc {

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
  std::unordered_set<const ExprNode*> seen;
  std::vector<std::pair<Expr, size_t>> stack = {{k, 0}};
  seen.insert(k.get());
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->args.size()) {
      Expr c = n->args[next++];
      if (c->has_variable && seen.insert(c.get()).second) stack.push_back({c, 0});
    } else {
      if (!n->is_variable()) out.push_back(n);
      stack.pop_back();
    }
  }
  return out;
}

Expr isolate_operator(const Expr& op) {
  std::vector<Expr> args;
  for (const Expr& a : op->args) args.push_back(a->has_variable ? make_variable(a->shape, "x") : a);
  return with_args(op, args);
}

double rounding_work(const Expr& k) {
  double w = 0;
  for (const Expr& n : operators_of(k)) {
    switch (n->kind) {
      case ExprKind::Conv: w += static_cast<double>(num_elements(n->args[0]->shape)); break;
      case ExprKind::Grad: w += 2.0 * static_cast<double>(n->ints[0]); break;
      case ExprKind::Warp: w += 4; break;
      case ExprKind::MulColor: w += 3; break;
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
  r.tolerance = 8 * backend.epsilon() * rounding_work(k) * r.scale;
  r.passed = std::isfinite(r.error) && r.error <= r.tolerance;
  return r;
}

NormEstimate estimate_norm(Backend& backend, const Expr& k, int max_iters, uint64_t seed) {
  std::vector<Expr> vars = linop_variables(k);
  std::vector<Step> xs = variable_inputs(vars);
  Step kx = step_forward(k, xs);
  StepProgram p;
  p.name = "power_iteration";
  Step total;
  for (size_t i = 0; i < vars.size(); ++i) {
    Step g = step_adjoint(k, static_cast<int>(i), kx);
    p.outputs.push_back({"g" + std::to_string(i), g});
    Step s = step_reduce(StepKind::SumSquares, g);
    total = total ? step_binary(StepKind::Add, total, s) : s;
  }
  p.outputs.push_back({"g2", total});
  auto compiled = backend.compile(p);
  std::mt19937_64 rng(seed);
  std::vector<Array> x;
  double x2 = 0;
  for (const Expr& v : vars) {
    x.push_back(random_array(v->shape, &rng));
    for (float f : x.back().data) x2 += static_cast<double>(f) * f;
  }
  NormEstimate est;
  double lambda = 0;
  for (int it = 1; it <= max_iters; ++it) {
    StepInputs in;
    for (size_t i = 0; i < x.size(); ++i) in.buffers[input_name(i)] = &x[i];
    StepOutputs out = compiled->run(in);
    double g2 = out.scalars.at("g2");
    double next = std::sqrt(g2 / x2);  // ||KᵀK x|| / ||x||
    est.iterations = it;
    if (!(g2 > 0)) {
      lambda = 0;
      break;
    }
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = std::move(out.arrays.at("g" + std::to_string(i)));
      for (float& f : x[i].data) f = static_cast<float>(f / std::sqrt(g2));
    }
    x2 = 0;
    for (const Array& a : x) {
      for (float f : a.data) x2 += static_cast<double>(f) * f;
    }
    bool converged = std::fabs(next - lambda) <= 1e-6 * next;
    lambda = next;
    if (converged) break;
  }
  est.value = std::sqrt(lambda);
  return est;
}

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
        Shape dims(n->shape.begin(), n->shape.begin() + kern.rank());
        v = fft::conv_norm(kern, dims) * b(1);
        break;
      }
      case ExprKind::MulElemwise: {
        double m = 0;
        for (float w : n->args[0]->constant->array.data) m = std::max(m, std::fabs(static_cast<double>(w)));
        v = m * b(1);
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
      case ExprKind::Warp: {
        // Schur's test on the interpolation weights: rows via W·1, columns via Wᵀ·1.
        Expr w = isolate_operator(n);
        Expr var = linop_variables(w)[0];
        emulate::Tensor ones(var->shape);
        std::fill(ones.data.begin(), ones.data.end(), 1.0);
        double rows = 0, cols = 0;
        const emulate::Tensor row_sums = emulate::forward(w, {{var.get(), &ones}}, false);
        const auto col_sums = emulate::adjoint(w, ones);
        for (double r : row_sums.data) rows = std::max(rows, r);
        for (double c : col_sums.at(var.get()).data) cols = std::max(cols, c);
        v = std::sqrt(rows * cols) * b(0);
        break;
      }
    }
    memo[n.get()] = v;
  }
  if (k->is_variable()) return 1.0;
  return memo.at(k.get());
}

ObjectiveReport evaluate_objective(Backend& backend, const Problem& p,
                                   const std::map<const ExprNode*, const Array*>& x) {
  std::vector<Expr> vars = p.variables();
  std::unordered_map<const ExprNode*, Step> inputs;
  for (size_t i = 0; i < vars.size(); ++i) inputs[vars[i].get()] = step_input(input_name(i), vars[i]->shape);
  StepProgram prog;
  prog.name = "objective";
  bool has_projection = false;
  for (size_t t = 0; t < p.terms.size(); ++t) {
    const FunctionTerm& term = p.terms[t];
    std::vector<Step> xs;
    for (const Expr& v : linop_variables(term.arg)) xs.push_back(inputs.at(v.get()));
    Step kx = step_forward(term.arg, xs, /*affine=*/true);
    prog.outputs.push_back({"term" + std::to_string(t), step_value(term, kx)});
    has_projection = has_projection || term.kind == FunctionKind::Nonneg || term.kind == FunctionKind::Box;
  }
  auto compiled = backend.compile(prog);
  auto run = [&](const std::vector<const Array*>& values, std::vector<double>* terms) {
    StepInputs in;
    for (size_t i = 0; i < vars.size(); ++i) in.buffers[input_name(i)] = values[i];
    StepOutputs out = compiled->run(in);
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

}  // namespace proxc
