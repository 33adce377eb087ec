// The public API's pieces of ProxImaL's object model: an expression's linear
// part applied forward and adjoint, its operator norm, and one function's
// prox and value (proxc::forward, adjoint, operator_norm, prox, evaluate_at),
// each against a closed form, and their mistakes as UserErrors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <proxc/proxc.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const proxc::UserError& e) {
    return e.what();
  }
  return "(no error)";
}

proxc::Array random_array(const proxc::Shape& shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  proxc::Array a(shape);
  for (int64_t i = 0; i < a.size(); ++i) a[i] = n(rng);
  return a;
}

double dot(const proxc::Array& a, const proxc::Array& b) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(ApiLinear, ForwardIsTheLinearPartAndGradMatchesItsDefinition) {
  proxc::Expr x = proxc::variable({2, 3}, "x");
  const proxc::Array xv({2, 3}, {0, 1, 3, 2, 4, 8});
  const proxc::Array b({2, 3}, {5, 5, 5, 5, 5, 5});
  // Forward differences, 0 past the last row and column (docs/semantics.md).
  const proxc::Array g = proxc::forward(proxc::grad(x) - proxc::grad(proxc::Expr(b)), {{x, xv}});
  ASSERT_EQ(g.shape(), (proxc::Shape{2, 3, 2}));
  const std::vector<float> want = {2, 1, 3, 2, 5, 0, 0, 2, 0, 4, 0, 0};
  for (int64_t i = 0; i < g.size(); ++i) EXPECT_FLOAT_EQ(g[i], want[static_cast<size_t>(i)]) << i;
  // The offset is left out: forward(x − b) is x, evaluate(x − b) is x − b.
  const proxc::Array f = proxc::forward(x - proxc::Expr(b), {{x, xv}});
  const proxc::Array e = proxc::evaluate(x - proxc::Expr(b), {{x, xv}});
  for (int64_t i = 0; i < f.size(); ++i) {
    EXPECT_FLOAT_EQ(f[i], xv[i]);
    EXPECT_FLOAT_EQ(e[i], xv[i] - 5);
  }
  // A constant's linear part is zero.
  const proxc::Array c = proxc::forward(proxc::Expr(b), {});
  for (int64_t i = 0; i < c.size(); ++i) EXPECT_EQ(c[i], 0.f);
}

TEST(ApiLinear, AdjointPassesTheDotTestPerVariable) {
  proxc::Expr x = proxc::variable({12, 10}, "x"), z = proxc::variable({12, 10}, "z"),
              w = proxc::variable({3}, "w");
  const proxc::Array k = random_array({3, 3}, 7), m = random_array({12, 10}, 8);
  const proxc::Expr K = proxc::vstack({proxc::conv(k, x) + proxc::mul_elemwise(m, z), 2.0 * proxc::grad(x)});
  const proxc::Array xv = random_array({12, 10}, 1), zv = random_array({12, 10}, 2),
                     y = random_array(K.shape(), 3);
  const proxc::Array kx = proxc::forward(K, {{x, xv}, {z, zv}});
  const std::vector<proxc::Array> kty = proxc::adjoint(K, y, {x, z, w});
  ASSERT_EQ(kty.size(), 3u);
  EXPECT_EQ(kty[0].shape(), x.shape());
  EXPECT_EQ(kty[1].shape(), z.shape());
  // <K(x, z), y> = <x, (Kᵀy)_x> + <z, (Kᵀy)_z>: float32 results of double arithmetic.
  const double lhs = dot(kx, y), rhs = dot(xv, kty[0]) + dot(zv, kty[1]);
  EXPECT_NEAR(lhs, rhs, 1e-5 * (std::abs(lhs) + 1));
  // z's part is m ⊙ y's first part; w, which K does not read, gets zeros.
  for (int64_t i = 0; i < 120; ++i) EXPECT_FLOAT_EQ(kty[1][i], m[i] * y[i]);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(kty[2][i], 0.f);
}

TEST(ApiLinear, OperatorNormBoundAndEstimate) {
  proxc::Expr x = proxc::variable({16, 16}, "x");
  // 3x: both exact.
  EXPECT_NEAR(proxc::operator_norm(proxc::scale(3, x), proxc::NormKind::Bound), 3, 1e-12);
  EXPECT_NEAR(proxc::operator_norm(proxc::scale(3, x), proxc::NormKind::Estimate, 1e-6), 3, 1e-5);
  // grad on 16×16: ProxImaL's bound 2√2; the largest singular value of the
  // forward differences, 2√2·cos(π/32) (each axis's 2 cos(π/(2n))), the
  // estimate from below.
  const proxc::Expr g = proxc::grad(x);
  EXPECT_NEAR(proxc::operator_norm(g, proxc::NormKind::Bound), 2 * std::sqrt(2.0), 1e-12);
  const double exact = 2 * std::sqrt(2.0) * std::cos(std::acos(-1.0) / 32);
  const double est = proxc::operator_norm(g, proxc::NormKind::Estimate, 1e-6);
  EXPECT_LE(est, exact * (1 + 1e-6));
  EXPECT_GE(est, exact * (1 - 1e-3));
  EXPECT_EQ(proxc::operator_norm(proxc::Expr(proxc::Array({2}, {1, 2}))), 0);
  EXPECT_THAT(error_of([&] { proxc::operator_norm(g, proxc::NormKind::Estimate, 0); }),
              HasSubstr("tolerance must be a number > 0"));
}

TEST(ApiLinear, ProxMatchesClosedForms) {
  proxc::Expr x = proxc::variable({4}, "x");
  const proxc::Array v({4}, {-2, -0.25, 0.5, 3});
  // alpha (beta u − b)² + c u + gamma u² + d: u = (rho v + 2 alpha beta b − c) / (2 alpha beta² + 2 gamma +
  // rho).
  const double alpha = 2, beta = 3, bb = 0.5, c = 0.25, gamma = 0.75, rho = 1.5;
  const proxc::Term ls = proxc::sum_squares(x).alpha(alpha).beta(beta).b(bb).c(c).gamma(gamma).d(4);
  const proxc::Array u = proxc::prox(ls, rho, v);
  for (int64_t i = 0; i < 4; ++i) {
    const double want =
        (rho * v[i] + 2 * alpha * beta * bb - c) / (2 * alpha * beta * beta + 2 * gamma + rho);
    EXPECT_NEAR(u[i], want, 1e-6) << i;
  }
  // Soft thresholding at alpha/rho.
  const proxc::Array s = proxc::prox(proxc::norm1(x).alpha(0.5), 2.0, v);
  const std::vector<float> soft = {-1.75, 0, 0.25, 2.75};
  for (int64_t i = 0; i < 4; ++i) EXPECT_NEAR(s[i], soft[static_cast<size_t>(i)], 1e-6) << i;
  // Projection; and group shrinkage over axis 1 of a (2, 2).
  const proxc::Array p = proxc::prox(proxc::nonneg(x), 1.0, v);
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(p[i], std::max(v[i], 0.f));
  proxc::Expr y = proxc::variable({2, 2}, "y");
  const proxc::Array gv({2, 2}, {3, 4, 0.3f, 0.4f});  // group norms 5 and 0.5
  const proxc::Array gu = proxc::prox(proxc::group_norm1(y, {1}), 1.0, gv);
  EXPECT_NEAR(gu[0], 3 * 0.8, 1e-6);
  EXPECT_NEAR(gu[1], 4 * 0.8, 1e-6);
  EXPECT_EQ(gu[2], 0.f);
  EXPECT_EQ(gu[3], 0.f);
  // The values, with every parameter.
  double want = 4;
  for (int64_t i = 0; i < 4; ++i)
    want += alpha * std::pow(beta * v[i] - bb, 2) + c * v[i] + gamma * v[i] * v[i];
  EXPECT_NEAR(proxc::evaluate_at(ls, v), want, 1e-9 * want);
  EXPECT_NEAR(proxc::evaluate_at(proxc::norm1(x).alpha(0.5), v), 0.5 * 5.75, 1e-12);
  EXPECT_EQ(proxc::evaluate_at(proxc::nonneg(x), v), std::numeric_limits<double>::infinity());
  EXPECT_EQ(proxc::evaluate_at(proxc::nonneg(x), p), 0);
}

TEST(ApiLinear, MistakesSayWhatAndBothShapes) {
  proxc::Expr x = proxc::variable({4}, "x"), z = proxc::variable({2}, "z");
  const proxc::Array v4({4}), v3({3});
  EXPECT_THAT(error_of([&] { proxc::prox(proxc::norm1(x), 1.0, v3); }),
              HasSubstr("prox: the function's operand has shape (4,), the value (3,)"));
  EXPECT_THAT(error_of([&] { proxc::prox(proxc::norm1(x) + proxc::nonneg(x), 1.0, v4); }),
              HasSubstr("prox: expects one function term, got 2"));
  EXPECT_THAT(error_of([&] { proxc::prox(proxc::norm1(x), 0.0, v4); }),
              HasSubstr("rho must be a number > 0"));
  EXPECT_THAT(error_of([&] { proxc::evaluate_at(proxc::norm1(x), v3); }), HasSubstr("evaluate_at"));
  EXPECT_THAT(error_of([&] { proxc::adjoint(proxc::grad(x), v4, {x}); }),
              HasSubstr("adjoint: the expression has shape (4, 1), y (4,)"));
  EXPECT_THAT(error_of([&] { proxc::adjoint(x, v4, {proxc::grad(x)}); }), HasSubstr("not a variable"));
  EXPECT_THAT(error_of([&] { proxc::forward(x + 1.0, {}); }), HasSubstr("no value for variable 'x'"));
  EXPECT_THAT(error_of([&] { proxc::forward(x, {{x, v3}}); }), HasSubstr("has shape (4,), its value (3,)"));
  (void)z;
}

}  // namespace
