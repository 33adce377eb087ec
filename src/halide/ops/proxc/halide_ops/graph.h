/// \file
/// proxc::halide_ops::Graph, the class of the Halide-op library, with the
/// values it builds (Val, Ext) and its slots, buffers and the definition of
/// values. proxc/halide_ops.h describes the library and includes every part.
#pragma once

#include <Halide.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"

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

/// The value of a constant integer expression, if it is one (Halide 14
/// answers with a pointer, Halide 21 with an optional).
inline std::optional<int64_t> const_int_value(const int64_t* v) {
  return v ? std::optional<int64_t>(*v) : std::nullopt;
}
inline std::optional<int64_t> const_int_value(std::optional<int64_t> v) { return v; }
inline std::optional<int64_t> const_int(const Halide::Expr& e) {
  return const_int_value(Halide::Internal::as_const_int(e));
}

/// Default: proxc's hand-written CPU schedule (vectorized, parallel, values
/// that are read at several places computed at root). None: no schedule at
/// all, for an autoscheduler. Gpu: the values the default schedule computes
/// at root, each a GPU kernel of 16×16 threads over its two innermost axes
/// that are not short compile-time axes (schedule_gpu), and
/// reductions as partial values on the device (coalesced: a thread per
/// column and block of rows, then per column) that the host adds up in
/// double; for a target with a GPU feature (CUDA, OpenCL with cl_doubles).
/// GpuFloat: the same kernels without double precision in any of them, for
/// OpenCL devices without cl_khr_fp64: the reductions' partial values are
/// float on the device (the host still adds the last ones in double), and
/// the doubles a kernel would read (scalar parameters, the host's scalar
/// values) are rounded to float on the host before it starts
/// (DemoteKernelDoubles, float_kernels.h).
enum class Schedule { Default, None, Gpu, GpuFloat };

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
#if HALIDE_VERSION_MAJOR < 15
    if (!t.has_feature(Halide::Target::EnableLLVMLoopOpt)) t.set_feature(Halide::Target::DisableLLVMLoopOpt);
#endif
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
  /// GPU schedules: FFT stages on the device (api 1: clFFT on OpenCL, 2: cuFFT on CUDA) instead of FFTW on the
  /// host (0), see device_fft_filter. Call it before the first FFT stage.
  void device_fft(int api);
  /// GPU schedules: convolutions of at least n taps (kStagedTaps by default; 0: none) read their operand from a
  /// tile staged in each block's shared memory (conv, schedule_gpu). Call it before the first convolution.
  void staged_taps(int n);
  void temporal_blocking(int n);  ///< for n unrolled iterations (--fuse n, temporal.h). Call it first.
  bool blocked_in_time() const { return strip_rows_ != kRowsPerTask; }  ///< after pipeline(): it took effect

  // ---- Slots and buffers ----

  /// Extent slot i (created on first use), or the constant −i when i < 0.
  Halide::Expr extent(int i) { return i < 0 ? Halide::Expr(-i) : slot(extents_, i, "e"); }
  std::vector<Halide::Expr> extents(const Ext& e);
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
  Val param(const std::string& name);
  /// A float32 input buffer (named in_<name>).
  Val input(const std::string& name, const Ext& ext);
  /// Data array slot i (a constant of the problem: b, a kernel, a mask).
  Val data(int i, const Ext& ext);

  // ---- Pointwise ----

  Val zeros(const Ext& ext) {
    return rec(define("zero", extents(ext), [](const Coords&) { return Halide::Expr(0.0f); }), "zeros", ext);
  }
  /// Every entry equal to the float scalar s.
  Val fill(const Val& s, const Ext& ext) {
    return rec(define("fill", extents(ext), [&](const Coords&) { return at(s, {}); }), "fill", s, ext);
  }
  /// add, sub, mul, div, min, max; a rank-0 operand is broadcast.
  Val binary(const std::string& op, const Val& a, const Val& b, const Ext& ext);
  /// neg, abs, sqrt, sign.
  Val unary(const std::string& op, const Val& a, const Ext& ext);
  /// a·x + b·y with double scalars a, b.
  Val axpby(const Val& a, const Val& x, const Val& b, const Val& y, const Ext& ext);
  /// The sum of several arrays of one shape, left to right.
  Val sum(const std::vector<Val>& parts, const Ext& ext);

  // ---- Linear operators and their adjoints ----

  // Along axis 1, the one the default schedule vectorizes, a border clamp
  // or select is marked as likely not to apply: Halide then partitions the
  // loops that read it into a border vector and a steady state without the
  // clamp, where the loads are dense instead of gathered lane by lane.
  static Halide::Expr likely_inside(int ax, const Halide::Expr& e) { return ax == 1 ? Halide::likely(e) : e; }

  /// Forward differences along the first d axes, stacked on a new last axis
  /// of extent d; zero at the far border.
  Val grad(const Val& x0, int d, const Ext& ext);
  /// The adjoint of grad: minus the divergence.
  Val grad_t(const Val& p0, int d, const Ext& ext);
  /// grad with x past its last entry 0 (circular false) or its first entry
  /// (circular true), and (adjoint) its transpose; ext: the result's extents.
  Val grad_bounded(const Val& v0, int d, bool circular, bool adjoint, const Ext& ext);
  /// Circular convolution with kernel k centred at k.ext/2 (adjoint: correlation).
  Val conv(const Val& k, const Val& x0, bool adjoint, const Ext& ext);
  /// A convolution over the first `dims` axes with x wrapped (boundary 0),
  /// zero outside its extent (1) or its border repeated (2), and the
  /// kernel's axes beyond dims holding one kernel per slice; the adjoint is
  /// the exact transpose (replicate: the correlation over the extended
  /// domain, its overhang folded back onto the border, axis by axis).
  Val conv_general(const Val& k, const Val& x0, bool adjoint, int boundary, int dims, const Ext& ext);
  /// The same convolution by FFT (the extern stage proxc_fft_conv of
  /// libproxc_runtime): the kernel's transfer function is otf slot `otf`, a
  /// float buffer (re, im) × FFTW's r2c layout over the first kr axes.
  Val fft_conv(const Val& x0, int otf, int kr, bool adjoint, const Ext& ext);

  /// A user black-box operator (include/proxc/black_box.h), forward or
  /// adjoint: the extern stage proxc_black_box_stage of libproxc_runtime, which
  /// finds the operator registered under `name` in the running program.
  /// in_ext: the extents of x; ext: of the result.
  Val black_box(const Val& x0, const std::string& name, bool adjoint, const Ext& in_ext, const Ext& ext);

  /// x[::f0, ::f1, ...].
  Val subsample(const Val& x0, const std::vector<int>& factors, const Ext& ext);
  /// The adjoint of subsample: y at multiples of the factors, zero elsewhere.
  Val upsample(const Val& y0, const std::vector<int>& factors, const Ext& ext);
  /// The flattened parts one after another (a 1-D array).
  Val stack(const std::vector<Val>& parts0, const Ext& ext);
  /// Part k of a stacked 1-D array whose parts have extents `parts`.
  Val unstack(const Val& y0, const std::vector<Ext>& parts, int k);
  /// The same entries in C order with extents ext.
  Val reshape(const Val& x0, const Ext& ext);
  /// out axis i = x axis perm[i] (adjoint: the inverse permutation).
  Val transpose(const Val& x0, const std::vector<int>& perm, bool adjoint, const Ext& ext);
  /// x[o0:o0+n0, ...].
  Val crop(const Val& x0, const std::vector<int>& offsets, const Ext& ext);
  /// The adjoint of crop: y placed at the offsets, zero around it.
  Val pad(const Val& y0, const std::vector<int>& offsets, const Ext& ext);
  /// A 3×3 colour transform of the last axis by a 3×3 data array (adjoint: its transpose).
  Val color(const Val& x0, const Val& matrix, bool adjoint, const Ext& ext);
  /// The same with the matrix in scalar slots first..first+8 (row major).
  Val color_slots(const Val& x0, int first, bool adjoint, const Ext& ext);
  /// ProxImaL's pxwise_matrixmult, out(p..., i) = Σ_j a(p..., i, j) x(p..., j), `terms` (M, or N in
  /// the adjoint out(p..., j) = Σ_i a(p..., i, j) y(p..., i)) unrolled. ext: the output's.
  Val pixel_matrix(const Val& a, const Val& x0, bool adjoint, const Ext& ext, int terms);
  /// Bilinear warp of the first two axes: output pixel (i, j) samples x at the (row, col) h·(i, j, 1),
  /// zero outside; ext the output's (a target shape); h (3, 3, K): slice k by homography k.
  Val warp(const Val& h, const Val& x0, const Ext& ext);
  /// The adjoint of warp: a scatter over the output pixels.
  Val warp_t(const Val& h, const Val& y0, const Ext& ext);
  /// ProxImaL's uneven_subsample: output entry o is x at idx(0, o), idx(1, o), ... (a float data
  /// array of whole numbers), 0 where they fall outside x. ext: the output's extents.
  Val uneven_subsample(const Val& x0, const Val& idx, const Ext& ext);
  /// Its adjoint: y scattered back (serially: two entries may share a
  /// source); ext: x's extents.
  Val uneven_subsample_t(const Val& y0, const Val& idx, const Ext& ext);

  // ---- Prox functions and values ----

  /// The operands of a function term f(x) = alpha·φ(beta·x − b) + cᵀx +
  /// gamma·‖x‖² + d: rank-0 float scalars or arrays of x's shape.
  struct Term {
    std::string kind;  ///< the function's keyword (sum_squares, norm1, weighted_norm1, ...)
    Val alpha, beta, gamma, d, b, c, lower, upper;
    Val counts;             ///< poisson_norm, weighted_poisson_norm only
    Val weight;             ///< the weighted functions' weight, masked_nonneg's mask
    std::vector<int> axes;  ///< group_norm1 only
    std::string id;         ///< its variable in the recorded source
    std::string user_name;             ///< kind "prox_fn": the registered name (proxc/prox_fn.h)
    std::vector<double> user_params;  ///< kind "prox_fn": its parameters' values
  };
  Term term(const std::string& kind, const Val& alpha, const Val& beta, const Val& gamma, const Val& d,
            const Val& b, const Val& c, const Val& lower, const Val& upper, const Val& counts, const Val& weight,
            const std::vector<int>& axes);
  /// A prox function of the user's (proxc/prox_fn.h) as a term (kind
  /// "prox_fn"): its registered name and its parameters' values.
  Term user_term(const std::string& name, const std::vector<double>& params, const Val& alpha, const Val& beta,
                 const Val& gamma, const Val& d, const Val& b, const Val& c);
  /// prox_{f/rho}(v) for the term t (SEMANTICS.md's formula with the
  /// affine argument folded in); rho is a double scalar. A prox function
  /// of the user's runs as the extern stage proxc_prox_fn_stage of
  /// libproxc_runtime on its whole (folded) argument.
  Val prox(const Term& t, const Val& v, const Val& rho_val);
  /// f(v) in double; indicators are 0 within `slack` of their set and inf
  /// (the scalar `inf`) outside.
  Val value(const Term& t, const Val& v0, const Val& inf_val, double slack);

  // ---- Reductions, solves ----

  /// sum, sum_squares, max_abs (of a) or dot (of a and b), as a double. With a
  /// gate (a param), the reduction runs only when the gate is not 0: its
  /// domain is empty otherwise (value 0), and so is every region of a value
  /// only it reads, which is then not computed either.
  Val reduce(const std::string& kind, const Val& a0, const Val& b0, const Val& gate = Val());
  /// x = (a·I + c·KᵀK)⁻¹ rhs (a, c: scalars of constants and parameters, not
  /// computed ones) for the circular convolution K whose |otf|² is
  /// spectrum slot `spectrum` (FFTW r2c layout over the first kr axes): the
  /// extern stage proxc_circulant_solve (libproxc_runtime).
  Val circulant_solve(const Val& rhs0, int spectrum, int kr, const Val& a0, const Val& c0, const Ext& ext);

  // ---- Scheduling and outputs ----

  /// Computes v once, at root (a value read at many places or by several users).
  void materialize(const Val& v) {
    if (record_) *record_ << "  g.materialize(" << v.id << ");\n";
    schedule_at_root(v);
  }
  /// Makes v (of extents ext) an output of the pipeline: v itself when it is
  /// already computed at root (its users then read the output buffer), else
  /// a copy named <name>_out.
  Halide::Func output(const std::string& name, const Val& v, const Ext& ext);

  /// Computes output b in the same loop over rows as output a (Halide's
  /// compute_with at the outermost, parallel, row loop): each row of b is
  /// computed right after the same row of a, while the values both read are
  /// still in cache. Neither may read the other, nor anything else fused
  /// with a (the caller checks: fused stages cannot be producer and
  /// consumer). Both must be pure outputs at root of rank >= 2 with the same
  /// number of rows; otherwise nothing changes (false).
  bool fuse_outputs(int a, int b);

  // The Funcs an expression calls directly (Halide Funcs only, not buffers).
  static std::vector<Halide::Internal::Function> direct_calls(const std::vector<Halide::Expr>& exprs);
  // The expressions of a Func's definitions (values, and update arguments).
  static std::vector<Halide::Expr> definition_exprs(const Halide::Internal::Function& f);
  bool computed_at_root(const Halide::Internal::Function& g) const {
    return materialized_.count(g.name()) || output_funcs_.count(g.name()) || g.has_extern_definition();
  }
  // Calls `visit` on each Func that exprs call, directly or through the Funcs
  // for which `inlined` holds (their definitions are read too), each once;
  // true as soon as a visit returns true.
  using FunctionTest = std::function<bool(const Halide::Internal::Function&)>;
  static bool any_call_through(const std::vector<Halide::Expr>& exprs, const FunctionTest& inlined,
                               const FunctionTest& visit);
  // Whether e calls the Func `name`, directly or through Funcs inlined into it.
  bool calls_through_inlined(const Halide::Expr& e, const std::string& name) const;

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
  bool pair_outputs(int a, int b);

  /// Computes the row sums of reduction b in the same loop over rows as
  /// those of reduction a (compute_with), so that arrays both read are read
  /// once: the residual norms of a convergence check read x, y and their
  /// updates in one pass instead of one pass per norm. The caller checks that
  /// both reduce arrays of as many rows and that neither depends on the
  /// other. False (nothing changes) unless both are row-parallel reductions.
  bool fuse_reductions(const Val& a, const Val& b);

  /// Estimates of every argument and output from the slots' values, for an
  /// autoscheduler (run-time parameters such as rho are estimated as 1).
  void set_estimates(const std::vector<int64_t>& extent_values, const std::vector<double>& scalar_values);

  /// Schedules the pipeline with an autoscheduler: `plugin` is the path of
  /// its library (libautoschedule_<name>.so), `name` its registered name
  /// (Mullapudi2016, Adams2019, Li2018). Needs Schedule::None and set_estimates.
  Halide::AutoSchedulerResults auto_schedule(const std::string& plugin, const std::string& name,
                                             const Halide::Target& t);

  /// The outputs' Funcs in order (a Tuple-valued one for a pair stands for both).
  Halide::Pipeline pipeline();

  /// Schedule::Gpu: every Func that `outs` call and that is computed at root
  /// (or is one of them), except extern stages and scalars, becomes a GPU
  /// kernel: 16×16 threads over its two innermost axes that are not short
  /// compile-time axes (gradient components, colour channels: those loop
  /// inside a thread), or 64 threads along its one long axis. Update
  /// definitions that write at the pure coordinates get the same tiling;
  /// others, and scalars, run on the host (Halide copies what they read).
  void schedule_gpu(const std::vector<Halide::Func>& outs);

  /// Arrays are dense (numpy order, no padding): each axis's stride is the
  /// product of the extents inside it. Where those extents are known at
  /// compile time (short trailing axes: gradient components, colour
  /// channels), the strides are constrained to match, so Halide loads and
  /// stores such arrays densely with shuffles instead of gathering and
  /// scattering 8 lanes at a run-time stride. (Halide checks the buffers
  /// it is given against them.)
  static void dense_strides(Halide::OutputImageParam b, const Ext& ext);
  const std::vector<Halide::Func>& outputs() const { return outputs_; }

  /// The pipeline's arguments in order: inputs (by name), params (by name),
  /// data slots, spectra, transfer functions (otf), scalar slots, extent slots.
  std::vector<Halide::Argument> arguments() const;

  std::map<std::string, Halide::ImageParam>& inputs() { return inputs_; }
  std::map<std::string, Halide::Param<double>>& params() { return params_; }
  std::map<int, Halide::ImageParam>& data() { return data_; }
  std::map<int, Halide::ImageParam>& spectra() { return spectra_; }
  std::map<int, Halide::ImageParam>& otfs() { return otfs_; }
  /// The names of the black-box operators the pipeline calls.
  const std::set<std::string>& black_boxes() const { return black_boxes_; }
  /// The prox functions of the user's the pipeline calls (by name).
  const std::set<std::string>& prox_fns() const { return prox_fns_; }
  std::map<int, Halide::Param<float>>& scalars() { return scalars_; }
  std::map<int, Halide::Param<int>>& extent_slots() { return extents_; }

  /// Makes generate() schedule the pipeline with this autoscheduler.
  void use_autoscheduler(const std::string& plugin, const std::string& name) {
    autoscheduler_ = {plugin, name};
  }

  /// The main() of a generator program: `PROGRAM OUT_DIR NAME [TARGET]`
  /// writes OUT_DIR/NAME.a and OUT_DIR/NAME.h (the pipeline and Halide's
  /// runtime) for TARGET (default: this machine).
  int generate(int argc, char** argv);

 private:
  /// prox and value of a prox function of the user's: extern stages.
  Val user_prox(const Term& t, const Val& v, const Val& rho_val);
  Halide::Expr user_value(const Term& t, const Val& u);
  std::vector<Halide::ExternFuncArgument> user_stage_args(const Term& t, const Val& u);
  using Coords = std::vector<Halide::Expr>;
  struct RawArg {
    std::string text;
  };

  [[noreturn]] static void fail(const std::string& what) {
    throw Halide::CompileError("proxc halide_ops: " + what);
  }

  static Halide::Expr f64(double v) { return Halide::Internal::make_const(Halide::Float(64), v); }

  template <typename P>
  Halide::Expr slot(std::map<int, P>& m, int i, const char* prefix);

  static std::vector<Halide::Var> make_vars(int r);
  template <typename T>
  static std::vector<T> reversed(std::vector<T> v) {
    std::reverse(v.begin(), v.end());
    return v;
  }
  static Halide::Expr call(const Val& v, const Coords& idx);
  /// v at i, or v itself when it is a rank-0 scalar (broadcast).
  static Halide::Expr at(const Val& v, const Coords& i) { return v.rank() == 0 ? v.f() : call(v, i); }

  static Halide::Expr flat_size(const std::vector<Halide::Expr>& ext);
  static Halide::Expr ravel(const Coords& c, const std::vector<Halide::Expr>& ext);

  // A new Func over ext defined by body(coordinates): float arrays (or
  // arrays of `element`), double scalars.
  Val define(const std::string& name, const std::vector<Halide::Expr>& ext,
             const std::function<Halide::Expr(const Coords&)>& body, Halide::Type element = Halide::Float(32));
  // The double Expr defining a rank-0 value made of parameters only.
  // The rank-0 Funcs it calls (constants and parameters combined by
  // arithmetic, as 1/tau) are inlined: an extern stage's Expr arguments
  // cannot call Funcs.
  static Halide::Expr scalar_definition(const Val& v) {
    if (v.rank() != 0 || !v.f.defined() || v.f.has_update_definition())
      fail("a scalar of parameters was expected");
    // Each call of a rank-0 pure Func becomes its value, recursively.
    struct InlineScalars : Halide::Internal::IRMutator {
      using Halide::Internal::IRMutator::visit;
      Halide::Expr visit(const Halide::Internal::Call* op) override {
        if (op->call_type != Halide::Internal::Call::Halide || !op->func.defined()) return IRMutator::visit(op);
        const Halide::Internal::Function f(op->func);
        if (f.dimensions() != 0 || f.has_update_definition() || f.has_extern_definition())
          fail("a scalar of parameters was expected");
        return mutate(f.values()[static_cast<size_t>(op->value_index)]);
      }
    };
    return Halide::cast<double>(InlineScalars().mutate(v.f.value()));
  }
  // A rank-0 Func holding e as it is.
  Val define0(const std::string& name, Halide::Expr e);
  Val buffer(const std::string& name, Halide::ImageParam& p, const Ext& ext);

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
  // reduce() without its record: the reduction of a0 as the schedule makes
  // them (row sums on the CPU, partial sums on a GPU), for ops that reduce
  // values of their own (value). Its row sums in *row_sums (undefined if none).
  Val reduced(const std::string& kind, const Val& a0, const Val& b0, const Val& gate, RowSums* row_sums);
  template <typename Element, typename Combine>
  Val parallel_reduce(const std::string& kind, const Val& a, Element element, Combine combine,
                      Halide::Expr on, RowSums* row_sums);

  // Whether f reads, directly or through inlined Funcs, a Func with an
  // update that is not at root: an inline reduction (Halide::sum), which
  // Halide computes inside the loop of its consumer.
  bool reads_inline_reduction(const Halide::Internal::Function& f) const;

  // The reduction domain over these ranges: one RDom for equal ranges, so
  // that reductions over arrays of the same extents can share its loops
  // (fuse_reductions).
  Halide::RDom shared_domain(const Halide::Region& ranges);

  // Row sums whose rows are the array's axis 0 and whose reduction domain
  // is one axis (arrays (H, W), or (H, W, C) with C ≤ 4 folded into each
  // element) and that no output's loop computes (fuse_partials_into_outputs)
  // run in strips of kRowsPerTask rows per thread-pool task, as the outputs
  // do, not one row per task: each task is taken from Halide's work queue
  // under its lock (a CG step's ⟨p, A p⟩ over 512 rows was 512 tasks). The
  // row sums of one fuse_reductions group (a star: each joins its first) are
  // split all or none, so that compute_with joins loops of one structure.
  // (An array of few long rows, (4, 10⁶), gets fewer tasks than rows.)
  void split_partial_rows();
  // Row sums' update over rows in strips of kRowsPerTask rows, one parallel
  // task per strip (the last strip guarded).
  void split_rows_into_tasks(Halide::Func partial);
  std::map<std::string, RowSums*> partials_by_name();

  // Vectors along a run-time extent: when every run-time extent is at least
  // kVectorLanes (assume_min_extent), the last vector of a row shifts
  // inwards and recomputes a few elements; otherwise a guarded tail (a
  // second copy of the loop body).
  Halide::TailStrategy vector_tail(int lanes = kVectorLanes) const {
    return min_extent_ >= lanes ? Halide::TailStrategy::ShiftInwards : Halide::TailStrategy::GuardWithIf;
  }
  void schedule_root(Halide::Func f, const std::vector<Halide::Var>& vars,
                     const std::vector<Halide::Expr>& ext, bool small_inner, int unroll_from = 2,
                     int lanes = kVectorLanes);
  // Splits the rows of every Func at root into parallel strips of
  // kRowsPerTask rows, the last strip guarded (Halide compiles a second copy
  // of the strip's loops for it). Not shifted inwards: a shifted last strip
  // recomputes rows of the one before on another thread, and the two
  // computations of a row need not agree to the last bit (their stencil
  // values are computed over other regions, so LLVM's loops differ): which
  // one was written last made the iterates depend on the threads' timing
  // (Halide 21, ladmm on a 20×16 deconvolution). The shift saved about 15 %
  // of LLVM's compile time on admm's deconvolution pipelines.
  void split_row_strips();
  // The loop order and vectors of schedule_root, wherever f is computed.
  void schedule_vectors(Halide::Func f, const std::vector<Halide::Var>& vars,
                        const std::vector<Halide::Expr>& ext, bool small_inner, int unroll_from,
                        int lanes) const;
  void schedule_at_root(const Val& v);
  // A value read at other positions than its own (a stencil): compute it once.
  // Unless it is a pointwise function of at most kStencilInline buffers:
  // re-reading those at each tap costs less than a pass through memory.
  // `local`: the reader's taps are its own row and the rows next to it (grad,
  // div), so the value may be computed per strip of its reader's rows
  // instead (see place_strip_candidates); decided when the pipeline is built.
  static constexpr int kStencilInline = 2;
  static constexpr int64_t kStagedTaps = 9;  // staged_taps' default
  Val stencil(const Val& v, bool local = false);
  // Schedules at root every strip candidate that f reads directly or through
  // Funcs inlined into it.
  void root_candidates_read_by(const Halide::Internal::Function& f);
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
  void place_strip_candidates();
  bool place_temporal();  // temporal_blocking's placement, if the pipeline allows it (temporal.h)
  // The row sums fuse_reductions fused (reduction_partner_) in one loop:
  // along each row too where they have one domain (each element's terms of
  // both sums computed in one place: the loads and differences they share
  // are done once), not when either reads an inline reduction (a direct
  // convolution's sum over its taps): Halide computes that inside the loop
  // of its consumers, and for two consumers fused below the row
  // (compute_with at an RVar) Halide 14 bounds it by the loop variables of
  // both, one of which is not defined there.
  void fuse_partials();
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
  void fuse_partials_into_outputs();
  // Whether inlining the loop members the row sums pf call directly leaves
  // pf independent of the loop: each such member must be a cheap root
  // (cheap_roots_) that calls no member, and nothing else pf calls may reach
  // one. The members to inline go to *out.
  bool members_to_inline(const Halide::Internal::Function& pf,
                         const std::vector<Halide::Internal::Function>& loop,
                         std::map<std::string, Halide::Internal::Function>* out) const;
  // Replaces f's calls of the targets (pure Funcs) by their definitions at
  // the calls' coordinates.
  static void inline_calls(Halide::Internal::Function f,
                           const std::map<std::string, Halide::Internal::Function>& targets);
  // The loads per element of a pointwise function of these operands when
  // inlined: 1 per buffer or value at root, 0 per scalar, -1 (unknown, many)
  // if an operand is itself an inlined value of unknown cost.
  int inline_loads(std::initializer_list<const Val*> operands) const;

  Val color_impl(const Val& x, const std::vector<Halide::Expr>& m, bool adjoint, const Ext& ext);

  struct Taps {
    Halide::Expr valid;
    Halide::Expr r[4], c[4], w[4];
  };
  static Taps warp_taps(const std::vector<Halide::Expr>& h, Halide::Expr i, Halide::Expr j, Halide::Expr rows,
                        Halide::Expr cols);
  static std::vector<Halide::Expr> homography(const Val& h);
  /// Homography k of a (3, 3, K) array.
  static std::vector<Halide::Expr> homography(const Val& h, const Halide::Expr& k);

  // The group axes' extents multiplied, when all are compile-time constants
  // (gradient components, colour channels); 0 otherwise.
  static int64_t const_group_size(const Val& u, const std::vector<int>& axes);
  // Groups this small are summed as one expression (no reduction loop), so
  // the prox's operand can be inlined: each entry recomputes its group's
  // few values instead of reading them back from memory.
  static constexpr int64_t kShortGroup = 16;
  static bool short_group(const Val& u, const std::vector<int>& axes) {
    const int64_t n = const_group_size(u, axes);
    return n > 0 && n <= kShortGroup;
  }
  static Halide::Expr group_sum_squares(const Val& u, const std::vector<int>& axes, const Coords& i);
  static Halide::RDom full_domain(const std::vector<Halide::Expr>& ext);
  static Coords domain_point(const Halide::RDom& r, size_t rank);

  // ---- Recording ----

  static std::string fmt(const Val& v) { return v.defined() ? v.id : "{}"; }
  static std::string fmt(const RawArg& r) { return r.text; }
  static std::string fmt(int i) { return std::to_string(i); }
  static std::string fmt(bool b) { return b ? "true" : "false"; }
  static std::string fmt(double d);
  static std::string fmt(const std::string& s);
  template <typename T>
  static std::string fmt(const std::vector<T>& v);
  template <typename... A>
  static std::string args(const A&... a);
  template <typename... A>
  Val rec(Val v, const char* op, const A&... a);

  /// Whether the schedule makes GPU kernels (Gpu, GpuFloat).
  bool gpu() const { return schedule_ == Schedule::Gpu || schedule_ == Schedule::GpuFloat; }
  /// The three device stages of an FFT filter (see device_fft; reductions.h).
  template <typename Filter>
  Halide::Func device_fft_filter(const Val& x, int kr, const std::string& name, Filter filter);

  Schedule schedule_;
  std::set<std::string> round_up_;  // Funcs at root whose vectors round up (TailStrategy::RoundUp)
  std::ostream* record_;
  /// Extents (numpy order) of every value an op returned, by Func name: the
  /// axes schedule_gpu tiles.
  std::map<std::string, std::vector<Halide::Expr>> ext_of_;
  /// Funcs that have their GPU schedule already (reductions' row partials).
  std::set<std::string> gpu_scheduled_;
  /// GPU schedules: a convolution's Func → the copy of its operand staged in shared memory (conv, schedule_gpu).
  std::map<std::string, Halide::Func> staged_for_;
  int min_extent_ = 0;         ///< see assume_min_extent
  int device_fft_ = 0;                 ///< see device_fft
  int64_t staged_taps_ = kStagedTaps;  ///< see staged_taps
  bool strips_split_ = false;  ///< split_row_strips ran (pipeline() was called)
  std::vector<std::pair<Halide::Func, Halide::Expr>> row_splits_;  ///< see split_row_strips
  int strip_rows_ = kRowsPerTask;  ///< rows per strip of the outputs (temporal_blocking: more)
  std::pair<std::string, std::string> autoscheduler_;
  int counter_ = 0;
  int ids_ = 0;
  int term_ids_ = 0;
  std::set<std::string> materialized_;
  std::set<std::string> black_boxes_;
  std::set<std::string> prox_fns_;
  std::set<std::string> output_funcs_;  ///< materialized values that are outputs themselves
  std::set<int> merged_;                ///< outputs computed as the second value of a pair (pair_outputs)
  std::set<std::string> fused_;         ///< outputs in a compute_with group (fuse_outputs)
  std::map<std::string, Val> strip_candidates_;   ///< see stencil(v, local), place_strip_candidates
  std::map<std::string, std::string> row_tasks_;  ///< Funcs at root by strips of rows: their strip loop
  std::map<std::string, RowSums> partials_;       ///< row-parallel reductions, by Val id
  std::vector<std::string> partial_order_;        ///< their Val ids in the order reduce made them
  std::set<std::string> split_partials_;          ///< row sums whose rows run in strips (split_partial_rows)
  std::set<std::string> cheap_roots_;  ///< at root, pointwise of <= 2 arrays (fuse_partials_into_outputs)
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

// ---- Slots, buffers and the definition of values ----

inline std::vector<Halide::Expr> Graph::extents(const Ext& e) {
  std::vector<Halide::Expr> out;
  for (int i : e) out.push_back(extent(i));
  return out;
}

inline Val Graph::param(const std::string& name) {
  auto it = params_.find(name);
  if (it == params_.end()) it = params_.emplace(name, Halide::Param<double>("p_" + name)).first;
  Halide::Expr e = it->second;
  return rec(define0("param", e), "param", name);
}

inline Val Graph::input(const std::string& name, const Ext& ext) {
  auto it = inputs_.find(name);
  if (it == inputs_.end()) {
    it = inputs_
             .emplace(name, Halide::ImageParam(Halide::Float(32), static_cast<int>(ext.size()), "in_" + name))
             .first;
  }
  buffer_ext_[it->second.name()] = ext;
  dense_strides(it->second, ext);
  return rec(buffer("input_" + name, it->second, ext), "input", name, ext);
}

inline Val Graph::data(int i, const Ext& ext) {
  auto it = data_.find(i);
  if (it == data_.end()) {
    it = data_
             .emplace(i, Halide::ImageParam(Halide::Float(32), static_cast<int>(ext.size()),
                                            "data" + std::to_string(i)))
             .first;
  }
  buffer_ext_[it->second.name()] = ext;
  dense_strides(it->second, ext);
  return rec(buffer("data_f" + std::to_string(i), it->second, ext), "data", i, ext);
}

template <typename P>
inline Halide::Expr Graph::slot(std::map<int, P>& m, int i, const char* prefix) {
  auto it = m.find(i);
  if (it == m.end()) it = m.emplace(i, P(prefix + std::to_string(i))).first;
  return it->second;
}

inline std::vector<Halide::Var> Graph::make_vars(int r) {
  // Not "v0..": Halide names its own implicit variables so.
  std::vector<Halide::Var> v;
  for (int i = 0; i < r; ++i) v.emplace_back("px_" + std::to_string(i));
  return v;
}

inline Halide::Expr Graph::call(const Val& v, const Coords& idx) {
  if (v.ext.empty()) return v.f();
  if (idx.size() != v.ext.size())
    fail("call with " + std::to_string(idx.size()) + " indices on rank " + std::to_string(v.rank()));
  return v.f(reversed(idx));
}

inline Halide::Expr Graph::flat_size(const std::vector<Halide::Expr>& ext) {
  Halide::Expr n = 1;
  for (const Halide::Expr& e : ext) n = n * e;
  return n;
}

inline Halide::Expr Graph::ravel(const Coords& c, const std::vector<Halide::Expr>& ext) {
  Halide::Expr f = 0;
  for (size_t a = 0; a < c.size(); ++a) f = f * ext[a] + c[a];
  return f;
}

inline Val Graph::define(const std::string& name, const std::vector<Halide::Expr>& ext,
                         const std::function<Halide::Expr(const Coords&)>& body, Halide::Type element) {
  Val v;
  v.f = Halide::Func(name + std::to_string(counter_++));
  v.ext = ext;
  v.vars = make_vars(static_cast<int>(ext.size()));
  Coords c(v.vars.begin(), v.vars.end());
  Halide::Expr e = body(c);
  if (ext.empty())
    v.f() = Halide::cast<double>(e);
  else
    v.f(reversed(c)) = Halide::cast(element, e);
  return v;
}

inline Val Graph::define0(const std::string& name, Halide::Expr e) {
  Val v;
  v.f = Halide::Func(name + std::to_string(counter_++));
  v.f() = e;
  return v;
}

inline Val Graph::buffer(const std::string& name, Halide::ImageParam& p, const Ext& ext) {
  Val v;
  v.ext = extents(ext);
  v.is_buffer = true;
  v.f = Halide::Func(name + std::to_string(counter_++));
  std::vector<Halide::Var> vars = make_vars(static_cast<int>(ext.size()));
  Coords c(vars.begin(), vars.end());
  if (vars.empty())
    v.f() = p();
  else
    v.f(reversed(c)) = p(reversed(c));
  return v;
}

}  // namespace proxc::halide_ops
