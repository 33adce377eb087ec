// Running the passes with their instrumentation and norm oracle (pipeline.h).
#include "pipeline/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "emulate/prox.h"
#include "frontend/json.h"
#include "ir/printer.h"
#include "ir/traverse.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"

namespace proxc::internal {

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

std::function<double(const Expr& k)> operator_norm_oracle(const std::string& norm) {
  if (norm == "power") {
    return [](const Expr& k) {
      auto backend = make_emulate_backend();
      return estimate_norm(*backend, k).value;
    };
  }
  user_assert(norm == "bound") << "scale: unknown norm method '" << norm << "' (bound or power)";
  return [](const Expr& k) { return norm_bound(k); };
}

namespace {

std::string numbered(const PassRecord& r) {
  char num[24];
  std::snprintf(num, sizeof num, "%02d", r.number);
  return std::string(num) + "_" + r.name;
}

}  // namespace

void DumpPasses::before_pipeline(const Problem&) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  user_assert(!ec) << dir_ << ": cannot create the dump folder: " << ec.message();
}

void DumpPasses::after_pass(const Problem&, const Problem& after, PassRecord* record) {
  const std::string stem = (std::filesystem::path(dir_) / numbered(*record)).string();
  TextPrintOptions text;
  text.base_dir = dir_;
  text.pin_hashes = true;  // loads from any folder, as the JSON dump does
  write_file_atomic(stem + ".prox", print_text(after, text));
  JsonPrintOptions jo;
  jo.base_dir = dir_;
  jo.pin_hashes = true;  // printed as text again, it keeps its pins
  write_file_atomic(stem + ".json", print_json(after, jo));
}

void VerifyPasses::after_pass(const Problem& before, const Problem& after, PassRecord* record) {
  verify_passes_invariants(after);
  record->objective_error = objective_difference(before, after);
  internal_assert(record->objective_error <= kObjectiveTolerance)
      << "pass " << record->name << " changed the objective: relative difference " << record->objective_error
      << " > " << kObjectiveTolerance;
}

void ReportPasses::after_pass(const Problem&, const Problem& after, PassRecord* record) {
  if (!log_) return;
  if (print_) *log_ << "# after " << numbered(*record) << "\n" << print_text(after) << "\n";
  if (time_) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "pass %-8s %9.3f ms%s\n", record->name.c_str(), record->seconds * 1e3,
                  record->changed ? "" : "  (no change)");
    *log_ << buf;
  }
}

namespace {

// The passes a solve runs on a problem that has run `record`: `whole` (the
// default pipeline without the passes switched off) when the record starts
// it; otherwise, for a record in the default order that starts with absorb
// (a dump made with other switches, or a split of the user's own made
// without merge), the record and then the passes of `whole` that come after
// its last. Anything else goes to the pass manager as it is, which says why
// it cannot continue.
std::vector<std::string> continuation(const std::vector<std::string>& record,
                                      std::vector<std::string> whole) {
  if (record.empty()) return whole;
  const std::vector<std::string> order = default_pipeline();
  auto rank = [&](const std::string& s) { return std::find(order.begin(), order.end(), s) - order.begin(); };
  // The default order up to the record's last pass, merge left out unless it
  // ran (a split without merge): a record that skipped another pass, or is
  // out of order, goes to the pass manager as it is.
  std::vector<std::string> expected;
  for (const std::string& s : order) {
    if (s != "merge" || std::find(record.begin(), record.end(), s) != record.end()) expected.push_back(s);
    if (s == record.back()) break;
  }
  const bool ordered = expected == record;
  const bool prefix =
      record.size() <= whole.size() && std::equal(record.begin(), record.end(), whole.begin());
  if (!ordered || prefix) return whole;
  std::vector<std::string> out = record;
  for (const std::string& s : whole) {
    if (rank(s) > rank(record.back())) out.push_back(s);
  }
  return out;
}

// Refuses a problem the passes made whose numbers leave float32's range:
// each is the user's within it (the parser and the JSON loader check
// them), but the passes multiply them (absorb: a scale into beta; scale:
// factors of ||K||; folding: an operator applied to constants), and a
// product beyond ±3.4e38 is inf once the pipelines compute in float32 -- a
// solve that "converges" to a NaN objective. `where` names the file.
void check_numbers_fit_float32(const Problem& p, const std::string& where) {
  const std::string hint =
      ", beyond float32's range (±3.4e38), in which proxc computes: the problem's factors multiply "
      "beyond it; rescale its data or its variable";
  for (size_t i = 0; i < p.terms.size(); ++i) {
    const FunctionTerm& t = p.terms[i];
    const std::string term = "term " + std::to_string(i + 1) + " (" + term_function_name(t) + ")";
    // (A bound may be ±inf: no bound.)
    auto check = [&](const char* what, double v, bool may_be_inf = false) {
      user_assert(fits_float32(v) || (may_be_inf && std::isinf(v)))
          << where << "after the passes, " << term << " has " << what << " = " << format_double(v) << hint;
    };
    check("alpha", t.alpha);
    check("beta", t.beta);
    check("gamma", t.gamma);
    check("d", t.d);
    // What the prox scales its argument by (alpha beta², in float32 too).
    check("alpha * beta^2", t.alpha * t.beta * t.beta);
    if (!t.b.is_array()) check("b", t.b.scalar);
    if (!t.c.is_array()) check("c", t.c.scalar);
    if (!t.lower.is_array()) check("lower", t.lower.scalar, true);
    if (!t.upper.is_array()) check("upper", t.upper.scalar, true);
    for (double v : t.user_params) check("a parameter", v);
  }
  // Every constant the passes made, and every factor of an operator.
  for_each_node(problem_roots(p), [&](const Expr& e) {
    if (e->kind == ExprKind::Scale) {
      user_assert(fits_float32(e->scalar)) << where << "after the passes, an operator is scaled by "
                                           << format_double(e->scalar) << hint;
    }
    if (e->is_constant()) {
      const auto& data = e->constant->array.data;
      const auto bad = std::find_if(data.begin(), data.end(), [](float v) { return !std::isfinite(v); });
      user_assert(bad == data.end())
          << where << "after the passes, a constant" << (e->name_hint.empty() ? "" : " derived from " + e->name_hint)
          << " of shape " << shape_to_string(e->shape) << " holds " << *bad << hint;
    }
  });
}

}  // namespace

Problem split_for_solver(const Problem& problem, const PassManagerOptions& o) {
  const std::string where = problem.record_origin.empty() ? "" : problem.record_origin + ": ";
  user_assert(problem.solver.empty() || problem.solver == o.pass.solver)
      << where << "the problem was split for the solver '" << problem.solver << "'; use --solver " << problem.solver
      << " or start from a dump taken before the split pass";
  // A hand-edited or corrupt dump, not a bug of the passes that made it:
  // refused before the passes continue it, and after.
  const std::string given = passes_record_violation(problem);
  user_assert(given.empty()) << where << "the problem's record of passes is inconsistent: " << given;
  PassManagerOptions po = o;
  po.pipeline = continuation(problem.passes_run, o.pipeline.empty() ? default_pipeline() : o.pipeline);
  const Problem p = run_passes(problem, po);
  const std::string violation = passes_record_violation(p);
  user_assert(violation.empty()) << where << "the problem's record of passes is inconsistent: " << violation;
  try {
    verify_passes_invariants(p);
  } catch (const InternalError& e) {
    user_error << where << "the problem's record of passes is inconsistent (" << e.what() << ")";
  }
  check_numbers_fit_float32(p, where);
  return p;
}

Problem run_passes(const Problem& p, const PassManagerOptions& o, std::vector<PassRecord>* records) {
  const MemoryUse use("the passes (their folded constants and norm estimates)");
  PassOptions pass = o.pass;
  // The oracle is made when the scale pass asks (an unknown method is its
  // error, as before: none when no scale runs).
  if (!pass.operator_norm) {
    pass.operator_norm = [norm = pass.norm](const Expr& k) { return operator_norm_oracle(norm)(k); };
  }
  // In the order the pass manager always ran them: verify, dump, report.
  VerifyPasses verify;
  DumpPasses dump(o.dump_dir);
  ReportPasses report(o.log, o.print_after_all, o.time_passes);
  std::vector<PassInstrumentation*> in;
  if (o.verify_each) in.push_back(&verify);
  if (!o.dump_dir.empty()) in.push_back(&dump);
  if (o.log && (o.print_after_all || o.time_passes)) in.push_back(&report);
  in.insert(in.end(), o.instrumentations.begin(), o.instrumentations.end());
  return run_pipeline(p, o.pipeline, pass, in, records);
}

}  // namespace proxc::internal
