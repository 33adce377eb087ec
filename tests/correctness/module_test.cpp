// proxc::internal::Module: one solver iteration of a problem runs compiled and
// emulated with the same results, prints its source, compiles ahead of time.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <filesystem>
#include <random>

#include "frontend/load.h"
#include "module/module.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

TEST(Module, RunAndEmulateAgreeOnASolverIteration) {
  Problem p = load_problem(test::source_dir() + "/examples/deconv_tv.prox");
  SolverOptions so;
  so.solver = "pc";
  Module m = Module::for_problem(p, so);
  EXPECT_EQ(m.program().name, "pc_iteration");
  // Random state for every input, 0.5 for every parameter.
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<float> u(0, 1);
  std::deque<Array> state;
  StepInputs in;
  for (const Step& n : m.program().nodes()) {
    if (n->kind == StepKind::Input && !in.buffers.count(n->name)) {
      state.emplace_back(n->shape);
      for (float& v : state.back().data) v = u(rng);
      in.buffers[n->name] = &state.back();
    } else if (n->kind == StepKind::Param) {
      in.params[n->name] = 0.5;
    }
  }
  StepOutputs h = m.run(in), e = m.emulate(in);
  ASSERT_EQ(h.arrays.size(), e.arrays.size());
  // One iteration: K, Kᵀ (7×7 kernel: W ≈ 50 float roundings per entry), the
  // proxes and the updates, in float against double: 1e-4 relative to the
  // largest entry bounds 50·eps32 with margin for the prox's divisions.
  for (const auto& [name, ea] : e.arrays) {
    const Array& ha = h.arrays.at(name);
    ASSERT_EQ(ha.shape, ea.shape) << name;
    double scale = 1, worst = 0;
    for (size_t i = 0; i < ea.data.size(); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(ea.data[i])));
      worst = std::max(worst, std::fabs(static_cast<double>(ha.data[i]) - ea.data[i]));
    }
    EXPECT_LE(worst, 1e-4 * scale) << name;
  }
  for (const auto& [name, ev] : e.scalars) EXPECT_NEAR(h.scalars.at(name), ev, 1e-4 * (1 + std::fabs(ev))) << name;
  EXPECT_EQ(m.schedule_used(), "default");
}

TEST(Module, PrintsItsSourceAndCompilesAheadOfTime) {
  Problem p = load_problem(test::source_dir() + "/examples/inpaint.prox");
  SolverOptions so;
  so.solver = "ladmm";
  Module m = Module::for_problem(p, so);
  std::string src = m.source();
  EXPECT_THAT(src, ::testing::StartsWith("// ladmm_iteration: a proxc step program as a standalone Halide generator."));
  EXPECT_THAT(src, ::testing::HasSubstr("g.binary(\"mul\""));  // the mask
  EXPECT_EQ(m.emit("source"), src);
  EXPECT_THAT(m.emit("step"), ::testing::HasSubstr("step ladmm_iteration {"));
  std::string dir = test::temp_dir();
  AotArtifacts a = m.compile_aot(dir, "inpaint_step");
  EXPECT_TRUE(std::filesystem::exists(a.library));
  EXPECT_TRUE(std::filesystem::exists(a.header));
  EXPECT_FALSE(a.needs_fft_runtime);
  EXPECT_THROW(Module(m.program(), HalideOptions{"host", "fastest", ""}), UserError);
}

}  // namespace
}  // namespace proxc::internal
