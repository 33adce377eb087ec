/// \file
/// Lowering of a step program to ONE Halide pipeline with all its outputs,
/// through proxc's Halide-op library (src/halide/ops/proxc/halide_ops.h). Besides
/// the backend, the only code that includes Halide.h.
///
/// Every shape is symbolic: extents are run-time slots, so a pipeline
/// compiled once runs for any image size. Data arrays (b, kernels, masks) are
/// ImageParams and every scalar from the problem (scales, alpha, beta, gamma,
/// d, scalar b and c, bounds) is a Param, so changing them never recompiles.
///
/// The Graph records every op call as C++ while lowering: that text is both
/// the structural key of the pipeline (two programs with equal text share a
/// compiled pipeline; it holds no size, data or scalar value) and the body of
/// the standalone generator program `generator_source` prints.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxc/halide_ops.h"
#include "step/step.h"

namespace proxc::internal::hl {

struct LoweredOutput {
  std::string name;
  Halide::Func func;
  int rank = 0;  ///< 0: a scalar (double); else a float array
  Shape shape;   ///< this program's shape
};

struct Lowered {
  halide_ops::Schedule schedule = halide_ops::Schedule::Default;  ///< the Graph's
  int device_fft = 0;  ///< the Graph's device_fft api (GPU schedules)
  std::string key;   ///< the recorded op calls: the pipeline's structure
  std::shared_ptr<halide_ops::Graph> graph;
  Halide::Pipeline pipeline;
  bool blocked_in_time = false;  ///< Graph::temporal_blocking took effect (--fuse N)
  std::vector<LoweredOutput> outputs;
  /// This program's values for the graph's slots, by slot index.
  std::vector<const ExprNode*> data_nodes;
  std::vector<std::pair<const ExprNode*, Shape>> spectra_sources;  ///< kernel, spatial dims
  std::vector<std::pair<const ExprNode*, Shape>> otf_sources;      ///< kernel, spatial dims (FFT convolutions)
  /// The factors of separable kernels (rank_one_factors), each a data node of
  /// its own (kept alive here) among data_nodes: its kernel and axis (0: the
  /// column u of shape (K0, 1), 1: the row v of shape (1, K1)).
  std::vector<proxc::internal::Expr> factor_nodes;
  std::map<const ExprNode*, std::pair<const ExprNode*, int>> factors;
  std::vector<double> scalar_values;
  std::vector<int64_t> extent_values;
  /// Every input buffer's shape, by name.
  std::map<std::string, Shape> input_shapes;
};

/// Convolutions with at least this many kernel taps run by FFT (an extern
/// stage) instead of directly.
constexpr int64_t kFftConvTaps = 100;

/// A direct convolution's 2-D kernel of rank one, k[i][j] = u[i]·v[j] within
/// 4·eps32·max|k| for every tap (a Gaussian, a box, any outer product rounded
/// to float), as the pair (u of shape (K0, 1), v of shape (1, K1)): u is the
/// kernel's column through its largest tap (by magnitude, the first such) and
/// v its row there divided by that tap. The lowering convolves by such a
/// kernel in two passes, one per axis (K0 + K1 taps per output instead of
/// K0·K1; the emulator keeps the 2-D sum). Empty for any other kernel, for
/// one of another rank, and where K0 or K1 is 1.
std::optional<std::pair<Array, Array>> rank_one_factors(const Array& k);

/// Whether the default CPU schedule runs `p` blocked in time (Graph::temporal_blocking): it unrolls
/// 2 to kMaxBlockedIterations iterations, its array outputs have as many rows and two axes or more,
/// it has no reduction, FFT solve, user prox or group of rows, and its operators read rows near
/// their own only; and $PROXC_TEMPORAL_BLOCKING is not 0.
constexpr int kMaxBlockedIterations = 8;
bool blocks_in_time(const StepProgram& p);

/// Lowers `p`. Schedule::None leaves every Func unscheduled (for an autoscheduler).
/// device_fft: Graph::device_fft's api for a GPU schedule's FFT stages (0: FFTW on the host).
Lowered lower(const StepProgram& p, halide_ops::Schedule schedule = halide_ops::Schedule::Default,
              int device_fft = 0);

/// The libHalide this process loaded, and the Halide headers beside it (its
/// ../include): found at run time, since the Python package is built in a
/// build environment pip deletes and runs against the `halide` package
/// installed beside it. The paths proxc was built with when not found.
std::string halide_library_path();
std::string halide_include_dir();

/// A standalone C++ program that builds the same pipeline through
/// proxc/halide_ops.h and, run as `PROGRAM OUT_DIR NAME [TARGET]`, compiles it
/// to OUT_DIR/NAME.a + NAME.h like a Halide generator. `L` must come from
/// lower(p, Schedule::None) when `autoscheduler` (Mullapudi2016, ...; its
/// plugin library at `plugin`) is not empty: the program then applies it,
/// with `L`'s sizes and scalars as estimates.
std::string generator_source(const StepProgram& p, const Lowered& L, const std::string& plugin = "",
                             const std::string& autoscheduler = "");

}  // namespace proxc::internal::hl
