// Every linop_forward, linop_adjoint, prox and eval case of
// ../shared/conformance/ (numbers computed by ProxImaL) on the emulator, and
// every linop and prox case on the halide backend, within each case's stated
// tolerance: |got − expected| ≤ abs + rel·|expected|.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "emulate/emulate_backend.h"
#include "halide/halide_backend.h"
#include "frontend/parser.h"
#include "io/npy.h"
#include "step/step.h"
#include "support/file_util.h"
#include "gpu_backend.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using Json = nlohmann::json;

Json load_cases() { return Json::parse(read_file(test::conformance_dir() + "/cases.json")); }

Array read(const std::string& rel) { return io::read_npy(test::conformance_dir() + "/" + rel); }

struct Case {
  Json json;
  std::string id() const { return json["id"]; }
  std::string kind() const { return json["kind"]; }
};

std::vector<Case> cases_of(std::initializer_list<const char*> kinds) {
  std::vector<Case> out;
  for (const auto& c : load_cases()) {
    for (const char* k : kinds) {
      if (c["kind"] == k) out.push_back({c});
    }
  }
  return out;
}

std::string case_text(const Case& c) {
  std::string text = c.json["decls"].get<std::string>() + "\n";
  if (c.kind() == "linop_forward" || c.kind() == "linop_adjoint") {
    return text + "minimize sum_squares(" + c.json["expr"].get<std::string>() + ")\n";
  }
  return text + "minimize " + c.json["expr"].get<std::string>() + "\n";
}

Backend& backend_named(const std::string& name) {
  static std::unique_ptr<Backend> emulate = make_emulate_backend();
  static std::unique_ptr<Backend> halide = make_halide_backend();
  // The GPU schedule on OpenCL (PoCL runs it on this machine's CPU), or on $PROXC_TEST_GPU_TARGET.
  if (name == "opencl") return test::gpu_backend();
  return name == "halide" ? *halide : *emulate;
}

// Runs the case's computation as a step program on a backend.
StepOutputs run_case(const Case& c, Array* input, const std::string& backend = "emulate") {
  ParsedProgram prog = parse_program(case_text(c), c.id() + ".prox", test::conformance_dir());
  const FunctionTerm& term = prog.problem.terms[0];
  Expr x = prog.names.at(c.json["variable"]["name"].get<std::string>());
  StepProgram p;
  p.name = c.id();
  std::string in_name = c.kind() == "linop_forward" ? "x" : c.kind() == "linop_adjoint" ? "y" : "v";
  *input = read(c.json["inputs"][in_name].get<std::string>());
  Step in = step_input("in", input->shape);
  if (c.kind() == "linop_forward") p.outputs.push_back({"out", step_forward(term.arg, {in})});
  if (c.kind() == "linop_adjoint") p.outputs.push_back({"out", step_adjoint(term.arg, 0, in)});
  if (c.kind() == "prox") {
    p.outputs.push_back({"out", step_prox(term, in, step_constant(c.json["params"]["rho"].get<double>()))});
  }
  if (c.kind() == "eval") p.outputs.push_back({"out", step_value(term, in)});
  (void)x;
  StepInputs inputs;
  inputs.buffers["in"] = input;
  return backend_named(backend).compile(p)->run(inputs);
}

bool is_sum_entries_params(const Case& c) { return c.id().find("sum_entries_params") != std::string::npos; }

class ArrayCase : public ::testing::TestWithParam<Case> {};

void check_array_case(const Case& c, const std::string& backend) {
  Array input;
  StepOutputs out = run_case(c, &input, backend);
  const Array& got = out.arrays.at("out");
  Array want = read(c.json["output"].get<std::string>());
  ASSERT_EQ(got.shape, want.shape);
  ASSERT_EQ(got.shape, c.json["output_shape"].get<Shape>());
  const double abs_tol = c.json["tolerance"]["abs"], rel_tol = c.json["tolerance"]["rel"];
  if (is_sum_entries_params(c)) {
    // ProxImaL ignores alpha, beta and b for sum_entries; proxc honours them
    // (docs/semantics.md): prox = (rho v − alpha·beta)/(rho + 2 gamma) instead of
    // (rho v − 1)/(rho + 2 gamma). The case pins the difference exactly.
    const double rho = c.json["params"]["rho"], alpha = 0.7, beta = 1.3, gamma = 0.2;
    const double shift = (alpha * beta - 1) / (rho + 2 * gamma);
    for (size_t i = 0; i < want.data.size(); ++i) {
      ASSERT_NEAR(got.data[i], want.data[i] - shift, abs_tol + rel_tol * std::fabs(want.data[i])) << "entry " << i;
    }
    return;
  }
  int bad = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double e = want.data[i];
    if (std::fabs(got.data[i] - e) > abs_tol + rel_tol * std::fabs(e) && ++bad <= 5) {
      ADD_FAILURE() << c.id() << " entry " << i << ": got " << got.data[i] << ", expected " << e;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST_P(ArrayCase, MatchesProxImaLWithinTolerance) { check_array_case(GetParam(), "emulate"); }

class HalideArrayCase : public ::testing::TestWithParam<Case> {};

TEST_P(HalideArrayCase, MatchesProxImaLWithinTolerance) { check_array_case(GetParam(), "halide"); }

// The GPU schedule, on OpenCL: every operator and prox case within the
// case's tolerance (the device's float arithmetic, as the CPU's).
class OpenClArrayCase : public ::testing::TestWithParam<Case> {};

TEST_P(OpenClArrayCase, MatchesProxImaLWithinTolerance) {
  ASSERT_TRUE(test::runs_on_gpu(backend_named("opencl").target_used()));
  check_array_case(GetParam(), "opencl");
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.id(); }

INSTANTIATE_TEST_SUITE_P(Linop, ArrayCase, ::testing::ValuesIn(cases_of({"linop_forward", "linop_adjoint"})),
                         case_name);
INSTANTIATE_TEST_SUITE_P(Prox, ArrayCase, ::testing::ValuesIn(cases_of({"prox"})), case_name);
INSTANTIATE_TEST_SUITE_P(Linop, HalideArrayCase,
                         ::testing::ValuesIn(cases_of({"linop_forward", "linop_adjoint"})), case_name);
INSTANTIATE_TEST_SUITE_P(Prox, HalideArrayCase, ::testing::ValuesIn(cases_of({"prox"})), case_name);
INSTANTIATE_TEST_SUITE_P(Linop, OpenClArrayCase,
                         ::testing::ValuesIn(cases_of({"linop_forward", "linop_adjoint"})), case_name);
INSTANTIATE_TEST_SUITE_P(Prox, OpenClArrayCase, ::testing::ValuesIn(cases_of({"prox"})), case_name);

class EvalCase : public ::testing::TestWithParam<Case> {};

TEST_P(EvalCase, MatchesProxImaLWithinTolerance) {
  const Case& c = GetParam();
  Array input;
  double got = run_case(c, &input).scalars.at("out");
  const Json& e = c.json["expected"];
  if (e.is_string()) {
    ASSERT_EQ(e.get<std::string>(), "inf");
    EXPECT_EQ(got, INFINITY);
    return;
  }
  double want = e.get<double>();
  const double abs_tol = c.json["tolerance"]["abs"], rel_tol = c.json["tolerance"]["rel"];
  if (is_sum_entries_params(c)) {
    // proxc: 0.7·Σ(1.3 v − b) + gamma||v||² + d; ProxImaL: Σ v + gamma||v||² + d.
    Array b = read(c.json["constants"]["b"].get<std::string>());
    double diff = 0;
    for (size_t i = 0; i < input.data.size(); ++i) {
      diff += 0.7 * (1.3 * input.data[i] - b.data[i]) - input.data[i];
    }
    want += diff;
  }
  EXPECT_NEAR(got, want, abs_tol + rel_tol * std::fabs(want));
}

INSTANTIATE_TEST_SUITE_P(Eval, EvalCase, ::testing::ValuesIn(cases_of({"eval"})), case_name);

TEST(ConformanceCoverage, AllArrayAndEvalCasesAreRun) {
  EXPECT_EQ(cases_of({"linop_forward", "linop_adjoint", "prox", "eval"}).size(), 104u);
}

}  // namespace
}  // namespace proxc::internal
