#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/parser.h"
#include "ir/dot.h"
#include "frontend/json.h"
#include "ir/latex.h"
#include "ir/printer.h"
#include "test_black_boxes.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

ParsedProgram parse(const std::string& text) { return parse_program(text, "test.prox", "."); }

// print → parse → print is byte-identical, and JSON → IR → JSON too.
void expect_round_trip(const std::string& text) {
  Problem p = parse(text).problem;
  std::string a = print_text(p);
  std::string b = print_text(parse(a).problem);
  EXPECT_EQ(a, b) << "from:\n" << text;
  std::string j1 = print_json(p);
  Problem q = parse_json(j1, "test.json", ".");
  EXPECT_EQ(print_json(q), j1);
  EXPECT_EQ(print_text(q), a);
}

TEST(Printer, CanonicalFormOfASimpleProblem) {
  Problem p = parse(
                  "x = variable(16, 24)  # the image\n"
                  "minimize sum_squares(x - 0.5) + 1e-3 * group_norm1(grad(x), [2]) + nonneg(x)\n")
                  .problem;
  EXPECT_EQ(print_text(p),
            "x = variable(16, 24)\n"
            "minimize sum_squares(x - 0.5)\n"
            "    + 0.001 * group_norm1(grad(x), [2])\n"
            "    + nonneg(x)\n");
}

TEST(Printer, DistinctNodesWithTheSameHintGetSuffixes) {
  Expr x1 = make_variable({4, 4}, "b");
  Expr x2 = make_variable({4, 4}, "b");
  Problem p;
  FunctionTerm t;
  t.kind = FunctionKind::SumSquares;
  t.arg = x1;
  FunctionTerm u = t;
  u.arg = x2;
  p.terms = {make_term(t), make_term(u)};
  EXPECT_EQ(print_text(p),
            "b = variable(4, 4)\n"
            "b_1 = variable(4, 4)\n"
            "minimize sum_squares(b)\n"
            "    + sum_squares(b_1)\n");
}

TEST(Printer, SharedSubexpressionPrintsOnceAsABinding) {
  Problem p = parse(
                  "u = variable(8, 8)\n"
                  "minimize norm1(grad(u)) + group_norm1(grad(u), [2])\n")
                  .problem;
  // Two separate grad nodes: each printed inline.
  EXPECT_THAT(print_text(p), HasSubstr("norm1(grad(u))"));
  Problem q = parse(
                  "u = variable(8, 8)\n"
                  "g = grad(u)\n"
                  "minimize norm1(g) + group_norm1(g, [2])\n")
                  .problem;
  EXPECT_EQ(print_text(q),
            "u = variable(8, 8)\n"
            "g = grad(u)\n"
            "minimize norm1(g)\n"
            "    + group_norm1(g, [2])\n");
}

TEST(Printer, UnnamedSharedNodesAreNumberedInProgramOrder) {
  Expr x = make_variable({4, 4}, "x");
  Expr g = make_grad(x);
  Expr h = make_scale(2, x);
  Problem p;
  auto term = [](FunctionKind k, Expr e) {
    FunctionTerm t;
    t.kind = k;
    t.arg = e;
    return make_term(t);
  };
  p.terms = {term(FunctionKind::Norm1, g), term(FunctionKind::SumSquares, h), term(FunctionKind::Norm1, g),
             term(FunctionKind::Nonneg, h)};
  EXPECT_EQ(print_text(p),
            "x = variable(4, 4)\n"
            "e = grad(x)\n"
            "e_1 = 2 * x\n"
            "minimize norm1(e)\n"
            "    + sum_squares(e_1)\n"
            "    + norm1(e)\n"
            "    + nonneg(e_1)\n");
  expect_round_trip(print_text(p));
}

TEST(Printer, ParenthesesFollowPrecedence) {
  const char* cases[] = {
      "x = variable(3, 3)\nminimize sum_squares(x - (x + x))\n",
      "x = variable(3, 3)\nminimize sum_squares(2 * (3 * x))\n",
      "x = variable(3, 3)\nminimize sum_squares(-(2 * x))\n",
      "x = variable(3, 3)\nminimize sum_squares(-(-x))\n",
      "x = variable(3, 3)\nminimize sum_squares(x - -2.5 * x)\n",
      "x = variable(3, 3)\nminimize sum_squares(-2.5 * x + -0.5)\n",
      "x = variable(3, 3)\nminimize sum_squares(0.5 - x - x)\n",
      "x = variable(3, 3)\nminimize sum_squares(2 * (x - x) / 4)\n",
  };
  for (const char* c : cases) expect_round_trip(c);
  Problem p = parse(cases[0]).problem;
  EXPECT_THAT(print_text(p), HasSubstr("sum_squares(x - (x + x))"));
  EXPECT_THAT(print_text(parse(cases[1]).problem), HasSubstr("2 * (3 * x)"));
  EXPECT_THAT(print_text(parse(cases[2]).problem), HasSubstr("-(2 * x)"));
}

TEST(Printer, FloatsPrintSoTheyParseBackExactly) {
  Problem p = parse("x = variable(3)\nminimize 0.1 * norm1(x, beta=0.30000000000000004, b=1e-300, d=1/3)\n").problem;
  std::string s = print_text(p);
  EXPECT_THAT(s, HasSubstr("0.1 * norm1(x, beta=0.30000000000000004, b=1e-300, d=0.3333333333333333)"));
  expect_round_trip(s);
}

TEST(Printer, EveryOperatorAndFunctionRoundTrips) {
  expect_round_trip(
      "x = variable(6, 8)\n"
      "c = variable(6, 8, 3)\n"
      "H = array([3, 3], [1, 0, 0.5, 0, 1, -0.25, 0, 0, 1])\n"
      "M = array([3, 3], [1, 0, 0, 0, 1, 0, 0, 0, 1])\n"
      "w = array([6, 8], [" +
      [] {
        std::string s;
        for (int i = 0; i < 48; ++i) s += (i ? ", " : "") + std::to_string(i % 5);
        return s;
      }() +
      "])\n"
      "minimize sum_squares(conv(gaussian([3, 5], 0.7), x) - x, alpha=2, beta=-0.8, b=0.25, c=-0.1, gamma=0.05, d=1)\n"
      "  + norm1(subsample(x, [2, 3]))\n"
      "  + group_norm1(grad(c, dims=2), [2, 3])\n"
      "  + nonneg(mul_elemwise(w, x))\n"
      "  + poisson_norm(x, w, b=w)\n"
      "  + sum_entries(vstack([x, grad(x)]))\n"
      "  + box(reshape(transpose(x, [1, 0]), [48]), lower=-1, upper=inf)\n"
      "  + sum_squares(crop(x, [1, 2], [3, 4]))\n"
      "  + sum_squares(mul_color(c, \"yuv\") + mul_color(c, M))\n"
      "  + sum_squares(warp(x, H))\n");
}

TEST(BlackBox, RoundTripsThroughTextAndJson) {
  test::register_test_black_boxes();
  expect_round_trip(
      "x = variable(6, 8)\n"
      "minimize sum_squares(black_box(\"shift_blur\", x) - x) + norm1(black_box(\"pool2\", grad(x)))\n");
  Problem p = parse("x = variable(6, 8, 3)\nminimize sum_squares(black_box(\"pool2\", x))\n").problem;
  EXPECT_EQ(p.terms[0].arg->shape, Shape({3, 4, 3}));  // from the operator's output_shape
  EXPECT_THAT(print_json(p), HasSubstr("\"operator\": \"pool2\""));
  EXPECT_THAT(print_latex(p), HasSubstr("\\mathrm{pool2}("));
}

TEST(BlackBox, UnknownOperatorsAndRejectedShapesAreErrorsWithALocation) {
  test::register_test_black_boxes();
  EXPECT_THAT(test::user_error_of([] { parse("x = variable(4, 4)\nminimize norm1(black_box(\"nope\", x))\n"); }),
              HasSubstr("test.prox:2:16: error: black_box: no operator is registered as \"nope\""));
  EXPECT_THAT(test::user_error_of([] { parse("x = variable(5, 4)\nminimize norm1(black_box(\"pool2\", x))\n"); }),
              HasSubstr("black_box pool2: the operator does not accept an operand of shape (5, 4)"));
  EXPECT_THAT(test::user_error_of([] { parse("x = variable(4, 4)\nminimize norm1(black_box(pool2, x))\n"); }),
              HasSubstr("test.prox:2:26:"));
  // JSON that names an operator this process lacks.
  Problem p = parse("x = variable(4, 4)\nminimize norm1(black_box(\"shift_blur\", x))\n").problem;
  std::string j = print_json(p);
  j.replace(j.find("\"shift_blur\""), 12, "\"shift_blux\"");
  EXPECT_THAT(test::user_error_of([&] { parse_json(j, "t.json", "."); }),
              HasSubstr("no operator is registered as \"shift_blux\""));
}

TEST(BlackBox, RegistryRules) {
  test::register_test_black_boxes();
  const proxc_black_box* blur = proxc_find_black_box("shift_blur");
  ASSERT_NE(blur, nullptr);
  EXPECT_EQ(proxc_find_black_box_by_id(proxc_black_box_id("shift_blur")), blur);
  EXPECT_EQ(proxc_register_black_box(blur), 0);  // the same operator again
  proxc_black_box other = *blur;
  other.norm_bound = 3;
  EXPECT_EQ(proxc_register_black_box(&other), 3);  // the name is taken
  other.name = "9lives";
  EXPECT_EQ(proxc_register_black_box(&other), 1);
  other.name = "no_adjoint";
  other.adjoint = nullptr;
  EXPECT_EQ(proxc_register_black_box(&other), 2);
  EXPECT_EQ(proxc_find_black_box("no_adjoint"), nullptr);
}

// A prox function of the user's is written by its registered name with every
// declared parameter (defaults too), reads back from text and JSON, and is a
// named function in LaTeX and dot.
TEST(ProxFn, RoundTripsThroughTextAndJson) {
  test::register_test_black_boxes();
  expect_round_trip(
      "x = variable(6, 8)\n"
      "minimize sum_squares(x) + 0.5 * soft_threshold(grad(x), beta=2, b=0.1) + clamp01(x, hi=0.75)\n");
  Problem p = parse("x = variable(6, 8)\nminimize 2 * soft_threshold(x - 1, gamma=0.5)\n").problem;
  EXPECT_THAT(print_text(p), HasSubstr("minimize 2 * soft_threshold(x - 1, scale=1, gamma=0.5)"));
  EXPECT_THAT(print_json(p), HasSubstr("\"function\": \"prox_fn\""));
  EXPECT_THAT(print_json(p), HasSubstr("\"name\": \"soft_threshold\""));
  EXPECT_THAT(print_latex(p), HasSubstr("2\\, \\mathrm{soft\\_threshold}\\left(\\mathrm{x} - 1\\right)"));
  EXPECT_THAT(print_dot(p), HasSubstr("label=\"2 * soft_threshold\""));
  // JSON: parameters left out take their defaults; unknown ones and
  // unregistered names are errors.
  std::string j = print_json(p);
  std::string no_params = j;
  no_params.replace(no_params.find("\"scale\": 1.0"), 12, "");
  EXPECT_EQ(print_text(parse_json(no_params, "t.json", ".")), print_text(p));
  std::string bad = j;
  bad.replace(bad.find("\"scale\""), 7, "\"sclae\"");
  EXPECT_THAT(test::user_error_of([&] { parse_json(bad, "t.json", "."); }),
              HasSubstr("soft_threshold has no parameter \"sclae\""));
  bad = j;
  bad.replace(bad.find("\"soft_threshold\""), 16, "\"soft_threshole\"");
  EXPECT_THAT(test::user_error_of([&] { parse_json(bad, "t.json", "."); }),
              HasSubstr("no prox function named \"soft_threshole\" is registered in this program"));
}

TEST(ProxFn, RegistryRules) {
  test::register_test_black_boxes();
  const proxc_prox_fn* soft = proxc_find_prox_fn("soft_threshold");
  ASSERT_NE(soft, nullptr);
  EXPECT_EQ(proxc_find_prox_fn_by_id(proxc_prox_fn_id("soft_threshold")), soft);
  EXPECT_NE(proxc_prox_fn_id("x"), proxc_black_box_id("x"));
  EXPECT_EQ(proxc_register_prox_fn(soft), 0);  // the same function again
  proxc_prox_fn other = *soft;
  const double two[] = {2.0};
  other.param_defaults = two;
  EXPECT_EQ(proxc_register_prox_fn(&other), 3);  // the name is taken
  other.name = "9lives";
  EXPECT_EQ(proxc_register_prox_fn(&other), 1);
  other.name = "no_prox";
  other.prox = nullptr;
  EXPECT_EQ(proxc_register_prox_fn(&other), 2);
  other.prox = soft->prox;
  const char* const reserved[] = {"gamma"};
  other.param_names = reserved;
  EXPECT_EQ(proxc_register_prox_fn(&other), 4);
  const char* const names[] = {"a"};
  const double inf[] = {INFINITY};
  other.param_names = names;
  other.param_defaults = inf;
  EXPECT_EQ(proxc_register_prox_fn(&other), 4);
  other.num_params = PROXC_PROX_FN_MAX_PARAMS + 1;
  EXPECT_EQ(proxc_register_prox_fn(&other), 4);
  EXPECT_EQ(proxc_find_prox_fn("no_prox"), nullptr);
}

TEST(Json, RecordsPassesAndLoadsThemBack) {
  Problem p = parse("x = variable(3)\nminimize norm1(x)\n").problem;
  p.passes_run = {"absorb", "merge"};
  Problem q = parse_json(print_json(p), "t.json", ".");
  EXPECT_EQ(q.passes_run, p.passes_run);
}

TEST(Json, InlineConstantsOption) {
  Problem p = parse("x = variable(2)\nb = array([2], [0.5, 2])\nminimize sum_squares(x - b)\n").problem;
  std::string j = print_json(p);
  EXPECT_THAT(j, HasSubstr("\"type\": \"inline\""));
  EXPECT_EQ(print_text(parse_json(j, "t.json", ".")), print_text(p));
}

TEST(Dot, ListsNodesEdgesAndTerms) {
  Problem p = parse("x = variable(3, 3)\ng = grad(x)\nminimize norm1(g) + 2 * sum_squares(g)\n").problem;
  std::string d = print_dot(p);
  EXPECT_THAT(d, HasSubstr("digraph problem {"));
  EXPECT_THAT(d, HasSubstr("n0 -> n1;"));
  EXPECT_THAT(d, HasSubstr("label=\"2 * sum_squares\""));
}

TEST(Latex, WritesTheObjective) {
  Problem p = parse("b = array([2, 2], [1, 2, 3, 4])\nx = variable(2, 2)\n"
                    "minimize sum_squares(x - b) + 1e-3 * group_norm1(grad(x), [2]) + nonneg(x)\n")
                  .problem;
  std::string s = print_latex(p);
  EXPECT_THAT(s, HasSubstr("\\min_{\\mathrm{x}}"));
  EXPECT_THAT(s, HasSubstr("\\left\\| \\mathrm{x} - \\mathrm{b} \\right\\|_2^2"));
  EXPECT_THAT(s, HasSubstr("0.001\\, \\left\\| \\nabla \\mathrm{x} \\right\\|_{2,1"));
  EXPECT_THAT(s, HasSubstr("\\iota_{\\geq 0}"));
}

}  // namespace
}  // namespace proxc::internal
