// The emulator's operators, pinned to values worked out by hand from
// docs/semantics.md, and its proxes checked against independent criteria.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "emulate/linop.h"
#include "emulate/prox.h"
#include "fft/fft.h"
#include "ir/expr.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using emulate::Tensor;

Expr constant(Shape s, std::vector<float> v) {
  auto d = std::make_shared<ConstantData>();
  d->array = Array(std::move(s), FloatData(v.begin(), v.end()));
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "c");
}

Tensor tensor(Shape s, DoubleData v) {
  Tensor t(std::move(s));
  t.data = std::move(v);
  return t;
}

Tensor iota(Shape s) {
  Tensor t(std::move(s));
  for (size_t i = 0; i < t.size(); ++i) t.data[i] = static_cast<double>(i * i % 7) + 0.5 * static_cast<double>(i);
  return t;
}

Tensor fwd(const Expr& k, const Expr& x, const Tensor& v) { return emulate::forward(k, {{x.get(), &v}}, false); }
Tensor adj(const Expr& k, const Expr& x, const Tensor& y) { return emulate::adjoint(k, y).at(x.get()); }

void expect_values(const Tensor& t, const DoubleData& want) {
  ASSERT_EQ(t.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t.data[i], want[i], 1e-12) << "entry " << i;
}

TEST(EmulateGrad, ForwardDifferencesWithZeroAtTheLastIndex) {
  Expr x = make_variable({2, 3});
  // x = [[1, 2, 4], [7, 11, 16]]
  Tensor y = fwd(make_grad(x), x, tensor({2, 3}, {1, 2, 4, 7, 11, 16}));
  ASSERT_EQ(y.shape, Shape({2, 3, 2}));
  // (component 0: along rows, component 1: along columns)
  expect_values(y, {6, 1, 9, 2, 12, 0, 0, 4, 0, 5, 0, 0});
}

TEST(EmulateGrad, AdjointIsMinusDivergenceAndIgnoresTheLastIndex) {
  Expr x = make_variable({3});
  Expr g = make_grad(x);
  // p = [a, b, c]: Dᵀp = [-a, a - b, b]; c (last index) is never read.
  expect_values(adj(g, x, tensor({3, 1}, {2, 5, 100})), {-2, -3, 5});
  // 3-D, dims = 2: the channel axis is not differenced.
  Expr v = make_variable({2, 2, 2});
  Tensor y = fwd(make_grad(v, 2), v, tensor({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}));
  ASSERT_EQ(y.shape, Shape({2, 2, 2, 2}));
  // entry (0,0,ch): rows diff = x[1,0,ch]-x[0,0,ch] = 4, cols diff = x[0,1,ch]-x[0,0,ch] = 2
  EXPECT_EQ(y.data[0], 4);
  EXPECT_EQ(y.data[1], 2);
  EXPECT_EQ(y.data[2], 4);
  EXPECT_EQ(y.data[3], 2);
}

TEST(EmulateConv, OddKernelOriginAtTheCentre) {
  Expr x = make_variable({4, 4});
  Expr k = constant({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor delta(Shape{4, 4});
  delta.data[0] = 1;  // a delta at (0, 0)
  Tensor y = fwd(make_conv(k, x), x, delta);
  // y[m, n] = k[(m + 1) mod 4, (n + 1) mod 4] where that index is inside the kernel.
  EXPECT_EQ(y.data[0 * 4 + 0], 5);
  EXPECT_EQ(y.data[1 * 4 + 0], 8);
  EXPECT_EQ(y.data[3 * 4 + 0], 2);
  EXPECT_EQ(y.data[0 * 4 + 1], 6);
  EXPECT_EQ(y.data[3 * 4 + 3], 1);
  EXPECT_EQ(y.data[2 * 4 + 2], 0);
  // Adjoint: correlation, delta -> flipped kernel around the origin.
  Tensor z = adj(make_conv(k, x), x, delta);
  EXPECT_EQ(z.data[0], 5);
  EXPECT_EQ(z.data[1 * 4 + 0], 2);
  EXPECT_EQ(z.data[3 * 4 + 0], 8);
  EXPECT_EQ(z.data[1 * 4 + 1], 1);
}

TEST(EmulateConv, EvenKernelOriginAtHalfTheSize) {
  Expr x = make_variable({4, 4});
  Expr k = constant({2, 2}, {1, 2, 3, 4});
  Tensor delta(Shape{4, 4});
  delta.data[0] = 1;
  Tensor y = fwd(make_conv(k, x), x, delta);
  // kh//2 = kw//2 = 1: y[m, n] = k[(m + 1) mod 4, (n + 1) mod 4].
  EXPECT_EQ(y.data[0], 4);            // k[1, 1]
  EXPECT_EQ(y.data[0 * 4 + 3], 3);    // k[1, 0]
  EXPECT_EQ(y.data[3 * 4 + 0], 2);    // k[0, 1]
  EXPECT_EQ(y.data[3 * 4 + 3], 1);    // k[0, 0]
  EXPECT_EQ(y.data[1 * 4 + 1], 0);
}

TEST(EmulateConv, MatchesTheFftForm) {
  // conv(k, x) = real(ifft(fft(x)·otf)): check with the circulant solve a = 0 path inverted.
  Expr x = make_variable({5, 6});
  Expr k = constant({3, 2}, {0.5, -1, 2, 0.25, 1, 3});
  Tensor v = iota({5, 6});
  Tensor y = fwd(make_conv(k, x), x, v);
  // Solve (1·KᵀK + 0) z = Kᵀy, so z = v when K is invertible.
  Tensor kty = adj(make_conv(k, x), x, y);
  fft::circulant_solve(k->constant->array, {5, 6}, 1.0, 0.0, &kty.data);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(kty.data[i], v.data[i], 1e-9);
}

TEST(EmulateSubsample, KeepsEveryStepFromZero) {
  Expr x = make_variable({5, 4});
  Tensor y = fwd(make_subsample(x, {2, 3}), x, iota({5, 4}));
  ASSERT_EQ(y.shape, Shape({3, 2}));
  Tensor v = iota({5, 4});
  expect_values(y, {v.data[0], v.data[3], v.data[8], v.data[11], v.data[16], v.data[19]});
  Tensor back = adj(make_subsample(x, {2, 3}), x, tensor({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_values(back, {1, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 4, 0, 0, 0, 0, 5, 0, 0, 6});
}

TEST(EmulateStructural, TransposeCropReshapeVstack) {
  Expr x = make_variable({2, 3});
  Tensor v = tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(fwd(make_transpose(x, {1, 0}), x, v), {1, 4, 2, 5, 3, 6});
  expect_values(fwd(make_crop(x, {1, 1}, {1, 2}), x, v), {5, 6});
  expect_values(adj(make_crop(x, {1, 1}, {1, 2}), x, tensor({1, 2}, {7, 8})), {0, 0, 0, 0, 7, 8});
  expect_values(fwd(make_reshape(x, {3, 2}), x, v), {1, 2, 3, 4, 5, 6});
  expect_values(fwd(make_vstack({x, make_scale(2, x)}), x, v), {1, 2, 3, 4, 5, 6, 2, 4, 6, 8, 10, 12});
  expect_values(adj(make_vstack({x, make_scale(2, x)}), x, tensor({12}, {1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0})),
                {3, 1, 1, 1, 1, 1});
}

TEST(EmulateColor, AppliesTheMatrixPerPixel) {
  Expr x = make_variable({1, 2, 3});
  Expr m = constant({3, 3}, {1, 2, 0, 0, 1, 0, -1, 0, 3});
  expect_values(fwd(make_mul_color(x, m), x, tensor({1, 2, 3}, {1, 1, 1, 2, 0, 1})), {3, 1, 2, 2, 0, 1});
  // Adjoint: Mᵀ per pixel.
  expect_values(adj(make_mul_color(x, m), x, tensor({1, 2, 3}, {1, 0, 0, 0, 0, 1})), {1, 2, 0, -1, 0, 3});
}

TEST(EmulateWarp, IdentityAndShift) {
  Expr x = make_variable({3, 4});
  Tensor v = iota({3, 4});
  Expr id = constant({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  expect_values(fwd(make_warp(x, id), x, v), v.data);
  // H·(row, col, 1) is the sampled (row, column), as ProxImaL's warp (OpenCV's
  // inverse map of the transposed image): one row down, out[i, j] = x[i + 1, j],
  // and one column right, out[i, j] = x[i, j + 1]; 0 past the edge.
  Expr down = constant({3, 3}, {1, 0, 1, 0, 1, 0, 0, 0, 1});
  Expr right = constant({3, 3}, {1, 0, 0, 0, 1, 1, 0, 0, 1});
  Tensor yd = fwd(make_warp(x, down), x, v), yr = fwd(make_warp(x, right), x, v);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) {
      EXPECT_NEAR(yd.data[i * 4 + j], i < 2 ? v.data[(i + 1) * 4 + j] : 0.0, 1e-12) << i << ", " << j;
      EXPECT_NEAR(yr.data[i * 4 + j], j < 3 ? v.data[i * 4 + j + 1] : 0.0, 1e-12) << i << ", " << j;
    }
  }
  // Half a pixel along the columns: the average of two neighbours in a row.
  Expr half = constant({3, 3}, {1, 0, 0, 0, 1, 0.5, 0, 0, 1});
  EXPECT_NEAR(fwd(make_warp(x, half), x, v).data[0], 0.5 * (v.data[0] + v.data[1]), 1e-7);
}

TEST(EmulateAffine, OffsetsKeptOnlyWhenAsked) {
  Expr x = make_variable({2});
  Expr b = constant({2}, {1, 2});
  Expr k = make_sub(make_scale(3, x), b);
  Tensor v = tensor({2}, {1, 1});
  expect_values(emulate::forward(k, {{x.get(), &v}}, false), {3, 3});
  expect_values(emulate::forward(k, {{x.get(), &v}}, true), {2, 1});
  expect_values(emulate::forward(make_sub(x, make_scalar_constant(0.5)), {{x.get(), &v}}, true), {0.5, 0.5});
}

// ---- Proximal operators ----

// The test's own f (strict indicators), independent of the emulator's value().
double own_f(const FunctionTerm& t, const DoubleData& u, const DoubleData& counts, const DoubleData& w) {
  double f = 0;
  switch (t.kind) {
    case FunctionKind::WeightedNorm1: for (size_t i = 0; i < u.size(); ++i) f += std::fabs(w[i] * u[i]); break;
    case FunctionKind::WeightedSumSquares:
      for (size_t i = 0; i < u.size(); ++i) f += w[i] * u[i] * w[i] * u[i];
      break;
    case FunctionKind::WeightedGroupNorm1:  // one weight per group of 2
      for (size_t i = 0; i + 1 < u.size(); i += 2) f += std::fabs(w[i]) * std::hypot(u[i], u[i + 1]);
      break;
    case FunctionKind::WeightedNonneg:
      for (size_t i = 0; i < u.size(); ++i) if (w[i] * u[i] < -1e-12) return INFINITY;
      return 0.0;
    case FunctionKind::MaskedNonneg:
      for (size_t i = 0; i < u.size(); ++i) {
        if (w[i] >= 0.5 ? u[i] < -1e-12 : std::fabs(u[i]) > 1e-12) return INFINITY;
      }
      return 0.0;
    case FunctionKind::WeightedPoissonNorm:
      for (size_t i = 0; i < u.size(); ++i) {
        if (w[i] == 0) continue;
        const double wu = w[i] * u[i];
        if (wu < 0 || (wu == 0 && counts[i] > 0)) return INFINITY;
        f += wu - (counts[i] > 0 ? counts[i] * std::log(wu) : 0.0);
      }
      break;
    case FunctionKind::ZeroProx: break;
    case FunctionKind::UserProx: break;  // tested against the built-ins it reimplements (user_prox_test.cpp)
    case FunctionKind::SumSquares:
    case FunctionKind::LeastSquares: for (double x : u) f += x * x; break;
    case FunctionKind::Norm1: for (double x : u) f += std::fabs(x); break;
    // Indicators allow 1e-12 of round-off: the prox maps back through (w + b)/beta.
    case FunctionKind::Nonneg: for (double x : u) if (x < -1e-12) return INFINITY; break;
    case FunctionKind::PoissonNorm:
      for (size_t i = 0; i < u.size(); ++i) {
        if (u[i] < 0 || (u[i] == 0 && counts[i] > 0)) return INFINITY;
        f += u[i] - (counts[i] > 0 ? counts[i] * std::log(u[i]) : 0.0);
      }
      break;
    case FunctionKind::SumEntries: for (double x : u) f += x; break;
    case FunctionKind::GroupNorm1:  // groups of 2 consecutive entries (axis 1 of shape (n, 2))
      for (size_t i = 0; i + 1 < u.size(); i += 2) f += std::hypot(u[i], u[i + 1]);
      break;
    case FunctionKind::Box: for (double x : u) if (x < -0.5 - 1e-12 || x > 0.75 + 1e-12) return INFINITY; break;
  }
  return t.kind == FunctionKind::Nonneg || t.kind == FunctionKind::Box ? 0.0 : t.alpha * f;
}

// Φ(x) = F(x) + (rho/2)||x − v||² with F = alpha f(beta x − b) + c·x + gamma||x||² + d.
double phi(const FunctionTerm& t, const DoubleData& x, const DoubleData& v, double rho,
           const DoubleData& b, const DoubleData& c, const DoubleData& counts, const DoubleData& w) {
  DoubleData u(x.size());
  double rest = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    u[i] = t.beta * x[i] - b[i];
    rest += c[i] * x[i] + t.gamma * x[i] * x[i] + 0.5 * rho * (x[i] - v[i]) * (x[i] - v[i]);
  }
  return own_f(t, u, counts, w) + rest;
}

struct ProxCase {
  FunctionKind kind;
  bool params;
};

class ProxOptimality : public ::testing::TestWithParam<ProxCase> {};

TEST_P(ProxOptimality, NoNearbyPointIsBetterAndCoordinatesAreMinimal) {
  const ProxCase pc = GetParam();
  const size_t n = 12;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd(0.0, 1.0);
  std::uniform_real_distribution<double> ud(0.5, 3.0);
  Expr x = make_variable({6, 2});
  DoubleData b(n, 0), c(n, 0), counts(n, 0), w(n, 0);
  FunctionTerm t;
  t.kind = pc.kind;
  t.arg = x;
  if (pc.kind == FunctionKind::GroupNorm1 || pc.kind == FunctionKind::WeightedGroupNorm1) t.axes = {1};
  const bool weighted = pc.kind == FunctionKind::WeightedNorm1 || pc.kind == FunctionKind::WeightedSumSquares ||
                        pc.kind == FunctionKind::WeightedGroupNorm1 || pc.kind == FunctionKind::WeightedNonneg ||
                        pc.kind == FunctionKind::MaskedNonneg || pc.kind == FunctionKind::WeightedPoissonNorm;
  if (weighted) {
    // Weights of both signs and zeros (masks: 0, 1 and in between; Poisson's
    // weights >= 0; one weight per group of the group norm).
    const float pattern[] = {1.5f, -0.7f, 0.0f, 2.0f, 0.3f, -1.2f, 0.0f, 0.9f, 1.0f, -0.4f, 0.6f, 0.0f};
    std::vector<float> wf(n);
    for (size_t i = 0; i < n; ++i) {
      float v = pattern[pc.kind == FunctionKind::WeightedGroupNorm1 ? i & ~size_t{1} : i];
      if (pc.kind == FunctionKind::WeightedPoissonNorm) v = std::fabs(v);
      if (pc.kind == FunctionKind::MaskedNonneg) v = std::fabs(v) >= 0.6f ? 1.0f : std::fabs(v);
      w[i] = wf[i] = v;
    }
    t.weight = constant({6, 2}, wf);
  }
  if (pc.kind == FunctionKind::PoissonNorm || pc.kind == FunctionKind::WeightedPoissonNorm) {
    std::vector<float> cf(n);
    for (size_t i = 0; i < n; ++i) cf[i] = static_cast<float>(counts[i] = std::floor(ud(rng) * 2));
    t.counts = constant({6, 2}, cf);
  }
  if (pc.kind == FunctionKind::Box) {
    t.lower = Param::of(-0.5);
    t.upper = Param::of(0.75);
  }
  if (pc.params) {
    t.alpha = 0.7;
    t.beta = pc.kind == FunctionKind::Box ? 1.3 : -0.8;
    t.gamma = 0.2;
    std::vector<float> bf(n), cf(n);
    for (size_t i = 0; i < n; ++i) {
      // The constants hold float32: the test uses the same rounded values.
      b[i] = bf[i] = static_cast<float>(0.3 * nd(rng));
      c[i] = cf[i] = static_cast<float>(0.3 * nd(rng));
    }
    t.b = Param::of(constant({6, 2}, bf));
    t.c = Param::of(constant({6, 2}, cf));
  }
  t = make_term(t);
  for (double rho : {0.5, 1.7, 3.0}) {
    Tensor v(Shape{6, 2});
    for (double& e : v.data) e = 1.5 * nd(rng);
    Tensor p = emulate::prox(t, v, rho);
    double best = phi(t, p.data, v.data, rho, b, c, counts, w);
    // masked_nonneg pins the entries outside its mask: perturb the others.
    auto free = [&](size_t i) { return pc.kind != FunctionKind::MaskedNonneg || w[i] >= 0.5; };
    ASSERT_TRUE(std::isfinite(best)) << "the prox is infeasible";
    // Random perturbations at several scales never do better (convexity makes
    // this a global statement).
    for (double scale : {1e-1, 1e-2, 1e-3, 1e-4}) {
      for (int k = 0; k < 200; ++k) {
        DoubleData q = p.data;
        for (size_t i = 0; i < n; ++i) q[i] += free(i) ? scale * nd(rng) : 0.0;
        EXPECT_GE(phi(t, q, v.data, rho, b, c, counts, w), best - 1e-10) << "scale " << scale;
      }
    }
    // Separable functions: each coordinate is the minimum along its own line
    // (golden-section search on a bracket around the prox).
    if (pc.kind != FunctionKind::GroupNorm1 && pc.kind != FunctionKind::WeightedGroupNorm1) {
      for (size_t i = 0; i < n; ++i) {
        if (!free(i)) {
          EXPECT_NEAR(t.beta * p.data[i] - b[i], 0.0, 1e-12) << "outside the mask";
          continue;
        }
        auto along = [&](double s) {
          DoubleData q = p.data;
          q[i] = s;
          return phi(t, q, v.data, rho, b, c, counts, w);
        };
        double lo = p.data[i] - 2, hi = p.data[i] + 2;
        const double g = (std::sqrt(5.0) - 1) / 2;
        for (int it = 0; it < 200; ++it) {
          double m1 = hi - g * (hi - lo), m2 = lo + g * (hi - lo);
          if (along(m1) < along(m2)) hi = m2;
          else lo = m1;
        }
        EXPECT_NEAR(p.data[i], 0.5 * (lo + hi), 1e-6) << "coordinate " << i << " rho " << rho;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllFunctions, ProxOptimality,
    ::testing::Values(ProxCase{FunctionKind::SumSquares, false}, ProxCase{FunctionKind::SumSquares, true},
                      ProxCase{FunctionKind::Norm1, false}, ProxCase{FunctionKind::Norm1, true},
                      ProxCase{FunctionKind::GroupNorm1, false}, ProxCase{FunctionKind::GroupNorm1, true},
                      ProxCase{FunctionKind::Nonneg, false}, ProxCase{FunctionKind::Nonneg, true},
                      ProxCase{FunctionKind::PoissonNorm, false}, ProxCase{FunctionKind::PoissonNorm, true},
                      ProxCase{FunctionKind::SumEntries, false}, ProxCase{FunctionKind::SumEntries, true},
                      ProxCase{FunctionKind::Box, false}, ProxCase{FunctionKind::Box, true},
                      ProxCase{FunctionKind::WeightedNorm1, false}, ProxCase{FunctionKind::WeightedNorm1, true},
                      ProxCase{FunctionKind::WeightedSumSquares, false},
                      ProxCase{FunctionKind::WeightedSumSquares, true},
                      ProxCase{FunctionKind::WeightedGroupNorm1, false},
                      ProxCase{FunctionKind::WeightedGroupNorm1, true},
                      ProxCase{FunctionKind::WeightedNonneg, false}, ProxCase{FunctionKind::WeightedNonneg, true},
                      ProxCase{FunctionKind::MaskedNonneg, false}, ProxCase{FunctionKind::MaskedNonneg, true},
                      ProxCase{FunctionKind::WeightedPoissonNorm, false},
                      ProxCase{FunctionKind::WeightedPoissonNorm, true}, ProxCase{FunctionKind::ZeroProx, false},
                      ProxCase{FunctionKind::ZeroProx, true}),
    [](const ::testing::TestParamInfo<ProxCase>& info) {
      return std::string(to_string(info.param.kind)) + (info.param.params ? "_params" : "_default");
    });

TEST(EmulateValue, IndicatorsUseProxImaLsSlack) {
  Expr x = make_variable({3});
  FunctionTerm t;
  t.kind = FunctionKind::Nonneg;
  t.arg = x;
  t = make_term(t);
  EXPECT_EQ(emulate::value(t, tensor({3}, {0, 1, -5e-4})), 0.0);
  EXPECT_EQ(emulate::value(t, tensor({3}, {0, 1, -2e-3})), INFINITY);
}

TEST(EmulateValue, SumEntriesHonoursAlpha) {
  Expr x = make_variable({3});
  FunctionTerm t;
  t.kind = FunctionKind::SumEntries;
  t.arg = x;
  t.alpha = 2;
  t = make_term(t);
  EXPECT_EQ(emulate::value(t, tensor({3}, {1, 2, 3})), 12.0);
}

}  // namespace
}  // namespace proxc::internal
