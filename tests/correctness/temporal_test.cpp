// --fuse N on the Halide backend: a run without a check computes its N iterations blocked in time
// (Graph::temporal_blocking: every value per strip of rows, with the halo of rows later iterations
// read), a checking run the whole program; both give what N single iterations give.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "frontend/parser.h"
#include "halide/halide_backend.h"
#include "halide/lower.h"
#include "io/npy.h"
#include "pipeline/pipeline.h"
#include "pipeline/solve.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

Backend& halide() {
  static std::unique_ptr<Backend> b = make_halide_backend();
  return *b;
}

// 150 × 70: for fuse 4, strips of 64 rows (three, the last short), halos that cross from one
// strip into the next, and rows of 70 (8 vectors and a tail).
constexpr int64_t kRows = 150, kCols = 70;

std::string data_dir() {
  static const std::string dir = [] {
    const std::string d = test::temp_dir();
    std::mt19937_64 rng(7);
    std::normal_distribution<float> noise(0.0f, 0.1f);
    std::bernoulli_distribution keep(0.6);
    Array noisy(Shape{kRows, kCols}), mask(Shape{kRows, kCols}), masked(Shape{kRows, kCols});
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kCols; ++j) {
        const float v = ((i / 20 + j / 10) % 2 ? 0.8f : 0.2f) + 0.002f * static_cast<float>(i);
        const size_t k = static_cast<size_t>(i * kCols + j);
        noisy.data[k] = v + noise(rng);
        mask.data[k] = keep(rng) ? 1.0f : 0.0f;
        masked.data[k] = mask.data[k] * noisy.data[k];
      }
    }
    io::write_npy(d + "/noisy.npy", noisy);
    io::write_npy(d + "/mask.npy", mask);
    io::write_npy(d + "/masked.npy", masked);
    Array k(Shape{3, 3}, {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f});
    io::write_npy(d + "/k.npy", k);
    return d;
  }();
  return dir;
}

Problem problem(const std::string& text) { return parse_program(text, "p.prox", data_dir()).problem; }

const char* const kTv =
    "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(x - b) + 0.1 * norm1(grad(x)) + nonneg(x)\n";
const char* const kInpaint =
    "b = load(\"masked.npy\")\nm = load(\"mask.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])\n";
// conv in K as a stencil of nine taps, zero outside the image, under a prox of its own.
const char* const kDeconvStencil =
    "b = load(\"noisy.npy\")\nk = load(\"k.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(conv(k, x, boundary=\"zero\") - b) + 0.01 * group_norm1(grad(x), [2])"
    " + nonneg(x)\n";
// The circular convolution (--no-diagonalize) and grad's circular boundary read the far edge.
const char* const kCircularStencil =
    "b = load(\"noisy.npy\")\nk = load(\"k.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(conv(k, x) - b) + 0.01 * norm1(grad(x)) + nonneg(x)\n";
const char* const kCircularGrad =
    "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(x - b) + 0.1 * norm1(grad(x, boundary=\"circular\"))\n";
// A group along the rows: each group's norm reads its whole column.
const char* const kRowGroups =
    "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
    "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [0])\n";

double worst_difference(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape, b.shape);
  double worst = 0;
  for (size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i)
    worst = std::max(worst, std::fabs(double(a.data[i]) - b.data[i]));
  return worst;
}

// The program a run without a check runs: the iteration of `fuse` unrolled iterations without its check.
hl::Lowered unchecked_iteration(const std::string& text, const std::string& solver, int fuse,
                                bool diagonalize) {
  PassManagerOptions po;
  po.pass.solver = solver;
  po.pass.diagonalize = diagonalize;
  SolverOptions o;
  o.solver = solver;
  o.fuse = fuse;
  return hl::lower(split_check(iteration_program(run_passes(problem(text), po), o)).iteration);
}

TEST(TemporalBlocking, TakesEffectWhereTheIterationsAreLocal) {
  for (const char* solver : {"pc", "ladmm"}) {
    SCOPED_TRACE(solver);
    EXPECT_TRUE(unchecked_iteration(kTv, solver, 4, true).blocked_in_time);
    EXPECT_TRUE(unchecked_iteration(kInpaint, solver, 2, true).blocked_in_time);
    EXPECT_TRUE(unchecked_iteration(kDeconvStencil, solver, 3, true).blocked_in_time);
    // One iteration: its passes as before (fuse 1 is the default); more than 8: halos of 16 rows
    // and more on strips of 64.
    EXPECT_FALSE(unchecked_iteration(kTv, solver, 1, true).blocked_in_time);
    EXPECT_FALSE(unchecked_iteration(kTv, solver, 9, true).blocked_in_time);
    // Operators or groups that read far rows: each strip would compute every row.
    EXPECT_FALSE(unchecked_iteration(kCircularStencil, solver, 2, false).blocked_in_time);
    EXPECT_FALSE(unchecked_iteration(kCircularGrad, solver, 2, true).blocked_in_time);
    EXPECT_FALSE(unchecked_iteration(kRowGroups, solver, 2, true).blocked_in_time);
  }
  // An FFT solve (the absorbed deconvolution) reads and writes whole arrays: each iterate at root.
  EXPECT_FALSE(unchecked_iteration(kCircularStencil, "pc", 4, true).blocked_in_time);
  // $PROXC_TEMPORAL_BLOCKING=0 leaves it out (to measure what it buys).
  ::setenv("PROXC_TEMPORAL_BLOCKING", "0", 1);
  const bool off = unchecked_iteration(kTv, "pc", 4, true).blocked_in_time;
  ::unsetenv("PROXC_TEMPORAL_BLOCKING");
  EXPECT_FALSE(off);
}

// Unchecked fused runs, then one checked run: the iterate of 24 single iterations, to float
// rounding (the strips compute what the passes compute, in another order of rows only).
TEST(TemporalBlocking, FusedRunsGiveTheIterateOfSingleIterations) {
  struct Case {
    const char* name;
    const char* text;
    bool diagonalize;
    const char* solver;
    int fuse;
  };
  // (Each fused case compiles two pipelines of N iterations: a few cases, not every combination.)
  for (const Case& c : {Case{"tv", kTv, true, "pc", 4}, Case{"tv", kTv, true, "ladmm", 3},
                        Case{"inpaint", kInpaint, true, "pc", 2},
                        Case{"deconv_stencil", kDeconvStencil, true, "ladmm", 2}}) {
    SCOPED_TRACE(std::string(c.name) + " " + c.solver + " fuse " + std::to_string(c.fuse));
    PassManagerOptions po;
    po.pass.solver = c.solver;
    po.pass.diagonalize = c.diagonalize;
    Problem p = run_passes(problem(c.text), po);
    SolverOptions o;
    o.solver = c.solver;
    o.max_iters = 24;
    o.eps_abs = o.eps_rel = 0;
    o.check_every = 12;
    SolveResult one = solve(p, o, halide());
    o.fuse = c.fuse;
    SolveResult fused = solve(p, o, halide());
    EXPECT_EQ(fused.summary.iterations, 24);
    // Through HalideStep: its runs without a check ran the blocked pipeline.
    EXPECT_TRUE(fused.summary.fuse_blocked_in_time);
    EXPECT_FALSE(one.summary.fuse_blocked_in_time);
    // Every run checks: each runs the whole program, unblocked, and the summary says so.
    o.check_every = c.fuse;
    EXPECT_FALSE(solve(p, o, halide()).summary.fuse_blocked_in_time);
    // (Values about 1: 1e-5 is a few float roundings per iteration, far below what a wrong halo
    // or strip gives.)
    EXPECT_LE(worst_difference(one.x.at("x"), fused.x.at("x")), 1e-5);
  }
}

}  // namespace
}  // namespace proxc::internal
