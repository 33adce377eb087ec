#include "check/check_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>

#include "ir/traverse.h"
#include "support/error.h"

namespace proxc::internal {

ProblemCheck check_problem(Backend& backend, const Problem& p, uint64_t seed, Backend* reference) {
  // The dot tests hold, in double precision, every node of K with random
  // inputs, outputs and their adjoints (about 4 values per element of each
  // node), and the whole K stacked once more: checked against the limit
  // before anything is allocated, as solve checks its buffers.
  double elements = 0;
  std::vector<Expr> args;
  for (const FunctionTerm& t : p.terms) args.push_back(t.arg);
  for_each_node(args, [&](const Expr& e) {
    if (e->has_variable) elements += static_cast<double>(num_elements(e->shape));
  });
  const double bytes = 2 * 4.0 * sizeof(double) * elements;
  user_assert(bytes <= static_cast<double>(Limits::max_array_bytes()))
      << "check: the dot tests need about " << format_bytes(bytes) << ", more than " << memory_budget_text();
  ProblemCheck c;
  c.backend = backend.name();
  c.passed = true;
  std::unordered_set<const ExprNode*> seen;
  std::vector<Expr> parts;
  for (const FunctionTerm& t : p.terms) {
    for (const Expr& op : operators_of(t.arg)) {
      if (!seen.insert(op.get()).second) continue;
      c.operators.push_back(dot_test(backend, isolate_operator(op), seed));
      c.passed = c.passed && c.operators.back().passed;
    }
    c.terms.push_back(dot_test(backend, t.arg, seed));
    c.passed = c.passed && c.terms.back().passed;
    parts.push_back(t.arg);
  }
  Expr k = parts.size() == 1 ? parts[0] : make_vstack(parts);
  c.whole = dot_test(backend, k, seed);
  c.whole.what = "K";
  c.norm = estimate_norm(backend, k);
  c.bound = norm_bound(k);
  c.bound_holds = c.norm.finite && c.norm.value <= c.bound * (1 + 1e-6);
  c.passed = c.passed && c.whole.passed && c.bound_holds;
  if (reference) {
    c.parity = parity_check(backend, *reference, p, seed);
    for (const ParityResult& r : c.parity) c.passed = c.passed && r.passed;
  }
  return c;
}

namespace {
std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void row(std::ostringstream& out, const char* group, const DotTestResult& r) {
  std::string what = r.what.size() > 48 ? r.what.substr(0, 45) + "..." : r.what;
  char buf[256];
  // A zero operator (scale 0) has error and tolerance 0, as --json says: not 0/0.
  auto relative = [&](double v) { return r.scale > 0 ? v / r.scale : v; };
  std::snprintf(buf, sizeof buf, "  %-9s %-48s %10s %10s  %s\n", group, what.c_str(),
                fmt(relative(r.error)).c_str(), fmt(relative(r.tolerance)).c_str(),
                r.passed ? "pass" : "FAIL");
  out << buf;
}

nlohmann::ordered_json dot_json(const DotTestResult& r) {
  nlohmann::ordered_json j;
  j["operator"] = r.what;
  j["lhs"] = r.lhs;
  j["rhs"] = r.rhs;
  j["error"] = r.error;
  j["scale"] = r.scale;
  j["tolerance"] = r.tolerance;
  j["passed"] = r.passed;
  return j;
}
}  // namespace

std::string format_check_text(const ProblemCheck& c) {
  std::ostringstream out;
  out << "dot tests on the " << c.backend << " backend: |<Kx,y> - <x,K'y>| / (|Kx||y| + |x||K'y|)\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-9s %-48s %10s %10s  %s\n", "", "operator", "error", "tolerance", "result");
  out << buf;
  for (const auto& r : c.operators) row(out, "operator", r);
  for (const auto& r : c.terms) row(out, "term", r);
  row(out, "whole", c.whole);
  if (!c.parity.empty()) {
    out << c.backend << " against the emulator, same inputs: max |difference| per node\n";
    for (const auto& r : c.parity) {
      std::string what = r.what.size() > 58 ? r.what.substr(0, 55) + "..." : r.what;
      std::snprintf(buf, sizeof buf, "  %-58s %10s %10s  %s\n", what.c_str(), fmt(r.error).c_str(),
                    fmt(r.tolerance).c_str(), r.passed ? "pass" : "FAIL");
      out << buf;
    }
  }
  out << "||K|| by Lanczos iteration: " << fmt(c.norm.value) << " (" << c.norm.iterations << " iterations); "
      << "upper bound: " << fmt(c.bound)
      << (c.bound_holds    ? ""
          : !c.norm.finite ? "  FAIL: an application of KᵀK was not finite (NaN or Inf)"
                           : "  FAIL: the estimate exceeds the bound")
      << "\n";
  out << (c.passed ? "check passed\n" : "check FAILED\n");
  return out.str();
}

std::string format_check_json(const ProblemCheck& c) {
  nlohmann::ordered_json j;
  j["backend"] = c.backend;
  j["passed"] = c.passed;
  j["operators"] = nlohmann::ordered_json::array();
  for (const auto& r : c.operators) j["operators"].push_back(dot_json(r));
  j["terms"] = nlohmann::ordered_json::array();
  for (const auto& r : c.terms) j["terms"].push_back(dot_json(r));
  j["whole"] = dot_json(c.whole);
  j["parity"] = nlohmann::ordered_json::array();
  for (const auto& r : c.parity) {
    nlohmann::ordered_json e;
    e["node"] = r.what;
    e["error"] = r.error;
    e["tolerance"] = r.tolerance;
    e["passed"] = r.passed;
    j["parity"].push_back(e);
  }
  j["norm_estimate"] = c.norm.value;
  j["norm_finite"] = c.norm.finite;
  j["norm_iterations"] = c.norm.iterations;
  j["norm_bound"] = c.bound;
  j["bound_holds"] = c.bound_holds;
  return j.dump(1) + "\n";
}

}  // namespace proxc::internal
