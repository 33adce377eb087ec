#include "emulate/prox.h"

#include <cmath>
#include <limits>
#include <string>

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"
#include "support/error.h"

namespace proxc::internal::emulate {

namespace {

// A parameter's value at entry i (scalar or array).
struct ParamView {
  double scalar = 0;
  const ExprNode* node = nullptr;
  const Array* array = nullptr;
  double at(size_t i) const { return array ? constant_at(node, *array, i) : scalar; }
};

ParamView view(const Param& p, const ConstantLookup& data) {
  ParamView v;
  v.scalar = p.scalar;
  if (p.array) {
    v.node = p.array.get();
    v.array = &data(v.node);
  }
  return v;
}

bool is_indicator(FunctionKind k) {
  return k == FunctionKind::Nonneg || k == FunctionKind::Box || k == FunctionKind::WeightedNonneg ||
         k == FunctionKind::MaskedNonneg;
}

// The weight of a weighted function (masked_nonneg: its mask).
ParamView weight_view(const FunctionTerm& t, const ConstantLookup& data) { return view(Param::of(t.weight), data); }

// Group norms of u over `axes`: g[f] holds the norm of the group of entry f.
DoubleData group_norms(const Tensor& u, const std::vector<int64_t>& axes) {
  const Shape& s = u.shape;
  auto st = strides_of(s);
  // Representative of each entry's group: its flat index with the group axes zeroed.
  BlockVector<int64_t> rep(u.size());
  for (size_t f = 0; f < u.size(); ++f) {
    int64_t r = static_cast<int64_t>(f);
    for (int64_t a : axes) r -= ((static_cast<int64_t>(f) / st[a]) % s[a]) * st[a];
    rep[f] = r;
  }
  DoubleData sq(u.size(), 0.0);
  for (size_t f = 0; f < u.size(); ++f) sq[static_cast<size_t>(rep[f])] += u.data[f] * u.data[f];
  DoubleData g(u.size());
  for (size_t f = 0; f < u.size(); ++f) g[f] = std::sqrt(sq[static_cast<size_t>(rep[f])]);
  return g;
}

// ": <what a failed callback said of its failure>" (proxc_black_box_set_failure), or "".
std::string said_by_callback() {
  const std::string said = proxc_black_box_failure();
  return said.empty() ? "" : ": " + said;
}

// A prox function of the user's, in place: its callback on float32 copies
// (r is finite: prox() leaves alpha = 0 out).
void user_prox(const FunctionTerm& t, double r, Tensor* u) {
  const proxc_prox_fn* f = proxc_find_prox_fn(t.user_name.c_str());
  user_assert(f) << "no prox function named '" << t.user_name << "' is registered in this program";
  std::vector<float> in(u->size()), out(u->size(), 0.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(u->data[i]);
  int rc = 0;
  proxc_black_box_clear_failure();
  try {
    rc = f->prox(f->user, in.data(), u->shape.data(), static_cast<int>(u->shape.size()), r, t.user_params.data(),
                 out.data());
  } catch (...) {
    user_error << t.user_name << ": the prox callback threw an exception (operand " << shape_to_string(u->shape)
               << ")";
  }
  user_assert(rc == 0) << t.user_name << ": the prox callback failed (returned " << rc << "; operand "
                       << shape_to_string(u->shape) << ", rho " << r << ")" << said_by_callback();
  for (size_t i = 0; i < out.size(); ++i) u->data[i] = out[i];
}

// f(u) of a prox function of the user's; 0 when it has no value callback
// (term_has_value: the objective leaves it out).
double user_value(const FunctionTerm& t, const DoubleData& u, const Shape& shape) {
  const proxc_prox_fn* f = proxc_find_prox_fn(t.user_name.c_str());
  user_assert(f) << "no prox function named '" << t.user_name << "' is registered in this program";
  if (!f->value) return 0;
  std::vector<float> x(u.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(u[i]);
  double out = 0;
  int rc = 0;
  proxc_black_box_clear_failure();
  try {
    rc = f->value(f->user, x.data(), shape.data(), static_cast<int>(shape.size()), t.user_params.data(), &out);
  } catch (...) {
    user_error << t.user_name << ": the value callback threw an exception (operand " << shape_to_string(shape) << ")";
  }
  user_assert(rc == 0) << t.user_name << ": the value callback failed (returned " << rc << "; operand "
                       << shape_to_string(shape) << ")" << said_by_callback();
  return out;
}

// prox_f(r, u) of the bare function, in place. r may be +inf (alpha = 0).
void bare_prox(const FunctionTerm& t, double r, Tensor* u, const ConstantLookup& data) {
  auto& d = u->data;
  switch (t.kind) {
    case FunctionKind::SumSquares:
    case FunctionKind::LeastSquares:  // the prox with respect to the operand
      if (std::isinf(r)) return;
      for (double& v : d) v = r * v / (r + 2);
      return;
    case FunctionKind::Norm1:
      for (double& v : d) v = (v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0) * std::max(std::fabs(v) - 1.0 / r, 0.0);
      return;
    case FunctionKind::GroupNorm1: {
      DoubleData g = group_norms(*u, t.axes);
      for (size_t i = 0; i < d.size(); ++i) d[i] = g[i] == 0 ? 0.0 : d[i] * std::max(0.0, 1.0 - 1.0 / (r * g[i]));
      return;
    }
    case FunctionKind::Nonneg:
      for (double& v : d) v = std::max(v, 0.0);
      return;
    case FunctionKind::PoissonNorm: {
      if (std::isinf(r)) return;
      const Array& counts = data(t.counts.get());
      for (size_t i = 0; i < d.size(); ++i) {
        double c = counts.data.size() == 1 ? counts.data[0] : counts.data[i];
        double w = d[i] - 1.0 / r;
        d[i] = 0.5 * (w + std::sqrt(w * w + 4.0 * c / r));
      }
      return;
    }
    case FunctionKind::SumEntries:
      if (std::isinf(r)) return;
      for (double& v : d) v -= 1.0 / r;
      return;
    case FunctionKind::Box: {
      ParamView lo = view(t.lower, data), hi = view(t.upper, data);
      for (size_t i = 0; i < d.size(); ++i) d[i] = std::min(std::max(d[i], lo.at(i)), hi.at(i));
      return;
    }
    case FunctionKind::WeightedNorm1: {  // Σ|w·v|: threshold |w|/r
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < d.size(); ++i) {
        d[i] = (d[i] > 0 ? 1.0 : d[i] < 0 ? -1.0 : 0.0) * std::max(std::fabs(d[i]) - std::fabs(w.at(i)) / r, 0.0);
      }
      return;
    }
    case FunctionKind::WeightedSumSquares: {  // Σ(w·v)²: r·v/(r + 2w²)
      if (std::isinf(r)) return;
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < d.size(); ++i) d[i] = r * d[i] / (r + 2 * w.at(i) * w.at(i));
      return;
    }
    case FunctionKind::WeightedGroupNorm1: {  // Σ_g |w_g|·||v_g||: threshold |w_g|/r
      const ParamView w = weight_view(t, data);
      DoubleData g = group_norms(*u, t.axes);
      for (size_t i = 0; i < d.size(); ++i) {
        d[i] = g[i] == 0 ? 0.0 : d[i] * std::max(0.0, 1.0 - std::fabs(w.at(i)) / (r * g[i]));
      }
      return;
    }
    case FunctionKind::WeightedNonneg: {  // I(w·v >= 0)
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < d.size(); ++i) {
        const double wi = w.at(i);
        if (wi != 0) d[i] = std::max(wi * d[i], 0.0) / wi;
      }
      return;
    }
    case FunctionKind::MaskedNonneg: {  // v >= 0 where mask >= 0.5, v = 0 elsewhere
      const ParamView m = weight_view(t, data);
      for (size_t i = 0; i < d.size(); ++i) d[i] = m.at(i) >= 0.5 ? std::max(d[i], 0.0) : 0.0;
      return;
    }
    case FunctionKind::WeightedPoissonNorm: {  // Σ_{w≠0} w·v − counts·log(w·v)
      if (std::isinf(r)) return;
      const ParamView w = weight_view(t, data);
      const Array& counts = data(t.counts.get());
      for (size_t i = 0; i < d.size(); ++i) {
        const double wi = w.at(i);
        if (wi == 0) continue;
        const double c = counts.data.size() == 1 ? counts.data[0] : counts.data[i];
        const double q = d[i] - wi / r;
        d[i] = 0.5 * (q + std::sqrt(q * q + 4.0 * c / r));
      }
      return;
    }
    case FunctionKind::ZeroProx:
      return;
    case FunctionKind::UserProx:
      return user_prox(t, r, u);
  }
}

}  // namespace

Tensor prox(const FunctionTerm& t, const Tensor& v, double rho, const ConstantLookup& data) {
  internal_assert(rho > 0) << "prox: rho must be positive";
  const double denom = rho + 2 * t.gamma;
  const double r = t.alpha == 0 ? std::numeric_limits<double>::infinity() : denom / (t.alpha * t.beta * t.beta);
  ParamView b = view(t.b, data), c = view(t.c, data);
  Tensor u(v.shape);
  for (size_t i = 0; i < u.size(); ++i) u.data[i] = (rho * v.data[i] - c.at(i)) * t.beta / denom - b.at(i);
  if (t.alpha != 0 || is_indicator(t.kind)) bare_prox(t, r, &u, data);
  for (size_t i = 0; i < u.size(); ++i) u.data[i] = (u.data[i] + b.at(i)) / t.beta;
  return u;
}

double value(const FunctionTerm& t, const Tensor& v, const ConstantLookup& data) {
  const double inf = std::numeric_limits<double>::infinity();
  ParamView b = view(t.b, data), c = view(t.c, data);
  DoubleData u(v.size());
  for (size_t i = 0; i < u.size(); ++i) u[i] = t.beta * v.data[i] - b.at(i);
  double f = 0;
  switch (t.kind) {
    case FunctionKind::SumSquares:
    case FunctionKind::LeastSquares:
      for (double x : u) f += x * x;
      break;
    case FunctionKind::Norm1:
      for (double x : u) f += std::fabs(x);
      break;
    case FunctionKind::GroupNorm1:
    case FunctionKind::WeightedGroupNorm1: {
      Tensor ut(v.shape);
      ut.data = u;
      DoubleData g = group_norms(ut, t.axes);
      // Each group's norm is counted once: at its representative entry (norms
      // are equal within a group, so sum g² / (group size) would also work),
      // times the group's weight.
      const bool weighted = t.kind == FunctionKind::WeightedGroupNorm1;
      const ParamView w = weighted ? weight_view(t, data) : ParamView{1.0, nullptr, nullptr};
      const Shape& s = v.shape;
      auto st = strides_of(s);
      for (size_t i = 0; i < u.size(); ++i) {
        bool rep = true;
        for (int64_t a : t.axes) rep = rep && (static_cast<int64_t>(i) / st[a]) % s[a] == 0;
        if (rep) f += std::fabs(w.at(i)) * g[i];
      }
      break;
    }
    case FunctionKind::Nonneg:
      for (double x : u) {
        if (x <= -kIndicatorSlack) return inf;
      }
      break;
    case FunctionKind::Box: {
      ParamView lo = view(t.lower, data), hi = view(t.upper, data);
      for (size_t i = 0; i < u.size(); ++i) {
        if (u[i] <= lo.at(i) - kIndicatorSlack || u[i] >= hi.at(i) + kIndicatorSlack) return inf;
      }
      break;
    }
    case FunctionKind::PoissonNorm: {
      const Array& counts = data(t.counts.get());
      for (size_t i = 0; i < u.size(); ++i) {
        if (u[i] < -kIndicatorSlack) return inf;
        double cnt = counts.data.size() == 1 ? counts.data[0] : counts.data[i];
        f += u[i] - cnt * std::log(std::max(u[i], 1e-9));
      }
      break;
    }
    case FunctionKind::SumEntries:
      for (double x : u) f += x;
      break;
    case FunctionKind::WeightedNorm1: {
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < u.size(); ++i) f += std::fabs(w.at(i) * u[i]);
      break;
    }
    case FunctionKind::WeightedSumSquares: {
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < u.size(); ++i) f += (w.at(i) * u[i]) * (w.at(i) * u[i]);
      break;
    }
    case FunctionKind::WeightedNonneg: {
      const ParamView w = weight_view(t, data);
      for (size_t i = 0; i < u.size(); ++i) {
        if (w.at(i) * u[i] <= -kIndicatorSlack) return inf;
      }
      break;
    }
    case FunctionKind::MaskedNonneg: {
      const ParamView m = weight_view(t, data);
      for (size_t i = 0; i < u.size(); ++i) {
        if (m.at(i) >= 0.5 ? u[i] <= -kIndicatorSlack : std::fabs(u[i]) >= kIndicatorSlack) return inf;
      }
      break;
    }
    case FunctionKind::WeightedPoissonNorm: {
      const ParamView w = weight_view(t, data);
      const Array& counts = data(t.counts.get());
      for (size_t i = 0; i < u.size(); ++i) {
        const double wi = w.at(i);
        if (wi == 0) continue;
        if (u[i] < -kIndicatorSlack) return inf;
        const double cnt = counts.data.size() == 1 ? counts.data[0] : counts.data[i];
        f += wi * u[i] - cnt * std::log(std::max(wi * u[i], 1e-9));
      }
      break;
    }
    case FunctionKind::ZeroProx:
      break;
    case FunctionKind::UserProx:
      f = user_value(t, u, v.shape);
      break;
  }
  double total = is_indicator(t.kind) ? 0.0 : t.alpha * f;
  for (size_t i = 0; i < v.size(); ++i) total += c.at(i) * v.data[i] + t.gamma * v.data[i] * v.data[i];
  return total + t.d;
}

}  // namespace proxc::internal::emulate
