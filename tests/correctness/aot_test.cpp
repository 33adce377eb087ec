// Ahead-of-time compilation: the static library + header of a step program,
// linked into a plain C++ program with no proxc and no LLVM, gives the JIT's
// results; so does the library that the printed generator source (built with
// the system compiler against Halide and proxc/halide_ops.h) writes.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "halide/halide_backend.h"
#include "io/npy.h"
#include "ir/expr.h"
#include "step/step.h"
#include "support/file_util.h"
#include "test_black_boxes.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

// A program with a stencil, a prox, a reduction and an FFT solve; its JIT
// results; and a tiny C++ driver that calls an AOT library of it.
struct AotCase {
  std::string dir = test::temp_dir();
  std::shared_ptr<ConstantData> kd = std::make_shared<ConstantData>();
  StepProgram p;
  Array xv{Shape{12, 10}};
  StepOutputs jit;

  AotCase() {
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(0, 1);
    kd->array = Array(Shape{3, 3});
    for (float& v : kd->array.data) v = u(rng);
    kd->source.type = ConstantSource::Type::Inline;
    Expr k = make_constant(kd, "k");
    Expr x = make_variable({12, 10}, "x");
    FunctionTerm t;
    t.kind = FunctionKind::Norm1;
    t.arg = make_grad(x);
    t.alpha = 0.3;
    t = make_term(t);
    Step in = step_input("x", {12, 10});
    p.name = "aot";
    Step z = step_prox(t, step_forward(t.arg, {in}), step_param("rho"));
    p.outputs = {{"z", z},
                 {"n", step_reduce(StepKind::SumSquares, z)},
                 {"s", step_circulant_solve(k, in, step_constant(0.5), step_param("rho"))}};
    for (float& v : xv.data) v = u(rng) - 0.5f;
    StepInputs inputs;
    inputs.buffers["x"] = &xv;
    inputs.params["rho"] = 1.7;
    jit = make_halide_backend()->compile(p)->run(inputs);

    test::write_text(dir + "/main.cpp", R"(
#include <cstdio>
#include <cstring>
#include <vector>
#include "HalideBuffer.h"
#include "proxc_aot_test_call.h"
int main(int argc, char** argv) {
  std::vector<float> x(120), spec(12 * 6);
  FILE* f = std::fopen(argv[1], "rb");
  if (!f || std::fread(x.data(), 4, 120, f) != 120 || std::fread(spec.data(), 4, 72, f) != 72) return 2;
  std::fclose(f);
  Halide::Runtime::Buffer<float> in(x.data(), 10, 12), sp(spec.data(), 6, 12), z(2, 10, 12), s(10, 12);
  Halide::Runtime::Buffer<double> n = Halide::Runtime::Buffer<double>::make_scalar();
  // (For a GPU target: the inputs are new in host memory, the outputs come back from the device.)
  in.set_host_dirty();
  sp.set_host_dirty();
  if (proxc_aot_test_call(in, 1.7, sp, z, n, s) != 0) return 3;
  if (z.copy_to_host() != 0 || s.copy_to_host() != 0 || n.copy_to_host() != 0) return 4;
  FILE* o = std::fopen(argv[2], "wb");
  std::fwrite(z.data(), 4, 240, o);
  std::fwrite(s.data(), 4, 120, o);
  double nv = n();
  std::fwrite(&nv, 8, 1, o);
  std::fclose(o);
  return 0;
}
)");
    // Its inputs: x, then the kernel's |otf|² spectrum (the manifest's "spectrum" argument).
    std::string inbin(reinterpret_cast<const char*>(xv.data.data()), 120 * 4);
    Array spectrum = kernel_spectrum(kd->array, {12, 10});
    EXPECT_EQ(spectrum.shape, Shape({12, 6}));
    inbin.append(reinterpret_cast<const char*>(spectrum.data.data()), 72 * 4);
    test::write_text(dir + "/in.bin", inbin);
  }

  // Builds the driver against `library` (with the headers in `include_dirs`),
  // runs it and compares with the JIT: the same bits for the same CPU, the
  // FFT solve within float rounding; within `tolerance` for another target.
  void link_run_and_compare(const std::string& library, const std::string& include_dirs, double tolerance = 0) {
    std::string cmd = "g++ -std=c++17 -O1 -o " + test::shell_quote(dir + "/main") + " " +
                      test::shell_quote(dir + "/main.cpp") + " " + include_dirs + " -I" PROXC_HALIDE_INCLUDE " " +
                      test::shell_quote(library) + " " PROXC_RUNTIME_LIB " -lfftw3f_threads -lfftw3f -lpthread -ldl 2>&1";
    auto build = test::run_command(cmd);
    ASSERT_EQ(build.exit_code, 0) << cmd << "\n" << build.out;
    // The program links no proxc library but the FFT runtime, and no LLVM.
    auto ldd = test::run_command("ldd " + test::shell_quote(dir + "/main"));
    EXPECT_THAT(ldd.out, ::testing::Not(::testing::HasSubstr("LLVM")));
    EXPECT_THAT(ldd.out, ::testing::Not(::testing::HasSubstr("Halide")));
    auto run = test::run_command(test::shell_quote(dir + "/main") + " " + test::shell_quote(dir + "/in.bin") + " " +
                                 test::shell_quote(dir + "/out.bin") + " 2>&1");
    ASSERT_EQ(run.exit_code, 0) << run.out;
    std::string out = read_file(dir + "/out.bin");
    ASSERT_EQ(out.size(), 360u * 4 + 8);
    const float* zo = reinterpret_cast<const float*>(out.data());
    // The same pipeline for the same CPU: the same bits, but for the FFT
    // solve, whose FFTW plans may differ between processes.
    for (size_t i = 0; i < 240; ++i) EXPECT_NEAR(zo[i], jit.arrays.at("z").data[i], tolerance) << "z " << i;
    for (size_t i = 0; i < 120; ++i)
      EXPECT_NEAR(zo[240 + i], jit.arrays.at("s").data[i], std::max(1e-6, tolerance)) << "s " << i;
    double nv;
    std::memcpy(&nv, out.data() + 360 * 4, 8);
    EXPECT_NEAR(nv, jit.scalars.at("n"), tolerance * std::fabs(jit.scalars.at("n")));
  }
};

TEST(Aot, LinkedLibraryMatchesTheJit) {
  AotCase c;
  AotArtifacts a = halide_compile_aot(c.p, c.dir, "proxc_aot_test");
  EXPECT_TRUE(a.needs_fft_runtime);
  c.link_run_and_compare(a.library, "-I" + test::shell_quote(c.dir));
  // The manifest lists every argument in order.
  std::string manifest = read_file(a.manifest);
  EXPECT_THAT(manifest, ::testing::HasSubstr("\"kind\": \"spectrum\""));
  EXPECT_THAT(manifest, ::testing::HasSubstr("\"name\": \"rho\", \"kind\": \"param\""));
}

// The same program for OpenCL (PoCL here): the library holds the kernels and
// its FFT solve runs on the device through libproxc_runtime's clFFT stages
// (loaded with dlopen: the driver links nothing more than on the CPU).
TEST(Aot, OpenClLibraryWithDeviceFftStagesMatchesTheJit) {
  AotCase c;
  HalideOptions o;
  o.target = "host-opencl";
  AotArtifacts a = halide_compile_aot(c.p, c.dir, "proxc_aot_test", o);
  EXPECT_TRUE(a.needs_fft_runtime);
  EXPECT_THAT(test::run_command("nm " + test::shell_quote(a.library)).out,
              ::testing::HasSubstr("U proxc_fft_r2c_device"));
  c.link_run_and_compare(a.library, "-I" + test::shell_quote(c.dir), 1e-5);
}

TEST(Aot, GeneratorSourceBuildsTheSamePipeline) {
  AotCase c;
  std::string src = halide_emit(c.p, "source");
  // The file says how to build it, and builds through proxc's op library.
  EXPECT_THAT(src, ::testing::StartsWith("// aot: "));
  EXPECT_THAT(src, ::testing::HasSubstr("c++ -std=c++17"));
  EXPECT_THAT(src, ::testing::HasSubstr("#include \"proxc/halide_ops.h\""));
  EXPECT_THAT(src, ::testing::HasSubstr("g.grad("));
  EXPECT_THAT(src, ::testing::HasSubstr("g.circulant_solve("));
  std::string gen_dir = c.dir + "/gen";
  std::filesystem::create_directories(gen_dir);
  test::write_text(gen_dir + "/aot_generator.cpp", src);
  std::string cmd = "g++ -std=c++17 -O0 -o " + test::shell_quote(gen_dir + "/generator") + " " +
                    test::shell_quote(gen_dir + "/aot_generator.cpp") + " -I" PROXC_SOURCE_DIR "/src/halide/ops -I" PROXC_SOURCE_DIR "/include -I" PROXC_HALIDE_INCLUDE
                    " " PROXC_HALIDE_LIBRARY " -Wl,-rpath," +
                    std::filesystem::path(PROXC_HALIDE_LIBRARY).parent_path().string() + " -lpthread -ldl 2>&1";
  auto build = test::run_command(cmd);
  ASSERT_EQ(build.exit_code, 0) << cmd << "\n" << build.out;
  auto gen = test::run_command(test::shell_quote(gen_dir + "/generator") + " " + test::shell_quote(gen_dir) +
                               " proxc_aot_test 2>&1");
  ASSERT_EQ(gen.exit_code, 0) << gen.out;
  // The wrapper that binds the scalars and sizes comes from compile_aot (in
  // its own folder); the library and its header from the generator.
  std::string aot_dir = c.dir + "/aot";
  halide_compile_aot(c.p, aot_dir, "proxc_aot_test");
  std::remove((aot_dir + "/proxc_aot_test.h").c_str());
  c.link_run_and_compare(gen_dir + "/proxc_aot_test.a", "-I" + test::shell_quote(gen_dir) + " -I" + test::shell_quote(aot_dir));
  // Without arguments the generator says how to call it.
  auto usage = test::run_command(test::shell_quote(gen_dir + "/generator") + " 2>&1");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.out, ::testing::HasSubstr("usage:"));
}

// A pipeline that calls a user black box, compiled ahead of time: the plain
// C++ program registers the operator itself (the test's black-box source,
// as a user would) and links the extern runtime; it matches the JIT.
TEST(Aot, BlackBoxPipelineLinksIntoAPlainProgram) {
  test::register_test_black_boxes();
  std::string dir = test::temp_dir();
  Expr x = make_variable({6, 8}, "x");
  Expr k = make_grad(make_black_box("shift_blur", x));
  StepProgram p;
  p.name = "aot_bb";
  p.outputs = {{"f", step_forward(k, {step_input("x", {6, 8})})}, {"a", step_adjoint(k, 0, step_input("y", {6, 8, 2}))}};
  Array xv(Shape{6, 8}), yv(Shape{6, 8, 2});
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : xv.data) v = u(rng);
  for (float& v : yv.data) v = u(rng);
  StepInputs in;
  in.buffers["x"] = &xv;
  in.buffers["y"] = &yv;
  StepOutputs jit = make_halide_backend()->compile(p)->run(in);
  AotArtifacts a = halide_compile_aot(p, dir, "proxc_aot_bb");
  EXPECT_EQ(a.black_boxes, std::vector<std::string>({"shift_blur"}));
  EXPECT_THAT(read_file(a.wrapper), ::testing::HasSubstr("proxc::runtime"));
  EXPECT_THAT(read_file(a.manifest), ::testing::HasSubstr("\"black_boxes\": [\"shift_blur\"]"));
  test::write_text(dir + "/main.cpp", R"(
#include <cstdio>
#include "HalideBuffer.h"
#include "proxc/black_box.h"
#include "proxc_aot_bb_call.h"
extern "C" int proxc_plugin_init(proxc_register_black_box_fn);
int main() {
  if (proxc_plugin_init(proxc_register_black_box) != 0) return 2;
  float x[48], y[96];
  if (std::fread(x, 4, 48, stdin) != 48 || std::fread(y, 4, 96, stdin) != 96) return 3;
  Halide::Runtime::Buffer<float> bx(x, 8, 6), by(y, 2, 8, 6), f(2, 8, 6), a(8, 6);
  if (proxc_aot_bb_call(bx, by, f, a) != 0) return 4;
  std::fwrite(f.data(), 4, 96, stdout);
  std::fwrite(a.data(), 4, 48, stdout);
  return 0;
}
)");
  std::string cmd = "g++ -std=c++17 -O1 -o " + test::shell_quote(dir + "/main") + " " +
                    test::shell_quote(dir + "/main.cpp") + " " PROXC_SOURCE_DIR "/tests/plugin/test_black_boxes.cpp -I" +
                    test::shell_quote(dir) + " -I" PROXC_SOURCE_DIR "/src/halide/ops -I" PROXC_SOURCE_DIR "/include -I" PROXC_HALIDE_INCLUDE " " +
                    test::shell_quote(a.library) + " " PROXC_RUNTIME_LIB " " PROXC_BLACK_BOX_LIB
                    " -lfftw3f_threads -lfftw3f -lpthread -ldl 2>&1";
  auto build = test::run_command(cmd);
  ASSERT_EQ(build.exit_code, 0) << cmd << "\n" << build.out;
  std::string inbin(reinterpret_cast<const char*>(xv.data.data()), 48 * 4);
  inbin.append(reinterpret_cast<const char*>(yv.data.data()), 96 * 4);
  test::write_text(dir + "/in.bin", inbin);
  auto run = test::run_command(test::shell_quote(dir + "/main") + " < " + test::shell_quote(dir + "/in.bin") + " > " +
                               test::shell_quote(dir + "/out.bin"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::string out = read_file(dir + "/out.bin");
  ASSERT_EQ(out.size(), 144u * 4);
  const float* o = reinterpret_cast<const float*>(out.data());
  for (size_t i = 0; i < 96; ++i) EXPECT_EQ(o[i], jit.arrays.at("f").data[i]) << "f " << i;
  for (size_t i = 0; i < 48; ++i) EXPECT_EQ(o[96 + i], jit.arrays.at("a").data[i]) << "a " << i;
}

}  // namespace
}  // namespace proxc::internal
