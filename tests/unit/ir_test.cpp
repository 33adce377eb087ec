#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "ir/adjoint.h"
#include "ir/expr.h"
#include "ir/function.h"
#include "ir/problem.h"
#include "ir/traverse.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

Expr constant_of(Shape s, float v = 1.0f) {
  auto d = std::make_shared<ConstantData>();
  d->array = Array(s);
  std::fill(d->array.data.begin(), d->array.data.end(), v);
  d->source.type = ConstantSource::Type::Inline;
  return make_constant(d, "c");
}

TEST(Shapes, GradAppendsComponentAxis) {
  Expr x = make_variable({16, 24});
  EXPECT_EQ(make_grad(x)->shape, Shape({16, 24, 2}));
  Expr c = make_variable({8, 10, 3});
  EXPECT_EQ(make_grad(c)->shape, Shape({8, 10, 3, 3}));
  EXPECT_EQ(make_grad(c, 2)->shape, Shape({8, 10, 3, 2}));
  EXPECT_THAT(test::user_error_of([&] { make_grad(x, 3); }), HasSubstr("grad: dims must be between 1 and"));
}

TEST(Shapes, SubsampleExtentIsCeilOfStep) {
  Expr x = make_variable({17, 13});
  EXPECT_EQ(make_subsample(x, {2, 3})->shape, Shape({9, 5}));
  Expr y = make_variable({16, 24});
  EXPECT_EQ(make_subsample(y, {2, 3})->shape, Shape({8, 8}));
  EXPECT_THAT(test::user_error_of([&] { make_subsample(y, {2}); }),
              HasSubstr("subsample: needs one step per axis: steps [2] for operand shape (16, 24)"));
}

TEST(Shapes, MismatchNamesOperatorAndBothShapes) {
  Expr x = make_variable({16, 24});
  EXPECT_THAT(test::user_error_of([&] { make_mul_elemwise(constant_of({16, 23}), x); }),
              HasSubstr("mul_elemwise: weight shape (16, 23) does not match operand shape (16, 24)"));
  EXPECT_THAT(test::user_error_of([&] { make_add(x, make_variable({3, 3})); }),
              HasSubstr("'+': shapes (16, 24) and (3, 3) do not match"));
  EXPECT_THAT(test::user_error_of([&] { make_conv(constant_of({20, 3}), x); }),
              HasSubstr("conv: kernel shape (20, 3) is larger than operand shape (16, 24)"));
}

TEST(Shapes, ScalarOffsetsBroadcast) {
  Expr x = make_variable({4, 5});
  EXPECT_EQ(make_sub(x, make_scalar_constant(0.5))->shape, Shape({4, 5}));
  EXPECT_EQ(make_add(make_scalar_constant(0.5), x)->shape, Shape({4, 5}));
}

TEST(Shapes, StructuralOperators) {
  Expr x = make_variable({4, 6});
  EXPECT_EQ(make_vstack({x, make_grad(x)})->shape, Shape({24 + 48}));
  EXPECT_EQ(make_reshape(x, {6, 4})->shape, Shape({6, 4}));
  EXPECT_THAT(test::user_error_of([&] { make_reshape(x, {5, 5}); }), HasSubstr("has 24 elements"));
  EXPECT_EQ(make_transpose(x, {1, 0})->shape, Shape({6, 4}));
  EXPECT_EQ(make_transpose(x, {})->shape, Shape({6, 4}));
  EXPECT_THAT(test::user_error_of([&] { make_transpose(x, {0, 0}); }), HasSubstr("not a permutation"));
  EXPECT_EQ(make_crop(x, {1, 2}, {2, 3})->shape, Shape({2, 3}));
  EXPECT_THAT(test::user_error_of([&] { make_crop(x, {3, 0}, {2, 3}); }), HasSubstr("does not fit"));
  Expr rgb = make_variable({4, 6, 3});
  EXPECT_EQ(make_mul_color(rgb, nullptr, "yuv")->shape, Shape({4, 6, 3}));
  EXPECT_THAT(test::user_error_of([&] { make_mul_color(x, nullptr, "yuv"); }), HasSubstr("3 colour channels"));
  EXPECT_THAT(test::user_error_of([&] { make_mul_color(rgb, nullptr, "xyz"); }), HasSubstr("unknown colour"));
  EXPECT_EQ(make_warp(x, constant_of({3, 3}))->shape, Shape({4, 6}));
  EXPECT_THAT(test::user_error_of([&] { make_warp(x, constant_of({2, 3})); }), HasSubstr("(3, 3)"));
}

TEST(Shapes, VariablesNeedPositiveExtentsAndAtMostFourAxes) {
  EXPECT_THAT(test::user_error_of([] { make_variable({0, 3}); }), HasSubstr("extents must be positive"));
  EXPECT_THAT(test::user_error_of([] { make_variable({1, 1, 1, 1, 1}); }), HasSubstr("1 to 4 dimensions"));
  EXPECT_THAT(test::user_error_of([] { make_variable({1 << 20, 1 << 20, 1 << 20}); }), HasSubstr("would need"));
}

TEST(Shapes, OperatorsApplyToConstantsToo) {
  // A constant expression (folded by emulate/fold.h where it is built); the
  // shape rules are the same.
  Expr g = make_grad(constant_of({3, 3}));
  EXPECT_FALSE(g->has_variable);
  EXPECT_EQ(g->shape, Shape({3, 3, 2}));
  EXPECT_FALSE(make_sub(constant_of({3, 3}), constant_of({3, 3}))->has_variable);
  EXPECT_THAT(test::user_error_of([] { make_sub(constant_of({3, 3}), constant_of({3, 4})); }),
              HasSubstr("shapes (3, 3) and (3, 4) do not match"));
}

TEST(Gaussian, IsNormalisedAndCentred) {
  Expr g = make_gaussian({5, 5}, 1.0);
  const auto& d = g->constant->array.data;
  double sum = std::accumulate(d.begin(), d.end(), 0.0);
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(std::max_element(d.begin(), d.end()) - d.begin(), 12);  // index (2, 2)
  EXPECT_NEAR(d[12] / d[13], std::exp(0.5), 1e-5);
  EXPECT_EQ(make_gaussian({7}, 2.0)->shape, Shape({7, 7}));
  EXPECT_THAT(test::user_error_of([] { make_gaussian({5, 5}, -1.0); }), HasSubstr("sigma must be positive"));
}

TEST(Terms, ParametersAreChecked) {
  Expr x = make_variable({4, 4});
  FunctionTerm t;
  t.kind = FunctionKind::Norm1;
  t.arg = x;
  t.alpha = -1;
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }), HasSubstr("alpha"));
  t.alpha = 1;
  t.beta = 0;
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }), HasSubstr("beta must be finite in float32 and nonzero"));
  t.beta = 1;
  t.b = Param::of(constant_of({4, 5}));
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }),
              HasSubstr("norm1: parameter 'b' has shape (4, 5) but the operand has shape (4, 4)"));
  t.b = Param::of(0.0);
  t.kind = FunctionKind::GroupNorm1;
  t.axes = {2};
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }), HasSubstr("axis 2 is out of range"));
  t.axes = {1, 0};
  EXPECT_EQ(make_term(t).axes, std::vector<int64_t>({0, 1}));
  t.kind = FunctionKind::Box;
  t.axes.clear();
  t.lower = Param::of(1.0);
  t.upper = Param::of(0.0);
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }), HasSubstr("lower bound 1 is above upper bound 0"));
}

TEST(Problem, TopoOrderVisitsSharedNodesOnce) {
  Expr x = make_variable({4, 4});
  Expr g = make_grad(x);
  Problem p;
  FunctionTerm a;
  a.kind = FunctionKind::Norm1;
  a.arg = g;
  FunctionTerm b = a;
  b.kind = FunctionKind::GroupNorm1;
  b.axes = {2};
  p.terms = {make_term(a), make_term(b)};
  auto order = topo_order(p);
  ASSERT_EQ(order.size(), 2u);
  EXPECT_EQ(order[0], x);
  EXPECT_EQ(order[1], g);
  EXPECT_EQ(p.variables().size(), 1u);
}

TEST(Problem, ExpressionDepthIsBounded) {
  // Printers and destructors recurse over the DAG; a bound on its depth keeps
  // them far from the stack's limit whatever the input.
  Expr e = make_variable({2, 2});
  for (int i = 1; i < kMaxExprDepth; ++i) e = make_neg(e);
  EXPECT_EQ(e->depth, kMaxExprDepth);
  EXPECT_THAT(test::user_error_of([&] { make_neg(e); }),
              HasSubstr("nests " + std::to_string(kMaxExprDepth + 1) + " operators deep"));
}

TEST(Traverse, VisitsEachNodeOnceOperandsFirstAndRebuildsSharedNodesOnce) {
  Expr x = make_variable({4, 5}, "x");
  Expr g = make_grad(x);
  Expr sum = make_add(make_scale(2, x), x);  // x used twice
  std::vector<const ExprNode*> order;
  for_each_node({sum, g, nullptr}, [&](const Expr& e) { order.push_back(e.get()); });
  ASSERT_EQ(order.size(), 4u);  // x, 2 * x, the sum, grad: each once
  EXPECT_EQ(order[0], x.get());
  EXPECT_EQ(order[2], sum.get());
  EXPECT_EQ(order[3], g.get());
  // Replacing x rebuilds its users once, over the same new node.
  Expr y = make_variable({4, 5}, "y");
  int rebuilt = 0;
  ExprMutator m([&](const Expr& e, std::vector<Expr> args) {
    ++rebuilt;
    return e == x ? y : with_args(e, std::move(args));
  });
  Expr sum2 = m(sum), g2 = m(g);
  EXPECT_EQ(rebuilt, 4);
  EXPECT_EQ(sum2->args[1], y);
  EXPECT_EQ(sum2->args[0]->args[0], y);
  EXPECT_EQ(g2->args[0], y);
  EXPECT_EQ(m(sum), sum2);  // memoized across calls
  // A rewrite that throws leaves the mutator usable.
  bool fail = true;
  ExprMutator flaky([&](const Expr& e, std::vector<Expr> args) {
    if (fail && e == g) throw UserError("no");
    return with_args(e, std::move(args));
  });
  EXPECT_THROW(flaky(g), UserError);
  fail = false;
  EXPECT_EQ(flaky(g), g);
}

TEST(Traverse, LinearOrderSkipsConstantsAndReverseModeSumsEverySharePerVariable) {
  // K = (2 x − (−x)) + c + grad... in scalars: Kᵀ y = 2y + y = 3y for x; z is unreachable.
  Expr x = make_variable({3}, "x");
  Expr z = make_variable({3}, "z");
  Expr c = constant_of({3}, 5.0f);
  Expr k = make_add(make_sub(make_scale(2, x), make_neg(x)), c);
  std::vector<const ExprNode*> order = linear_order(k);
  ASSERT_EQ(order.size(), 5u);  // x, 2x, -x, the difference, the sum: no constant
  EXPECT_EQ(order.front(), x.get());
  EXPECT_EQ(order.back(), k.get());
  std::vector<std::string> visited;
  int sums = 0;
  // Value: a number standing for "y times this factor".
  auto out = reverse_mode<double>(
      k, 1.0,
      [&](const ExprNode* n, double g, const std::function<void(const Expr&, double)>& push) {
        visited.push_back(to_string(n->kind));
        switch (n->kind) {
          case ExprKind::Add: push(n->args[0], g); push(n->args[1], g); break;
          case ExprKind::Sub: push(n->args[0], g); push(n->args[1], -g); break;
          case ExprKind::Neg: push(n->args[0], -g); break;
          case ExprKind::Scale: push(n->args[0], n->scalar * g); break;
          default: ADD_FAILURE() << to_string(n->kind);
        }
      },
      [&](std::vector<double> parts, const ExprNode* n) {
        ++sums;
        EXPECT_EQ(n, x.get());
        return std::accumulate(parts.begin(), parts.end(), 0.0);
      });
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out.at(x.get()), 3.0);
  EXPECT_EQ(sums, 1);  // the two shares of x, summed once
  EXPECT_EQ(visited, (std::vector<std::string>{"add", "sub", "neg", "scale"}));
  EXPECT_EQ(out.count(z.get()), 0u);
}

}  // namespace
}  // namespace proxc::internal
