// The stopping rule, pinned: each solver's residuals and tolerances at a
// check against their formulas (docs/solvers.md, "Stopping"), computed here
// from the checking run's own inputs and outputs with the emulator's
// operators; and the iteration at which each bundled example stops at the
// default tolerances, on the emulator (which computes in double within a
// program, so the stops do not move with the machine).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "frontend/parser.h"
#include "io/npy.h"
#include "pipeline/pipeline.h"
#include "pipeline/solve.h"
#include "solvers/algorithm.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using emulate::Tensor;

Backend& emulator() {
  static std::unique_ptr<Backend> b = make_emulate_backend();
  return *b;
}

Problem example(const std::string& file) {
  const std::string dir = test::source_dir() + "/examples";
  return parse_program_file(dir + "/" + file).problem;
}

// The examples' data with its images cut to their top-left 32 × 40
// (kernels whole), in a folder of the first test that asks.
const std::string& small_examples_dir() {
  static const std::string dir = [] {
    const std::string d = test::temp_dir() + "/small_examples";
    std::filesystem::create_directories(d + "/data");
    for (const char* name : {"noisy", "blurred", "psf_gauss7", "inpaint_observed", "inpaint_mask"}) {
      const std::string rel = std::string("/data/") + name + ".npy";
      Array a = io::read_npy(test::source_dir() + "/examples" + rel);
      if (a.shape.size() == 2 && a.shape[0] > 32 && a.shape[1] > 40) {
        Array cut(Shape{32, 40});
        for (int64_t i = 0; i < 32; ++i) {
          for (int64_t j = 0; j < 40; ++j)
            cut.data[static_cast<size_t>(i * 40 + j)] = a.data[static_cast<size_t>(i * a.shape[1] + j)];
        }
        a = std::move(cut);
      }
      io::write_npy(d + rel, a);
    }
    return d;
  }();
  return dir;
}

// The example on that data: the same problem, small enough to solve 1000
// iterations on the emulator under the sanitizers.
Problem small_example(const std::string& file) {
  const std::string& dir = small_examples_dir();
  std::ifstream in(test::source_dir() + "/examples/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return parse_program(text.str(), file, dir).problem;
}

Tensor tensor(const Array& a) {
  Tensor t(a.shape);
  for (size_t i = 0; i < a.data.size(); ++i) t.data[i] = a.data[i];
  return t;
}

double norm(const std::vector<Tensor>& ts) {
  double s = 0;
  for (const Tensor& t : ts) {
    for (double v : t.data) s += v * v;
  }
  return std::sqrt(s);
}

// a + c·b, entrywise.
Tensor axpy(const Tensor& a, double c, const Tensor& b) {
  Tensor r = a;
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] += c * b.data[i];
  return r;
}

Tensor scaled(double c, const Tensor& a) {
  Tensor r = a;
  for (double& v : r.data) v *= c;
  return r;
}

// One variable's K_i x for every psi term, and Σ_i K_iᵀ y_i.
std::vector<Tensor> K(const Layout& l, const Tensor& x) {
  std::vector<Tensor> out;
  for (const FunctionTerm* t : l.psi) out.push_back(emulate::forward(t->arg, {{l.vars[0].get(), &x}}, false));
  return out;
}
Tensor KT(const Layout& l, const std::vector<Tensor>& y) {
  Tensor sum(l.vars[0]->shape);
  for (size_t i = 0; i < l.psi.size(); ++i)
    sum = axpy(sum, 1, emulate::adjoint(l.psi[i]->arg, y[i]).at(l.vars[0].get()));
  return sum;
}

// A state of every solver's arrays (x0, xbar0, and y, z, u per psi term), standard normal, seeded.
std::map<std::string, Array> random_state(const Layout& l, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::map<std::string, Array> state;
  auto random = [&](const std::string& name, const Shape& s) {
    Array a(s);
    for (float& v : a.data) v = g(rng);
    state[name] = std::move(a);
  };
  random("x0", l.vars[0]->shape);
  random("xbar0", l.vars[0]->shape);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    for (const std::string& n : {state_names::y(i), state_names::z(i), state_names::u(i)})
      random(n, l.psi[i]->arg->shape);
  }
  return state;
}

std::vector<Tensor> diff(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  std::vector<Tensor> r;
  for (size_t i = 0; i < a.size(); ++i) r.push_back(axpy(a[i], -1, b[i]));
  return r;
}

// One checking run of each solver's iteration program from a random state
// (step sizes that are not 1, so that every factor shows), with
// eps_abs = 1e-3 and eps_rel = 0.1; the residuals and tolerances it reports
// against the formulas, to 1e-9 relative:
//   ladmm, admm, hqs: r = ‖Kx − z‖, s = ρ‖Kᵀ(z − z_prev)‖,
//     eps_pri = √m·eps_abs + eps_rel·max(‖Kx‖, ‖z‖), eps_dual = √n·eps_abs + eps_rel·ρ‖Kᵀu‖
//     (ρ = 1/λ for ladmm; hqs keeps u = 0);
//   pc: r = ‖(x − x⁺)/τ‖, s = ‖(y − y⁺)/σ + K x̄ − K x⁺‖,
//     eps_pri = √n·eps_abs + eps_rel·max(‖x⁺‖, ‖Kᵀy⁺‖), eps_dual = √m·eps_abs + eps_rel·max(‖y⁺‖, ‖Kx⁺‖).
TEST(StoppingRule, ResidualsAndTolerancesFollowTheirFormulas) {
  for (const char* file : {"deconv_tv.prox", "inpaint.prox"}) {
    for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
      SCOPED_TRACE(std::string(file) + " " + solver);
      PassManagerOptions po;
      po.pass.solver = solver;
      const Problem split = run_passes(example(file), po);
      const Layout l = layout_of(split);
      ASSERT_EQ(l.vars.size(), 1u);
      SolverOptions o;
      o.solver = solver;
      o.eps_abs = 1e-3;
      o.eps_rel = 0.1;
      o.steps.pc_tau = 0.5;
      o.steps.pc_sigma = 2;
      o.steps.ladmm_lambda = 2;
      o.steps.ladmm_mu = 0.5;
      const double rho = 3;
      std::unique_ptr<Algorithm> alg = Algorithm::create(solver);
      const StepProgram prog = alg->iteration(l, o);
      std::unique_ptr<CompiledStep> run = emulator().compile(prog);

      const std::map<std::string, Array> state = random_state(l, 5);
      StepInputs in;
      for (const auto& [name, a] : state) in.buffers[name] = &a;
      in.params[kCheckParam] = 1;
      in.params[state_names::kRho] = rho;
      const StepOutputs out = run->run(in);
      IterationInfo info;
      double m = 0;
      for (const FunctionTerm* t : l.psi) m += static_cast<double>(num_elements(t->arg->shape));
      const double n = static_cast<double>(num_elements(l.vars[0]->shape));
      alg->tolerances(out, m, n, o, &info);
      const double r = std::sqrt(out.scalars.at(state_names::kR2)),
                   s = std::sqrt(out.scalars.at(state_names::kS2));

      double r_want, s_want, pri_want, dual_want;
      const Tensor x = tensor(state.at("x0"));
      const Tensor x1 = out.arrays.count("x0") ? tensor(out.arrays.at("x0")) : x;
      auto psi_state = [&](auto name_of, bool from_out) {
        std::vector<Tensor> v;
        for (size_t i = 0; i < l.psi.size(); ++i)
          v.push_back(tensor(from_out ? out.arrays.at(name_of(i)) : state.at(name_of(i))));
        return v;
      };
      if (std::string(solver) == "pc") {
        const std::vector<Tensor> y = psi_state(state_names::y, false), y1 = psi_state(state_names::y, true);
        const double tau = o.steps.pc_tau, sigma = o.steps.pc_sigma;
        const Tensor dx = axpy(x, -1, x1);
        const std::vector<Tensor> dy = diff(y, y1), kxbar = K(l, tensor(state.at("xbar0"))), kx1 = K(l, x1);
        std::vector<Tensor> d;
        for (size_t i = 0; i < dy.size(); ++i)
          d.push_back(axpy(scaled(1 / sigma, dy[i]), 1, axpy(kxbar[i], -1, kx1[i])));
        r_want = norm({scaled(1 / tau, dx)});
        s_want = norm(d);
        pri_want = std::sqrt(n) * o.eps_abs + o.eps_rel * std::max(norm({x1}), norm({KT(l, y1)}));
        dual_want = std::sqrt(m) * o.eps_abs + o.eps_rel * std::max(norm(y1), norm(K(l, x1)));
      } else {
        const double p = std::string(solver) == "ladmm" ? 1 / o.steps.ladmm_lambda : rho;
        const std::vector<Tensor> z = psi_state(state_names::z, false), z1 = psi_state(state_names::z, true),
                                  u1 = psi_state(state_names::u, true), kx = K(l, x1);
        if (std::string(solver) == "hqs") {
          EXPECT_EQ(norm(diff(u1, psi_state(state_names::u, false))), 0);
        }
        r_want = norm(diff(kx, z1));
        s_want = p * norm({KT(l, diff(z1, z))});
        pri_want = std::sqrt(m) * o.eps_abs + o.eps_rel * std::max(norm(kx), norm(z1));
        dual_want = std::sqrt(n) * o.eps_abs + o.eps_rel * p * norm({KT(l, u1)});
      }
      EXPECT_NEAR(r, r_want, 1e-9 * r_want);
      EXPECT_NEAR(s, s_want, 1e-9 * s_want);
      EXPECT_NEAR(info.eps_pri, pri_want, 1e-9 * pri_want);
      EXPECT_NEAR(info.eps_dual, dual_want, 1e-9 * dual_want);
    }
  }
}

// The bundled examples, cut to 32 × 40, at the default options of pc, ladmm
// and admm (eps_abs = eps_rel = 3e-6, a check every 10 iterations, at most
// 1000) stop at these iterations on the emulator (the deconvolution runs to
// max_iters with all three; so does hqs, whose continuation needs each
// level to converge, on every example). A change to the rule,
// the tolerances' defaults or the iteration moves them.
// One case per example and solver, so that CTest runs them side by side (the
// nine solves take minutes under the sanitizers).
struct DefaultStop {
  const char* file;
  const char* solver;
  int iterations;
};

class StoppingRuleDefaults : public ::testing::TestWithParam<DefaultStop> {};

TEST(StoppingRule, TheDefaultsAreTheDocumentedOnes) {
  const SolverOptions defaults;
  EXPECT_EQ(defaults.eps_abs, 3e-6);
  EXPECT_EQ(defaults.eps_rel, 3e-6);
  EXPECT_EQ(defaults.check_every, 10);
  EXPECT_EQ(defaults.max_iters, 1000);
}

TEST_P(StoppingRuleDefaults, TheExampleStopsWhereItDid) {
  const DefaultStop& c = GetParam();
  SolverOptions o;
  o.solver = c.solver;
  const SolveResult r = solve(small_example(c.file), o, emulator());
  EXPECT_EQ(r.summary.termination,
            c.iterations < o.max_iters ? Termination::Converged : Termination::MaxIterations);
  EXPECT_EQ(r.summary.iterations, c.iterations);
  EXPECT_TRUE(r.summary.warnings.empty()) << r.summary.warnings.front();
}

INSTANTIATE_TEST_SUITE_P(
    StoppingRule, StoppingRuleDefaults,
    ::testing::Values(DefaultStop{"denoise_tv_aniso.prox", "pc", 660},
                      DefaultStop{"denoise_tv_aniso.prox", "ladmm", 660},
                      DefaultStop{"denoise_tv_aniso.prox", "admm", 630},
                      DefaultStop{"deconv_tv.prox", "pc", 1000}, DefaultStop{"deconv_tv.prox", "ladmm", 1000},
                      DefaultStop{"deconv_tv.prox", "admm", 1000}, DefaultStop{"inpaint.prox", "pc", 960},
                      DefaultStop{"inpaint.prox", "ladmm", 970}, DefaultStop{"inpaint.prox", "admm", 880}),
    [](const ::testing::TestParamInfo<DefaultStop>& info) {
      std::string name = std::string(info.param.file) + "_" + info.param.solver;
      for (char& ch : name) {
        if (ch == '.' || ch == '-') {
          ch = '_';
        }
      }
      return name;
    });

// A stop the absolute tolerance alone decides, more than 1e-5 of the
// values, is said in the summary's warnings (docs/solvers.md, "Stopping"). The TV example with its data and
// weight scaled by 1e-3 is the same problem in other units (x and its
// objective scaled by 1e-3 and 1e-6), but at the defaults its residuals pass
// √n·eps_abs while the iterates still move: it stops short of the optimum,
// and says so. With eps_abs lowered to what the warning names, it stops
// where the unscaled problem does, silently; so does the unscaled problem.
TEST(StoppingRule, AStopByTheAbsoluteToleranceAloneIsWarned) {
  const Problem unscaled = small_example("denoise_tv_aniso.prox");
  const std::string& dir = small_examples_dir();
  Array b = io::read_npy(dir + "/data/noisy.npy");
  for (float& v : b.data) v *= 1e-3f;
  io::write_npy(dir + "/data/noisy_milli.npy", b);
  const Problem milli = parse_program(
                            "b = load(\"data/noisy_milli.npy\")\nx = variable(shape(b))\n"
                            "minimize sum_squares(x - b) + 0.0001 * norm1(grad(x)) + nonneg(x)\n",
                            "milli.prox", dir)
                            .problem;
  SolverOptions o;
  o.solver = "pc";
  const SolveResult want = solve(unscaled, o, emulator());
  ASSERT_EQ(want.summary.termination, Termination::Converged);
  EXPECT_TRUE(want.summary.warnings.empty());

  const SolveResult loose = solve(milli, o, emulator());
  ASSERT_EQ(loose.summary.termination, Termination::Converged);
  EXPECT_LT(loose.summary.iterations, want.summary.iterations / 4);
  EXPECT_GT(loose.summary.objective * 1e6, want.summary.objective * (1 + 1e-3));
  ASSERT_EQ(loose.summary.warnings.size(), 1u);
  const std::string& w = loose.summary.warnings[0];
  EXPECT_NE(w.find("converged by the absolute tolerance alone"), std::string::npos) << w;
  const size_t at = w.find("set eps_abs to ");
  ASSERT_NE(at, std::string::npos) << w;
  const double advised = std::stod(w.substr(at + 15));
  EXPECT_GT(advised, 0);
  EXPECT_LT(advised, o.eps_abs * 1e-2);

  o.eps_abs = advised;
  const SolveResult tight = solve(milli, o, emulator());
  ASSERT_EQ(tight.summary.termination, Termination::Converged);
  EXPECT_TRUE(tight.summary.warnings.empty()) << tight.summary.warnings.front();
  EXPECT_NEAR(tight.summary.objective * 1e6, want.summary.objective, 1e-5 * want.summary.objective);
  // eps_rel = 0 asks for the absolute rule alone: no warning. Nor where
  // eps_abs is under 1e-5 of the values (here 5e-9 against about 1e-3),
  // whatever eps_rel: the stop is then within float32's reach of the
  // optimum.
  o.eps_abs = 3e-6;
  o.eps_rel = 0;
  const SolveResult abs_only = solve(milli, o, emulator());
  ASSERT_EQ(abs_only.summary.termination, Termination::Converged);
  EXPECT_TRUE(abs_only.summary.warnings.empty());
  o.eps_abs = 5e-9;  // about 5e-6 of the values (without the floor, a share of 2e-5: warned)
  o.eps_rel = 1e-10;
  const SolveResult fine = solve(milli, o, emulator());
  ASSERT_EQ(fine.summary.termination, Termination::Converged);
  EXPECT_TRUE(fine.summary.warnings.empty());
  EXPECT_NEAR(fine.summary.objective * 1e6, want.summary.objective, 1e-5 * want.summary.objective);
  // The unscaled problem with eps_rel far below eps_abs: eps_rel did not decide, and the warning says so.
  o.eps_abs = 1e-3;
  o.eps_rel = 1e-6;
  const SolveResult absolute = solve(unscaled, o, emulator());
  ASSERT_EQ(absolute.summary.warnings.size(), 1u);
  EXPECT_NE(absolute.summary.warnings[0].find("times the relative part (eps_rel = 1e-06"), std::string::npos)
      << absolute.summary.warnings[0];
}

// The adaptive rules at a check, by themselves (docs/solvers.md, "Adaptive
// step sizes"). pc: r > 1.5 s scales τ by 1/(1 − α) and σ by (1 − α), the
// reverse when s > 1.5 r, then α ← 0.95 α; balanced residuals change
// nothing. admm: r > 10 s doubles ρ and halves u (so ρu, the unscaled dual,
// is kept), s > 10 r the reverse; ladmm: likewise for its penalty 1/λ.
TEST(AdaptiveRules, TheyBalanceTheResiduals) {
  PassManagerOptions po;
  po.pass.solver = "admm";
  const Problem split = run_passes(example("inpaint.prox"), po);
  const Layout l = layout_of(split);
  SolverOptions o;
  o.adaptive_steps = true;
  o.steps.pc_tau = 0.5;
  o.steps.pc_sigma = 2;
  IterationInfo primal_behind, dual_behind, balanced;
  primal_behind.r = 2, primal_behind.s = 1;
  dual_behind.r = 1, dual_behind.s = 2;
  balanced.r = 1, balanced.s = 1.4;

  std::unique_ptr<Algorithm> pc = Algorithm::create("pc");
  std::map<std::string, double> p = pc->adaptive_params(o);
  EXPECT_EQ(p, (std::map<std::string, double>{{"pc_tau", 0.5}, {"pc_sigma", 2}, {"_pc_alpha", 0.5}}));
  std::map<std::string, Array> none;
  EXPECT_TRUE(pc->adapt(l, primal_behind, &p, &none));
  EXPECT_DOUBLE_EQ(p.at("pc_tau"), 1.0);
  EXPECT_DOUBLE_EQ(p.at("pc_sigma"), 1.0);
  EXPECT_DOUBLE_EQ(p.at("_pc_alpha"), 0.475);
  EXPECT_TRUE(pc->adapt(l, dual_behind, &p, &none));
  EXPECT_DOUBLE_EQ(p.at("pc_tau"), 0.525);
  EXPECT_DOUBLE_EQ(p.at("pc_sigma"), 1 / 0.525);
  EXPECT_DOUBLE_EQ(p.at("_pc_alpha"), 0.475 * 0.95);
  const std::map<std::string, double> before = p;
  EXPECT_FALSE(pc->adapt(l, balanced, &p, &none));
  EXPECT_EQ(p, before);

  std::unique_ptr<Algorithm> admm = Algorithm::create("admm");
  std::map<std::string, double> q = admm->adaptive_params(o);
  EXPECT_EQ(q, (std::map<std::string, double>{{state_names::kRho, 1}, {"_admm_changes", 0}}));
  std::map<std::string, Array> state;
  admm->init_state(l, &state);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    for (size_t k = 0; k < state.at(state_names::u(i)).data.size(); ++k)
      state.at(state_names::u(i)).data[k] = 0.25f * static_cast<float>(k % 7) - 0.5f;
  }
  const std::map<std::string, Array> start = state;
  IterationInfo far_primal, far_dual;
  far_primal.r = 11, far_primal.s = 1;
  far_dual.r = 1, far_dual.s = 11;
  EXPECT_FALSE(admm->adapt(l, primal_behind, &q, &state));  // within a factor 10: kept
  EXPECT_TRUE(admm->adapt(l, far_primal, &q, &state));
  EXPECT_EQ(q.at(state_names::kRho), 2);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Array &u = state.at(state_names::u(i)), &u0 = start.at(state_names::u(i));
    for (size_t k = 0; k < u.data.size(); ++k) EXPECT_EQ(2 * u.data[k], u0.data[k]);
  }
  EXPECT_TRUE(admm->adapt(l, far_dual, &q, &state));
  EXPECT_TRUE(admm->adapt(l, far_dual, &q, &state));
  EXPECT_EQ(q.at(state_names::kRho), 0.5);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Array &u = state.at(state_names::u(i)), &u0 = start.at(state_names::u(i));
    for (size_t k = 0; k < u.data.size(); ++k) EXPECT_EQ(u.data[k], 2 * u0.data[k]);
  }
  // After 16 changes ρ stays (their convergence needs it fixed at last).
  for (int k = 3; k < 16; ++k) EXPECT_TRUE(admm->adapt(l, far_dual, &q, &state));
  EXPECT_EQ(q.at(state_names::kRho), std::exp2(-14));
  EXPECT_FALSE(admm->adapt(l, far_dual, &q, &state));
  EXPECT_FALSE(admm->adapt(l, far_primal, &q, &state));
  EXPECT_EQ(q.at(state_names::kRho), std::exp2(-14));
  // ladmm: the same balance of its penalty 1/λ: r > 10 s halves λ and u (u = λy, so y is kept),
  // s > 10 r doubles them; the iteration's μ moves with λ (the program takes λ alone).
  std::unique_ptr<Algorithm> ladmm = Algorithm::create("ladmm");
  o.steps.ladmm_lambda = 4;
  std::map<std::string, double> w = ladmm->adaptive_params(o);
  EXPECT_EQ(w, (std::map<std::string, double>{{"ladmm_lambda", 4}, {"_ladmm_changes", 0}}));
  std::map<std::string, Array> lstate = start;
  EXPECT_FALSE(ladmm->adapt(l, primal_behind, &w, &lstate));  // within a factor 10: kept
  EXPECT_TRUE(ladmm->adapt(l, far_primal, &w, &lstate));
  EXPECT_EQ(w.at("ladmm_lambda"), 2);
  for (size_t i = 0; i < l.psi.size(); ++i) {
    const Array &u = lstate.at(state_names::u(i)), &u0 = start.at(state_names::u(i));
    for (size_t k = 0; k < u.data.size(); ++k) EXPECT_EQ(2 * u.data[k], u0.data[k]);
  }
  EXPECT_TRUE(ladmm->adapt(l, far_dual, &w, &lstate));
  EXPECT_TRUE(ladmm->adapt(l, far_dual, &w, &lstate));
  EXPECT_EQ(w.at("ladmm_lambda"), 8);
  for (int k = 4; k <= 16; ++k) EXPECT_TRUE(ladmm->adapt(l, far_dual, &w, &lstate));
  EXPECT_FALSE(ladmm->adapt(l, far_dual, &w, &lstate));  // 16 changes: λ stays
  EXPECT_EQ(w.at("ladmm_lambda"), 4 * std::exp2(14));
  // Without adaptive steps there are none; hqs has none.
  o.adaptive_steps = false;
  EXPECT_TRUE(pc->adaptive_params(o).empty());
  EXPECT_TRUE(admm->adaptive_params(o).empty());
  EXPECT_TRUE(ladmm->adaptive_params(o).empty());
  o.adaptive_steps = true;
  EXPECT_TRUE(Algorithm::create("hqs")->adaptive_params(o).empty());
}

// ladmm's adaptive program takes λ as a run-time parameter and moves μ with it
// (μ/λ kept): run with ladmm_lambda = 4 from λ = 2, μ = 0.5, it computes what
// the fixed-step program with λ = 4, μ = 1 computes.
TEST(AdaptiveRules, LadmmsProgramMovesMuWithLambda) {
  PassManagerOptions po;
  po.pass.solver = "ladmm";
  const Problem split = run_passes(example("inpaint.prox"), po);  // the layout points into it
  const Layout l = layout_of(split);
  SolverOptions a;
  a.solver = "ladmm";
  a.adaptive_steps = true;
  a.steps.ladmm_lambda = 2;
  a.steps.ladmm_mu = 0.5;
  SolverOptions f = a;
  f.adaptive_steps = false;
  f.steps.ladmm_lambda = 4;
  f.steps.ladmm_mu = 1;
  std::unique_ptr<Algorithm> alg = Algorithm::create("ladmm");
  std::unique_ptr<CompiledStep> adaptive = emulator().compile(alg->iteration(l, a)),
                                fixed = emulator().compile(alg->iteration(l, f));
  const std::map<std::string, Array> state = random_state(l, 7);
  StepInputs in;
  for (const auto& [name, v] : state) in.buffers[name] = &v;
  in.params[kCheckParam] = 1;
  const StepOutputs want = fixed->run(in);
  in.params["ladmm_lambda"] = 4;
  const StepOutputs got = adaptive->run(in);
  ASSERT_EQ(got.arrays.size(), want.arrays.size());
  for (const auto& [name, v] : want.arrays) {
    const Array& w = got.arrays.at(name);
    for (size_t k = 0; k < v.data.size(); ++k)
      ASSERT_NEAR(w.data[k], v.data[k], 1e-6 * (1 + std::fabs(v.data[k]))) << name;
  }
  for (const auto& [name, v] : want.scalars)
    EXPECT_NEAR(got.scalars.at(name), v, 1e-9 * (1 + std::fabs(v))) << name;
}

}  // namespace
}  // namespace proxc::internal
