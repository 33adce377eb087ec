/// \file
/// proxc::halide_ops::Graph: the prox functions and values of the function terms. Part of the Halide-op
/// library (proxc/halide_ops.h includes every part).
#pragma once

#include "proxc/halide_ops/graph.h"

namespace proxc::halide_ops {

inline Graph::Term Graph::term(const std::string& kind, const Val& alpha, const Val& beta, const Val& gamma,
                               const Val& d, const Val& b, const Val& c, const Val& lower, const Val& upper,
                               const Val& counts, const Val& weight, const std::vector<int>& axes) {
  Term t{kind, alpha, beta, gamma, d, b, c, lower, upper, counts, weight, axes, "t" + std::to_string(term_ids_++),
         "", {}};
  if (record_) {
    *record_ << "  Graph::Term " << t.id << " = g.term("
             << args(kind, alpha, beta, gamma, d, b, c, lower, upper, counts, weight, axes) << ");\n";
  }
  return t;
}

inline Graph::Term Graph::user_term(const std::string& name, const std::vector<double>& params, const Val& alpha,
                                    const Val& beta, const Val& gamma, const Val& d, const Val& b, const Val& c) {
  if (params.size() > PROXC_PROX_FN_MAX_PARAMS) fail("prox_fn " + name + ": too many parameters");
  Term t{"prox_fn", alpha, beta, gamma, d, b, c, Val(), Val(), Val(), Val(), {}, "t" + std::to_string(term_ids_++),
         name, params};
  if (record_) {
    *record_ << "  Graph::Term " << t.id << " = g.user_term(" << args(name, params, alpha, beta, gamma, d, b, c)
             << ");\n";
  }
  return t;
}

// The arguments every extern stage of a prox function of the user's takes
// after its input u (and rho): the function's id, its parameters (unused
// slots 0), the rank and the extents of u.
inline std::vector<Halide::ExternFuncArgument> Graph::user_stage_args(const Term& t, const Val& u) {
  std::vector<Halide::ExternFuncArgument> a = {Halide::Expr(proxc_prox_fn_id(t.user_name.c_str()))};
  for (size_t i = 0; i < PROXC_PROX_FN_MAX_PARAMS; ++i) {
    a.push_back(Halide::Expr(i < t.user_params.size() ? t.user_params[i] : 0.0));
  }
  if (u.ext.size() > PROXC_PROX_FN_MAX_RANK) fail("prox_fn " + t.user_name + ": ranks 1 to 6");
  a.push_back(Halide::Expr(static_cast<int>(u.ext.size())));
  for (size_t i = 0; i < PROXC_PROX_FN_MAX_RANK; ++i) a.push_back(i < u.ext.size() ? u.ext[i] : Halide::Expr(1));
  return a;
}

inline Val Graph::user_prox(const Term& t, const Val& v, const Val& rho_val) {
  Halide::Expr rho = Halide::cast<float>(at(rho_val, {}));
  Halide::Expr alpha = at(t.alpha, {}), beta = at(t.beta, {}), gamma = at(t.gamma, {});
  Halide::Expr denom = rho + 2.0f * gamma;
  // The bare function's rho, in double; +inf when alpha = 0 (the stage then
  // copies). A buffer of its own: an extern stage's scalar arguments cannot
  // call Funcs.
  Halide::Func r("prox_fn_rho" + std::to_string(counter_++));
  r() = Halide::cast<double>(denom) / Halide::cast<double>(alpha * beta * beta);
  r.compute_root();
  const std::vector<Halide::Expr>& ext = v.ext;
  Val u = define(
      "u", ext, [&](const Coords& i) { return (rho * call(v, i) - at(t.c, i)) * beta / denom - at(t.b, i); });
  schedule_at_root(u);  // an extern stage reads a buffer of its own
  if (schedule_ != Schedule::Default) u.f.compute_root();
  Val out;
  out.f = Halide::Func("prox_fn" + std::to_string(counter_++));
  out.ext = ext;
  std::vector<Halide::ExternFuncArgument> a = {u.f, r};
  for (const auto& e : user_stage_args(t, u)) a.push_back(e);
  prox_fns_.insert(t.user_name);
  out.f.define_extern("proxc_prox_fn_stage", a, Halide::Float(32), static_cast<int>(ext.size()));
  out.f.compute_root();
  Val p = define("prox", ext, [&](const Coords& i) { return (call(out, i) + at(t.b, i)) / beta; });
  return rec(p, "prox", RawArg{t.id}, v, rho_val);
}

// f(u) of a prox function of the user's, as a double Expr: the extern stage
// proxc_prox_fn_value_stage (0 for a function without a value callback).
inline Halide::Expr Graph::user_value(const Term& t, const Val& u) {
  if (schedule_ != Schedule::Default) {
    Halide::Func uf = u.f;
    uf.compute_root();
  }
  Halide::Func f("prox_fn_value" + std::to_string(counter_++));
  std::vector<Halide::ExternFuncArgument> a = {u.f};
  for (const auto& e : user_stage_args(t, u)) a.push_back(e);
  prox_fns_.insert(t.user_name);
  f.define_extern("proxc_prox_fn_value_stage", a, Halide::Float(64), 1);
  f.compute_root();
  return f(0);
}

inline Val Graph::prox(const Term& t, const Val& v, const Val& rho_val) {
  if (t.kind == "prox_fn") return user_prox(t, v, rho_val);
  Halide::Expr rho = Halide::cast<float>(at(rho_val, {}));
  Halide::Expr alpha = at(t.alpha, {}), beta = at(t.beta, {}), gamma = at(t.gamma, {});
  Halide::Expr denom = rho + 2.0f * gamma;
  Halide::Expr r = denom / (alpha * beta * beta);
  // Divisions by a scalar are multiplications by its reciprocal, computed
  // once per run (as binary's "div" by a scalar: a vector division's
  // throughput is a tenth of a multiplication's; each result within 1.5 ulp
  // instead of 0.5). The y-update of TV divided each element twice.
  Halide::Expr beta_over_denom = beta / denom, inv_beta = 1.0f / beta;
  const std::vector<Halide::Expr>& ext = v.ext;
  // u = (rho·v − c)·beta/denom − b
  Val u = define("u", ext, [&](const Coords& i) {
    return (rho * call(v, i) - at(t.c, i)) * beta_over_denom - at(t.b, i);
  });
  if ((t.kind == "group_norm1" || t.kind == "weighted_group_norm1") && !short_group(u, t.axes)) schedule_at_root(u);
  // Soft thresholding, sign(x)·max(|x| − t, 0), as x − clamp(x, ±t): the
  // same value (one subtraction either way), without the sign's selects.
  auto soft_threshold = [](const Halide::Expr& x, const Halide::Expr& t) {
    return x - Halide::clamp(x, -t, t);
  };
  Val p = define("prox", ext, [&](const Coords& i) {
    Halide::Expr x = call(u, i);
    Halide::Expr out;
    const std::string& k = t.kind;
    if (k == "sum_squares" || k == "least_squares") {
      out = Halide::select(alpha == 0.0f, x, x * (r / (r + 2.0f)));
    } else if (k == "norm1") {
      out = soft_threshold(x, 1.0f / r);
    } else if (k == "group_norm1") {
      Halide::Expr g = Halide::sqrt(group_sum_squares(u, t.axes, i));
      out = Halide::select(g == 0.0f, 0.0f, x * Halide::max(0.0f, 1.0f - 1.0f / (r * g)));
    } else if (k == "nonneg") {
      out = Halide::max(x, 0.0f);
    } else if (k == "poisson_norm") {
      Halide::Expr cv = at(t.counts, i);
      Halide::Expr w = x - 1.0f / r;
      out = Halide::select(alpha == 0.0f, x, 0.5f * (w + Halide::sqrt(w * w + 4.0f * cv / r)));
    } else if (k == "sum_entries") {
      out = Halide::select(alpha == 0.0f, x, x - 1.0f / r);
    } else if (k == "box") {
      out = Halide::min(Halide::max(x, at(t.lower, i)), at(t.upper, i));
    } else if (k == "weighted_norm1") {  // Σ|w·v|: threshold |w|/r
      out = soft_threshold(x, Halide::abs(at(t.weight, i)) * (1.0f / r));
    } else if (k == "weighted_sum_squares") {  // Σ(w·v)²: r·v/(r + 2w²)
      Halide::Expr w = at(t.weight, i);
      out = Halide::select(alpha == 0.0f, x, r * x / (r + 2.0f * w * w));
    } else if (k == "weighted_group_norm1") {  // Σ_g |w_g|·||v_g||
      Halide::Expr g = Halide::sqrt(group_sum_squares(u, t.axes, i));
      out = Halide::select(g == 0.0f, 0.0f, x * Halide::max(0.0f, 1.0f - Halide::abs(at(t.weight, i)) / (r * g)));
    } else if (k == "weighted_nonneg") {  // I(w·v >= 0)
      Halide::Expr w = at(t.weight, i);
      out = Halide::select(w == 0.0f, x, Halide::max(w * x, 0.0f) / w);
    } else if (k == "masked_nonneg") {  // v >= 0 where mask >= 0.5, 0 elsewhere
      out = Halide::select(at(t.weight, i) >= 0.5f, Halide::max(x, 0.0f), 0.0f);
    } else if (k == "weighted_poisson_norm") {  // Σ_{w≠0} w·v − counts·log(w·v)
      Halide::Expr w = at(t.weight, i), cv = at(t.counts, i);
      Halide::Expr q = x - w / r;
      out = Halide::select(alpha == 0.0f || w == 0.0f, x, 0.5f * (q + Halide::sqrt(q * q + 4.0f * cv / r)));
    } else if (k == "zero_prox") {
      out = x;
    } else {
      fail("prox: unknown function " + k);
    }
    return (out + at(t.b, i)) * inv_beta;
  });
  return rec(p, "prox", RawArg{t.id}, v, rho_val);
}

inline Val Graph::value(const Term& t, const Val& v0, const Val& inf_val, double slack) {
  Halide::Expr alpha = Halide::cast<double>(at(t.alpha, {})), beta = at(t.beta, {});
  Halide::Expr gamma = Halide::cast<double>(at(t.gamma, {})), d = Halide::cast<double>(at(t.d, {}));
  Val vv = stencil(v0);
  Val u = define("uv", vv.ext, [&](const Coords& i) { return beta * call(vv, i) - at(t.b, i); });
  schedule_at_root(u);
  auto x_at = [&](const Coords& i) { return Halide::cast<double>(call(u, i)); };
  // The value is a sum over every position, in double, reduced as the
  // schedule reduces (row sums in parallel on the CPU, partial sums on a
  // GPU's device, so that only scalars come back): each position's part of
  // f, plus the linear and quadratic terms <c, v> + gamma·|v|². A
  // constraint also counts the positions outside its set (a second sum):
  // any makes the value inf_val. (Not +inf added in the sum: Halide's code
  // may assume finite floats, and NaNs do not count, as in the emulator.)
  std::function<Halide::Expr(const Coords&)> part, outside;
  Halide::Expr whole;  // a part of f that is not a sum over positions (prox_fn's)
  auto unless = [&](const std::function<Halide::Expr(const Coords&)>& out,
                    const std::function<Halide::Expr(const Coords&)>& inside) {
    outside = out;
    part = inside;
  };
  const std::function<Halide::Expr(const Coords&)> zero = [&](const Coords&) { return f64(0); };
  const std::string& k = t.kind;
  if (k == "sum_squares" || k == "least_squares") {
    part = [&](const Coords& i) { return alpha * x_at(i) * x_at(i); };
  } else if (k == "norm1") {
    part = [&](const Coords& i) { return alpha * Halide::abs(x_at(i)); };
  } else if (k == "group_norm1" || k == "weighted_group_norm1") {
    // Each group once: at its entry where the group axes are 0 (the group
    // sums are a Func of their own).
    Val g2 = define("gsq", vv.ext, [&](const Coords& j) { return group_sum_squares(u, t.axes, j); });
    schedule_at_root(g2);
    const bool weighted = k == "weighted_group_norm1";
    part = [=](const Coords& i) {
      Halide::Expr first = Halide::Internal::const_true();
      for (int ax : t.axes) first = first && i[static_cast<size_t>(ax)] == 0;
      Halide::Expr norm = Halide::sqrt(Halide::cast<double>(call(g2, i)));
      if (weighted) norm = Halide::abs(Halide::cast<double>(at(t.weight, i))) * norm;
      return Halide::select(first, alpha * norm, f64(0));
    };
  } else if (k == "nonneg") {
    unless([&](const Coords& i) { return x_at(i) <= f64(-slack); }, zero);
  } else if (k == "box") {
    unless(
        [&](const Coords& i) {
          Halide::Expr x = x_at(i);
          return x <= Halide::cast<double>(at(t.lower, i)) - f64(slack) ||
                 x >= Halide::cast<double>(at(t.upper, i)) + f64(slack);
        },
        zero);
  } else if (k == "poisson_norm") {
    unless([&](const Coords& i) { return x_at(i) < f64(-slack); },
           [&](const Coords& i) {
             Halide::Expr x = x_at(i);
             return alpha * (x - Halide::cast<double>(at(t.counts, i)) * Halide::log(Halide::max(x, f64(1e-9))));
           });
  } else if (k == "sum_entries") {
    part = [&](const Coords& i) { return alpha * x_at(i); };
  } else if (k == "weighted_norm1") {
    part = [&](const Coords& i) { return alpha * Halide::abs(Halide::cast<double>(at(t.weight, i)) * x_at(i)); };
  } else if (k == "weighted_sum_squares") {
    part = [&](const Coords& i) {
      Halide::Expr wx = Halide::cast<double>(at(t.weight, i)) * x_at(i);
      return alpha * wx * wx;
    };
  } else if (k == "weighted_nonneg") {
    unless([&](const Coords& i) { return Halide::cast<double>(at(t.weight, i)) * x_at(i) <= f64(-slack); }, zero);
  } else if (k == "masked_nonneg") {
    unless(
        [&](const Coords& i) {
          Halide::Expr x = x_at(i);
          return Halide::select(at(t.weight, i) >= 0.5f, x <= f64(-slack), Halide::abs(x) >= f64(slack));
        },
        zero);
  } else if (k == "weighted_poisson_norm") {
    auto w_at = [&](const Coords& i) { return Halide::cast<double>(at(t.weight, i)); };
    unless([&](const Coords& i) { return w_at(i) != f64(0) && x_at(i) < f64(-slack); },
           [&](const Coords& i) {
             Halide::Expr w = w_at(i), x = x_at(i), cv = Halide::cast<double>(at(t.counts, i));
             return Halide::select(w == f64(0), f64(0),
                                   alpha * (w * x - cv * Halide::log(Halide::max(w * x, f64(1e-9)))));
           });
  } else if (k == "zero_prox") {
    part = zero;
  } else if (k == "prox_fn") {
    whole = alpha * user_value(t, u);
    part = zero;
  } else {
    fail("value: unknown function " + k);
  }
  auto sum = [&](const std::function<Halide::Expr(const Coords&)>& element) {
    RowSums rows;
    Val e = define("term", vv.ext, element, Halide::Float(64));  // each position's part in double
    Halide::Expr total = reduced("sum", e, Val(), Val(), &rows).f();
    // (Strips of rows per parallel task, as the iteration's reductions.)
    if (rows.partial.defined() && rows.domain.dimensions() == 1) split_rows_into_tasks(rows.partial);
    return total;
  };
  Halide::Expr total = sum([&](const Coords& i) {
    Halide::Expr xv = Halide::cast<double>(call(vv, i));
    return part(i) + (Halide::cast<double>(at(t.c, i)) * xv + gamma * xv * xv);
  }) + d;
  if (whole.defined()) total = whole + total;
  if (outside) {
    Halide::Expr violations = sum([&](const Coords& i) { return Halide::select(outside(i), f64(1), f64(0)); });
    total = Halide::select(violations == 0, total, Halide::cast<double>(at(inf_val, {})) + total);
  }
  return rec(define0("value", total), "value", RawArg{t.id}, v0, inf_val, slack);
}

inline int64_t Graph::const_group_size(const Val& u, const std::vector<int>& axes) {
  int64_t n = 1;
  for (int a : axes) {
    const std::optional<int64_t> e = const_int(u.ext[static_cast<size_t>(a)]);
    if (!e) return 0;
    n *= *e;
  }
  return n;
}

inline Halide::Expr Graph::group_sum_squares(const Val& u, const std::vector<int>& axes, const Coords& i) {
  if (short_group(u, axes)) {
    Halide::Expr total;
    for (int64_t k = 0; k < const_group_size(u, axes); ++k) {
      Coords src = i;
      int64_t rest = k;
      for (int a : axes) {
        const int64_t e = *const_int(u.ext[static_cast<size_t>(a)]);
        src[static_cast<size_t>(a)] = static_cast<int>(rest % e);
        rest /= e;
      }
      Halide::Expr e = call(u, src);
      total = total.defined() ? total + e * e : e * e;
    }
    return total;
  }
  Halide::Region ranges;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it)
    ranges.push_back(Halide::Range(0, u.ext[static_cast<size_t>(*it)]));
  Halide::RDom r(ranges);
  Coords src = i;
  for (size_t k = 0; k < axes.size(); ++k)
    src[static_cast<size_t>(axes[k])] = r[static_cast<int>(axes.size() - 1 - k)];
  Halide::Expr e = call(u, src);
  return Halide::sum(e * e);
}

}  // namespace proxc::halide_ops
