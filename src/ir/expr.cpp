#include "ir/expr.h"

#include <algorithm>
#include <cmath>

#include "proxc/black_box.h"
#include "support/error.h"

namespace proxc::internal {

namespace {
const char* const kKindNames[] = {
#define PROXC_X(name, keyword, ...) keyword,
    PROXC_FOR_EACH_EXPR_KIND(PROXC_X)
#undef PROXC_X
};

std::shared_ptr<ExprNode> node(ExprKind kind, Shape shape, std::vector<Expr> args) {
  for (const Expr& a : args) internal_assert(a) << to_string(kind) << ": null operand";
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->shape = std::move(shape);
  n->args = std::move(args);
  n->has_variable = kind == ExprKind::Variable;
  for (const Expr& a : n->args) {
    n->has_variable = n->has_variable || a->has_variable;
    n->depth = std::max(n->depth, a->depth + 1);
  }
  user_assert(n->depth <= kMaxExprDepth) << to_string(kind) << ": the expression nests " << n->depth
                                         << " operators deep; the limit is " << kMaxExprDepth;
  return n;
}

// An operand may be an expression of variables or of constants alone (a
// constant expression, which emulate/fold.h folds into a derived constant).
void check_operand(const Expr& x, const char* op) { internal_assert(x) << op << ": null operand"; }

// A parameter slot takes a constant: a leaf, or a constant expression, which
// builders fold into one (emulate/fold.h) and printers unfold.
void check_constant_param(const Expr& c, const char* op, const char* what) {
  internal_assert(c) << op << ": null " << what;
  user_assert(!c->has_variable) << op << ": the " << what
                                << " must be a constant (load(...), gaussian(...)), not an expression of "
                                   "variables";
}

std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
}  // namespace

const char* to_string(ExprKind kind) { return kKindNames[static_cast<int>(kind)]; }

bool expr_kind_from_string(const std::string& s, ExprKind* kind) {
  for (size_t i = 0; i < sizeof(kKindNames) / sizeof(kKindNames[0]); ++i) {
    if (s == kKindNames[i]) {
      *kind = static_cast<ExprKind>(i);
      return true;
    }
  }
  return false;
}

Expr make_variable(Shape shape, std::string name_hint) {
  user_assert(!shape.empty() && shape.size() <= 4)
      << "variable: a variable has 1 to 4 dimensions, got " << shape.size() << " (shape "
      << shape_to_string(shape) << ")";
  for (int64_t e : shape) {
    user_assert(e > 0) << "variable: extents must be positive, got shape " << shape_to_string(shape);
  }
  check_allocation(shape, "variable '" + name_hint + "'");
  auto n = node(ExprKind::Variable, std::move(shape), {});
  n->name_hint = std::move(name_hint);
  return n;
}

Expr make_constant(std::shared_ptr<const ConstantData> data, std::string name_hint) {
  internal_assert(data) << "make_constant: null data";
  internal_assert(data->array.size() == num_elements(data->array.shape)) << "constant data size";
  auto n = node(ExprKind::Constant, data->array.shape, {});
  n->constant = std::move(data);
  n->name_hint = std::move(name_hint);
  return n;
}

Expr make_scalar_constant(double v) {
  user_assert(fits_float32(v))
      << "a scalar constant must be a finite float32 value, got " << v;
  auto data = std::make_shared<ConstantData>();
  data->array = Array(Shape{}, {static_cast<float>(v)});
  data->source.type = ConstantSource::Type::Scalar;
  data->source.scalar = v;
  return make_constant(std::move(data));
}

Expr make_gaussian(Shape size, double sigma) {
  if (size.size() == 1) size.push_back(size[0]);
  user_assert(size.size() == 2) << "gaussian: the size is one extent or two, got "
                                << ints_to_string(size);
  for (int64_t e : size) {
    user_assert(e > 0 && e <= 4096) << "gaussian: extents must be in 1..4096, got "
                                    << shape_to_string(size);
  }
  user_assert(std::isfinite(sigma) && sigma > 0) << "gaussian: sigma must be positive, got " << sigma;
  auto data = std::make_shared<ConstantData>();
  data->source.type = ConstantSource::Type::Gaussian;
  data->source.gaussian_size = size;
  data->source.gaussian_sigma = sigma;
  Array a(size);
  const int64_t h = size[0], w = size[1];
  double sum = 0;
  std::vector<double> vals(static_cast<size_t>(h * w));
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      double di = static_cast<double>(i - h / 2), dj = static_cast<double>(j - w / 2);
      // The centre tap is exp(0) = 1 even when 2σ² underflows to 0 (σ = 1e-300:
      // the limit, a unit impulse); σ² overflowing to inf gives the box.
      const double r2 = di * di + dj * dj;
      double v = r2 == 0 ? 1.0 : std::exp(-r2 / (2 * sigma * sigma));
      vals[static_cast<size_t>(i * w + j)] = v;
      sum += v;
    }
  }
  for (size_t k = 0; k < vals.size(); ++k) {
    a.data[k] = static_cast<float>(vals[k] / sum);
    user_assert(std::isfinite(a.data[k])) << "gaussian: sigma " << sigma << " gives a non-finite tap";
  }
  data->array = std::move(a);
  return make_constant(std::move(data));
}

Expr make_grad(Expr x, int64_t dims, std::string boundary) {
  if (boundary == "replicate") boundary.clear();
  user_assert(boundary.empty() || boundary == "zero" || boundary == "circular")
      << "grad: boundary must be \"replicate\", \"zero\" or \"circular\", got \"" << boundary << "\"";
  check_operand(x, "grad");
  if (dims < 0) dims = x->rank();
  user_assert(dims >= 1 && dims <= x->rank())
      << "grad: dims must be between 1 and the operand's rank " << x->rank() << ", got " << dims
      << " (operand shape " << shape_to_string(x->shape) << ")";
  Shape out = x->shape;
  out.push_back(dims);
  user_assert(out.size() <= 5) << "grad: output would have " << out.size() << " dimensions";
  auto n = node(ExprKind::Grad, out, {x});
  n->ints = {dims};
  n->str = boundary;
  return n;
}

bool is_circular_conv(const ExprNode& n) {
  return n.kind == ExprKind::Conv && n.str.empty() && n.ints.size() == 1 && n.ints[0] == n.args[0]->rank();
}

Expr make_conv(Expr kernel, Expr x, std::string boundary, int64_t dims) {
  if (boundary == "circular") boundary.clear();
  user_assert(boundary.empty() || boundary == "zero" || boundary == "replicate")
      << "conv: boundary must be \"circular\", \"zero\" or \"replicate\", got \"" << boundary << "\"";
  check_constant_param(kernel, "conv", "kernel (first argument)");
  check_operand(x, "conv");
  user_assert(kernel->rank() >= 1 && kernel->rank() <= x->rank())
      << "conv: kernel shape " << shape_to_string(kernel->shape) << " does not fit operand shape "
      << shape_to_string(x->shape) << " (the kernel needs 1 to " << x->rank() << " dimensions)";
  for (int i = 0; i < kernel->rank(); ++i) {
    user_assert(kernel->shape[i] <= x->shape[i])
        << "conv: kernel shape " << shape_to_string(kernel->shape) << " is larger than operand shape "
        << shape_to_string(x->shape) << " along axis " << i;
  }
  if (dims < 0) dims = kernel->rank();
  user_assert(dims >= 1 && dims <= kernel->rank())
      << "conv: dims must be from 1 to the kernel's rank " << kernel->rank() << " (kernel shape "
      << shape_to_string(kernel->shape) << "), got " << dims;
  for (int i = static_cast<int>(dims); i < kernel->rank(); ++i) {
    user_assert(kernel->shape[i] == x->shape[i])
        << "conv: with dims=" << dims << " the kernel holds one kernel per slice along axis " << i
        << ", so its extent there must be the operand's: kernel shape " << shape_to_string(kernel->shape)
        << ", operand shape " << shape_to_string(x->shape);
  }
  auto n = node(ExprKind::Conv, x->shape, {kernel, x});
  n->str = boundary;
  n->ints = {dims};
  return n;
}

Expr make_mul_elemwise(Expr weight, Expr x) {
  check_constant_param(weight, "mul_elemwise", "weight (first argument)");
  check_operand(x, "mul_elemwise");
  user_assert(weight->shape == x->shape)
      << "mul_elemwise: weight shape " << shape_to_string(weight->shape)
      << " does not match operand shape " << shape_to_string(x->shape);
  return node(ExprKind::MulElemwise, x->shape, {weight, x});
}

Expr make_uneven_subsample(Expr x, Expr indices) {
  check_operand(x, "uneven_subsample");
  check_constant_param(indices, "uneven_subsample", "indices (second argument)");
  const Shape& is = indices->shape;
  user_assert(is.size() >= 2 && is[0] == x->rank())
      << "uneven_subsample: indices shape " << shape_to_string(is) << " must be (" << x->rank()
      << ", ...the output's shape) for operand shape " << shape_to_string(x->shape);
  user_assert(is.size() - 1 <= 5) << "uneven_subsample: the output would have " << is.size() - 1 << " dimensions";
  for (float v : indices->constant->array.data) {
    user_assert(v == std::floor(v) && std::fabs(v) < 16777216.0f)
        << "uneven_subsample: indices must be whole numbers (below 2^24 in magnitude), found " << v;
  }
  return node(ExprKind::UnevenSubsample, Shape(is.begin() + 1, is.end()), {x, indices});
}

Expr make_subsample(Expr x, std::vector<int64_t> steps) {
  check_operand(x, "subsample");
  user_assert(static_cast<int>(steps.size()) == x->rank())
      << "subsample: needs one step per axis: steps " << ints_to_string(steps) << " for operand shape "
      << shape_to_string(x->shape);
  Shape out;
  for (size_t i = 0; i < steps.size(); ++i) {
    user_assert(steps[i] >= 1) << "subsample: steps must be positive, got " << ints_to_string(steps);
    out.push_back((x->shape[i] - 1) / steps[i] + 1);
  }
  auto n = node(ExprKind::Subsample, out, {x});
  n->ints = std::move(steps);
  return n;
}

Expr make_scale(double s, Expr x) {
  check_operand(x, "scale");
  user_assert(std::isfinite(s)) << "scale: the factor must be finite, got " << s;
  auto n = node(ExprKind::Scale, x->shape, {x});
  n->scalar = s;
  return n;
}

namespace {
Expr make_binary(ExprKind kind, const char* sym, Expr a, Expr b) {
  internal_assert(a && b) << "null operand of " << sym;
  Shape out;
  if (a->shape == b->shape) {
    out = a->shape;
  } else if (!a->has_variable && a->rank() == 0) {
    out = b->shape;
  } else if (!b->has_variable && b->rank() == 0) {
    out = a->shape;
  } else {
    user_error << "'" << sym << "': shapes " << shape_to_string(a->shape) << " and "
               << shape_to_string(b->shape) << " do not match";
  }
  return node(kind, out, {std::move(a), std::move(b)});
}
}  // namespace

Expr make_add(Expr a, Expr b) { return make_binary(ExprKind::Add, "+", std::move(a), std::move(b)); }
Expr make_sub(Expr a, Expr b) { return make_binary(ExprKind::Sub, "-", std::move(a), std::move(b)); }

Expr make_neg(Expr a) {
  check_operand(a, "negation");
  return node(ExprKind::Neg, a->shape, {a});
}

Expr make_vstack(std::vector<Expr> parts) {
  user_assert(!parts.empty()) << "vstack: needs at least one operand";
  int64_t total = 0;
  for (const Expr& p : parts) {
    check_operand(p, "vstack");
    total += num_elements(p->shape);
  }
  return node(ExprKind::VStack, Shape{total}, std::move(parts));
}

Expr make_hstack(const std::vector<Expr>& parts) {
  user_assert(!parts.empty()) << "hstack: needs at least one operand";
  const int64_t n = num_elements(parts[0]->shape);
  for (const Expr& p : parts) {
    internal_assert(p) << "hstack: null operand";
    user_assert(num_elements(p->shape) == n)
        << "hstack: every operand has the size of the first, " << n << " (shape " << shape_to_string(parts[0]->shape)
        << "); one has shape " << shape_to_string(p->shape);
  }
  const int64_t k = static_cast<int64_t>(parts.size());
  return make_transpose(make_reshape(make_vstack(parts), Shape{k, n}), {1, 0});
}

Expr make_reshape(Expr x, Shape shape) {
  check_operand(x, "reshape");
  user_assert(!shape.empty() && shape.size() <= 5)
      << "reshape: the new shape needs 1 to 5 dimensions, got " << shape_to_string(shape);
  for (int64_t e : shape) {
    user_assert(e > 0) << "reshape: extents must be positive, got " << shape_to_string(shape);
  }
  user_assert(num_elements(shape) == num_elements(x->shape))
      << "reshape: operand shape " << shape_to_string(x->shape) << " has " << num_elements(x->shape)
      << " elements, new shape " << shape_to_string(shape) << " has " << num_elements(shape);
  auto n = node(ExprKind::Reshape, shape, {x});
  n->ints = std::move(shape);
  return n;
}

Expr make_transpose(Expr x, std::vector<int64_t> axes) {
  check_operand(x, "transpose");
  if (axes.empty()) {
    for (int i = x->rank() - 1; i >= 0; --i) axes.push_back(i);
  }
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  bool perm = static_cast<int>(axes.size()) == x->rank();
  for (size_t i = 0; perm && i < sorted.size(); ++i) perm = sorted[i] == static_cast<int64_t>(i);
  user_assert(perm) << "transpose: axes " << ints_to_string(axes) << " are not a permutation of the "
                    << x->rank() << " axes of operand shape " << shape_to_string(x->shape);
  Shape out;
  for (int64_t a : axes) out.push_back(x->shape[static_cast<size_t>(a)]);
  auto n = node(ExprKind::Transpose, out, {x});
  n->ints = std::move(axes);
  return n;
}

Expr make_crop(Expr x, std::vector<int64_t> begin, Shape extent) {
  check_operand(x, "crop");
  user_assert(static_cast<int>(begin.size()) == x->rank() && static_cast<int>(extent.size()) == x->rank())
      << "crop: needs a begin and an extent per axis: begin " << ints_to_string(begin) << ", extent "
      << ints_to_string(extent) << " for operand shape " << shape_to_string(x->shape);
  for (int i = 0; i < x->rank(); ++i) {
    user_assert(begin[i] >= 0 && extent[i] >= 1 && begin[i] + extent[i] <= x->shape[i])
        << "crop: window begin " << ints_to_string(begin) << ", extent " << ints_to_string(extent)
        << " does not fit in operand shape " << shape_to_string(x->shape) << " along axis " << i;
  }
  auto n = node(ExprKind::Crop, extent, {x});
  n->ints = begin;
  n->ints.insert(n->ints.end(), extent.begin(), extent.end());
  return n;
}

bool named_color_matrix(const std::string& name, double out[9]) {
  // YUV (BT.601) and the opponent colour space used by ProxImaL's mul_color.
  static const double yuv[9] = {0.299, 0.587, 0.114, -0.14713, -0.28886, 0.436, 0.615, -0.51499, -0.10001};
  static const double opp[9] = {1.0 / 3, 1.0 / 3, 1.0 / 3, 0.5, 0, -0.5, 0.25, -0.5, 0.25};
  const double* m = name == "yuv" ? yuv : name == "opp" ? opp : nullptr;
  if (!m) return false;
  std::copy(m, m + 9, out);
  return true;
}

Expr make_mul_color(Expr x, Expr matrix, const std::string& named) {
  check_operand(x, "mul_color");
  user_assert(x->rank() >= 1 && x->shape.back() == 3)
      << "mul_color: the operand's last axis must hold 3 colour channels, got shape "
      << shape_to_string(x->shape);
  std::vector<Expr> args = {x};
  if (matrix) {
    check_constant_param(matrix, "mul_color", "colour matrix");
    user_assert(matrix->shape == Shape({3, 3}))
        << "mul_color: the colour matrix must have shape (3, 3), got " << shape_to_string(matrix->shape);
    args.push_back(matrix);
  } else {
    double m[9];
    user_assert(named_color_matrix(named, m))
        << "mul_color: unknown colour transform \"" << named << "\" (known: \"yuv\", \"opp\")";
  }
  auto n = node(ExprKind::MulColor, x->shape, std::move(args));
  n->str = matrix ? "" : named;
  return n;
}

Expr make_pxwise_matrixmult(Expr matrices, Expr x) {
  check_operand(x, "pxwise_matrixmult");
  check_constant_param(matrices, "pxwise_matrixmult", "pixel matrices (first argument)");
  const Shape& as = matrices->shape;
  const Shape& xs = x->shape;
  user_assert(!xs.empty())
      << "pxwise_matrixmult: the operand is a scalar; it needs an axis of the vectors the "
         "matrices multiply";
  user_assert(as.size() == xs.size() + 1 && std::equal(xs.begin(), xs.end() - 1, as.begin()) &&
              as.back() == xs.back())
      << "pxwise_matrixmult: the pixel matrices' shape " << shape_to_string(as)
      << " must be the operand's shape " << shape_to_string(xs) << " without its last axis, then (N, "
      << xs.back() << "): a matrix of N rows and one column per entry of the operand's last axis";
  const int64_t rows = as[as.size() - 2], cols = as.back();
  user_assert(rows >= 1 && rows <= kMaxPixelMatrix && cols >= 1 && cols <= kMaxPixelMatrix)
      << "pxwise_matrixmult: pixel matrices of " << rows << " x " << cols << " (shape " << shape_to_string(as)
      << "); from 1 x 1 to " << kMaxPixelMatrix << " x " << kMaxPixelMatrix << " are supported";
  Shape out(xs.begin(), xs.end() - 1);
  out.push_back(rows);
  return node(ExprKind::PxwiseMatrixmult, out, {matrices, x});
}

Expr make_warp(Expr x, Expr homography, std::vector<int64_t> target) {
  check_operand(x, "warp");
  check_constant_param(homography, "warp", "homography");
  const Shape& hs = homography->shape;
  user_assert(hs.size() >= 2 && hs.size() <= 3 && hs[0] == 3 && hs[1] == 3 && (hs.size() == 2 || hs[2] >= 1))
      << "warp: the homography must have shape (3, 3), or (3, 3, K) for K of them, got " << shape_to_string(hs);
  user_assert(x->rank() == 2 || x->rank() == 3)
      << "warp: the operand must be an image (H, W) or (H, W, C), got shape " << shape_to_string(x->shape);
  user_assert(target.empty() || (target.size() == 2 && target[0] >= 1 && target[1] >= 1))
      << "warp: the target shape is [h, w] with h, w >= 1, got " << ints_to_string(target);
  Shape out = x->shape;
  if (!target.empty()) {
    out[0] = target[0];
    out[1] = target[1];
  }
  if (hs.size() == 3) out.push_back(hs[2]);
  auto n = node(ExprKind::Warp, out, {x, homography});
  n->ints = std::move(target);
  return n;
}

const proxc_black_box& registered_black_box(const std::string& name) {
  const proxc_black_box* op = proxc_find_black_box(name.c_str());
  user_assert(op) << "black_box: no operator is registered as \"" << name
                  << "\" (register it with proxc_register_black_box, or load the plugin that defines it with "
                     "--plugin LIB.so)";
  return *op;
}

Expr make_black_box(const std::string& name, Expr x) {
  check_operand(x, "black_box");
  const proxc_black_box* op = &registered_black_box(name);
  user_assert(x->rank() <= PROXC_BLACK_BOX_MAX_RANK)
      << "black_box " << name << ": the operand has rank " << x->rank() << ", at most " << PROXC_BLACK_BOX_MAX_RANK
      << " is supported (shape " << shape_to_string(x->shape) << ")";
  Shape out = x->shape;
  if (op->output_shape) {
    int64_t dims[PROXC_BLACK_BOX_MAX_RANK] = {};
    int rank = -1;
    int rc = 1;
    try {
      rc = op->output_shape(op->user, x->shape.data(), x->rank(), dims, &rank);
    } catch (...) {
      user_error << "black_box " << name << ": output_shape threw an exception for operand shape "
                 << shape_to_string(x->shape);
    }
    user_assert(rc == 0) << "black_box " << name << ": the operator does not accept an operand of shape "
                         << shape_to_string(x->shape);
    user_assert(rank >= 1 && rank <= PROXC_BLACK_BOX_MAX_RANK)
        << "black_box " << name << ": output_shape returned rank " << rank << " for operand shape "
        << shape_to_string(x->shape) << " (1 to " << PROXC_BLACK_BOX_MAX_RANK << ")";
    out.assign(dims, dims + rank);
    for (int64_t e : out) {
      user_assert(e > 0) << "black_box " << name << ": output_shape returned " << shape_to_string(out)
                         << " for operand shape " << shape_to_string(x->shape) << "; extents must be positive";
    }
    check_allocation(out, "black_box " + name);
  }
  auto n = node(ExprKind::BlackBox, std::move(out), {std::move(x)});
  n->str = name;
  return n;
}

Expr with_name_hint(const Expr& e, const std::string& hint) {
  auto n = std::make_shared<ExprNode>(*e);
  n->name_hint = hint;
  return n;
}

bool depends_on_variable(const Expr& e) { return e->has_variable; }

}  // namespace proxc::internal
