#include "halide/lower.h"

#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>

#include "fft/fft.h"
#include "step/partition.h"
#include "support/error.h"

namespace proxc::hl {

namespace {

using Halide::cast;
using Halide::clamp;
using Halide::ExternFuncArgument;
using Halide::Float;
using Halide::Func;
using Halide::ImageParam;
using Halide::Pipeline;
using Halide::RDom;
using Halide::Region;
using Halide::TailStrategy;
using Halide::Var;
using Halide::select;
using Halide::sum;
using Halide::minimum;
using Halide::maximum;
using Expr = Halide::Expr;
using IrExpr = proxc::Expr;
template <typename T>
using HParam = Halide::Param<T>;

// A double constant (Halide refuses implicit double → Expr conversions).
Expr f64(double v) { return Halide::Internal::make_const(Halide::Float(64), v); }

/// A lowered array value: a Func over numpy-order coordinates (stored with
/// Halide's reversed argument order) and its extents (numpy order).
struct Val {
  Func f;
  std::vector<Expr> ext;
  std::vector<Var> vars;  // numpy order; empty for scalars and inputs
  bool small_inner = false;  // the last axis is short (grad components, colour channels)
  int rank() const { return static_cast<int>(ext.size()); }
};

std::vector<Expr> reversed(std::vector<Expr> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

Expr call(const Val& v, const std::vector<Expr>& idx) {
  if (v.ext.empty()) return v.f();
  internal_assert(static_cast<int>(idx.size()) == v.rank()) << "call with " << idx.size() << " indices on rank "
                                                            << v.rank();
  return v.f(reversed(idx));
}

Expr flat_size(const std::vector<Expr>& ext) {
  Expr n = 1;
  for (const Expr& e : ext) n = n * e;
  return n;
}

// Coordinates of flat index i in a C-order array of extents ext.
std::vector<Expr> unravel(Expr i, const std::vector<Expr>& ext) {
  std::vector<Expr> c(ext.size());
  for (size_t a = ext.size(); a-- > 0;) {
    c[a] = i % ext[a];
    i = i / ext[a];
  }
  return c;
}

Expr ravel(const std::vector<Expr>& c, const std::vector<Expr>& ext) {
  Expr f = 0;
  for (size_t a = 0; a < c.size(); ++a) f = f * ext[a] + c[a];
  return f;
}

class Lowerer {
 public:
  explicit Lowerer(const StepProgram& p) : p_(p) {}

  Lowered run() {
    std::vector<Step> nodes = p_.nodes();
    std::unordered_map<const StepNode*, int> index;
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].get()] = static_cast<int>(i);
    std::unordered_map<const StepNode*, int> uses;
    for (const Step& n : nodes) {
      for (const Step& a : n->args) ++uses[a.get()];
    }
    for (const auto& [name, s] : p_.outputs) ++uses[s.get()];
    // Fusable regions between the nodes Halide cannot express (the FFT solves,
    // which become extern stages): values crossing a region boundary are
    // computed at root, everything else may fuse into its users.
    std::vector<std::vector<int>> operands(nodes.size());
    std::set<const StepNode*> outputs;
    for (const auto& [name, s] : p_.outputs) outputs.insert(s.get());
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const Step& a : nodes[i]->args) operands[i].push_back(index.at(a.get()));
    }
    Partition part = partition_graph(
        operands, [&](int i) { return nodes[static_cast<size_t>(i)]->kind == StepKind::CirculantSolve; },
        [&](int i) { return outputs.count(nodes[static_cast<size_t>(i)].get()) > 0; });
    for (size_t i = 0; i < nodes.size(); ++i) {
      const StepNode& n = *nodes[i];
      key_ << "N" << to_string(n.kind) << "/" << n.shape.size() << "(";
      for (const Step& a : n.args) key_ << index.at(a.get()) << ",";
      key_ << ")";
      Val v = lower_node(n);
      // Pointwise nodes used once fuse into their user; anything else — stencils,
      // reductions, shared values, region boundaries — is computed once.
      const bool fuse = is_pointwise(n.kind) && uses[&n] <= 1 && !part.boundary[i];
      if (!fuse && n.kind != StepKind::Input && n.kind != StepKind::Param && n.kind != StepKind::Constant) {
        materialize(v);
      }
      vals_[&n] = v;
    }
    out_.key = key_.str();
    std::vector<Func> outs;
    for (const auto& [name, s] : p_.outputs) {
      const Val& v = vals_.at(s.get());
      Func f(name + "_out");
      std::vector<Var> vars = make_vars(v.rank());
      if (vars.empty()) f() = call(v, {});
      else f(reversed(exprs(vars))) = call(v, exprs(vars));
      schedule_root(f, vars, v.small_inner);
      out_.outputs.push_back({name, f, v.rank(), s->shape});
      outs.push_back(f);
      out_.key += "O" + name + ";";
    }
    out_.pipeline = Pipeline(outs);
    return std::move(out_);
  }

 private:
  static bool is_pointwise(StepKind k) {
    switch (k) {
      case StepKind::Add: case StepKind::Sub: case StepKind::Mul: case StepKind::Div: case StepKind::Min:
      case StepKind::Max: case StepKind::Neg: case StepKind::Abs: case StepKind::Sqrt: case StepKind::Sign:
      case StepKind::Axpby: case StepKind::Fill: case StepKind::Data:
        return true;
      default:
        return false;
    }
  }

  static std::vector<Var> make_vars(int r) {
    std::vector<Var> v;
    for (int i = 0; i < r; ++i) v.emplace_back("px_" + std::to_string(i));
    return v;
  }
  static std::vector<Expr> exprs(const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.end()); }

  // A new Func of rank r (numpy order) defined by body(coordinates).
  Val define(const std::string& name, const std::vector<Expr>& ext,
             const std::function<Expr(const std::vector<Expr>&)>& body) {
    Val v;
    v.f = Func(name + std::to_string(counter_++));
    v.ext = ext;
    v.vars = make_vars(static_cast<int>(ext.size()));
    std::vector<Expr> c = exprs(v.vars);
    Expr e = body(c);
    e = ext.empty() ? cast<double>(e) : cast<float>(e);
    if (ext.empty()) v.f() = e;
    else v.f(reversed(c)) = e;
    return v;
  }

  static Val small(Val v) {
    v.small_inner = true;
    return v;
  }

  static void schedule_root(Func f, const std::vector<Var>& vars, bool small_inner) {
    f.compute_root();
    if (vars.empty()) return;
    // Vectorize along the image rows. Arrays of rank 3 and more are images
    // with short trailing axes (grad components, colour channels): vectorizing
    // those would waste most lanes, so the vectors run along axis 1 (the
    // columns) with the short axes looped outside it.
    if (vars.size() >= 3 || small_inner) {
      std::vector<Halide::VarOrRVar> order;  // innermost first
      order.push_back(vars[1]);
      for (size_t i = vars.size(); i-- > 2;) order.push_back(vars[i]);
      order.push_back(vars[0]);
      if (vars.size() >= 3) f.reorder(order);
      f.vectorize(vars[1], 8, TailStrategy::GuardWithIf);
    } else {
      f.vectorize(vars.back(), 8, TailStrategy::GuardWithIf);
    }
    if (vars.size() >= 2) f.parallel(vars.front());
  }

  void materialize(const Val& v) {
    if (v.vars.empty() && !v.ext.empty()) return;  // an input wrapper: already a buffer
    if (materialized_.count(v.f.name())) return;
    materialized_.insert(v.f.name());
    schedule_root(v.f, v.vars, v.small_inner);
  }

  // A value read at other positions than its own (a stencil): compute it once.
  Val stencil_input(const Val& v) {
    materialize(v);
    return v;
  }

  // ---- Slots: run-time scalars, extents and data ----

  Expr scalar_slot(double value) {
    HParam<float> p("s" + std::to_string(out_.scalars.size()));
    out_.scalars.push_back(p);
    out_.scalar_values.push_back(value);
    key_ << "s";
    return p;
  }

  Expr extent_slot(int64_t value) {
    internal_assert(value > 0 && value < (int64_t{1} << 31)) << "extent " << value << " out of Halide's int range";
    HParam<int> p("e" + std::to_string(out_.extents.size()));
    out_.extents.push_back(p);
    out_.extent_values.push_back(value);
    key_ << "e";
    return p;
  }

  std::vector<Expr> extents(const Shape& s) {
    std::vector<Expr> e;
    for (int64_t x : s) e.push_back(extent_slot(x));
    return e;
  }

  Val data(const ExprNode* c) {
    auto it = data_vals_.find(c);
    if (it != data_vals_.end()) {
      key_ << "D" << it->second.second;
      return it->second.first;
    }
    int id = static_cast<int>(out_.data.size());
    ImageParam ip(Float(32), c->rank(), "data" + std::to_string(id));
    out_.data.push_back(ip);
    out_.data_nodes.push_back(c);
    key_ << "D" << id << "/" << c->rank();
    Val v;
    v.ext = extents(c->shape);
    Func f("data_f" + std::to_string(id));
    std::vector<Var> vars = make_vars(c->rank());
    if (vars.empty()) f() = ip();
    else f(reversed(exprs(vars))) = ip(reversed(exprs(vars)));
    v.f = f;  // inline wrapper over the buffer
    data_vals_[c] = {v, id};
    return v;
  }

  Expr param_at(const proxc::Param& p, const std::vector<Expr>& idx) {
    if (!p.array) return scalar_slot(p.scalar);
    Val d = data(p.array.get());
    return d.rank() == 0 ? call(d, {}) : call(d, idx);
  }

  // ---- Linear operators (problem expressions) ----

  int ir_id(const ExprNode* n) {
    auto it = ir_ids_.find(n);
    if (it != ir_ids_.end()) return it->second;
    int id = static_cast<int>(ir_ids_.size());
    ir_ids_[n] = id;
    return id;
  }

  void key_ir(const ExprNode* n) {
    key_ << "E" << to_string(n->kind) << "/" << n->rank() << "[";
    for (int64_t i : n->ints) key_ << i << ",";
    key_ << "]" << n->str;
  }

  Val forward(const IrExpr& k, const std::unordered_map<const ExprNode*, Val>& vars, bool affine) {
    std::unordered_map<const ExprNode*, Val> memo = vars;
    std::function<Val(const IrExpr&)> go = [&](const IrExpr& e) -> Val {
      auto it = memo.find(e.get());
      if (it != memo.end()) {
        key_ << "@" << ir_id(e.get());
        return it->second;
      }
      const ExprNode* n = e.get();
      ir_id(n);
      key_ir(n);
      Val v = forward_node(n, go, affine);
      memo[n] = v;
      return v;
    };
    return go(k);
  }

  Val zeros(const Shape& s) {
    return define("zero", extents(s), [](const std::vector<Expr>&) { return Expr(0.0f); });
  }

  Val forward_node(const ExprNode* n, const std::function<Val(const IrExpr&)>& go, bool affine) {
    const auto& a = n->args;
    auto operand = [&](const IrExpr& e) -> Val {
      if (e->has_variable) return go(e);
      return affine ? data(e.get()) : zeros(e->shape);
    };
    std::vector<Expr> ext = extents(n->shape);
    switch (n->kind) {
      case ExprKind::Variable: internal_error << "unbound variable in forward"; break;
      case ExprKind::Constant: return data(n);
      case ExprKind::Grad: {
        Val x = stencil_input(go(a[0]));
        int64_t d = n->ints[0];
        return small(define("grad", ext, [&](const std::vector<Expr>& v) {
          Expr out = 0.0f;
          for (int64_t ax = d - 1; ax >= 0; --ax) {
            std::vector<Expr> next(v.begin(), v.end() - 1);
            std::vector<Expr> here = next;
            next[ax] = min(next[ax] + 1, x.ext[ax] - 1);
            Expr diff = select(v[ax] < x.ext[ax] - 1, call(x, next) - call(x, here), 0.0f);
            out = ax == d - 1 ? diff : select(v.back() == static_cast<int>(ax), diff, out);
          }
          return out;
        }));
      }
      case ExprKind::Conv: return conv(data(a[0].get()), stencil_input(go(a[1])), false, ext);
      case ExprKind::MulElemwise: {
        Val w = data(a[0].get());
        Val x = go(a[1]);
        return define("mul", ext, [&](const std::vector<Expr>& v) { return call(w, v) * call(x, v); });
      }
      case ExprKind::Subsample: {
        Val x = stencil_input(go(a[0]));
        return define("subsample", ext, [&](const std::vector<Expr>& v) {
          std::vector<Expr> src;
          for (size_t i = 0; i < v.size(); ++i) src.push_back(v[i] * static_cast<int>(n->ints[i]));
          return call(x, src);
        });
      }
      case ExprKind::Scale: {
        Val x = go(a[0]);
        Expr s = scalar_slot(n->scalar);
        return define("scale", ext, [&](const std::vector<Expr>& v) { return s * call(x, v); });
      }
      case ExprKind::Add:
      case ExprKind::Sub: {
        Val x = operand(a[0]), y = operand(a[1]);
        bool sub = n->kind == ExprKind::Sub;
        return define(sub ? "sub" : "add", ext, [&](const std::vector<Expr>& v) {
          Expr l = x.rank() == 0 ? call(x, {}) : call(x, v);
          Expr r = y.rank() == 0 ? call(y, {}) : call(y, v);
          return sub ? l - r : l + r;
        });
      }
      case ExprKind::Neg: {
        Val x = go(a[0]);
        return define("neg", ext, [&](const std::vector<Expr>& v) { return -call(x, v); });
      }
      case ExprKind::VStack: {
        std::vector<Val> parts;
        for (const IrExpr& p : a) parts.push_back(stencil_input(go(p)));
        return define("vstack", ext, [&](const std::vector<Expr>& v) {
          Expr out = 0.0f, offset = 0;
          std::vector<std::pair<Expr, Expr>> pieces;
          for (const Val& p : parts) {
            Expr size = flat_size(p.ext);
            Expr local = clamp(v[0] - offset, 0, size - 1);
            pieces.push_back({v[0] < offset + size, call(p, unravel(local, p.ext))});
            offset = offset + size;
          }
          for (size_t i = pieces.size(); i-- > 0;) out = i + 1 == pieces.size() ? pieces[i].second
                                                                               : select(pieces[i].first, pieces[i].second, out);
          return out;
        });
      }
      case ExprKind::Reshape: {
        Val x = stencil_input(go(a[0]));
        return define("reshape", ext, [&](const std::vector<Expr>& v) { return call(x, unravel(ravel(v, ext), x.ext)); });
      }
      case ExprKind::Transpose: {
        Val x = stencil_input(go(a[0]));
        return define("transpose", ext, [&](const std::vector<Expr>& v) {
          std::vector<Expr> src(v.size());
          for (size_t i = 0; i < v.size(); ++i) src[static_cast<size_t>(n->ints[i])] = v[i];
          return call(x, src);
        });
      }
      case ExprKind::Crop: {
        Val x = stencil_input(go(a[0]));
        return define("crop", ext, [&](const std::vector<Expr>& v) {
          std::vector<Expr> src;
          for (size_t i = 0; i < v.size(); ++i) src.push_back(v[i] + static_cast<int>(n->ints[i]));
          return call(x, src);
        });
      }
      case ExprKind::MulColor: return color(n, stencil_input(go(a[0])), false, ext);
      case ExprKind::Warp: return warp_forward(data(a[1].get()), stencil_input(go(a[0])), ext);
    }
    internal_error << "unhandled operator " << to_string(n->kind);
    return Val();
  }

  Val conv(const Val& k, const Val& x, bool adjoint, const std::vector<Expr>& ext) {
    const int kr = k.rank();
    Region ranges;
    for (int i = kr - 1; i >= 0; --i) ranges.push_back(Halide::Range(0, k.ext[static_cast<size_t>(i)]));
    RDom r(ranges);
    return define(adjoint ? "corr" : "conv", ext, [&](const std::vector<Expr>& v) {
      std::vector<Expr> ki(static_cast<size_t>(kr)), src = v;
      for (int i = 0; i < kr; ++i) {
        Expr ri = r[kr - 1 - i];
        ki[static_cast<size_t>(i)] = ri;
        Expr o = adjoint ? v[i] + ri - k.ext[i] / 2 : v[i] - ri + k.ext[i] / 2;
        // Circular wrap. The kernel is no larger than the image, so o lies in
        // [−n, 2n): two selects instead of an integer division per tap.
        // (The clamp changes no value; it tells bounds inference the range.)
        src[static_cast<size_t>(i)] =
            clamp(select(o < 0, o + x.ext[i], o >= x.ext[i], o - x.ext[i], o), 0, x.ext[i] - 1);
      }
      return sum(call(k, ki) * call(x, src));
    });
  }

  Val color(const ExprNode* n, const Val& x, bool adjoint, const std::vector<Expr>& ext) {
    std::vector<Expr> m(9);
    if (n->args.size() > 1) {
      Val d = data(n->args[1].get());
      for (int i = 0; i < 9; ++i) m[static_cast<size_t>(i)] = call(d, {i / 3, i % 3});
    } else {
      double lit[9];
      named_color_matrix(n->str, lit);
      for (int i = 0; i < 9; ++i) m[static_cast<size_t>(i)] = scalar_slot(lit[i]);
    }
    return define(adjoint ? "color_t" : "color", ext, [&](const std::vector<Expr>& v) {
      std::vector<Expr> rows;
      for (int c = 0; c < 3; ++c) {
        Expr s = 0.0f;
        for (int j = 0; j < 3; ++j) {
          std::vector<Expr> src = v;
          src.back() = j;
          s = s + (adjoint ? m[static_cast<size_t>(j * 3 + c)] : m[static_cast<size_t>(c * 3 + j)]) * call(x, src);
        }
        rows.push_back(s);
      }
      return select(v.back() == 0, rows[0], v.back() == 1, rows[1], rows[2]);
    });
  }

  struct Taps {
    Expr valid;
    Expr r[4], c[4], w[4];
  };

  static Taps warp_taps(const std::vector<Expr>& h, Expr i, Expr j, Expr rows, Expr cols) {
    Expr fi = cast<float>(i), fj = cast<float>(j);
    Expr u = h[0] * fj + h[1] * fi + h[2];
    Expr vv = h[3] * fj + h[4] * fi + h[5];
    Expr w = h[6] * fj + h[7] * fi + h[8];
    Expr sx = u / w, sy = vv / w;
    Taps t;
    t.valid = w != 0.0f && sx >= -1.0f && sy >= -1.0f && sx <= cast<float>(cols) && sy <= cast<float>(rows);
    Expr sxc = clamp(sx, -2.0f, cast<float>(cols) + 1), syc = clamp(sy, -2.0f, cast<float>(rows) + 1);
    Expr x0 = cast<int>(floor(sxc)), y0 = cast<int>(floor(syc));
    Expr fx = sxc - cast<float>(x0), fy = syc - cast<float>(y0);
    const int dr[4] = {0, 0, 1, 1}, dc[4] = {0, 1, 0, 1};
    for (int k = 0; k < 4; ++k) {
      t.r[k] = y0 + dr[k];
      t.c[k] = x0 + dc[k];
      Expr wx = dc[k] ? fx : 1.0f - fx, wy = dr[k] ? fy : 1.0f - fy;
      Expr inside = t.r[k] >= 0 && t.r[k] < rows && t.c[k] >= 0 && t.c[k] < cols;
      t.w[k] = select(t.valid && inside, wx * wy, 0.0f);
    }
    return t;
  }

  std::vector<Expr> homography(const Val& h) {
    std::vector<Expr> e;
    for (int i = 0; i < 9; ++i) e.push_back(call(h, {i / 3, i % 3}));
    return e;
  }

  Val warp_forward(const Val& h, const Val& x, const std::vector<Expr>& ext) {
    std::vector<Expr> hh = homography(h);
    return define("warp", ext, [&](const std::vector<Expr>& v) {
      Taps t = warp_taps(hh, v[0], v[1], x.ext[0], x.ext[1]);
      Expr s = 0.0f;
      for (int k = 0; k < 4; ++k) {
        std::vector<Expr> src = v;
        src[0] = clamp(t.r[k], 0, x.ext[0] - 1);
        src[1] = clamp(t.c[k], 0, x.ext[1] - 1);
        s = s + t.w[k] * call(x, src);
      }
      return s;
    });
  }

  // Adjoint of the bilinear warp: a scatter over the output pixels.
  Val warp_adjoint(const Val& h, const Val& y, const std::vector<Expr>& ext) {
    std::vector<Expr> hh = homography(h);
    Val out;
    out.f = Func("warp_t" + std::to_string(counter_++));
    out.ext = ext;
    out.vars = make_vars(static_cast<int>(ext.size()));
    std::vector<Expr> c = exprs(out.vars);
    out.f(reversed(c)) = 0.0f;
    Region ranges;
    ranges.push_back(Halide::Range(0, ext[1]));
    ranges.push_back(Halide::Range(0, ext[0]));
    RDom r(ranges);
    Taps t = warp_taps(hh, r[1], r[0], ext[0], ext[1]);
    for (int k = 0; k < 4; ++k) {
      std::vector<Expr> dst = c, src = c;
      dst[0] = clamp(t.r[k], 0, ext[0] - 1);
      dst[1] = clamp(t.c[k], 0, ext[1] - 1);
      src[0] = r[1];
      src[1] = r[0];
      out.f(reversed(dst)) += t.w[k] * call(y, src);
    }
    return out;
  }

  // Kᵀ y for variable `var`; contributions are summed per node in reverse order.
  Val adjoint(const IrExpr& k, const Val& y, const ExprNode* var) {
    // Linear nodes of K, operands first.
    std::vector<const ExprNode*> order;
    std::unordered_map<const ExprNode*, bool> seen;
    std::function<void(const ExprNode*)> visit = [&](const ExprNode* n) {
      if (seen[n]) return;
      seen[n] = true;
      for (const IrExpr& a : n->args) {
        if (a->has_variable) visit(a.get());
      }
      order.push_back(n);
    };
    visit(k.get());
    std::unordered_map<const ExprNode*, std::vector<Val>> bar;
    bar[k.get()].push_back(y);
    Val result;
    bool found = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const ExprNode* n = *it;
      ir_id(n);
      key_ir(n);
      auto b = bar.find(n);
      if (b == bar.end()) continue;
      Val g = sum_of(b->second, n->shape);
      bar.erase(b);
      if (n->is_variable()) {
        if (n == var) {
          result = g;
          found = true;
        }
        continue;
      }
      adjoint_node(n, g, &bar);
    }
    if (!found) return zeros(var->shape);
    return result;
  }

  Val sum_of(const std::vector<Val>& parts, const Shape& shape) {
    if (parts.size() == 1) return parts[0];
    return define("acc", extents(shape), [&](const std::vector<Expr>& v) {
      Expr s = call(parts[0], v);
      for (size_t i = 1; i < parts.size(); ++i) s = s + call(parts[i], v);
      return s;
    });
  }

  void adjoint_node(const ExprNode* n, const Val& g, std::unordered_map<const ExprNode*, std::vector<Val>>* bar) {
    const auto& a = n->args;
    auto push = [&](const IrExpr& e, const Val& v) {
      if (e->has_variable) (*bar)[e.get()].push_back(v);
    };
    switch (n->kind) {
      case ExprKind::Variable:
      case ExprKind::Constant: return;
      case ExprKind::Grad: {
        Val p = stencil_input(g);
        int64_t d = n->ints[0];
        std::vector<Expr> xe = extents(a[0]->shape);
        push(a[0], define("div", xe, [&](const std::vector<Expr>& v) {
          Expr s = 0.0f;
          for (int64_t ax = 0; ax < d; ++ax) {
            std::vector<Expr> prev = v, here = v;
            prev[ax] = max(v[ax] - 1, 0);
            prev.push_back(static_cast<int>(ax));
            here.push_back(static_cast<int>(ax));
            s = s + select(v[ax] > 0, call(p, prev), 0.0f) - select(v[ax] < xe[ax] - 1, call(p, here), 0.0f);
          }
          return s;
        }));
        return;
      }
      case ExprKind::Conv: {
        std::vector<Expr> xe = extents(a[1]->shape);
        Val gg = stencil_input(g);
        gg.ext = xe;
        push(a[1], conv(data(a[0].get()), gg, true, xe));
        return;
      }
      case ExprKind::MulElemwise: {
        Val w = data(a[0].get());
        push(a[1], define("mul_t", g.ext, [&](const std::vector<Expr>& v) { return call(w, v) * call(g, v); }));
        return;
      }
      case ExprKind::Subsample: {
        Val y = stencil_input(g);
        push(a[0], define("upsample", extents(a[0]->shape), [&](const std::vector<Expr>& v) {
          Expr on = Halide::Internal::const_true();
          std::vector<Expr> src;
          for (size_t i = 0; i < v.size(); ++i) {
            int s = static_cast<int>(n->ints[i]);
            on = on && v[i] % s == 0;
            src.push_back(clamp(v[i] / s, 0, y.ext[i] - 1));
          }
          return select(on, call(y, src), 0.0f);
        }));
        return;
      }
      case ExprKind::Scale: {
        Expr s = scalar_slot(n->scalar);
        push(a[0], define("scale_t", g.ext, [&](const std::vector<Expr>& v) { return s * call(g, v); }));
        return;
      }
      case ExprKind::Add: push(a[0], g); push(a[1], g); return;
      case ExprKind::Sub: {
        push(a[0], g);
        if (a[1]->has_variable) {
          push(a[1], define("neg_t", g.ext, [&](const std::vector<Expr>& v) { return -call(g, v); }));
        }
        return;
      }
      case ExprKind::Neg:
        push(a[0], define("neg_t", g.ext, [&](const std::vector<Expr>& v) { return -call(g, v); }));
        return;
      case ExprKind::VStack: {
        Val y = stencil_input(g);
        Expr offset = 0;
        for (const IrExpr& p : a) {
          std::vector<Expr> pe = extents(p->shape);
          Expr off = offset;
          push(p, define("unstack", pe, [&](const std::vector<Expr>& v) { return call(y, {off + ravel(v, pe)}); }));
          offset = offset + flat_size(pe);
        }
        return;
      }
      case ExprKind::Reshape: {
        Val y = stencil_input(g);
        std::vector<Expr> xe = extents(a[0]->shape);
        push(a[0], define("reshape_t", xe, [&](const std::vector<Expr>& v) { return call(y, unravel(ravel(v, xe), y.ext)); }));
        return;
      }
      case ExprKind::Transpose: {
        Val y = stencil_input(g);
        push(a[0], define("transpose_t", extents(a[0]->shape), [&](const std::vector<Expr>& v) {
          std::vector<Expr> src(v.size());
          for (size_t i = 0; i < v.size(); ++i) src[i] = v[static_cast<size_t>(n->ints[i])];
          return call(y, src);
        }));
        return;
      }
      case ExprKind::Crop: {
        Val y = stencil_input(g);
        push(a[0], define("pad", extents(a[0]->shape), [&](const std::vector<Expr>& v) {
          Expr in = Halide::Internal::const_true();
          std::vector<Expr> src;
          for (size_t i = 0; i < v.size(); ++i) {
            Expr o = v[i] - static_cast<int>(n->ints[i]);
            in = in && o >= 0 && o < y.ext[i];
            src.push_back(clamp(o, 0, y.ext[i] - 1));
          }
          return select(in, call(y, src), 0.0f);
        }));
        return;
      }
      case ExprKind::MulColor: push(a[0], color(n, stencil_input(g), true, g.ext)); return;
      case ExprKind::Warp: {
        Val y = stencil_input(g);
        Val out = warp_adjoint(data(a[1].get()), y, extents(a[0]->shape));
        materialize(out);
        push(a[0], out);
        return;
      }
    }
  }

  // ---- Prox and value ----

  Val prox(const FunctionTerm& t, const Val& v, Expr rho) {
    key_ << "P" << to_string(t.kind) << t.b.is_array() << t.c.is_array() << t.lower.is_array() << t.upper.is_array();
    for (int64_t ax : t.axes) key_ << ax << ",";
    rho = cast<float>(rho);
    Expr alpha = scalar_slot(t.alpha), beta = scalar_slot(t.beta), gamma = scalar_slot(t.gamma);
    Expr denom = rho + 2.0f * gamma;
    Expr r = denom / (alpha * beta * beta);
    const std::vector<Expr>& ext = v.ext;
    // u = (rho·v − c)·beta/denom − b
    Val u = define("u", ext, [&](const std::vector<Expr>& i) {
      return (rho * call(v, i) - param_at(t.c, i)) * beta / denom - param_at(t.b, i);
    });
    if (t.kind == FunctionKind::GroupNorm1) materialize(u);
    Val p = define("prox", ext, [&](const std::vector<Expr>& i) {
      Expr x = call(u, i);
      Expr out;
      switch (t.kind) {
        case FunctionKind::SumSquares:
        case FunctionKind::LeastSquares: out = select(alpha == 0.0f, x, r * x / (r + 2.0f)); break;
        case FunctionKind::Norm1: out = select(x > 0.0f, 1.0f, x < 0.0f, -1.0f, 0.0f) * max(abs(x) - 1.0f / r, 0.0f); break;
        case FunctionKind::GroupNorm1: {
          Expr g = sqrt(group_sum_squares(u, t.axes, i));
          out = select(g == 0.0f, 0.0f, x * max(0.0f, 1.0f - 1.0f / (r * g)));
          break;
        }
        case FunctionKind::Nonneg: out = max(x, 0.0f); break;
        case FunctionKind::PoissonNorm: {
          Val cnt = data(t.counts.get());
          Expr cv = cnt.rank() == 0 ? call(cnt, {}) : call(cnt, i);
          Expr w = x - 1.0f / r;
          out = select(alpha == 0.0f, x, 0.5f * (w + sqrt(w * w + 4.0f * cv / r)));
          break;
        }
        case FunctionKind::SumEntries: out = select(alpha == 0.0f, x, x - 1.0f / r); break;
        case FunctionKind::Box: out = min(max(x, param_at(t.lower, i)), param_at(t.upper, i)); break;
      }
      return (out + param_at(t.b, i)) / beta;
    });
    return p;
  }

  Expr group_sum_squares(const Val& u, const std::vector<int64_t>& axes, const std::vector<Expr>& i) {
    Region ranges;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) ranges.push_back(Halide::Range(0, u.ext[static_cast<size_t>(*it)]));
    RDom r(ranges);
    std::vector<Expr> src = i;
    for (size_t k = 0; k < axes.size(); ++k) src[static_cast<size_t>(axes[k])] = r[static_cast<int>(axes.size() - 1 - k)];
    Expr e = call(u, src);
    return sum(e * e);
  }

  RDom full_domain(const std::vector<Expr>& ext) {
    Region ranges;
    for (auto it = ext.rbegin(); it != ext.rend(); ++it) ranges.push_back(Halide::Range(0, *it));
    return RDom(ranges);
  }

  static std::vector<Expr> domain_point(const RDom& r, size_t rank) {
    std::vector<Expr> i(rank);
    for (size_t a = 0; a < rank; ++a) i[a] = r[static_cast<int>(rank - 1 - a)];
    return i;
  }

  Val value(const FunctionTerm& t, const Val& v) {
    key_ << "V" << to_string(t.kind) << t.b.is_array() << t.c.is_array() << t.lower.is_array() << t.upper.is_array();
    for (int64_t ax : t.axes) key_ << ax << ",";
    Expr alpha = scalar_slot(t.alpha), beta = scalar_slot(t.beta), gamma = scalar_slot(t.gamma), d = scalar_slot(t.d);
    Val vv = stencil_input(v);
    Val u = define("uv", vv.ext, [&](const std::vector<Expr>& i) { return beta * call(vv, i) - param_at(t.b, i); });
    materialize(u);
    RDom r = full_domain(vv.ext);
    std::vector<Expr> i = domain_point(r, vv.ext.size());
    Expr x = cast<double>(call(u, i));
    Expr inf = cast<double>(scalar_slot(std::numeric_limits<double>::infinity()));
    const double slack = kIndicatorSlack;
    Expr f;
    switch (t.kind) {
      case FunctionKind::SumSquares:
      case FunctionKind::LeastSquares: f = cast<double>(alpha) * sum(x * x); break;
      case FunctionKind::Norm1: f = cast<double>(alpha) * sum(abs(x)); break;
      case FunctionKind::GroupNorm1: {
        // Each group once: at its entry where the group axes are 0. The group
        // sums are a Func of their own (an inline reduction cannot nest).
        Val g2 = define("gsq", vv.ext, [&](const std::vector<Expr>& j) { return group_sum_squares(u, t.axes, j); });
        materialize(g2);
        Expr first = Halide::Internal::const_true();
        for (int64_t ax : t.axes) first = first && i[static_cast<size_t>(ax)] == 0;
        f = cast<double>(alpha) * sum(select(first, sqrt(cast<double>(call(g2, i))), f64(0)));
        break;
      }
      case FunctionKind::Nonneg: f = select(minimum(x) > f64(-slack), f64(0), inf); break;
      case FunctionKind::Box: {
        Expr lo = cast<double>(param_at(t.lower, i)), hi = cast<double>(param_at(t.upper, i));
        f = select(maximum(select(x <= lo - f64(slack) || x >= hi + f64(slack), 1, 0)) == 0, f64(0), inf);
        break;
      }
      case FunctionKind::PoissonNorm: {
        Val cnt = data(t.counts.get());
        Expr cv = cast<double>(cnt.rank() == 0 ? call(cnt, {}) : call(cnt, i));
        f = select(minimum(x) < f64(-slack), inf, cast<double>(alpha) * sum(x - cv * log(max(x, f64(1e-9)))));
        break;
      }
      case FunctionKind::SumEntries: f = cast<double>(alpha) * sum(x); break;
    }
    Expr xv = cast<double>(call(vv, i));
    Expr lin = sum(cast<double>(param_at(t.c, i)) * xv + cast<double>(gamma) * xv * xv);
    return define("value", {}, [&](const std::vector<Expr>&) { return f + lin + cast<double>(d); });
  }

  // ---- Step nodes ----

  Val lower_node(const StepNode& n) {
    auto arg = [&](size_t i) -> const Val& { return vals_.at(n.args[i].get()); };
    auto scalar_of = [&](size_t i) { return call(arg(i), {}); };
    auto ewise = [&](const char* name, const std::function<Expr(const std::vector<Expr>&)>& body) {
      return define(name, extents(n.shape), body);
    };
    auto at = [&](size_t k, const std::vector<Expr>& i) {
      const Val& v = arg(k);
      return v.rank() == 0 ? call(v, {}) : call(v, i);
    };
    switch (n.kind) {
      case StepKind::Input: {
        auto it = out_.inputs.find(n.name);
        if (it == out_.inputs.end()) {
          it = out_.inputs.emplace(n.name, ImageParam(Float(32), static_cast<int>(n.shape.size()), "in_" + n.name)).first;
        }
        key_ << "I" << n.name;
        Val v;
        v.ext = extents(n.shape);
        Func f("input_" + n.name + std::to_string(counter_++));
        std::vector<Var> vars = make_vars(static_cast<int>(n.shape.size()));
        f(reversed(exprs(vars))) = it->second(reversed(exprs(vars)));
        v.f = f;
        return v;
      }
      case StepKind::Param: {
        auto it = out_.params.find(n.name);
        if (it == out_.params.end()) it = out_.params.emplace(n.name, HParam<double>("p_" + n.name)).first;
        key_ << "P" << n.name;
        Expr e = it->second;
        return define("param", {}, [&](const std::vector<Expr>&) { return e; });
      }
      case StepKind::Constant: {
        Expr s = scalar_slot(n.value);
        return define("const", {}, [&](const std::vector<Expr>&) { return cast<double>(s); });
      }
      case StepKind::Data: return data(n.expr.get());
      case StepKind::Forward: {
        std::unordered_map<const ExprNode*, Val> vars;
        for (size_t i = 0; i < n.vars.size(); ++i) vars[n.vars[i].get()] = arg(i);
        key_ << (n.index ? "affine" : "");
        return forward(n.expr, vars, n.index != 0);
      }
      case StepKind::Adjoint: return adjoint(n.expr, arg(0), n.vars[static_cast<size_t>(n.index)].get());
      case StepKind::Prox: return prox(*n.term, arg(0), scalar_of(1));
      case StepKind::Value: return value(*n.term, arg(0));
      case StepKind::CirculantSolve: {
        Val rhs = arg(0);
        materialize(rhs);
        const ExprNode* k = n.expr.get();
        int kr = k->rank();
        Shape spatial(n.shape.begin(), n.shape.begin() + kr);
        ImageParam spec(Float(32), kr, "spectrum" + std::to_string(out_.spectra.size()));
        out_.spectra.push_back(spec);
        out_.spectra_sources.push_back({k, spatial});
        key_ << "C" << kr;
        Val out;
        out.f = Func("solve" + std::to_string(counter_++));
        out.ext = extents(n.shape);
        // The scalars a and c reach the extern stage as 0-dimensional buffers
        // (an extern's Expr arguments cannot call Funcs).
        Val a = arg(1), c = arg(2);
        materialize(a);
        materialize(c);
        std::vector<ExternFuncArgument> args = {rhs.f, spec, a.f, c.f, Expr(kr)};
        out.f.define_extern("proxc_circulant_solve", args, Float(32), static_cast<int>(n.shape.size()));
        out.f.compute_root();
        return out;
      }
      case StepKind::Add: return ewise("add", [&](const std::vector<Expr>& i) { return at(0, i) + at(1, i); });
      case StepKind::Sub: return ewise("sub", [&](const std::vector<Expr>& i) { return at(0, i) - at(1, i); });
      case StepKind::Mul: return ewise("mul", [&](const std::vector<Expr>& i) { return at(0, i) * at(1, i); });
      case StepKind::Div: return ewise("div", [&](const std::vector<Expr>& i) { return at(0, i) / at(1, i); });
      case StepKind::Min: return ewise("min", [&](const std::vector<Expr>& i) { return min(at(0, i), at(1, i)); });
      case StepKind::Max: return ewise("max", [&](const std::vector<Expr>& i) { return max(at(0, i), at(1, i)); });
      case StepKind::Neg: return ewise("neg", [&](const std::vector<Expr>& i) { return -at(0, i); });
      case StepKind::Abs: return ewise("abs", [&](const std::vector<Expr>& i) { return abs(at(0, i)); });
      case StepKind::Sqrt: return ewise("sqrt", [&](const std::vector<Expr>& i) { return sqrt(at(0, i)); });
      case StepKind::Sign: return ewise("sign", [&](const std::vector<Expr>& i) {
          Expr x = at(0, i);
          return select(x > 0, 1.0f, x < 0, -1.0f, 0.0f);
        });
      case StepKind::Axpby: return ewise("axpby", [&](const std::vector<Expr>& i) {
          return cast<float>(at(0, i)) * at(1, i) + cast<float>(at(2, i)) * at(3, i);
        });
      case StepKind::Fill: {
        Expr s = scalar_slot(n.value);
        return ewise("fill", [&](const std::vector<Expr>&) { return s; });
      }
      case StepKind::Sum:
      case StepKind::SumSquares:
      case StepKind::MaxAbs:
      case StepKind::Dot: {
        Val a = stencil_input(arg(0));
        RDom r = full_domain(a.ext);
        std::vector<Expr> i = domain_point(r, a.ext.size());
        Expr x = cast<double>(call(a, i));
        Expr red;
        if (n.kind == StepKind::Sum) red = sum(x);
        else if (n.kind == StepKind::SumSquares) red = sum(x * x);
        else if (n.kind == StepKind::MaxAbs) red = maximum(abs(x));
        else {
          Val b = stencil_input(arg(1));
          red = sum(x * cast<double>(call(b, i)));
        }
        return define(to_string(n.kind), {}, [&](const std::vector<Expr>&) { return red; });
      }
    }
    internal_error << "unhandled step node " << to_string(n.kind);
    return Val();
  }

  const StepProgram& p_;
  Lowered out_;
  std::ostringstream key_;
  int counter_ = 0;
  std::unordered_map<const StepNode*, Val> vals_;
  std::unordered_map<const ExprNode*, std::pair<Val, int>> data_vals_;
  std::unordered_map<const ExprNode*, int> ir_ids_;
  std::set<std::string> materialized_;
};

}  // namespace

Lowered lower(const StepProgram& p) { return Lowerer(p).run(); }

}  // namespace proxc::hl
