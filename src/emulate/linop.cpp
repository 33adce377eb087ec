#include "emulate/linop.h"

#include <cmath>
#include <unordered_map>

#include "ir/adjoint.h"
#include "proxc/black_box.h"
#include "support/error.h"

namespace proxc::internal::emulate {

namespace {

int64_t mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// Coordinates of flat index f in a shape with strides st.
void unravel(int64_t f, const Shape& s, const std::vector<int64_t>& st, std::vector<int64_t>* c) {
  c->resize(s.size());
  for (size_t a = 0; a < s.size(); ++a) (*c)[a] = (f / st[a]) % s[a];
}

// ---- black boxes: the user's float32 callbacks on the double values ----
Tensor black_box_apply(const ExprNode* n, const Tensor& x, const Shape& out_shape, bool adjoint) {
  const proxc_black_box* op = &registered_black_box(n->str);
  FloatData in(x.data.begin(), x.data.end()), out(static_cast<size_t>(num_elements(out_shape)), 0.0f);
  const proxc_black_box_apply_fn f = adjoint ? op->adjoint : op->forward;
  int rc = 0;
  proxc_black_box_clear_failure();
  try {
    rc = f(op->user, in.data(), x.shape.data(), static_cast<int>(x.shape.size()), out.data(), out_shape.data(),
           static_cast<int>(out_shape.size()));
  } catch (...) {
    user_error << "black_box " << n->str << ": the " << (adjoint ? "adjoint" : "forward")
               << " callback threw an exception (input " << shape_to_string(x.shape) << ", output "
               << shape_to_string(out_shape) << ")";
  }
  const std::string said = rc != 0 ? proxc_black_box_failure() : "";
  user_assert(rc == 0) << "black_box " << n->str << ": the " << (adjoint ? "adjoint" : "forward")
                       << " callback failed (returned " << rc << "; input " << shape_to_string(x.shape) << ", output "
                       << shape_to_string(out_shape) << ")" << (said.empty() ? "" : ": " + said);
  Tensor y(out_shape);
  std::copy(out.begin(), out.end(), y.data.begin());
  return y;
}

// ---- grad ----
// boundary "" (replicate: no difference past the last entry), "zero" or
// "circular": what x is past its last entry along an axis.
Tensor grad_fwd(const Tensor& x, int64_t dims, const std::string& boundary) {
  const Shape& s = x.shape;
  Shape os = s;
  os.push_back(dims);
  Tensor y(os);
  auto st = strides_of(s);
  std::vector<int64_t> c;
  for (int64_t f = 0; f < static_cast<int64_t>(x.size()); ++f) {
    unravel(f, s, st, &c);
    for (int64_t j = 0; j < dims; ++j) {
      double v = c[j] < s[j] - 1         ? x.data[f + st[j]] - x.data[f]
                 : boundary == "zero"     ? -x.data[f]
                 : boundary == "circular" ? x.data[f - (s[j] - 1) * st[j]] - x.data[f]
                                          : 0.0;
      y.data[f * dims + j] = v;
    }
  }
  return y;
}

Tensor grad_adj(const Tensor& p, const Shape& s, int64_t dims, const std::string& boundary) {
  Tensor x(s);
  auto st = strides_of(s);
  std::vector<int64_t> c;
  for (int64_t f = 0; f < static_cast<int64_t>(x.size()); ++f) {
    unravel(f, s, st, &c);
    double v = 0;
    for (int64_t j = 0; j < dims; ++j) {
      if (c[j] > 0) v += p.data[(f - st[j]) * dims + j];
      else if (boundary == "circular") v += p.data[(f + (s[j] - 1) * st[j]) * dims + j];  // from the last entry
      if (c[j] < s[j] - 1 || !boundary.empty()) v -= p.data[f * dims + j];
    }
    x.data[f] = v;
  }
  return x;
}

// ---- conv over the first k.rank() axes; `adjoint` correlates instead ----
// For each kernel entry, y += k[i] · (x circularly shifted by i − origin):
// per-axis index tables keep the inner loop free of divisions.
// conv other than one circulant: a boundary "zero" or "replicate", or one
// kernel per slice (dims below the kernel's rank). Output entry c of the
// forward map reads x at c − i + k.shape/2 along the first `dims` axes (c
// along the others), weighted by k[i, c_dims, ..., c_{r−1}]; a coordinate
// outside wraps (circular), is left out (zero) or is clamped to the border
// (replicate). The adjoint is the exact transpose: the same reads, scattered.
Tensor conv_general_apply(const Array& k, const Tensor& x, bool adjoint, const std::string& boundary,
                          int64_t dims) {
  const Shape& s = x.shape;
  const size_t n = s.size(), r = static_cast<size_t>(k.rank()), d = static_cast<size_t>(dims);
  auto xst = strides_of(s);
  auto kst = strides_of(k.shape);
  Shape taps_shape(k.shape.begin(), k.shape.begin() + static_cast<long>(d));
  auto tst = strides_of(taps_shape);
  const int64_t taps = num_elements(taps_shape);
  Tensor y(s);
  std::vector<int64_t> c, t;
  for (size_t p = 0; p < x.size(); ++p) {
    unravel(static_cast<int64_t>(p), s, xst, &c);
    int64_t kbase = 0;  // the slice's kernel: its coordinates beyond dims
    for (size_t a = d; a < r; ++a) kbase += c[a] * kst[a];
    for (int64_t ft = 0; ft < taps; ++ft) {
      unravel(ft, taps_shape, tst, &t);
      int64_t koff = kbase, src = 0;
      bool inside = true;
      for (size_t a = 0; a < n; ++a) {
        int64_t o = c[a];
        if (a < d) {
          koff += t[a] * kst[a];
          o = c[a] - t[a] + k.shape[a] / 2;
          if (boundary.empty()) o = mod(o, s[a]);
          else if (boundary == "replicate") o = std::min(std::max<int64_t>(o, 0), s[a] - 1);
          else inside = inside && o >= 0 && o < s[a];
        }
        src += o * xst[a];
      }
      if (!inside) continue;
      const double w = k.data[static_cast<size_t>(koff)];
      if (adjoint) y.data[static_cast<size_t>(src)] += w * x.data[p];
      else y.data[p] += w * x.data[static_cast<size_t>(src)];
    }
  }
  return y;
}

Tensor conv_apply(const Array& k, const Tensor& x, bool adjoint, const std::string& boundary, int64_t dims) {
  if (!boundary.empty() || dims != k.rank()) return conv_general_apply(k, x, adjoint, boundary, dims);
  const Shape& s = x.shape;
  const size_t r = static_cast<size_t>(k.rank());
  Shape spatial(s.begin(), s.begin() + static_cast<long>(r));
  int64_t inner = 1;
  for (size_t a = r; a < s.size(); ++a) inner *= s[a];
  auto sst = strides_of(spatial);
  auto kst = strides_of(k.shape);
  const int64_t n_spatial = num_elements(spatial);
  Tensor y(s);
  std::vector<int64_t> i;
  std::vector<std::vector<int64_t>> table(r);
  std::vector<int64_t> c(r);
  for (int64_t fk = 0; fk < k.size(); ++fk) {
    const double w = k.data[static_cast<size_t>(fk)];
    if (w == 0) continue;
    unravel(fk, k.shape, kst, &i);
    for (size_t a = 0; a < r; ++a) {
      table[a].resize(static_cast<size_t>(spatial[a]));
      for (int64_t m = 0; m < spatial[a]; ++m) {
        int64_t o = adjoint ? m + i[a] - k.shape[a] / 2 : m - i[a] + k.shape[a] / 2;
        table[a][static_cast<size_t>(m)] = mod(o, spatial[a]) * sst[a];
      }
    }
    std::fill(c.begin(), c.end(), 0);
    for (int64_t fm = 0; fm < n_spatial; ++fm) {
      int64_t src = 0;
      for (size_t a = 0; a < r; ++a) src += table[a][static_cast<size_t>(c[a])];
      const double* xs = &x.data[static_cast<size_t>(src * inner)];
      double* ys = &y.data[static_cast<size_t>(fm * inner)];
      for (int64_t ch = 0; ch < inner; ++ch) ys[ch] += w * xs[ch];
      for (size_t a = r; a-- > 0;) {  // odometer over the spatial coordinates
        if (++c[a] < spatial[a]) break;
        c[a] = 0;
      }
    }
  }
  return y;
}

// ---- subsample ----
Tensor subsample_apply(const Tensor& in, const Shape& small, const Shape& big, const std::vector<int64_t>& steps,
                       bool adjoint) {
  Tensor out(adjoint ? big : small);
  auto sst = strides_of(small);
  auto bst = strides_of(big);
  std::vector<int64_t> c;
  for (int64_t f = 0; f < num_elements(small); ++f) {
    unravel(f, small, sst, &c);
    int64_t b = 0;
    for (size_t a = 0; a < c.size(); ++a) b += c[a] * steps[a] * bst[a];
    if (adjoint) out.data[b] += in.data[f];
    else out.data[f] = in.data[b];
  }
  return out;
}

// ---- transpose: out.shape[i] = in.shape[axes[i]] ----
Tensor transpose_apply(const Tensor& in, const std::vector<int64_t>& axes, bool adjoint, const Shape& in_shape,
                       const Shape& out_shape) {
  // Forward maps in (in_shape) to out (out_shape); adjoint the reverse.
  Tensor res(adjoint ? in_shape : out_shape);
  auto ist = strides_of(in_shape);
  auto ost = strides_of(out_shape);
  std::vector<int64_t> c;
  for (int64_t f = 0; f < num_elements(out_shape); ++f) {
    unravel(f, out_shape, ost, &c);
    int64_t src = 0;
    for (size_t i = 0; i < axes.size(); ++i) src += c[i] * ist[static_cast<size_t>(axes[i])];
    if (adjoint) res.data[src] = in.data[f];
    else res.data[f] = in.data[src];
  }
  return res;
}

// ---- crop ----
Tensor crop_apply(const Tensor& in, const std::vector<int64_t>& ints, const Shape& big, const Shape& small,
                  bool adjoint) {
  Tensor out(adjoint ? big : small);
  auto sst = strides_of(small);
  auto bst = strides_of(big);
  std::vector<int64_t> c;
  for (int64_t f = 0; f < num_elements(small); ++f) {
    unravel(f, small, sst, &c);
    int64_t b = 0;
    for (size_t a = 0; a < c.size(); ++a) b += (c[a] + ints[a]) * bst[a];
    if (adjoint) out.data[b] = in.data[f];
    else out.data[f] = in.data[b];
  }
  return out;
}

// ---- mul_color ----
void color_matrix(const ExprNode* n, const ConstantLookup& data, double m[9]) {
  if (n->args.size() > 1) {
    const Array& a = data(n->args[1].get());
    for (int i = 0; i < 9; ++i) m[i] = a.data[static_cast<size_t>(i)];
  } else {
    internal_assert(named_color_matrix(n->str, m)) << "unknown colour matrix " << n->str;
  }
}

Tensor color_apply(const Tensor& x, const double m[9], bool adjoint) {
  Tensor y(x.shape);
  for (size_t p = 0; p < x.size(); p += 3) {
    for (int i = 0; i < 3; ++i) {
      double v = 0;
      for (int j = 0; j < 3; ++j) v += (adjoint ? m[j * 3 + i] : m[i * 3 + j]) * x.data[p + static_cast<size_t>(j)];
      y.data[p + static_cast<size_t>(i)] = v;
    }
  }
  return y;
}

// ---- pxwise_matrixmult: a matrix per pixel ----
// A (P..., N, M): forward x (P..., M) → (P..., N), y_i = Σ_j A_ij x_j; the
// adjoint (P..., N) → (P..., M), x_j = Σ_i A_ij y_i.
Tensor pixel_matrix_apply(const Tensor& in, const Array& a, bool adjoint, const Shape& out_shape) {
  const size_t rows = static_cast<size_t>(a.shape[a.shape.size() - 2]),
               cols = static_cast<size_t>(a.shape.back());
  const size_t in_len = adjoint ? rows : cols, out_len = adjoint ? cols : rows;
  Tensor out(out_shape);
  const size_t pixels = out.size() / out_len;
  for (size_t p = 0; p < pixels; ++p) {
    const float* m = a.data.data() + p * rows * cols;
    const double* v = in.data.data() + p * in_len;
    double* o = out.data.data() + p * out_len;
    for (size_t i = 0; i < rows; ++i) {
      for (size_t j = 0; j < cols; ++j) {
        const double w = m[i * cols + j];
        if (adjoint) {
          o[j] += w * v[i];
        } else {
          o[i] += w * v[j];
        }
      }
    }
  }
  return out;
}

// ---- warp: bilinear sampling at H·(row, col, 1) ----
// x (H, W[, C]) → y (h, w[, C][, K]): output pixel (i, j) of slice k samples
// x at row and column H_k·(i, j, 1) (ProxImaL's: OpenCV's inverse map of the
// transposed image); the adjoint scatters with the same weights.
Tensor warp_apply(const Tensor& in, const Array& h, bool adjoint, const Shape& xs, const Shape& ys) {
  const int64_t rows = xs[0], cols = xs[1], orows = ys[0], ocols = ys[1];
  const int64_t ch = xs.size() > 2 ? xs[2] : 1;
  const int64_t K = h.rank() == 3 ? h.shape[2] : 1;
  Tensor out(adjoint ? xs : ys);
  for (int64_t k = 0; k < K; ++k) {
    auto H = [&](int e) { return static_cast<double>(h.data[static_cast<size_t>(e * K + k)]); };
    for (int64_t i = 0; i < orows; ++i) {
      for (int64_t j = 0; j < ocols; ++j) {
        double u = H(0) * i + H(1) * j + H(2);
        double v = H(3) * i + H(4) * j + H(5);
        double w = H(6) * i + H(7) * j + H(8);
        if (w == 0 || !std::isfinite(u / w) || !std::isfinite(v / w)) continue;
        double sy = u / w, sx = v / w;  // the source's row and column
        if (sx < -1 || sy < -1 || sx > static_cast<double>(cols) || sy > static_cast<double>(rows)) continue;
        int64_t x0 = static_cast<int64_t>(std::floor(sx)), y0 = static_cast<int64_t>(std::floor(sy));
        double fx = sx - static_cast<double>(x0), fy = sy - static_cast<double>(y0);
        const int64_t tr[4] = {y0, y0, y0 + 1, y0 + 1};
        const int64_t tc[4] = {x0, x0 + 1, x0, x0 + 1};
        const double tw[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
        for (int t = 0; t < 4; ++t) {
          if (tr[t] < 0 || tr[t] >= rows || tc[t] < 0 || tc[t] >= cols || tw[t] == 0) continue;
          for (int64_t c = 0; c < ch; ++c) {
            const size_t dst = static_cast<size_t>(((i * ocols + j) * ch + c) * K + k),
                         src = static_cast<size_t>((tr[t] * cols + tc[t]) * ch + c);
            if (adjoint) out.data[src] += tw[t] * in.data[dst];
            else out.data[dst] += tw[t] * in.data[src];
          }
        }
      }
    }
  }
  return out;
}

Tensor broadcast_to(const Tensor& t, const Shape& s) {
  if (t.shape == s) return t;
  internal_assert(t.shape.empty()) << "broadcast of a non-scalar";
  Tensor out(s);
  std::fill(out.data.begin(), out.data.end(), t.data[0]);
  return out;
}

void axpy(double a, const Tensor& x, Tensor* y) {
  if (x.data.size() == 1 && y->data.size() != 1) {
    for (double& v : y->data) v += a * x.data[0];
    return;
  }
  internal_assert(x.data.size() == y->data.size()) << "axpy size mismatch";
  for (size_t i = 0; i < x.data.size(); ++i) y->data[i] += a * x.data[i];
}

// The adjoint of one operator node applied to g: its operands' shares.
void node_adjoint_of(const ExprNode* n, Tensor g, const ConstantLookup& data,
                     const std::function<void(const Expr&, Tensor)>& push) {
  const auto& a = n->args;
  switch (n->kind) {
    case ExprKind::Variable:
    case ExprKind::Constant: break;
    case ExprKind::Grad: push(a[0], grad_adj(g, a[0]->shape, n->ints[0], n->str)); break;
    case ExprKind::Conv: push(a[1], conv_apply(data(a[0].get()), g, true, n->str, n->ints[0])); break;
    case ExprKind::MulElemwise: {
      const Array& w = data(a[0].get());
      for (size_t i = 0; i < g.size(); ++i) g.data[i] *= constant_at(a[0].get(), w, i);
      push(a[1], std::move(g));
      break;
    }
    case ExprKind::Subsample: push(a[0], subsample_apply(g, n->shape, a[0]->shape, n->ints, true)); break;
    case ExprKind::UnevenSubsample: {
      Tensor out(a[0]->shape);
      const std::vector<int64_t> src = uneven_sources(n, data(a[1].get()));
      for (size_t o = 0; o < src.size(); ++o) {
        if (src[o] >= 0) out.data[static_cast<size_t>(src[o])] += g.data[o];
      }
      push(a[0], std::move(out));
      break;
    }
    case ExprKind::Scale:
      for (double& v : g.data) v *= n->scalar;
      push(a[0], std::move(g));
      break;
    case ExprKind::Add:
    case ExprKind::Sub: {
      if (a[1]->has_variable) {
        Tensor g2 = g;
        if (n->kind == ExprKind::Sub) {
          for (double& v : g2.data) v = -v;
        }
        push(a[1], std::move(g2));
      }
      push(a[0], std::move(g));
      break;
    }
    case ExprKind::Neg:
      for (double& v : g.data) v = -v;
      push(a[0], std::move(g));
      break;
    case ExprKind::VStack: {
      size_t off = 0;
      for (const Expr& p : a) {
        Tensor t(p->shape);
        std::copy(g.data.begin() + static_cast<long>(off), g.data.begin() + static_cast<long>(off + t.size()),
                  t.data.begin());
        off += t.size();
        push(p, std::move(t));
      }
      break;
    }
    case ExprKind::Reshape:
      g.shape = a[0]->shape;
      push(a[0], std::move(g));
      break;
    case ExprKind::Transpose: push(a[0], transpose_apply(g, n->ints, true, a[0]->shape, n->shape)); break;
    case ExprKind::Crop: push(a[0], crop_apply(g, n->ints, a[0]->shape, n->shape, true)); break;
    case ExprKind::MulColor: {
      double m[9];
      color_matrix(n, data, m);
      push(a[0], color_apply(g, m, true));
      break;
    }
    case ExprKind::PxwiseMatrixmult:
      push(a[1], pixel_matrix_apply(g, data(a[0].get()), true, a[1]->shape));
      break;
    case ExprKind::Warp: push(a[0], warp_apply(g, data(a[1].get()), true, a[0]->shape, n->shape)); break;
    case ExprKind::BlackBox: push(a[0], black_box_apply(n, g, a[0]->shape, true)); break;
  }
}

}  // namespace

std::vector<int64_t> uneven_sources(const ExprNode* n, const Array& idx) {
  const Shape& xs = n->args[0]->shape;
  auto st = strides_of(xs);
  const size_t count = static_cast<size_t>(num_elements(n->shape)), rank = xs.size();
  std::vector<int64_t> src(count, 0);
  for (size_t o = 0; o < count; ++o) {
    for (size_t a = 0; a < rank; ++a) {
      const int64_t v = static_cast<int64_t>(idx.data[a * count + o]);
      if (src[o] < 0 || v < 0 || v >= xs[a]) {
        src[o] = -1;
      } else {
        src[o] += v * st[a];
      }
    }
  }
  return src;
}


const Array& own_constant_data(const ExprNode* c) { return c->constant->array; }

namespace {
// The exact values of `c` when `looked_up` is its own array and it has them.
const DoubleData* exact_of(const ExprNode* c, const Array& looked_up) {
  const ConstantData& d = *c->constant;
  return (&looked_up == &d.array && !d.exact.empty()) ? &d.exact : nullptr;
}
}  // namespace

Tensor constant_tensor(const ExprNode* c, const ConstantLookup& data) {
  const Array& a = data(c);
  const DoubleData* exact = exact_of(c, a);
  if (!exact) {
    Tensor t = Tensor::from(a);
    if (&a == &c->constant->array && c->constant->source.type == ConstantSource::Type::Scalar) {
      t.data[0] = c->constant->source.scalar;  // the scalar as written
    }
    return t;
  }
  Tensor t(a.shape);
  t.data = *exact;
  return t;
}

double constant_at(const ExprNode* c, const Array& looked_up, size_t i) {
  if (&looked_up == &c->constant->array && c->constant->source.type == ConstantSource::Type::Scalar) {
    return c->constant->source.scalar;  // the scalar as written
  }
  const DoubleData* exact = exact_of(c, looked_up);
  const size_t j = looked_up.data.size() == 1 ? 0 : i;
  return exact ? (*exact)[j] : static_cast<double>(looked_up.data[j]);
}

Tensor forward(const Expr& k, const std::map<const ExprNode*, const Tensor*>& vars, bool affine,
               const ConstantLookup& data) {
  // A node's value is handed to its last consumer, not copied, and a
  // variable's is copied only where an operator takes it: a folded
  // constant (emulate/fold.cpp) of a large input costs one copy of it per
  // operator, not three.
  const std::vector<const ExprNode*> order = linear_order(k);
  std::unordered_map<const ExprNode*, Tensor> val;
  std::unordered_map<const ExprNode*, int> consumers;
  for (const ExprNode* n : order) {
    for (const Expr& a : n->args) {
      if (a->has_variable) ++consumers[a.get()];
    }
  }
  auto variable_value = [&](const ExprNode* n) -> const Tensor& {
    auto it = vars.find(n);
    internal_assert(it != vars.end() && it->second) << "forward: no value for variable " << n->name_hint;
    internal_assert(it->second->shape == n->shape) << "forward: variable value shape";
    return *it->second;
  };
  auto value = [&](const Expr& e) -> Tensor {
    if (e->has_variable) {
      if (e->is_variable()) return variable_value(e.get());
      auto it = val.find(e.get());
      internal_assert(it != val.end()) << "forward: " << to_string(e->kind) << " used after its last consumer";
      if (--consumers[e.get()] > 0) return it->second;
      Tensor last = std::move(it->second);
      val.erase(it);
      return last;
    }
    if (!affine) return Tensor(e->shape);  // offsets drop out of the linear part
    return constant_tensor(e.get(), data);
  };
  if (k->is_variable()) return variable_value(k.get());
  for (const ExprNode* n : order) {
    const auto& a = n->args;
    Tensor y;
    switch (n->kind) {
      case ExprKind::Variable: continue;  // read where it is used (variable_value)
      case ExprKind::Constant: internal_error << "constant reached in linear order"; break;
      case ExprKind::Grad: y = grad_fwd(value(a[0]), n->ints[0], n->str); break;
      case ExprKind::Conv: y = conv_apply(data(a[0].get()), value(a[1]), false, n->str, n->ints[0]); break;
      case ExprKind::MulElemwise: {
        const Array& w = data(a[0].get());
        y = value(a[1]);
        for (size_t i = 0; i < y.size(); ++i) y.data[i] *= constant_at(a[0].get(), w, i);
        break;
      }
      case ExprKind::Subsample: y = subsample_apply(value(a[0]), n->shape, a[0]->shape, n->ints, false); break;
      case ExprKind::UnevenSubsample: {
        const Tensor& x = value(a[0]);
        const std::vector<int64_t> src = uneven_sources(n, data(a[1].get()));
        y = Tensor(n->shape);
        for (size_t o = 0; o < src.size(); ++o) y.data[o] = src[o] >= 0 ? x.data[static_cast<size_t>(src[o])] : 0.0;
        break;
      }
      case ExprKind::Scale:
        y = value(a[0]);
        for (double& v : y.data) v *= n->scalar;
        break;
      case ExprKind::Add:
      case ExprKind::Sub: {
        y = broadcast_to(value(a[0]), n->shape);
        axpy(n->kind == ExprKind::Add ? 1.0 : -1.0, value(a[1]), &y);
        break;
      }
      case ExprKind::Neg:
        y = value(a[0]);
        for (double& v : y.data) v = -v;
        break;
      case ExprKind::VStack: {
        y = Tensor(n->shape);
        size_t off = 0;
        for (const Expr& p : a) {
          Tensor t = value(p);
          std::copy(t.data.begin(), t.data.end(), y.data.begin() + static_cast<long>(off));
          off += t.size();
        }
        break;
      }
      case ExprKind::Reshape:
        y = value(a[0]);
        y.shape = n->shape;
        break;
      case ExprKind::Transpose: y = transpose_apply(value(a[0]), n->ints, false, a[0]->shape, n->shape); break;
      case ExprKind::Crop: y = crop_apply(value(a[0]), n->ints, a[0]->shape, n->shape, false); break;
      case ExprKind::MulColor: {
        double m[9];
        color_matrix(n, data, m);
        y = color_apply(value(a[0]), m, false);
        break;
      }
      case ExprKind::PxwiseMatrixmult:
        y = pixel_matrix_apply(value(a[1]), data(a[0].get()), false, n->shape);
        break;
      case ExprKind::Warp: y = warp_apply(value(a[0]), data(a[1].get()), false, a[0]->shape, n->shape); break;
      case ExprKind::BlackBox: y = black_box_apply(n, value(a[0]), n->shape, false); break;
    }
    val[n] = std::move(y);
  }
  return std::move(val.at(k.get()));
}

std::map<const ExprNode*, Tensor> adjoint(const Expr& k, const Tensor& y, const ConstantLookup& data,
                                          const EmulateDebug& debug) {
  internal_assert(y.shape == k->shape) << "adjoint: y shape " << shape_to_string(y.shape) << " vs "
                                       << shape_to_string(k->shape);
  auto sum = [](std::vector<Tensor> parts, const ExprNode*) {
    Tensor total = std::move(parts[0]);
    for (size_t i = 1; i < parts.size(); ++i) axpy(1.0, parts[i], &total);
    return total;
  };
  auto node_adjoint = [&](const ExprNode* n, Tensor g, const std::function<void(const Expr&, Tensor)>& push) {
    if (debug.break_adjoint && n->kind == debug.broken_kind) {
      for (double& v : g.data) v *= 1.001;
    }
    node_adjoint_of(n, std::move(g), data, push);
  };
  auto reached = reverse_mode<Tensor>(k, y, node_adjoint, sum);
  std::map<const ExprNode*, Tensor> out(reached.begin(), reached.end());
  // Variables of K that nothing reached (cannot happen for a connected K) get zeros.
  for (const ExprNode* n : linear_order(k)) {
    if (n->is_variable() && !out.count(n)) out[n] = Tensor(n->shape);
  }
  return out;
}

}  // namespace proxc::internal::emulate
