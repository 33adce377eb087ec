// Every solve case of ../shared/conformance/: ProxImaL's x after exactly 50
// iterations of pc, ladmm or admm (its split and scaling, which the default
// passes reproduce) is reproduced within the case's tolerance (1e-4 on every
// entry, 1e-5 relative on the objective), on both backends, and with the GPU
// schedule on OpenCL (PoCL runs it on this machine's CPU), the state kept on
// the device from run to run.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "frontend/parser.h"
#include "halide/halide_backend.h"
#include "io/npy.h"
#include "pipeline/solve.h"
#include "support/file_util.h"
#include "gpu_backend.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using Json = nlohmann::json;

struct SolveCase {
  Json json;
  std::string backend;
};

std::vector<SolveCase> solve_cases() {
  std::vector<SolveCase> out;
  for (const auto& c : Json::parse(read_file(test::conformance_dir() + "/cases.json"))) {
    if (c["kind"] != "solve") continue;
    out.push_back({c, "emulate"});
    out.push_back({c, "halide"});
    out.push_back({c, "opencl"});
  }
  return out;
}

class SolveCaseTest : public ::testing::TestWithParam<SolveCase> {};

TEST_P(SolveCaseTest, ReproducesProxImaLsIterate) {
  const Json& c = GetParam().json;
  static std::unique_ptr<Backend> emulate = make_emulate_backend();
  static std::unique_ptr<Backend> halide = make_halide_backend();
  Backend& backend = GetParam().backend == "halide"   ? *halide
                     : GetParam().backend == "opencl" ? test::gpu_backend()
                                                      : *emulate;
  if (GetParam().backend == "opencl") {
    ASSERT_TRUE(test::runs_on_gpu(backend.target_used()));
  }
  Problem p = parse_program(c["problem"], "case.prox", test::conformance_dir()).problem;
  SolverOptions o;
  o.solver = c["solver"];
  o.max_iters = c["max_iters"];
  o.eps_abs = c["eps_abs"];
  o.eps_rel = c["eps_rel"];
  SolveResult r = solve(p, o, backend);
  EXPECT_EQ(r.summary.iterations, 50);
  Array want = io::read_npy(test::conformance_dir() + "/" + c["output"].get<std::string>());
  const Array& got = r.x.at("x");
  ASSERT_EQ(got.shape, want.shape);
  const double abs_tol = c["tolerance"]["abs"], rel_tol = c["tolerance"]["rel"];
  double worst = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double d = std::fabs(static_cast<double>(got.data[i]) - want.data[i]);
    worst = std::max(worst, d - rel_tol * std::fabs(want.data[i]));
  }
  EXPECT_LE(worst, abs_tol) << "largest excess over the relative part";
  // The objective without the nonneg indicator, as the case computes it.
  Problem no_indicator = p;
  no_indicator.terms.erase(std::remove_if(no_indicator.terms.begin(), no_indicator.terms.end(),
                                          [](const FunctionTerm& t) { return t.kind == FunctionKind::Nonneg; }),
                           no_indicator.terms.end());
  double want_obj = c["objective_f64"];
  auto em = make_emulate_backend();
  ObjectiveReport obj = evaluate_objective(*em, no_indicator, {{no_indicator.variables()[0].get(), &got}});
  EXPECT_NEAR(obj.total, want_obj, c["tolerance"]["objective_rel"].get<double>() * std::fabs(want_obj));
}

INSTANTIATE_TEST_SUITE_P(Cases, SolveCaseTest, ::testing::ValuesIn(solve_cases()),
                         [](const ::testing::TestParamInfo<SolveCase>& info) {
                           return info.param.json["id"].get<std::string>() + "_" + info.param.backend;
                         });

}  // namespace
}  // namespace proxc::internal
