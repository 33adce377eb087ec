// split: the partition of the terms into omega and psi for one solver.
//
// Guarantees afterwards: every term has a role and the problem records the
// solver (ProxImaL's rules, docs/passes.md). Problems with one variable and two
// terms or more are partitioned; in others (a lone term, several variables)
// every term is psi, as in ProxImaL, so that K is never empty.
// - pc, ladmm (ProxImaL's pock_chambolle.partition, linearized_admm.partition):
//   the least_squares terms diagonal in space, or in frequency where those are
//   more (ProxImaL's max_diag_set), are omega together when one direct solve
//   takes them (elementwise, or one FFT solve of one kernel), else the first
//   least_squares term alone; without one, the first term whose operand is the
//   variable itself (nonneg(x): its prox is the x-update's). Every other term
//   is psi.
// - hqs: the first least_squares term is omega, solved in its x-update (admm's:
//   direct where it can be, else CG).
//   (ProxImaL's hqs.partition is admm's, but its Problem.solve cannot run hqs
//   (0.1.7 passes it an `implem` argument it does not take), and the terms
//   solved exactly keep HQS's finite-rho fixed point nearer the optimum.)
// - admm (ProxImaL's admm.partition): when every term's operator has a
//   diagonal Gram matrix in the Fourier domain, or every one in space, the
//   least_squares terms whose operator is diagonal in that domain are omega
//   (solved in the x-update together with the psi terms' least squares); the
//   domain with more of them wins, the Fourier domain on a tie. When that would
//   leave psi empty (a pure least-squares problem, which ProxImaL refuses),
//   every term is psi.
// Least_squares terms that are not omega become sum_squares. The objective is
// unchanged (least_squares and sum_squares have the same value).
// A split of the user's own (PassOptions::roles) replaces the partition.

#include <algorithm>
#include <cctype>
#include <string>

#include "emulate/fold.h"
#include "ir/function.h"
#include "passes/pass.h"
#include "passes/pass_manager.h"
#include "proxc/kinds.h"
#include "support/error.h"

namespace proxc::internal {

const std::vector<std::string>& known_solvers() {
  static const std::vector<std::string> s = kind_names<SolverKind>();  // the one table: proxc/kinds.h
  return s;
}

void check_solver_name(const std::string& s) {
  SolverKind kind{};
  if (from_string(s, &kind)) return;
  std::string all;
  for (const std::string& k : known_solvers()) all += (all.empty() ? "" : ", ") + k;
  user_error << "unknown solver '" << s << "' (known: " << all << ")";
}

namespace {

// The terms ProxImaL's admm.partition puts into omega (its indices).
std::vector<size_t> admm_omega(const Problem& p) {
  std::vector<size_t> best;
  for (const bool freq : {true, false}) {
    std::vector<size_t> quads;
    bool all_gram_diag = true;
    for (size_t i = 0; i < p.terms.size(); ++i) {
      const FunctionTerm& t = p.terms[i];
      all_gram_diag = all_gram_diag && is_gram_diag_operator(t.arg, freq);
      if (t.kind == FunctionKind::LeastSquares && is_diag_operator(t.arg, freq)) quads.push_back(i);
    }
    if (all_gram_diag && quads.size() > best.size()) best = quads;
  }
  if (best.size() == p.terms.size()) best.clear();  // psi would be empty
  return best;
}

// ProxImaL's max_diag_set for pc and ladmm: the least_squares terms diagonal
// in space, or those in frequency where they are more; empty unless one direct
// solve takes them together (one conv kernel).
std::vector<size_t> max_diag_set(const Problem& p) {
  std::vector<size_t> best;
  for (const bool freq : {false, true}) {
    std::vector<size_t> quads;
    for (size_t i = 0; i < p.terms.size(); ++i) {
      const FunctionTerm& t = p.terms[i];
      if (t.kind == FunctionKind::LeastSquares && is_diag_operator(t.arg, freq)) quads.push_back(i);
    }
    if (quads.size() > best.size()) best = quads;
  }
  std::vector<Expr> operands;
  for (size_t i : best) operands.push_back(p.terms[i].arg);
  if (best.size() == p.terms.size() || !one_direct_solve(operands)) best.clear();  // psi never empty
  return best;
}

// An omega sum_squares of vstack(q_1, ..., q_n), each q_j an operator of a
// direct solve: α‖β·vstack − b‖² + <c, vstack> + γ‖vstack‖² + d is the sum
// over j of the same function of q_j with b's and c's slices (d on the
// first), each a term of q_j's variable alone (ProxImaL's omega of several
// variables, `sum_squares(vstack([x, y]))`). Empty when `t` is no such term.
std::vector<FunctionTerm> split_stacked_omega(const FunctionTerm& t) {
  if (t.kind != FunctionKind::SumSquares || t.arg->kind != ExprKind::VStack) return {};
  for (const Expr& q : t.arg->args) {
    if (!is_direct_least_squares_operator(q)) return {};
  }
  std::vector<FunctionTerm> parts;
  int64_t offset = 0;
  for (const Expr& q : t.arg->args) {
    const int64_t n = num_elements(q->shape);
    auto slice = [&](const Param& v) {
      if (!v.is_array() || v.array->shape.empty()) return v;  // a number, or a 0-d array: every part's
      return Param::of(fold_constant(make_reshape(
          make_crop(make_reshape(v.array, {num_elements(v.array->shape)}), {offset}, {n}), q->shape)));
    };
    FunctionTerm part = t;
    part.arg = q;
    part.b = slice(t.b);
    part.c = slice(t.c);
    part.d = parts.empty() ? t.d : 0;
    parts.push_back(part);
    offset += n;
  }
  return parts;
}

// `message` with each "term N" of the split problem renumbered as the
// user's term it comes from (origin[N - 1]; a stacked omega's parts share it).
std::string in_users_terms(const std::string& message, const std::vector<size_t>& origin) {
  const std::string key = "term ";
  std::string out;
  size_t i = 0;
  for (size_t at = message.find(key); at != std::string::npos; at = message.find(key, i)) {
    size_t end = at + key.size();
    while (end < message.size() && std::isdigit(static_cast<unsigned char>(message[end]))) ++end;
    out += message.substr(i, at + key.size() - i);
    const std::string digits = message.substr(at + key.size(), end - at - key.size());
    const size_t n = digits.empty() || digits.size() > 9 ? 0 : std::stoul(digits);
    out += n >= 1 && n <= origin.size() ? std::to_string(origin[n - 1] + 1) : digits;
    i = end;
  }
  return out + message.substr(i);
}

}  // namespace

// A split of the user's own (PassOptions::roles): the roles as given, an
// omega sum_squares solved in the x-update as least squares (of a vstack,
// one term per part: split_stacked_omega), a psi least_squares split off as
// sum_squares; a split no solver takes is the user's error, in the words of
// a dump's record check.
Problem user_split(const Problem& p, const PassOptions& o) {
  Problem out = p;
  user_assert(o.roles.size() == out.terms.size())
      << "split: " << o.roles.size() << " roles given for the problem's " << out.terms.size() << " terms";
  std::vector<TermRole> roles = o.roles;
  std::vector<size_t> origin(roles.size());  // the user's term of each term
  for (size_t i = 0; i < origin.size(); ++i) origin[i] = i;
  for (size_t i = 0; i < out.terms.size(); ++i) {
    if (roles[i] != TermRole::Omega) continue;
    std::vector<FunctionTerm> parts = split_stacked_omega(out.terms[i]);
    if (parts.empty()) continue;
    const auto at = static_cast<std::ptrdiff_t>(i);
    out.terms.erase(out.terms.begin() + at);
    out.terms.insert(out.terms.begin() + at, parts.begin(), parts.end());
    roles.insert(roles.begin() + at, parts.size() - 1, TermRole::Omega);
    origin.insert(origin.begin() + at, parts.size() - 1, origin[i]);
    i += parts.size() - 1;
  }
  for (size_t i = 0; i < out.terms.size(); ++i) {
    FunctionTerm& t = out.terms[i];
    internal_assert(roles[i] != TermRole::Unassigned) << "split: no role given to term " << i + 1;
    t.role = roles[i];
    if (t.role == TermRole::Omega && t.kind == FunctionKind::SumSquares) {
      user_assert(is_direct_least_squares_operator(t.arg))
          << "split: term " << origin[i] + 1
          << " (sum_squares) is omega, which it can be only where its operand "
          << "has a diagonal or circulant Gram matrix (a variable, mul_elemwise(w, x), conv(k, x) or a "
          << "scaling of these), for the x-update's direct solve";
      t.kind = FunctionKind::LeastSquares;
    } else if (t.role == TermRole::Psi && t.kind == FunctionKind::LeastSquares) {
      t.kind = FunctionKind::SumSquares;
    }
  }
  out.solver = o.solver;
  out.passes_run.push_back("split");
  const std::string violation = passes_record_violation(out);
  user_assert(violation.empty()) << "split: " << in_users_terms(violation, origin);
  return out;
}

Problem split_pass(const Problem& p, const PassOptions& o) {
  check_solver_name(o.solver);
  if (!o.roles.empty()) return user_split(p, o);
  Problem out = p;
  const bool partition = out.variables().size() == 1 && out.terms.size() > 1;
  std::vector<size_t> omega;
  if (partition && o.solver == "admm") {
    omega = admm_omega(out);
  } else if (partition) {
    auto first = [&](auto pred) {
      return static_cast<size_t>(std::find_if(out.terms.begin(), out.terms.end(), pred) - out.terms.begin());
    };
    size_t i = first([](const FunctionTerm& t) { return t.kind == FunctionKind::LeastSquares; });
    if (i == out.terms.size() && o.solver != "hqs")
      i = first([](const FunctionTerm& t) { return t.arg->is_variable(); });
    if (i < out.terms.size()) omega = {i};
    if (o.solver != "hqs") {
      const std::vector<size_t> quads = max_diag_set(out);
      if (!quads.empty()) omega = quads;
    }
  }
  for (size_t i = 0; i < out.terms.size(); ++i) {
    FunctionTerm& t = out.terms[i];
    if (std::find(omega.begin(), omega.end(), i) != omega.end()) {
      t.role = TermRole::Omega;
    } else {
      if (t.kind == FunctionKind::LeastSquares) t.kind = FunctionKind::SumSquares;
      t.role = TermRole::Psi;
    }
  }
  out.solver = o.solver;
  out.passes_run.push_back("split");
  return out;
}

}  // namespace proxc::internal
