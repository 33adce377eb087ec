/// \file
/// Step programs: what one solver iteration (or one check) computes, as a DAG
/// of array-valued nodes. Backends compile step programs; they never see
/// solver logic.
///
/// Semantics of the nodes (every value is an array with a shape; rank 0 is a
/// scalar, broadcast by the elementwise nodes):
///
///   input(name)               a named buffer, given at run time.
///   param(name)               a named scalar, given at run time.
///   constant(value)           a scalar literal.
///   data(c)                   the values of a problem constant (b, a mask, ...).
///   forward(K, var_0 .. var_n)   the linear part of the problem expression K
///                             (offsets dropped) applied to one buffer per
///                             variable of K; `affine` keeps the offsets (K x − b).
///   adjoint(K, i, y)          Kᵀ y restricted to variable i of K.
///   prox(F, v, rho)           argmin_x F(x) + (rho/2)||x − v||² for the term F
///                             (its operand is replaced by x; parameters kept).
///   value(F, v)               F(v) (rank 0); indicators use ProxImaL's 1e-3 slack.
///   circulant_solve(k, r, a, c)  x solving (a·KᵀK + c) x = r, K = conv(k, ·).
///   add, sub, mul, div, min, max (binary); neg, abs, sqrt, sign (unary);
///   axpby(a, x, b, y) = a·x + b·y;  fill(s, shape) = an array of s.
///   sum, sum_squares, dot, max_abs  reductions to rank 0 (accumulated in double);
///                             a reduction may be gated by the check parameter
///                             (see kCheckParam): computed only by checking runs.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ir/problem.h"

namespace proxc::internal {

#define PROXC_FOR_EACH_STEP_KIND(X)      \
  X(Input, "input")                      \
  X(Param, "param")                      \
  X(Constant, "constant")                \
  X(Data, "data")                        \
  X(Forward, "forward")                  \
  X(Adjoint, "adjoint")                  \
  X(Prox, "prox")                        \
  X(Value, "value")                      \
  X(CirculantSolve, "circulant_solve")   \
  X(Add, "add")                          \
  X(Sub, "sub")                          \
  X(Mul, "mul")                          \
  X(Div, "div")                          \
  X(Min, "min")                          \
  X(Max, "max")                          \
  X(Neg, "neg")                          \
  X(Abs, "abs")                          \
  X(Sqrt, "sqrt")                        \
  X(Sign, "sign")                        \
  X(Axpby, "axpby")                      \
  X(Fill, "fill")                        \
  X(Sum, "sum")                          \
  X(SumSquares, "sum_squares")           \
  X(Dot, "dot")                          \
  X(MaxAbs, "max_abs")

enum class StepKind {
#define PROXC_X(name, keyword) name,
  PROXC_FOR_EACH_STEP_KIND(PROXC_X)
#undef PROXC_X
};

const char* to_string(StepKind kind);

struct StepNode;
/// Handle to an immutable step node.
using Step = std::shared_ptr<const StepNode>;

struct StepNode {
  StepKind kind;
  Shape shape;
  std::vector<Step> args;
  /// Input, Param: the name. Output names live in StepProgram.
  std::string name;
  /// Constant, Fill: the value.
  double value = 0;
  /// Forward, Adjoint: the problem expression K and its variables (order of
  /// the forward's operands); Data, CirculantSolve: the constant node.
  Expr expr;
  std::vector<Expr> vars;
  /// Adjoint: which variable. Forward: 1 when offsets are kept. Reductions:
  /// 1 when gated, the gate (the check parameter) then being the last operand.
  int index = 0;
  /// Prox, Value: the function term.
  std::shared_ptr<const FunctionTerm> term;
};

/// The reserved parameter that gates the convergence checks: a run with
/// check = 0 skips every gated reduction (its value is 0, and nothing only it
/// reads is computed); check = 1 computes them. A run that does not give it
/// checks. Solvers gate their residual norms with it, so the iterations between
/// two checks move only the memory the update itself needs.
inline constexpr const char* kCheckParam = "check";

// ---- Builders (check shapes; a mismatch is an InternalError: programs are built by proxc) ----

Step step_input(const std::string& name, Shape shape);
Step step_param(const std::string& name);
Step step_constant(double v);
Step step_data(const Expr& constant);
/// K's variables are found in canonical order (see linop_variables).
Step step_forward(const Expr& k, const std::vector<Step>& xs, bool affine = false);
Step step_adjoint(const Expr& k, int var_index, const Step& y);
Step step_prox(const FunctionTerm& term, const Step& v, const Step& rho);
Step step_value(const FunctionTerm& term, const Step& v);
Step step_circulant_solve(const Expr& kernel, const Step& rhs, const Step& a, const Step& c);
Step step_binary(StepKind kind, const Step& a, const Step& b);
Step step_unary(StepKind kind, const Step& a);
Step step_axpby(const Step& a, const Step& x, const Step& b, const Step& y);
Step step_fill(double v, Shape shape);
/// `when`, if given, gates the reduction: the param kCheckParam (see there).
Step step_reduce(StepKind kind, const Step& a, const Step& b = nullptr, const Step& when = nullptr);
/// Whether `n` is a reduction gated by the check parameter.
bool is_gated(const StepNode& n);
bool is_reduction(StepKind kind);

/// The variables of K, depth first in operand order (each once).
std::vector<Expr> linop_variables(const Expr& k);

/// A program: named outputs over a DAG whose leaves are named inputs,
/// params, constants and data.
struct StepProgram {
  std::string name;
  /// Solver iterations the program computes in one run (`--fuse N`), for backends to schedule by.
  int unrolled = 1;
  std::vector<std::pair<std::string, Step>> outputs;

  /// Every node once, operands first.
  std::vector<Step> nodes() const;
  /// The Input nodes (by name, each once), and the Param names.
  std::vector<Step> inputs() const;
  std::vector<std::string> params() const;
  /// The outputs that depend on a gated reduction (the residual norms): a run
  /// with check = 0 does not compute them, and they are absent from its results.
  std::set<std::string> check_outputs() const;
  /// InternalError unless the output names are unique (backends call it).
  void verify() const;
};

/// Whether a run with these params checks (kCheckParam absent or not 0).
bool run_checks(const std::map<std::string, double>& params);

/// A program's convergence check as a program of its own, for a backend that
/// compiles the two apart (and at once): `iteration` has p's outputs other
/// than its check outputs; `check` has the check outputs, with every node
/// that is an array output of `iteration` read from an input instead (named
/// next_inputs[output name]) and the rest recomputed from p's inputs. A
/// checking run of p computes what a run of `iteration` and then a run of
/// `check` (given p's inputs and params, and iteration's outputs) compute.
/// `check` has no outputs when p has no check outputs. Its reductions are not
/// gated: it is for checking runs only.
struct CheckSplit {
  StepProgram iteration, check;
  std::map<std::string, std::string> next_inputs;  ///< an iteration output's name → check's input
};
CheckSplit split_check(const StepProgram& p);

/// p with equal nodes made one: nodes of one kind, shape and attributes over
/// the same operands (problem expressions compared by structure, variables
/// and constants by identity). A term used twice (g = grad(u) in two
/// functions) is applied once, and a check's Kᵀy of the y the update already
/// took it of is not taken again. The outputs compute what they did.
StepProgram eliminate_common_subexpressions(const StepProgram& p);

/// A program's loop invariants computed once: the values that depend on no
/// input and no param (Kᵀb of a deconvolution, a norm of the data) but feed
/// values that do. `setup` computes them, as outputs named hoisted<i>; `rest`
/// computes p's outputs, reading each hoisted array as an input and each
/// hoisted scalar as a param of that name. A run of `rest` given setup's
/// results computes what a run of p computes, but for the rounding of the
/// hoisted values to float32 (the emulator computes in double within a
/// program). Only work costlier than reading its result is hoisted: a
/// reduction, a prox, a solve, an operator that reads neighbours (a
/// convolution; not a mask, a scaling or a sum of data); elementwise work on
/// data stays, as do values only outputs read. `setup` has no outputs, and
/// `rest` is p, when p has nothing to hoist.
struct HoistSplit {
  StepProgram setup, rest;
};
HoistSplit hoist_invariants(const StepProgram& p);

/// Readable, deterministic text of a program (names chosen at print time).
std::string print_step_program(const StepProgram& p);

}  // namespace proxc::internal
