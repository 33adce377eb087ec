// The public API (include/proxc) as a program that links libproxc alone sees
// it: problems built in C++ equal the same problems parsed from text, solves
// give values, mistakes are UserErrors that say what and where, the kinds'
// names round-trip, a Module runs compiled as it runs emulated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <proxc/proxc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#ifndef PROXC_SOURCE_DIR
#error "PROXC_SOURCE_DIR must be defined"
#endif

namespace {

using ::testing::HasSubstr;

std::string example(const std::string& rel) { return std::string(PROXC_SOURCE_DIR) + "/examples/" + rel; }

std::string temp_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string d = std::filesystem::temp_directory_path().string() + "/proxc_api_" + info->test_suite_name() +
                  "_" + info->name();
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const proxc::UserError& e) {
    return e.what();
  }
  return "(no UserError)";
}

// The problem of examples/denoise_tv_iso.prox, built in C++.
proxc::Problem denoise_problem(const proxc::Array& b, proxc::Expr* x) {
  proxc::Problem problem;
  *x = problem.variable(b.shape(), "x");
  problem.minimize(proxc::sum_squares(*x - b) + 0.1 * proxc::group_norm1(proxc::grad(*x), {2}) +
                   proxc::nonneg(*x));
  return problem;
}

TEST(ApiArray, HoldsShapeAndValuesAndRoundTripsThroughFiles) {
  proxc::Array a({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(a.shape(), (proxc::Shape{2, 3}));
  EXPECT_EQ(a.size(), 6);
  EXPECT_EQ(a[4], 5.0f);
  proxc::Array copy = a;
  copy[0] = 9;
  EXPECT_EQ(a[0], 1.0f);  // a value type
  std::string dir = temp_dir();
  proxc::save_array(dir + "/a.npy", a);
  proxc::Array back = proxc::load_array(dir + "/a.npy");
  EXPECT_EQ(back.to_vector(), a.to_vector());
  EXPECT_EQ(back.source_path(), std::filesystem::absolute(dir + "/a.npy").lexically_normal().string());
  EXPECT_THAT(error_of([] { proxc::Array({2, 2}, {1, 2, 3}); }), HasSubstr("3 values for the shape (2, 2)"));
  EXPECT_THAT(error_of([&] { proxc::load_array(dir + "/missing.npy"); }), HasSubstr("missing.npy"));
  EXPECT_THAT(error_of([&] { proxc::save_array(dir + "/a.bmp", a); }), HasSubstr("a.bmp"));
}

TEST(ApiKinds, NamesRoundTrip) {
  for (proxc::SolverKind k : proxc::all_kinds<proxc::SolverKind>()) {
    proxc::SolverKind back{};
    ASSERT_TRUE(proxc::from_string(proxc::to_string(k), &back));
    EXPECT_EQ(back, k);
  }
  EXPECT_EQ(proxc::kind_names<proxc::SolverKind>(), (std::vector<std::string>{"pc", "ladmm", "admm", "hqs"}));
  EXPECT_EQ(proxc::kind_list<proxc::BackendKind>(), "halide or emulate");
  proxc::ScheduleKind s{};
  EXPECT_TRUE(proxc::from_string("adams2019", &s));
  EXPECT_EQ(s, proxc::ScheduleKind::Adams2019);
  EXPECT_FALSE(proxc::from_string("fastest", &s));
  EXPECT_STREQ(proxc::to_string(proxc::NormKind::Estimate), "power");
  EXPECT_STREQ(proxc::to_string(proxc::Termination::MaxIterations), "max_iterations");
  EXPECT_EQ(proxc::kind_names<proxc::SplitRole>(), (std::vector<std::string>{"psi", "omega"}));
}

TEST(ApiProblem, BuiltInCppPrintsAsTheParsedFile) {
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  proxc::Problem built;
  proxc::Expr x = built.variable(b.shape(), "x");
  built.minimize(proxc::sum_squares(x - proxc::constant(b, "b")) +
                 0.1 * proxc::group_norm1(proxc::grad(x), {2}) + proxc::nonneg(x));
  proxc::Problem parsed = proxc::load_problem(example("denoise_tv_iso.prox"));
  proxc::PrintOptions o;
  o.base_dir = example("");
  EXPECT_EQ(built.print(proxc::ProblemFormat::Text, o), parsed.print(proxc::ProblemFormat::Text, o));
  EXPECT_EQ(built.num_terms(), 3u);
  ASSERT_EQ(built.variables().size(), 1u);
  EXPECT_TRUE(built.variables()[0].is_variable());
  EXPECT_EQ(built.name_of(x), "x");
  // The JSON dump loads back to the same problem.
  std::string json = built.print(proxc::ProblemFormat::Json, o);
  EXPECT_EQ(proxc::parse_problem_json(json, "<dump>", example("")).print(proxc::ProblemFormat::Text, o),
            built.print(proxc::ProblemFormat::Text, o));
  EXPECT_THAT(built.print(proxc::ProblemFormat::Latex), HasSubstr("\\nabla"));
}

TEST(ApiProblem, EveryOperatorAndKeywordParameter) {
  proxc::Problem p;
  proxc::Expr x = p.variable({8, 6}, "u");
  proxc::Array w({8, 6}, std::vector<float>(48, 0.5f));
  proxc::Array k({3, 3}, std::vector<float>(9, 1.0f / 9));
  proxc::Expr y = p.variable({8, 6, 3}, "rgb");
  proxc::Term t = proxc::sum_squares(proxc::conv(k, x) - w).alpha(2).gamma(0.5) +
                  proxc::norm1(proxc::grad(x, 1)).beta(2).b(0.25) +
                  proxc::sum_squares(proxc::mul_elemwise(w, x)).c(w).d(3) +
                  proxc::norm1(proxc::subsample(x, {2, 2})) + proxc::box(x, 0, 1) +
                  0.5 * proxc::sum_squares(proxc::vstack({x, 2 * x})) +
                  proxc::norm1(proxc::transpose(proxc::reshape(x, {6, 8}))) +
                  proxc::sum_squares(proxc::crop(x, {1, 1}, {4, 4}) + 1.0) + proxc::sum_entries(-x / 2) +
                  proxc::sum_squares(proxc::mul_color(y, "yuv")) + proxc::nonneg(y) +
                  proxc::norm1(proxc::conv(proxc::Array({1, 1, 3}, {1, 2, 3}), y, "replicate", 2)) +
                  proxc::sum_squares(proxc::uneven_subsample(x, proxc::Array({2, 2}, {0, 7, 5, 0}))) +
                  proxc::norm1(proxc::warp(x, proxc::Array({3, 3}, {1, 0, 0.5f, 0, 1, 0, 0, 0, 1}), {4, 4}));
  p.minimize(t);
  EXPECT_EQ(p.num_terms(), 14u);
  std::string text = p.print();
  // One array used three times is one constant.
  size_t arrays = 0;
  for (size_t at = text.find("array([8, 6]"); at != std::string::npos; at = text.find("array([8, 6]", at + 1))
    ++arrays;
  EXPECT_EQ(arrays, 1u) << text;  // one array used three times is one constant
  for (const char* s : {"2 * sum_squares(conv(", "gamma=0.5", "grad(u, dims=1)", "beta=2", "b=0.25", "d=3",
                        "subsample(u, [2, 2])", "box(u, lower=0, upper=1)", "vstack(", "transpose(",
                        "reshape(", "crop(u, [1, 1], [4, 4])", "sum_entries(", "mul_color(rgb, \"yuv\")",
                        "dims=2, boundary=\"replicate\")", "uneven_subsample(u, ", ", [4, 4])"}) {
    EXPECT_THAT(text, HasSubstr(s)) << s;
  }
  // The text parses back to an equal problem.
  EXPECT_EQ(proxc::parse_problem(text).print(), text);
}

TEST(ApiProblem, MistakesAreUserErrorsThatSayWhat) {
  proxc::Expr x = proxc::variable({4, 5}, "x");
  proxc::Array b({5, 4});
  EXPECT_THAT(error_of([&] { (void)(x - b); }), HasSubstr("(4, 5)"));
  EXPECT_THAT(error_of([&] { (void)(x - b); }), HasSubstr("(5, 4)"));
  EXPECT_THAT(error_of([&] { proxc::norm1(x).alpha(-1); }), HasSubstr("alpha"));
  EXPECT_THAT(error_of([&] { (void)(-1.0 * proxc::norm1(x)); }), HasSubstr(">= 0"));
  EXPECT_THAT(error_of([&] { (proxc::norm1(x) + proxc::nonneg(x)).alpha(2); }), HasSubstr("sum of 2"));
  EXPECT_THAT(error_of([&] { proxc::sum_squares(x).b(x); }), HasSubstr("depends on a variable"));
  EXPECT_THAT(error_of([&] { proxc::grad(proxc::Expr()); }), HasSubstr("undefined"));
  EXPECT_THAT(error_of([&] { proxc::variable({2, 2}, "2x"); }), HasSubstr("not an identifier"));
  EXPECT_THAT(error_of([&] { proxc::black_box("no_such_operator", x); }), HasSubstr("no_such_operator"));
  proxc::Problem p;
  EXPECT_THAT(error_of([&] { proxc::solve(p); }), HasSubstr("no objective"));
  EXPECT_THAT(error_of([&] { proxc::compile(p); }), HasSubstr("no objective"));
  EXPECT_THAT(error_of([&] { proxc::check(p); }), HasSubstr("no objective"));
  EXPECT_THAT(error_of([&] { proxc::run_passes(p); }), HasSubstr("no objective"));
  // An Array used as a constant is one node while its values stay; a write makes another.
  proxc::Array w({4, 5}, std::vector<float>(20, 1.0f));
  proxc::Problem q;
  q.minimize(proxc::sum_squares(x - w) + proxc::norm1(x - w));
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(q.print(), "array([4, 5]"), 1u) << q.print();
  w[0] = 2;
  q.minimize(proxc::sum_squares(x - w) +
             proxc::norm1(x - proxc::Array({4, 5}, std::vector<float>(20, 1.0f))));
  EXPECT_EQ(count(q.print(), "array([4, 5]"), 2u) << q.print();
  EXPECT_THAT(q.print(), HasSubstr("[2, 1, 1"));
  p.minimize(proxc::sum_squares(x));
  EXPECT_THAT(error_of([&] { p.value(x); }), HasSubstr("solve the problem first"));
  EXPECT_THAT(error_of([&] {
                p.value(proxc::variable({4, 5}, "other"));
              }),
              HasSubstr("not a variable of this problem"));
  EXPECT_THAT(error_of([&] {
                p.set_constant("nope", proxc::Array({4, 5}));
              }),
              HasSubstr("no constant named 'nope'"));
}

TEST(ApiSolverOptions, ValidateNamesTheOptionAsWritten) {
  proxc::SolverOptions o;
  o.max_iters = 0;
  EXPECT_THAT(error_of([&] { o.validate(); }), HasSubstr("SolverOptions.max_iters must be >= 1, got 0"));
  EXPECT_THAT(error_of([&] { o.validate(proxc::OptionSpelling::CommandLine); }), HasSubstr("--iters"));
  o = proxc::SolverOptions();
  o.solver = proxc::SolverKind::ADMM;
  o.fuse = 2;
  EXPECT_THAT(error_of([&] { o.validate(); }), HasSubstr("only pc and ladmm"));
  o = proxc::SolverOptions();
  o.backend = proxc::BackendKind::Emulate;
  o.schedule = proxc::ScheduleKind::Adams2019;
  EXPECT_THAT(error_of([&] { o.validate(proxc::OptionSpelling::CommandLine); }),
              HasSubstr("--schedule needs --backend halide"));
  EXPECT_NO_THROW(proxc::SolverOptions().validate());
}

TEST(ApiSolve, ValuesReachTheOptimumAndHalideMatchesTheEmulator) {
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  proxc::Expr x;
  proxc::Problem problem = denoise_problem(b, &x);
  proxc::SolverOptions o;
  o.max_iters = 100;
  o.eps_abs = 0;
  o.eps_rel = 0;
  o.cache_dir = "off";
  int checks = 0;
  o.callback = [&](const proxc::IterationInfo&) { return ++checks > 0; };
  proxc::SolverSummary s = proxc::solve(problem, o);
  EXPECT_EQ(s.termination, proxc::Termination::MaxIterations);
  EXPECT_EQ(s.iterations, 100);
  EXPECT_EQ(s.solver, proxc::SolverKind::PockChambolle);
  EXPECT_EQ(s.backend_used, proxc::BackendKind::Halide);
  EXPECT_EQ(static_cast<int>(s.history.size()), checks);
  EXPECT_THAT(s.brief_report(), HasSubstr("pc: max_iterations after 100 iterations"));
  EXPECT_THAT(s.to_json(), HasSubstr("\"solver\": \"pc\""));
  proxc::Array fast = problem.value(x);
  ASSERT_EQ(fast.shape(), b.shape());
  // Denoised: closer to the clean image than the noisy one is.
  proxc::Array clean = proxc::load_array(example("data/clean.npy"));
  EXPECT_GT(proxc::psnr(fast, clean), proxc::psnr(b, clean) + 3.0);
  // The emulator (double precision) gives the same iterate to float rounding.
  proxc::Problem again = problem;
  o.backend = proxc::BackendKind::Emulate;
  proxc::SolverSummary se = proxc::solve(again, o);
  proxc::Array slow = again.value(x);
  double max_diff = 0;
  for (int64_t i = 0; i < fast.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(double(fast[i]) - slow[i]));
  EXPECT_LT(max_diff, 1e-4);
  // The iterate is nonneg only to the solver's tolerance: the objective at max(x, 0) is the finite one.
  ASSERT_TRUE(s.has_projection);
  EXPECT_NEAR(s.objective_at_projection, se.objective_at_projection,
              1e-5 * std::fabs(se.objective_at_projection));
}

// A 24×24 noisy ramp, small enough for thousands of emulated iterations.
proxc::Array small_noisy_image() {
  std::vector<float> v(24 * 24);
  uint32_t seed = 12345;
  for (size_t i = 0; i < v.size(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>((i % 24) / 24.0 + ((seed >> 8) / 16777216.0 - 0.5) * 0.4);
  }
  return proxc::Array({24, 24}, v);
}

TEST(ApiSolverOptions, StepSizesChangeTheIteratesNotTheOptimum) {
  proxc::Array b = small_noisy_image();
  proxc::Expr x;
  proxc::Problem problem = denoise_problem(b, &x);
  auto run = [&](proxc::SolverKind solver, const proxc::StepSizes& steps, int iters) {
    proxc::Problem p = problem;
    proxc::SolverOptions o;
    o.solver = solver;
    o.steps = steps;
    o.backend = proxc::BackendKind::Emulate;
    o.max_iters = iters;
    o.eps_abs = 0;
    o.eps_rel = 0;
    o.check_every = iters;
    proxc::SolverSummary s = proxc::solve(p, o);
    return std::make_pair(s.objective_at_projection, p.value(x));
  };
  auto max_diff = [](const proxc::Array& a, const proxc::Array& c) {
    double d = 0;
    for (int64_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - c[i]));
    return d;
  };
  const double optimum = run(proxc::SolverKind::PockChambolle, {}, 4000).first;
  proxc::StepSizes pc;
  pc.pc_tau = 0.5;
  pc.pc_sigma = 2;
  pc.pc_theta = 0.8;
  proxc::StepSizes ladmm;
  ladmm.ladmm_lambda = 2;
  ladmm.ladmm_mu = 1.5;
  proxc::StepSizes admm;
  admm.admm_rho = 3;
  for (const auto& [solver, steps] : {std::pair{proxc::SolverKind::PockChambolle, pc},
                                      {proxc::SolverKind::LinearizedADMM, ladmm},
                                      {proxc::SolverKind::ADMM, admm}}) {
    SCOPED_TRACE(proxc::to_string(solver));
    // After a few iterations the iterates differ from the default steps' ...
    EXPECT_GT(max_diff(run(solver, steps, 5).second, run(solver, {}, 5).second), 1e-3);
    // ... and both reach the optimum (relative 1e-6: the emulator in double precision).
    EXPECT_NEAR(run(solver, steps, 4000).first, optimum, 1e-6 * std::fabs(optimum));
  }
  // A checkpoint saved with other step sizes does not resume with the defaults.
  {
    std::string dir = temp_dir();
    proxc::Problem p = problem;
    proxc::SolverOptions o;
    o.backend = proxc::BackendKind::Emulate;
    o.max_iters = 10;
    o.steps = pc;
    o.checkpoint_path = dir + "/state.ckpt";
    proxc::solve(p, o);
    o.checkpoint_path.clear();
    o.resume_path = dir + "/state.ckpt";
    EXPECT_NO_THROW(proxc::solve(p, o));
    o.steps = proxc::StepSizes();
    EXPECT_THAT(error_of([&] { proxc::solve(p, o); }), HasSubstr("the checkpoint belongs to another run"));
  }
  // The rules name the option.
  proxc::SolverOptions o;
  o.steps.pc_tau = 2;
  EXPECT_THAT(error_of([&] { o.validate(); }),
              HasSubstr("SolverOptions.steps.pc_tau * SolverOptions.steps.pc_sigma must be <= 1"));
  o = proxc::SolverOptions();
  o.steps.ladmm_mu = 2;
  EXPECT_THAT(error_of([&] { o.validate(); }),
              HasSubstr("SolverOptions.steps.ladmm_mu must be <= SolverOptions.steps.ladmm_lambda"));
  o = proxc::SolverOptions();
  o.steps.pc_theta = 1.5;
  EXPECT_THAT(error_of([&] { o.validate(); }), HasSubstr("steps.pc_theta must be in [0, 1]"));
  o = proxc::SolverOptions();
  o.steps.admm_rho = 0;
  EXPECT_THAT(error_of([&] { o.validate(); }), HasSubstr("steps.admm_rho must be finite and > 0"));
}

TEST(ApiSolve, BatchSolvesEachDataSetAsAloneAndCompilesOnce) {
  proxc::Problem p = proxc::load_problem(example("denoise_tv_iso.prox"));
  const proxc::Expr x = p.variables()[0];
  proxc::SolverOptions o;
  o.max_iters = 30;
  o.cache_dir = "off";
  const proxc::Array noisy = proxc::load_array(example("data/noisy.npy"));
  const proxc::Array clean = proxc::load_array(example("data/clean.npy"));
  const std::vector<proxc::BatchItem> items = proxc::solve_batch(
      p, {{{"b", noisy}}, {{"b", proxc::load_array(example("data/psf_gauss7.npy"))}}, {{"b", clean}}}, o);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].error, "");
  EXPECT_THAT(items[1].error, HasSubstr("data set 1: "));
  EXPECT_THAT(items[1].error, HasSubstr("the data has shape (7, 7), the constant has (96, 128)"));
  EXPECT_EQ(items[2].error, "");
  EXPECT_EQ(items[2].summary.pipelines_compiled, 0);  // compiled for data set 0
  for (const auto& [i, b] : {std::pair{0, noisy}, {2, clean}}) {
    proxc::Problem alone = proxc::load_problem(example("denoise_tv_iso.prox"));
    alone.set_constant("b", b);
    proxc::solve(alone, o);
    const proxc::Array want = alone.value(alone.variables()[0]);
    const proxc::Array& got = items[static_cast<size_t>(i)].x.at("x");
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_TRUE(std::equal(got.data(), got.data() + got.size(), want.data())) << "data set " << i;
  }
  EXPECT_TRUE(std::equal(items[2].x.at("x").data(), items[2].x.at("x").data() + clean.size(), p.value(x).data()));
}

TEST(ApiSolve, SetConstantReplacesTheData) {
  proxc::Problem p = proxc::load_problem(example("denoise_tv_iso.prox"));
  proxc::Expr x = p.variables()[0];
  proxc::SolverOptions o;
  o.backend = proxc::BackendKind::Emulate;
  o.max_iters = 20;
  p.set_constant("b", example("data/clean.npy"));
  proxc::solve(p, o);
  proxc::Array clean = proxc::load_array(example("data/clean.npy"));
  EXPECT_GT(proxc::psnr(p.value(x), clean), 30.0);
  EXPECT_THAT(error_of([&] { p.set_constant("b", example("data/psf_gauss7.npy")); }),
              HasSubstr("holds shape (7, 7)"));
  EXPECT_THAT(error_of([&] { p.set_constant("nope", clean); }), HasSubstr("no constant named 'nope'"));
  // Unknown names in x0 are refused, not ignored.
  proxc::SolverOptions bad = o;
  bad.x0["y"] = clean;
  EXPECT_THAT(error_of([&] { proxc::solve(p, bad); }), HasSubstr("no variable named 'y' (its variables: x)"));
  // A warm start from the solution: the first check already meets the tolerance far sooner.
  proxc::SolverOptions warm = o;
  warm.x0["x"] = p.value(x);
  EXPECT_NO_THROW(proxc::solve(p, warm));
}

TEST(ApiSolve, IterateCallbackObjectivePerCheckAndCompileCounts) {
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  proxc::Expr x;
  proxc::Problem p = denoise_problem(b, &x);
  proxc::SolverOptions o;
  o.max_iters = 40;
  o.check_every = 10;
  o.eps_abs = o.eps_rel = 0;
  o.objective_each_check = true;
  proxc::SolverSummary s = proxc::solve(p, o);
  ASSERT_EQ(s.history.size(), 4u);
  for (const proxc::IterationInfo& h : s.history) EXPECT_TRUE(std::isfinite(h.objective)) << h.iteration;
  // With nonneg, at max(x, 0): the last check's is the summary's.
  EXPECT_NEAR(s.history.back().objective, s.objective_at_projection, 1e-9 * std::abs(s.objective_at_projection));
  EXPECT_GT(s.history.front().objective, s.history.back().objective);
  // Without asking, no objective per check.
  o.objective_each_check = false;
  s = proxc::solve(p, o);
  EXPECT_TRUE(std::isnan(s.history[0].objective));
  // The same problem again: nothing compiled, nothing loaded.
  EXPECT_EQ(s.pipelines_compiled, 0);
  EXPECT_EQ(s.pipelines_loaded, 0);
  // The iterate at each check, in the user's units; false stops the solve.
  std::vector<int> seen;
  proxc::Array at20;
  o.iterate_callback = [&](const proxc::IterationInfo& info, const std::map<std::string, proxc::Array>& xs) {
    seen.push_back(info.iteration);
    EXPECT_TRUE(std::isfinite(info.objective));
    EXPECT_EQ(xs.size(), 1u);
    at20 = xs.at("x");
    return info.iteration < 20;
  };
  s = proxc::solve(p, o);
  EXPECT_EQ(seen, (std::vector<int>{10, 20}));
  EXPECT_EQ(s.termination, proxc::Termination::UserStop);
  ASSERT_EQ(at20.shape(), b.shape());
  EXPECT_EQ(at20.to_vector(), p.value(x).to_vector());
}

// adaptive_steps unset: pc and ladmm adapt under proxc's own rule (pc reaches
// the default tolerances sooner), keep fixed steps under ProxImaL's rule, and
// the other solvers keep theirs; set, it is what it says.
TEST(ApiSolve, PcAndLadmmAdaptTheirStepsByDefaultUnderTheirOwnRule) {
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  proxc::Expr x;
  proxc::Problem p = denoise_problem(b, &x);
  auto run = [&](proxc::SolverKind solver, std::optional<bool> adaptive, bool proximal) {
    proxc::SolverOptions o;
    o.solver = solver;
    o.adaptive_steps = adaptive;
    o.proximal_stopping = proximal;
    if (proximal) o.eps_abs = o.eps_rel = 1e-3;
    return proxc::solve(p, o);
  };
  const proxc::SolverSummary by_default = run(proxc::SolverKind::PockChambolle, std::nullopt, false);
  EXPECT_EQ(by_default.adapted_steps.count("pc_tau"), 1u);
  EXPECT_GT(by_default.step_changes, 0);
  const proxc::SolverSummary fixed = run(proxc::SolverKind::PockChambolle, false, false);
  EXPECT_TRUE(fixed.adapted_steps.empty());
  EXPECT_EQ(by_default.termination, proxc::Termination::Converged);
  EXPECT_LT(by_default.iterations, fixed.iterations);
  EXPECT_TRUE(run(proxc::SolverKind::PockChambolle, std::nullopt, true).adapted_steps.empty());
  // ladmm too (its residual balancing never lost on the canonical problems); not under ProxImaL's rule.
  EXPECT_EQ(run(proxc::SolverKind::LinearizedADMM, std::nullopt, false).adapted_steps.count("ladmm_lambda"),
            1u);
  EXPECT_TRUE(run(proxc::SolverKind::LinearizedADMM, false, false).adapted_steps.empty());
  EXPECT_TRUE(run(proxc::SolverKind::LinearizedADMM, std::nullopt, true).adapted_steps.empty());
  EXPECT_TRUE(run(proxc::SolverKind::ADMM, std::nullopt, false).adapted_steps.empty());
  EXPECT_EQ(run(proxc::SolverKind::ADMM, true, false).adapted_steps.count("admm_rho"), 1u);
}

TEST(ApiSolve, ProximalStoppingChecksWhereProxImaLChecks) {
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  proxc::Expr x;
  proxc::Problem p = denoise_problem(b, &x);
  proxc::SolverOptions o;
  o.max_iters = 35;
  o.eps_abs = o.eps_rel = 0;
  o.proximal_stopping = true;
  auto checks = [&](proxc::SolverKind solver) {
    o.solver = solver;
    std::vector<int> its;
    for (const proxc::IterationInfo& h : proxc::solve(p, o).history) {
      EXPECT_TRUE(std::isfinite(h.r) && std::isfinite(h.s)) << h.iteration;
      its.push_back(h.iteration);
    }
    return its;
  };
  // ProxImaL tests at i % C == 0 counting from 0 (pc from i = C), and proxc after the last iteration.
  EXPECT_EQ(checks(proxc::SolverKind::LinearizedADMM), (std::vector<int>{1, 11, 21, 31, 35}));
  EXPECT_EQ(checks(proxc::SolverKind::PockChambolle), (std::vector<int>{11, 21, 31, 35}));
  o.check_every = 1;
  o.max_iters = 4;
  EXPECT_EQ(checks(proxc::SolverKind::PockChambolle), (std::vector<int>{2, 3, 4}));
  // The same iterates as proxc's own rule with fixed steps (unset, pc's
  // steps adapt under proxc's rule): only the checks differ.
  o.check_every = 10;
  o.max_iters = 30;
  proxc::solve(p, o);
  const std::vector<float> with_rule = p.value(x).to_vector();
  o.proximal_stopping = false;
  o.adaptive_steps = false;
  proxc::solve(p, o);
  const std::vector<float> own_rule = p.value(x).to_vector();
  ASSERT_EQ(with_rule.size(), own_rule.size());
  for (size_t i = 0; i < own_rule.size(); ++i) ASSERT_NEAR(with_rule[i], own_rule[i], 1e-6) << i;
  // Only ProxImaL's checks stop: with tolerances any check meets, pc stops at
  // its first (11), ladmm at 1; the check forced by the last iteration does not.
  o.proximal_stopping = true;
  o.eps_abs = o.eps_rel = 1e3;
  o.max_iters = 35;
  o.solver = proxc::SolverKind::PockChambolle;
  EXPECT_EQ(proxc::solve(p, o).iterations, 11);
  o.solver = proxc::SolverKind::LinearizedADMM;
  EXPECT_EQ(proxc::solve(p, o).iterations, 1);
  o.solver = proxc::SolverKind::PockChambolle;
  o.max_iters = 5;
  proxc::SolverSummary forced = proxc::solve(p, o);
  EXPECT_EQ(forced.termination, proxc::Termination::MaxIterations);
  EXPECT_EQ(forced.iterations, 5);
  o.fuse = 2;
  EXPECT_THAT(error_of([&] { proxc::solve(p, o); }), HasSubstr("fuse = 1"));
}

TEST(ApiPasses, RunWithDumpsAndContinueFromOne) {
  std::string dir = temp_dir();
  proxc::Problem p = proxc::load_problem(example("deconv_tv.prox"));
  proxc::PassOptions o;
  o.pipeline = {"absorb", "merge"};
  o.dump_dir = dir;
  o.verify_each = true;
  std::ostringstream log;
  o.log = &log;
  proxc::Problem half = proxc::run_passes(p, o);
  EXPECT_EQ(half.passes_run(), (std::vector<std::string>{"absorb", "merge"}));
  EXPECT_TRUE(std::filesystem::exists(dir + "/02_merge.json"));
  proxc::allow_path(example(""));
  proxc::Problem resumed = proxc::load_problem(dir + "/02_merge.json");
  proxc::Problem done = proxc::run_passes(resumed, {});
  EXPECT_EQ(done.passes_run(), proxc::pass_names());
  EXPECT_THAT(error_of([&] {
                proxc::PassOptions bad;
                bad.pipeline = {"inline"};
                proxc::run_passes(p, bad);
              }),
              HasSubstr("inline"));
}

// A split of the user's own (PassOptions::roles, ProxImaL's psi_fns and
// omega_fns): run with absorb, continued by the solve, it reaches the
// optimum of the solver's own partition by another path; splits no solver
// takes are UserErrors naming the term.
TEST(ApiPasses, ASplitOfTheUsersOwnReachesTheSameOptimum) {
  const proxc::Array b = small_noisy_image();
  proxc::Problem p;
  proxc::Expr x = p.variable(b.shape(), "x");
  p.minimize(proxc::sum_squares(x - b) + 0.05 * proxc::norm1(proxc::grad(x)) + proxc::nonneg(x));
  proxc::SolverOptions so;
  so.backend = proxc::BackendKind::Emulate;
  so.max_iters = 4000;
  so.eps_abs = so.eps_rel = 1e-7;
  auto objective = [&](proxc::Problem q, proxc::SolverKind solver) {
    so.solver = solver;
    const proxc::SolverSummary s = proxc::solve(q, so);
    EXPECT_EQ(s.termination, proxc::Termination::Converged) << proxc::to_string(solver);
    return s.objective_at_projection;
  };
  using R = proxc::SplitRole;
  struct Case {
    proxc::SolverKind solver;
    std::vector<R> roles;
  };
  for (const Case& c : {Case{proxc::SolverKind::PockChambolle, {R::Psi, R::Psi, R::Omega}},
                        Case{proxc::SolverKind::LinearizedADMM, {R::Omega, R::Psi, R::Psi}},
                        Case{proxc::SolverKind::ADMM, {R::Omega, R::Psi, R::Psi}}}) {
    SCOPED_TRACE(proxc::to_string(c.solver));
    proxc::PassOptions o;
    o.pipeline = {"absorb", "split"};
    o.solver = c.solver;
    o.roles = c.roles;
    const proxc::Problem split = proxc::run_passes(p, o);
    EXPECT_EQ(split.passes_run(), (std::vector<std::string>{"absorb", "split"}));
    const std::string text = split.print(proxc::ProblemFormat::Text);
    EXPECT_THAT(text, HasSubstr(c.roles[0] == R::Omega ? "omega(least_squares(" : "psi(sum_squares("));
    EXPECT_THAT(text, HasSubstr(c.roles[2] == R::Omega ? "omega(nonneg(" : "psi(nonneg("));
    const double own = objective(p, c.solver), users = objective(split, c.solver);
    EXPECT_NEAR(users, own, 1e-5 * own);
  }
  auto refused = [&](proxc::SolverKind solver, std::vector<R> roles) {
    proxc::PassOptions o;
    o.pipeline = {"absorb", "split"};
    o.solver = solver;
    o.roles = std::move(roles);
    return error_of([&] { proxc::run_passes(p, o); });
  };
  EXPECT_THAT(refused(proxc::SolverKind::PockChambolle, {R::Psi, R::Omega}),
              HasSubstr("2 roles given for the problem's 3 terms"));
  EXPECT_THAT(refused(proxc::SolverKind::PockChambolle, {R::Psi, R::Omega, R::Psi}),
              HasSubstr("term 2 (norm1) is omega, which only a least_squares term or a function of the "
                        "variable itself can be"));
  EXPECT_THAT(refused(proxc::SolverKind::ADMM, {R::Psi, R::Psi, R::Omega}),
              HasSubstr("term 3 (nonneg) is omega, which for admm only a least_squares term can be"));
  proxc::Problem two;
  proxc::Expr z = two.variable(b.shape(), "z");
  two.minimize(proxc::sum_squares(z - b) + proxc::nonneg(z));
  proxc::PassOptions all;
  all.pipeline = {"absorb", "split"};
  all.roles = {R::Omega, R::Omega};
  EXPECT_THAT(error_of([&] { proxc::run_passes(two, all); }), HasSubstr("every term is omega"));
  proxc::Problem tv;
  proxc::Expr y = tv.variable(b.shape(), "y");
  tv.minimize(proxc::sum_squares(proxc::grad(y)) + proxc::sum_squares(y - b));
  proxc::PassOptions o;
  o.pipeline = {"absorb", "split"};
  o.roles = {R::Omega, R::Psi};
  EXPECT_THAT(
      error_of([&] { proxc::run_passes(tv, o); }),
      HasSubstr("term 1 (sum_squares) is omega, which it can be only where its operand has a diagonal or "
                "circulant Gram matrix"));
}

TEST(ApiCheck, DotTestsPassAndABrokenAdjointFails) {
  proxc::Problem p = proxc::load_problem(example("deconv_tv.prox"));
  proxc::CheckReport r = proxc::check(p);
  EXPECT_TRUE(r.passed) << r.text;
  EXPECT_GT(r.norm_estimate, 0);
  EXPECT_LE(r.norm_estimate, r.norm_bound * (1 + 1e-6));
  EXPECT_THAT(r.json, HasSubstr("\"passed\": true"));
  proxc::CheckOptions broken;
  broken.debug_break_adjoint = "grad";
  EXPECT_FALSE(proxc::check(p, broken).passed);
}

TEST(ApiModule, CompiledRunEqualsEmulatedRun) {
  proxc::Problem p = proxc::load_problem(example("denoise_tv_iso.prox"));
  proxc::CompileOptions o;
  o.cache_dir = "off";
  proxc::Module m = proxc::compile(p, o);
  EXPECT_FALSE(m.name().empty());
  proxc::ProgramInputs in;
  uint32_t seed = 7;
  for (const auto& [name, shape] : m.inputs()) {
    proxc::Array a(shape);
    for (int64_t i = 0; i < a.size(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      a[i] = static_cast<float>(seed >> 8) / float(1u << 24);
    }
    in.arrays.emplace(name, std::move(a));
  }
  for (const std::string& name : m.params()) in.params[name] = name == "check" ? 1.0 : 0.5;
  proxc::ProgramOutputs fast = m.run(in), ref = m.emulate(in);
  ASSERT_EQ(fast.arrays.size(), ref.arrays.size());
  for (const auto& [name, a] : ref.arrays) {
    const proxc::Array& b = fast.arrays.at(name);
    ASSERT_EQ(a.shape(), b.shape()) << name;
    for (int64_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], 1e-4 * (1 + std::fabs(a[i]))) << name << " " << i;
  }
  proxc::CompileReport r = m.compile();
  EXPECT_EQ(r.pipelines_loaded, 0);  // the cache is off
  EXPECT_EQ(r.cache_dir, "");
  // Arguments are checked by name and shape.
  proxc::ProgramInputs missing = in;
  missing.arrays.erase(missing.arrays.begin());
  EXPECT_THAT(error_of([&] { m.run(missing); }), HasSubstr("is missing"));
  proxc::ProgramInputs wrong = in;
  wrong.arrays.begin()->second = proxc::Array({3, 3});
  EXPECT_THAT(error_of([&] { m.emulate(wrong); }), HasSubstr("has shape (3, 3)"));
  proxc::ProgramInputs extra = in;
  extra.params["nope"] = 1;
  EXPECT_THAT(error_of([&] { m.run(extra); }), HasSubstr("no parameter 'nope'"));
  EXPECT_THAT(m.source(), HasSubstr("#include \"proxc/halide_ops.h\""));
  EXPECT_THAT(m.emit(proxc::ProgramFormat::Step), HasSubstr("output"));
  o.program = proxc::ProgramKind::CgApply;
  EXPECT_THAT(error_of([&] { proxc::compile(p, o); }), HasSubstr("not solved by CG"));
  // A moved-from Module says so.
  proxc::Module moved = std::move(m);
  EXPECT_THAT(error_of([&] { (void)m.name(); }), HasSubstr("moved from"));
  EXPECT_FALSE(moved.name().empty());
}

TEST(ApiBlackBox, APluginsOperatorSolvesLikeTheSameConvolution) {
  const std::vector<std::string> names = proxc::load_plugin(PROXC_TEST_PLUGIN);
  EXPECT_NE(std::find(names.begin(), names.end(), "shift_blur"), names.end());
  EXPECT_THAT(error_of([] { proxc::load_plugin("no_such_plugin.so"); }), HasSubstr("no_such_plugin.so"));
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  // shift_blur is conv with this kernel (tests/plugin/test_black_boxes.cpp).
  proxc::Array k({3, 3}, {0, 0, 0, 0, 0.5f, 0.2f, 0, 0.3f, 0});
  // The conv form's data term is absorbed into a direct FFT solve, the black
  // box's is split off: different iterates, the same optimum.
  proxc::SolverOptions o;
  o.max_iters = 3000;
  o.eps_abs = 1e-6;
  o.eps_rel = 1e-6;
  o.cache_dir = "off";
  std::vector<proxc::Array> results;
  std::vector<double> objectives;
  for (bool black_box : {true, false}) {
    proxc::Problem p;
    proxc::Expr x = p.variable(b.shape(), "x");
    proxc::Expr blur = black_box ? proxc::black_box("shift_blur", x) : proxc::conv(k, x);
    p.minimize(proxc::sum_squares(blur - b) + 0.01 * proxc::norm1(proxc::grad(x)));
    EXPECT_TRUE(proxc::check(p).passed);
    objectives.push_back(proxc::solve(p, o).objective);
    results.push_back(p.value(x));
  }
  double max_diff = 0;
  for (int64_t i = 0; i < b.size(); ++i)
    max_diff = std::max(max_diff, std::fabs(double(results[0][i]) - results[1][i]));
  std::printf("black box vs conv: objectives %.9g %.9g, max |x diff| %.3g\n", objectives[0], objectives[1],
              max_diff);
  EXPECT_NEAR(objectives[0], objectives[1], 1e-6 * std::fabs(objectives[1]));  // measured: 2.4e-8
  EXPECT_LT(max_diff, 1e-3);                                                   // measured: 1.6e-4
  // A wrong adjoint fails the dot test.
  proxc::Problem bad;
  proxc::Expr y = bad.variable(b.shape(), "y");
  bad.minimize(proxc::sum_squares(proxc::black_box("bad_adjoint", y) - b));
  EXPECT_FALSE(proxc::check(bad).passed);
}

// A prox function registered by the program itself (proxc/prox_fn.h), used
// through proxc::prox_fn: the projection onto [lo, hi] solves as box does;
// patch_NLM, which proxc ships, builds with ProxImaL's parameter names.
int clip_prox(void*, const float* v, const int64_t* shape, int rank, double, const double* p, float* out) {
  int64_t n = 1;
  for (int a = 0; a < rank; ++a) n *= shape[a];
  for (int64_t i = 0; i < n; ++i) out[i] = std::min(std::max(v[i], static_cast<float>(p[0])), static_cast<float>(p[1]));
  return 0;
}

TEST(ApiProxFn, AProgramsOwnProxFunctionSolvesLikeBox) {
  static const char* const names[] = {"lo", "hi"};
  static const double defaults[] = {0.0, 1.0};
  const proxc_prox_fn clip = {"api_clip", clip_prox, nullptr, nullptr, 2, names, defaults, nullptr};
  ASSERT_EQ(proxc_register_prox_fn(&clip), 0);
  proxc::Array b = proxc::load_array(example("data/noisy.npy"));
  std::vector<proxc::Array> results;
  for (bool mine : {true, false}) {
    proxc::Problem p;
    proxc::Expr x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(x - b) + 0.02 * proxc::norm1(proxc::grad(x)) +
               (mine ? proxc::prox_fn("api_clip", x, {{"hi", 0.5}}) : proxc::box(x, 0.0, 0.5)));
    if (mine) {
      EXPECT_THAT(p.print(), HasSubstr("api_clip(x, lo=0, hi=0.5)"));
    }
    proxc::SolverOptions o;
    o.max_iters = 50;
    o.eps_abs = 0;
    o.eps_rel = 0;
    proxc::SolverSummary s = proxc::solve(p, o);
    if (mine) {
      EXPECT_EQ(s.objective_leaves_out, std::vector<std::string>{"api_clip"});
    }
    results.push_back(p.value(x));
  }
  for (int64_t i = 0; i < b.size(); ++i) ASSERT_NEAR(results[0][i], results[1][i], 1e-6) << i;
  proxc::Problem q;
  proxc::Expr y = q.variable({16, 16}, "y");
  q.minimize(proxc::sum_squares(y) + proxc::prox_fn("patch_NLM", y, {{"sigma_fixed", 0}}));
  EXPECT_THAT(q.print(), HasSubstr("patch_NLM(y, sigma_fixed=0, sigma_scale=6, templateWindowSizeNLM=3"));
  EXPECT_THAT(error_of([&] { proxc::prox_fn("patch_NLM", y, {{"sigma", 1}}); }),
              HasSubstr("patch_NLM: has no parameter 'sigma'"));
  EXPECT_THAT(error_of([&] { proxc::prox_fn("no_such_fn", y); }),
              HasSubstr("no prox function named 'no_such_fn' is registered"));
}

// A prox callback that fails says why (proxc_black_box_set_failure): the
// solve's error on either backend quotes it after naming the function.
int failing_prox(void*, const float*, const int64_t*, int, double, const double*, float*) {
  proxc_black_box_set_failure("the denoiser's weights are not loaded");
  return 7;
}

TEST(ApiProxFn, AFailingCallbackIsQuotedInTheError) {
  const proxc_prox_fn broken = {"api_broken_prox", failing_prox, nullptr, nullptr, 0,
                                nullptr,           nullptr,      nullptr};
  ASSERT_EQ(proxc_register_prox_fn(&broken), 0);
  for (proxc::BackendKind backend : {proxc::BackendKind::Halide, proxc::BackendKind::Emulate}) {
    proxc::Problem p;
    proxc::Expr x = p.variable({8, 8}, "x");
    p.minimize(proxc::sum_squares(x - 1.0) + proxc::prox_fn("api_broken_prox", x));
    proxc::SolverOptions o;
    o.max_iters = 5;
    o.backend = backend;
    o.cache_dir = "off";
    const std::string e = error_of([&] { proxc::solve(p, o); });
    EXPECT_THAT(e, HasSubstr("api_broken_prox: the prox callback failed (returned 7"));
    EXPECT_THAT(e, HasSubstr(": the denoiser's weights are not loaded")) << proxc::to_string(backend);
  }
  // Names the language reserves cannot be called from a .prox file.
  EXPECT_TRUE(proxc::is_reserved_name("norm1"));
  EXPECT_TRUE(proxc::is_reserved_name("minimize"));
  EXPECT_FALSE(proxc::is_reserved_name("api_broken_prox"));
}

TEST(ApiModule, CompilesAheadOfTime) {
  std::string dir = temp_dir();
  proxc::Problem p = proxc::load_problem(example("deconv_tv.prox"));
  proxc::CompileOptions o;
  o.cache_dir = "off";
  proxc::AotArtifacts a = proxc::compile(p, o).compile_aot(dir + "/aot", "deconv_step");
  for (const std::string& f : {a.library, a.header, a.wrapper, a.manifest})
    EXPECT_TRUE(std::filesystem::exists(f)) << f;
  EXPECT_TRUE(a.needs_fft_runtime);  // deconv_tv's least squares is an FFT solve
  EXPECT_THAT(error_of([&] { proxc::compile(p, o).compile_aot(dir + "/aot", "not a name"); }),
              HasSubstr("identifier"));
}

}  // namespace
