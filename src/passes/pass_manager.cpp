// The pass manager (pass_manager.h): the registry of passes and the
// instrumented run of a pipeline.
#include "passes/pass_manager.h"

#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "ir/function.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"

namespace proxc::internal {

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      {"absorb",
       "move offsets, scalar scales and positive weights into function parameters; mark direct least squares",
       absorb_pass},
      {"merge", "fold a plain quadratic into another term on the same operand", merge_pass},
      {"split", "assign each term to omega (x-update) or psi (dual split) for the chosen solver", split_pass},
      {"scale", "normalise the stacked psi operator by ||K|| (ProxImaL's bound, or a Lanczos estimate)",
       scale_pass},
  };
  return passes;
}

const PassInfo& find_pass(const std::string& name) {
  std::string names;
  for (const PassInfo& p : all_passes()) {
    if (name == p.name) return p;
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  }
  user_error << "unknown pass '" << name << "' (passes: " << names << ")";
  return all_passes()[0];
}

std::vector<std::string> default_pipeline() {
  return {
      "absorb",  // offsets and scales into parameters; direct least squares
      "merge",   // quadratics folded into other terms
      "split",   // omega / psi for the solver
      "scale",   // ||K|| <= 1
  };
}

std::string passes_record_violation(const Problem& p) {
  bool split = false, scaled = false;
  for (const std::string& s : p.passes_run) {
    split = split || s == "split";
    scaled = scaled || s == "scale";
  }
  int omega = 0;
  // Per variable: its omega terms' count and least_squares operands (omega is
  // the x-update of each variable, of its own terms).
  std::map<const ExprNode*, std::pair<int, std::vector<Expr>>> omega_of;
  for (size_t i = 0; i < p.terms.size(); ++i) {
    const FunctionTerm& t = p.terms[i];
    const std::string term = "term " + std::to_string(i + 1) + " (" + to_string(t.kind) + ")";
    if (split != (t.role != TermRole::Unassigned)) {
      return term + " has role " + to_string(t.role) + (split ? " after" : " before") + " the split pass";
    }
    if (t.role == TermRole::Omega) {
      ++omega;
      std::vector<Expr> vars;
      for_each_node({t.arg}, [&](const Expr& e) {
        if (e->is_variable()) vars.push_back(e);
      });
      if (vars.size() != 1) {
        return term + " is omega and depends on " + std::to_string(vars.size()) +
               " variables (omega is the x-update of each variable: a term of one)";
      }
      auto& [count, operands] = omega_of[vars[0].get()];
      ++count;
      if (t.kind == FunctionKind::LeastSquares) operands.push_back(t.arg);
      if (t.kind != FunctionKind::LeastSquares && !t.arg->is_variable())
        return term +
               " is omega, which only a least_squares term or a function of the variable itself can be";
      if (t.kind != FunctionKind::LeastSquares && (p.solver == "admm" || p.solver == "hqs"))
        return term + " is omega, which for " + p.solver + " only a least_squares term can be";
    }
    // The scale pass wraps each psi operand in (1/knorm)·K_i; the iterate's units hang on knorm.
    if (scaled && p.knorm > 0 && t.role == TermRole::Psi) {
      const double want = 1 / p.knorm;
      if (t.arg->kind != ExprKind::Scale || !(std::abs(t.arg->scalar - want) <= 1e-12 * want)) {
        return term + "'s operand is not scaled by 1/knorm = " + std::to_string(want) +
               " as the scale pass scales it";
      }
    }
  }
  if (split && omega == static_cast<int>(p.terms.size()) && omega > 0)
    return "every term is omega, so K (the psi operators) is empty: at least one term must be psi";
  // admm and hqs solve every omega term in their x-update; pc and ladmm take
  // each variable's omega terms' prox by one direct solve.
  for (const auto& [var, of] : omega_of) {
    const auto& [count, operands] = of;
    if (count > 1 && p.solver != "admm" && p.solver != "hqs" &&
        !(operands.size() == static_cast<size_t>(count) && one_direct_solve(operands))) {
      return std::to_string(count) +
             " omega terms of one variable that one direct solve cannot take together (" + p.solver +
             " takes several only as least squares diagonal in space, or circulant of one conv kernel)";
    }
  }
  if (split != !p.solver.empty()) return "a solver is recorded exactly when the problem is split";
  if (scaled != (p.knorm > 0)) return "knorm is recorded exactly when the problem is scaled";
  return "";
}

void verify_passes_invariants(const Problem& p) {
  verify(p);
  for (const FunctionTerm& t : p.terms) make_term(t);
  const std::string violation = passes_record_violation(p);
  internal_assert(violation.empty()) << violation;
}

Problem run_pipeline(const Problem& p, const std::vector<std::string>& pipeline_in,
                     const PassOptions& options, const std::vector<PassInstrumentation*>& instrumentations,
                     std::vector<PassRecord>* records) {
  std::vector<std::string> pipeline = pipeline_in.empty() ? default_pipeline() : pipeline_in;
  for (const std::string& name : pipeline) find_pass(name);
  // The pipeline is the whole one, which the problem's record starts, or the
  // passes that continue the record (`--passes split,scale` after absorb, merge).
  size_t done = p.passes_run.size();
  bool prefix = done <= pipeline.size();
  for (size_t i = 0; prefix && i < done; ++i) prefix = p.passes_run[i] == pipeline[i];
  if (!prefix) {
    std::vector<std::string> whole = p.passes_run;
    whole.insert(whole.end(), pipeline.begin(), pipeline.end());
    std::string again;  // a pass the continuation would run a second time
    for (size_t i = done; i < whole.size() && again.empty(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (whole[j] == whole[i]) again = whole[i];
      }
    }
    if (!again.empty()) {
      std::string ran, want;
      for (const auto& s : p.passes_run) ran += (ran.empty() ? "" : ",") + s;
      for (const auto& s : pipeline) want += (want.empty() ? "" : ",") + s;
      user_error << (p.record_origin.empty() ? "" : p.record_origin + ": ") << "the problem has run the passes [" << ran << "], which do not start the pipeline [" << want
                 << "], and running it after them would run " << again
                 << " again; choose a pipeline that continues it with --passes (the passes still to run, or "
                    "the whole pipeline)";
    }
    pipeline = whole;
  }
  for (PassInstrumentation* in : instrumentations) in->before_pipeline(p);
  Problem cur = p;
  for (size_t i = done; i < pipeline.size(); ++i) {
    const PassInfo& pass = find_pass(pipeline[i]);
    auto t0 = std::chrono::steady_clock::now();
    Problem next = pass.run(cur, options);
    PassRecord rec;
    rec.name = pass.name;
    rec.number = static_cast<int>(i + 1);
    rec.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      Problem a = cur, b = next;  // compare without the record of passes
      a.passes_run.clear();
      b.passes_run.clear();
      TextPrintOptions o;
      o.hash_inline = true;
      rec.changed = print_text(a, o) != print_text(b, o);
    }
    for (PassInstrumentation* in : instrumentations) in->after_pass(cur, next, &rec);
    if (records) records->push_back(rec);
    cur = std::move(next);
  }
  return cur;
}

}  // namespace proxc::internal
