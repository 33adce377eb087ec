#include "halide/lower.h"

#include <algorithm>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "fft/fft.h"
#include "ir/adjoint.h"
#include "ir/function.h"
#include "step/partition.h"
#include "support/error.h"

namespace proxc::internal::hl {

namespace {

using halide_ops::Ext;
using halide_ops::Graph;
using halide_ops::Val;
using IrExpr = proxc::internal::Expr;

const char* op_name(StepKind k) {
  switch (k) {
    case StepKind::Add: return "add";
    case StepKind::Sub: return "sub";
    case StepKind::Mul: return "mul";
    case StepKind::Div: return "div";
    case StepKind::Min: return "min";
    case StepKind::Max: return "max";
    case StepKind::Neg: return "neg";
    case StepKind::Abs: return "abs";
    case StepKind::Sqrt: return "sqrt";
    case StepKind::Sign: return "sign";
    case StepKind::Sum: return "sum";
    case StepKind::SumSquares: return "sum_squares";
    case StepKind::MaxAbs: return "max_abs";
    case StepKind::Dot: return "dot";
    default: return "";
  }
}

const char* function_name(FunctionKind k) { return to_string(k); }  // the table's keyword

std::vector<int> ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

// Operators whose value at a row reads the rows near it only (their bounds per strip of rows are
// the strip and a few rows of halo): not transpose, reshape, stack, warp, gather, black box or an
// FFT convolution, and not the boundaries that wrap or fold to the far edge (circular or
// replicate conv, grad with a boundary): Halide bounds those by both edges.
bool local_rows(const IrExpr& k) {
  for (const ExprNode* n : linear_order(k)) {
    switch (n->kind) {
      case ExprKind::Variable: case ExprKind::Constant: case ExprKind::MulElemwise:
      case ExprKind::Scale: case ExprKind::Add: case ExprKind::Sub: case ExprKind::Neg:
      case ExprKind::Crop:
      case ExprKind::MulColor:
      case ExprKind::Subsample:
      case ExprKind::PxwiseMatrixmult:
        break;
      case ExprKind::Grad:
        if (!n->str.empty()) return false;
        break;
      case ExprKind::Conv:
        if (n->str != "zero") return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

bool blocks_in_time(const StepProgram& p) {
  // $PROXC_TEMPORAL_BLOCKING=0: fused programs as before, each iterate at root (to measure it).
  const char* env = std::getenv("PROXC_TEMPORAL_BLOCKING");
  if (p.unrolled < 2 || p.unrolled > kMaxBlockedIterations || (env && std::string(env) == "0")) return false;
  int64_t rows = -1;
  for (const auto& [name, s] : p.outputs) {
    if (s->shape.empty()) continue;
    if (s->shape.size() < 2 || (rows >= 0 && s->shape[0] != rows)) return false;
    rows = s->shape[0];
  }
  for (const Step& n : p.nodes()) {
    const bool linear = n->kind == StepKind::Forward || n->kind == StepKind::Adjoint;
    if (is_reduction(n->kind) || n->kind == StepKind::CirculantSolve || n->kind == StepKind::Value ||
        (linear && !local_rows(n->expr))) {
      return false;
    }
    if (n->kind == StepKind::Prox && n->term) {
      const std::vector<int64_t>& axes = n->term->axes;
      if (n->term->kind == FunctionKind::UserProx || std::count(axes.begin(), axes.end(), 0) > 0) {
        return false;  // an extern stage; a group along the rows
      }
    }
  }
  return rows > 0;
}

namespace {

/// Walks the step program and its problem expressions and makes the Graph's
/// calls; keeps, for each slot the calls use, this program's value.
class Lowerer {
 public:
  // The program's equal nodes made one first (eliminate_common_subexpressions:
  // the solvers' programs compute some adjoints twice, for the update and a
  // residual, and the CG and check programs were not made so).
  Lowerer(const StepProgram& p, halide_ops::Schedule schedule, int min_extent, int device_fft)
      : p_(eliminate_common_subexpressions(p)), graph_(std::make_shared<Graph>(schedule, &record_)) {
    if (min_extent > 0) graph_->assume_min_extent(min_extent);
    const bool gpu = schedule == halide_ops::Schedule::Gpu || schedule == halide_ops::Schedule::GpuFloat;
    if (gpu && device_fft != 0) graph_->device_fft(device_fft);
    // $PROXC_GPU_STAGED_TAPS: the taps from which a GPU schedule's
    // convolutions stage their operand in shared memory (0: never), to
    // measure what staging buys on a GPU.
    if (const char* taps = std::getenv("PROXC_GPU_STAGED_TAPS"); gpu && taps && *taps) {
      char* end = nullptr;
      const long n = std::strtol(taps, &end, 10);
      if (*end == '\0' && n >= 0) graph_->staged_taps(static_cast<int>(n));
    }
    out_.schedule = schedule;
    out_.device_fft = gpu ? device_fft : 0;
    if (schedule == halide_ops::Schedule::Default && blocks_in_time(p_)) {
      graph_->temporal_blocking(p_.unrolled);
    }
  }

  Lowered run() {
    std::vector<Step> nodes = p_.nodes();
    std::unordered_map<const StepNode*, int> index;
    for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].get()] = static_cast<int>(i);
    std::unordered_map<const StepNode*, int> uses;
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const Step& a : nodes[i]->args) ++uses[a.get()];
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
      Val v = lower_node(n);
      // Which nodes are computed once into a buffer (at root) and which are
      // inlined into their users, recomputed where they are read: memory
      // traffic, not arithmetic, bounds these pipelines, so a value is
      // inlined when recomputing it reads little. cost(n) estimates the
      // loads of n's inlined expression per element: 1 for a buffer, 0 for a
      // scalar, the sum over the operands for pointwise nodes and prox
      // functions, the operator's taps times that for forward and adjoint.
      // A node used once is inlined up to kInlineOnce loads, a shared one up
      // to kInlineShared (each use pays it again); reductions, extern stages
      // and region boundaries are always computed once.
      double c = 0;
      for (const Step& a : n.args) {
        if (a->shape.empty()) continue;  // a scalar: loaded once, not per element
        c += cost_.count(a.get()) ? cost_.at(a.get()) : 1.0;
      }
      if (n.kind == StepKind::Forward || n.kind == StepKind::Adjoint) c *= operator_taps(n.expr);
      const bool inlinable = (is_pointwise(n.kind) || n.kind == StepKind::Prox ||
                              ((n.kind == StepKind::Forward || n.kind == StepKind::Adjoint) && c < kNever)) &&
                             !part.boundary[i];
      // An output used by other nodes too is computed once: its buffer is
      // written anyway, and its users read it there (Graph::output).
      const bool shared_output = outputs.count(&n) > 0 && uses[&n] > 1 && !n.shape.empty();
      const bool fuse = inlinable && !shared_output && c <= (uses[&n] <= 1 ? kInlineOnce : kInlineShared);
      if (!fuse && n.kind != StepKind::Input && n.kind != StepKind::Param && n.kind != StepKind::Constant) {
        graph_->materialize(v);
      } else if (fuse) {
        cost_[&n] = std::max(c, 1.0);
      }
      vals_[&n] = v;
    }
    for (const auto& [name, s] : p_.outputs) {
      const Val& v = vals_.at(s.get());
      Halide::Func f = graph_->output(name, v, extents(s->shape));
      out_.outputs.push_back({name, f, v.rank(), s->shape});
    }
    pair_outputs(nodes, index);
    fuse_loops(nodes, index);
    out_.graph = graph_;
    out_.pipeline = graph_->pipeline();
    out_.blocked_in_time = graph_->blocked_in_time();
    out_.key = record_.str();
    return std::move(out_);
  }

 private:
  // An output that is a pointwise function of the output just before it
  // (Pock–Chambolle's x̄ = 2x⁺ − x after x⁺) is computed with it, as one
  // Tuple-valued Func (Graph::pair_outputs): no second pass reading x⁺ back.
  void pair_outputs(const std::vector<Step>& nodes, const std::unordered_map<const StepNode*, int>& index) {
    auto node = [&](const Step& s) { return nodes[static_cast<size_t>(index.at(s.get()))].get(); };
    for (size_t k = 0; k + 1 < p_.outputs.size(); ++k) {
      const StepNode* a = node(p_.outputs[k].second);
      const StepNode* b = node(p_.outputs[k + 1].second);
      if (a == b || a->shape.size() < 2 || b->shape != a->shape || !is_pointwise(b->kind)) continue;
      bool reads_a = false;
      for (const Step& arg : b->args) reads_a = reads_a || node(arg) == a;
      if (reads_a && graph_->pair_outputs(static_cast<int>(k), static_cast<int>(k + 1))) ++k;
    }
  }

  // Array outputs computed in one loop over rows (Graph::fuse_outputs), in
  // groups of outputs of as many rows none of which depends on another: the
  // iteration of a primal-dual solver so updates all its dual variables in
  // one pass, reading the primal ones they share once. (An output reading
  // another pointwise is paired with it instead, see pair_outputs:
  // recomputing the other in a fused loop measured slower.)
  // At most this many stages to a compute_with group: Halide's lowering of a group grows faster
  // than the group (20 terms, 44 row sums: 13.9 s to compile in one group, 9.4 s in groups of 16).
  static constexpr size_t kMaxFused = 16;
  void fuse_loops(const std::vector<Step>& nodes, const std::unordered_map<const StepNode*, int>& index) {
    const size_t n = nodes.size();
    auto id = [&](const Step& s) { return index.at(s.get()); };
    // reach[i]: the nodes i depends on.
    std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
    for (size_t i = 0; i < n; ++i) {
      for (const Step& a : nodes[i]->args) {
        const size_t j = static_cast<size_t>(id(a));
        reach[i][j] = 1;
        for (size_t k = 0; k < n; ++k) reach[i][k] |= reach[j][k];
      }
    }
    // Greedily: each candidate (a node, its rows, a handle for `fuse`) joins the first group of
    // as many rows, under kMaxFused members, none of which it depends on or feeds, if fuse(the
    // group's first handle, its handle) takes it; else it starts a group.
    struct Candidate {
      size_t node;
      int64_t rows;
      int handle;
    };
    auto group = [&](const std::vector<Candidate>& candidates, const std::function<bool(int, int)>& fuse) {
      std::vector<std::vector<Candidate>> groups;
      for (const Candidate& c : candidates) {
        bool joined = false;
        for (std::vector<Candidate>& g : groups) {
          if (g[0].rows != c.rows || g.size() >= kMaxFused) continue;
          bool independent = true;
          for (const Candidate& m : g) independent = independent && !reach[m.node][c.node] && !reach[c.node][m.node];
          if (independent && fuse(g[0].handle, c.handle)) {
            g.push_back(c);
            joined = true;
            break;
          }
        }
        if (!joined) groups.push_back({c});
      }
    };
    std::vector<Candidate> outputs;
    std::set<size_t> placed;
    for (size_t k = 0; k < p_.outputs.size(); ++k) {
      const Step& s = p_.outputs[k].second;
      const size_t b = static_cast<size_t>(id(s));
      if (s->shape.size() >= 2 && placed.insert(b).second) outputs.push_back({b, s->shape[0], static_cast<int>(k)});
    }
    group(outputs, [&](int a, int b) { return graph_->fuse_outputs(a, b); });
    // Reductions of arrays of as many rows, none depending on another, share
    // one loop over rows too (Graph::fuse_reductions).
    std::vector<Candidate> reductions;
    for (size_t i = 0; i < n; ++i) {
      if (!is_reduction(nodes[i]->kind)) continue;
      const Shape& shape = nodes[i]->args[0]->shape;
      if (shape.size() >= 2) reductions.push_back({i, shape[0], static_cast<int>(i)});
    }
    group(reductions, [&](int a, int b) {
      return graph_->fuse_reductions(vals_.at(nodes[static_cast<size_t>(a)].get()), vals_.at(nodes[static_cast<size_t>(b)].get()));
    });
  }

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

  // Inlining thresholds (loads per element; see run()).
  static constexpr double kInlineOnce = 24, kInlineShared = 8, kNever = 1e9;

  // The reads per output element of the linear operator K's stencils: the
  // taps of its convolutions and gradients multiplied along chains, summed
  // over branches. Operators with extern stages (FFT convolutions, black
  // boxes) are never inlined (kNever); wide direct kernels rarely are, by
  // their tap count.
  // Bottom-up over K's linear part, each node once: a DAG that shares a node
  // counts its reads on every path without walking every path.
  double operator_taps(const IrExpr& k) {
    std::unordered_map<const ExprNode*, double> taps;
    for (const ExprNode* n : linear_order(k)) {
      if (!n->has_variable) continue;
      double inner = n->is_variable() ? 1 : 0;
      for (const IrExpr& a : n->linear_args()) {
        auto it = taps.find(a.get());
        inner += it == taps.end() ? 0 : it->second;
      }
      double t = inner;
      switch (n->kind) {
        case ExprKind::Conv: {
          const Shape& ks = n->args[0]->shape;  // the taps of each output: the first dims axes
          int64_t kernel_taps = num_elements(Shape(ks.begin(), ks.begin() + static_cast<long>(n->ints[0])));
          if (separable(*n)) kernel_taps = ks[0] + ks[1];  // two passes
          t = kernel_taps >= kFftConvTaps && is_circular_conv(*n) ? kNever : static_cast<double>(kernel_taps) * inner;
          break;
        }
        case ExprKind::Grad: t = 2.0 * inner; break;
        case ExprKind::Warp: t = 4.0 * inner; break;
        case ExprKind::MulColor: t = 3.0 * inner; break;
        case ExprKind::PxwiseMatrixmult: {  // M terms per output forward, N in the adjoint
          const Shape& as = n->args[0]->shape;
          t = static_cast<double>(std::max(as[as.size() - 2], as.back())) * inner;
          break;
        }
        case ExprKind::BlackBox: t = kNever; break;
        default: break;
      }
      taps[n] = t;
    }
    auto it = taps.find(k.get());
    return it == taps.end() ? 0 : it->second;
  }

  // ---- Slots: run-time scalars, extents and data ----

  int scalar_slot(double value) {
    out_.scalar_values.push_back(value);
    return static_cast<int>(out_.scalar_values.size() - 1);
  }
  Val scalar(double value) { return graph_->scalar(scalar_slot(value)); }

  // Axes 2 and beyond of at most kShortAxis entries (gradient components, colour channels) are
  // compile-time extents, so that their loops unroll; every other extent is a run-time slot, one
  // per axis and value: arrays of equal extents along an axis share its slot, and Halide then
  // knows their loops to have equal bounds (fused loops without guards, reductions sharing one
  // domain). The slots are part of the pipeline's key: it serves only programs whose extents are
  // equal where this one's are.
  static constexpr int64_t kShortAxis = 4;
  Ext extents(const Shape& s) {
    Ext e;
    for (size_t i = 0; i < s.size(); ++i) {
      const int64_t x = s[i];
      internal_assert(x > 0 && x < (int64_t{1} << 31)) << "extent " << x << " out of Halide's int range";
      e.push_back(i >= 2 && x <= kShortAxis ? static_cast<int>(-x) : extent_slot(i, x));
    }
    return e;
  }
  int extent_slot(size_t axis, int64_t x) {
    auto [it, added] =
        extent_slots_.emplace(std::make_pair(axis, x), static_cast<int>(out_.extent_values.size()));
    if (added) out_.extent_values.push_back(x);
    return it->second;
  }

  Val data(const ExprNode* c) { return data_slot(c, extents(c->shape), &data_vals_); }

  // pxwise_matrixmult's matrices: the pixels' axes as the operand's; N and M compile-time up to 16
  // entries (strided loads then shuffled out of dense ones), else each under 8 (no run-time extent
  // under 8: assume_min_extent), run-time from 8 on (gathers: LLVM took minutes over Halide 21's
  // dense loads of 8 × 84 at 28 × 3). The sums are unrolled either way.
  Val pixel_matrices(const ExprNode* c) {
    const Shape& s = c->shape;
    Ext e = extents(Shape(s.begin(), s.end() - 2));
    for (size_t i = s.size() - 2; i < s.size(); ++i) {
      const bool known = s[s.size() - 2] * s.back() <= 16 || s[i] < Graph::kVectorLanes;
      e.push_back(known ? static_cast<int>(-s[i]) : extent_slot(i, s[i]));
    }
    return data_slot(c, e, &matrix_vals_);
  }

  // A direct convolution's kernel (fewer than kFftConvTaps taps): data of
  // compile-time extents, so its taps' loops have known trip counts and the
  // pipeline's run-time extents are the images' alone (assume_min_extent).
  // A kernel of another size is another pipeline.
  Val kernel(const ExprNode* c) {
    Ext e;
    for (int64_t x : c->shape) e.push_back(static_cast<int>(-x));
    return data_slot(c, e, &kernel_vals_);
  }

  // Whether conv node n convolves by a 2-D kernel of rank one in two passes
  // (separable_conv): a direct convolution over both of the kernel's axes,
  // K0 + K1 taps under kFftConvTaps (a circular convolution of more runs by
  // FFT), the kernel's values of rank one (rank_one_factors, once per kernel).
  bool separable(const ExprNode& n) {
    const ExprNode* k = n.args[0].get();
    const Shape& ks = k->shape;
    if (ks.size() != 2 || n.ints.size() != 1 || n.ints[0] != 2 || ks[0] + ks[1] >= kFftConvTaps ||
        !k->is_constant()) {
      return false;
    }
    auto it = rank_one_.find(k);
    if (it == rank_one_.end()) it = rank_one_.emplace(k, rank_one_factors(k->constant->array)).first;
    return it->second.has_value();
  }

  // conv node n by its kernel's factors k = u vᵀ: a pass along axis 0 by u
  // (a kernel of shape (K0, 1)), then one along axis 1 by v (shape (1, K1)),
  // each with n's boundary; the adjoint's passes in the reverse order. Each
  // factor is a data slot of its own (Lowered::factors).
  Val separable_conv(const ExprNode& n, const Val& x, bool adjoint) {
    const ExprNode* k = n.args[0].get();
    auto it = factor_vals_.find(k);
    if (it == factor_vals_.end()) {
      std::pair<Array, Array>& f = *rank_one_.at(k);  // separable(n) found them; moved into the slots
      Val slots[2];
      for (int axis = 0; axis < 2; ++axis) {
        auto d = std::make_shared<ConstantData>();
        d->array = std::move(axis == 0 ? f.first : f.second);
        d->source.type = ConstantSource::Type::Inline;
        IrExpr node = make_constant(d, k->name_hint + (axis == 0 ? "_column" : "_row"));
        out_.factor_nodes.push_back(node);
        out_.factors[node.get()] = {k, axis};
        slots[axis] = kernel(node.get());
      }
      it = factor_vals_.emplace(k, std::make_pair(slots[0], slots[1])).first;
    }
    const Ext e = extents(n.shape);
    auto pass = [&](const Val& f, const Val& in) {
      return is_circular_conv(n) ? graph_->conv(f, in, adjoint, e)
                                 : graph_->conv_general(f, in, adjoint, boundary_code(n), 2, e);
    };
    const auto& [u, v] = it->second;
    return adjoint ? pass(u, pass(v, x)) : pass(v, pass(u, x));
  }

  // Constant c as a data slot of extents e, once per slot kind (*vals).
  Val data_slot(const ExprNode* c, const Ext& e, std::unordered_map<const ExprNode*, Val>* vals) {
    auto it = vals->find(c);
    if (it != vals->end()) return it->second;
    int id = static_cast<int>(out_.data_nodes.size());
    out_.data_nodes.push_back(c);
    return (*vals)[c] = graph_->data(id, e);
  }

  Val param_at(const proxc::internal::Param& p) { return p.array ? data(p.array.get()) : scalar(p.scalar); }

  // ---- Linear operators (problem expressions) ----

  Val forward(const IrExpr& k, const std::unordered_map<const ExprNode*, Val>& vars, bool affine) {
    // K's linear part bottom-up (ir/traverse.h), each node once; an operand
    // without a variable (a constant part of a vstack) is built where it is used.
    std::unordered_map<const ExprNode*, Val> memo = vars;
    std::function<Val(const IrExpr&)> value = [&](const IrExpr& e) -> Val {
      auto it = memo.find(e.get());
      return it != memo.end() ? it->second : forward_node(e.get(), value, affine);
    };
    for (const ExprNode* n : linear_order(k)) {
      if (!memo.count(n)) memo[n] = forward_node(n, value, affine);
    }
    return memo.at(k.get());
  }

  Val forward_node(const ExprNode* n, const std::function<Val(const IrExpr&)>& go, bool affine) {
    const auto& a = n->args;
    auto operand = [&](const IrExpr& e) -> Val {
      if (e->has_variable) return go(e);
      return affine ? data(e.get()) : graph_->zeros(extents(e->shape));
    };
    switch (n->kind) {
      case ExprKind::Variable: internal_error << "unbound variable in forward"; break;
      case ExprKind::Constant: return data(n);
      case ExprKind::Grad: {
        Val x = go(a[0]);
        if (!n->str.empty()) {
          return graph_->grad_bounded(x, static_cast<int>(n->ints[0]), n->str == "circular", false,
                                      extents(n->shape));
        }
        return graph_->grad(x, static_cast<int>(n->ints[0]), extents(n->shape));
      }
      case ExprKind::Conv: {
        if (separable(*n)) return separable_conv(*n, go(a[1]), false);
        if (!is_circular_conv(*n)) {
          Val k = kernel(a[0].get());
          return graph_->conv_general(k, go(a[1]), false, boundary_code(*n), static_cast<int>(n->ints[0]),
                                      extents(n->shape));
        }
        if (use_fft(a[0].get())) return fft_conv(a[0].get(), go(a[1]), false, n->shape);
        Val k = kernel(a[0].get());
        Val x = go(a[1]);
        return graph_->conv(k, x, false, extents(n->shape));
      }
      case ExprKind::MulElemwise: {
        Val w = data(a[0].get());
        Val x = go(a[1]);
        return graph_->binary("mul", w, x, extents(n->shape));
      }
      case ExprKind::Subsample: return graph_->subsample(go(a[0]), ints(n->ints), extents(n->shape));
      case ExprKind::Scale: {
        Val x = go(a[0]);
        Val s = scalar(n->scalar);
        return graph_->binary("mul", s, x, extents(n->shape));
      }
      case ExprKind::Add:
      case ExprKind::Sub: {
        Val x = operand(a[0]);
        Val y = operand(a[1]);
        return graph_->binary(n->kind == ExprKind::Sub ? "sub" : "add", x, y, extents(n->shape));
      }
      case ExprKind::Neg: return graph_->unary("neg", go(a[0]), extents(n->shape));
      case ExprKind::VStack: {
        std::vector<Val> parts;
        for (const IrExpr& p : a) parts.push_back(go(p));
        return graph_->stack(parts, extents(n->shape));
      }
      case ExprKind::Reshape: return graph_->reshape(go(a[0]), extents(n->shape));
      case ExprKind::Transpose: return graph_->transpose(go(a[0]), ints(n->ints), false, extents(n->shape));
      case ExprKind::Crop: return graph_->crop(go(a[0]), ints(n->ints), extents(n->shape));
      case ExprKind::MulColor: return color(n, go(a[0]), false, extents(n->shape));
      case ExprKind::PxwiseMatrixmult:
        return graph_->pixel_matrix(pixel_matrices(a[0].get()), go(a[1]), false, extents(n->shape),
                                    static_cast<int>(a[0]->shape.back()));
      case ExprKind::Warp: {
        Val x = go(a[0]);
        Val h = data(a[1].get());
        return graph_->warp(h, x, extents(n->shape));
      }
      case ExprKind::UnevenSubsample: {
        Val x = go(a[0]);
        return graph_->uneven_subsample(x, data(a[1].get()), extents(n->shape));
      }
      case ExprKind::BlackBox:
        return graph_->black_box(go(a[0]), n->str, false, extents(a[0]->shape), extents(n->shape));
    }
    internal_error << "unhandled operator " << to_string(n->kind);
    return Val();
  }

  // Graph::conv_general's boundary: 0 circular, 1 zero, 2 replicate.
  static int boundary_code(const ExprNode& n) { return n.str.empty() ? 0 : n.str == "zero" ? 1 : 2; }
  static bool use_fft(const ExprNode* kernel) { return num_elements(kernel->shape) >= kFftConvTaps; }

  // Convolution by FFT; the kernel's transfer function is an otf slot (one per kernel).
  Val fft_conv(const ExprNode* kernel, const Val& x, bool adjoint, const Shape& shape) {
    const int kr = kernel->rank();
    Shape dims(shape.begin(), shape.begin() + kr);
    auto it = otf_slots_.find({kernel, dims});
    if (it == otf_slots_.end()) {
      it = otf_slots_.emplace(std::make_pair(kernel, dims), static_cast<int>(out_.otf_sources.size())).first;
      out_.otf_sources.push_back({kernel, dims});
    }
    return graph_->fft_conv(x, it->second, kr, adjoint, extents(shape));
  }

  Val color(const ExprNode* n, const Val& x, bool adjoint, const Ext& ext) {
    if (n->args.size() > 1) return graph_->color(x, data(n->args[1].get()), adjoint, ext);
    double lit[9];
    named_color_matrix(n->str, lit);
    int first = scalar_slot(lit[0]);
    for (int i = 1; i < 9; ++i) scalar_slot(lit[i]);
    return graph_->color_slots(x, first, adjoint, ext);
  }

  // Kᵀ y for variable `var` (ir/adjoint.h: the driver the emulator uses too).
  Val adjoint(const IrExpr& k, const Val& y, const ExprNode* var) {
    auto sum = [&](std::vector<Val> parts, const ExprNode* n) { return graph_->sum(parts, extents(n->shape)); };
    auto node = [&](const ExprNode* n, Val g, const std::function<void(const IrExpr&, Val)>& push) {
      adjoint_node(n, g, push);
    };
    auto reached = reverse_mode<Val>(k, y, node, sum);
    auto it = reached.find(var);
    return it == reached.end() ? graph_->zeros(extents(var->shape)) : it->second;
  }

  // The adjoint of one operator node applied to g: push(operand, share) per operand.
  void adjoint_node(const ExprNode* n, const Val& g, const std::function<void(const IrExpr&, Val)>& push) {
    const auto& a = n->args;
    switch (n->kind) {
      case ExprKind::Variable:
      case ExprKind::Constant: return;
      case ExprKind::Grad:
        if (!n->str.empty()) {
          push(a[0], graph_->grad_bounded(g, static_cast<int>(n->ints[0]), n->str == "circular", true,
                                          extents(a[0]->shape)));
          return;
        }
        push(a[0], graph_->grad_t(g, static_cast<int>(n->ints[0]), extents(a[0]->shape)));
        return;
      case ExprKind::Conv: {
        if (separable(*n)) {
          push(a[1], separable_conv(*n, g, true));
          return;
        }
        if (!is_circular_conv(*n)) {
          Val k = kernel(a[0].get());
          push(a[1], graph_->conv_general(k, g, true, boundary_code(*n), static_cast<int>(n->ints[0]),
                                          extents(a[1]->shape)));
          return;
        }
        if (use_fft(a[0].get())) {
          push(a[1], fft_conv(a[0].get(), g, true, a[1]->shape));
          return;
        }
        Val k = kernel(a[0].get());
        push(a[1], graph_->conv(k, g, true, extents(a[1]->shape)));
        return;
      }
      case ExprKind::MulElemwise: {
        Val w = data(a[0].get());
        push(a[1], graph_->binary("mul", w, g, extents(n->shape)));
        return;
      }
      case ExprKind::Subsample: push(a[0], graph_->upsample(g, ints(n->ints), extents(a[0]->shape))); return;
      case ExprKind::Scale: {
        Val s = scalar(n->scalar);
        push(a[0], graph_->binary("mul", s, g, extents(n->shape)));
        return;
      }
      case ExprKind::Add: push(a[0], g); push(a[1], g); return;
      case ExprKind::Sub:
        push(a[0], g);
        if (a[1]->has_variable) push(a[1], graph_->unary("neg", g, extents(n->shape)));
        return;
      case ExprKind::Neg: push(a[0], graph_->unary("neg", g, extents(n->shape))); return;
      case ExprKind::VStack: {
        std::vector<Ext> parts;
        for (const IrExpr& p : a) parts.push_back(extents(p->shape));
        for (size_t k = 0; k < a.size(); ++k) {
          if (a[k]->has_variable) push(a[k], graph_->unstack(g, parts, static_cast<int>(k)));
        }
        return;
      }
      case ExprKind::Reshape: push(a[0], graph_->reshape(g, extents(a[0]->shape))); return;
      case ExprKind::Transpose: push(a[0], graph_->transpose(g, ints(n->ints), true, extents(a[0]->shape))); return;
      case ExprKind::Crop: push(a[0], graph_->pad(g, ints(n->ints), extents(a[0]->shape))); return;
      case ExprKind::MulColor: push(a[0], color(n, g, true, extents(n->shape))); return;
      case ExprKind::PxwiseMatrixmult:
        push(a[1], graph_->pixel_matrix(pixel_matrices(a[0].get()), g, true, extents(a[1]->shape),
                                        static_cast<int>(a[0]->shape[a[0]->shape.size() - 2])));
        return;
      case ExprKind::Warp: {
        Val h = data(a[1].get());
        push(a[0], graph_->warp_t(h, g, extents(a[0]->shape)));
        return;
      }
      case ExprKind::UnevenSubsample:
        push(a[0], graph_->uneven_subsample_t(g, data(a[1].get()), extents(a[0]->shape)));
        return;
      case ExprKind::BlackBox:
        push(a[0], graph_->black_box(g, n->str, true, extents(n->shape), extents(a[0]->shape)));
        return;
    }
  }

  // ---- Prox and value ----

  Graph::Term term(const FunctionTerm& t) {
    Val alpha = scalar(t.alpha), beta = scalar(t.beta), gamma = scalar(t.gamma), d = scalar(t.d);
    Val b = param_at(t.b), c = param_at(t.c);
    if (t.kind == FunctionKind::UserProx) return graph_->user_term(t.user_name, t.user_params, alpha, beta, gamma, d, b, c);
    Val lower = param_at(t.lower), upper = param_at(t.upper);
    Val counts, weight;
    if (t.counts) counts = data(t.counts.get());
    if (t.weight) weight = t.weight->rank() == 0 ? scalar(static_cast<double>(t.weight->constant->array.data[0]))
                                                  : data(t.weight.get());
    return graph_->term(function_name(t.kind), alpha, beta, gamma, d, b, c, lower, upper, counts, weight,
                        ints(t.axes));
  }

  // ---- Step nodes ----

  Val lower_node(const StepNode& n) {
    auto arg = [&](size_t i) -> const Val& { return vals_.at(n.args[i].get()); };
    auto binary = [&](StepKind k) { return graph_->binary(op_name(k), arg(0), arg(1), extents(n.shape)); };
    auto unary = [&](StepKind k) { return graph_->unary(op_name(k), arg(0), extents(n.shape)); };
    switch (n.kind) {
      case StepKind::Input: {
        out_.input_shapes[n.name] = n.shape;
        return graph_->input(n.name, extents(n.shape));
      }
      case StepKind::Param: return graph_->param(n.name);
      case StepKind::Constant: return graph_->constant(scalar_slot(n.value));
      case StepKind::Data: return data(n.expr.get());
      case StepKind::Forward: {
        std::unordered_map<const ExprNode*, Val> vars;
        for (size_t i = 0; i < n.vars.size(); ++i) vars[n.vars[i].get()] = arg(i);
        return forward(n.expr, vars, n.index != 0);
      }
      case StepKind::Adjoint: return adjoint(n.expr, arg(0), n.vars[static_cast<size_t>(n.index)].get());
      case StepKind::Prox: {
        Graph::Term t = term(*n.term);
        return graph_->prox(t, arg(0), arg(1));
      }
      case StepKind::Value: {
        Graph::Term t = term(*n.term);
        Val inf = scalar(std::numeric_limits<double>::infinity());
        return graph_->value(t, arg(0), inf, kIndicatorSlack);
      }
      case StepKind::CirculantSolve: {
        const ExprNode* k = n.expr.get();
        int kr = k->rank();
        int slot = static_cast<int>(out_.spectra_sources.size());
        out_.spectra_sources.push_back({k, Shape(n.shape.begin(), n.shape.begin() + kr)});
        return graph_->circulant_solve(arg(0), slot, kr, arg(1), arg(2), extents(n.shape));
      }
      case StepKind::Add: case StepKind::Sub: case StepKind::Mul: case StepKind::Div: case StepKind::Min:
      case StepKind::Max:
        return binary(n.kind);
      case StepKind::Neg: case StepKind::Abs: case StepKind::Sqrt: case StepKind::Sign:
        return unary(n.kind);
      case StepKind::Axpby: return graph_->axpby(arg(0), arg(1), arg(2), arg(3), extents(n.shape));
      case StepKind::Fill: return graph_->fill(scalar(n.value), extents(n.shape));
      case StepKind::Sum:
      case StepKind::SumSquares:
      case StepKind::MaxAbs:
      case StepKind::Dot: {
        const Val gate = is_gated(n) ? vals_.at(n.args.back().get()) : Val();
        return graph_->reduce(op_name(n.kind), arg(0), n.kind == StepKind::Dot ? arg(1) : Val(), gate);
      }
    }
    internal_error << "unhandled step node " << to_string(n.kind);
    return Val();
  }

  const StepProgram p_;  // with its equal nodes made one
  std::ostringstream record_;
  std::shared_ptr<Graph> graph_;
  Lowered out_;
  std::map<std::pair<size_t, int64_t>, int> extent_slots_;  ///< see extents()
  std::unordered_map<const StepNode*, Val> vals_;
  std::unordered_map<const StepNode*, double> cost_;  // inlined nodes: loads per element
  std::unordered_map<const ExprNode*, Val> data_vals_, kernel_vals_, matrix_vals_;
  std::unordered_map<const ExprNode*, std::optional<std::pair<Array, Array>>> rank_one_;  // by kernel
  std::unordered_map<const ExprNode*, std::pair<Val, Val>> factor_vals_;  // by kernel: u's slot, v's
  std::map<std::pair<const ExprNode*, Shape>, int> otf_slots_;
};

}  // namespace

std::optional<std::pair<Array, Array>> rank_one_factors(const Array& k) {
  if (k.shape.size() != 2 || k.shape[0] < 2 || k.shape[1] < 2) return std::nullopt;
  const int64_t n0 = k.shape[0], n1 = k.shape[1];
  auto at = [&](int64_t i, int64_t j) {
    return static_cast<double>(k.data[static_cast<size_t>(i * n1 + j)]);
  };
  int64_t r = 0, c = 0;
  for (int64_t i = 0; i < n0; ++i) {
    for (int64_t j = 0; j < n1; ++j) {
      if (!std::isfinite(at(i, j))) return std::nullopt;
      if (std::abs(at(i, j)) > std::abs(at(r, c))) r = i, c = j;
    }
  }
  const double pivot = at(r, c);
  if (pivot == 0) return std::nullopt;
  std::pair<Array, Array> f{Array(Shape{n0, 1}), Array(Shape{1, n1})};
  for (int64_t i = 0; i < n0; ++i) f.first.data[static_cast<size_t>(i)] = static_cast<float>(at(i, c));
  for (int64_t j = 0; j < n1; ++j)
    f.second.data[static_cast<size_t>(j)] = static_cast<float>(at(r, j) / pivot);
  // Within 4·eps32·|pivot| of every tap, with the factors as the pipeline reads them (float).
  const double tolerance = 4 * static_cast<double>(std::numeric_limits<float>::epsilon()) * std::abs(pivot);
  for (int64_t i = 0; i < n0; ++i) {
    for (int64_t j = 0; j < n1; ++j) {
      const double uv = static_cast<double>(f.first.data[static_cast<size_t>(i)]) *
                        static_cast<double>(f.second.data[static_cast<size_t>(j)]);
      if (std::abs(uv - at(i, j)) > tolerance) return std::nullopt;
    }
  }
  return f;
}

Lowered lower(const StepProgram& p, halide_ops::Schedule schedule, int device_fft) {
  // Most programs have no run-time extent under 8 (Graph::assume_min_extent:
  // vector loops without tail copies, a third less code to compile). The
  // promise is part of the pipeline's key, so a pipeline compiled with it
  // only serves programs that keep it.
  // Programs whose run-time extents are all at least Graph::kWideLanes
  // promise that: their direct convolutions sum taps over wide vectors.
  if (schedule == halide_ops::Schedule::Default) {
    for (int min_extent : {Graph::kWideLanes, Graph::kVectorLanes}) {
      Lowered L = Lowerer(p, schedule, min_extent, device_fft).run();
      if (std::all_of(L.extent_values.begin(), L.extent_values.end(),
                      [&](int64_t e) { return e >= min_extent; })) {
        return L;
      }
    }
  }
  return Lowerer(p, schedule, 0, device_fft).run();
}

}  // namespace proxc::internal::hl
