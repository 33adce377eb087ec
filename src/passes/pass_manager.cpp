#include "passes/pass_manager.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>

#include "emulate/linop.h"
#include "emulate/prox.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "step/step.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal {

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
      {"absorb", "move offsets, scalar scales and positive weights into function parameters; mark direct least squares",
       absorb_pass},
      {"merge", "fold a plain quadratic into another term on the same operand", merge_pass},
      {"split", "assign each term to omega (x-update) or psi (dual split) for the chosen solver", split_pass},
      {"scale", "normalise the stacked psi operator by ||K|| (ProxImaL's bound, or a Lanczos estimate)", scale_pass},
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

void verify_passes_invariants(const Problem& p) {
  verify(p);
  bool split = false;
  for (const std::string& s : p.passes_run) split = split || s == "split";
  int omega = 0;
  for (const FunctionTerm& t : p.terms) {
    make_term(t);
    internal_assert(split == (t.role != TermRole::Unassigned))
        << "term " << to_string(t.kind) << " has role " << to_string(t.role) << (split ? " after" : " before")
        << " the split pass";
    if (t.role == TermRole::Omega) {
      ++omega;
      internal_assert(t.kind == FunctionKind::LeastSquares) << "an omega term must be least_squares";
    }
  }
  internal_assert(omega <= 1) << omega << " omega terms";
  internal_assert(split == !p.solver.empty()) << "a solver is recorded exactly when the problem is split";
  bool scaled = false;
  for (const std::string& s : p.passes_run) scaled = scaled || s == "scale";
  internal_assert(scaled == (p.knorm > 0)) << "knorm is recorded exactly when the problem is scaled";
}

namespace {

double objective_at(const Problem& p, const std::map<const ExprNode*, emulate::Tensor>& x, double scale,
                    double* magnitude) {
  std::map<const ExprNode*, emulate::Tensor> s;
  std::map<const ExprNode*, const emulate::Tensor*> vars;
  for (const auto& [v, t] : x) {
    emulate::Tensor u = t;
    for (double& e : u.data) e *= scale;
    s[v] = std::move(u);
  }
  for (const auto& [v, t] : s) vars[v] = &t;
  double total = 0;
  for (const FunctionTerm& t : p.terms) {
    std::map<const ExprNode*, const emulate::Tensor*> used;
    for (const Expr& v : linop_variables(t.arg)) used[v.get()] = vars.at(v.get());
    double f = emulate::value(t, emulate::forward(t.arg, used, true));
    total += f;
    *magnitude += std::fabs(f);
  }
  return total;
}

}  // namespace

double objective_difference(const Problem& before, const Problem& after, int points, uint64_t seed) {
  std::vector<Expr> vb = before.variables(), va = after.variables();
  internal_assert(vb.size() == va.size()) << "a pass changed the number of variables";
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double worst = 0;
  for (int k = 0; k < points; ++k) {
    std::map<const ExprNode*, emulate::Tensor> xb, xa;
    for (size_t i = 0; i < vb.size(); ++i) {
      internal_assert(vb[i]->shape == va[i]->shape) << "a pass changed a variable's shape";
      emulate::Tensor t(vb[i]->shape);
      for (double& e : t.data) e = u(rng);
      xb[vb[i].get()] = t;
      xa[va[i].get()] = t;
    }
    double mag = 0;
    double fb = objective_at(before, xb, before.variable_scale(), &mag);
    double fa = objective_at(after, xa, after.variable_scale(), &mag);
    if (std::isinf(fb) || std::isinf(fa)) {
      if (fb != fa) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(fa - fb) / (1 + mag));
  }
  return worst;
}

Problem run_passes(const Problem& p, const PassManagerOptions& o, std::vector<PassRecord>* records) {
  std::vector<std::string> pipeline = o.pipeline.empty() ? default_pipeline() : o.pipeline;
  for (const std::string& name : pipeline) find_pass(name);
  // The problem's record must be a prefix of the pipeline.
  size_t done = p.passes_run.size();
  bool prefix = done <= pipeline.size();
  for (size_t i = 0; prefix && i < done; ++i) prefix = p.passes_run[i] == pipeline[i];
  if (!prefix) {
    std::string ran, want;
    for (const auto& s : p.passes_run) ran += (ran.empty() ? "" : ",") + s;
    for (const auto& s : pipeline) want += (want.empty() ? "" : ",") + s;
    user_error << "the problem has run the passes [" << ran << "], which do not start the pipeline [" << want
               << "]; choose a pipeline that continues it with --passes";
  }
  if (!o.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.dump_dir, ec);
    user_assert(!ec) << o.dump_dir << ": cannot create the dump folder: " << ec.message();
  }
  Problem cur = p;
  for (size_t i = done; i < pipeline.size(); ++i) {
    const PassInfo& pass = find_pass(pipeline[i]);
    auto t0 = std::chrono::steady_clock::now();
    Problem next = pass.run(cur, o.pass);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    PassRecord rec;
    rec.name = pass.name;
    rec.seconds = secs;
    {
      Problem a = cur, b = next;  // compare without the record of passes
      a.passes_run.clear();
      b.passes_run.clear();
      rec.changed = print_text(a) != print_text(b);
    }
    if (o.verify_each) {
      verify_passes_invariants(next);
      rec.objective_error = objective_difference(cur, next);
      internal_assert(rec.objective_error <= kObjectiveTolerance)
          << "pass " << pass.name << " changed the objective: relative difference " << rec.objective_error
          << " > " << kObjectiveTolerance;
    }
    char num[24];
    std::snprintf(num, sizeof num, "%02zu", i + 1);
    if (!o.dump_dir.empty()) {
      std::string stem = (std::filesystem::path(o.dump_dir) / (std::string(num) + "_" + pass.name)).string();
      write_file_atomic(stem + ".prox", print_text(next, {o.dump_dir}));
      JsonPrintOptions jo;
      jo.base_dir = o.dump_dir;
      write_file_atomic(stem + ".json", print_json(next, jo));
    }
    if (o.log && o.print_after_all) *o.log << "# after " << num << "_" << pass.name << "\n" << print_text(next) << "\n";
    if (o.log && o.time_passes) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "pass %-8s %9.3f ms%s\n", pass.name, secs * 1e3, rec.changed ? "" : "  (no change)");
      *o.log << buf;
    }
    if (records) records->push_back(rec);
    cur = std::move(next);
  }
  return cur;
}

}  // namespace proxc::internal
