// For every solve case of ../shared/conformance/, the default pipeline gives
// exactly the split and Knorm that ProxImaL recorded in proximal_internals.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "frontend/parser.h"
#include "ir/printer.h"
#include "pipeline/pipeline.h"
#include "support/file_util.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using Json = nlohmann::json;

std::vector<Json> solve_cases() {
  std::vector<Json> out;
  for (const auto& c : Json::parse(read_file(test::conformance_dir() + "/cases.json"))) {
    if (c["kind"] == "solve") out.push_back(c);
  }
  return out;
}

// ProxImaL writes the scaled operator as "0.333333333 * grad(x)": a factor
// printed with 9 digits, then the operator.
void expect_operator(const Expr& got, const std::string& want, double knorm_scaled) {
  auto star = want.find(" * ");
  if (star != std::string::npos && std::isdigit(static_cast<unsigned char>(want[0]))) {
    ASSERT_EQ(got->kind, ExprKind::Scale) << print_expression(got);
    EXPECT_NEAR(got->scalar, std::stod(want.substr(0, star)), 1e-9);
    EXPECT_EQ(got->scalar, 1.0 / knorm_scaled);
    EXPECT_EQ(print_expression(got->args[0]), want.substr(star + 3));
  } else {
    EXPECT_EQ(print_expression(got), want);
  }
}

void expect_term(const FunctionTerm& t, const Json& w, double knorm) {
  EXPECT_EQ(to_string(t.kind), w["fn"].get<std::string>());
  expect_operator(t.arg, w["operator"], knorm);
  EXPECT_EQ(t.alpha, w["alpha"].get<double>());
  EXPECT_EQ(t.beta, w["beta"].get<double>());
  EXPECT_EQ(t.gamma, w["gamma"].get<double>());
  if (w["b"].is_string()) {
    ASSERT_TRUE(t.b.is_array());
    EXPECT_EQ(t.b.array->name_hint, w["b"].get<std::string>());
  } else {
    EXPECT_TRUE(t.b.is_scalar(w["b"].get<double>()));
  }
  if (w.contains("axes")) {
    EXPECT_EQ(t.axes, w["axes"].get<std::vector<int64_t>>());
  }
}

TEST(SplitCases, DefaultPipelineReproducesProxImaLsSplitAndKnorm) {
  auto cases = solve_cases();
  ASSERT_EQ(cases.size(), 10u);
  for (const Json& c : cases) {
    SCOPED_TRACE(c["id"].get<std::string>());
    Problem p = parse_program(c["problem"], "case.prox", test::conformance_dir()).problem;
    PassManagerOptions o;
    o.pass.solver = c["solver"];
    o.verify_each = true;
    Problem out = run_passes(p, o);
    const Json& in = c["proximal_internals"];
    EXPECT_EQ(out.knorm, in["Knorm"].get<double>());
    std::vector<const FunctionTerm*> psi, omega;
    for (const FunctionTerm& t : out.terms) (t.role == TermRole::Psi ? psi : omega).push_back(&t);
    ASSERT_EQ(psi.size(), in["psi"].size());
    ASSERT_EQ(omega.size(), in["omega"].size());
    for (size_t i = 0; i < psi.size(); ++i) expect_term(*psi[i], in["psi"][i], out.knorm);
    for (size_t i = 0; i < omega.size(); ++i) expect_term(*omega[i], in["omega"][i], out.knorm);
  }
}

}  // namespace
}  // namespace proxc::internal
