#include "ir/function.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "ir/operators.h"
#include "proxc/prox_fn.h"
#include "support/error.h"

namespace proxc::internal {

namespace {
const char* const kFunctionNames[] = {
#define PROXC_X(name, keyword, ...) keyword,
    PROXC_FOR_EACH_FUNCTION_KIND(PROXC_X)
#undef PROXC_X
};

void check_param(const Param& p, const char* fn, const char* name, const Shape& operand, bool allow_inf) {
  if (p.is_array()) {
    user_assert(p.array->is_constant())
        << fn << ": parameter '" << name << "' must be a scalar or a constant array, not an expression of "
        << "variables";
    user_assert(p.array->shape == operand || p.array->rank() == 0)
        << fn << ": parameter '" << name << "' has shape " << shape_to_string(p.array->shape)
        << " but the operand has shape " << shape_to_string(operand);
  } else {
    user_assert(fits_float32(p.scalar) || (allow_inf && std::isinf(p.scalar)))
        << fn << ": parameter '" << name << "' must be finite"
        << (std::isfinite(p.scalar) ? " in float32 (within ±3.4e38), in which proxc computes" : "") << ", got "
        << p.scalar;
  }
}
}  // namespace

const char* to_string(TermRole role) {
  switch (role) {
    case TermRole::Unassigned: return "unassigned";
    case TermRole::Omega: return "omega";
    case TermRole::Psi: return "psi";
  }
  return "?";
}

const char* to_string(FunctionKind kind) { return kFunctionNames[static_cast<int>(kind)]; }

bool function_kind_from_string(const std::string& s, FunctionKind* kind) {
  for (size_t i = 0; i < sizeof(kFunctionNames) / sizeof(kFunctionNames[0]); ++i) {
    if (s == kFunctionNames[i]) {
      *kind = static_cast<FunctionKind>(i);
      return true;
    }
  }
  return false;
}

Expr strip_scalings(const Expr& e, double* factor) {
  Expr n = e;
  while (n->kind == ExprKind::Scale || n->kind == ExprKind::Neg) {
    *factor *= n->kind == ExprKind::Scale ? n->scalar : -1.0;
    n = n->args[0];
  }
  return n;
}

bool is_direct_least_squares_operator(const Expr& e) {
  double unused = 1;
  Expr n = strip_scalings(e, &unused);  // scalings are diagonal
  if (n->is_variable()) return true;
  if (n->kind == ExprKind::MulElemwise || is_circular_conv(*n)) return n->args[1]->is_variable();
  return false;
}

bool one_direct_solve(const std::vector<Expr>& operands) {
  const ExprNode* kernel = nullptr;
  bool weights = false;
  for (const Expr& q : operands) {
    if (!is_direct_least_squares_operator(q)) return false;
    double unused = 1;
    const Expr base = strip_scalings(q, &unused);
    if (base->kind == ExprKind::MulElemwise) weights = true;
    if (base->kind != ExprKind::Conv) continue;
    if (kernel && kernel != base->args[0].get()) return false;
    kernel = base->args[0].get();
  }
  return !(kernel && weights);
}

namespace {

// Memoized on the node: operands may share subexpressions (a DAG of 2^n paths).
bool diag(const Expr& e, bool freq, std::map<const ExprNode*, bool>* memo) {
  if (auto it = memo->find(e.get()); it != memo->end()) return it->second;
  bool d = false;
  switch (e->kind) {
    case ExprKind::Variable:
    case ExprKind::Constant:
      d = true;
      break;
    case ExprKind::Scale:
    case ExprKind::Neg:
    case ExprKind::Reshape:
      d = diag(e->args[0], freq, memo);
      break;
    case ExprKind::MulElemwise:
      d = !freq && diag(e->args[1], freq, memo);
      break;
    case ExprKind::Conv:
      d = freq && is_circular_conv(*e) && diag(e->args[1], freq, memo);
      break;
    case ExprKind::Add:
    case ExprKind::Sub:
      d = diag(e->args[0], freq, memo) && diag(e->args[1], freq, memo);
      break;
    default:
      break;
  }
  return (*memo)[e.get()] = d;
}

// ProxImaL's is_gram_diag, memoized as diag.
bool gram_diag(const Expr& e, bool freq, std::map<const ExprNode*, bool>* gram_memo,
               std::map<const ExprNode*, bool>* diag_memo) {
  if (auto it = gram_memo->find(e.get()); it != gram_memo->end()) return it->second;
  bool d = true;
  switch (e->kind) {
    case ExprKind::Scale:
    case ExprKind::Neg:
      d = gram_diag(e->args[0], freq, gram_memo, diag_memo);
      break;
    case ExprKind::VStack:
      for (const Expr& a : e->args) d = d && gram_diag(a, freq, gram_memo, diag_memo);
      break;
    case ExprKind::Transpose:
      d = diag(e->args[0], freq, diag_memo);
      break;  // a permutation: PᵀP = I
    case ExprKind::Subsample:
    case ExprKind::UnevenSubsample:
      d = !freq && diag(e->args[0], freq, diag_memo);
      break;
    default:
      d = diag(e, freq, diag_memo);
      break;
  }
  return (*gram_memo)[e.get()] = d;
}

}  // namespace

bool is_diag_operator(const Expr& e, bool freq) {
  std::map<const ExprNode*, bool> memo;
  return diag(e, freq, &memo);
}

bool is_gram_diag_operator(const Expr& e, bool freq) {
  std::map<const ExprNode*, bool> gram_memo, diag_memo;
  return gram_diag(e, freq, &gram_memo, &diag_memo);
}

std::string term_function_name(const FunctionTerm& t) {
  return t.kind == FunctionKind::UserProx ? t.user_name : std::string(to_string(t.kind));
}

bool term_has_value(const FunctionTerm& t) {
  if (t.kind != FunctionKind::UserProx) return true;
  const proxc_prox_fn* f = proxc_find_prox_fn(t.user_name.c_str());
  return f && f->value;
}

const char* user_param_name(const FunctionTerm& t, size_t i) {
  const proxc_prox_fn* f = proxc_find_prox_fn(t.user_name.c_str());
  internal_assert(f && i < static_cast<size_t>(f->num_params)) << t.user_name << ": parameter " << i;
  return f->param_names[i];
}

namespace {

// A prox function of the user's: registered, its parameters one value each,
// and the operand's shape and the values accepted by its check callback.
void check_user_prox(const FunctionTerm& t) {
  const char* fn = t.user_name.c_str();
  const proxc_prox_fn* f = proxc_find_prox_fn(fn);
  user_assert(f) << "no prox function named '" << t.user_name
                 << "' is registered in this program (a plugin registers its own: --plugin lib.so)";
  user_assert(t.user_params.size() == static_cast<size_t>(f->num_params))
      << fn << ": takes " << f->num_params << " parameters, got " << t.user_params.size();
  for (size_t i = 0; i < t.user_params.size(); ++i) {
    user_assert(fits_float32(t.user_params[i]))
        << fn << ": " << f->param_names[i] << " must be finite in float32 (within ±3.4e38), got " << t.user_params[i];
  }
  const Shape& s = t.arg->shape;
  user_assert(!s.empty() && s.size() <= PROXC_PROX_FN_MAX_RANK)
      << fn << ": the operand must have rank 1 to " << PROXC_PROX_FN_MAX_RANK << ", got shape "
      << shape_to_string(s);
  if (f->check) {
    char message[512] = {0};
    int rc = f->check(f->user, s.data(), static_cast<int>(s.size()), t.user_params.data(), message, sizeof message);
    message[sizeof message - 1] = 0;
    user_assert(rc == 0) << fn << ": " << (*message ? message : "the function refuses this operand")
                         << " (operand shape " << shape_to_string(s) << ")";
  }
}

}  // namespace

FunctionTerm make_term(FunctionTerm t) {
  const std::string fn_name = term_function_name(t);
  const char* fn = fn_name.c_str();
  internal_assert(t.arg) << fn << ": null operand";
  user_assert(t.arg->has_variable) << fn << ": the operand has no variable; a term must depend on a variable";
  // Each within float32's range (±3.4e38): proxc computes in float32.
  user_assert(fits_float32(t.alpha) && t.alpha >= 0)
      << fn << ": alpha (the factor in front) must be finite in float32 and >= 0, got " << t.alpha;
  user_assert(fits_float32(t.beta) && t.beta != 0)
      << fn << ": beta must be finite in float32 and nonzero, got " << t.beta;
  user_assert(fits_float32(t.gamma) && t.gamma >= 0)
      << fn << ": gamma must be finite in float32 and >= 0, got " << t.gamma;
  user_assert(fits_float32(t.d)) << fn << ": d must be finite in float32, got " << t.d;
  const Shape& s = t.arg->shape;
  check_param(t.b, fn, "b", s, false);
  check_param(t.c, fn, "c", s, false);
  if (t.kind == FunctionKind::GroupNorm1 || t.kind == FunctionKind::WeightedGroupNorm1) {
    user_assert(!t.axes.empty()) << fn << ": needs the group axes, e.g. " << fn << "(grad(x), [2]"
                                 << (t.kind == FunctionKind::GroupNorm1 ? ")" : ", w)");
    std::sort(t.axes.begin(), t.axes.end());
    for (size_t i = 0; i < t.axes.size(); ++i) {
      user_assert(t.axes[i] >= 0 && t.axes[i] < static_cast<int64_t>(s.size()))
          << fn << ": axis " << t.axes[i] << " is out of range for operand shape " << shape_to_string(s);
      user_assert(i == 0 || t.axes[i] != t.axes[i - 1]) << fn << ": axis " << t.axes[i] << " is repeated";
    }
  } else {
    internal_assert(t.axes.empty()) << fn << " takes no axes";
  }
  // The functions whose row in the table has a weight (or mask) slot.
  const auto& slots = function_info(t.kind).slots;
  const bool weighted = std::any_of(slots.begin(), slots.end(),
                                    [](const TermSlot& slot) { return slot.role == TermSlotRole::Weight; });
  if (weighted) {
    const char* what = t.kind == FunctionKind::MaskedNonneg ? "mask" : "weight";
    user_assert(t.weight != nullptr) << fn << ": needs the " << what;
    user_assert(t.weight->is_constant()) << fn << ": the " << what << " must be a constant array or a number";
    user_assert(t.weight->shape == s || t.weight->rank() == 0)
        << fn << ": " << what << " shape " << shape_to_string(t.weight->shape) << " does not match operand shape "
        << shape_to_string(s);
    const auto& w = t.weight->constant->array.data;
    for (float v : w) user_assert(std::isfinite(v)) << fn << ": the " << what << " must be finite, found " << v;
    if (t.kind == FunctionKind::WeightedPoissonNorm) {
      for (float v : w) user_assert(v >= 0) << fn << ": the weight must be >= 0, found " << v;
    }
    if (t.kind == FunctionKind::WeightedGroupNorm1 && t.weight->rank() > 0) {
      // One weight per group: then the prox is closed-form (the group's norm scaled).
      std::vector<int64_t> st(s.size(), 1);
      for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
      for (size_t f = 0; f < w.size(); ++f) {
        int64_t rep = static_cast<int64_t>(f);
        for (int64_t a : t.axes) rep -= ((static_cast<int64_t>(f) / st[a]) % s[a]) * st[a];
        user_assert(w[f] == w[static_cast<size_t>(rep)])
            << fn << ": the weight must be the same within each group (along axes of the group), as its prox "
            << "scales each group's norm by one weight; entry " << f << " differs from its group's first";
      }
    }
  } else {
    internal_assert(!t.weight) << fn << " takes no weight";
  }
  if (t.kind == FunctionKind::PoissonNorm || t.kind == FunctionKind::WeightedPoissonNorm) {
    user_assert(t.counts != nullptr) << fn << ": needs the counts: poisson_norm(x, counts)";
    user_assert(t.counts->is_constant()) << fn << ": the counts must be a constant array";
    user_assert(t.counts->shape == s || t.counts->rank() == 0)
        << fn << ": counts shape " << shape_to_string(t.counts->shape) << " does not match operand shape "
        << shape_to_string(s);
    for (float v : t.counts->constant->array.data) {
      user_assert(v >= 0) << fn << ": counts must be >= 0, found " << v;
    }
  } else {
    internal_assert(!t.counts) << fn << " takes no counts";
  }
  if (t.kind == FunctionKind::LeastSquares) {
    user_assert(is_direct_least_squares_operator(t.arg))
        << fn << ": the operand must be a variable, mul_elemwise(w, x), conv(k, x) or a scaling of these "
        << "(an operator with a diagonal or circulant Gram matrix)";
  }
  if (t.kind == FunctionKind::UserProx) {
    check_user_prox(t);
  } else {
    internal_assert(t.user_name.empty() && t.user_params.empty()) << fn << " is not a prox function of the user's";
  }
  if (t.kind == FunctionKind::Box) {
    check_param(t.lower, fn, "lower", s, true);
    check_param(t.upper, fn, "upper", s, true);
    if (!t.lower.is_array() && !t.upper.is_array()) {
      user_assert(t.lower.scalar <= t.upper.scalar)
          << fn << ": lower bound " << t.lower.scalar << " is above upper bound " << t.upper.scalar;
      user_assert(t.lower.scalar < INFINITY && t.upper.scalar > -INFINITY)
          << fn << ": the bounds leave no feasible point";
    }
  }
  return t;
}

}  // namespace proxc::internal
