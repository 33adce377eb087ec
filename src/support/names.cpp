#include "support/names.h"

#include <cctype>

namespace proxc::internal {

bool NameScope::is_reserved(const std::string& name) {
  static const std::set<std::string> reserved = {
      // keywords and constructors
      "minimize", "variable", "load", "shape", "gaussian", "array", "inf",
      // linear operators
      "grad", "conv", "mul_elemwise", "subsample", "vstack", "reshape", "transpose", "crop", "mul_color",
      "warp", "black_box", "hstack", "uneven_subsample", "pxwise_matrixmult",
      // prox functions
      "sum_squares", "norm1", "group_norm1", "nonneg", "poisson_norm", "sum_entries", "box", "least_squares",
      "weighted_norm1", "weighted_sum_squares", "weighted_group_norm1", "weighted_nonneg", "masked_nonneg",
      "weighted_poisson_norm", "zero_prox", "prox_fn", "patch_NLM",
      // term roles and the record of rewriting passes
      "omega", "psi", "passes_run", "solver", "knorm"};
  return reserved.count(name) > 0;
}

std::string NameScope::sanitize(const std::string& hint) {
  std::string out;
  for (char ch : hint) {
    unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) || ch == '_') out += ch;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  if (is_reserved(out)) out += "_";
  return out;
}

std::string NameScope::unique(const std::string& hint, const std::string& fallback) {
  std::string base = sanitize(hint);
  if (base.empty()) base = sanitize(fallback);
  if (base.empty()) base = "t";
  std::string name = base;
  for (int i = 1; used_.count(name); ++i) name = base + "_" + std::to_string(i);
  used_.insert(name);
  return name;
}

}  // namespace proxc::internal
