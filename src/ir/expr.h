/// \file
/// The linear-operator DAG of the problem IR.
///
/// General notes on the semantics of the nodes (ProxImaL's conventions; the
/// exact math is in docs/semantics.md, which follows ../shared/SEMANTICS.md):
///
/// - Every node has a shape in NumPy order (rows, cols[, ...]) inferred and
///   checked when it is made; a mismatch is a UserError naming the operator
///   and both shapes.
/// - Nodes are immutable and shared behind `Expr` handles (shared_ptr to
///   const). A node's identity is the node: names are chosen by the printer
///   from the `name_hint`s.
/// - An expression is affine in its variables: constants may appear as
///   offsets in `add`/`sub` (`x - b`); they also appear as the parameter
///   operands of operators (the kernel of conv, the weights of mul_elemwise).
///
/// Node kinds:
///   variable(shape)             an unknown, 1 to 4 dimensions.
///   constant                    data: a loaded file, a generated Gaussian kernel,
///                               inline values, or a scalar (rank 0, broadcast in add/sub).
///   grad(x, dims)               forward differences along the first `dims` axes,
///                               zero at the last index; shape x.shape + (dims,).
///   conv(k, x)                  circular convolution over the first k.ndim axes of x,
///                               kernel origin k[kh//2, kw//2]; shape of x.
///   mul_elemwise(w, x)          w ⊙ x; w has x's shape.
///   subsample(x, steps)         x[::s0, ::s1, ...]; extent (n - 1)//s + 1.
///   scale(s, x)                 s·x for a scalar s.
///   add(a, b), sub(a, b), neg(a) sums, differences, negation.
///   vstack(a, b, ...)           the flattened operands concatenated: shape (Σ sizes,).
///   reshape(x, shape)           same elements in C order, another shape.
///   transpose(x, axes)          axes permuted: out.shape[i] = x.shape[axes[i]].
///   crop(x, begin, extent)      the window x[begin : begin + extent]; adjoint zero-pads.
///   mul_color(x, M)             per-pixel 3×3 colour matrix on the last axis (extent 3);
///                               M a (3, 3) constant or a named matrix ("yuv", "opp").
///   pxwise_matrixmult(A, x)     a matrix per pixel: out[..., i] = Σ_j A[..., i, j] x[..., j];
///                               A of shape x.shape[:-1] + (N, M), M = x.shape[-1]; shape
///                               x.shape[:-1] + (N,).
///   warp(x, H)                  bilinear resampling through the 3×3 homography H:
///                               out[i, j] = x at the (row, col) H·(i, j, 1) dehomogenised, 0 outside.
///   black_box(name, x)          a user operator registered under `name`
///                               (include/proxc/black_box.h): its own forward and
///                               adjoint callbacks; shape from its output_shape.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "proxc/black_box.h"
#include "support/array.h"

namespace proxc::internal {

/// The one table of linear-expression node kinds. Each row is
///   X(EnumName, keyword, syntax, spelling, latex, slots...)
/// - syntax: how the text form writes the node (OperatorSyntax in
///   ir/operators.h): Leaf (variable, constant: written by their own rules),
///   Call (`keyword(slots...)`), Infix (`a + b`), Prefix (`-a`), Scaling
///   (`s * a`);
/// - spelling: the usage shown in a Call's arity error, or the symbol of an
///   Infix or Prefix node;
/// - latex: the node's LaTeX form, `#i` the text of slot i and `@i` the same
///   in parentheses when it is a sum (ir/latex.cpp);
/// - slots: the arguments in the order the text writes them, each
///   PROXC_SLOT(role, what, key): its role (SlotRole in ir/operators.h), how
///   messages name it, and its keyword and JSON field.
/// The enum, the parser, the printer, JSON, LaTeX, dot and with_args all read
/// this table (ir/operators.h); a new operator is one row here plus its make
/// function, its forward and its adjoint.
#define PROXC_FOR_EACH_EXPR_KIND(X)                                                                        \
  X(Variable, "variable", Leaf, "", "", )                                                                  \
  X(Constant, "constant", Leaf, "", "", )                                                                  \
  X(Grad, "grad", Call, "grad(x) or grad(x, dims=2)", "\\nabla @0", PROXC_SLOT(Operand, "operand", ""),    \
    PROXC_SLOT(Dims, "dims", "dims"),                                                                      \
    PROXC_SLOT(Option, "the boundary: \"replicate\" (the default), \"zero\" or \"circular\"", "boundary")) \
  X(Conv, "conv", Call, "conv(kernel, x) or conv(kernel, x, boundary=\"zero\")", "@0 \\ast @1",            \
    PROXC_SLOT(Constant, "kernel (first argument)", ""), PROXC_SLOT(Operand, "operand", ""),               \
    PROXC_SLOT(Dims, "dims", "dims"),                                                                      \
    PROXC_SLOT(Option, "the boundary: \"circular\" (the default), \"zero\" or \"replicate\"", "boundary")) \
  X(MulElemwise, "mul_elemwise", Call, "mul_elemwise(w, x)", "@0 \\odot @1",                               \
    PROXC_SLOT(Constant, "weight (first argument)", ""), PROXC_SLOT(Operand, "operand", ""))               \
  X(Subsample, "subsample", Call, "subsample(x, [s0, s1])", "S_{#1}\\,@0",                                 \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(Ints, "the steps", "steps"))                            \
  X(UnevenSubsample, "uneven_subsample", Call, "uneven_subsample(x, indices)", "S_{#1}\\,@0",              \
    PROXC_SLOT(Operand, "operand", ""),                                                                    \
    PROXC_SLOT(Constant, "indices (an integer array of shape (rank of x, ...output shape))", ""))          \
  X(Scale, "scale", Scaling, " * ", "#0\\, @1", PROXC_SLOT(Factor, "factor", "factor"),                    \
    PROXC_SLOT(Operand, "operand", ""))                                                                    \
  X(Add, "add", Infix, " + ", "#0 + #1", PROXC_SLOT(Operand, "operand", ""),                               \
    PROXC_SLOT(Operand, "operand", ""))                                                                    \
  X(Sub, "sub", Infix, " - ", "#0 - @1", PROXC_SLOT(Operand, "operand", ""),                               \
    PROXC_SLOT(Operand, "operand", ""))                                                                    \
  X(Neg, "neg", Prefix, "-", "-@0", PROXC_SLOT(Operand, "operand", ""))                                    \
  X(VStack, "vstack", Call, "vstack([a, b])", "#0", PROXC_SLOT(Operands, "operand", ""))                   \
  X(Reshape, "reshape", Call, "reshape(x, [h, w])", "\\mathrm{reshape}_{#1}(#0)",                          \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(Shape, "the shape", "shape"))                           \
  X(Transpose, "transpose", Call, "transpose(x) or transpose(x, [1, 0])", "\\mathrm{transpose}_{#1}(#0)",  \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(OptionalInts, "the axes", "axes"))                      \
  X(Crop, "crop", Call, "crop(x, [top, left], [h, w])", "\\mathrm{crop}(#0)",                              \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(Ints, "the begin offsets", "begin"),                    \
    PROXC_SLOT(Ints, "the extent", "extent"))                                                              \
  X(MulColor, "mul_color", Call, "mul_color(x, M) or mul_color(x, \"yuv\")", "@1\\, @0",                   \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(ConstantOrName, "colour matrix", "matrix"))             \
  X(PxwiseMatrixmult, "pxwise_matrixmult", Call, "pxwise_matrixmult(A, x)", "@0\\, @1",                    \
    PROXC_SLOT(Constant, "pixel matrices (first argument)", ""), PROXC_SLOT(Operand, "operand", ""))       \
  X(Warp, "warp", Call, "warp(x, H) or warp(x, H, [h, w])", "\\mathcal{W}_{#1}(#0)",                       \
    PROXC_SLOT(Operand, "operand", ""), PROXC_SLOT(Constant, "homography", ""),                            \
    PROXC_SLOT(OptionalInts, "the target shape [h, w]", "target_shape"))                                   \
  X(BlackBox, "black_box", Call, "black_box(\"name\", x)", "#0(#1)",                                       \
    PROXC_SLOT(Name, "the first argument is the operator's registered name, a string in double quotes",    \
               "operator"),                                                                                \
    PROXC_SLOT(Operand, "operand", ""))

enum class ExprKind {
#define PROXC_X(name, ...) name,
  PROXC_FOR_EACH_EXPR_KIND(PROXC_X)
#undef PROXC_X
};

/// The keyword of a kind ("mul_elemwise").
const char* to_string(ExprKind kind);
/// The kind of a keyword; false when there is none.
bool expr_kind_from_string(const std::string& s, ExprKind* kind);

/// Where a constant's data came from; decides how it prints.
struct ExprNode;

struct ConstantSource {
  /// Derived: the value of a constant expression (an operator applied to
  /// constants: `-b`, `2 * b`, `conv(k, b)`, `b - c`), folded into one leaf
  /// by emulate/fold.h; `expr` keeps the expression, which printers write.
  enum class Type { File, Gaussian, Inline, Scalar, Derived };
  Type type = Type::Inline;
  /// File: the path as written by the user (relative to the problem's folder)
  /// and the resolved path used to read it.
  std::string path;
  std::string resolved_path;
  /// File: content hash of the file's bytes (support/file_util.h).
  std::string hash;
  /// File: written with its hash (`load("../b.npy", hash="...")`, as dumps
  /// pin their data): the reference may lie outside the problem's folder,
  /// so every printer keeps the pin, and the reprint loads where it did.
  bool pinned = false;
  /// Gaussian: extents and standard deviation (in pixels).
  Shape gaussian_size;
  double gaussian_sigma = 0;
  /// Scalar: the value as written (the array holds it rounded to float).
  double scalar = 0;
  /// Derived: the expression whose value the array holds (its operands are
  /// constant leaves; no variable).
  std::shared_ptr<const ExprNode> expr;
};

/// The data of a constant node: its values and their origin.
struct ConstantData {
  Array array;
  ConstantSource source;
  /// Derived: the values in double before rounding to float32, which the
  /// emulator (the ground truth, in double) reads instead of `array`;
  /// empty where float32 holds every value exactly (emulate/fold.cpp).
  DoubleData exact;
};

/// A handle to an immutable expression node.
using Expr = std::shared_ptr<const ExprNode>;

/// One node of the linear-operator DAG. Build nodes only through the make_*
/// functions below, which check and infer shapes.
struct ExprNode {
  ExprKind kind;
  Shape shape;
  /// Operands, in the order the text form writes them (conv(k, x): {k, x}).
  std::vector<Expr> args;
  /// Integer attributes: grad {dims}; subsample steps; reshape shape;
  /// transpose axes; crop begin followed by extent.
  std::vector<int64_t> ints;
  /// Scalar attribute: the factor of scale.
  double scalar = 0;
  /// String attribute: the named matrix of mul_color ("" when M is an operand);
  /// the registered name of a black box.
  std::string str;
  /// Constant nodes only.
  std::shared_ptr<const ConstantData> constant;
  /// 1 for a leaf, else 1 + the deepest operand (at most kMaxExprDepth).
  int depth = 1;
  /// True when a variable is reachable from this node (set by the make functions).
  bool has_variable = false;
  /// The name the user gave (a hint for the printer, not an identity).
  std::string name_hint;

  int rank() const { return static_cast<int>(shape.size()); }
  bool is_constant() const { return kind == ExprKind::Constant; }
  bool is_variable() const { return kind == ExprKind::Variable; }
  /// The operands that are linear inputs (not kernels, weights or matrices).
  std::vector<Expr> linear_args() const;
};

/// Deepest expression accepted. Printers and destructors recurse over the
/// DAG; this bound keeps them far from the stack's limit on any input.
constexpr int kMaxExprDepth = 2000;
/// Levels the rewriting passes may add to a term's operand (absorb, merge and
/// scale wrap it in a few): a problem as written nests at most
/// kMaxExprDepth - kPassHeadroom deep, so that the passes never meet the limit
/// where no source location is known.
constexpr int kPassHeadroom = 100;

// ---- Constructors (the checking make functions) ---------------------------------------------------

Expr make_variable(Shape shape, std::string name_hint = "x");
Expr make_constant(std::shared_ptr<const ConstantData> data, std::string name_hint = "");
/// A rank-0 constant, usable as an offset in add/sub.
Expr make_scalar_constant(double v);
/// A normalised 2-D Gaussian kernel of the given extents (sum 1, centred on
/// index (h//2, w//2)).
Expr make_gaussian(Shape size, double sigma);
/// `dims` < 0 means x's rank.
/// grad(x, dims, boundary): forward differences x[i+1] − x[i] along the
/// first dims axes, x past its last entry being its last entry ("", the
/// default, ProxImaL's: the difference there is 0; "replicate" is stored as
/// ""), 0 ("zero": −x[n−1] there) or its first entry ("circular").
Expr make_grad(Expr x, int64_t dims = -1, std::string boundary = "");
/// conv(kernel, x, boundary): `boundary` is "" (circular, the default),
/// "zero" (x is 0 outside) or "replicate" (x repeats its border, ProxImaL's
/// conv_nofft); "circular" is stored as "". Only the circular one has a
/// circulant Gram matrix (FFT solves); the others are applied directly.
/// `dims` (ProxImaL's conv dims=): the convolution runs over the first dims
/// axes; a kernel with more axes than dims holds one kernel per slice along
/// its further axes, which equal x's there (per-channel convolution). -1:
/// the kernel's rank (one kernel, applied to every slice along x's further axes).
Expr make_conv(Expr kernel, Expr x, std::string boundary = "", int64_t dims = -1);
/// Whether n is one circulant operator: a circular conv with one kernel
/// (no boundary option, no per-slice kernels), which FFTs apply and solve.
bool is_circular_conv(const ExprNode& n);
Expr make_mul_elemwise(Expr weight, Expr x);
Expr make_subsample(Expr x, std::vector<int64_t> steps);
/// ProxImaL's uneven_subsample: y[o] = x[indices[0][o], indices[1][o], ...],
/// 0 where an index falls outside x; `indices` is a constant of integers of
/// shape (rank of x,) + the output's shape. Adjoint: the exact transpose (a
/// position read twice gathers both).
Expr make_uneven_subsample(Expr x, Expr indices);
Expr make_scale(double s, Expr x);
Expr make_add(Expr a, Expr b);
Expr make_sub(Expr a, Expr b);
Expr make_neg(Expr a);
Expr make_vstack(std::vector<Expr> parts);
Expr make_reshape(Expr x, Shape shape);
/// ProxImaL's hstack: the parts (all of one size n), flattened, as the
/// columns of an (n, parts) array. Built from vstack, reshape and transpose
/// (`transpose(reshape(vstack(parts), [parts, n]))`), which is how it prints.
Expr make_hstack(const std::vector<Expr>& parts);
Expr make_transpose(Expr x, std::vector<int64_t> axes);
Expr make_crop(Expr x, std::vector<int64_t> begin, Shape extent);
/// `matrix` is a (3, 3) constant; or pass nullptr and a `named` matrix.
Expr make_mul_color(Expr x, Expr matrix, const std::string& named = "");
/// warp(x, H, target): bilinear sampling of x (H, W) or (H, W, C) at
/// the (row, col) H·(row, col, 1) for each pixel of a target of `target` = {h, w} pixels
/// (empty: x's); H (3, 3), or (3, 3, K) for K homographies, whose warps
/// stack on a new last axis (ProxImaL's warp).
Expr make_warp(Expr x, Expr homography, std::vector<int64_t> target = {});
/// ProxImaL's pxwise_matrixmult: out[..., i] = Σ_j A[..., i, j] x[..., j],
/// a constant A of shape x.shape[:-1] + (N, M) with M = x.shape[-1] (N and M
/// at most kMaxPixelMatrix); shape x.shape[:-1] + (N,). Adjoint: Aᵀ per pixel.
Expr make_pxwise_matrixmult(Expr matrices, Expr x);
/// The largest N or M of pxwise_matrixmult's matrices (their sums are unrolled).
constexpr int64_t kMaxPixelMatrix = 64;
/// The black box registered under `name` applied to x; a UserError when no
/// operator holds the name or it rejects x's shape.
Expr make_black_box(const std::string& name, Expr x);
/// The operator registered under `name` (include/proxc/black_box.h); a
/// UserError saying how to register it when there is none.
const ::proxc_black_box& registered_black_box(const std::string& name);

/// The 3×3 matrix of a named colour transform ("yuv", "opp"), row-major;
/// false for an unknown name.
bool named_color_matrix(const std::string& name, double out[9]);

/// The node `e` rebuilt over new operands (same kind and attributes), through
/// the checking make functions; returns `e` itself when no operand changed.
Expr with_args(const Expr& e, std::vector<Expr> args);

/// The positions in e->args of its linear operands (Operand and Operands
/// slots), in order; linear_args() are the args at these positions.
std::vector<size_t> linear_positions(const ExprNode& e);

/// `e` with every derived constant (ConstantSource::Type::Derived) replaced by
/// the expression it was folded from, recursively: what printers write.
Expr unfold_constants(const Expr& e);

/// Copy of `e` with another name hint (the node is otherwise the same value).
Expr with_name_hint(const Expr& e, const std::string& hint);

/// True when `e` depends on at least one variable.
bool depends_on_variable(const Expr& e);

}  // namespace proxc::internal
