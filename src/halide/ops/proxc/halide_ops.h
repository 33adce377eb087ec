/// \file
/// proxc's Halide-op library: the functions that build every operator, its
/// adjoint, every prox function, value and step-program node as Halide Funcs.
///
/// This header is the whole of it, and it needs nothing but Halide.h (and the
/// C header proxc/black_box.h beside it). proxc's
/// JIT lowering (src/halide/lower.cpp) builds its pipelines only through a
/// `Graph`, and while it does so the Graph writes each call it receives as a
/// line of C++. That text, wrapped in `main()`, is `Module::source()`: a
/// standalone program that makes the same calls on the same functions and so
/// builds the same pipeline, which is why the two cannot drift.
///
///     Graph g;
///     Val x = g.input("x", {0, 1});
///     Val d = g.grad(x, 2, {2, 3, 4});
///     g.output("dx", d);
///     return g.generate(argc, argv);   // writes NAME.a and NAME.h
///
/// Conventions. Arrays use numpy axis order (the last axis varies fastest);
/// Funcs take their arguments reversed (Halide's first dimension is the
/// innermost). Every size is a run-time `Param<int>` "extent slot" named
/// e<i>; every scalar of the problem is a `Param<float>` "scalar slot" s<i>;
/// data arrays are ImageParams data<i>; so one compiled pipeline serves any
/// image size, data or scalar values. An `Ext` lists extent slots.
#pragma once

#include <Halide.h>

#include "proxc/black_box.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace proxc::halide_ops {

/// Extents of an array, numpy order: an entry i ≥ 0 is extent slot i (a
/// run-time size); an entry < 0 is the compile-time extent −i (short
/// trailing axes: gradient components, colour channels).
using Ext = std::vector<int>;

/// A lowered value: a Func over numpy-order coordinates and its extents.
/// Rank 0 values are scalars (float for scalar slots, double otherwise).
struct Val {
  std::string id;  ///< its variable in the recorded source ("v12"); empty inside ops
  Halide::Func f;
  std::vector<Halide::Expr> ext;
  std::vector<Halide::Var> vars;  ///< numpy order
  bool small_inner = false;       ///< the last axis is short (grad components, colour channels)
  bool is_buffer = false;         ///< a wrapper over an input or data buffer
  int unroll_from = 2;            ///< short axes from this one on may be unrolled
  int loads = -1;                 ///< loads per element when inlined (pointwise of buffers); -1: more
  int lanes = 0;                  ///< vector width at root (0: Graph::kVectorLanes)
  int rank() const { return static_cast<int>(ext.size()); }
  bool defined() const { return f.defined(); }
};

/// Coordinates of flat index i in a C-order array of extents ext; callers
/// guarantee 0 <= i < the product of ext (< 2^31). A division by a run-time extent is a double division and a
/// floor, which vectorizes (an int32 vector division by a run-time value is
/// eight scalar divisions); it is exact: for i = qn + r (0 <= r < n) the
/// quotient i/n lies within [q, q + 1 - 1/n], and since (q + 1)n <= i + n <
/// 2^32 < 2^53, 1/n is more than half an ulp of q + 1, so the rounded quotient
/// is at least q and below q + 1. A compile-time extent keeps the integer
/// division (a multiply and shifts). Each coordinate is clamped to its
/// axis, which changes no value of an i in range but tells Halide's bounds
/// inference the region read (from i - qn alone it would infer
/// [-(max q)n, max i]).
inline std::vector<Halide::Expr> unravel(Halide::Expr i, const std::vector<Halide::Expr>& ext) {
  std::vector<Halide::Expr> c(ext.size());
  for (size_t a = ext.size(); a-- > 0;) {
    if (a == 0) {
      c[a] = Halide::clamp(i, 0, ext[a] - 1);  // what is left: below ext[0]
      break;
    }
    Halide::Expr q = Halide::Internal::is_const(ext[a])
                         ? i / ext[a]
                         : Halide::cast<int>(Halide::floor(Halide::cast<double>(i) / Halide::cast<double>(ext[a])));
    c[a] = Halide::clamp(i - q * ext[a], 0, ext[a] - 1);
    i = q;
  }
  return c;
}

/// Default: proxc's hand-written CPU schedule (vectorized, parallel, values
/// that are read at several places computed at root). None: no schedule at
/// all, for an autoscheduler.
enum class Schedule { Default, None };

class Graph {
 public:
  explicit Graph(Schedule schedule = Schedule::Default, std::ostream* record = nullptr)
      : schedule_(schedule), record_(record) {}

  /// The vector width of the default schedule (float32 lanes).
  static constexpr int kVectorLanes = 8;
  /// Rows of an image per parallel task of the default schedule. One row
  /// per task made Halide's thread pool take its lock once per row: at 512²
  /// a third of an iteration went to handing out tasks. Strips of 8 to 64
  /// rows all measured the same; 8 leaves a 512-row image 64 tasks to share.
  static constexpr int kRowsPerTask = 8;
  /// The vector width of a direct convolution when every run-time extent is
  /// at least this (assume_min_extent): four vectors of 8 lanes accumulate
  /// each tap at once. With one, each tap waited for the last one's
  /// multiply-add (its latency, not the machine's throughput, bound it).
  static constexpr int kWideLanes = 32;

  /// The target proxc compiles for: `t` with LLVM's own loop vectorizer and
  /// unroller off (Halide 15 and later default to that; the default schedule
  /// vectorizes and unrolls itself, and those passes only lengthen the
  /// compile, by about a tenth here) unless it names enable_llvm_loop_opt.
  static Halide::Target with_default_features(Halide::Target t) {
    if (!t.has_feature(Halide::Target::EnableLLVMLoopOpt)) t.set_feature(Halide::Target::DisableLLVMLoopOpt);
    return t;
  }

  /// A promise that every run-time extent the pipeline runs with is at
  /// least n (the caller keeps it: proxc keys compiled pipelines on it, and
  /// Halide checks the outputs' extents when it runs). With n >= 8 the
  /// vectorized loops need no tail copies: the last vector of a row shifts
  /// inwards, and a reduction takes each row's remainder in its vector loop
  /// (less code: LLVM's compile time is most of the JIT's). Call it first.
  void assume_min_extent(int n) {
    if (record_) *record_ << "  g.assume_min_extent(" << n << ");\n";
    min_extent_ = n;
  }

  // ---- Slots and buffers ----

  /// Extent slot i (created on first use), or the constant −i when i < 0.
  Halide::Expr extent(int i) { return i < 0 ? Halide::Expr(-i) : slot(extents_, i, "e"); }
  std::vector<Halide::Expr> extents(const Ext& e) {
    std::vector<Halide::Expr> out;
    for (int i : e) out.push_back(extent(i));
    return out;
  }
  /// Scalar slot i as a float Expr.
  Halide::Expr scalar_expr(int i) { return slot(scalars_, i, "s"); }

  /// A float scalar (scalar slot i).
  Val scalar(int i) {
    Halide::Expr s = scalar_expr(i);
    return rec(define0("scalar", s), "scalar", i);
  }
  /// A double scalar holding scalar slot i (a step program's constant).
  Val constant(int i) {
    Halide::Expr s = scalar_expr(i);
    return rec(define0("const", Halide::cast<double>(s)), "constant", i);
  }
  /// A double run-time parameter (named p_<name>).
  Val param(const std::string& name) {
    auto it = params_.find(name);
    if (it == params_.end()) it = params_.emplace(name, Halide::Param<double>("p_" + name)).first;
    Halide::Expr e = it->second;
    return rec(define0("param", e), "param", name);
  }
  /// A float32 input buffer (named in_<name>).
  Val input(const std::string& name, const Ext& ext) {
    auto it = inputs_.find(name);
    if (it == inputs_.end()) {
      it = inputs_.emplace(name, Halide::ImageParam(Halide::Float(32), static_cast<int>(ext.size()), "in_" + name)).first;
    }
    buffer_ext_[it->second.name()] = ext;
    dense_strides(it->second, ext);
    return rec(buffer("input_" + name, it->second, ext), "input", name, ext);
  }
  /// Data array slot i (a constant of the problem: b, a kernel, a mask).
  Val data(int i, const Ext& ext) {
    auto it = data_.find(i);
    if (it == data_.end()) {
      it = data_.emplace(i, Halide::ImageParam(Halide::Float(32), static_cast<int>(ext.size()), "data" + std::to_string(i)))
               .first;
    }
    buffer_ext_[it->second.name()] = ext;
    dense_strides(it->second, ext);
    return rec(buffer("data_f" + std::to_string(i), it->second, ext), "data", i, ext);
  }

  // ---- Pointwise ----

  Val zeros(const Ext& ext) {
    return rec(define("zero", extents(ext), [](const Coords&) { return Halide::Expr(0.0f); }), "zeros", ext);
  }
  /// Every entry equal to the float scalar s.
  Val fill(const Val& s, const Ext& ext) {
    return rec(define("fill", extents(ext), [&](const Coords&) { return at(s, {}); }), "fill", s, ext);
  }
  /// add, sub, mul, div, min, max; a rank-0 operand is broadcast.
  Val binary(const std::string& op, const Val& a, const Val& b, const Ext& ext) {
    std::function<Halide::Expr(Halide::Expr, Halide::Expr)> fn;
    if (op == "add") fn = [](Halide::Expr x, Halide::Expr y) { return x + y; };
    else if (op == "sub") fn = [](Halide::Expr x, Halide::Expr y) { return x - y; };
    else if (op == "mul") fn = [](Halide::Expr x, Halide::Expr y) { return x * y; };
    else if (op == "div") fn = [](Halide::Expr x, Halide::Expr y) { return x / y; };
    else if (op == "min") fn = [](Halide::Expr x, Halide::Expr y) { return Halide::min(x, y); };
    else if (op == "max") fn = [](Halide::Expr x, Halide::Expr y) { return Halide::max(x, y); };
    else fail("binary: unknown operation " + op);
    // By a scalar: one reciprocal per run, then a multiplication per element
    // (a division's throughput is a tenth of a multiplication's; the result
    // is within 1.5 ulp of x / y instead of 0.5). At 512², where an
    // iteration is bound by its arithmetic, Pock–Chambolle's x-update
    // divides by 1 + τ: ≈ 9 % of the iteration (A/B, best of 8).
    if (op == "div" && b.rank() == 0) fn = [](Halide::Expr x, Halide::Expr y) { return x * (1.0f / y); };
    // An array and a (double) scalar: float32 arithmetic, the scalar rounded
    // to float once per run, as axpby's (in double, each element was
    // widened, multiplied at half the vector width, and narrowed back).
    const bool mixed = (a.rank() == 0) != (b.rank() == 0);
    auto operand = [&](const Val& o, const Coords& i) {
      return mixed && o.rank() == 0 ? Halide::cast<float>(at(o, i)) : at(o, i);
    };
    Val v = define(op, extents(ext), [&](const Coords& i) { return fn(operand(a, i), operand(b, i)); });
    v.loads = inline_loads({&a, &b});
    return rec(v, "binary", op, a, b, ext);
  }
  /// neg, abs, sqrt, sign.
  Val unary(const std::string& op, const Val& a, const Ext& ext) {
    std::function<Halide::Expr(Halide::Expr)> fn;
    if (op == "neg") fn = [](Halide::Expr x) { return -x; };
    else if (op == "abs") fn = [](Halide::Expr x) { return Halide::abs(x); };
    else if (op == "sqrt") fn = [](Halide::Expr x) { return Halide::sqrt(x); };
    else if (op == "sign") fn = [](Halide::Expr x) { return Halide::select(x > 0, 1.0f, x < 0, -1.0f, 0.0f); };
    else fail("unary: unknown operation " + op);
    Val v = define(op, extents(ext), [&](const Coords& i) { return fn(at(a, i)); });
    v.loads = inline_loads({&a});
    return rec(v, "unary", op, a, ext);
  }
  /// a·x + b·y with double scalars a, b.
  Val axpby(const Val& a, const Val& x, const Val& b, const Val& y, const Ext& ext) {
    Val v = define("axpby", extents(ext), [&](const Coords& i) {
      return Halide::cast<float>(at(a, i)) * at(x, i) + Halide::cast<float>(at(b, i)) * at(y, i);
    });
    v.loads = inline_loads({&a, &x, &b, &y});
    return rec(v, "axpby", a, x, b, y, ext);
  }
  /// The sum of several arrays of one shape, left to right.
  Val sum(const std::vector<Val>& parts, const Ext& ext) {
    return rec(define("acc", extents(ext),
                      [&](const Coords& i) {
                        Halide::Expr s = call(parts[0], i);
                        for (size_t k = 1; k < parts.size(); ++k) s = s + call(parts[k], i);
                        return s;
                      }),
               "sum", parts, ext);
  }

  // ---- Linear operators and their adjoints ----

  // Along axis 1, the one the default schedule vectorizes, a border clamp
  // or select is marked as likely not to apply: Halide then partitions the
  // loops that read it into a border vector and a steady state without the
  // clamp, where the loads are dense instead of gathered lane by lane.
  static Halide::Expr likely_inside(int ax, const Halide::Expr& e) { return ax == 1 ? Halide::likely(e) : e; }

  /// Forward differences along the first d axes, stacked on a new last axis
  /// of extent d; zero at the far border.
  Val grad(const Val& x0, int d, const Ext& ext) {
    Val x = stencil(x0, true);
    Val v = define("grad", extents(ext), [&](const Coords& c) {
      Halide::Expr out = 0.0f;
      for (int ax = d - 1; ax >= 0; --ax) {
        Coords here(c.begin(), c.end() - 1), next = here;
        next[ax] = Halide::min(likely_inside(ax, next[ax] + 1), x.ext[ax] - 1);
        Halide::Expr diff =
            Halide::select(c[ax] < x.ext[ax] - 1, likely_inside(ax, call(x, next) - call(x, here)), 0.0f);
        out = ax == d - 1 ? diff : Halide::select(c.back() == ax, diff, out);
      }
      return out;
    });
    v.small_inner = true;
    // Each component reads two elements of x: inlined into a stencil that
    // reads it (div of grad, in a CG step's A p = KᵀK p) when x is at root,
    // instead of computed per strip of that stencil's rows, interleaved
    // (small_inner), and read back with strided loads. Measured at 512²,
    // interleaved in one process (bench/cg_programs.cpp): cg_apply 3–15 %
    // faster on TV, inpainting and deconvolution, cg_init 2–7 %. (Not when
    // x is computed per strip itself, or inlined: stencils of stencils.)
    const bool x_at_root = x.is_buffer || (materialized_.count(x.f.name()) && !strip_candidates_.count(x.f.name()));
    v.loads = x_at_root ? 2 : -1;
    return rec(v, "grad", x0, d, ext);
  }
  /// The adjoint of grad: minus the divergence.
  Val grad_t(const Val& p0, int d, const Ext& ext) {
    Val p = stencil(p0, true);
    std::vector<Halide::Expr> xe = extents(ext);
    return rec(define("div", xe,
                      [&](const Coords& c) {
                        Halide::Expr s = 0.0f;
                        for (int ax = 0; ax < d; ++ax) {
                          Coords prev = c, here = c;
                          prev[ax] = Halide::max(likely_inside(ax, c[ax] - 1), 0);
                          prev.push_back(ax);
                          here.push_back(ax);
                          s = s + Halide::select(c[ax] > 0, likely_inside(ax, call(p, prev)), 0.0f) -
                              Halide::select(c[ax] < xe[ax] - 1, likely_inside(ax, call(p, here)), 0.0f);
                        }
                        return s;
                      }),
               "grad_t", p0, d, ext);
  }
  /// Circular convolution with kernel k centred at k.ext/2 (adjoint: correlation).
  Val conv(const Val& k, const Val& x0, bool adjoint, const Ext& ext) {
    Val x = stencil(x0);
    std::vector<Halide::Expr> e = extents(ext);
    const std::vector<Halide::Expr>& n = adjoint ? e : x.ext;
    const int kr = k.rank();
    // x extended circularly along the kernel's axes, computed once: the taps
    // then read it densely, with no wrapping per tap. The kernel is no larger
    // than the image, so coordinates lie in [−n, 2n): two selects, no
    // division (the clamp changes no value; it tells bounds inference the range).
    Val xw = define("wrapped", x.ext, [&](const Coords& c) {
      Coords src = c;
      for (int i = 0; i < kr; ++i) {
        src[i] = Halide::clamp(Halide::select(c[i] < 0, c[i] + n[i], c[i] >= n[i], c[i] - n[i], c[i]), 0, n[i] - 1);
      }
      return call(x, src);
    });
    xw.unroll_from = std::max(2, kr);  // its wrapped axes reach beyond [0, n)
    schedule_at_root(xw);
    Halide::Region ranges;
    for (int i = kr - 1; i >= 0; --i) ranges.push_back(Halide::Range(0, k.ext[i]));
    Halide::RDom r(ranges);
    Val v = define(adjoint ? "corr" : "conv", e, [&](const Coords& c) {
      Coords ki(kr), src = c;
      for (int i = 0; i < kr; ++i) {
        Halide::Expr ri = r[kr - 1 - i];
        ki[i] = ri;
        src[i] = adjoint ? c[i] + ri - k.ext[i] / 2 : c[i] - ri + k.ext[i] / 2;
      }
      return Halide::sum(call(k, ki) * call(xw, src));
    });
    // At root, its taps' sums over wide vectors (kWideLanes) when the sizes
    // allow: a consumer's vectors of 8 would sum one vector at a time.
    if (min_extent_ >= kWideLanes) {
      v.lanes = kWideLanes;
      schedule_at_root(v);
    }
    return rec(v, "conv", k, x0, adjoint, ext);
  }
  /// The same convolution by FFT (the extern stage proxc_fft_conv of
  /// libproxc_runtime): the kernel's transfer function is otf slot `otf`, a
  /// float buffer (re, im) × FFTW's r2c layout over the first kr axes.
  Val fft_conv(const Val& x0, int otf, int kr, bool adjoint, const Ext& ext) {
    Val x = x0;
    schedule_at_root(x);
    if (x.is_buffer) x.f.compute_root();  // an extern stage reads a buffer of its own
    auto it = otfs_.find(otf);
    if (it == otfs_.end()) {
      it = otfs_.emplace(otf, Halide::ImageParam(Halide::Float(32), kr + 1, "otf" + std::to_string(otf))).first;
    }
    otf_ext_[otf] = Ext(ext.begin(), ext.begin() + kr);
    Val out;
    out.f = Halide::Func(std::string(adjoint ? "fft_corr" : "fft_conv") + std::to_string(counter_++));
    out.ext = extents(ext);
    std::vector<Halide::ExternFuncArgument> args = {x.f, it->second, Halide::Expr(kr), Halide::Expr(adjoint ? 1 : 0)};
    out.f.define_extern("proxc_fft_conv", args, Halide::Float(32), static_cast<int>(ext.size()));
    if (schedule_ == Schedule::Default) out.f.compute_root();
    return rec(out, "fft_conv", x0, otf, kr, adjoint, ext);
  }

  /// A user black-box operator (include/proxc/black_box.h), forward or
  /// adjoint: the extern stage proxc_black_box_stage of libproxc_runtime, which
  /// finds the operator registered under `name` in the running program.
  /// in_ext: the extents of x; ext: of the result.
  Val black_box(const Val& x0, const std::string& name, bool adjoint, const Ext& in_ext, const Ext& ext) {
    if (in_ext.size() > 6 || ext.size() > 6 || in_ext.empty() || ext.empty()) fail("black_box: ranks 1 to 6");
    Val x = x0;
    schedule_at_root(x);
    if (x.is_buffer) x.f.compute_root();  // an extern stage reads a buffer of its own
    Val out;
    out.f = Halide::Func("black_box" + std::to_string(counter_++));
    out.ext = extents(ext);
    std::vector<Halide::ExternFuncArgument> args = {x.f, Halide::Expr(proxc_black_box_id(name.c_str())),
                                                    Halide::Expr(adjoint ? 1 : 0)};
    for (const Ext* e : {&in_ext, &ext}) {
      args.push_back(Halide::Expr(static_cast<int>(e->size())));
      for (size_t i = 0; i < 6; ++i) args.push_back(i < e->size() ? extent((*e)[i]) : Halide::Expr(1));
    }
    black_boxes_.insert(name);
    out.f.define_extern("proxc_black_box_stage", args, Halide::Float(32), static_cast<int>(ext.size()));
    if (schedule_ == Schedule::Default) out.f.compute_root();
    return rec(out, "black_box", x0, name, adjoint, in_ext, ext);
  }

  /// x[::f0, ::f1, ...].
  Val subsample(const Val& x0, const std::vector<int>& factors, const Ext& ext) {
    Val x = stencil(x0);
    return rec(define("subsample", extents(ext),
                      [&](const Coords& c) {
                        Coords src;
                        for (size_t i = 0; i < c.size(); ++i) src.push_back(c[i] * factors[i]);
                        return call(x, src);
                      }),
               "subsample", x0, factors, ext);
  }
  /// The adjoint of subsample: y at multiples of the factors, zero elsewhere.
  Val upsample(const Val& y0, const std::vector<int>& factors, const Ext& ext) {
    Val y = stencil(y0);
    return rec(define("upsample", extents(ext),
                      [&](const Coords& c) {
                        Halide::Expr on = Halide::Internal::const_true();
                        Coords src;
                        for (size_t i = 0; i < c.size(); ++i) {
                          on = on && c[i] % factors[i] == 0;
                          src.push_back(Halide::clamp(c[i] / factors[i], 0, y.ext[i] - 1));
                        }
                        return Halide::select(on, call(y, src), 0.0f);
                      }),
               "upsample", y0, factors, ext);
  }
  /// The flattened parts one after another (a 1-D array).
  Val stack(const std::vector<Val>& parts0, const Ext& ext) {
    std::vector<Val> parts;
    for (const Val& p : parts0) parts.push_back(stencil(p));
    return rec(define("vstack", extents(ext),
                      [&](const Coords& c) {
                        Halide::Expr out = 0.0f, offset = 0;
                        std::vector<std::pair<Halide::Expr, Halide::Expr>> pieces;
                        for (const Val& p : parts) {
                          Halide::Expr size = flat_size(p.ext);
                          Halide::Expr local = Halide::clamp(c[0] - offset, 0, size - 1);
                          pieces.push_back({c[0] < offset + size, call(p, unravel(local, p.ext))});
                          offset = offset + size;
                        }
                        for (size_t i = pieces.size(); i-- > 0;) {
                          out = i + 1 == pieces.size() ? pieces[i].second : Halide::select(pieces[i].first, pieces[i].second, out);
                        }
                        return out;
                      }),
               "stack", parts0, ext);
  }
  /// Part k of a stacked 1-D array whose parts have extents `parts`.
  Val unstack(const Val& y0, const std::vector<Ext>& parts, int k) {
    Val y = stencil(y0);
    Halide::Expr offset = 0;
    for (int i = 0; i < k; ++i) offset = offset + flat_size(extents(parts[i]));
    std::vector<Halide::Expr> pe = extents(parts[k]);
    return rec(define("unstack", pe, [&](const Coords& c) { return call(y, {offset + ravel(c, pe)}); }), "unstack", y0,
               parts, k);
  }
  /// The same entries in C order with extents ext.
  Val reshape(const Val& x0, const Ext& ext) {
    Val x = stencil(x0);
    std::vector<Halide::Expr> e = extents(ext);
    return rec(define("reshape", e, [&](const Coords& c) { return call(x, unravel(ravel(c, e), x.ext)); }), "reshape",
               x0, ext);
  }
  /// out axis i = x axis perm[i] (adjoint: the inverse permutation).
  Val transpose(const Val& x0, const std::vector<int>& perm, bool adjoint, const Ext& ext) {
    Val x = stencil(x0);
    return rec(define(adjoint ? "transpose_t" : "transpose", extents(ext),
                      [&](const Coords& c) {
                        Coords src(c.size());
                        for (size_t i = 0; i < c.size(); ++i) {
                          if (adjoint) src[i] = c[static_cast<size_t>(perm[i])];
                          else src[static_cast<size_t>(perm[i])] = c[i];
                        }
                        return call(x, src);
                      }),
               "transpose", x0, perm, adjoint, ext);
  }
  /// x[o0:o0+n0, ...].
  Val crop(const Val& x0, const std::vector<int>& offsets, const Ext& ext) {
    Val x = stencil(x0);
    return rec(define("crop", extents(ext),
                      [&](const Coords& c) {
                        Coords src;
                        for (size_t i = 0; i < c.size(); ++i) src.push_back(c[i] + offsets[i]);
                        return call(x, src);
                      }),
               "crop", x0, offsets, ext);
  }
  /// The adjoint of crop: y placed at the offsets, zero around it.
  Val pad(const Val& y0, const std::vector<int>& offsets, const Ext& ext) {
    Val y = stencil(y0);
    return rec(define("pad", extents(ext),
                      [&](const Coords& c) {
                        Halide::Expr in = Halide::Internal::const_true();
                        Coords src;
                        for (size_t i = 0; i < c.size(); ++i) {
                          Halide::Expr o = c[i] - offsets[i];
                          in = in && o >= 0 && o < y.ext[i];
                          src.push_back(Halide::clamp(o, 0, y.ext[i] - 1));
                        }
                        return Halide::select(in, call(y, src), 0.0f);
                      }),
               "pad", y0, offsets, ext);
  }
  /// A 3×3 colour transform of the last axis, by a 3×3 data array
  /// (adjoint: by its transpose).
  Val color(const Val& x0, const Val& matrix, bool adjoint, const Ext& ext) {
    std::vector<Halide::Expr> m;
    for (int i = 0; i < 9; ++i) m.push_back(call(matrix, {i / 3, i % 3}));
    return rec(color_impl(stencil(x0), m, adjoint, ext), "color", x0, matrix, adjoint, ext);
  }
  /// The same with the matrix in scalar slots first..first+8 (row major).
  Val color_slots(const Val& x0, int first, bool adjoint, const Ext& ext) {
    std::vector<Halide::Expr> m;
    for (int i = 0; i < 9; ++i) m.push_back(scalar_expr(first + i));
    return rec(color_impl(stencil(x0), m, adjoint, ext), "color_slots", x0, first, adjoint, ext);
  }
  /// Bilinear warp of the first two axes by the 3×3 homography h (output
  /// pixel (i, j) samples x at h·(j, i, 1)); zero outside.
  Val warp(const Val& h, const Val& x0, const Ext& ext) {
    Val x = stencil(x0);
    std::vector<Halide::Expr> hh = homography(h);
    return rec(define("warp", extents(ext),
                      [&](const Coords& c) {
                        Taps t = warp_taps(hh, c[0], c[1], x.ext[0], x.ext[1]);
                        Halide::Expr s = 0.0f;
                        for (int k = 0; k < 4; ++k) {
                          Coords src = c;
                          src[0] = Halide::clamp(t.r[k], 0, x.ext[0] - 1);
                          src[1] = Halide::clamp(t.c[k], 0, x.ext[1] - 1);
                          s = s + t.w[k] * call(x, src);
                        }
                        return s;
                      }),
               "warp", h, x0, ext);
  }
  /// The adjoint of warp: a scatter over the output pixels.
  Val warp_t(const Val& h, const Val& y0, const Ext& ext) {
    Val y = stencil(y0);
    std::vector<Halide::Expr> hh = homography(h);
    std::vector<Halide::Expr> e = extents(ext);
    Val out;
    out.f = Halide::Func("warp_t" + std::to_string(counter_++));
    out.ext = e;
    out.vars = make_vars(static_cast<int>(e.size()));
    Coords c(out.vars.begin(), out.vars.end());
    out.f(reversed(c)) = 0.0f;
    Halide::Region ranges = {Halide::Range(0, e[1]), Halide::Range(0, e[0])};
    Halide::RDom r(ranges);
    Taps t = warp_taps(hh, r[1], r[0], e[0], e[1]);
    for (int k = 0; k < 4; ++k) {
      Coords dst = c, src = c;
      dst[0] = Halide::clamp(t.r[k], 0, e[0] - 1);
      dst[1] = Halide::clamp(t.c[k], 0, e[1] - 1);
      src[0] = r[1];
      src[1] = r[0];
      out.f(reversed(dst)) += t.w[k] * call(y, src);
    }
    schedule_at_root(out);
    if (schedule_ == Schedule::Default) {
      // The scatters run serially (two may write one pixel): said so, not a forgotten schedule.
      for (int k = 0; k < out.f.num_update_definitions(); ++k) out.f.update(k).unscheduled();
    }
    return rec(out, "warp_t", h, y0, ext);
  }

  // ---- Prox functions and values ----

  /// The operands of a function term f(x) = alpha·φ(beta·x − b) + cᵀx +
  /// gamma·‖x‖² + d: rank-0 float scalars or arrays of x's shape.
  struct Term {
    std::string kind;  ///< sum_squares, least_squares, norm1, group_norm1, nonneg, poisson_norm, sum_entries, box
    Val alpha, beta, gamma, d, b, c, lower, upper;
    Val counts;             ///< poisson_norm only
    std::vector<int> axes;  ///< group_norm1 only
    std::string id;         ///< its variable in the recorded source
  };
  Term term(const std::string& kind, const Val& alpha, const Val& beta, const Val& gamma, const Val& d, const Val& b,
            const Val& c, const Val& lower, const Val& upper, const Val& counts, const std::vector<int>& axes) {
    Term t{kind, alpha, beta, gamma, d, b, c, lower, upper, counts, axes, "t" + std::to_string(term_ids_++)};
    if (record_) {
      *record_ << "  Graph::Term " << t.id << " = g.term("
               << args(kind, alpha, beta, gamma, d, b, c, lower, upper, counts, axes) << ");\n";
    }
    return t;
  }
  /// prox_{f/rho}(v) for the term t (SEMANTICS.md's formula with the
  /// affine argument folded in); rho is a double scalar.
  Val prox(const Term& t, const Val& v, const Val& rho_val) {
    Halide::Expr rho = Halide::cast<float>(at(rho_val, {}));
    Halide::Expr alpha = at(t.alpha, {}), beta = at(t.beta, {}), gamma = at(t.gamma, {});
    Halide::Expr denom = rho + 2.0f * gamma;
    Halide::Expr r = denom / (alpha * beta * beta);
    const std::vector<Halide::Expr>& ext = v.ext;
    // u = (rho·v − c)·beta/denom − b
    Val u = define("u", ext, [&](const Coords& i) { return (rho * call(v, i) - at(t.c, i)) * beta / denom - at(t.b, i); });
    if (t.kind == "group_norm1" && !short_group(u, t.axes)) schedule_at_root(u);
    Val p = define("prox", ext, [&](const Coords& i) {
      Halide::Expr x = call(u, i);
      Halide::Expr out;
      const std::string& k = t.kind;
      if (k == "sum_squares" || k == "least_squares") {
        out = Halide::select(alpha == 0.0f, x, r * x / (r + 2.0f));
      } else if (k == "norm1") {
        out = Halide::select(x > 0.0f, 1.0f, x < 0.0f, -1.0f, 0.0f) * Halide::max(Halide::abs(x) - 1.0f / r, 0.0f);
      } else if (k == "group_norm1") {
        Halide::Expr g = Halide::sqrt(group_sum_squares(u, t.axes, i));
        out = Halide::select(g == 0.0f, 0.0f, x * Halide::max(0.0f, 1.0f - 1.0f / (r * g)));
      } else if (k == "nonneg") {
        out = Halide::max(x, 0.0f);
      } else if (k == "poisson_norm") {
        Halide::Expr cv = at(t.counts, i);
        Halide::Expr w = x - 1.0f / r;
        out = Halide::select(alpha == 0.0f, x, 0.5f * (w + Halide::sqrt(w * w + 4.0f * cv / r)));
      } else if (k == "sum_entries") {
        out = Halide::select(alpha == 0.0f, x, x - 1.0f / r);
      } else if (k == "box") {
        out = Halide::min(Halide::max(x, at(t.lower, i)), at(t.upper, i));
      } else {
        fail("prox: unknown function " + k);
      }
      return (out + at(t.b, i)) / beta;
    });
    return rec(p, "prox", RawArg{t.id}, v, rho_val);
  }
  /// f(v) in double; indicators are 0 within `slack` of their set and inf
  /// (the scalar `inf`) outside.
  Val value(const Term& t, const Val& v0, const Val& inf_val, double slack) {
    Halide::Expr alpha = Halide::cast<double>(at(t.alpha, {})), beta = at(t.beta, {});
    Halide::Expr gamma = Halide::cast<double>(at(t.gamma, {})), d = Halide::cast<double>(at(t.d, {}));
    Val vv = stencil(v0);
    Val u = define("uv", vv.ext, [&](const Coords& i) { return beta * call(vv, i) - at(t.b, i); });
    schedule_at_root(u);
    Halide::RDom r = full_domain(vv.ext);
    Coords i = domain_point(r, vv.ext.size());
    Halide::Expr x = Halide::cast<double>(call(u, i));
    Halide::Expr inf = Halide::cast<double>(at(inf_val, {}));
    Halide::Expr f;
    const std::string& k = t.kind;
    if (k == "sum_squares" || k == "least_squares") {
      f = alpha * Halide::sum(x * x);
    } else if (k == "norm1") {
      f = alpha * Halide::sum(Halide::abs(x));
    } else if (k == "group_norm1") {
      // Each group once: at its entry where the group axes are 0. The group
      // sums are a Func of their own (an inline reduction cannot nest).
      Val g2 = define("gsq", vv.ext, [&](const Coords& j) { return group_sum_squares(u, t.axes, j); });
      schedule_at_root(g2);
      Halide::Expr first = Halide::Internal::const_true();
      for (int ax : t.axes) first = first && i[static_cast<size_t>(ax)] == 0;
      f = alpha * Halide::sum(Halide::select(first, Halide::sqrt(Halide::cast<double>(call(g2, i))), f64(0)));
    } else if (k == "nonneg") {
      f = Halide::select(Halide::minimum(x) > f64(-slack), f64(0), inf);
    } else if (k == "box") {
      Halide::Expr lo = Halide::cast<double>(at(t.lower, i)), hi = Halide::cast<double>(at(t.upper, i));
      f = Halide::select(Halide::maximum(Halide::select(x <= lo - f64(slack) || x >= hi + f64(slack), 1, 0)) == 0,
                         f64(0), inf);
    } else if (k == "poisson_norm") {
      Halide::Expr cv = Halide::cast<double>(at(t.counts, i));
      f = Halide::select(Halide::minimum(x) < f64(-slack), inf,
                         alpha * Halide::sum(x - cv * Halide::log(Halide::max(x, f64(1e-9)))));
    } else if (k == "sum_entries") {
      f = alpha * Halide::sum(x);
    } else {
      fail("value: unknown function " + k);
    }
    Halide::Expr xv = Halide::cast<double>(call(vv, i));
    Halide::Expr lin = Halide::sum(Halide::cast<double>(at(t.c, i)) * xv + gamma * xv * xv);
    return rec(define0("value", f + lin + d), "value", RawArg{t.id}, v0, inf_val, slack);
  }

  // ---- Reductions, solves ----

  /// sum, sum_squares, max_abs (of a) or dot (of a and b), as a double. With a
  /// gate (a param), the reduction runs only when the gate is not 0: its
  /// domain is empty otherwise (value 0), and so is every region of a value
  /// only it reads, which is then not computed either.
  Val reduce(const std::string& kind, const Val& a0, const Val& b0, const Val& gate = Val()) {
    if (kind != "sum" && kind != "sum_squares" && kind != "max_abs" && kind != "dot") {
      fail("reduce: unknown reduction " + kind);
    }
    // The reduced value of one element, and how values combine.
    // Sums of squares and maxima of |x| take their per-row partial values in
    // float (a max is exact in float; a sum of squares has no cancellation:
    // each lane of a row adds n/8 positive terms, relative error below
    // (n/8)·2⁻²⁴, 1.5e-5 for a 2048-wide row, about √(n/8)·2⁻²⁴ typically)
    // and combine rows in double: the convergence check's norms at the cost
    // of float arithmetic. (Entries beyond 1.8e19 in magnitude, whose squares
    // overflow float, make the sum inf: a state that large has diverged.)
    // Sums and dot products, which may cancel, stay in double throughout.
    const bool float_partials = kind == "sum_squares" || kind == "max_abs";
    auto element = [&](const Coords& i) {
      Halide::Expr x = float_partials ? call(a0, i) : Halide::cast<double>(call(a0, i));
      if (kind == "sum") return x;
      if (kind == "sum_squares") return x * x;
      if (kind == "max_abs") return Halide::abs(x);
      return x * Halide::cast<double>(call(b0, i));
    };
    auto combine = [&](Halide::Expr acc, Halide::Expr v) { return kind == "max_abs" ? Halide::max(acc, v) : acc + v; };
    // Gated: the first extent is 0 when the gate is 0.
    Halide::Expr on = gate.defined() ? gate.f.value() != 0 : Halide::Expr();
    if (on.defined()) {
      // split_row_strips decided its tails knowing of no gate.
      if (strips_split_) fail("reduce: a gated reduction added after pipeline()");
      gated_ = true;
    }
    if (schedule_ != Schedule::Default) {
      // One plain reduction: an autoscheduler splits it as it sees fit.
      std::vector<Halide::Expr> ext = a0.ext;
      if (on.defined() && !ext.empty()) ext[0] = Halide::select(on, ext[0], 0);
      Halide::RDom r = full_domain(ext);
      Coords i = domain_point(r, a0.ext.size());
      Halide::Expr e = Halide::cast<double>(element(i));
      Halide::Expr red = kind == "max_abs" ? Halide::maximum(e) : Halide::sum(e);
      return rec(define0(kind, red), "reduce", kind, a0, b0, gate);
    }
    RowSums row_sums;
    Val v = rec(parallel_reduce(kind, a0, element, combine, on, &row_sums), "reduce", kind, a0, b0, gate);
    if (row_sums.partial.defined()) {
      partials_[v.id] = row_sums;
      partial_order_.push_back(v.id);
    }
    return v;
  }
  /// x = (a·I + c·KᵀK)⁻¹ rhs (a, c: scalars of constants and parameters, not
  /// computed ones) for the circular convolution K whose |otf|² is
  /// spectrum slot `spectrum` (FFTW r2c layout over the first kr axes): the
  /// extern stage proxc_circulant_solve (libproxc_runtime).
  Val circulant_solve(const Val& rhs0, int spectrum, int kr, const Val& a0, const Val& c0, const Ext& ext) {
    Val rhs = rhs0;
    schedule_at_root(rhs);
    if (rhs.is_buffer) rhs.f.compute_root();  // an extern stage reads a buffer of its own
    auto it = spectra_.find(spectrum);
    if (it == spectra_.end()) {
      it = spectra_.emplace(spectrum, Halide::ImageParam(Halide::Float(32), kr, "spectrum" + std::to_string(spectrum)))
               .first;
    }
    spectrum_ext_[spectrum] = Ext(ext.begin(), ext.begin() + kr);
    Val out;
    out.f = Halide::Func("solve" + std::to_string(counter_++));
    out.ext = extents(ext);
    // a and c reach the extern stage as Exprs: their definitions, which must
    // not call Funcs (an extern's Expr arguments cannot).
    std::vector<Halide::ExternFuncArgument> args = {rhs.f, it->second, scalar_definition(a0), scalar_definition(c0),
                                                    Halide::Expr(kr)};
    out.f.define_extern("proxc_circulant_solve", args, Halide::Float(32), static_cast<int>(ext.size()));
    if (schedule_ == Schedule::Default) out.f.compute_root();
    return rec(out, "circulant_solve", rhs0, spectrum, kr, a0, c0, ext);
  }

  // ---- Scheduling and outputs ----

  /// Computes v once, at root (a value read at many places or by several users).
  void materialize(const Val& v) {
    if (record_) *record_ << "  g.materialize(" << v.id << ");\n";
    schedule_at_root(v);
  }
  /// Makes v (of extents ext) an output of the pipeline: v itself when it is
  /// already computed at root (its users then read the output buffer), else
  /// a copy named <name>_out.
  Halide::Func output(const std::string& name, const Val& v, const Ext& ext) {
    if (record_) *record_ << "  g.output(" << args(name, v, ext) << ");\n";
    // A value computed at root anyway is the output itself (its users read
    // the output buffer): no copy.
    if (schedule_ == Schedule::Default && !v.is_buffer && !v.vars.empty() && materialized_.count(v.f.name()) &&
        output_funcs_.insert(v.f.name()).second) {
      outputs_.push_back(v.f);
      output_ext_.push_back(ext);
      return v.f;
    }
    Halide::Func f(name + "_out");
    std::vector<Halide::Var> vars = make_vars(v.rank());
    Coords c(vars.begin(), vars.end());
    if (vars.empty()) f() = call(v, {});
    else f(reversed(c)) = call(v, c);
    if (schedule_ == Schedule::Default) schedule_root(f, vars, v.ext, v.small_inner);
    outputs_.push_back(f);
    output_ext_.push_back(ext);
    return f;
  }

  /// Computes output b in the same loop over rows as output a (Halide's
  /// compute_with at the outermost, parallel, row loop): each row of b is
  /// computed right after the same row of a, while the values both read are
  /// still in cache. Neither may read the other, nor anything else fused
  /// with a (the caller checks: fused stages cannot be producer and
  /// consumer). Both must be pure outputs at root of rank >= 2 with the same
  /// number of rows; otherwise nothing changes (false).
  bool fuse_outputs(int a, int b) {
    // Outputs are rows-first: px_0 is the outermost loop of every output at root.
    if (record_) *record_ << "  g.fuse_outputs(" << args(a, b) << ");\n";
    if (schedule_ != Schedule::Default) return false;
    const size_t ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
    if (ia >= outputs_.size() || ib >= outputs_.size() || ia == ib) fail("fuse_outputs: no such pair of outputs");
    if (merged_.count(a) || merged_.count(b)) return false;
    Halide::Func fa = outputs_[ia], fb = outputs_[ib];
    auto fusable = [&](const Halide::Func& f, const Ext& ext) {
      return ext.size() >= 2 && f.defined() && !f.is_extern() && f.num_update_definitions() == 0 &&
             f.outputs() == 1 && f.args().size() == ext.size() && f.args().back().name() == "px_0";
    };
    // (Their rows are run-time extents: the caller knows they are equal;
    // Halide would run the union of both ranges, each stage within its own.)
    if (!fusable(fa, output_ext_[ia]) || !fusable(fb, output_ext_[ib])) return false;
    fb.compute_with(fa, Halide::Var("px_0"));
    fused_.insert(fa.name());
    fused_.insert(fb.name());
    group_lead_[fb.name()] = fa.name();
    return true;
  }

  // The Funcs an expression calls directly (Halide Funcs only, not buffers).
  static std::vector<Halide::Internal::Function> direct_calls(const std::vector<Halide::Expr>& exprs) {
    struct Calls : Halide::Internal::IRVisitor {
      std::vector<Halide::Internal::Function> funcs;
      using Halide::Internal::IRVisitor::visit;
      void visit(const Halide::Internal::Call* op) override {
        if (op->call_type == Halide::Internal::Call::Halide && op->func.defined()) funcs.emplace_back(op->func);
        Halide::Internal::IRVisitor::visit(op);
      }
    } calls;
    for (const Halide::Expr& e : exprs) e.accept(&calls);
    return calls.funcs;
  }
  // The expressions of a Func's definitions (values, and update arguments).
  static std::vector<Halide::Expr> definition_exprs(const Halide::Internal::Function& f) {
    std::vector<Halide::Expr> exprs = f.definition().values();
    for (const Halide::Internal::Definition& u : f.updates()) {
      exprs.insert(exprs.end(), u.values().begin(), u.values().end());
      exprs.insert(exprs.end(), u.args().begin(), u.args().end());
    }
    return exprs;
  }
  bool computed_at_root(const Halide::Internal::Function& g) const {
    return materialized_.count(g.name()) || output_funcs_.count(g.name()) || g.has_extern_definition();
  }
  // Calls `visit` on each Func that exprs call, directly or through the Funcs
  // for which `inlined` holds (their definitions are read too), each once;
  // true as soon as a visit returns true.
  using FunctionTest = std::function<bool(const Halide::Internal::Function&)>;
  static bool any_call_through(const std::vector<Halide::Expr>& exprs, const FunctionTest& inlined,
                               const FunctionTest& visit) {
    std::set<std::string> seen;
    std::function<bool(const std::vector<Halide::Expr>&)> go = [&](const std::vector<Halide::Expr>& es) {
      for (const Halide::Internal::Function& g : direct_calls(es)) {
        if (!seen.insert(g.name()).second) continue;
        if (visit(g)) return true;
        if (inlined(g) && go(definition_exprs(g))) return true;
      }
      return false;
    };
    return go(exprs);
  }
  // Whether e calls the Func `name`, directly or through Funcs inlined into it.
  bool calls_through_inlined(const Halide::Expr& e, const std::string& name) const {
    return any_call_through(
        {e}, [&](const Halide::Internal::Function& g) { return !computed_at_root(g); },
        [&](const Halide::Internal::Function& g) { return g.name() == name; });
  }

  /// Computes output b in the loop of output a, as one Tuple-valued Func
  /// (a, b): for b a pointwise function of a (b reads a at its own position,
  /// directly, plus other buffers), such as Pock–Chambolle's x̄ = 2x⁺ − x next
  /// to x⁺. b then uses a's value in registers instead of a second pass that
  /// reads a's buffer back. Outputs a and b must be consecutive (a Tuple's
  /// buffers are), of the same rank (2 or more: linearized ADMM's z⁺ and
  /// u⁺ = u + Kx⁺ − z⁺, with a gradient's two components, pair too), pure,
  /// a computed at root. False (nothing changes) otherwise. Consumers of a
  /// other than b (a check's reductions) still read a separately computed a,
  /// only on the runs that need them.
  bool pair_outputs(int a, int b) {
    if (record_) *record_ << "  g.pair_outputs(" << args(a, b) << ");\n";
    if (schedule_ != Schedule::Default) return false;
    const size_t ia = static_cast<size_t>(a), ib = static_cast<size_t>(b);
    if (ib != ia + 1 || ib >= outputs_.size() || merged_.count(a) || merged_.count(b)) return false;
    Halide::Func fa = outputs_[ia], fb = outputs_[ib];
    auto pure = [](const Halide::Func& f) {
      return f.defined() && !f.is_extern() && f.num_update_definitions() == 0 && f.outputs() == 1 && f.args().size() >= 2;
    };
    // (Run-time extents are the caller's to compare: each is a parameter of its own.)
    const Ext &ea = output_ext_[ia], &eb = output_ext_[ib];
    if (!output_funcs_.count(fa.name()) || !pure(fa) || !pure(fb) || ea.size() != fa.args().size() ||
        eb.size() != ea.size()) {
      return false;
    }
    for (size_t i = 0; i < ea.size(); ++i) {
      if ((ea[i] < 0 || eb[i] < 0) && ea[i] != eb[i]) return false;  // compile-time extents differ
    }
    const std::vector<Halide::Var> va = fa.args(), vb = fb.args();
    if (va.size() != vb.size()) return false;
    for (size_t i = 0; i < va.size(); ++i) {
      if (va[i].name() != vb[i].name()) return false;
    }
    // b's definition with its reads of a (at its own position) replaced by a's definition.
    struct Substitute : Halide::Internal::IRMutator {
      std::string name;
      std::vector<Halide::Var> vars;
      Halide::Expr value;
      bool pointwise = true;
      int replaced = 0;
      using Halide::Internal::IRMutator::visit;
      Halide::Expr visit(const Halide::Internal::Call* op) override {
        if (op->call_type != Halide::Internal::Call::Halide || op->name != name) return IRMutator::visit(op);
        for (size_t i = 0; i < op->args.size(); ++i) {
          const auto* v = op->args[i].as<Halide::Internal::Variable>();
          pointwise = pointwise && v && v->name == vars[i].name();
        }
        ++replaced;
        return value;
      }
    } sub;
    sub.name = fa.name();
    sub.vars = va;
    sub.value = fa.value();
    Halide::Expr vb_value = sub.mutate(fb.value());
    if (!sub.pointwise || sub.replaced == 0 || calls_through_inlined(vb_value, fa.name())) return false;
    Halide::Func t(fa.name() + "_and_" + fb.name());
    t(va) = Halide::Tuple(fa.value(), vb_value);
    std::vector<Halide::Var> numpy(va.rbegin(), va.rend());
    schedule_root(t, numpy, extents(output_ext_[ia]), false);
    outputs_[ia] = t;
    merged_.insert(b);
    return true;
  }

  /// Computes the row sums of reduction b in the same loop over rows as
  /// those of reduction a (compute_with), so that arrays both read are read
  /// once: the residual norms of a convergence check read x, y and their
  /// updates in one pass instead of one pass per norm. The caller checks that
  /// both reduce arrays of as many rows and that neither depends on the
  /// other. False (nothing changes) unless both are row-parallel reductions.
  bool fuse_reductions(const Val& a, const Val& b) {
    if (record_) *record_ << "  g.fuse_reductions(" << args(a, b) << ");\n";
    if (schedule_ != Schedule::Default) return false;
    auto pa = partials_.find(a.id), pb = partials_.find(b.id);
    if (pa == partials_.end() || pb == partials_.end() || a.id == b.id) return false;
    // Applied by pipeline() (fuse_partials), unless one of them is computed
    // in an output's loop (fuse_partials_into_outputs; Halide would replace
    // one compute_with by the other, with a warning).
    if (strips_split_) fail("fuse_reductions: called after pipeline()");
    reduction_partner_[pb->second.partial.name()] = pa->second.partial.name();
    return true;
  }

  /// Estimates of every argument and output from the slots' values, for an
  /// autoscheduler (run-time parameters such as rho are estimated as 1).
  void set_estimates(const std::vector<int64_t>& extent_values, const std::vector<double>& scalar_values) {
    auto value = [&](int slot) -> int {
      if (slot < 0) return -slot;
      if (static_cast<size_t>(slot) >= extent_values.size()) fail("set_estimates: no value for extent slot " + std::to_string(slot));
      return static_cast<int>(extent_values[static_cast<size_t>(slot)]);
    };
    auto region = [&](const Ext& e) {
      Halide::Region r;  // Halide order: innermost first
      for (auto it = e.rbegin(); it != e.rend(); ++it) r.push_back(Halide::Range(0, value(*it)));
      return r;
    };
    for (auto& [name, p] : inputs_) p.set_estimates(region(buffer_ext_.at(p.name())));
    for (auto& [i, p] : data_) p.set_estimates(region(buffer_ext_.at(p.name())));
    for (auto& [i, p] : spectra_) {
      Halide::Region r = region(spectrum_ext_.at(i));
      r[0] = Halide::Range(0, value(spectrum_ext_.at(i).back()) / 2 + 1);
      p.set_estimates(r);
    }
    for (auto& [i, p] : otfs_) {
      Halide::Region r = region(otf_ext_.at(i));
      r[0] = Halide::Range(0, value(otf_ext_.at(i).back()) / 2 + 1);
      r.insert(r.begin(), Halide::Range(0, 2));
      p.set_estimates(r);
    }
    for (auto& [i, p] : params_) p.set_estimate(1.0);
    for (auto& [i, p] : scalars_) {
      double v = static_cast<size_t>(i) < scalar_values.size() ? scalar_values[static_cast<size_t>(i)] : 1.0;
      p.set_estimate(std::isfinite(v) ? static_cast<float>(v) : 1.0f);
    }
    for (auto& [i, p] : extents_) p.set_estimate(value(i));
    for (size_t k = 0; k < outputs_.size(); ++k) {
      if (!output_ext_[k].empty()) outputs_[k].set_estimates(region(output_ext_[k]));
    }
  }

  /// Schedules the pipeline with an autoscheduler: `plugin` is the path of
  /// its library (libautoschedule_<name>.so), `name` its registered name
  /// (Mullapudi2016, Adams2019, Li2018). Needs Schedule::None and set_estimates.
  Halide::AutoSchedulerResults auto_schedule(const std::string& plugin, const std::string& name, const Halide::Target& t) {
    Halide::load_plugin(plugin);
    Halide::Pipeline p = pipeline();
    Halide::AutoSchedulerResults r = p.auto_schedule(name, t, Halide::MachineParams::generic());
    return r;
  }

  /// The outputs' Funcs in order (a Tuple-valued one for a pair stands for both).
  Halide::Pipeline pipeline() {
    place_strip_candidates();
    fuse_partials_into_outputs();
    split_partial_rows();
    fuse_partials();
    split_row_strips();
    std::vector<Halide::Func> funcs;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      if (merged_.count(static_cast<int>(k))) continue;
      funcs.push_back(outputs_[k]);
      for (Halide::OutputImageParam b : funcs.back().output_buffers()) dense_strides(b, output_ext_[k]);
    }
    return Halide::Pipeline(funcs);
  }

  /// Arrays are dense (numpy order, no padding): each axis's stride is the
  /// product of the extents inside it. Where those extents are known at
  /// compile time (short trailing axes: gradient components, colour
  /// channels), the strides are constrained to match, so Halide loads and
  /// stores such arrays densely with shuffles instead of gathering and
  /// scattering 8 lanes at a run-time stride. (Halide checks the buffers
  /// it is given against them.)
  static void dense_strides(Halide::OutputImageParam b, const Ext& ext) {
    const int rank = static_cast<int>(ext.size());
    int stride = 1;
    for (int d = 0; d + 1 < rank; ++d) {  // Halide's dimensions, innermost first
      const int e = ext[static_cast<size_t>(rank - 1 - d)];
      if (e >= 0) break;  // a run-time extent: the strides outside it are run-time values
      stride *= -e;
      b.dim(d + 1).set_stride(stride);
    }
  }
  const std::vector<Halide::Func>& outputs() const { return outputs_; }

  /// The pipeline's arguments in order: inputs (by name), params (by name),
  /// data slots, spectra, transfer functions (otf), scalar slots, extent slots.
  std::vector<Halide::Argument> arguments() const {
    std::vector<Halide::Argument> a;
    for (const auto& [n, p] : inputs_) a.push_back(p);
    for (const auto& [n, p] : params_) a.push_back(p);
    for (const auto& [i, p] : data_) a.push_back(p);
    for (const auto& [i, p] : spectra_) a.push_back(p);
    for (const auto& [i, p] : otfs_) a.push_back(p);
    for (const auto& [i, p] : scalars_) a.push_back(p);
    for (const auto& [i, p] : extents_) a.push_back(p);
    return a;
  }

  std::map<std::string, Halide::ImageParam>& inputs() { return inputs_; }
  std::map<std::string, Halide::Param<double>>& params() { return params_; }
  std::map<int, Halide::ImageParam>& data() { return data_; }
  std::map<int, Halide::ImageParam>& spectra() { return spectra_; }
  std::map<int, Halide::ImageParam>& otfs() { return otfs_; }
  /// The names of the black-box operators the pipeline calls.
  const std::set<std::string>& black_boxes() const { return black_boxes_; }
  std::map<int, Halide::Param<float>>& scalars() { return scalars_; }
  std::map<int, Halide::Param<int>>& extent_slots() { return extents_; }

  /// Makes generate() schedule the pipeline with this autoscheduler.
  void use_autoscheduler(const std::string& plugin, const std::string& name) {
    autoscheduler_ = {plugin, name};
  }

  /// The main() of a generator program: `PROGRAM OUT_DIR NAME [TARGET]`
  /// writes OUT_DIR/NAME.a and OUT_DIR/NAME.h (the pipeline and Halide's
  /// runtime) for TARGET (default: this machine).
  int generate(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
      std::fprintf(stderr, "usage: %s OUT_DIR FUNCTION_NAME [HALIDE_TARGET]\n", argv[0]);
      return 2;
    }
    Halide::Target t = Halide::get_host_target();
    if (argc == 4 && std::string(argv[3]) != "host") {
      if (!Halide::Target::validate_target_string(argv[3])) {
        std::fprintf(stderr, "%s: '%s' is not a Halide target string\n", argv[0], argv[3]);
        return 2;
      }
      t = Halide::Target(argv[3]);
    }
    t = with_default_features(t);
    try {
      if (!autoscheduler_.first.empty()) auto_schedule(autoscheduler_.first, autoscheduler_.second, t);
      pipeline().compile_to_static_library(std::string(argv[1]) + "/" + argv[2], arguments(), argv[2], t);
    } catch (const Halide::Error& e) {
      std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
      return 1;
    }
    std::printf("wrote %s/%s.a and %s/%s.h\n", argv[1], argv[2], argv[1], argv[2]);
    return 0;
  }

 private:
  using Coords = std::vector<Halide::Expr>;
  struct RawArg {
    std::string text;
  };

  [[noreturn]] static void fail(const std::string& what) { throw Halide::CompileError("proxc halide_ops: " + what); }

  static Halide::Expr f64(double v) { return Halide::Internal::make_const(Halide::Float(64), v); }

  template <typename P>
  Halide::Expr slot(std::map<int, P>& m, int i, const char* prefix) {
    auto it = m.find(i);
    if (it == m.end()) it = m.emplace(i, P(prefix + std::to_string(i))).first;
    return it->second;
  }

  static std::vector<Halide::Var> make_vars(int r) {
    // Not "v0..": Halide names its own implicit variables so.
    std::vector<Halide::Var> v;
    for (int i = 0; i < r; ++i) v.emplace_back("px_" + std::to_string(i));
    return v;
  }
  template <typename T>
  static std::vector<T> reversed(std::vector<T> v) {
    std::reverse(v.begin(), v.end());
    return v;
  }
  static Halide::Expr call(const Val& v, const Coords& idx) {
    if (v.ext.empty()) return v.f();
    if (idx.size() != v.ext.size()) fail("call with " + std::to_string(idx.size()) + " indices on rank " + std::to_string(v.rank()));
    return v.f(reversed(idx));
  }
  /// v at i, or v itself when it is a rank-0 scalar (broadcast).
  static Halide::Expr at(const Val& v, const Coords& i) { return v.rank() == 0 ? v.f() : call(v, i); }

  static Halide::Expr flat_size(const std::vector<Halide::Expr>& ext) {
    Halide::Expr n = 1;
    for (const Halide::Expr& e : ext) n = n * e;
    return n;
  }
  static Halide::Expr ravel(const Coords& c, const std::vector<Halide::Expr>& ext) {
    Halide::Expr f = 0;
    for (size_t a = 0; a < c.size(); ++a) f = f * ext[a] + c[a];
    return f;
  }

  // A new Func over ext defined by body(coordinates): float arrays.
  Val define(const std::string& name, const std::vector<Halide::Expr>& ext,
             const std::function<Halide::Expr(const Coords&)>& body) {
    Val v;
    v.f = Halide::Func(name + std::to_string(counter_++));
    v.ext = ext;
    v.vars = make_vars(static_cast<int>(ext.size()));
    Coords c(v.vars.begin(), v.vars.end());
    Halide::Expr e = body(c);
    if (ext.empty()) v.f() = Halide::cast<double>(e);
    else v.f(reversed(c)) = Halide::cast<float>(e);
    return v;
  }
  // The double Expr defining a rank-0 value made of parameters only.
  static Halide::Expr scalar_definition(const Val& v) {
    if (v.rank() != 0 || !v.f.defined() || v.f.has_update_definition()) fail("a scalar of parameters was expected");
    return Halide::cast<double>(v.f.value());
  }
  // A rank-0 Func holding e as it is.
  Val define0(const std::string& name, Halide::Expr e) {
    Val v;
    v.f = Halide::Func(name + std::to_string(counter_++));
    v.f() = e;
    return v;
  }
  Val buffer(const std::string& name, Halide::ImageParam& p, const Ext& ext) {
    Val v;
    v.ext = extents(ext);
    v.is_buffer = true;
    v.f = Halide::Func(name + std::to_string(counter_++));
    std::vector<Halide::Var> vars = make_vars(static_cast<int>(ext.size()));
    Coords c(vars.begin(), vars.end());
    if (vars.empty()) v.f() = p();
    else v.f(reversed(c)) = p(reversed(c));
    return v;
  }

  // A reduction to rank 0 in stages, so that it runs at the speed of memory
  // rather than of one adder's latency: partial(lane, row) combines the
  // elements of row `row` (numpy axis 0; a chunk of kChunk elements for a
  // 1-D array) whose index along the lane axis is ≡ lane (mod kLanes), over
  // the whole groups of kLanes, in parallel over rows and vectorized over
  // lanes (dense loads: no index is clamped); tail(row) takes the last
  // n mod kLanes elements of each row (or, when every extent is at least
  // kLanes, the vector loop does: see `shifted`); the total combines both. The lane
  // axis is the last one of run-time extent; shorter trailing axes of
  // compile-time extent (gradient components, colour channels) are folded
  // into each element's value, unrolled. The operand is inlined into the
  // partial sums unless it is already computed at root. `on`, if defined,
  // gates the reduction (see reduce); *row_sums is set to the partial sums
  // and their domain when rows are rows of the array (not chunks), for
  // fuse_reductions.
  struct RowSums {
    Halide::Func partial;
    Halide::RDom domain;  ///< along a row (shared by reductions of equal ranges: shared_domain)
    Halide::Expr rows;    ///< the rows' extent (a row of partial sums per row of the array)
    bool gated = false;   ///< see reduce
  };
  template <typename Element, typename Combine>
  Val parallel_reduce(const std::string& kind, const Val& a, Element element, Combine combine, Halide::Expr on,
                      RowSums* row_sums) {
    constexpr int kLanes = kVectorLanes;
    constexpr int kChunk = 16384;
    const int rank = a.rank();
    if (rank == 0) {
      Halide::Expr e = Halide::cast<double>(element({}));
      return define0(kind, on.defined() ? Halide::select(on, e, Halide::cast<double>(0)) : e);
    }
    int lane_axis = rank - 1, folded = 1;
    while (lane_axis > 0) {
      const int64_t* e = Halide::Internal::as_const_int(a.ext[static_cast<size_t>(lane_axis)]);
      if (!e || folded * *e > 16) break;
      folded *= static_cast<int>(*e);
      --lane_axis;
    }
    const bool chunked = lane_axis == 0;  // 1-D, or only axis 0 is long: chunks of it are the rows
    // The row variable is named as the outputs' rows are (px_0): compute_with
    // matches loops by name (fuse_partials_into_outputs).
    Halide::Var lane("lane"), row("px_0");
    Halide::Expr n = a.ext[static_cast<size_t>(lane_axis)];
    Halide::Expr rows = chunked ? n / kChunk : a.ext[0];
    // With every extent at least kLanes (assume_min_extent), a row's last,
    // partial group of lanes is taken in the vector loop: that group starts
    // kLanes before the row's end and counts only its lanes past the whole
    // groups. Otherwise a scalar tail loop takes them.
    const bool shifted = !chunked && min_extent_ >= kLanes;
    Halide::Expr groups = chunked ? Halide::Expr(kChunk / kLanes) : shifted ? (n + kLanes - 1) / kLanes : n / kLanes;
    if (on.defined()) rows = Halide::select(on, rows, 0);  // gated off: no rows
    // The value at lane-axis position `pos` (and the other axes at i).
    auto value_at = [&](Coords i, Halide::Expr pos) {
      i[static_cast<size_t>(lane_axis)] = pos;
      Halide::Expr value;
      for (int f = 0; f < folded; ++f) {
        int rest = f;
        for (int ax = rank - 1; ax > lane_axis; --ax) {
          const int e = static_cast<int>(*Halide::Internal::as_const_int(a.ext[static_cast<size_t>(ax)]));
          i[static_cast<size_t>(ax)] = rest % e;
          rest /= e;
        }
        Halide::Expr v = element(i);
        value = value.defined() ? combine(value, v) : v;
      }
      return value;
    };
    // Coordinates of the middle axes 1 .. lane_axis-1 from RDom dimensions first..
    auto middle = [&](const Halide::RDom& r, int first) {
      Coords i(static_cast<size_t>(rank));
      if (!chunked) i[0] = row;
      for (int ax = 1; ax < lane_axis; ++ax) i[static_cast<size_t>(ax)] = r[first + lane_axis - 1 - ax];
      return i;
    };
    auto middle_ranges = [&](Halide::Region* ranges) {
      for (int ax = lane_axis - 1; ax >= 1; --ax) ranges->push_back(Halide::Range(0, a.ext[static_cast<size_t>(ax)]));
    };
    Halide::Region main_ranges = {Halide::Range(0, groups)};
    middle_ranges(&main_ranges);
    Halide::RDom r = shared_domain(main_ranges);
    Halide::Expr pos = chunked   ? row * kChunk + r[0] * kLanes + lane
                       : shifted ? Halide::min(r[0] * kLanes, n - kLanes) + lane
                                 : r[0] * kLanes + lane;
    Halide::Expr value = value_at(middle(r, 1), pos);
    // A float element (see reduce) is summed in float along a row's lane,
    // but a chunk's lanes have 2048 terms each: those sum in double.
    if (chunked && kind != "max_abs") value = Halide::cast<double>(value);
    const Halide::Expr zero = Halide::cast(value.type(), 0);
    if (shifted) value = Halide::select(pos >= r[0] * kLanes, value, zero);
    Halide::Func partial(kind + "_partial" + std::to_string(counter_++));
    partial(lane, row) = zero;
    partial(lane, row) = combine(partial(lane, row), value);
    partial.compute_root().vectorize(lane, kLanes);
    // The vector lanes' loop is named alike in every partial: compute_with
    // fuses two stages' loops only where their names match (fuse_reductions).
    Halide::Var lane_v("lane_v");
    partial.update().parallel(row).split(lane, lane, lane_v, kLanes).vectorize(lane_v);
    if (!chunked) *row_sums = {partial, r, a.ext[0], on.defined()};  // fuse_reductions may share its loops
    Halide::RDom all(0, kLanes, 0, rows);
    Halide::Expr p = Halide::cast<double>(partial(all.x, all.y));
    Halide::Expr total = kind == "max_abs" ? Halide::maximum(p) : Halide::sum(p);
    if (shifted) return define0(kind, total);
    // The rest: n mod kLanes positions per row, or the elements after the
    // last whole chunk.
    Halide::Expr done = chunked ? rows * kChunk : groups * kLanes;
    Halide::Region tail_ranges = {Halide::Range(0, on.defined() ? Halide::select(on, n - done, 0) : n - done)};
    middle_ranges(&tail_ranges);
    Halide::RDom t(tail_ranges);
    Halide::Func tail(kind + "_tail" + std::to_string(counter_++));
    tail(row) = Halide::cast<double>(0);
    tail(row) = combine(tail(row), Halide::cast<double>(value_at(middle(t, 1), done + t[0])));
    tail.compute_root();
    if (!chunked) tail.update().parallel(row);
    Halide::Expr rest;
    if (chunked) {
      rest = tail(0);
    } else {
      Halide::RDom tr(0, rows);
      rest = kind == "max_abs" ? Halide::maximum(tail(tr)) : Halide::sum(tail(tr));
    }
    return define0(kind, combine(total, rest));
  }

  // Whether f reads, directly or through inlined Funcs, a Func with an
  // update that is not at root: an inline reduction (Halide::sum), which
  // Halide computes inside the loop of its consumer.
  bool reads_inline_reduction(const Halide::Internal::Function& f) const {
    auto inner = [&](const Halide::Internal::Function& g) { return g.name() != f.name() && !computed_at_root(g); };
    return any_call_through(definition_exprs(f), inner,
                            [&](const Halide::Internal::Function& g) { return inner(g) && g.has_update_definition(); });
  }

  // The reduction domain over these ranges: one RDom for equal ranges, so
  // that reductions over arrays of the same extents can share its loops
  // (fuse_reductions).
  Halide::RDom shared_domain(const Halide::Region& ranges) {
    auto same = [](const Halide::Region& a, const Halide::Region& b) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!Halide::Internal::equal(a[i].min, b[i].min) || !Halide::Internal::equal(a[i].extent, b[i].extent)) return false;
      }
      return true;
    };
    for (const auto& [region, r] : domains_) {
      if (same(region, ranges)) return r;
    }
    domains_.push_back({ranges, Halide::RDom(ranges)});
    return domains_.back().second;
  }

  // Row sums whose rows are the array's axis 0 and whose reduction domain
  // is one axis (arrays (H, W), or (H, W, C) with C ≤ 4 folded into each
  // element) and that no output's loop computes (fuse_partials_into_outputs)
  // run in strips of kRowsPerTask rows per thread-pool task, as the outputs
  // do, not one row per task: each task is taken from Halide's work queue
  // under its lock (a CG step's ⟨p, A p⟩ over 512 rows was 512 tasks). The
  // row sums of one fuse_reductions group (a star: each joins its first) are
  // split all or none, so that compute_with joins loops of one structure.
  // (An array of few long rows, (4, 10⁶), gets fewer tasks than rows.)
  void split_partial_rows() {
    if (schedule_ != Schedule::Default) return;
    const std::map<std::string, RowSums*> by_name = partials_by_name();
    auto splits = [&](const RowSums& rs) {
      return rs.rows.defined() && rs.domain.dimensions() == 1 && !split_partials_.count(rs.partial.name());
    };
    std::map<std::string, std::set<std::string>> groups;  // by the first member
    for (const auto& [b, a] : reduction_partner_) groups[a].insert({a, b});
    std::set<std::string> keep;
    for (const auto& [first, members] : groups) {
      bool all = true;
      for (const std::string& m : members) all = all && splits(*by_name.at(m));
      if (!all) keep.insert(members.begin(), members.end());
    }
    for (auto& [name, rs] : by_name) {
      if (splits(*rs) && !keep.count(name)) split_rows_into_tasks(rs->partial);
    }
  }
  // Row sums' update over rows in strips of kRowsPerTask rows, one parallel
  // task per strip (the last strip guarded).
  void split_rows_into_tasks(Halide::Func partial) {
    const Halide::Var px("px_0"), in_strip("px_0_in_strip");
    partial.update(0)
        .split(px, px, in_strip, kRowsPerTask, Halide::TailStrategy::GuardWithIf)
        .parallel(px)
        .serial(in_strip);
    split_partials_.insert(partial.name());
  }
  std::map<std::string, RowSums*> partials_by_name() {
    std::map<std::string, RowSums*> by_name;
    for (auto& [id, rs] : partials_) by_name[rs.partial.name()] = &rs;
    return by_name;
  }

  // Vectors along a run-time extent: when every run-time extent is at least
  // kVectorLanes (assume_min_extent), the last vector of a row shifts
  // inwards and recomputes a few elements; otherwise a guarded tail (a
  // second copy of the loop body).
  Halide::TailStrategy vector_tail(int lanes = kVectorLanes) const {
    return min_extent_ >= lanes ? Halide::TailStrategy::ShiftInwards : Halide::TailStrategy::GuardWithIf;
  }
  void schedule_root(Halide::Func f, const std::vector<Halide::Var>& vars, const std::vector<Halide::Expr>& ext,
                     bool small_inner, int unroll_from = 2, int lanes = kVectorLanes) {
    f.compute_root();
    if (vars.empty()) return;
    schedule_vectors(f, vars, ext, small_inner, unroll_from, lanes);
    // The strip loop keeps the row variable's name (fuse_outputs fuses at
    // it; stencils may be computed per strip, see place_strip_candidates).
    // Split when the pipeline is built (split_row_strips), once it is known
    // whether a reduction is gated.
    if (vars.size() >= 2) {
      row_tasks_[f.name()] = vars.front().name();
      row_splits_.push_back({f, ext.front()});
    }
  }
  // Splits the rows of every Func at root into parallel strips of
  // kRowsPerTask rows. The last strip shifts inwards (recomputes a few rows
  // of the one before, as Halide's vectors do at a row's end) when the
  // pipeline promises every run-time extent to be at least kRowsPerTask, the
  // rows are such an extent (or a constant as large), and no reduction is
  // gated. Otherwise it is guarded, which Halide compiles as a second copy
  // of the strip's loops for the last strip: with the shift, LLVM's compile
  // time shrinks by about 15 % (deconvolution with admm's pipelines). A
  // value only a gated-off check reads has an empty region, where a shifted
  // strip would read before row 0; no operator reads fewer rows of a value
  // than an extent of the program has, so other regions hold a strip.
  void split_row_strips() {
    for (const auto& [f0, rows_extent] : row_splits_) {
      Halide::Func f = f0;
      const int64_t* rows_const = Halide::Internal::as_const_int(rows_extent);
      const bool shift = min_extent_ >= kRowsPerTask && !gated_ && (!rows_const || *rows_const >= kRowsPerTask);
      Halide::Var rows(row_tasks_.at(f.name()));
      Halide::Var row(rows.name() + "_in_strip");
      f.split(rows, rows, row, kRowsPerTask, shift ? Halide::TailStrategy::ShiftInwards : Halide::TailStrategy::GuardWithIf)
          .parallel(rows);
    }
    row_splits_.clear();
    strips_split_ = true;
  }
  // The loop order and vectors of schedule_root, wherever f is computed.
  void schedule_vectors(Halide::Func f, const std::vector<Halide::Var>& vars, const std::vector<Halide::Expr>& ext,
                        bool small_inner, int unroll_from, int lanes) const {
    // Vectorize along the image rows. Arrays of rank 3 and more are images
    // with short trailing axes (grad components, colour channels):
    // vectorizing those would waste most lanes, so the vectors run along
    // axis 1 (the columns) with the short axes looped outside it.
    if (vars.size() >= 3 || small_inner) {
      // Short axes of known extent are unrolled and innermost: the selects on
      // the component index fold away, and Halide interleaves the unrolled
      // vectors into dense stores. Other trailing axes loop outside the columns.
      std::vector<bool> unrolled(vars.size(), false);
      for (size_t i = static_cast<size_t>(std::max(2, unroll_from)); i < vars.size(); ++i) {
        unrolled[i] = Halide::Internal::as_const_int(ext[i]) != nullptr;
      }
      std::vector<Halide::VarOrRVar> order;  // innermost first
      for (size_t i = vars.size(); i-- > 2;) {
        if (unrolled[i]) order.push_back(vars[i]);
      }
      order.push_back(vars[1]);
      for (size_t i = vars.size(); i-- > 2;) {
        if (!unrolled[i]) order.push_back(vars[i]);
      }
      order.push_back(vars[0]);
      if (vars.size() >= 3) f.reorder(order);
      f.vectorize(vars[1], lanes, vector_tail(lanes));
      for (size_t i = 2; i < vars.size(); ++i) {
        if (unrolled[i]) f.bound(vars[i], 0, static_cast<int>(*Halide::Internal::as_const_int(ext[i]))).unroll(vars[i]);
      }
    } else {
      f.vectorize(vars.back(), lanes, vector_tail(lanes));
    }
  }
  void schedule_at_root(const Val& v) {
    if (schedule_ != Schedule::Default) return;
    if (v.is_buffer) return;                         // already a buffer
    if (v.vars.empty() && !v.ext.empty()) return;    // an extern stage: already at root
    // (A strip candidate, already in materialized_, is at root after all.)
    if (strip_candidates_.erase(v.f.name()) == 0 && !materialized_.insert(v.f.name()).second) return;
    schedule_root(v.f, v.vars, v.ext, v.small_inner, v.unroll_from, v.lanes > 0 ? v.lanes : kVectorLanes);
    if (v.loads >= 0 && v.loads <= 2 && v.f.num_update_definitions() == 0 && v.f.outputs() == 1) {
      cheap_roots_.insert(v.f.name());
    }
  }
  // A value read at other positions than its own (a stencil): compute it once.
  // Unless it is a pointwise function of at most kStencilInline buffers:
  // re-reading those at each tap costs less than a pass through memory.
  // `local`: the reader's taps are its own row and the rows next to it (grad,
  // div), so the value may be computed per strip of its reader's rows
  // instead (see place_strip_candidates); decided when the pipeline is built.
  static constexpr int kStencilInline = 2;
  Val stencil(const Val& v, bool local = false) {
    if (schedule_ == Schedule::Default && !materialized_.count(v.f.name()) && v.loads >= 0 &&
        v.loads <= kStencilInline) {
      // Inlined into a reader of other rows than the neighbouring ones: the
      // strip candidates it reads are read there too, so they go to root.
      if (!local) root_candidates_read_by(v.f.function());
      return v;
    }
    if (schedule_ == Schedule::Default && local && !v.is_buffer && v.rank() >= 2 && !v.vars.empty() &&
        (strip_candidates_.count(v.f.name()) || materialized_.insert(v.f.name()).second)) {
      strip_candidates_.emplace(v.f.name(), v);
      return v;
    }
    schedule_at_root(v);
    return v;
  }
  // Schedules at root every strip candidate that f reads directly or through
  // Funcs inlined into it.
  void root_candidates_read_by(const Halide::Internal::Function& f) {
    if (strip_candidates_.empty()) return;
    std::vector<Val> read;
    any_call_through(
        definition_exprs(f),
        [&](const Halide::Internal::Function& g) { return !strip_candidates_.count(g.name()) && !computed_at_root(g); },
        [&](const Halide::Internal::Function& g) {
          auto it = strip_candidates_.find(g.name());
          if (it != strip_candidates_.end()) read.push_back(it->second);
          return false;
        });
    for (const Val& c : read) schedule_at_root(c);
  }
  /// Decides where each strip candidate is computed: per strip of rows of
  /// its one reader, when it has one and that reader is computed at root in
  /// strips of kRowsPerTask rows (Halide's compute_at: the strip plus a row
  /// of halo, in a buffer that stays in cache, instead of a pass through
  /// memory that writes the whole array and another that reads it back);
  /// else at root. The reader must not be an extern stage, have update
  /// definitions, share its loop with another output (fuse_outputs) or be a
  /// candidate itself; the candidate must not be an output. Linearized
  /// ADMM's Kx − z + u, which div reads, is such a value. Called by
  /// pipeline(), when every output and fusion is known.
  void place_strip_candidates() {
    if (strip_candidates_.empty()) return;
    std::map<std::string, Halide::Internal::Function> funcs;
    std::set<std::string> output_names;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      if (merged_.count(static_cast<int>(k))) continue;
      const Halide::Internal::Function f = outputs_[k].function();
      output_names.insert(f.name());
      funcs.emplace(f.name(), f);
      for (const auto& [name, g] : Halide::Internal::find_transitive_calls(f)) funcs.emplace(name, g);
    }
    std::map<std::string, Val> candidates;
    candidates.swap(strip_candidates_);
    // Funcs with loops of their own: outputs, candidates, and those scheduled somewhere.
    auto has_loops = [&](const Halide::Internal::Function& g) {
      if (output_names.count(g.name()) || candidates.count(g.name()) || g.has_extern_definition()) return true;
      Halide::LoopLevel level = g.schedule().compute_level();
      return !level.lock().is_inlined();  // (lock: compute_at's level is resolved at lowering)
    };
    // The Funcs with loops that read `name`, directly or through inlined Funcs
    // (an extern stage through its arguments).
    auto readers_of = [&](const std::string& name) {
      std::vector<Halide::Internal::Function> readers;
      for (const auto& [rname, r] : funcs) {
        if (rname == name || !has_loops(r)) continue;
        std::vector<Halide::Expr> exprs = definition_exprs(r);
        bool reads = false;
        for (const Halide::ExternFuncArgument& a : r.extern_arguments()) {
          reads = reads || (a.is_func() && Halide::Internal::Function(a.func).name() == name);
          if (a.is_expr()) exprs.push_back(a.expr);
        }
        reads = reads || any_call_through(
                             exprs, [&](const Halide::Internal::Function& g) { return !has_loops(g); },
                             [&](const Halide::Internal::Function& g) { return g.name() == name; });
        if (reads) readers.push_back(r);
      }
      return readers;
    };
    for (const auto& [name, v] : candidates) {
      const int lanes = v.lanes > 0 ? v.lanes : kVectorLanes;
      const std::vector<Halide::Internal::Function> readers = readers_of(name);
      if (readers.size() == 1) {
        const Halide::Internal::Function& r = readers[0];
        auto task = row_tasks_.find(r.name());
        if (task != row_tasks_.end() && !output_names.count(name) && !r.has_extern_definition() &&
            r.updates().empty() && !fused_.count(r.name()) && !candidates.count(r.name())) {
          Halide::Func f = v.f;
          f.compute_at(Halide::Func(r), Halide::Var(task->second));
          schedule_vectors(f, v.vars, v.ext, v.small_inner, v.unroll_from, lanes);
          continue;
        }
      }
      schedule_root(v.f, v.vars, v.ext, v.small_inner, v.unroll_from, lanes);
    }
  }
  // The row sums fuse_reductions fused (reduction_partner_) in one loop:
  // along each row too where they have one domain (each element's terms of
  // both sums computed in one place: the loads and differences they share
  // are done once), not when either reads an inline reduction (a direct
  // convolution's sum over its taps): Halide computes that inside the loop
  // of its consumers, and for two consumers fused below the row
  // (compute_with at an RVar) Halide 14 bounds it by the loop variables of
  // both, one of which is not defined there.
  void fuse_partials() {
    const std::map<std::string, RowSums*> by_name = partials_by_name();
    for (const auto& [b, a] : reduction_partner_) {
      RowSums& ra = *by_name.at(a);
      RowSums& rb = *by_name.at(b);
      if (ra.domain.same_as(rb.domain) && !reads_inline_reduction(ra.partial.function()) &&
          !reads_inline_reduction(rb.partial.function())) {
        rb.partial.update(0).compute_with(ra.partial.update(0), ra.domain[0]);
      } else {
        rb.partial.update(0).compute_with(ra.partial.update(0), Halide::Var("px_0"));
      }
    }
    reduction_partner_.clear();
  }
  /// Computes the row sums of a reduction in the loop over rows of an output
  /// that reads an array they read (Halide's compute_with at the strip
  /// loop): the second read of each strip then comes from cache, and a
  /// parallel loop is saved. The reduction must be ungated, of rows of its
  /// array (not chunks), over as many rows as the output; neither may depend
  /// on the other nor on another member of the output's loop. A CG step's
  /// ‖r'‖² so shares the loop that writes x' and r' (from r and A p, below),
  /// cg_init's ‖rhs‖² the loop that writes r. Such row
  /// sums leave a fuse_reductions group. Row sums that read a member of the
  /// loop that is a pointwise function of at most two arrays at root (a CG
  /// step's r' = r − α A p) read those arrays instead, the member's
  /// definition inlined into them, when that makes them independent (only
  /// then: elsewhere they keep reading the one array). Called by pipeline().
  void fuse_partials_into_outputs() {
    if (schedule_ != Schedule::Default || partials_.empty()) return;
    std::map<std::string, Halide::Internal::Function> outs;  // outputs at root in row strips
    std::vector<std::string> out_order;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      if (merged_.count(static_cast<int>(k))) continue;
      const Halide::Func& f = outputs_[k];
      if (!f.defined() || f.is_extern() || f.num_update_definitions() != 0 || !row_tasks_.count(f.name())) continue;
      if (outs.emplace(f.name(), f.function()).second) out_order.push_back(f.name());
    }
    auto rows_of = [&](const std::string& name) -> Halide::Expr {
      for (const auto& [f, rows] : row_splits_) {
        if (f.name() == name) return rows;
      }
      return Halide::Expr();
    };
    // What a Func reads, directly or through Funcs inlined into it: the
    // names of the buffers (ImageParams) and the Funcs with loops.
    auto reads = [&](const Halide::Internal::Function& f) {
      std::set<std::string> names;
      std::vector<Halide::Internal::Function> work = {f};
      std::set<std::string> seen = {f.name()};
      while (!work.empty()) {
        Halide::Internal::Function g = work.back();
        work.pop_back();
        struct Reads : Halide::Internal::IRVisitor {
          std::set<std::string>* names;
          std::vector<Halide::Internal::Function> funcs;
          using Halide::Internal::IRVisitor::visit;
          void visit(const Halide::Internal::Call* op) override {
            if (op->call_type == Halide::Internal::Call::Image) names->insert(op->name);
            if (op->call_type == Halide::Internal::Call::Halide && op->func.defined()) funcs.emplace_back(op->func);
            Halide::Internal::IRVisitor::visit(op);
          }
        } v;
        v.names = &names;
        for (const Halide::Expr& e : definition_exprs(g)) e.accept(&v);
        for (const Halide::Internal::Function& h : v.funcs) {
          if (!seen.insert(h.name()).second) continue;
          Halide::LoopLevel level = h.schedule().compute_level();
          if (!level.lock().is_inlined() || outs.count(h.name()) || h.has_extern_definition()) {
            names.insert(h.name());
          } else {
            work.push_back(h);
          }
        }
      }
      return names;
    };
    auto calls = [](const Halide::Internal::Function& f, const std::string& name) {
      return Halide::Internal::find_transitive_calls(f).count(name) > 0;
    };
    std::map<std::string, std::vector<Halide::Internal::Function>> members;  // of each lead's loop
    std::map<std::string, std::set<std::string>> out_reads;
    auto lead_of = [&](std::string o) {  // the first of o's compute_with group (followed to its end)
      for (size_t steps = 0; steps < group_lead_.size(); ++steps) {
        auto it = group_lead_.find(o);
        if (it == group_lead_.end()) break;
        o = it->second;
      }
      return o;
    };
    for (const std::string& o : out_order) {
      members[lead_of(o)].push_back(outs.at(o));
      out_reads[o] = reads(outs.at(o));
    }
    for (const std::string& id : partial_order_) {
      RowSums& rs = partials_.at(id);
      if (rs.gated || !rs.rows.defined()) continue;
      const Halide::Internal::Function pf = rs.partial.function();
      const std::set<std::string> pr = reads(pf);
      for (const std::string& o : out_order) {
        const std::string lead = lead_of(o);
        if (!outs.count(lead)) continue;
        const Halide::Expr rows = rows_of(lead);
        if (!rows.defined() || !Halide::Internal::equal(rows, rs.rows)) continue;
        const std::set<std::string>& orr = out_reads.at(o);
        const std::vector<Halide::Internal::Function>& loop = members.at(lead);
        bool member_calls_pf = false, pf_calls_member = false;
        for (const Halide::Internal::Function& m : loop) {
          member_calls_pf = member_calls_pf || calls(m, pf.name());
          pf_calls_member = pf_calls_member || calls(pf, m.name());
        }
        if (member_calls_pf) continue;
        // Cheap members to inline, where the row sums read the loop.
        std::map<std::string, Halide::Internal::Function> inline_members;
        if (pf_calls_member && !members_to_inline(pf, loop, &inline_members)) continue;
        bool shares = false;
        for (const std::string& n : pr) shares = shares || orr.count(n);
        for (const auto& [n, c] : inline_members) {
          for (const std::string& r : reads(c)) shares = shares || orr.count(r);
        }
        if (!shares) continue;
        if (!inline_members.empty()) inline_calls(pf, inline_members);
        Halide::Func p = rs.partial;
        split_rows_into_tasks(p);
        p.update(0).compute_with(Halide::Func(outs.at(lead)), Halide::Var(row_tasks_.at(lead)));
        members.at(lead).push_back(pf);
        // Out of its fuse_reductions group.
        for (auto it = reduction_partner_.begin(); it != reduction_partner_.end();) {
          it = it->first == pf.name() || it->second == pf.name() ? reduction_partner_.erase(it) : std::next(it);
        }
        break;
      }
    }
  }
  // Whether inlining the loop members the row sums pf call directly leaves
  // pf independent of the loop: each such member must be a cheap root
  // (cheap_roots_) that calls no member, and nothing else pf calls may reach
  // one. The members to inline go to *out.
  bool members_to_inline(const Halide::Internal::Function& pf, const std::vector<Halide::Internal::Function>& loop,
                         std::map<std::string, Halide::Internal::Function>* out) const {
    std::set<std::string> names;
    for (const Halide::Internal::Function& m : loop) names.insert(m.name());
    for (const Halide::Internal::Function& c : direct_calls(definition_exprs(pf))) {
      if (c.name() == pf.name()) continue;  // the update's read of the sums themselves
      const bool member = names.count(c.name()) > 0;
      if (member && !cheap_roots_.count(c.name())) return false;
      // (Halide's transitive calls of c include c.)
      std::map<std::string, Halide::Internal::Function> reach = Halide::Internal::find_transitive_calls(c);
      if (member) reach.erase(c.name());
      for (const auto& [n, f] : reach) {
        if (names.count(n)) return false;
      }
      if (member) out->emplace(c.name(), c);
    }
    return !out->empty();
  }
  // Replaces f's calls of the targets (pure Funcs) by their definitions at
  // the calls' coordinates.
  static void inline_calls(Halide::Internal::Function f, const std::map<std::string, Halide::Internal::Function>& targets) {
    struct Inline : Halide::Internal::IRMutator {
      const std::map<std::string, Halide::Internal::Function>* targets;
      using Halide::Internal::IRMutator::visit;
      Halide::Expr visit(const Halide::Internal::Call* op) override {
        auto t = op->call_type == Halide::Internal::Call::Halide ? targets->find(op->name) : targets->end();
        if (t == targets->end()) return IRMutator::visit(op);
        const Halide::Internal::Function& g = t->second;
        std::map<std::string, Halide::Expr> at;
        for (size_t i = 0; i < op->args.size(); ++i) at[g.args()[i]] = mutate(op->args[i]);
        return Halide::Internal::substitute(at, g.values()[static_cast<size_t>(op->value_index)]);
      }
    } in;
    in.targets = &targets;
    f.mutate(&in);
  }
  // The loads per element of a pointwise function of these operands when
  // inlined: 1 per buffer or value at root, 0 per scalar, -1 (unknown, many)
  // if an operand is itself an inlined value of unknown cost.
  int inline_loads(std::initializer_list<const Val*> operands) const {
    int n = 0;
    for (const Val* o : operands) {
      if (o->rank() == 0) continue;
      if (o->is_buffer || materialized_.count(o->f.name())) {
        n += 1;
      } else if (o->loads >= 0) {
        n += o->loads;
      } else {
        return -1;
      }
    }
    return n;
  }

  Val color_impl(const Val& x, const std::vector<Halide::Expr>& m, bool adjoint, const Ext& ext) {
    return define(adjoint ? "color_t" : "color", extents(ext), [&](const Coords& c) {
      std::vector<Halide::Expr> rows;
      for (int o = 0; o < 3; ++o) {
        Halide::Expr s = 0.0f;
        for (int j = 0; j < 3; ++j) {
          Coords src = c;
          src.back() = j;
          s = s + (adjoint ? m[static_cast<size_t>(j * 3 + o)] : m[static_cast<size_t>(o * 3 + j)]) * call(x, src);
        }
        rows.push_back(s);
      }
      return Halide::select(c.back() == 0, rows[0], c.back() == 1, rows[1], rows[2]);
    });
  }

  struct Taps {
    Halide::Expr valid;
    Halide::Expr r[4], c[4], w[4];
  };
  static Taps warp_taps(const std::vector<Halide::Expr>& h, Halide::Expr i, Halide::Expr j, Halide::Expr rows,
                        Halide::Expr cols) {
    using Halide::cast;
    Halide::Expr fi = cast<float>(i), fj = cast<float>(j);
    Halide::Expr u = h[0] * fj + h[1] * fi + h[2];
    Halide::Expr vv = h[3] * fj + h[4] * fi + h[5];
    Halide::Expr w = h[6] * fj + h[7] * fi + h[8];
    Halide::Expr sx = u / w, sy = vv / w;
    Taps t;
    t.valid = w != 0.0f && sx >= -1.0f && sy >= -1.0f && sx <= cast<float>(cols) && sy <= cast<float>(rows);
    Halide::Expr sxc = Halide::clamp(sx, -2.0f, cast<float>(cols) + 1), syc = Halide::clamp(sy, -2.0f, cast<float>(rows) + 1);
    Halide::Expr x0 = cast<int>(Halide::floor(sxc)), y0 = cast<int>(Halide::floor(syc));
    Halide::Expr fx = sxc - cast<float>(x0), fy = syc - cast<float>(y0);
    const int dr[4] = {0, 0, 1, 1}, dc[4] = {0, 1, 0, 1};
    for (int k = 0; k < 4; ++k) {
      t.r[k] = y0 + dr[k];
      t.c[k] = x0 + dc[k];
      Halide::Expr wx = dc[k] ? fx : 1.0f - fx, wy = dr[k] ? fy : 1.0f - fy;
      Halide::Expr inside = t.r[k] >= 0 && t.r[k] < rows && t.c[k] >= 0 && t.c[k] < cols;
      t.w[k] = Halide::select(t.valid && inside, wx * wy, 0.0f);
    }
    return t;
  }
  static std::vector<Halide::Expr> homography(const Val& h) {
    std::vector<Halide::Expr> e;
    for (int i = 0; i < 9; ++i) e.push_back(call(h, {i / 3, i % 3}));
    return e;
  }

  // The group axes' extents multiplied, when all are compile-time constants
  // (gradient components, colour channels); 0 otherwise.
  static int64_t const_group_size(const Val& u, const std::vector<int>& axes) {
    int64_t n = 1;
    for (int a : axes) {
      const int64_t* e = Halide::Internal::as_const_int(u.ext[static_cast<size_t>(a)]);
      if (!e) return 0;
      n *= *e;
    }
    return n;
  }
  // Groups this small are summed as one expression (no reduction loop), so
  // the prox's operand can be inlined: each entry recomputes its group's
  // few values instead of reading them back from memory.
  static constexpr int64_t kShortGroup = 16;
  static bool short_group(const Val& u, const std::vector<int>& axes) {
    const int64_t n = const_group_size(u, axes);
    return n > 0 && n <= kShortGroup;
  }
  static Halide::Expr group_sum_squares(const Val& u, const std::vector<int>& axes, const Coords& i) {
    if (short_group(u, axes)) {
      Halide::Expr total;
      for (int64_t k = 0; k < const_group_size(u, axes); ++k) {
        Coords src = i;
        int64_t rest = k;
        for (int a : axes) {
          const int64_t e = *Halide::Internal::as_const_int(u.ext[static_cast<size_t>(a)]);
          src[static_cast<size_t>(a)] = static_cast<int>(rest % e);
          rest /= e;
        }
        Halide::Expr e = call(u, src);
        total = total.defined() ? total + e * e : e * e;
      }
      return total;
    }
    Halide::Region ranges;
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) ranges.push_back(Halide::Range(0, u.ext[static_cast<size_t>(*it)]));
    Halide::RDom r(ranges);
    Coords src = i;
    for (size_t k = 0; k < axes.size(); ++k) src[static_cast<size_t>(axes[k])] = r[static_cast<int>(axes.size() - 1 - k)];
    Halide::Expr e = call(u, src);
    return Halide::sum(e * e);
  }
  static Halide::RDom full_domain(const std::vector<Halide::Expr>& ext) {
    Halide::Region ranges;
    for (auto it = ext.rbegin(); it != ext.rend(); ++it) ranges.push_back(Halide::Range(0, *it));
    return Halide::RDom(ranges);
  }
  static Coords domain_point(const Halide::RDom& r, size_t rank) {
    Coords i(rank);
    for (size_t a = 0; a < rank; ++a) i[a] = r[static_cast<int>(rank - 1 - a)];
    return i;
  }

  // ---- Recording ----

  static std::string fmt(const Val& v) { return v.defined() ? v.id : "{}"; }
  static std::string fmt(const RawArg& r) { return r.text; }
  static std::string fmt(int i) { return std::to_string(i); }
  static std::string fmt(bool b) { return b ? "true" : "false"; }
  static std::string fmt(double d) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return buf;
  }
  static std::string fmt(const std::string& s) {
    std::string o = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') o += '\\';
      o += ch;
    }
    return o + "\"";
  }
  template <typename T>
  static std::string fmt(const std::vector<T>& v) {
    std::string o = "{";
    for (size_t i = 0; i < v.size(); ++i) o += (i ? ", " : "") + fmt(v[i]);
    return o + "}";
  }
  template <typename... A>
  static std::string args(const A&... a) {
    std::string o;
    ((o += (o.empty() ? "" : ", ") + fmt(a)), ...);
    return o;
  }
  template <typename... A>
  Val rec(Val v, const char* op, const A&... a) {
    v.id = "v" + std::to_string(ids_++);
    if (record_) *record_ << "  Val " << v.id << " = g." << op << "(" << args(a...) << ");\n";
    return v;
  }

  Schedule schedule_;
  std::ostream* record_;
  int min_extent_ = 0;  ///< see assume_min_extent
  bool gated_ = false;  ///< a reduction is gated (see reduce, split_row_strips)
  bool strips_split_ = false;  ///< split_row_strips ran (pipeline() was called)
  std::vector<std::pair<Halide::Func, Halide::Expr>> row_splits_;  ///< see split_row_strips: Funcs, their rows' extent
  std::pair<std::string, std::string> autoscheduler_;
  int counter_ = 0;
  int ids_ = 0;
  int term_ids_ = 0;
  std::set<std::string> materialized_;
  std::set<std::string> black_boxes_;
  std::set<std::string> output_funcs_;  ///< materialized values that are outputs themselves
  std::set<int> merged_;                ///< outputs computed as the second value of a pair (pair_outputs)
  std::set<std::string> fused_;         ///< outputs in a compute_with group (fuse_outputs)
  std::map<std::string, Val> strip_candidates_;     ///< see stencil(v, local), place_strip_candidates
  std::map<std::string, std::string> row_tasks_;  ///< Funcs at root by strips of rows: their strip loop
  std::map<std::string, RowSums> partials_;  ///< row-parallel reductions, by Val id
  std::vector<std::string> partial_order_;    ///< their Val ids in the order reduce made them
  std::set<std::string> split_partials_;       ///< row sums whose rows run in strips (split_partial_rows)
  std::set<std::string> cheap_roots_;         ///< at root, pointwise of at most 2 arrays (see fuse_partials_into_outputs)
  std::map<std::string, std::string> group_lead_;         ///< an output fused into another's loop: that one
  std::map<std::string, std::string> reduction_partner_;  ///< row sums fused with others (fuse_reductions)
  std::vector<std::pair<Halide::Region, Halide::RDom>> domains_;  ///< see shared_domain
  std::map<std::string, Halide::ImageParam> inputs_;
  std::map<std::string, Halide::Param<double>> params_;
  std::map<int, Halide::ImageParam> data_;
  std::map<int, Halide::ImageParam> spectra_;
  std::map<int, Halide::ImageParam> otfs_;
  std::map<int, Halide::Param<float>> scalars_;
  std::map<int, Halide::Param<int>> extents_;
  std::vector<Halide::Func> outputs_;
  std::vector<Ext> output_ext_;
  std::map<std::string, Ext> buffer_ext_;  ///< by ImageParam name
  std::map<int, Ext> spectrum_ext_;        ///< the spatial extents of each spectrum's signal
  std::map<int, Ext> otf_ext_;             ///< the same for each otf
};

}  // namespace proxc::halide_ops
