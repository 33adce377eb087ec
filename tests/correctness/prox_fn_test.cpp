// Prox functions of the user's (include/proxc/prox_fn.h): a problem whose
// prior is a registered prox function solves on both backends, through the
// extern stage proxc_prox_fn_stage on halide, exactly as the same problem
// with the built-in function it reimplements; the objective uses its value
// callback or says it leaves the term out; failures are the user's errors;
// patch_NLM (OpenCV's non-local means with ProxImaL's meaning) denoises and
// deblurs as a plug-and-play prior.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "emulate/emulate_backend.h"
#include "emulate/prox.h"
#include "frontend/parser.h"
#include "frontend/plugin.h"
#include "halide/halide_backend.h"
#include "io/array_io.h"
#include "io/npy.h"
#include "pipeline/solve.h"
#include "test_black_boxes.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

Backend& emulator() {
  static std::unique_ptr<Backend> b = make_emulate_backend();
  return *b;
}
Backend& halide() {
  static std::unique_ptr<Backend> b = make_halide_backend();
  return *b;
}

double max_diff(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape, b.shape);
  double worst = 0;
  for (size_t i = 0; i < a.data.size(); ++i) worst = std::max(worst, std::fabs(double(a.data[i]) - b.data[i]));
  return worst;
}

// A problem over noisy data b (24 × 20, uniform in [0, 1)) with the given prior.
Problem with_prior(const std::string& dir, const std::string& prior) {
  return parse_program("b = load(\"b.npy\")\nx = variable(shape(b))\nminimize sum_squares(x - b) + " + prior + "\n",
                       dir + "/p.prox", dir)
      .problem;
}

std::string noisy_data_dir() {
  static const std::string dir = [] {
    std::string d = test::temp_dir();
    std::mt19937_64 rng(8);
    std::uniform_real_distribution<float> u(0, 1);
    Array b(Shape{24, 20});
    for (float& v : b.data) v = u(rng);
    io::write_npy(d + "/b.npy", b);
    return d;
  }();
  return dir;
}

SolverOptions iterations(const char* solver, int n) {
  SolverOptions o;
  o.solver = solver;
  o.max_iters = n;
  o.eps_abs = 0;
  o.eps_rel = 0;
  return o;
}

// soft_threshold(v, scale=s) is the prox of s·||v||₁: with every common
// parameter (alpha, beta, b, c, gamma) on top, a problem using it runs the
// iterations of the same problem written with norm1, on each solver and
// both backends. The only difference is where the threshold is computed
// (the callback in double, the built-in in float32 on halide), a rounding
// of the iterate each iteration; 40 iterations keep the two within 1e-5
// (x is in [0, 1]); a wrong rho, sign or parameter handed to the callback
// is off by more than 1e-2.
TEST(ProxFn, SolvesAsTheBuiltInItReimplements) {
  test::register_test_black_boxes();
  const std::string dir = noisy_data_dir();
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"0.1 * soft_threshold(grad(x), scale=0.5)", "0.05 * norm1(grad(x))"},
      {"0.3 * soft_threshold(grad(x), scale=0.5, beta=2, b=0.05, gamma=0.01)",
       "0.15 * norm1(grad(x), beta=2, b=0.05, gamma=0.01)"},
      {"soft_threshold(x, scale=0.2, c=0.1, d=3)", "0.2 * norm1(x, c=0.1, d=3)"},
  };
  for (const auto& [mine, builtin] : pairs) {
    Problem p = with_prior(dir, mine), q = with_prior(dir, builtin);
    for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
      for (Backend* be : {&emulator(), &halide()}) {
        SCOPED_TRACE(mine + std::string(", ") + solver + ", " + be->name());
        SolveResult r1 = solve(p, iterations(solver, 40), *be);
        SolveResult r2 = solve(q, iterations(solver, 40), *be);
        EXPECT_LE(max_diff(r1.x.at("x"), r2.x.at("x")), 1e-5);
        // The value callback gives the objective.
        EXPECT_NEAR(r1.summary.objective, r2.summary.objective, 1e-5 * std::fabs(r2.summary.objective));
        EXPECT_TRUE(r1.summary.objective_leaves_out.empty());
      }
    }
    // Halide (the extern stage) against the emulator on the same problem.
    SolveResult h = solve(p, iterations("pc", 40), halide());
    SolveResult e = solve(p, iterations("pc", 40), emulator());
    EXPECT_LE(max_diff(h.x.at("x"), e.x.at("x")), 1e-4) << mine;
  }
}

// A function without a value callback: the objective leaves it out and the
// report says so; the iterates are the projection's.
TEST(ProxFn, ObjectiveLeavesOutAFunctionWithoutValue) {
  test::register_test_black_boxes();
  const std::string dir = noisy_data_dir();
  Problem p = with_prior(dir, "clamp01(x, hi=0.8)");
  Problem q = with_prior(dir, "box(x, lower=0, upper=0.8)");
  for (Backend* be : {&emulator(), &halide()}) {
    SolveResult r1 = solve(p, iterations("pc", 30), *be);
    SolveResult r2 = solve(q, iterations("pc", 30), *be);
    EXPECT_LE(max_diff(r1.x.at("x"), r2.x.at("x")), 1e-6) << be->name();
    EXPECT_NEAR(r1.summary.objective, r2.summary.objective, 1e-5 * r2.summary.objective);
    EXPECT_EQ(r1.summary.objective_leaves_out, std::vector<std::string>{"clamp01"});
    EXPECT_THAT(r1.summary.brief_report(), ::testing::HasSubstr("(leaves out clamp01: no value)"));
    EXPECT_THAT(r1.summary.to_json(), ::testing::HasSubstr("\"objective_leaves_out\": [\n  \"clamp01\"\n ]"));
  }
}

TEST(ProxFn, FailuresAreTheUsersErrors) {
  test::register_test_black_boxes();
  const std::string dir = noisy_data_dir();
  Problem p = with_prior(dir, "prox_fails(grad(x))");
  for (Backend* be : {&emulator(), &halide()}) {
    EXPECT_THAT(test::user_error_of([&] { solve(p, iterations("pc", 3), *be); }),
                ::testing::HasSubstr("prox_fails: the prox callback failed (returned 5; operand (24, 20, 2)"))
        << be->name();
  }
  // The check callback refuses a shape where the problem is built.
  EXPECT_THAT(test::user_error_of([&] { with_prior(dir, "picky(grad(x))"); }),
              ::testing::HasSubstr("p.prox:3:31: error: picky: picky takes a 2-D image, got rank 3 (operand shape (24, 20, 2))"));
  EXPECT_THAT(test::user_error_of([&] { with_prior(dir, "soft_threshold(x, scal=2)"); }),
              ::testing::HasSubstr("soft_threshold has no keyword 'scal' (allowed: alpha, beta, b, c, gamma, d, scale)"));
  EXPECT_THAT(test::user_error_of([&] { with_prior(dir, "soft_threshold(x, scale=inf)"); }),
              ::testing::HasSubstr("soft_threshold: scale must be finite"));
  EXPECT_THAT(test::user_error_of([&] { with_prior(dir, "prox_fn(x)"); }),
              ::testing::HasSubstr("a prox function of your own is called by its registered name"));
}

// ---- patch_NLM ----

// A smooth test image in [0.2, 0.8] (a gradient and a disc), plus noise.
Array test_image(int64_t h, int64_t w, int64_t c, double noise, uint64_t seed) {
  Array a(c == 0 ? Shape{h, w} : Shape{h, w, c});
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0, noise);
  const int64_t cc = std::max<int64_t>(c, 1);
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      const bool disc = (i - h / 2) * (i - h / 2) + (j - w / 2) * (j - w / 2) < h * h / 9;
      for (int64_t k = 0; k < cc; ++k) {
        a.data[static_cast<size_t>((i * w + j) * cc + k)] =
            static_cast<float>(0.2 + 0.3 * j / w + (disc ? 0.3 : 0.0) - 0.05 * k + (noise > 0 ? n(rng) : 0.0));
      }
    }
  }
  return a;
}

double rms(const Array& a, const Array& b) {
  double s = 0;
  for (size_t i = 0; i < a.data.size(); ++i) s += (double(a.data[i]) - b.data[i]) * (a.data[i] - b.data[i]);
  return std::sqrt(s / static_cast<double>(a.data.size()));
}

FunctionTerm nlm_term(const Shape& s, double sigma_fixed, double prior = 1) {
  register_builtin_prox_fns();
  FunctionTerm t;
  t.kind = FunctionKind::UserProx;
  t.user_name = "patch_NLM";
  t.arg = make_variable(s, "x");
  t.user_params = {sigma_fixed, 6.0, 3, 11, 1.0, prior};
  return make_term(t);
}

// Its prox denoises: with sigma = sqrt(1/rho) at the noise level, the
// error to the clean image falls to less than 0.6 of the noise's (grey and
// colour, ProxImaL's default windows); an image without noise stays within
// 0.02 of itself (the edge of its disc is smoothed a little, more in colour,
// whose strengths are 1.3 and 3 times sigma); alpha = 0 is the identity.
TEST(PatchNlm, ItsProxDenoises) {
  for (int64_t c : {0, 1, 3}) {
    SCOPED_TRACE("channels " + std::to_string(c));
    const double noise = 0.05;
    Array clean = test_image(48, 40, c, 0, 1), noisy = test_image(48, 40, c, noise, 2);
    FunctionTerm t = nlm_term(clean.shape, 0);
    emulate::Tensor v = emulate::Tensor::from(noisy);
    emulate::Tensor out = emulate::prox(t, v, 1 / (noise * noise));
    EXPECT_LT(rms(out.to_array(), clean), 0.6 * rms(noisy, clean));
    emulate::Tensor same = emulate::prox(t, emulate::Tensor::from(clean), 1 / (noise * noise));
    EXPECT_LT(rms(same.to_array(), clean), 0.02);
    t.alpha = 0;
    EXPECT_EQ(emulate::prox(t, v, 1.0).to_array().data, noisy.data);
  }
}

TEST(PatchNlm, RefusesWhatOpenCvCannotDenoise) {
  EXPECT_THAT(test::user_error_of([] { nlm_term({8, 8, 2}, 0); }),
              ::testing::HasSubstr("patch_NLM: patch_NLM needs an image of 1 or 3 channels, shape (H, W) or (H, W, 1|3) "
                                   "(operand shape (8, 8, 2))"));
  EXPECT_THAT(test::user_error_of([] { nlm_term({8}, 0); }), ::testing::HasSubstr("1 or 3 channels"));
  register_builtin_prox_fns();
  FunctionTerm t = nlm_term({8, 8}, 0);
  t.user_params[2] = 4;
  EXPECT_THAT(test::user_error_of([&] { make_term(t); }),
              ::testing::HasSubstr("templateWindowSizeNLM must be an odd whole number from 1 to 99, got 4"));
}

// Plug-and-play deblurring with the NLM prior (examples/photos/deblur_pnp_nlm.prox
// small): the bundled 96 × 128 blurred image restored on both backends, each
// gaining at least 1.5 dB over the blurred input, the two within 0.3 dB
// (NLM quantises its input to 8 bits: a rounding difference moves a pixel
// by a level, so the backends' iterates are close, not equal).
TEST(PatchNlm, PlugAndPlayDeblurs) {
  const std::string data = test::source_dir() + "/examples/data";
  Problem p = parse_program("b = load(\"blurred.npy\")\nk = load(\"psf_gauss7.npy\")\nx = variable(shape(b))\n"
                            "minimize sum_squares(conv(k, x) - b) + 0.0001 * patch_NLM(x, sigma_fixed=0) + nonneg(x)\n",
                            data + "/pnp.prox", data)
                  .problem;
  Array clean = io::read_npy(data + "/clean.npy"), blurred = io::read_npy(data + "/blurred.npy");
  auto psnr = [&](const Array& a) { return 20 * std::log10(1.0 / rms(a, clean)); };
  const double before = psnr(blurred);
  SolveResult h = solve(p, iterations("admm", 30), halide());
  SolveResult e = solve(p, iterations("admm", 30), emulator());
  EXPECT_GT(psnr(h.x.at("x")), before + 1.5) << "blurred " << before;
  EXPECT_NEAR(psnr(h.x.at("x")), psnr(e.x.at("x")), 0.3);
  EXPECT_EQ(h.summary.objective_leaves_out, std::vector<std::string>{"patch_NLM"});
}

}  // namespace
}  // namespace proxc::internal
