/// \file
/// Building problems in C++ the way the .prox language writes them:
///
///     proxc::Problem problem;
///     proxc::Expr x = problem.variable(b.shape(), "x");
///     problem.minimize(proxc::sum_squares(proxc::conv(k, x) - b) +
///                      0.001 * proxc::group_norm1(proxc::grad(x), {2}) + proxc::nonneg(x));
///
/// Expressions are affine in the variables: linear operators applied to
/// variables, sums and differences, scalings, and constant offsets (an Array,
/// a number). Each function term is
///
///     alpha · f(beta · e − b) + <c, e> + gamma · ||e||² + d
///
/// with its keyword parameters set on the term: `norm1(grad(x)).alpha(2)`,
/// `sum_squares(x).b(noisy).gamma(0.1)`. Every mistake (shapes that do not
/// fit, a parameter out of range) is a UserError naming the operator or
/// function and the shapes, thrown where the expression is made. The exact
/// math of each operator and function is docs/semantics.md; the language is
/// docs/language.md.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "proxc/array.h"
#include "proxc/kinds.h"

namespace proxc {

namespace internal {
struct ExprNode;
struct Access;
}  // namespace internal

/// A node of the linear-operator DAG: a variable, a constant, or an operator
/// applied to expressions. A handle: copies share the (immutable) node.
class Expr {
 public:
  /// No expression (only assignable).
  Expr();
  /// A constant with the array's values; an array read by load_array prints
  /// as load("its path").
  Expr(const Array& constant);  // NOLINT(google-explicit-constructor): x - b reads as the math

  bool defined() const { return node_ != nullptr; }
  const Shape& shape() const;
  int rank() const;
  /// The name given to a variable or constant ("" when none; a constant of
  /// an Array read by load_array is named after the file's stem).
  const std::string& name() const;
  bool is_variable() const;
  bool is_constant() const;
  /// The operator's keyword ("variable", "constant", "grad", ...).
  std::string kind() const;

 private:
  friend struct internal::Access;
  std::shared_ptr<const internal::ExprNode> node_;
};

/// A variable (an unknown) of 1 to 4 dimensions. `name` names it in printed
/// problems and in the solution.
Expr variable(const Shape& shape, const std::string& name = "x");
/// A constant holding `data`, named `name` in printed problems.
Expr constant(const Array& data, const std::string& name = "");
/// A normalised Gaussian kernel of extents `size` (sum 1, origin at
/// (h//2, w//2)); prints as gaussian(...).
Expr gaussian(const Shape& size, double sigma);

// Arithmetic: sums and differences of expressions of one shape, or with a
// number as a constant offset; scalings by numbers.
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator-(const Expr& a);
Expr operator+(const Expr& a, double offset);
Expr operator+(double offset, const Expr& a);
Expr operator-(const Expr& a, double offset);
Expr operator-(double offset, const Expr& a);
Expr operator*(double s, const Expr& a);
Expr operator*(const Expr& a, double s);
Expr operator/(const Expr& a, double s);

// Linear operators (docs/language.md lists their shapes).

/// Forward differences along the first `dims` axes (-1: all), zero at the
/// last index; shape x.shape + (dims,).
Expr grad(const Expr& x, int64_t dims = -1);
/// Circular convolution of x with the kernel k over k's axes, origin
/// k[kh//2, kw//2]; x's shape.
Expr conv(const Expr& k, const Expr& x);
/// conv with a boundary ("circular", "zero" or "replicate": x is 0 outside,
/// or its border repeated) and ProxImaL's dims (the first dims axes are
/// convolved; a kernel with more axes holds one kernel per slice; -1: the
/// kernel's rank).
Expr conv(const Expr& k, const Expr& x, const std::string& boundary, int64_t dims = -1);
/// ProxImaL's uneven_subsample: output entry o is x at (indices[0][o],
/// indices[1][o], ...), 0 where that falls outside x; `indices` holds whole
/// numbers, shape (rank of x,) + the output's shape.
Expr uneven_subsample(const Expr& x, const Expr& indices);
/// ProxImaL's pxwise_matrixmult: a matrix per pixel, out[..., i] =
/// Σ_j matrices[..., i, j] x[..., j]; `matrices` a constant of shape
/// x.shape[:-1] + (N, M), M = x.shape[-1], N and M at most 64; the result
/// has shape x.shape[:-1] + (N,).
Expr pxwise_matrixmult(const Expr& matrices, const Expr& x);
/// w ⊙ x, w of x's shape.
Expr mul_elemwise(const Expr& w, const Expr& x);
/// x[::s0, ::s1, ...].
Expr subsample(const Expr& x, const std::vector<int64_t>& steps);
/// s · x.
Expr scale(double s, const Expr& x);
/// The operands flattened and concatenated: shape (Σ sizes,).
Expr vstack(const std::vector<Expr>& parts);
/// ProxImaL's hstack: the parts (all of one size n), flattened, as the columns
/// of an (n, parts.size()) array (built as transpose(reshape(vstack(parts)))).
Expr hstack(const std::vector<Expr>& parts);
/// The same elements in C order with another shape.
Expr reshape(const Expr& x, const Shape& shape);
/// Axes permuted (out.shape[i] = x.shape[axes[i]]); empty: reversed.
Expr transpose(const Expr& x, const std::vector<int64_t>& axes = {});
/// The window x[begin : begin + extent].
Expr crop(const Expr& x, const std::vector<int64_t>& begin, const Shape& extent);
/// A 3×3 colour matrix M applied per pixel on the last axis (extent 3).
Expr mul_color(const Expr& x, const Expr& matrix);
/// A named colour transform: "yuv" or "opp".
Expr mul_color(const Expr& x, const std::string& named_matrix);
/// Bilinear resampling through the 3×3 homography H: output pixel (i, j) samples x at
/// the row and column H·(i, j, 1), dehomogenised (ProxImaL's convention), 0 outside.
Expr warp(const Expr& x, const Expr& homography);
/// warp onto a target of target_shape = {h, w} pixels; a homography of shape
/// (3, 3, K) gives K warps, stacked on a new last axis (ProxImaL's warp).
Expr warp(const Expr& x, const Expr& homography, const std::vector<int64_t>& target_shape);
/// The black-box operator registered under `name` (proxc/black_box.h).
Expr black_box(const std::string& name, const Expr& x);

/// A parameter of a function term: a number, or a constant of the operand's
/// shape.
class Param {
 public:
  Param(double value);          // NOLINT(google-explicit-constructor)
  Param(const Array& values);   // NOLINT(google-explicit-constructor)
  Param(const Expr& constant);  // NOLINT(google-explicit-constructor)
  bool is_array() const { return array_.defined(); }
  double scalar() const { return scalar_; }
  const Expr& array() const { return array_; }

 private:
  double scalar_ = 0;
  Expr array_;
};

/// One function term, or a sum of them (what `+` of terms makes). The
/// parameter setters apply to a single term and check its rules at once
/// (alpha ≥ 0, gamma ≥ 0, beta ≠ 0, finite; b and c of the operand's shape).
class Term {
 public:
  Term();
  Term(const Term& other);
  Term(Term&& other) noexcept;
  Term& operator=(const Term& other);
  Term& operator=(Term&& other) noexcept;
  ~Term();

  Term& alpha(double v);
  Term& beta(double v);
  Term& b(const Param& v);
  Term& c(const Param& v);
  Term& gamma(double v);
  Term& d(double v);

  /// How many function terms the sum holds.
  size_t size() const;

  struct Impl;

 private:
  friend struct internal::Access;
  // The implementation; a moved-from handle (impl_ null) reads as a new one
  // and makes one when written.
  const Impl& impl() const;
  Impl& impl();
  std::unique_ptr<Impl> impl_;
};

/// The sum of the terms of a and b.
Term operator+(const Term& a, const Term& b);
/// Multiplies alpha of every term by s ≥ 0.
Term operator*(double s, const Term& t);
Term operator*(const Term& t, double s);

/// Σ v².
Term sum_squares(const Expr& e);
/// Σ |v|.
Term norm1(const Expr& e);
/// Σ over groups of sqrt(Σ over `axes` of v²): group_norm1(grad(x), {2}) is
/// isotropic total variation.
Term group_norm1(const Expr& e, const std::vector<int64_t>& axes);
/// The indicator of v ≥ 0.
Term nonneg(const Expr& e);
/// Σ (v − counts · log v) on v ≥ 0.
Term poisson_norm(const Expr& e, const Expr& counts);
/// Σ v (as a linear term; proxc honours alpha).
Term sum_entries(const Expr& e);
/// ProxImaL's weighted functions, each with its closed-form prox; `w` a
/// constant of the operand's shape (or a scalar constant). Σ |w·v|:
Term weighted_norm1(const Expr& e, const Expr& w);
/// Σ (w·v)².
Term weighted_sum_squares(const Expr& e, const Expr& w);
/// Σ over groups of |w|·sqrt(Σ over `axes` of v²), w the same within each group.
Term weighted_group_norm1(const Expr& e, const std::vector<int64_t>& axes, const Expr& w);
/// The indicator of w·v ≥ 0.
Term weighted_nonneg(const Expr& e, const Expr& w);
/// The indicator of v ≥ 0 where mask ≥ 0.5 and v = 0 elsewhere.
Term masked_nonneg(const Expr& e, const Expr& mask);
/// Σ over w ≠ 0 of w·v − counts·log(w·v), on v ≥ 0 there (w ≥ 0).
Term weighted_poisson_norm(const Expr& e, const Expr& counts, const Expr& w);
/// f = 0 (its prox is the identity): ProxImaL's zero_prox.
Term zero_prox(const Expr& e);
/// A prox function of your own (proxc/prox_fn.h), registered under `name`
/// before this call, with values for some of its declared parameters (the
/// others keep their defaults): `prox_fn("patch_NLM", x, {{"sigma_scale", 4}})`.
/// In the language it is called by its name, `patch_NLM(x, sigma_scale=4)`.
Term prox_fn(const std::string& name, const Expr& e, const std::map<std::string, double>& params = {});
/// The indicator of lower ≤ v ≤ upper (numbers, possibly infinite, or
/// constants of the operand's shape).
Term box(const Expr& e, const Param& lower = -std::numeric_limits<double>::infinity(),
         const Param& upper = std::numeric_limits<double>::infinity());

/// The value of `e` (its constant offsets included) at the variables'
/// values, one for each variable e reads: computed by the emulator in double
/// precision, returned in float32. ProxImaL's `LinOp.value`.
Array evaluate(const Expr& e, const std::vector<std::pair<Expr, Array>>& values);
/// The value of each function term of `terms` at the variables' values, in
/// double precision with ProxImaL's conventions (nonneg's indicator 0 down to
/// -1e-3, then +inf; see SolverSummary::objective). ProxImaL's `ProxFn.value`.
std::vector<double> evaluate(const Term& terms, const std::vector<std::pair<Expr, Array>>& values);

/// K x: the linear part of `e` (its constant offsets left out) at the
/// variables' values, one for each variable e reads; in double precision on
/// the emulator, returned in float32. ProxImaL's `LinOp.forward` and
/// `CompGraph.forward`.
Array forward(const Expr& e, const std::vector<std::pair<Expr, Array>>& values);
/// Kᵀ y for the linear part of `e` (y of e's shape): the part of each of
/// `variables` (zeros for one that e does not read). ProxImaL's
/// `LinOp.adjoint` and `CompGraph.adjoint`.
std::vector<Array> adjoint(const Expr& e, const Array& y, const std::vector<Expr>& variables);
/// ||K|| of the linear part of `e`: ProxImaL's upper bound from the
/// operators (NormKind::Bound), or estimated by Lanczos iteration on KᵀK
/// until the estimate changes by less than `tol` relative, at most 100
/// steps (NormKind::Estimate: a lower bound, to rounding). ProxImaL's
/// `est_CompGraph_norm` (try_fast_norm: the bound).
double operator_norm(const Expr& e, NormKind kind = NormKind::Estimate, double tol = 1e-3);
/// prox_F(rho, v) = argmin_u F(u) + (rho/2)||u − v||² for the one function
/// term F with its alpha, beta, b, c, gamma and d, u and v of the shape of
/// F's operand (which is not read). rho > 0. ProxImaL's `ProxFn.prox`.
Array prox(const Term& f, double rho, const Array& v);
/// F(v) for the one function term F at v (of its operand's shape), with
/// evaluate's conventions. ProxImaL's `ProxFn.eval`.
double evaluate_at(const Term& f, const Array& v);

/// Options of the printed forms.
struct PrintOptions {
  /// Data paths are written relative to this folder (where the printed file
  /// will be); "" keeps them as they are.
  std::string base_dir;
  /// JSON only: store constants' values inline instead of by path and hash.
  bool inline_constants = false;
};

/// `minimize Σ terms` over the variables the terms reach. A value type:
/// copies share the immutable expression nodes.
class Problem {
 public:
  Problem();
  Problem(const Problem& other);
  Problem(Problem&& other) noexcept;
  Problem& operator=(const Problem& other);
  Problem& operator=(Problem&& other) noexcept;
  ~Problem();

  /// A new variable (the same as proxc::variable); it belongs to the
  /// problem once a term uses it.
  Expr variable(const Shape& shape, const std::string& name = "x");
  /// Sets the objective (replacing any earlier one).
  void minimize(const Term& objective);
  /// The variables, in order of first appearance.
  std::vector<Expr> variables() const;
  /// The name the printed problem gives a variable or bound constant:
  /// its own name, made unique ("x", "x_1") when two share one.
  std::string name_of(const Expr& e) const;
  /// How many function terms the objective has.
  size_t num_terms() const;
  /// The rewriting passes already applied, in order (a JSON dump keeps them).
  std::vector<std::string> passes_run() const;

  /// The solution of `variable` (user units) from the last solve of this
  /// problem; a UserError before a solve or for an expression that is not
  /// one of its variables.
  Array value(const Expr& variable) const;
  /// True when a solve has set the variable's value.
  bool has_value(const Expr& variable) const;

  /// Replaces the data of the constant the printed problem names `name`
  /// (e.g. "b" for b = load("b.npy")) with `data` of the same shape; the
  /// compiled pipelines are reused (data never recompiles). A UserError when
  /// no constant has the name or the shapes differ.
  void set_constant(const std::string& name, const Array& data);
  /// The same with data read from a file (the printed problem then loads it).
  void set_constant(const std::string& name, const std::string& path);
  /// The names of the bound constants, as the printed problem gives them
  /// (b, k, ... of `b = load("b.npy")`), in printing order.
  std::vector<std::string> constant_names() const;
  /// The values of the constant the printed problem names `name`; a
  /// UserError when there is none.
  Array constant(const std::string& name) const;
  /// The files the problem's constants were read from (load("...") and
  /// set_constant's paths, as resolved when read), each once, in printing
  /// order. The proxc command refuses an output path among them.
  std::vector<std::string> data_files() const;

  /// The problem printed in `format` (text parses back to an equal problem,
  /// JSON loads back and continues where the passes stopped).
  std::string print(ProblemFormat format = ProblemFormat::Text, const PrintOptions& options = {}) const;

  struct Impl;

 private:
  friend struct internal::Access;
  // The implementation; a moved-from handle (impl_ null) reads as a new one
  // and makes one when written.
  const Impl& impl() const;
  Impl& impl();
  std::unique_ptr<Impl> impl_;
};

/// Reads a problem from a .prox file or a JSON dump (by the extension
/// ".json" or content starting with '{'). Data paths resolve against the
/// file's folder; errors name file:line:col.
Problem load_problem(const std::string& path);
/// Parses .prox text; `file` names it in messages, data paths resolve
/// against `base_dir`.
Problem parse_problem(const std::string& text, const std::string& file = "<string>",
                      const std::string& base_dir = ".");
/// Parses a JSON dump.
Problem parse_problem_json(const std::string& json, const std::string& file = "<string>",
                           const std::string& base_dir = ".");

/// Whether the .prox language reserves `name` (a keyword, a built-in
/// function or operator, a term role): a black box or prox function of the
/// user's registered under it could not be called from a .prox file.
bool is_reserved_name(const std::string& name);

}  // namespace proxc
