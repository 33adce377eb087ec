// The adjoint dot test for every operator and for random operator DAGs
// (shared nodes, 2-D and 3-D, odd sizes) on the emulator; norm estimates and
// bounds; objective evaluation; the checker catches a broken adjoint.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "check/check.h"
#include "check/check_command.h"
#include "emulate/emulate_backend.h"
#include "fft/fft.h"
#include "frontend/parser.h"
#include "ir/printer.h"
#include "emulate/linop.h"
#include "test_black_boxes.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

Expr random_constant(Shape s, std::mt19937_64* rng, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
  auto d = std::make_shared<ConstantData>();
  d->array = Array(std::move(s));
  for (float& v : d->array.data) v = u(*rng);
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "c");
}

}  // namespace

Expr constant_homography();

namespace {

Backend& emulator() {
  static std::unique_ptr<Backend> b = make_emulate_backend();
  return *b;
}

void expect_dot_test_passes(const Expr& k) {
  DotTestResult r = dot_test(emulator(), k, 7);
  EXPECT_TRUE(r.passed) << r.what << ": error " << r.error << " > tolerance " << r.tolerance << " (scale " << r.scale
                        << ")";
  EXPECT_GT(r.scale, 0) << r.what;
}

TEST(DotTest, EveryOperatorIn2DAnd3D) {
  std::mt19937_64 rng(3);
  for (Shape s : {Shape{7, 5}, Shape{6, 9, 3}}) {
    Expr x = make_variable(s);
    Shape ext = s;  // a window one smaller along every axis
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
        make_warp(x, constant_homography()),
    };
    Shape matrices(s.begin(), s.end() - 1);  // a 2 × M matrix per pixel, and a 5 × M one
    matrices.push_back(2);
    matrices.push_back(s.back());
    ops.push_back(make_pxwise_matrixmult(random_constant(matrices, &rng), x));
    matrices[matrices.size() - 2] = 5;
    ops.push_back(make_pxwise_matrixmult(random_constant(matrices, &rng), x));
    if (s.back() == 3) {
      ops.push_back(make_mul_color(x, nullptr, "yuv"));
      ops.push_back(make_mul_color(x, random_constant({3, 3}, &rng)));
      ops.push_back(make_conv(random_constant({3, 3, 2}, &rng), x));
    }
    for (const Expr& k : ops) expect_dot_test_passes(k);
  }
}

// A warp that rotates by 10 degrees about the centre and scales by 1.1.
Expr constant_homography_impl() {
  const double a = 10 * M_PI / 180, s = 1.1;
  FloatData h = {static_cast<float>(s * std::cos(a)), static_cast<float>(-s * std::sin(a)), 1.5f,
                          static_cast<float>(s * std::sin(a)), static_cast<float>(s * std::cos(a)), -0.7f,
                          0.001f, 0.0f, 1.0f};
  auto d = std::make_shared<ConstantData>();
  d->array = Array(Shape{3, 3}, h);
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "H");
}

}  // namespace

Expr constant_homography() { return constant_homography_impl(); }

namespace {

// Random operator DAGs: each step applies a random operator to a random
// expression of the pool (so nodes are shared), or combines two of the same
// shape. The dot test of the final stack must pass.
Expr random_dag(std::mt19937_64* rng, int steps) {
  std::uniform_int_distribution<int> pick_shape(0, 3);
  const Shape shapes[] = {{7, 6}, {9, 5}, {6, 8, 3}, {5, 4, 2}};
  Shape s0 = shapes[pick_shape(*rng)];
  std::vector<Expr> pool = {make_variable(s0, "x")};
  if ((*rng)() % 2) pool.push_back(make_variable(shapes[pick_shape(*rng)], "y"));
  for (int i = 0; i < steps; ++i) {
    Expr a = pool[(*rng)() % pool.size()];
    Expr e;
    switch ((*rng)() % 11) {
      case 0:
        if (a->rank() <= 3) e = make_grad(a, std::min<int64_t>(2, a->rank()));
        break;
      case 1:
        if (a->rank() >= 2 && a->shape[0] >= 3 && a->shape[1] >= 2) {
          e = make_conv(random_constant({std::min<int64_t>(3, a->shape[0]), 2}, rng), a);
        }
        break;
      case 2: e = make_mul_elemwise(random_constant(a->shape, rng), a); break;
      case 3: e = make_subsample(a, std::vector<int64_t>(a->shape.size(), 1 + (*rng)() % 2)); break;
      case 4: e = make_scale(0.5 + static_cast<double>((*rng)() % 5), a); break;
      case 5: {
        for (const Expr& b : pool) {
          if (b != a && b->shape == a->shape) e = (*rng)() % 2 ? make_add(a, b) : make_sub(b, a);
        }
        break;
      }
      case 6: e = make_neg(a); break;
      case 7: e = make_transpose(a, {}); break;
      case 8: e = make_reshape(a, {num_elements(a->shape)}); break;
      case 9:
        if (a->shape.back() == 3) e = make_mul_color(a, nullptr, (*rng)() % 2 ? "yuv" : "opp");
        else if (a->rank() == 2) e = make_warp(a, constant_homography());
        break;
      case 10: e = make_vstack({a, pool[(*rng)() % pool.size()]}); break;
    }
    if (e && num_elements(e->shape) < 20000) pool.push_back(e);
  }
  // Stack a few pool members (they share nodes) as the final K.
  std::vector<Expr> parts = {pool.back(), pool[pool.size() / 2], pool[0]};
  return make_vstack(parts);
}

// ProxImaL's hstack: each operand flattened into a column.
TEST(HStack, ColumnsAreTheFlattenedOperands) {
  Expr x = make_variable({2, 3}), y = make_variable({3, 2});
  Expr h = make_hstack({x, y});
  EXPECT_EQ(h->shape, Shape({6, 2}));
  emulate::Tensor xv(Shape{2, 3}), yv(Shape{3, 2});
  for (size_t i = 0; i < 6; ++i) {
    xv.data[i] = static_cast<double>(i);
    yv.data[i] = 10.0 + static_cast<double>(i);
  }
  emulate::Tensor out = emulate::forward(h, {{x.get(), &xv}, {y.get(), &yv}}, false);
  for (size_t r = 0; r < 6; ++r) {
    EXPECT_EQ(out.data[r * 2], xv.data[r]);
    EXPECT_EQ(out.data[r * 2 + 1], yv.data[r]);
  }
  EXPECT_THAT(test::user_error_of([&] { make_hstack({x, make_variable({4})}); }),
              ::testing::HasSubstr("hstack: every operand has the size of the first, 6"));
}

TEST(DotTest, RandomOperatorDagsWithSharedNodes) {
  std::mt19937_64 rng(20261130);
  for (int trial = 0; trial < 150; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    expect_dot_test_passes(random_dag(&rng, 8));
  }
}

TEST(DotTest, ABrokenAdjointIsCaught) {
  emulate::EmulateDebug debug;
  debug.break_adjoint = true;
  debug.broken_kind = ExprKind::Grad;
  auto broken = make_emulate_backend(debug);
  Expr x = make_variable({16, 16});
  DotTestResult r = dot_test(*broken, make_grad(x));
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.error, 1000 * r.tolerance);
  // The healthy operators next to it still pass.
  EXPECT_TRUE(dot_test(*broken, make_scale(2, x)).passed);
}

// The kernel of the test black box shift_blur as a conv kernel (origin at the centre).
Expr shift_blur_kernel() {
  auto d = std::make_shared<ConstantData>();
  d->array = Array(Shape{3, 3}, {0, 0, 0, 0, 0.5f, 0.2f, 0, 0.3f, 0});
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "k");
}

TEST(BlackBox, DotTestPassesAndMatchesTheBuiltInOperator) {
  test::register_test_black_boxes();
  std::mt19937_64 rng(11);
  for (Shape s : {Shape{7, 6}, Shape{6, 8, 3}}) {
    Expr x = make_variable(s, "x");
    Expr bb = make_black_box("shift_blur", x);
    expect_dot_test_passes(bb);
    expect_dot_test_passes(make_grad(bb));
    expect_dot_test_passes(make_vstack({bb, make_scale(2, x)}));
    // The same operator as conv with its kernel, forward and adjoint, to
    // float rounding (the callbacks compute in float32).
    emulate::Tensor v(s);
    std::uniform_real_distribution<double> u(-1, 1);
    for (double& e : v.data) e = u(rng);
    emulate::Tensor a = emulate::forward(bb, {{x.get(), &v}}, false);
    emulate::Tensor b = emulate::forward(make_conv(shift_blur_kernel(), x), {{x.get(), &v}}, false);
    auto at = emulate::adjoint(bb, v).at(x.get());
    auto bt = emulate::adjoint(make_conv(shift_blur_kernel(), x), v).at(x.get());
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_NEAR(a.data[i], b.data[i], 4e-7) << i;
      EXPECT_NEAR(at.data[i], bt.data[i], 4e-7) << i;
    }
  }
  Expr even = make_variable({6, 8, 2}, "x");
  expect_dot_test_passes(make_black_box("pool2", even));
  expect_dot_test_passes(make_black_box("pool2", make_grad(make_variable({4, 6}))));
  expect_dot_test_passes(make_add(make_black_box("pool2", even), make_subsample(even, {2, 2, 1})));
}

TEST(BlackBox, AWrongAdjointIsCaughtAndAFailingCallbackIsAUserError) {
  test::register_test_black_boxes();
  Expr x = make_variable({5, 5});
  DotTestResult r = dot_test(emulator(), make_black_box("bad_adjoint", x), 3);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.error, 100 * r.tolerance);
  emulate::Tensor v(x->shape);
  EXPECT_THAT(test::user_error_of([&] { emulate::forward(make_black_box("fails", x), {{x.get(), &v}}, false); }),
              ::testing::HasSubstr("black_box fails: the forward callback failed (returned 7; input (5, 5), output (5, 5))"));
}

TEST(BlackBox, NormBoundIsDeclaredOrEstimated) {
  test::register_test_black_boxes();
  Expr x = make_variable({8, 6});
  EXPECT_DOUBLE_EQ(norm_bound(make_black_box("shift_blur", x)), 1.0);
  EXPECT_DOUBLE_EQ(norm_bound(make_scale(3, make_black_box("pool2", x))), 6.0);
  // bad_adjoint declares none: ||K|| is estimated, sqrt(2 · 2.2) for its
  // inconsistent pair, with the 1 % margin.
  EXPECT_NEAR(norm_bound(make_black_box("bad_adjoint", x)), 1.01 * std::sqrt(4.4), 1e-5);
  // An adjoint of the wrong sign: KᵀK = −4·I, whose largest Ritz value is
  // −4; the estimate takes the largest magnitude, as the power iteration's
  // dominant eigenvalue did (the dot test reports the operator).
  EXPECT_NEAR(norm_bound(make_black_box("negated_adjoint", x)), 1.01 * 2.0, 1e-5);
  EXPECT_FALSE(dot_test(emulator(), make_black_box("negated_adjoint", x), 3).passed);
  // An operand of rank 5 (the gradient of a colour volume): estimated on a
  // reshaped flat variable, and dot-tested the same way.
  Expr g = make_grad(make_variable({3, 4, 4, 3}, "v"));
  EXPECT_NEAR(norm_bound(make_black_box("bad_adjoint", g)) / norm_bound(g), 1.01 * std::sqrt(4.4), 1e-5);
  expect_dot_test_passes(isolate_operator(make_black_box("shift_blur", g)));
}

TEST(Norm, LanczosMatchesKnownNormsInFewSteps) {
  std::mt19937_64 rng(5);
  Expr x = make_variable({12, 10});
  // KᵀK = 9·I: the first step's Krylov space is invariant, the estimate exact.
  NormEstimate scaled = estimate_norm(emulator(), make_scale(-3, x));
  EXPECT_NEAR(scaled.value, 3.0, 1e-6);
  EXPECT_LE(scaled.iterations, 2);
  // A blur and a gradient, whose largest singular values lie close together:
  // the power iteration was given 2000 and 5000 steps here for 1e-3 and 1e-4;
  // Lanczos reaches tighter tolerances within its default 100.
  Expr k = random_constant({3, 3}, &rng, 0, 1);
  Expr c = make_conv(k, x);
  double exact = fft::conv_norm(k->constant->array, {12, 10});
  NormEstimate blur = estimate_norm(emulator(), c);
  EXPECT_NEAR(blur.value, exact, 1e-4 * exact);
  EXPECT_LE(blur.value, exact * (1 + 1e-6));  // from below
  EXPECT_NEAR(norm_bound(c), exact, 1e-12 * exact);
  // 1-D forward difference with a zero last entry on n points: 2 cos(pi / (2n));
  // KᵀK is 9×9, so Lanczos is exact once its Krylov space is (9 steps).
  Expr v = make_variable({9});
  NormEstimate diff = estimate_norm(emulator(), make_grad(v));
  EXPECT_NEAR(diff.value, 2 * std::cos(M_PI / 18), 1e-5);
  EXPECT_LE(diff.iterations, 12);
  // 2-D gradient on 32×32: sqrt(8) cos(pi / 64), the top of a dense spectrum.
  Expr g = make_grad(make_variable({32, 32}));
  const double g_exact = std::sqrt(8.0) * std::cos(M_PI / 64);
  NormEstimate grad = estimate_norm(emulator(), g);
  EXPECT_NEAR(grad.value, g_exact, 1e-4 * g_exact);
  EXPECT_LE(grad.value, g_exact * (1 + 1e-6));
  // A looser tolerance stops sooner, still from below.
  NormEstimate loose = estimate_norm(emulator(), g, 100, 2, 1e-3);
  EXPECT_LT(loose.iterations, grad.iterations);
  EXPECT_LE(loose.value, g_exact * (1 + 1e-6));
  EXPECT_NEAR(loose.value, g_exact, 1e-2 * g_exact);
}

TEST(Norm, BoundsFollowProxImaL) {
  Expr x = make_variable({8, 8});
  EXPECT_NEAR(norm_bound(make_grad(x)), 2 * std::sqrt(2.0), 1e-12);
  // TV denoising with nonneg: sqrt(8 + 1) = 3.
  EXPECT_NEAR(norm_bound(make_vstack({make_grad(x), x})), 3.0, 1e-12);
  EXPECT_NEAR(norm_bound(make_scale(-2, make_grad(x))), 4 * std::sqrt(2.0), 1e-12);
  EXPECT_NEAR(norm_bound(make_sub(x, make_scale(0.5, x))), 1.5, 1e-12);
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 20; ++trial) {
    Expr k = random_dag(&rng, 6);
    EXPECT_LE(estimate_norm(emulator(), k, 300).value, norm_bound(k) * (1 + 1e-6)) << print_expression(k);
  }
}

TEST(Objective, TermsTotalAndValueAtTheProjection) {
  std::string dir = test::temp_dir();
  ParsedProgram prog = parse_program(
      "b = array([2, 2], [1, 2, 3, 4])\n"
      "x = variable(2, 2)\n"
      "minimize sum_squares(x - b) + 0.5 * norm1(grad(x)) + nonneg(x)\n",
      "p.prox", dir);
  Array xv(Shape{2, 2}, {1, 1, -1, 3});
  ObjectiveReport r = evaluate_objective(emulator(), prog.problem, {{prog.names.at("x").get(), &xv}});
  ASSERT_EQ(r.terms.size(), 3u);
  // Σ(x−b)² = 0 + 1 + 16 + 1 = 18; grad: rows (−2, 2, 0, 0), cols (0, 0, 4, 0): Σ|.| = 8 → 4.
  EXPECT_DOUBLE_EQ(r.terms[0], 18);
  EXPECT_DOUBLE_EQ(r.terms[1], 4);
  EXPECT_EQ(r.terms[2], INFINITY);
  EXPECT_EQ(r.total, INFINITY);
  ASSERT_TRUE(r.has_projection);
  // max(x, 0) = (1, 1, 0, 3): Σ(x−b)² = 0 + 1 + 9 + 1 = 11; grad rows (−1, 2), cols (0, 3): 6 → 3.
  EXPECT_DOUBLE_EQ(r.terms_at_projection[0], 11);
  EXPECT_DOUBLE_EQ(r.terms_at_projection[1], 3);
  EXPECT_DOUBLE_EQ(r.total_at_projection, 14);
}

TEST(CheckProblem, EveryExamplePasses) {
  for (const char* name : {"denoise_tv_aniso.prox", "denoise_tv_iso.prox", "deconv_tv.prox", "inpaint.prox",
                           "demosaic.prox", "deblur_photo/deblur.prox"}) {
    SCOPED_TRACE(name);
    ParsedProgram prog = parse_program_file(test::source_dir() + "/examples/" + name);
    ProblemCheck c = check_problem(emulator(), prog.problem);
    EXPECT_TRUE(c.passed) << format_check_text(c);
    EXPECT_FALSE(c.operators.empty());
  }
}

TEST(StepProgram, PrintsDeterministically) {
  Expr x = make_variable({4, 4});
  Expr g = make_grad(x);
  StepProgram p;
  p.name = "demo";
  Step in = step_input("x", {4, 4});
  Step rho = step_param("rho");
  FunctionTerm t;
  t.kind = FunctionKind::Norm1;
  t.arg = g;
  t = make_term(t);
  Step z = step_prox(t, step_forward(g, {in}), rho);
  p.outputs = {{"z", z}, {"n", step_reduce(StepKind::SumSquares, z)}};
  std::string a = print_step_program(p);
  EXPECT_EQ(a, print_step_program(p));
  EXPECT_EQ(a,
            "step demo {\n"
            "  input x: (4, 4)\n"
            "  param rho\n"
            "  %t = forward[grad(x)](%x) : (4, 4, 2)\n"
            "  %t_1 = prox[norm1 alpha=1 beta=1](%t, rho) : (4, 4, 2)\n"
            "  %t_2 = sum_squares(%t_1) : ()\n"
            "  output z = %t_1\n"
            "  output n = %t_2\n"
            "}\n");
}

}  // namespace
}  // namespace proxc::internal
