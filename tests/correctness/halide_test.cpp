// The halide backend against the emulator: every operator (forward and
// adjoint), every prox and value, the arithmetic and reduction nodes, the
// circulant solve and random operator DAGs agree to a stated float
// tolerance; the dot test passes on halide; new sizes and data reuse the
// compiled pipeline.
//
// Tolerance for an array result e (emulator, double) and h (halide, float):
//   max_i |h_i − e_i| ≤ 16 · eps32 · W · max(1, ‖e‖∞, ‖inputs‖∞ · max(1, bound(K)))
// with W the rounding work of K (docs/checks.md): each entry is a sum of at
// most W float roundings of terms bounded by ‖inputs‖∞·bound(K).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "frontend/parser.h"
#include "gpu_backend.h"
#include "halide/device_fft.h"
#include "halide/fft_extern.h"
#include "halide/halide_backend.h"
#include "halide/lower.h"
#include "io/npy.h"
#include "ir/printer.h"
#include "pipeline/pipeline.h"
#include "pipeline/solve.h"
#include "solvers/solver.h"
#include "support/file_util.h"
#include "test_black_boxes.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

constexpr double kEps32 = 1.1920928955078125e-07;

Backend& emulator() {
  static std::unique_ptr<Backend> b = make_emulate_backend();
  return *b;
}
Backend& halide() {
  static std::unique_ptr<Backend> b = make_halide_backend();
  return *b;
}

Expr random_constant(Shape s, std::mt19937_64* rng, float lo = -1, float hi = 1, const char* name = "c") {
  std::uniform_real_distribution<float> u(lo, hi);
  auto d = std::make_shared<ConstantData>();
  d->array = Array(std::move(s));
  for (float& v : d->array.data) v = u(*rng);
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, name);
}

Array random_array(const Shape& s, std::mt19937_64* rng, float lo = -1, float hi = 1);

// A constant of shape s holding v (C order).
Expr constant(Shape s, const std::vector<float>& v, const char* name) {
  auto d = std::make_shared<ConstantData>();
  d->array = Array(std::move(s));
  d->array.data.assign(v.begin(), v.end());
  return make_constant(d, name);
}

// The program `rest` after b = load("b.npy"), b uniform in [0, 1) of shape
// s, written to dir.
Problem parse_with_random_b(const std::string& dir, const Shape& s, std::mt19937_64* rng, const std::string& rest) {
  io::write_npy(dir + "/b.npy", random_array(s, rng, 0, 1));
  return parse_program("b = load(\"b.npy\")\n" + rest, dir + "/p.prox", dir).problem;
}
// p split and scaled for `solver`.
Problem split_for(const Problem& p, const std::string& solver) {
  PassManagerOptions po;
  po.pass.solver = solver;
  return run_passes(p, po);
}

Array random_array(const Shape& s, std::mt19937_64* rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  Array a(s);
  for (float& v : a.data) v = u(*rng);
  return a;
}

double max_abs(const Array& a) {
  double m = 0;
  for (float v : a.data) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

void expect_close(const Array& h, const Array& e, double tol, const std::string& what) {
  ASSERT_EQ(h.shape, e.shape) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < e.data.size(); ++i) {
    double d = std::fabs(static_cast<double>(h.data[i]) - e.data[i]);
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": entry " << at << " halide " << h.data[at] << " emulate " << e.data[at];
}

// Runs forward and adjoint of K on both backends and compares.
void expect_operator_parity(const Expr& k, std::mt19937_64* rng, Backend& backend = halide()) {
  std::vector<Expr> vars = linop_variables(k);
  StepProgram p;
  p.name = "parity";
  std::vector<Step> xs;
  StepInputs in;
  std::vector<Array> data;
  data.reserve(vars.size() + 1);
  double in_max = 1;
  for (size_t i = 0; i < vars.size(); ++i) {
    xs.push_back(step_input("x" + std::to_string(i), vars[i]->shape));
    data.push_back(random_array(vars[i]->shape, rng));
    in.buffers["x" + std::to_string(i)] = &data.back();
  }
  data.push_back(random_array(k->shape, rng));
  in.buffers["y"] = &data.back();
  Step y = step_input("y", k->shape);
  p.outputs.push_back({"fwd", step_forward(k, xs)});
  for (size_t i = 0; i < vars.size(); ++i) {
    p.outputs.push_back({"adj" + std::to_string(i), step_adjoint(k, static_cast<int>(i), y)});
  }
  StepOutputs e = emulator().compile(p)->run(in);
  StepOutputs h = backend.compile(p)->run(in);
  const double scale = std::max(1.0, norm_bound(k)) * in_max;
  for (const auto& [name, arr] : e.arrays) {
    double tol = 16 * kEps32 * rounding_work(k) * std::max({1.0, max_abs(arr), scale});
    expect_close(h.arrays.at(name), arr, tol, print_expression(k) + " " + name);
  }
}

// Every operator on a Halide backend: dot tests one by one, and forward and
// adjoint against the emulator in one pipeline.
void expect_every_operator(Backend& backend) {
  std::mt19937_64 rng(3);
  for (Shape s : {Shape{7, 5}, Shape{6, 9, 3}}) {
    Expr x = make_variable(s, "x");
    Shape ext = s;
    for (auto& e : ext) e -= 1;
    std::vector<Expr> ops = {
        make_grad(x),
        make_grad(x, 1),
        make_conv(random_constant({3, 4}, &rng), x),
        make_conv(random_constant({2, 2}, &rng), x),
        make_mul_elemwise(random_constant(s, &rng), x),
        make_subsample(x, std::vector<int64_t>(s.size(), 2)),
        make_scale(-2.5, x),
        make_add(x, make_scale(0.5, x)),
        make_sub(x, random_constant(s, &rng)),
        make_neg(x),
        make_vstack({x, make_grad(x)}),
        make_hstack({x, make_scale(2, x), make_reshape(make_neg(x), {num_elements(s)})}),
        make_reshape(x, {num_elements(s)}),
        make_transpose(x, {}),
        make_crop(x, std::vector<int64_t>(s.size(), 1), ext),
        make_warp(x, random_constant({3, 3}, &rng, 0.0f, 0.2f)),
    };
    Shape matrices(s.begin(), s.end() - 1);  // a 2 × M matrix per pixel
    matrices.push_back(2);
    matrices.push_back(s.back());
    ops.push_back(make_pxwise_matrixmult(random_constant(matrices, &rng), x));
    if (s.back() == 3) {
      ops.push_back(make_mul_color(x, nullptr, "yuv"));
      ops.push_back(make_mul_color(x, random_constant({3, 3}, &rng)));
      ops.push_back(make_conv(random_constant({3, 3, 2}, &rng), x));
    }
    // One pipeline holds every operator: fewer JIT compiles.
    std::vector<Expr> parts;
    for (const Expr& k : ops) parts.push_back(k);
    for (const Expr& k : ops) {
      SCOPED_TRACE(print_expression(k));
      DotTestResult r = dot_test(backend, k, 5);
      EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
    }
    expect_operator_parity(make_vstack(parts), &rng, backend);
  }
}

TEST(HalideParity, EveryOperatorForwardAndAdjoint) { expect_every_operator(halide()); }

// The GPU schedule, run on OpenCL: on this machine PoCL runs it on the CPU
// (scripts/install-deps.sh installs it; without an OpenCL platform the
// backend falls back to the CPU and this test fails); on a GPU machine on
// $PROXC_TEST_GPU_TARGET (scripts/gpu-run.sh: host-cuda). Every operator's dot
// test and its parity with the emulator, at the same tolerances as the CPU's.
TEST(HalideGpu, EveryOperatorOnOpenCl) {
  ::testing::internal::CaptureStderr();
  auto b = test::make_gpu_backend();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(test::runs_on_gpu(b->target_used())) << err;
  expect_every_operator(*b);
}

// Compositions whose inner value is computed at root and read by two
// reductions of the dot test (⟨K x, y⟩ and ‖K x‖²), at sizes where the
// schedule's wide vectors and strips apply: each value is one Func in the
// pipeline however many reductions read it, and the test holds.
TEST(HalideParity, CompositionsReadByTwoReductions) {
  std::mt19937_64 rng(17);
  for (Shape s : {Shape{40, 36}, Shape{43, 37}}) {
    Expr x = make_variable(s, "x");
    Expr k = random_constant({7, 7}, &rng, 0.0f, 0.1f, "k");
    for (const Expr& op : {make_grad(make_conv(k, x)), make_mul_elemwise(random_constant(s, &rng), make_conv(k, x))}) {
      SCOPED_TRACE(print_expression(op));
      DotTestResult r = dot_test(halide(), op, 5);
      EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
    }
  }
}

// User black boxes run as the extern stage proxc_black_box_stage between
// fused regions: the same values as the emulator (which calls the same
// callbacks), forward and adjoint, in compositions, when only part of the
// output is read (crop), and the dot test holds on halide.
TEST(HalideParity, BlackBoxesRunAsExternStages) {
  test::register_test_black_boxes();
  std::mt19937_64 rng(21);
  for (Shape s : {Shape{6, 8}, Shape{6, 8, 3}}) {
    Expr x = make_variable(s, "x");
    Shape inner = s;
    inner[0] = 3;
    inner[1] = 4;
    std::vector<int64_t> begin(s.size(), 0);
    begin[0] = 1;
    begin[1] = 2;
    std::vector<int64_t> steps(s.size(), 1);
    steps[0] = steps[1] = 2;
    std::vector<Expr> ops = {
        make_black_box("shift_blur", x),
        make_grad(make_black_box("shift_blur", make_scale(2, x))),
        make_black_box("pool2", make_black_box("shift_blur", x)),
        make_crop(make_black_box("shift_blur", x), begin, inner),
        make_add(make_black_box("pool2", x), make_subsample(x, steps)),
    };
    for (const Expr& k : ops) {
      SCOPED_TRACE(print_expression(k));
      DotTestResult r = dot_test(halide(), k, 5);
      EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
      expect_operator_parity(k, &rng);
    }
  }
  // A failing callback stops the run with the user's error, not a crash.
  Expr x = make_variable({4, 4}, "x");
  EXPECT_THAT(test::user_error_of([&] { dot_test(halide(), make_black_box("fails", x), 1); }),
              ::testing::HasSubstr("black_box fails: the forward callback failed (returned 7; input (4, 4), output (4, 4))"));
}

// conv with a zero or replicated boundary (ProxImaL's conv_nofft): hand
// values in 1-D, then the dot test on both backends and halide against the
// emulator for odd and even, asymmetric kernels, with trailing channels.
TEST(HalideParity, ConvolutionsWithABoundary) {
  const Expr k1 = constant({3}, {1, 2, 3}, "k");
  const Expr x1 = make_variable({4}, "x");
  emulate::Tensor t(Shape{4});
  t.data.assign({1, 2, 3, 4});
  // y[m] = Σ_i k[i]·x[m − i + 1]: x is 0 beyond its ends, or its end value.
  const std::vector<std::pair<std::string, std::vector<double>>> expected = {
      {"", {16, 10, 16, 18}}, {"zero", {4, 10, 16, 17}}, {"replicate", {7, 10, 16, 21}}};
  for (const auto& [boundary, want] : expected) {
    Expr c = make_conv(k1, x1, boundary);
    const emulate::Tensor y = emulate::forward(c, {{x1.get(), &t}}, false);
    EXPECT_EQ(std::vector<double>(y.data.begin(), y.data.end()), want) << boundary;
  }
  // dims=1 with a kernel per column (ProxImaL's per-channel conv): column 0
  // by [1, 2, 3], column 1 by [0, 1, 0] (the identity).
  const Expr k2 = constant({3, 2}, {1, 0, 2, 1, 3, 0}, "k2");
  const Expr x2 = make_variable({4, 2}, "x");
  emulate::Tensor t2(Shape{4, 2});
  t2.data.assign({1, 10, 2, 20, 3, 30, 4, 40});
  const emulate::Tensor y2 = emulate::forward(make_conv(k2, x2, "", 1), {{x2.get(), &t2}}, false);
  EXPECT_EQ(std::vector<double>(y2.data.begin(), y2.data.end()),
            (std::vector<double>{16, 10, 10, 20, 16, 30, 18, 40}));
  std::mt19937_64 rng(5);
  // An even, asymmetric kernel on a 2-D image (its overhang differs below
  // and above), a 1-D kernel on colour channels (one axis only), and 3 × 3
  // composed with grad (the fold feeding a stencil).
  // With dims, a kernel per colour channel, each boundary.
  struct Case {
    Shape image, kernel;
    bool composed;
    int64_t dims;
    std::vector<const char*> boundaries;
  };
  for (const Case& cs : {Case{{9, 7}, {4, 2}, false, -1, {"zero", "replicate"}},
                         Case{{6, 8, 3}, {5}, false, -1, {"zero", "replicate"}},
                         Case{{6, 8}, {3, 3}, true, -1, {"zero", "replicate"}},
                         Case{{6, 8, 3}, {3, 2, 3}, false, 2, {"", "zero", "replicate"}}}) {
    Expr x = make_variable(cs.image, "x");
    Expr k = random_constant(cs.kernel, &rng, -1, 1, "k");
    for (const char* boundary : cs.boundaries) {
      Expr c = make_conv(k, x, boundary, cs.dims);
      if (cs.composed) c = make_grad(make_conv(k, make_scale(2, x), boundary));
      SCOPED_TRACE(print_expression(c));
      for (Backend* be : {&emulator(), &halide()}) {
        DotTestResult r = dot_test(*be, c, 5);
        EXPECT_TRUE(r.passed) << be->name() << ": " << r.what << ": error " << r.error << " > " << r.tolerance;
      }
      expect_operator_parity(c, &rng);
    }
  }
  EXPECT_THAT(test::user_error_of([&] { make_conv(k2, make_variable({4, 3}, "x"), "", 1); }),
              ::testing::HasSubstr("conv: with dims=1 the kernel holds one kernel per slice along axis 1, so its "
                                   "extent there must be the operand's: kernel shape (3, 2), operand shape (4, 3)"));
  EXPECT_THAT(test::user_error_of([&] { make_conv(k1, x1, "", 2); }),
              ::testing::HasSubstr("conv: dims must be from 1 to the kernel's rank 1"));
  EXPECT_THAT(test::user_error_of([&] { make_conv(k1, x1, "mirror"); }),
              ::testing::HasSubstr("conv: boundary must be \"circular\", \"zero\" or \"replicate\", got \"mirror\""));
}

// grad with x zero or wrapped past its last entry: hand values in 1-D, the
// dot test on both backends and parity (and composed: div of grad).
TEST(HalideParity, GradientsWithABoundary) {
  const Expr x1 = make_variable({3}, "x");
  emulate::Tensor t(Shape{3});
  t.data.assign({1, 2, 4});
  const std::vector<std::pair<std::string, std::vector<double>>> expected = {
      {"", {1, 2, 0}}, {"zero", {1, 2, -4}}, {"circular", {1, 2, -3}}};
  for (const auto& [boundary, want] : expected) {
    const emulate::Tensor y = emulate::forward(make_grad(x1, -1, boundary), {{x1.get(), &t}}, false);
    EXPECT_EQ(std::vector<double>(y.data.begin(), y.data.end()), want) << boundary;
  }
  std::mt19937_64 rng(14);
  for (const char* boundary : {"zero", "circular"}) {
    for (Expr op : {make_grad(make_variable({7, 9}, "x"), -1, boundary),
                    make_grad(make_variable({5, 6, 3}, "x"), 2, boundary)}) {
      SCOPED_TRACE(print_expression(op));
      for (Backend* be : {&emulator(), &halide()}) {
        DotTestResult r = dot_test(*be, op, 5);
        EXPECT_TRUE(r.passed) << be->name() << ": " << r.what << ": error " << r.error << " > " << r.tolerance;
      }
      expect_operator_parity(op, &rng);
    }
  }
  EXPECT_THAT(test::user_error_of([&] { make_grad(x1, -1, "mirror"); }),
              ::testing::HasSubstr("grad: boundary must be \"replicate\", \"zero\" or \"circular\""));
}

// Row sums of as many rows share a loop (fuse_reductions), at most 16 to a loop:
// Halide's lowering of a compute_with group grows faster than the group (a
// problem of 20 terms, 44 row sums: 13.9 s to compile in one group, 9.4 s in
// groups of 16). 40 independent norms: three groups, each member joining its
// group's first.
TEST(HalideLowering, RowSumsShareALoopSixteenAtMost) {
  StepProgram p;
  p.name = "many_norms";
  for (int i = 0; i < 40; ++i) {
    Step in = step_input("x" + std::to_string(i), {24, 20});
    p.outputs.push_back({"n" + std::to_string(i), step_reduce(StepKind::SumSquares, in, Step())});
  }
  const std::string src = halide_emit(p, "source");
  std::map<std::string, int> members;  // each group's first: the calls that join it
  for (size_t at = src.find("g.fuse_reductions("); at != std::string::npos;
       at = src.find("g.fuse_reductions(", at + 1)) {
    const size_t open = at + 18;
    ++members[src.substr(open, src.find(',', open) - open)];
  }
  ASSERT_EQ(members.size(), 3u) << src;
  for (const auto& [first, joined] : members) EXPECT_LE(joined + 1, 16) << first;
}

// warp with a target shape and one homography per output slice (ProxImaL's
// warp with H of shape (3, 3, K)): hand values of shifts onto a smaller
// target, then the dot test on both backends and parity, grey and colour.
TEST(HalideParity, WarpOntoATargetWithSeveralHomographies) {
  // Homography 0 the identity, 1 a shift by one row (samples x at row + 1:
  // H·(row, col, 1), ProxImaL's convention), stored (3, 3, 2) in C order:
  // entry (r, c, k) at (3r + c)·2 + k.
  std::vector<float> hv(18, 0.0f);
  for (int d = 0; d < 3; ++d) hv[static_cast<size_t>((4 * d) * 2)] = hv[static_cast<size_t>((4 * d) * 2 + 1)] = 1;
  hv[(0 * 3 + 2) * 2 + 1] = 1;  // H_1[0][2] = 1: the sampled row is row + 1
  const Expr h = constant({3, 3, 2}, hv, "h");
  const Expr x = make_variable({3, 4}, "x");
  const Expr w = make_warp(x, h, {2, 3});
  ASSERT_EQ(w->shape, Shape({2, 3, 2}));
  emulate::Tensor t(Shape{3, 4});
  for (size_t i = 0; i < t.size(); ++i) t.data[i] = static_cast<double>(i);
  const emulate::Tensor y = emulate::forward(w, {{x.get(), &t}}, false);
  EXPECT_EQ(std::vector<double>(y.data.begin(), y.data.end()),
            (std::vector<double>{0, 4, 1, 5, 2, 6, 4, 8, 5, 9, 6, 10}));
  std::mt19937_64 rng(12);
  std::vector<float> rot(18);
  for (int k = 0; k < 2; ++k) {  // small rotations and shifts
    const double a = 0.1 * (k + 1), cs = std::cos(a), sn = std::sin(a);
    const double m[9] = {cs, -sn, 0.7 * k + 0.3, sn, cs, -0.4, 0, 0, 1};
    for (int e = 0; e < 9; ++e) rot[static_cast<size_t>(e * 2 + k)] = static_cast<float>(m[e]);
  }
  const Expr hr = constant({3, 3, 2}, rot, "hr");
  for (const Expr& op : {make_warp(make_variable({9, 8}, "g"), hr, {7, 10}),
                         make_warp(make_variable({9, 8, 3}, "c"), hr),
                         make_grad(make_warp(make_variable({9, 8}, "g"), hr, {6, 6}))}) {
    SCOPED_TRACE(print_expression(op));
    for (Backend* be : {&emulator(), &halide()}) {
      DotTestResult r = dot_test(*be, op, 5);
      EXPECT_TRUE(r.passed) << be->name() << ": " << r.what << ": error " << r.error << " > " << r.tolerance;
    }
    expect_operator_parity(op, &rng);
  }
  EXPECT_THAT(test::user_error_of([&] { make_warp(x, constant({3, 2}, {0, 0, 0, 0, 0, 0}, "bad")); }),
              ::testing::HasSubstr("warp: the homography must have shape (3, 3), or (3, 3, K) for K of them"));
  EXPECT_THAT(test::user_error_of([&] { make_warp(x, h, {0, 3}); }),
              ::testing::HasSubstr("warp: the target shape is [h, w] with h, w >= 1"));
}

// The largest singular value of the rows × cols matrix m by a long power
// iteration on mᵀm in double: the reference for pxwise_matrixmult's bound.
double power_norm(const float* m, int rows, int cols) {
  std::vector<double> v(static_cast<size_t>(cols), 1.0), w(static_cast<size_t>(rows));
  double lambda = 0;
  for (int it = 0; it < 5000; ++it) {
    for (int i = 0; i < rows; ++i) {
      w[i] = 0;
      for (int j = 0; j < cols; ++j) w[i] += m[i * cols + j] * v[j];
    }
    double n = 0;
    for (int j = 0; j < cols; ++j) {
      v[j] = 0;
      for (int i = 0; i < rows; ++i) v[j] += m[i * cols + j] * w[i];
      n += v[j] * v[j];
    }
    n = std::sqrt(n);
    lambda = n;
    for (double& e : v) e /= n;
  }
  return std::sqrt(lambda);
}

// ProxImaL's pxwise_matrixmult: hand values, the norm bound (the largest
// singular value of the pixels' matrices: exact by Jacobi rotations up to 8
// rows or columns, Gershgorin's upper bound beyond), then the dot test on both
// backends and parity for colour images (N below and above the axes Halide
// keeps at compile-time extents), a single matrix (a 1-D operand) and a
// composition; shapes refused with both shapes named.
TEST(HalideParity, PixelMatrices) {
  const Expr x = make_variable({2, 3}, "x");
  const Expr a = constant({2, 2, 3}, {2, 0, 0, 0, 1, 0, 1, 1, 1, 1, -1, 2}, "A");
  const Expr u = make_pxwise_matrixmult(a, x);
  ASSERT_EQ(u->shape, Shape({2, 2}));
  emulate::Tensor t(Shape{2, 3});
  for (size_t i = 0; i < t.size(); ++i) t.data[i] = static_cast<double>(i + 1);
  const emulate::Tensor y = emulate::forward(u, {{x.get(), &t}}, false);
  EXPECT_EQ(std::vector<double>(y.data.begin(), y.data.end()), (std::vector<double>{2, 2, 15, 11}));
  emulate::Tensor g(Shape{2, 2});
  for (size_t i = 0; i < g.size(); ++i) g.data[i] = static_cast<double>(i + 1);
  const auto back = emulate::adjoint(u, g);
  const emulate::Tensor& z = back.at(x.get());
  EXPECT_EQ(std::vector<double>(z.data.begin(), z.data.end()), (std::vector<double>{2, 2, 0, 7, -1, 11}));
  // Pixel 1's A Aᵀ = [[3, 2], [2, 6]] has eigenvalues 7 and 2; pixel 0's norm is 2.
  EXPECT_NEAR(norm_bound(u), std::sqrt(7.0), 1e-12);
  EXPECT_NEAR(norm_bound(make_scale(-3, make_pxwise_matrixmult(a, make_scale(2, x)))), 6 * std::sqrt(7.0),
              1e-11);
  std::mt19937_64 rng(11);
  for (auto [rows, cols] : {std::pair{6, 7}, {8, 3}, {9, 8}, {10, 12}, {12, 10}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const Array m = random_array({4, rows, cols}, &rng);
    double reference = 0;
    for (int p = 0; p < 4; ++p) {
      reference = std::max(reference, power_norm(m.data.data() + p * rows * cols, rows, cols));
    }
    auto d = std::make_shared<ConstantData>();
    d->array = m;
    const double bound =
        norm_bound(make_pxwise_matrixmult(make_constant(d, "M"), make_variable({4, cols}, "v")));
    if (std::min(rows, cols) <= 8) {
      EXPECT_NEAR(bound, reference, 1e-9 * reference);
    } else {  // Schur's test: at most (rows · cols)^(1/4) times the norm
      EXPECT_GE(bound, reference * (1 - 1e-12));
      EXPECT_LE(bound, reference * std::pow(static_cast<double>(rows * cols), 0.25));
    }
  }
  // Zero matrices bound 0; the same matrix at every pixel, its norm.
  EXPECT_EQ(norm_bound(make_pxwise_matrixmult(constant({2, 2, 3}, std::vector<float>(12, 0.0f), "Z"), x)),
            0.0);
  EXPECT_NEAR(norm_bound(make_pxwise_matrixmult(constant({2, 1, 3}, {1, 2, 2, 1, 2, 2}, "R"), x)), 3.0,
              1e-12);
  const Expr c = make_variable({6, 5, 3}, "c");
  const Expr v = make_variable({7}, "v");
  auto matrices = [&](Shape s) {
    auto d = std::make_shared<ConstantData>();
    d->array = random_array(s, &rng);
    return make_constant(d, "P");
  };
  for (const Expr& op :
       {make_pxwise_matrixmult(matrices({6, 5, 2, 3}), c), make_pxwise_matrixmult(matrices({6, 5, 5, 3}), c),
        make_pxwise_matrixmult(matrices({4, 7}), v),
        make_grad(make_pxwise_matrixmult(matrices({6, 5, 3, 3}), make_scale(2, c)), 2),
        // Beyond 16 entries the matrices' extents are run-time (LLVM took minutes on 28 x 3 otherwise).
        make_pxwise_matrixmult(matrices({6, 5, 28, 3}), c),
        make_pxwise_matrixmult(matrices({6, 5, 3, 32}), make_variable({6, 5, 32}, "w")),
        make_pxwise_matrixmult(matrices({64, 64}), make_variable({64}, "u"))}) {
    SCOPED_TRACE(print_expression(op));
    for (Backend* be : {&emulator(), &halide()}) {
      DotTestResult r = dot_test(*be, op, 5);
      EXPECT_TRUE(r.passed) << be->name() << ": " << r.what << ": error " << r.error << " > " << r.tolerance;
    }
    expect_operator_parity(op, &rng);
  }
  EXPECT_THAT(
      test::user_error_of([&] {
        make_pxwise_matrixmult(matrices({6, 4, 2, 3}), c);
      }),
      ::testing::HasSubstr("pxwise_matrixmult: the pixel matrices' shape (6, 4, 2, 3) must be the operand's "
                           "shape (6, 5, 3) without its last axis, then (N, 3)"));
  EXPECT_THAT(test::user_error_of([&] {
                make_pxwise_matrixmult(matrices({6, 5, 2, 2}), c);
              }),
              ::testing::HasSubstr("then (N, 3)"));
  EXPECT_THAT(test::user_error_of([&] {
                make_pxwise_matrixmult(matrices({65, 7}), v);
              }),
              ::testing::HasSubstr(
                  "pxwise_matrixmult: pixel matrices of 65 x 7 (shape (65, 7)); from 1 x 1 to 64 x 64"));
  // No rows: refused where the operator is made (the lowering and the emulator divided by N).
  EXPECT_THAT(test::user_error_of([&] {
                make_pxwise_matrixmult(constant({0, 7}, {}, "E"), v);
              }),
              ::testing::HasSubstr("pxwise_matrixmult: pixel matrices of 0 x 7 (shape (0, 7))"));
}

// ProxImaL's uneven_subsample: hand values (an index outside gives 0, an
// entry read twice gathers twice in the adjoint), the norm bound sqrt(2) of
// an entry read twice, then the dot test on both backends and parity, with
// colour channels (indices over all three axes).
TEST(HalideParity, UnevenSubsample) {
  const Expr x = make_variable({3, 4}, "x");
  const Expr idx = constant({2, 2, 3}, {0, 2, -1, 1, 1, 0, 0, 3, 0, 1, 1, 9}, "idx");
  const Expr u = make_uneven_subsample(x, idx);
  ASSERT_EQ(u->shape, Shape({2, 3}));
  emulate::Tensor t(Shape{3, 4});
  for (size_t i = 0; i < t.size(); ++i) t.data[i] = static_cast<double>(i);
  const emulate::Tensor y = emulate::forward(u, {{x.get(), &t}}, false);
  EXPECT_EQ(std::vector<double>(y.data.begin(), y.data.end()), (std::vector<double>{0, 11, 0, 5, 5, 0}));
  emulate::Tensor ones(Shape{2, 3});
  std::fill(ones.data.begin(), ones.data.end(), 1.0);
  const auto back = emulate::adjoint(u, ones);
  const emulate::Tensor& z = back.at(x.get());
  EXPECT_EQ(std::vector<double>(z.data.begin(), z.data.end()),
            (std::vector<double>{1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1}));
  EXPECT_DOUBLE_EQ(norm_bound(u), std::sqrt(2.0));
  std::mt19937_64 rng(9);
  for (const Expr& op : {u, make_grad(make_uneven_subsample(make_scale(2, x), idx))}) {
    SCOPED_TRACE(print_expression(op));
    for (Backend* be : {&emulator(), &halide()}) {
      DotTestResult r = dot_test(*be, op, 5);
      EXPECT_TRUE(r.passed) << be->name() << ": " << r.what << ": error " << r.error << " > " << r.tolerance;
    }
    expect_operator_parity(op, &rng);
  }
  // Colour: 40 random samples of a (6, 5, 3) image, some outside, some twice.
  const Expr c = make_variable({6, 5, 3}, "c");
  std::uniform_int_distribution<int> pick(-1, 6);
  std::vector<float> iv;
  for (int a = 0; a < 3; ++a) {
    for (int o = 0; o < 40; ++o) iv.push_back(static_cast<float>(std::min(pick(rng), a == 0 ? 6 : a == 1 ? 5 : 3)));
  }
  const Expr uc = make_uneven_subsample(c, constant({3, 40}, iv, "ic"));
  EXPECT_TRUE(dot_test(halide(), uc, 5).passed);
  expect_operator_parity(uc, &rng);
  EXPECT_THAT(test::user_error_of([&] { make_uneven_subsample(x, constant({3, 2}, {0, 0, 0, 0, 0, 0}, "i3")); }),
              ::testing::HasSubstr("uneven_subsample: indices shape (3, 2) must be (2, ...the output's shape)"));
  EXPECT_THAT(test::user_error_of([&] { make_uneven_subsample(x, constant({2, 1}, {0.5f, 0}, "ih")); }),
              ::testing::HasSubstr("indices must be whole numbers"));
}

// A deconvolution whose blur is a black box reaches the same result as the
// same problem written with conv (the operator is the same; only its
// implementation differs), on halide, with a pc and a linearized-ADMM solve.
TEST(HalideSolve, BlackBoxDeconvolutionMatchesTheBuiltInConv) {
  test::register_test_black_boxes();
  std::string dir = test::temp_dir();
  std::mt19937_64 rng(4);
  Array b(Shape{24, 20});
  std::uniform_real_distribution<float> u(0, 1);
  for (float& v : b.data) v = u(rng);
  io::write_npy(dir + "/b.npy", b);
  const std::string head = "x = variable(24, 20)\nb = load(\"b.npy\")\n";
  const std::string tail = " - b) + 0.05 * norm1(grad(x)) + nonneg(x)\n";
  Problem with_bb = parse_program(head + "minimize sum_squares(black_box(\"shift_blur\", x)" + tail,
                                  dir + "/bb.prox", dir).problem;
  Problem with_conv = parse_program(
      head + "k = array([3, 3], [0, 0, 0, 0, 0.5, 0.2, 0, 0.3, 0])\nminimize sum_squares(conv(k, x)" + tail,
      dir + "/conv.prox", dir).problem;
  for (const char* solver : {"pc", "ladmm"}) {
    SCOPED_TRACE(solver);
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 200;
    o.eps_abs = 0;
    o.eps_rel = 0;
    SolveResult r1 = solve(with_bb, o, halide());
    SolveResult r2 = solve(with_conv, o, halide());
    // Both run the same iterations on the same operator in float32 and differ
    // by rounding only (other summation orders), which 200 iterations
    // amplify to ~2e-4 here: they must agree within 1e-3 (x is in [0, 1]),
    // ProxImaL's default stopping tolerance, i.e. be the same solution to the
    // accuracy a solve promises. A wrong black box (or adjoint) is off by O(1).
    expect_close(r1.x.at("x"), r2.x.at("x"), 1e-3, std::string("x, ") + solver);
    EXPECT_NEAR(r1.summary.objective, r2.summary.objective, 1e-4 * std::fabs(r2.summary.objective));
  }
}

// A solve reports the user's objective at its result, evaluated on the
// solve's backend with the iterations' programs: on halide, each term's
// elements are float32 (a 3×3 convolution's output, a float sum of 9
// products: relative error within about 9·2⁻²⁴ ≈ 5.4e-7 of the sum of the
// products' magnitudes per element, twice that in its square, on data where
// the residual is not much smaller than b) and its sums double, so it
// matches the emulator's double
// evaluation at the same x within 1e-5 relative (a term evaluated wrongly
// is off by far more). Both with x as it is (where nonneg is violated:
// inf) and at max(x, 0).
TEST(HalideObjective, TheSolvesObjectiveIsTheEmulatorsAtItsResult) {
  const std::string dir = test::temp_dir();
  std::mt19937_64 rng(71);
  std::uniform_real_distribution<float> u(0, 1);
  Array b({20, 24});
  for (float& v : b.data) v = u(rng);
  io::write_npy(dir + "/b.npy", b);
  Problem p = parse_program(
      "x = variable(20, 24)\nb = load(\"b.npy\")\nk = array([3, 3], [0, 0.1, 0, 0.1, 0.5, 0.2, 0, 0.1, 0])\n"
      "minimize sum_squares(conv(k, x) - b) + 0.05 * group_norm1(grad(x), [2]) + nonneg(x)\n",
      dir + "/p.prox", dir).problem;
  SolverOptions o;
  o.solver = "pc";
  o.max_iters = 30;
  o.eps_abs = 0;
  o.eps_rel = 0;
  SolveResult r = solve(p, o, halide());
  std::map<const ExprNode*, const Array*> xs = {{p.variables()[0].get(), &r.x.at("x")}};
  ObjectiveReport ref = evaluate_objective(emulator(), p, xs);
  ASSERT_TRUE(ref.has_projection);
  ASSERT_TRUE(r.summary.has_projection);
  ASSERT_TRUE(std::isfinite(ref.total_at_projection));
  EXPECT_NEAR(r.summary.objective_at_projection, ref.total_at_projection, 1e-5 * std::fabs(ref.total_at_projection));
  if (std::isfinite(ref.total)) {
    EXPECT_NEAR(r.summary.objective, ref.total, 1e-5 * std::fabs(ref.total));
  } else {
    EXPECT_EQ(r.summary.objective, ref.total);
  }
}

Expr warp_homography() {
  const double a = 10 * M_PI / 180, s = 1.1;
  auto d = std::make_shared<ConstantData>();
  d->array = Array(Shape{3, 3}, {static_cast<float>(s * std::cos(a)), static_cast<float>(-s * std::sin(a)), 1.5f,
                                 static_cast<float>(s * std::sin(a)), static_cast<float>(s * std::cos(a)), -0.7f,
                                 0.001f, 0.0f, 1.0f});
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "H");
}

TEST(HalideParity, LargeKernelsConvolveByFft) {
  std::mt19937_64 rng(31);
  struct Case {
    Shape x, k;
  };
  // 2-D, 2-D with colour channels, 3-D; every kernel has at least kFftConvTaps taps.
  // 256 × 320 has enough points for FFTW's threads, and transforms from and
  // into Halide's buffers directly (one channel).
  for (const Case& c : {Case{{24, 20}, {11, 11}}, Case{{16, 13, 3}, {10, 10}}, Case{{10, 12, 14}, {5, 5, 5}},
                        Case{{256, 320}, {11, 11}}}) {
    Expr x = make_variable(c.x, "x");
    Expr k = make_conv(random_constant(c.k, &rng), x);
    SCOPED_TRACE(print_expression(k));
    expect_operator_parity(k, &rng);
    DotTestResult r = dot_test(halide(), k, 7);
    EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
    StepProgram p;
    p.name = "fft_conv";
    Step in = step_input("x", c.x);
    p.outputs = {{"y", step_forward(k, {in})}, {"xt", step_adjoint(k, 0, in)}};
    EXPECT_THAT(halide_emit(p, "source"), ::testing::HasSubstr("g.fft_conv("));
    if (c.x.size() == 2) {
      // Ahead of time, the transfer function is an argument of its own.
      AotArtifacts a = halide_compile_aot(p, test::temp_dir(), "fft_conv_aot");
      EXPECT_TRUE(a.needs_fft_runtime);
      EXPECT_THAT(read_file(a.manifest), ::testing::HasSubstr("\"name\": \"otf0\", \"kind\": \"otf\""));
    }
  }
  // A small kernel stays direct.
  Expr x = make_variable({24, 20}, "x");
  StepProgram p;
  p.outputs = {{"y", step_forward(make_conv(random_constant({9, 9}, &rng), x), {step_input("x", {24, 20})})}};
  EXPECT_THAT(halide_emit(p, "source"), ::testing::Not(::testing::HasSubstr("g.fft_conv(")));
}

// A direct convolution by a 2-D kernel of rank one runs in two passes, one per
// axis, by the kernel's factors (hl::rank_one_factors); any other kernel, and
// the emulator, sum over every tap.
TEST(HalideParity, SeparableKernelsConvolveInTwoPasses) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> unit(-1, 1);
  // An outer product rounded to float, and the kernel of gaussian(): each of rank one to rounding.
  auto outer = [&](int64_t n0, int64_t n1) {
    Array k(Shape{n0, n1});
    std::vector<double> u(static_cast<size_t>(n0)), v(static_cast<size_t>(n1));
    for (double& a : u) a = unit(rng);
    for (double& b : v) b = unit(rng);
    for (int64_t i = 0; i < n0; ++i) {
      for (int64_t j = 0; j < n1; ++j)
        k.data[static_cast<size_t>(i * n1 + j)] = static_cast<float>(u[i] * v[j]);
    }
    return k;
  };
  for (const Array& k : {outer(5, 3), outer(7, 7), make_gaussian({7, 7}, 1.5)->constant->array}) {
    auto f = hl::rank_one_factors(k);
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->first.shape, Shape({k.shape[0], 1}));
    EXPECT_EQ(f->second.shape, Shape({1, k.shape[1]}));
    double worst = 0, top = 0;
    for (int64_t i = 0; i < k.shape[0]; ++i) {
      for (int64_t j = 0; j < k.shape[1]; ++j) {
        const double kij = k.data[static_cast<size_t>(i * k.shape[1] + j)];
        top = std::max(top, std::fabs(kij));
        worst = std::max(worst, std::fabs(double{f->first.data[static_cast<size_t>(i)]} *
                                              double{f->second.data[static_cast<size_t>(j)]} -
                                          kij));
      }
    }
    EXPECT_LE(worst, 4 * kEps32 * top);
  }
  // Not of rank one, or not 2-D with two axes of 2 taps or more: none.
  Array full = outer(5, 5);
  full.data[7] += 1e-3f;
  Array zero(Shape{3, 3}), nan = outer(3, 3);
  nan.data[4] = std::nanf("");
  for (const Array& k : {full, zero, nan, outer(1, 7), outer(7, 1), random_array({3, 3, 2}, &rng)}) {
    EXPECT_FALSE(hl::rank_one_factors(k).has_value()) << shape_to_string(k.shape);
  }

  // Each boundary, with colour channels too: the two passes against the emulator's 2-D sum, and
  // the dot test; the program's source convolves by data slots of one tap along an axis.
  for (const Shape& image : {Shape{24, 20}, Shape{16, 13, 3}}) {
    for (const char* boundary : {"", "zero", "replicate"}) {
      if (image.size() == 3 && *boundary) continue;  // colour channels: circular
      auto kd = std::make_shared<ConstantData>();
      kd->array = outer(5, 3);
      Expr x = make_variable(image, "x");
      Expr c = make_conv(make_constant(kd, "k"), x, boundary, 2);
      SCOPED_TRACE(print_expression(c) + " " + shape_to_string(image));
      expect_operator_parity(c, &rng);
      DotTestResult r = dot_test(halide(), c, 3);
      EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
      StepProgram p;
      p.name = "separable";
      Step in = step_input("x", image);
      p.outputs = {{"y", step_forward(c, {in})}, {"xt", step_adjoint(c, 0, in)}};
      const std::string source = halide_emit(p, "source");
      EXPECT_THAT(source, ::testing::HasSubstr("{-5, -1});"));
      EXPECT_THAT(source, ::testing::HasSubstr("{-1, -3});"));
      // The same operator by a kernel of full rank: another pipeline (the structural key differs),
      // summed over its 15 taps, in the same process after the separable one.
      auto fd = std::make_shared<ConstantData>();
      fd->array = random_array({5, 3}, &rng);
      Expr cf = make_conv(make_constant(fd, "k"), x, boundary, 2);
      expect_operator_parity(cf, &rng);
      StepProgram q = p;
      q.outputs = {{"y", step_forward(cf, {in})}, {"xt", step_adjoint(cf, 0, in)}};
      EXPECT_THAT(halide_emit(q, "source"), ::testing::HasSubstr("{-5, -3});"));
    }
  }

  // An even kernel of rank one (its centre off the middle) with each boundary; a 15 × 15 one, which
  // convolves in two passes where its 225 taps went by FFT; a column kernel, whose taps read rows of
  // x wrapped per row (Graph::conv without a wrapped copy), with colour channels too.
  struct Extra {
    Shape image;
    Array kernel;
    std::vector<const char*> boundaries;
  };
  for (const Extra& cs :
       {Extra{{24, 20}, outer(4, 2), {"", "zero", "replicate"}}, Extra{{24, 20}, outer(15, 15), {""}},
        Extra{{24, 20}, random_array({5, 1}, &rng), {""}},
        Extra{{16, 13, 3}, random_array({5, 1}, &rng), {""}}}) {
    for (const char* boundary : cs.boundaries) {
      auto kd = std::make_shared<ConstantData>();
      kd->array = cs.kernel;
      Expr c = make_conv(make_constant(kd, "k"), make_variable(cs.image, "x"), boundary, 2);
      SCOPED_TRACE(print_expression(c) + " " + shape_to_string(cs.image) + " " +
                   shape_to_string(cs.kernel.shape));
      expect_operator_parity(c, &rng);
      DotTestResult r = dot_test(halide(), c, 3);
      EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
    }
  }

  // Replacement data for the kernel (StepInputs::data): its factors are taken again; data not of
  // rank one is refused, since the pipeline convolves by factors.
  auto kd = std::make_shared<ConstantData>();
  kd->array = outer(5, 3);
  Expr knode = make_constant(kd, "k");
  Expr x = make_variable({24, 20}, "x");
  Expr c = make_conv(knode, x);
  StepProgram p;
  p.name = "separable_data";
  p.outputs = {{"y", step_forward(c, {step_input("x", {24, 20})})}};
  Array xv = random_array({24, 20}, &rng), other = outer(5, 3);
  StepInputs in;
  in.buffers["x"] = &xv;
  in.data[knode.get()] = &other;
  std::unique_ptr<CompiledStep> h = halide().compile(p);
  const Array got = h->run(in).arrays.at("y");
  const Array want = emulator().compile(p)->run(in).arrays.at("y");
  expect_close(got, want, 16 * kEps32 * 15 * std::max(1.0, max_abs(want)), "replaced kernel");
  Array bad3(Shape{5, 3});
  bad3.data = random_array({5, 3}, &rng).data;
  in.data[knode.get()] = &bad3;
  EXPECT_THAT(
      test::user_error_of([&] { h->run(in); }),
      ::testing::HasSubstr("kernel k: the pipeline convolves by the two factors of a kernel of rank one"));
  // Ahead of time, each factor is a data argument that says which kernel and axis it comes from.
  AotArtifacts a = halide_compile_aot(p, test::temp_dir(), "separable_aot");
  const std::string manifest = read_file(a.manifest);
  EXPECT_THAT(manifest,
              ::testing::HasSubstr("\"constant\": \"k_column\", \"factor_of\": \"k\", \"axis\": 0"));
  EXPECT_THAT(manifest, ::testing::HasSubstr("\"constant\": \"k_row\", \"factor_of\": \"k\", \"axis\": 1"));
}

// --emit c: Halide's C backend output compiles as C++ (with Halide's
// runtime header alone), for stencils and reductions and for programs with
// FFT extern stages (written without a schedule: Halide 14's C backend
// wrote the default schedule's odd-width vector shuffles in code that did
// not compile).
TEST(HalideEmit, CCompiles) {
  std::mt19937_64 rng(31);
  Expr x = make_variable({24, 20}, "x");
  Step in = step_input("x", {24, 20});
  StepProgram tv;
  tv.name = "emit_c_tv";
  Expr g = make_grad(x);
  tv.outputs = {{"div", step_adjoint(g, 0, step_forward(g, {in}))},
                {"norm", step_reduce(StepKind::SumSquares, step_forward(g, {in}))}};
  StepProgram fft;
  fft.name = "emit_c_fft";
  Expr big = make_conv(random_constant({11, 11}, &rng), x);
  fft.outputs = {{"y", step_forward(big, {in})},
                 {"s", step_circulant_solve(random_constant({5, 5}, &rng), in, step_constant(2), step_constant(1))}};
  // The whole Pock–Chambolle iteration of TV denoising (its default
  // schedule's C did not compile).
  PassManagerOptions po;
  const Problem denoise =
      run_passes(parse_program_file(test::source_dir() + "/examples/denoise_tv_iso.prox").problem, po);
  StepProgram pc = iteration_program(denoise, SolverOptions{});
  const std::string dir = test::temp_dir();
  for (const StepProgram& p : {tv, fft, pc}) {
    SCOPED_TRACE(p.name);
    test::write_text(dir + "/" + p.name + ".cpp", halide_emit(p, "c"));
    auto r = test::run_command("c++ -std=c++17 -c " + test::shell_quote(dir + "/" + p.name + ".cpp") +
                               " -I " PROXC_HALIDE_INCLUDE " -o " + test::shell_quote(dir + "/out.o") + " 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000);
  }
}

TEST(HalideParity, RotatingWarp) {
  std::mt19937_64 rng(8);
  Expr x = make_variable({11, 9});
  expect_operator_parity(make_warp(x, warp_homography()), &rng);
}

TEST(HalideParity, RandomOperatorDags) {
  std::mt19937_64 rng(77);
  const Shape shapes[] = {{7, 6}, {9, 5}, {6, 8, 3}};
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<Expr> pool = {make_variable(shapes[trial % 3], "x")};
    if (trial % 2) pool.push_back(make_variable(shapes[(trial + 1) % 3], "y"));
    for (int i = 0; i < 7; ++i) {
      Expr a = pool[rng() % pool.size()];
      Expr e;
      switch (rng() % 8) {
        case 0: if (a->rank() <= 3) e = make_grad(a, std::min<int64_t>(2, a->rank())); break;
        case 1:
          if (a->rank() >= 2 && a->shape[0] >= 3) e = make_conv(random_constant({3, 2}, &rng), a);
          break;
        case 2: e = make_mul_elemwise(random_constant(a->shape, &rng), a); break;
        case 3: e = make_subsample(a, std::vector<int64_t>(a->shape.size(), 1 + rng() % 2)); break;
        case 4: e = make_scale(1.5, a); break;
        case 5:
          for (const Expr& b : pool) {
            if (b != a && b->shape == a->shape) e = make_sub(b, a);
          }
          break;
        case 6: e = make_transpose(a, {}); break;
        case 7: e = make_vstack({a, pool[rng() % pool.size()]}); break;
      }
      if (e && num_elements(e->shape) < 20000) pool.push_back(e);
    }
    Expr k = make_vstack({pool.back(), pool[pool.size() / 2], pool[0]});
    SCOPED_TRACE(print_expression(k));
    expect_operator_parity(k, &rng);
    EXPECT_TRUE(dot_test(halide(), k, 9).passed);
  }
}

// Every prox and function value on a Halide backend against the emulator.
void expect_every_prox_and_value(Backend& backend) {
  std::mt19937_64 rng(12);
  Shape s{6, 5, 2};
  Expr x = make_variable(s, "x");
  Expr b = random_constant(s, &rng, -0.3f, 0.3f, "b");
  Expr c = random_constant(s, &rng, -0.3f, 0.3f, "c");
  Expr counts = random_constant(s, &rng, 0.0f, 3.0f, "counts");
  // Weights of both signs, some zero; one per group (axis 2) for the group
  // norm; >= 0 for Poisson; a mask of 0, 1 and values between.
  Array wa = random_array(s, &rng, -2.0f, 2.0f), ga(s), pa(s), ma(s);
  for (size_t i = 0; i < wa.data.size(); ++i) {
    if (i % 5 == 0) wa.data[i] = 0;
    ga.data[i] = wa.data[i & ~size_t{1}];  // shape (6, 5, 2): axis 2 pairs neighbours
    pa.data[i] = std::fabs(wa.data[i]);
    ma.data[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? 1.0f : 0.5f * std::fabs(wa.data[i]);
  }
  auto constant_of = [](const Array& a, const char* name) {
    auto d = std::make_shared<ConstantData>();
    d->array = a;
    return make_constant(d, name);
  };
  const Expr w = constant_of(wa, "w"), gw = constant_of(ga, "gw"), pw = constant_of(pa, "pw"),
             mask = constant_of(ma, "mask");
  std::vector<FunctionTerm> terms;
  for (FunctionKind kind :
       {FunctionKind::SumSquares, FunctionKind::Norm1, FunctionKind::GroupNorm1, FunctionKind::Nonneg,
        FunctionKind::PoissonNorm, FunctionKind::SumEntries, FunctionKind::Box, FunctionKind::LeastSquares,
        FunctionKind::WeightedNorm1, FunctionKind::WeightedSumSquares, FunctionKind::WeightedGroupNorm1,
        FunctionKind::WeightedNonneg, FunctionKind::MaskedNonneg, FunctionKind::WeightedPoissonNorm,
        FunctionKind::ZeroProx}) {
    for (int params = 0; params < 3; ++params) {
      FunctionTerm t;
      t.kind = kind;
      t.arg = x;
      if (kind == FunctionKind::GroupNorm1 || kind == FunctionKind::WeightedGroupNorm1) t.axes = {2};
      if (kind == FunctionKind::PoissonNorm || kind == FunctionKind::WeightedPoissonNorm) t.counts = counts;
      if (kind == FunctionKind::WeightedNorm1 || kind == FunctionKind::WeightedSumSquares ||
          kind == FunctionKind::WeightedNonneg) {
        t.weight = params == 2 ? make_scalar_constant(-1.5) : w;
      }
      if (kind == FunctionKind::WeightedGroupNorm1) t.weight = gw;
      if (kind == FunctionKind::WeightedPoissonNorm) t.weight = pw;
      if (kind == FunctionKind::MaskedNonneg) t.weight = mask;
      if (kind == FunctionKind::Box) {
        t.lower = params == 2 ? Param::of(b) : Param::of(-0.5);
        t.upper = Param::of(0.75);
      }
      if (params == 1) {
        t.alpha = 0.7;
        t.beta = 1.3;
        t.b = Param::of(b);
        t.c = Param::of(c);
        t.gamma = 0.2;
        t.d = 0.3;
      } else if (params == 2) {
        t.alpha = 1.5;
        t.beta = -0.8;
        t.b = Param::of(0.25);
        t.c = Param::of(-0.1);
        t.gamma = 0.05;
      }
      terms.push_back(make_term(t));
    }
  }
  // Programs of one function kind each (its three settings): a value is a
  // reduction (two GPU kernels, or row sums and a tail), and Halide's
  // lowering time grows faster than the number of them in one pipeline.
  Step v = step_input("v", s);
  Step rho = step_param("rho");
  for (size_t first = 0; first < terms.size(); first += 3) {
    StepProgram p;
    p.name = "prox_parity";
    for (size_t i = first; i < first + 3; ++i) {
      p.outputs.push_back({"prox" + std::to_string(i), step_prox(terms[i], v, rho)});
      p.outputs.push_back({"value" + std::to_string(i), step_value(terms[i], v)});
    }
    auto he = backend.compile(p);
    auto ee = emulator().compile(p);
    for (double r : {0.5, 1.7}) {
      Array va = random_array(s, &rng, -1.5f, 1.5f);
      for (float& f : va.data) f = std::fabs(f) + 0.05f;  // inside every domain, so values are finite
      StepInputs in;
      in.buffers["v"] = &va;
      in.params["rho"] = r;
      StepOutputs h = he->run(in), e = ee->run(in);
      for (size_t i = first; i < first + 3; ++i) {
        std::string what = std::string(to_string(terms[i].kind)) + " #" + std::to_string(i) + " rho " + std::to_string(r);
        const Array& ea = e.arrays.at("prox" + std::to_string(i));
        // A prox is a few float operations on each entry: 64·eps32 relative to its scale.
        expect_close(h.arrays.at("prox" + std::to_string(i)), ea, 64 * kEps32 * std::max(1.0, max_abs(ea)), what);
        double ev = e.scalars.at("value" + std::to_string(i)), hv = h.scalars.at("value" + std::to_string(i));
        if (std::isinf(ev)) {
          EXPECT_EQ(hv, ev) << what;
        } else {
          // Values sum n float entries (accumulated in double): n·eps32 relative.
          EXPECT_NEAR(hv, ev, static_cast<double>(num_elements(s)) * kEps32 * (1 + std::fabs(ev)) * 4) << what;
        }
      }
    }
  }
}

TEST(HalideParity, EveryProxAndValue) { expect_every_prox_and_value(halide()); }

// The same on OpenCL (PoCL): the prox kernels, and the values the host sums
// from what the device computed.
TEST(HalideGpu, EveryProxAndValueOnOpenCl) {
  auto b = test::make_gpu_backend();
  ASSERT_TRUE(test::runs_on_gpu(b->target_used()));
  expect_every_prox_and_value(*b);
}

// Every elementwise operation, reduction and a circulant solve of a program
// over arrays of shape s, against the emulator.
void expect_arithmetic_parity(const Shape& s, const Expr& k, std::mt19937_64* rng, Backend& backend = halide()) {
  StepProgram p;
  p.name = "arith";
  Step a = step_input("a", s), b = step_input("b", s);
  Step t = step_param("t");
  p.outputs = {
      {"add", step_binary(StepKind::Add, a, b)},
      {"sub", step_binary(StepKind::Sub, a, t)},
      {"mul", step_binary(StepKind::Mul, a, b)},
      {"div", step_binary(StepKind::Div, a, step_binary(StepKind::Add, step_unary(StepKind::Abs, b), step_constant(1)))},
      {"min", step_binary(StepKind::Min, a, b)},
      {"max", step_binary(StepKind::Max, a, step_constant(0.1))},
      {"neg", step_unary(StepKind::Neg, a)},
      {"sqrt", step_unary(StepKind::Sqrt, step_unary(StepKind::Abs, a))},
      {"sign", step_unary(StepKind::Sign, a)},
      {"axpby", step_axpby(t, a, step_constant(-2), b)},
      {"fill", step_fill(0.25, s)},
      {"sum", step_reduce(StepKind::Sum, a)},
      {"ss", step_reduce(StepKind::SumSquares, a)},
      {"dot", step_reduce(StepKind::Dot, a, b)},
      {"maxabs", step_reduce(StepKind::MaxAbs, a)},
      {"solve", step_circulant_solve(k, a, t, step_constant(0.5))},
  };
  Array av = random_array(s, rng), bv = random_array(s, rng);
  StepInputs in;
  in.buffers = {{"a", &av}, {"b", &bv}};
  in.params = {{"t", 0.75}};
  StepOutputs h = backend.compile(p)->run(in), e = emulator().compile(p)->run(in);
  for (const auto& [name, arr] : e.arrays) expect_close(h.arrays.at(name), arr, 64 * kEps32 * std::max(1.0, max_abs(arr)), name);
  for (const auto& [name, v] : e.scalars) EXPECT_NEAR(h.scalars.at(name), v, 1e-5 * (1 + std::fabs(v))) << name;
}

TEST(HalideParity, ArithmeticReductionsAndCirculantSolve) {
  std::mt19937_64 rng(21);
  Expr k = random_constant({3, 3}, &rng, 0.0f, 1.0f, "k");
  // 256 × 320: FFTW's threads, and the transforms in place (see LargeKernelsConvolveByFft).
  for (const Shape& s : {Shape{8, 6}, Shape{256, 320}}) {
    SCOPED_TRACE(shape_to_string(s));
    expect_arithmetic_parity(s, k, &rng);
  }
}

// The same on OpenCL (PoCL): the reductions' per-row partial values on the
// device, summed by the host, and the FFT solve's extern stage reading an
// input the device computed.
void expect_gpu_arithmetic_and_reductions(Backend* b) {
  std::mt19937_64 rng(21);
  Expr k = random_constant({3, 3}, &rng, 0.0f, 1.0f, "k");
  // Reductions: a thread per column and block of 64 rows (the last block
  // partial at 33 and 200 rows), then one per column.
  for (const Shape& s : {Shape{8, 6}, Shape{256, 320}, Shape{33, 70}, Shape{200, 90}}) {
    SCOPED_TRACE(shape_to_string(s));
    expect_arithmetic_parity(s, k, &rng, *b);
  }
  // 1-D arrays: thread l sums elements l, l + 4096, ... (fewer threads than
  // 4096 below that; the last stride partial at 10000).
  for (int64_t n : {int64_t{5}, int64_t{1024}, int64_t{3000}, int64_t{10000}}) {
    SCOPED_TRACE(n);
    StepProgram p;
    p.name = "flat";
    Step a = step_input("a", {n}), c = step_input("c", {n});
    p.outputs = {{"sum", step_reduce(StepKind::Sum, a)},
                 {"ss", step_reduce(StepKind::SumSquares, a)},
                 {"dot", step_reduce(StepKind::Dot, a, c)},
                 {"maxabs", step_reduce(StepKind::MaxAbs, a)}};
    Array av = random_array({n}, &rng), cv = random_array({n}, &rng);
    av.data.back() = -7.0f;  // the largest |entry|, in the last chunk
    StepInputs in;
    in.buffers = {{"a", &av}, {"c", &cv}};
    StepOutputs h = b->compile(p)->run(in), e = emulator().compile(p)->run(in);
    for (const auto& [name, v] : e.scalars) {
      EXPECT_NEAR(h.scalars.at(name), v, 1e-6 * static_cast<double>(n) + 1e-5 * std::fabs(v)) << name;
    }
    EXPECT_EQ(h.scalars.at("maxabs"), 7.0);
  }
  // Rank 3 and 4: the lane axis the innermost long one (short trailing axes
  // summed in each thread, outer axes in the block's loop), or axis 0 when
  // every other axis is short; the largest |entry| last.
  for (const Shape& s : {Shape{5, 70, 40}, Shape{3, 20, 70, 2}, Shape{5000, 3}, Shape{10, 3, 4}}) {
    SCOPED_TRACE(shape_to_string(s));
    StepProgram p;
    p.name = "ranks";
    Step a = step_input("a", s), c = step_input("c", s);
    p.outputs = {{"sum", step_reduce(StepKind::Sum, a)},
                 {"ss", step_reduce(StepKind::SumSquares, a)},
                 {"dot", step_reduce(StepKind::Dot, a, c)},
                 {"maxabs", step_reduce(StepKind::MaxAbs, a)}};
    Array av = random_array(s, &rng), cv = random_array(s, &rng);
    av.data.back() = -7.0f;
    StepInputs in;
    in.buffers = {{"a", &av}, {"c", &cv}};
    StepOutputs h = b->compile(p)->run(in), e = emulator().compile(p)->run(in);
    const double n = static_cast<double>(av.data.size());
    for (const auto& [name, v] : e.scalars) EXPECT_NEAR(h.scalars.at(name), v, 1e-6 * n + 1e-5 * std::fabs(v)) << name;
    EXPECT_EQ(h.scalars.at("maxabs"), 7.0);
  }
}

TEST(HalideGpu, ArithmeticReductionsAndCirculantSolveOnOpenCl) {
  auto b = test::make_gpu_backend();
  ASSERT_TRUE(test::runs_on_gpu(b->target_used()));
  expect_gpu_arithmetic_and_reductions(b.get());
}

// conv(a random kernel of shape ks, x of shape xs) on `backend`: forward and
// adjoint against the emulator, and the dot test. Returns the operator.
Expr expect_conv_on(Backend& backend, const Shape& xs, const Shape& ks, std::mt19937_64* rng) {
  const Expr k = make_conv(random_constant(ks, rng), make_variable(xs, "x"));
  SCOPED_TRACE(print_expression(k));
  expect_operator_parity(k, rng, backend);
  DotTestResult r = dot_test(backend, k, 3);
  EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > " << r.tolerance;
  return k;
}

// The FFT stages of a GPU pipeline on the device (Graph::device_fft): clFFT
// on OpenCL (libclfft-dev, installed by scripts/install-deps.sh; on PoCL here),
// cuFFT on CUDA. The circulant solve and FFT convolutions, forward and
// adjoint, 2-D, with channels and 3-D, against the emulator at the host
// FFT's tolerances; a size clFFT does not plan (a factor 17) through the
// host; and with PROXC_DEVICE_FFT=0 the host's FFTW with copies.
TEST(HalideGpu, FftStagesOnTheDevice) {
  auto gpu_options = [] {
    HalideOptions o;
    o.target = test::gpu_target();
    return o;
  };
  const bool cuda = test::gpu_target().find("cuda") != std::string::npos;
  const DeviceFftApi api = cuda ? DeviceFftApi::Cuda : DeviceFftApi::OpenCl;
  ASSERT_TRUE(device_fft_loads(api)) << (cuda ? "libcufft" : "libclFFT (libclfft-dev)") << " does not load";
  std::mt19937_64 rng(37);
  struct Case {
    Shape x, k;
  };
  // 2-D, with channels, 3-D with and without them, 1-D with channels (the
  // channels are clFFT's and cuFFT's batch, one element apart).
  const std::vector<Case> cases = {{{24, 20}, {11, 11}},    {{16, 13, 3}, {10, 10}},       {{10, 12, 14}, {5, 5, 5}},
                                   {{256, 320}, {11, 11}},  {{17, 34}, {10, 10}},          {{10, 12, 14, 2}, {5, 5, 5}},
                                   {{300, 3}, {101}}};
  for (const char* device : {"1", "0"}) {
    SCOPED_TRACE(std::string("PROXC_DEVICE_FFT=") + device);
    test::ScopedEnv on("PROXC_DEVICE_FFT", device);
    auto b = test::make_gpu_backend();
    ASSERT_TRUE(test::runs_on_gpu(b->target_used()));
    EXPECT_EQ(b->fft_used(), "none");
    for (const Case& c : cases) {
      const Expr k = expect_conv_on(*b, c.x, c.k, &rng);
      SCOPED_TRACE(print_expression(k));
      if (c.x.size() == 2) {
        StepProgram p;
        p.name = "device_solve";
        Step a = step_input("a", c.x);
        p.outputs = {{"solve", step_circulant_solve(random_constant({3, 3}, &rng, 0.0f, 1.0f), a, step_param("t"),
                                                    step_constant(0.5))}};
        EXPECT_THAT(halide_emit(p, "source", gpu_options()),
                    ::testing::HasSubstr(std::string(device) == "1" ? (cuda ? "g.device_fft(2);" : "g.device_fft(1);")
                                                                     : "Graph g("));
        Array av = random_array(c.x, &rng);
        StepInputs in;
        in.buffers = {{"a", &av}};
        in.params = {{"t", 0.75}};
        StepOutputs h = b->compile(p)->run(in), e = emulator().compile(p)->run(in);
        const Array& want = e.arrays.at("solve");
        expect_close(h.arrays.at("solve"), want, 64 * kEps32 * std::max(1.0, max_abs(want)), "solve");
      }
    }
    // What ran: the device's library, clFFT handing 17 × 34 to the host; or FFTW.
    if (std::string(device) == "1") {
      EXPECT_THAT(b->fft_used(), ::testing::HasSubstr(cuda ? "cuFFT" : "clFFT"));
      if (!cuda) {
        EXPECT_THAT(b->fft_used(), ::testing::HasSubstr("(device; FFTW on the host for sizes it does not plan)"));
      }
    } else {
      EXPECT_EQ(b->fft_used(), "FFTW (host)");
    }
    if (std::string(device) == "0") {
      StepProgram p;
      p.outputs = {{"y", step_forward(make_conv(random_constant({11, 11}, &rng), make_variable({24, 20}, "x")),
                                      {step_input("x", {24, 20})})}};
      EXPECT_THAT(halide_emit(p, "source", gpu_options()),
                  ::testing::Not(::testing::HasSubstr("g.device_fft(")));
    }
  }
}

// A convolution that is a kernel of its own (images of 32 or more in every
// dimension) with 9 taps or more reads its operand from a tile staged in
// the block's shared memory (Graph::kStagedTaps): forward and adjoint
// against the emulator and the dot test, with a kernel of 9 and 49 taps,
// channels, and image sizes that leave partial blocks; a kernel of 6 taps
// reads the device's memory directly.
TEST(HalideGpu, ConvolutionsStageTheirOperandInSharedMemory) {
  auto b = test::make_gpu_backend();
  ASSERT_TRUE(test::runs_on_gpu(b->target_used()));
  HalideOptions o;
  o.target = test::gpu_target();
  std::mt19937_64 rng(43);
  struct Case {
    Shape x, k;
    bool staged;
  };
  for (const Case& c : {Case{{64, 48}, {7, 7}, true}, Case{{33, 70}, {3, 3}, true}, Case{{40, 36, 3}, {5, 5}, true},
                        Case{{48, 40}, {3, 2}, false}}) {
    const Expr k = expect_conv_on(*b, c.x, c.k, &rng);
    SCOPED_TRACE(print_expression(k));
    StepProgram p;
    p.name = "staged_conv";
    Step in = step_input("x", c.x);
    p.outputs = {{"y", step_forward(k, {in})}, {"xt", step_adjoint(k, 0, in)}};
    const std::string stmt = halide_emit(p, "stmt", o);
    EXPECT_EQ(stmt.find("shared_size") != std::string::npos, c.staged);
  }
}

// OpenCL devices without double precision (no cl_khr_fp64: many Intel and
// ARM GPUs) get kernels without doubles (Schedule::GpuFloat: float partial
// sums, the doubles a kernel reads rounded to float on the host);
// PROXC_OPENCL_DOUBLES=0 treats PoCL's device as one. Halide's OpenCL code
// generator refuses a double in a kernel of a target without cl_doubles, so
// that every program compiles shows that none is left; the values are the
// emulator's at the tolerances of the kernels with doubles.
TEST(HalideGpu, KernelsWithoutDoublesOnOpenCl) {
  if (test::gpu_target().find("opencl") == std::string::npos) GTEST_SKIP() << "an OpenCL target's case";
  test::ScopedEnv no_doubles("PROXC_OPENCL_DOUBLES", "0");
  auto b = test::make_gpu_backend();
  ASSERT_TRUE(test::runs_on_gpu(b->target_used(), /*doubles=*/false));
  expect_every_operator(*b);
  expect_every_prox_and_value(*b);
  expect_gpu_arithmetic_and_reductions(b.get());
}

// Reductions over rows of every length: with all extents at least 8 the
// pipeline takes a row's last partial group of 8 in its vector loop (the
// group shifted inwards, the lanes already counted masked off); with an
// extent under 8 it is another pipeline, with scalar tails. Both agree with
// the emulator, and sizes keeping the promise share one pipeline.
TEST(HalideParity, ReductionsOverRowsOfEveryLength) {
  std::mt19937_64 rng(41);
  auto program_for = [](const Shape& s) {
    StepProgram p;
    p.name = "rows";
    Expr x = make_variable(s, "x");
    Step a = step_input("a", s), b = step_input("b", s);
    Step g = step_forward(make_grad(x), {a});  // (rows, columns, 2): a short axis folded into each element
    p.outputs = {{"sum", step_reduce(StepKind::Sum, a)},
                 {"ss", step_reduce(StepKind::SumSquares, g)},
                 {"dot", step_reduce(StepKind::Dot, a, b)},
                 {"maxabs", step_reduce(StepKind::MaxAbs, step_binary(StepKind::Sub, a, b))},
                 {"g", g}};
    return p;
  };
  auto obtained = [] { return halide_compile_count() + halide_cache_load_count(); };
  auto run = [&](const Shape& s) {
    SCOPED_TRACE(shape_to_string(s));
    StepProgram p = program_for(s);
    Array av = random_array(s, &rng), bv = random_array(s, &rng);
    // The largest |entry| where max_abs is reached: in the last partial group.
    bv.data.back() = 5.0f;
    StepInputs in;
    in.buffers = {{"a", &av}, {"b", &bv}};
    StepOutputs h = halide().compile(p)->run(in), e = emulator().compile(p)->run(in);
    expect_close(h.arrays.at("g"), e.arrays.at("g"), 4 * kEps32, "g");
    // Each term is a float product or difference of O(1) values summed in
    // double: 1e-6 relative to the sum of |terms| bounds their rounding. A
    // sum of squares adds its positive terms in float along each lane of a
    // row first (k = 2 components × ⌈columns / 8⌉ terms per lane): at most
    // k·2⁻²⁴ relative to the sum on top of that.
    const double lane_terms = 2.0 * static_cast<double>((s[1] + 7) / 8);
    for (const auto& [name, v] : e.scalars) {
      double tol = 1e-6 * static_cast<double>(av.data.size()) + 1e-6 * std::fabs(v);
      if (name == "ss") tol += lane_terms * std::ldexp(1.0, -24) * std::fabs(v);
      EXPECT_NEAR(h.scalars.at(name), v, tol) << name;
    }
  };
  run({9, 17});
  const int promised = obtained();
  for (Shape s : {Shape{8, 8}, Shape{13, 8}, Shape{10, 31}, Shape{8, 1000}}) run(s);
  EXPECT_EQ(obtained(), promised) << "sizes of at least 8 share one pipeline";
  run({6, 17});
  EXPECT_EQ(obtained(), promised + 1) << "an extent under 8 is another pipeline";
  for (Shape s : {Shape{17, 6}, Shape{3, 3}, Shape{1, 40}}) run(s);
  EXPECT_EQ(obtained(), promised + 1);
}

// A program with a convergence check runs on halide as two pipelines
// (split_check): the iteration, then the check reading its results.
TEST(HalideSplit, TheCheckReadsTheIterationsResults) {
  std::mt19937_64 rng(43);
  Shape s{12, 10};
  Expr xv = make_variable(s, "x");
  Step x = step_input("x", s), y = step_input("next_x", s);  // an input named like the check's own
  Step check = step_param(kCheckParam);
  Step x_new = step_axpby(step_constant(1), x, step_constant(-0.5),
                           step_adjoint(make_grad(xv), 0, step_forward(make_grad(xv), {y})));
  Step x_bar = step_axpby(step_constant(2), x_new, step_constant(-1), x);
  Step dx = step_binary(StepKind::Sub, x_new, x);
  Step w = step_input("w", s), z = step_binary(StepKind::Sub, x_new, w);
  StepProgram p;
  p.name = "split";
  p.outputs = {{"x", x_new},
               {"xbar", x_bar},
               {"z", z},
               {"objective", step_reduce(StepKind::Sum, x)},  // not gated: the iteration's
               {"r", step_reduce(StepKind::SumSquares, step_forward(make_grad(xv), {dx}), nullptr, check)},
               {"d", step_reduce(StepKind::Dot, x_bar, y, check)},
               {"e", step_reduce(StepKind::SumSquares, z, nullptr, check)}};
  CheckSplit split = split_check(p);
  ASSERT_EQ(split.iteration.outputs.size(), 4u);
  ASSERT_EQ(split.check.outputs.size(), 3u);
  // For checking runs only: its reductions are not gated.
  EXPECT_TRUE(split.check.check_outputs().empty());
  for (const Step& n : split.check.nodes()) EXPECT_FALSE(is_gated(*n)) << to_string(n->kind);
  // x̄ = 2x⁺ − x is recomputed from arrays the check reads anyway (x, and x⁺ for r) instead of
  // read; z = x⁺ − w is read: recomputing it would read w instead.
  EXPECT_EQ(split.next_inputs, (std::map<std::string, std::string>{{"x", "next_next_x"}, {"z", "next_z"}}));
  std::set<std::string> check_inputs;
  for (const Step& n : split.check.inputs()) check_inputs.insert(n->name);
  EXPECT_EQ(check_inputs, (std::set<std::string>{"x", "next_x", "next_next_x", "next_z"}));

  Array x0 = random_array(s, &rng), y0 = random_array(s, &rng), w0 = random_array(s, &rng);
  StepInputs in;
  in.buffers = {{"x", &x0}, {"next_x", &y0}, {"w", &w0}};
  in.params = {{kCheckParam, 1}};
  StepOutputs whole = emulator().compile(p)->run(in);
  // The emulator runs the two parts as halide does: the same values (the
  // check reads the iteration's float32 arrays, as the whole program's
  // float32 nodes are).
  StepOutputs first = emulator().compile(split.iteration)->run(in);
  StepInputs in2 = in;
  for (const auto& [output, input] : split.next_inputs) in2.buffers[input] = &first.arrays.at(output);
  StepOutputs second = emulator().compile(split.check)->run(in2);
  for (const char* name : {"r", "d", "e"})
    EXPECT_NEAR(second.scalars.at(name), whole.scalars.at(name),
                1e-6 * (1 + std::fabs(whole.scalars.at(name))))
        << name;
  EXPECT_EQ(first.arrays.at("x").data, whole.arrays.at("x").data);
  // Halide, checking and not.
  auto step = halide().compile(p);
  StepOutputs h = step->run(in);
  for (const auto& [name, v] : whole.scalars) EXPECT_NEAR(h.scalars.at(name), v, 1e-5 * (1 + std::fabs(v))) << name;
  for (const auto& [name, arr] : whole.arrays) expect_close(h.arrays.at(name), arr, 16 * kEps32 * std::max(1.0, max_abs(arr)), name);
  in.params[kCheckParam] = 0;
  step->run_into(in, &h);
  EXPECT_EQ(h.scalars.count("r") + h.scalars.count("d") + h.scalars.count("e"), 0u)
      << "a run without a check leaves the check's outputs out";
  EXPECT_EQ(h.scalars.count("objective"), 1u);
}

// One iteration of `solver` on TV denoising, 24 × 20, split into the
// iteration and its convergence check.
CheckSplit tv_iteration(const std::string& solver) {
  std::string dir = test::temp_dir();
  io::write_npy(dir + "/b.npy", Array(Shape{24, 20}));
  Problem p = parse_program("b = load(\"b.npy\")\nx = variable(shape(b))\n"
                            "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n",
                            "tv.prox", dir)
                  .problem;
  PassManagerOptions po;
  po.pass.solver = solver;
  SolverOptions o;
  o.solver = solver;
  return split_check(iteration_program(run_passes(p, po), o));
}

// One linearized-ADMM iteration (without its check) of TV denoising, 24 × 20.
StepProgram ladmm_tv_iteration() { return tv_iteration("ladmm").iteration; }

// The convergence check's norms of arrays of equal extents are summed in one
// loop along each row (compute_with at their shared reduction domain), the
// terms of all of them computed at one place: Pock–Chambolle's check reads
// x, x⁺, y and y⁺ once per row, not once per norm, and the differences and
// neighbours its norms share are loaded once. (Their values:
// Trajectory.HalideFollowsTheEmulator and the conformance solves compare
// every check with the emulator's.)
TEST(HalideSchedule, CheckNormsShareOneLoopAlongTheRows) {
  for (const char* solver : {"pc", "ladmm"}) {
    const StepProgram check = tv_iteration(solver).check;
    const hl::Lowered l = hl::lower(check);
    std::map<std::string, Halide::Internal::Function> funcs;
    for (const Halide::Func& f : l.pipeline.outputs()) {
      for (const auto& [name, g] : Halide::Internal::find_transitive_calls(f.function())) funcs.emplace(name, g);
    }
    int partials = 0, alone = 0;
    std::set<std::string> with;
    for (const auto& [name, g] : funcs) {
      if (name.rfind("sum_squares_partial", 0) != 0) continue;
      ++partials;
      Halide::LoopLevel level = g.update(0).schedule().fuse_level().level;
      level.lock();
      if (level.is_inlined() || level.is_root()) {
        ++alone;
        continue;
      }
      with.insert(level.func());
      EXPECT_NE(level.var().name(), "row") << name << " is fused along its rows only\n" << print_step_program(check);
    }
    EXPECT_GE(partials, 5) << solver;
    EXPECT_EQ(alone, 1) << solver << ": one loop leads, the others are computed with it";
    EXPECT_EQ(with.size(), 1u) << solver;
  }
}

// Linearized ADMM's z⁺ = prox(Kx⁺ + u) and u⁺ = u + Kx⁺ − z⁺ of the gradient
// term (arrays of rank 3: two components) are one Tuple-valued loop, as those
// of the nonneg term (rank 2) are: u⁺ uses z⁺ and Kx⁺ in registers instead of
// a second pass reading z⁺ back. (Their values: Trajectory.HalideFollowsTheEmulator runs the
// same solve on both backends.)
TEST(HalideSchedule, ComponentDualUpdatesArePairedIntoOneLoop) {
  const StepProgram it = ladmm_tv_iteration();
  const hl::Lowered l = hl::lower(it);
  int rank3_pairs = 0, rank2_pairs = 0;
  for (const Halide::Func& f : l.pipeline.outputs()) {
    if (f.outputs() == 2) (f.dimensions() == 3 ? rank3_pairs : rank2_pairs) += 1;
  }
  EXPECT_EQ(rank3_pairs, 1) << print_step_program(it);
  EXPECT_EQ(rank2_pairs, 1) << print_step_program(it);
}

// The Funcs of a lowered pipeline computed inside another's loops (not at
// root, not inlined), with the Func whose loop computes them.
std::map<std::string, std::string> computed_per_strip(const hl::Lowered& l) {
  std::map<std::string, Halide::Internal::Function> funcs;
  for (const Halide::Func& f : l.pipeline.outputs()) {
    for (const auto& [name, g] : Halide::Internal::find_transitive_calls(f.function())) funcs.emplace(name, g);
  }
  std::map<std::string, std::string> at;
  for (const auto& [name, g] : funcs) {
    Halide::LoopLevel level = g.schedule().compute_level();
    level.lock();
    if (!level.is_root() && !level.is_inlined()) at[name] = level.func();
  }
  return at;
}

// A value that grad or div reads at neighbouring rows, and that one loop
// reads, is computed per strip of that loop's rows (a row of halo, a buffer
// that stays in cache) instead of in a pass of its own: linearized ADMM's
// Kx − z + u in the x-update. With two readers it stays at root. The values
// are the same either way (HalideSplit, Trajectory.HalideFollowsTheEmulator compare them
// with the emulator's at sizes that are no multiple of the strip).
TEST(HalideSchedule, AStencilReadByOneLoopIsComputedPerStrip) {
  const hl::Lowered l = hl::lower(ladmm_tv_iteration());
  std::string x_update;
  for (const hl::LoweredOutput& out : l.outputs) {
    if (out.name == "x0") x_update = out.func.name();
  }
  const std::map<std::string, std::string> at = computed_per_strip(l);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(at.begin()->second, x_update);

  // t = grad(x) − z, read by two loops (div t, and div (t + u): t + u reads
  // t from memory at each tap): at root; q = grad(y) − w, read by one: per strip.
  Shape s{20, 12}, s2{20, 12, 2};
  Expr xv = make_variable(s, "x");
  Step x = step_input("x", s), y = step_input("y", s);
  Step z = step_input("z", s2), u = step_input("u", s2), w = step_input("w", s2);
  Step t = step_binary(StepKind::Sub, step_forward(make_grad(xv), {x}), z);
  Step q = step_binary(StepKind::Sub, step_forward(make_grad(xv), {y}), w);
  StepProgram two;
  two.name = "two_readers";
  // (b reads c, so c's loop is not fused with a's and b's: a value is
  // computed per strip of an unfused loop only.)
  Step c = step_adjoint(make_grad(xv), 0, q);
  two.outputs = {{"a", step_adjoint(make_grad(xv), 0, t)},
                 {"b", step_binary(StepKind::Add, step_adjoint(make_grad(xv), 0, step_binary(StepKind::Add, t, u)), c)},
                 {"c", c}};
  const hl::Lowered l2 = hl::lower(two);
  const std::map<std::string, std::string> at2 = computed_per_strip(l2);
  ASSERT_EQ(at2.size(), 1u);
  EXPECT_EQ(at2.begin()->second, l2.outputs[2].func.name());
  std::mt19937_64 rng(8);
  Array x0 = random_array(s, &rng), y0 = random_array(s, &rng), z0 = random_array(s2, &rng),
        u0 = random_array(s2, &rng), w0 = random_array(s2, &rng);
  StepInputs in;
  in.buffers = {{"x", &x0}, {"y", &y0}, {"z", &z0}, {"u", &u0}, {"w", &w0}};
  StepOutputs want = emulator().compile(two)->run(in), got = halide().compile(two)->run(in);
  for (const char* name : {"a", "b", "c"}) {
    expect_close(got.arrays.at(name), want.arrays.at(name), 16 * kEps32 * std::max(1.0, max_abs(want.arrays.at(name))), name);
  }
}

// An extern stage whose result is an output writes the output buffer itself:
// the circulant solve of a deconvolution's x-update is the x⁺ output, with no
// pass copying it there (a 512² pc iteration: 2 % of its time). Its values,
// one channel (FFTW reading and writing the buffers in place) and three
// (copied per channel), are the emulator's; the extern's users (x̄, the
// check's norms) read it in the output buffer.
TEST(HalideSchedule, AnExternStageIsTheOutputItself) {
  std::mt19937_64 rng(5);
  Expr k = random_constant({3, 3}, &rng, 0.0f, 1.0f, "k");
  for (const Shape& s : {Shape{40, 36}, Shape{24, 20, 3}}) {
    SCOPED_TRACE(shape_to_string(s));
    StepProgram p;
    p.name = "solve_out";
    Step a = step_input("a", s), x = step_input("x", s);
    Step solve = step_circulant_solve(k, a, step_constant(0.75), step_constant(0.5));
    p.outputs = {{"x", solve},
                 {"xbar", step_axpby(step_constant(2), solve, step_constant(-1), x)},
                 {"ss", step_reduce(StepKind::SumSquares, solve)}};
    const hl::Lowered l = hl::lower(p);
    ASSERT_EQ(l.outputs.size(), 3u);
    EXPECT_TRUE(l.outputs[0].func.function().has_extern_definition()) << l.outputs[0].func.name();
    Array av = random_array(s, &rng), xv = random_array(s, &rng);
    StepInputs in;
    in.buffers = {{"a", &av}, {"x", &xv}};
    StepOutputs h = halide().compile(p)->run(in), e = emulator().compile(p)->run(in);
    for (const auto& [name, arr] : e.arrays) {
      expect_close(h.arrays.at(name), arr, 64 * kEps32 * std::max(1.0, max_abs(arr)), name);
    }
    EXPECT_NEAR(h.scalars.at("ss"), e.scalars.at("ss"), 1e-5 * (1 + e.scalars.at("ss")));
  }
}

// The FFT stages write an output of any strides (an AOT caller's view with
// padded rows): the values the dense output gets, the padding untouched.
TEST(HalideSchedule, TheSolveStageWritesAnOutputOfAnyStrides) {
  constexpr int rows = 6, cols = 5, pad = 3;
  std::vector<float> rhs(rows * cols), otf2(rows * (cols / 2 + 1)), dense(rows * cols, 0.0f),
      padded(rows * (cols + pad), -7.0f);
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (float& v : rhs) v = u(rng);
  for (float& v : otf2) v = u(rng);
  auto buffer = [](float* data, int extent0, int extent1, int stride1) {
    halide_buffer_t b{};
    b.host = reinterpret_cast<uint8_t*>(data);
    b.type = halide_type_t(halide_type_float, 32);
    b.dimensions = 2;
    b.dim = new halide_dimension_t[2]{{0, extent0, 1, 0}, {0, extent1, stride1, 0}};
    return b;
  };
  halide_buffer_t in = buffer(rhs.data(), cols, rows, cols),
                  s = buffer(otf2.data(), cols / 2 + 1, rows, cols / 2 + 1),
                  out_dense = buffer(dense.data(), cols, rows, cols),
                  out_padded = buffer(padded.data(), cols, rows, cols + pad);
  ASSERT_EQ(proxc_circulant_solve(&in, &s, 0.75, 0.5, 2, &out_dense), 0);
  ASSERT_EQ(proxc_circulant_solve(&in, &s, 0.75, 0.5, 2, &out_padded), 0);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols + pad; ++c) {
      const float got = padded[static_cast<size_t>(r * (cols + pad) + c)];
      if (c < cols)
        EXPECT_FLOAT_EQ(got, dense[static_cast<size_t>(r * cols + c)]) << r << ", " << c;
      else
        EXPECT_EQ(got, -7.0f) << "padding at " << r << ", " << c;
    }
  }
  for (halide_buffer_t* b : {&in, &s, &out_dense, &out_padded}) delete[] b->dim;
}

TEST(HalideCache, NewSizesAndDataDoNotRecompile) {
  std::mt19937_64 rng(31);
  auto program_for = [&](Shape s, float scale) {
    Expr x = make_variable(s, "x");
    Expr k = make_sub(make_conv(random_constant({3, 3}, &rng), make_scale(scale, x)), random_constant(s, &rng));
    FunctionTerm t;
    t.kind = FunctionKind::Norm1;
    t.arg = k;
    t.alpha = scale;
    t = make_term(t);
    StepProgram p;
    p.name = "cache";
    Step in = step_input("x", s);
    p.outputs = {{"z", step_prox(t, step_forward(k, {in}, true), step_param("rho"))},
                 {"adj", step_adjoint(k, 0, step_forward(k, {in}))}};
    return p;
  };
  auto run = [&](const StepProgram& p, const Shape& s) {
    Array x = random_array(s, &rng);
    StepInputs in;
    in.buffers["x"] = &x;
    in.params["rho"] = 1.3;
    StepOutputs h = halide().compile(p)->run(in), e = emulator().compile(p)->run(in);
    expect_close(h.arrays.at("z"), e.arrays.at("z"), 1e-4, "z");
    expect_close(h.arrays.at("adj"), e.arrays.at("adj"), 1e-4 * std::max(1.0, max_abs(e.arrays.at("adj"))), "adj");
  };
  run(program_for({16, 12}, 2.0f), {16, 12});
  // Pipelines this process compiled or loaded from the on-disk cache.
  auto obtained = [] { return halide_compile_count() + halide_cache_load_count(); };
  int compiles = obtained();
  // Another image size, other data and other scalars: the same compiled pipeline.
  run(program_for({33, 21}, 0.5f), {33, 21});
  run(program_for({9, 40}, 3.0f), {9, 40});
  EXPECT_EQ(obtained(), compiles);
  // A different structure does compile.
  Expr x = make_variable({5, 5});
  dot_test(halide(), make_grad(make_grad(x)), 1);
  EXPECT_GT(obtained(), compiles);
}

// A flat index is split by run-time extents with a double division and a
// floor (vectorizable; see halide_ops::unravel): exact for every int32 index
// (the proof is in its comment). Checked against integer division at both
// ends of the int32 range, for extents where rounding would bite first
// (large quotients, extents near sqrt(2^31) and 2^31), over two and three axes.
TEST(HalideOps, UnravelIsExactOverTheWholeIndexRange) {
  Halide::Param<int> n("n");
  Halide::Param<int> first("first");
  Halide::Var k("k");
  Halide::Expr i = first + k;
  std::vector<Halide::Expr> c = halide_ops::unravel(i, {Halide::Int(32).max(), n});
  Halide::Func f("unravel_test");
  f(k) = Halide::Tuple(c[0], c[1]);
  f.vectorize(k, 8);
  const int count = 1 << 14;
  for (int extent : {1, 2, 3, 7, 12, 1000, 46340, 46341, 65536, 1 << 30, (1 << 30) + 1, 2147483647}) {
    // (The last index of the largest array, 2^31 - 1 elements, is 2^31 - 2.)
    for (int start : {0, 2147483646 - (count - 1)}) {
      n.set(extent);
      first.set(start);
      Halide::Realization r = f.realize({count});
      Halide::Buffer<int> q = r[0], rem = r[1];
      for (int j = 0; j < count; ++j) {
        const int idx = start + j;
        ASSERT_EQ(q(j), idx / extent) << idx << " / " << extent;
        ASSERT_EQ(rem(j), idx % extent) << idx << " % " << extent;
      }
    }
  }
  // Three axes: the quotient is divided again.
  Halide::Param<int> m("m");
  std::vector<Halide::Expr> c3 = halide_ops::unravel(i, {Halide::Int(32).max(), m, n});
  Halide::Func g("unravel3_test");
  g(k) = Halide::Tuple(c3[0], c3[1], c3[2]);
  g.vectorize(k, 8);
  for (auto [mm, nn] : {std::pair<int, int>{3, 7}, {46341, 46340}, {65536, 32768}, {1, 2147483647}, {12345, 173}}) {
    for (int start : {0, 2147483646 - (count - 1)}) {
      m.set(mm);
      n.set(nn);
      first.set(start);
      Halide::Realization r = g.realize({count});
      Halide::Buffer<int> a0 = r[0], a1 = r[1], a2 = r[2];
      for (int j = 0; j < count; ++j) {
        const int idx = start + j;
        ASSERT_EQ(a2(j), idx % nn) << idx;
        ASSERT_EQ(a1(j), (idx / nn) % mm) << idx;
        ASSERT_EQ(a0(j), (idx / nn) / mm) << idx;
      }
    }
  }
}

// Arrays of equal extents along an axis share one run-time extent (their
// loops then have bounds Halide knows equal: the two norms below are summed
// in one loop). A program whose arrays differ there is another pipeline, not
// the first one run with extents it assumed equal.
TEST(HalideCache, EqualExtentsAreAssumedOnlyWhereTheyHold) {
  std::mt19937_64 rng(5);
  auto program = [](const Shape& sx, const Shape& sy) {
    StepProgram p;
    p.name = "two_norms";
    p.outputs = {{"a", step_reduce(StepKind::SumSquares, step_input("x", sx))},
                 {"b", step_reduce(StepKind::SumSquares, step_input("y", sy))}};
    return p;
  };
  auto obtained = [] { return halide_compile_count() + halide_cache_load_count(); };
  auto run = [&](const Shape& sx, const Shape& sy) {
    const StepProgram p = program(sx, sy);
    Array x = random_array(sx, &rng), y = random_array(sy, &rng);
    StepInputs in;
    in.buffers = {{"x", &x}, {"y", &y}};
    StepOutputs h = halide().compile(p)->run(in), e = emulator().compile(p)->run(in);
    // Float partial sums of at most a few hundred O(1) squares per lane.
    for (const char* name : {"a", "b"}) EXPECT_NEAR(h.scalars.at(name), e.scalars.at(name), 1e-5 * e.scalars.at(name)) << name;
  };
  run({20, 16}, {20, 16});
  const int compiles = obtained();
  run({31, 9}, {31, 9});  // equal again: the same pipeline
  EXPECT_EQ(obtained(), compiles);
  run({20, 16}, {20, 40});  // wider y: its own pipeline, y summed whole
  EXPECT_EQ(obtained(), compiles + 1);
  run({20, 40}, {20, 16});
  EXPECT_EQ(obtained(), compiles + 1);
}

// A TV-denoising-like step: grad, a group-norm prox, the adjoint and a
// reduction (and with `solve`, an FFT solve: an extern stage), with its
// emulator results.
struct ScheduleCase {
  StepProgram p;
  Array xv;
  StepInputs in;
  StepOutputs expected;
  explicit ScheduleCase(bool solve = false) {
    std::mt19937_64 rng(8);
    Shape s{40, 36};
    Expr x = make_variable(s, "x");
    FunctionTerm t;
    t.kind = FunctionKind::GroupNorm1;
    t.arg = make_grad(x);
    t.axes = {2};
    t.alpha = 0.1;
    t = make_term(t);
    Step in_x = step_input("x", s);
    Step z = step_prox(t, step_forward(t.arg, {in_x}), step_param("rho"));
    Expr k = random_constant({5, 5}, &rng, 0.0f, 1.0f, "k");
    p.name = "schedule_case";
    p.outputs = {{"z", z}, {"div", step_adjoint(t.arg, 0, z)}, {"n", step_reduce(StepKind::SumSquares, z)}};
    if (solve) {
      p.outputs.push_back({"s", step_circulant_solve(k, step_axpby(step_constant(1), in_x, step_constant(-0.5), in_x),
                                                      step_constant(0.5), step_param("rho"))});
    }
    xv = random_array(s, &rng);
    in.buffers["x"] = &xv;
    in.params["rho"] = 1.3;
    expected = emulator().compile(p)->run(in);
  }
  void expect_matches(const StepOutputs& h) const {
    // Entries are sums of at most a few dozen float roundings of O(1) terms
    // (the 5×5 solve's FFTs: log2 n each): 64 eps32 relative to the largest.
    for (const auto& [name, arr] : expected.arrays) {
      expect_close(h.arrays.at(name), arr, 64 * kEps32 * std::max(1.0, max_abs(arr)), name);
    }
    for (const auto& [name, v] : expected.scalars) EXPECT_NEAR(h.scalars.at(name), v, 1e-5 * (1 + std::fabs(v))) << name;
  }
};

// A CG step's norms share the loops that write the arrays they read: ‖r'‖²
// is summed in cg_update's one loop over rows (from r and A p, not r'), and
// ‖rhs‖² in the loop of cg_init that writes r (Graph::reduce,
// fuse_partials_into_outputs). The programs still compute what the emulator
// does.
TEST(HalideCg, TheNormsShareTheLoopsThatWriteTheirArrays) {
  const std::string dir = test::temp_dir();
  std::mt19937_64 rng(9);
  // 43 rows: the last strip of 8 rows is partial (the row sums' strips are
  // guarded, the outputs' shifted inwards).
  Problem p = parse_with_random_b(dir, {43, 36}, &rng,
                                  "x = variable(shape(b))\n"
                                  "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n");
  SolverOptions so;
  so.solver = "admm";
  const std::vector<StepProgram> cg = cg_step_programs(split_for(p, so.solver), so);
  ASSERT_EQ(cg.size(), 3u);
  auto parallel_loops = [](const std::string& stmt) {
    size_t n = 0;
    for (size_t at = stmt.find("halide_do_par_for("); at != std::string::npos; at = stmt.find("halide_do_par_for(", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(parallel_loops(halide_emit(cg[2], "stmt")), 1u);  // x', r' and ‖r'‖²
  EXPECT_EQ(parallel_loops(halide_emit(cg[0], "stmt")), 2u);  // r with ‖rhs‖², then ‖r‖²
  // ⟨p, A p⟩ has a loop of its own, over strips of rows (one thread-pool
  // task per kRowsPerTask rows, as the outputs' loops), not over single rows.
  const std::string apply = halide_emit(cg[1], "stmt");
  EXPECT_EQ(parallel_loops(apply), 3u);  // p, A p, ⟨p, A p⟩
  // (Halide makes a Func's name unique in the process with a "$n" suffix,
  // "_n" and a "__n" suffix in the names of loop bodies.)
  EXPECT_THAT(apply, ::testing::ContainsRegex("par_for_dot_partial[0-9_]+_s1_px_0_px_0(__[0-9]+)?,"));
  EXPECT_THAT(apply, ::testing::ContainsRegex("for \\(dot_partial[0-9]+(\\$[0-9]+)?\\.s1\\.px_0\\.px_0_in_strip, 0, 8\\)"));
  for (const StepProgram& prog : cg) {
    SCOPED_TRACE(prog.name);
    StepInputs in;
    std::map<std::string, Array> arrays;
    for (const Step& input : prog.inputs()) arrays[input->name] = random_array(input->shape, &rng);
    for (const auto& [name, a] : arrays) in.buffers[name] = &a;
    for (const char* param : {"rho", "beta", "alpha"}) in.params[param] = 0.7;
    StepOutputs h = halide().compile(prog)->run(in), e = emulator().compile(prog)->run(in);
    // Sums of a few float roundings of O(1) terms per element; norms over 1548 elements.
    for (const auto& [name, arr] : e.arrays) expect_close(h.arrays.at(name), arr, 16 * kEps32 * std::max(1.0, max_abs(arr)), name);
    for (const auto& [name, v] : e.scalars) EXPECT_NEAR(h.scalars.at(name), v, 1e-5 * (1 + std::fabs(v))) << name;
  }
}

TEST(HalideSchedule, AutoschedulersMatchTheEmulator) {
  ScheduleCase c;
  for (const std::string& s : halide_schedules()) {
    SCOPED_TRACE(s);
    HalideOptions o;
    o.schedule = s;
    auto b = make_halide_backend(o);
    EXPECT_EQ(b->schedule_requested(), s);
    ::testing::internal::CaptureStderr();
    auto step = b->compile(c.p);
    std::string err = ::testing::internal::GetCapturedStderr();
    // Mullapudi2016 and Li2018 schedule this pipeline. Adams2019 may unroll
    // a loop over the gradient's 2 components, whose extent is a run-time
    // size here; that schedule does not compile, and then the default takes
    // over with a warning.
    if (s == "anderson2021") {
      // A GPU autoscheduler: on this CPU target, the default schedule and why.
      EXPECT_THAT(err, ::testing::HasSubstr("Anderson2021 schedules GPU targets only"));
      EXPECT_EQ(b->schedule_used(), "default");
    } else if (s == "adams2019" && b->schedule_used() == "default") {
      EXPECT_THAT(err, ::testing::HasSubstr("warning: the adams2019 schedule of schedule_case does not compile"));
    } else {
      EXPECT_EQ(b->schedule_used(), s) << err;
    }
    c.expect_matches(step->run(c.in));
    // The printed generator applies the same autoscheduler with the problem's sizes as estimates.
    std::string src = halide_emit(c.p, "source", o);
    EXPECT_THAT(src, ::testing::HasSubstr("Graph g(Schedule::None);"));
    EXPECT_THAT(src, ::testing::HasSubstr("g.set_estimates({"));
    EXPECT_THAT(src, ::testing::HasSubstr("g.use_autoscheduler("));
  }
}

TEST(HalideSchedule, AScheduleThatFailsWhenItRunsFallsBackAndIsReportedAsTheDefault) {
  // Halide 14's Adams2019 schedules the Kᵀb setup of a Pock–Chambolle
  // deconvolution (a 7×7 correlation of b) so that, JIT-compiled, it reads
  // the kernel out of bounds when it runs. The run falls back to the default
  // schedule, warns, and the backend reports "default" for that compile.
  // The kernel is of full rank (a Gaussian's taps perturbed): one of rank one
  // convolves in two passes, which Adams2019 schedules without that fault.
  const std::string dir = test::temp_dir();
  std::mt19937_64 rng(5);
  Array k = make_gaussian({7, 7}, 1.5)->constant->array;
  for (float& v : k.data) v *= 1 + 0.01f * static_cast<float>(&v - k.data.data() - 24) / 24;
  ASSERT_FALSE(hl::rank_one_factors(k).has_value());
  io::write_npy(dir + "/k.npy", k);
  Problem p = parse_with_random_b(
      dir, {96, 128}, &rng,
      "k = load(\"k.npy\")\nx = variable(shape(b))\n"
      "minimize sum_squares(conv(k, x) - b) + 0.001 * group_norm1(grad(x), [2]) + nonneg(x)\n");
  SolverOptions so;
  so.solver = "pc";
  const StepProgram setup = hoist_invariants(iteration_program(split_for(p, so.solver), so)).setup;
  ASSERT_FALSE(setup.outputs.empty());
  HalideOptions o;
  o.schedule = "adams2019";
  o.cache_dir = "off";
  auto b = make_halide_backend(o);
  ::testing::internal::CaptureStderr();
  auto step = b->compile(setup);
  const bool scheduled = b->schedule_used() == "adams2019";
  StepOutputs h = step->run(StepInputs{});
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(scheduled) << "Adams2019 no longer schedules this setup (a Halide change?): choose another case\n" << err;
  EXPECT_THAT(err, ::testing::HasSubstr("warning: the adams2019 schedule of pc_iteration_setup fails when it runs"));
  EXPECT_EQ(b->schedule_used(), "default");
  // What the fallback computed is the setup's value (it once ran with the
  // failed lowering's arguments).
  const StepOutputs emulated = emulator().compile(setup)->run(StepInputs{});
  for (const auto& [name, arr] : emulated.arrays) {
    double most = 1;
    for (double v : arr.data) most = std::max(most, std::fabs(v));
    expect_close(h.arrays.at(name), arr, 1e-5 * most, "the fallback's " + name);
  }
  // The fallback is the setup's: the backend's next compile, of a program
  // the schedule runs, reports the autoscheduler again.
  {
    StepProgram twice;
    twice.name = "twice";
    twice.outputs.push_back({"y", step_binary(StepKind::Mul, step_constant(2), step_input("x", {96, 128}))});
    auto other = b->compile(twice);
    Array x({96, 128});
    x.data[5] = 1.5f;
    StepInputs in;
    in.buffers["x"] = &x;
    EXPECT_EQ(other->run(in).arrays.at("y").data[5], 3.0f);
    EXPECT_EQ(b->schedule_used(), "adams2019");
  }
  // And the fallback's result is the setup's (a 7×7 correlation in float: 49 roundings of O(1) terms).
  StepOutputs e = emulator().compile(setup)->run(StepInputs{});
  for (const auto& [name, arr] : e.arrays) expect_close(h.arrays.at(name), arr, 64 * kEps32 * std::max(1.0, max_abs(arr)), name);
  // The same from the on-disk cache: a cached autoscheduled pipeline keeps
  // Halide's checks (proxc's own schedules drop them), so it fails as the
  // JIT did, instead of reading before the kernel.
  for (int pass = 0; pass < 2; ++pass) {  // compiled into the folder, then loaded from it
    SCOPED_TRACE(pass);
    halide_forget_compiled();
    HalideOptions oc = o;
    oc.cache_dir = dir + "/cache";
    auto bc = make_halide_backend(oc);
    ::testing::internal::CaptureStderr();
    StepOutputs hc = bc->compile(setup)->run(StepInputs{});
    std::string errc = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(errc, ::testing::HasSubstr("warning: the adams2019 schedule of pc_iteration_setup fails when it runs"));
    EXPECT_EQ(bc->schedule_used(), "default");
    for (const auto& [name, arr] : e.arrays) expect_close(hc.arrays.at(name), arr, 64 * kEps32 * std::max(1.0, max_abs(arr)), name);
  }
}

TEST(HalideSchedule, MissingPluginFallsBackToTheDefaultWithAWarning) {
  ScheduleCase c;
  // Another structure than the test above (whose pipeline is cached in the process).
  c.p.outputs.push_back({"extra", step_reduce(StepKind::MaxAbs, step_input("x", {40, 36}))});
  c.expected = emulator().compile(c.p)->run(c.in);
  ::setenv("PROXC_HALIDE_PLUGIN_DIR", "/nonexistent-plugin-dir", 1);
  HalideOptions o;
  o.schedule = "mullapudi2016";
  auto b = make_halide_backend(o);
  ::testing::internal::CaptureStderr();
  auto step = b->compile(c.p);
  std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("PROXC_HALIDE_PLUGIN_DIR");
  EXPECT_THAT(err, ::testing::HasSubstr("warning: --schedule mullapudi2016 failed"));
  EXPECT_THAT(err, ::testing::HasSubstr("/nonexistent-plugin-dir/libautoschedule_mullapudi2016.so"));
  EXPECT_EQ(b->schedule_used(), "default");
  c.expect_matches(step->run(c.in));
}

TEST(HalideSchedule, BlackBoxesKeepTheDefaultSchedule) {
  // An autoscheduler could call the extern stage per tile, from several
  // threads: a black box must run once on whole arrays.
  test::register_test_black_boxes();
  StepProgram p;
  p.name = "bb_schedule";
  Expr x = make_variable({6, 8}, "x");
  p.outputs = {{"f", step_forward(make_grad(make_black_box("shift_blur", x)), {step_input("x", {6, 8})})}};
  HalideOptions o;
  o.schedule = "mullapudi2016";
  auto b = make_halide_backend(o);
  ::testing::internal::CaptureStderr();
  auto step = b->compile(p);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("the pipeline calls user code (black-box operators, prox functions)"));
  EXPECT_EQ(b->schedule_used(), "default");
  // A prox function of the user's too.
  FunctionTerm t;
  t.kind = FunctionKind::UserProx;
  t.user_name = "soft_threshold";
  t.user_params = {1.0};
  t.arg = x;
  t = make_term(t);
  StepProgram q;
  q.name = "prox_fn_schedule";
  q.outputs = {{"p", step_prox(t, step_input("x", {6, 8}), step_param("rho"))}};
  auto c = make_halide_backend(o);
  ::testing::internal::CaptureStderr();
  auto step2 = c->compile(q);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::HasSubstr("the pipeline calls user code"));
  EXPECT_EQ(c->schedule_used(), "default");
}

TEST(HalideSchedule, ExternStagesKeepTheDefaultSchedule) {
  // Halide 14's autoschedulers failed, or crashed, on pipelines with extern stages.
  ScheduleCase c(true);
  for (const std::string& s : halide_schedules()) {
    HalideOptions o;
    o.schedule = s;
    auto b = make_halide_backend(o);
    ::testing::internal::CaptureStderr();
    auto step = b->compile(c.p);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_THAT(err, ::testing::HasSubstr("warning: --schedule " + s + " failed for schedule_case (proxc does not autoschedule around the FFT"));
    EXPECT_EQ(b->schedule_used(), "default");
    c.expect_matches(step->run(c.in));
  }
}

TEST(HalideSchedule, UnknownScheduleIsAUserError) {
  HalideOptions o;
  o.schedule = "fastest";
  try {
    make_halide_backend(o);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("unknown schedule 'fastest' (one of: default, mullapudi2016"));
  }
}

TEST(HalideEmit, StmtAndCForReading) {
  Expr x = make_variable({8, 8});
  StepProgram p;
  p.name = "emit";
  p.outputs = {{"g", step_forward(make_grad(x), {step_input("x", {8, 8})})}};
  EXPECT_THAT(halide_emit(p, "stmt"), ::testing::HasSubstr("produce"));
  EXPECT_THAT(halide_emit(p, "c"), ::testing::HasSubstr("proxc_step"));
}

}  // namespace
}  // namespace proxc::internal
