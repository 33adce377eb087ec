// The solvers reach the optimum of small canonical problems (a reference
// optimum computed here by a separate double-precision primal-dual loop over
// the emulator's operators), halide and emulate follow the same trajectory,
// fused iterations match unfused ones, and NaN stops a solve as "diverged".

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

#include "check/check.h"
#include "emulate/emulate_backend.h"
#include "emulate/linop.h"
#include "emulate/prox.h"
#include "frontend/parser.h"
#include "halide/halide_backend.h"
#include "io/npy.h"
#include "pipeline/pipeline.h"
#include "pipeline/solve.h"
#include "solvers/layout.h"
#include "gpu_backend.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using emulate::Tensor;

Backend& emulator() {
  static std::unique_ptr<Backend> b = make_emulate_backend();
  return *b;
}
Backend& halide() {
  static std::unique_ptr<Backend> b = make_halide_backend();
  return *b;
}

// Data for small canonical problems (20 × 16), written once per process.
std::string data_dir() {
  static std::string dir = [] {
    std::string d = ::testing::TempDir() + "/proxc_solver_data";
    std::filesystem::create_directories(d);
    std::mt19937_64 rng(99);
    std::normal_distribution<float> noise(0.0f, 0.1f);
    std::bernoulli_distribution keep(0.5);
    const int64_t h = 20, w = 16;
    Array clean(Shape{h, w}), noisy(Shape{h, w}), mask(Shape{h, w}), masked(Shape{h, w});
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        float v = 0.3f * static_cast<float>(j) / static_cast<float>(w) + ((i > 5 && i < 14 && j > 4 && j < 11) ? 0.5f : 0.0f);
        size_t k = static_cast<size_t>(i * w + j);
        clean.data[k] = v;
        noisy.data[k] = v + noise(rng);
        mask.data[k] = keep(rng) ? 1.0f : 0.0f;
        masked.data[k] = mask.data[k] * (v + 0.1f * noise(rng));
      }
    }
    Array k(Shape{3, 3}, {0.05f, 0.1f, 0.05f, 0.1f, 0.4f, 0.1f, 0.05f, 0.1f, 0.05f});
    // blurred = conv(k, clean) + noise/10 (circular, origin at the centre)
    Array blurred(Shape{h, w});
    for (int64_t m = 0; m < h; ++m) {
      for (int64_t n = 0; n < w; ++n) {
        double s = 0;
        for (int a = 0; a < 3; ++a) {
          for (int b = 0; b < 3; ++b) {
            s += k.data[static_cast<size_t>(a * 3 + b)] *
                 clean.data[static_cast<size_t>(((m - a + 1 + h) % h) * w + ((n - b + 1 + w) % w))];
          }
        }
        blurred.data[static_cast<size_t>(m * w + n)] = static_cast<float>(s) + 0.1f * noise(rng);
      }
    }
    io::write_npy(d + "/noisy.npy", noisy);
    io::write_npy(d + "/mask.npy", mask);
    io::write_npy(d + "/masked.npy", masked);
    io::write_npy(d + "/k.npy", k);
    io::write_npy(d + "/blurred.npy", blurred);
    // Negated data, for offsets written with a plus sign.
    for (Array* a : {&noisy, &blurred}) {
      for (float& v : a->data) v = -v;
    }
    io::write_npy(d + "/neg_noisy.npy", noisy);
    io::write_npy(d + "/neg_blurred.npy", blurred);
    return d;
  }();
  return dir;
}

// The largest |a - b| over the entries of two arrays of one shape.
double worst_difference(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape, b.shape);
  double worst = 0;
  for (size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i) {
    worst = std::max(worst, std::fabs(double(a.data[i]) - b.data[i]));
  }
  return worst;
}

struct Canonical {
  const char* name;
  const char* text;
};

const Canonical kProblems[] = {
    {"tv_aniso", "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
                 "minimize sum_squares(x - b) + 0.1 * norm1(grad(x)) + nonneg(x)\n"},
    {"tv_iso", "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
               "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n"},
    {"deconv", "b = load(\"blurred.npy\")\nk = load(\"k.npy\")\nx = variable(shape(b))\n"
               "minimize sum_squares(conv(k, x) - b) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)\n"},
    {"inpaint", "b = load(\"masked.npy\")\nm = load(\"mask.npy\")\nx = variable(shape(b))\n"
                "minimize sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])\n"},
    // ADMM solves these x-updates directly: by one FFT, and elementwise.
    {"deconv_nonneg", "b = load(\"blurred.npy\")\nk = load(\"k.npy\")\nx = variable(shape(b))\n"
                      "minimize sum_squares(conv(k, x) - b) + 0.1 * norm1(x) + nonneg(x)\n"},
    {"mask_ridge", "b = load(\"masked.npy\")\nm = load(\"mask.npy\")\nx = variable(shape(b))\n"
                   "minimize sum_squares(mul_elemwise(m, x) - b) + 0.2 * sum_squares(x) + norm1(x, alpha=0.01)\n"},
    // The weighted functions (psi terms with their own prox).
    {"weighted", "b = load(\"masked.npy\")\nm = load(\"mask.npy\")\nx = variable(shape(b))\n"
                 "minimize weighted_sum_squares(x - b, m + 0.1) + 0.05 * weighted_group_norm1(grad(x), [2], 2)"
                 " + 0.01 * weighted_norm1(x, m) + weighted_nonneg(x, m + 1)\n"},
    // Two quadratics diagonal in frequency: omega together for pc, ladmm and admm (one FFT
    // solve of both), the first alone for hqs.
    {"two_quadratics", "b = load(\"noisy.npy\")\nc = load(\"blurred.npy\")\nk = load(\"k.npy\")\n"
                       "x = variable(shape(b))\n"
                       "minimize sum_squares(x - b) + sum_squares(conv(k, x) - c) + 0.05 * norm1(x)\n"},
};

Problem problem(const Canonical& c) { return parse_program(c.text, std::string(c.name) + ".prox", data_dir()).problem; }

// The objective, with indicators evaluated at the projection max(x, 0).
double objective(const Problem& p, const Array& x) {
  ObjectiveReport r = evaluate_objective(emulator(), p, {{p.variables()[0].get(), &x}});
  return r.has_projection ? r.total_at_projection : r.total;
}

// A reference optimum: Chambolle–Pock in double over every term as a dual
// block (no splitting choices, no float state), tau = sigma = 0.99/||K||,
// 20000 iterations.
double reference_optimum(const Problem& user) {
  Problem p = absorb_pass(user, {});
  Expr x = p.variables()[0];
  std::vector<Expr> ks;
  for (const FunctionTerm& t : p.terms) ks.push_back(t.arg);
  const double L = norm_bound(make_vstack(ks));
  const double tau = 0.99 / L, sigma = 0.99 / L;
  Tensor xv(x->shape), xbar(x->shape);
  std::vector<Tensor> y;
  for (const Expr& k : ks) y.push_back(Tensor(k->shape));
  for (int it = 0; it < 20000; ++it) {
    Tensor kty(x->shape);
    for (size_t i = 0; i < ks.size(); ++i) {
      Tensor kx = emulate::forward(ks[i], {{x.get(), &xbar}}, false);
      Tensor z = y[i];
      for (size_t j = 0; j < z.size(); ++j) z.data[j] += sigma * kx.data[j];
      Tensor zs = z;
      for (double& v : zs.data) v /= sigma;
      Tensor pr = emulate::prox(p.terms[i], zs, 1.0 / sigma);
      for (size_t j = 0; j < z.size(); ++j) y[i].data[j] = z.data[j] - sigma * pr.data[j];
      Tensor a = emulate::adjoint(ks[i], y[i]).at(x.get());
      for (size_t j = 0; j < kty.size(); ++j) kty.data[j] += a.data[j];
    }
    for (size_t j = 0; j < xv.size(); ++j) {
      double next = xv.data[j] - tau * kty.data[j];
      xbar.data[j] = 2 * next - xv.data[j];
      xv.data[j] = next;
    }
  }
  return objective(user, xv.to_array());
}

class Optimum : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(Optimum, SolverReachesTheReferenceOptimum) {
  const Canonical& c = kProblems[std::get<0>(GetParam())];
  const std::string solver = std::get<1>(GetParam());
  Problem p = problem(c);
  static std::map<std::string, double> optima;
  if (!optima.count(c.name)) optima[c.name] = reference_optimum(p);
  const double opt = optima[c.name];
  SolverOptions o;
  o.solver = solver;
  o.max_iters = solver == "hqs" ? 6000 : 2000;
  // HQS solves a penalised problem whose solution reaches the optimum as rho
  // grows: continue further than the default 256.
  o.hqs_rho_max = 1e5;
  o.eps_abs = 1e-7;
  o.eps_rel = 1e-7;
  SolveResult r = solve(p, o, emulator());
  double got = objective(p, r.x.at("x"));
  EXPECT_LE(std::fabs(got - opt), 1e-3 * std::fabs(opt))
      << c.name << " " << solver << ": objective " << got << ", reference optimum " << opt << " ("
      << to_string(r.summary.termination) << " after " << r.summary.iterations << ")";
}

INSTANTIATE_TEST_SUITE_P(Canonical, Optimum,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kProblems))),
                                            ::testing::Values("pc", "ladmm", "admm", "hqs")),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
                           return std::string(kProblems[std::get<0>(info.param)].name) + "_" + std::get<1>(info.param);
                         });

// Affine residuals in the forms users write them: absorb normalises each
// into the function's parameters, and every solver reaches the reference
// optimum of the same objective written plainly (`sum_squares(A x - b)`).
struct AffineForm {
  const char* name;
  const char* data;   // the let lines
  const char* form;   // the objective as a user writes it
  const char* plain;  // the same objective in the plain form
};

const char* const kNoisy = "b = load(\"noisy.npy\")\nn = load(\"neg_noisy.npy\")\nw = load(\"masked.npy\")\n";
const char* const kBlurred = "b = load(\"blurred.npy\")\nn = load(\"neg_blurred.npy\")\nk = load(\"k.npy\")\n";
const char* const kMasked = "b = load(\"masked.npy\")\nm = load(\"mask.npy\")\n";

const AffineForm kAffineForms[] = {
    {"b_minus_x", kNoisy, "sum_squares(b - x) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)",
     "sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)"},
    {"x_plus_c", kNoisy, "sum_squares(x + n) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)",
     "sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)"},
    {"half_residual", kBlurred, "sum_squares(0.5 * (conv(k, x) - b)) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)",
     "0.25 * sum_squares(conv(k, x) - b) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)"},
    {"conv_plus_c", kBlurred, "sum_squares(conv(k, x) + n) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)",
     "sum_squares(conv(k, x) - b) + 0.01 * group_norm1(grad(x), [2]) + nonneg(x)"},
    {"negated_mask", kMasked, "sum_squares(-(mul_elemwise(m, x) - b)) + 0.05 * group_norm1(grad(x), [2])",
     "sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])"},
    {"b_minus_mask", kMasked, "sum_squares(b - mul_elemwise(m, x)) + 0.05 * group_norm1(grad(x), [2])",
     "sum_squares(mul_elemwise(m, x) - b) + 0.05 * group_norm1(grad(x), [2])"},
    {"both_scaled", kNoisy, "sum_squares(2 * x - 2 * b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)",
     "4 * sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)"},
    {"array_c", kNoisy, "sum_squares(x - b, c=w) + 0.1 * group_norm1(grad(x), [2])",
     "sum_squares(x - b) + sum_entries(mul_elemwise(w, x - b)) + 0.1 * group_norm1(grad(x), [2])"},
    {"offset_in_tv", kNoisy, "sum_squares(x - b) + 0.1 * norm1(grad(b - x))",
     "sum_squares(x - b) + 0.1 * norm1(grad(x) - grad(b))"},
};

class Affine : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(Affine, EveryResidualFormReachesThePlainOptimum) {
  const AffineForm& f = kAffineForms[std::get<0>(GetParam())];
  const std::string solver = std::get<1>(GetParam());
  auto parse = [&](const char* objective) {
    std::string text = std::string(f.data) + "x = variable(shape(b))\nminimize " + objective + "\n";
    return parse_program(text, std::string(f.name) + ".prox", data_dir()).problem;
  };
  Problem form = parse(f.form), plain = parse(f.plain);
  static std::map<std::string, double> optima;
  if (!optima.count(f.plain)) optima[f.plain] = reference_optimum(plain);
  const double opt = optima[f.plain];
  SolverOptions o;
  o.solver = solver;
  o.max_iters = 3000;
  o.eps_abs = o.eps_rel = 1e-7;
  SolveResult r = solve(form, o, emulator());
  // The two objectives are one function: the same value at the result.
  const Array& x = r.x.at("x");
  EXPECT_NEAR(objective(form, x), objective(plain, x), 1e-6 * std::fabs(opt) + 1e-6);
  EXPECT_NEAR(r.summary.objective, objective(form, x), 1e-5 * std::fabs(opt) + 1e-6);
  EXPECT_LE(std::fabs(objective(form, x) - opt), 1e-3 * std::fabs(opt) + 1e-4)
      << f.name << " " << solver << ": objective " << objective(form, x) << ", plain optimum " << opt;
}

INSTANTIATE_TEST_SUITE_P(Forms, Affine,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(std::size(kAffineForms))),
                                            ::testing::Values("pc", "ladmm", "admm")),
                         [](const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
                           return std::string(kAffineForms[std::get<0>(info.param)].name) + "_" +
                                  std::get<1>(info.param);
                         });

// Each solver setting changes the iterates as ProxImaL's update formulas
// say. On problems whose stacked psi operator is x itself (||K|| = 1: the
// scale pass changes nothing) two iterations from zero are computed by hand.
class Settings : public ::testing::Test {
 protected:
  const std::vector<double> b = {-2.0, -0.3, 0.0, 0.2, 0.9, 3.0};
  Problem parse(const std::string& objective) const {
    return parse_program("b = array([2, 3], [-2, -0.3, 0, 0.2, 0.9, 3])\nx = variable(2, 3)\nminimize " + objective +
                             "\n",
                         "settings.prox", data_dir())
        .problem;
  }
  Array two_iterations(const Problem& p, const std::string& solver, const StepSizes& steps) const {
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 2;
    o.eps_abs = o.eps_rel = 0;
    o.steps = steps;
    SolveResult r = solve(p, o, emulator());
    EXPECT_EQ(r.summary.knorm, 1.0);
    return r.x.at("x");
  }
  static double soft(double u, double t) { return std::copysign(std::max(std::fabs(u) - t, 0.0), u); }
  static double clip(double u, double t) { return std::max(-t, std::min(t, u)); }
};

TEST_F(Settings, PockChambolleTauSigmaTheta) {
  // sum_squares(x - b) is omega, norm1(x) psi:
  // x1 = prox_ω(1/τ, 0) = 2τb/(2τ+1); x̄ = (1+θ)x1; y = σ·clip(x̄, 1/σ);
  // x2 = prox_ω(1/τ, x1 − τy) = (2τb + x1 − τy)/(2τ+1).
  const Problem p = parse("sum_squares(x - b) + norm1(x)");
  for (auto [tau, sigma, theta] : {std::tuple{1.0, 1.0, 1.0}, {0.5, 2.0, 1.0}, {0.25, 1.0, 0.5}, {2.0, 0.4, 0.0}}) {
    StepSizes st;
    st.pc_tau = tau;
    st.pc_sigma = sigma;
    st.pc_theta = theta;
    const Array x = two_iterations(p, "pc", st);
    for (size_t i = 0; i < b.size(); ++i) {
      const double x1 = 2 * tau * b[i] / (2 * tau + 1);
      const double y = sigma * clip((1 + theta) * x1, 1 / sigma);
      EXPECT_NEAR(x.data[i], (2 * tau * b[i] + x1 - tau * y) / (2 * tau + 1), 1e-6)
          << "tau " << tau << " sigma " << sigma << " theta " << theta << " entry " << i;
    }
  }
}

// ProxImaL's Problem switches: absorb, merge, try_diagonalize, try_fast_norm.
// Each changes the split problem, never the optimum, which is closed-form
// here: (x − b)² + 0.5·x² + |x| is least at soft(2b, 1)/3 entrywise.
TEST_F(Settings, PassSwitchesChangeThePathNotTheOptimum) {
  const Problem offset = parse("sum_squares(x - b) + 0.5 * sum_squares(x) + norm1(x)");
  const Problem param = parse("sum_squares(x, b=b) + 0.5 * sum_squares(x) + norm1(x)");
  struct Switches {
    bool absorb, merge, diagonalize;
    const char* norm;
  };
  std::map<std::string, double> knorm;
  for (const Switches& w : {Switches{true, true, true, "bound"}, Switches{true, false, true, "bound"},
                            Switches{true, true, false, "bound"}, Switches{true, false, false, "power"},
                            Switches{false, true, true, "bound"}, Switches{false, false, false, "power"}}) {
    for (const char* solver : {"pc", "ladmm", "admm"}) {
      SCOPED_TRACE(std::string(solver) + (w.absorb ? "" : " no-absorb") + (w.merge ? "" : " no-merge") +
                   (w.diagonalize ? "" : " no-diagonalize") + " norm " + w.norm);
      SolverOptions o;
      o.solver = solver;
      o.max_iters = 5000;
      o.eps_abs = o.eps_rel = 1e-9;
      o.absorb = w.absorb;
      o.merge = w.merge;
      o.diagonalize = w.diagonalize;
      o.norm = w.norm;
      // Without absorb the offset still moves into b (ProxImaL's absorb=False
      // absorbs offsets), so both forms solve alike.
      SolveResult r = solve(offset, o, emulator());
      for (size_t i = 0; i < b.size(); ++i)
        EXPECT_NEAR(r.x.at("x").data[i], soft(2 * b[i], 1) / 3, 1e-4) << i;
      if (!w.absorb) {
        SolveResult rp = solve(param, o, emulator());
        for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(rp.x.at("x").data[i], r.x.at("x").data[i]) << i;
      }
      knorm[std::string(w.norm) + (w.merge ? "m" : "") + (w.diagonalize ? "d" : "")] = r.summary.knorm;
    }
  }
  // Without merge and direct solves, every term is split off: ||K|| of
  // [I; I; I] is sqrt(3), which the estimate finds.
  EXPECT_NEAR(knorm["power"], std::sqrt(3.0), 1e-6);
  // The norm: ProxImaL's bound of grad, 2·sqrt(2), against the Lanczos
  // estimate of the actual ||grad|| on a 2 × 3 grid (below it); the same optimum.
  const Problem tv = parse("sum_squares(x, b=b) + norm1(grad(x))");
  std::vector<SolveResult> r;
  for (const char* norm : {"bound", "power"}) {
    SolverOptions o;
    o.max_iters = 5000;
    o.eps_abs = o.eps_rel = 1e-9;
    o.norm = norm;
    r.push_back(solve(tv, o, emulator()));
  }
  EXPECT_NEAR(r[0].summary.knorm, 2 * std::sqrt(2.0), 1e-12);
  EXPECT_LT(r[1].summary.knorm, r[0].summary.knorm - 0.1);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_NEAR(r[0].x.at("x").data[i], r[1].x.at("x").data[i], 1e-4) << i;
}

TEST_F(Settings, LinearizedAdmmLambdaMu) {
  // v1 = prox_ω(1/μ, 0) = 2μb/(2μ+1); z1 = soft(v1, λ); u1 = v1 − z1;
  // v2 = prox_ω(1/μ, v1 − (μ/λ)(v1 − z1 + u1)) = (2μb + v1 − (2μ/λ)u1)/(2μ+1).
  const Problem p = parse("sum_squares(x - b) + norm1(x)");
  for (auto [lmb, mu] : {std::pair{1.0, 1.0}, {1.0, 1.0 / 9}, {2.0, 0.5}, {0.5, 0.5}}) {
    StepSizes st;
    st.ladmm_lambda = lmb;
    st.ladmm_mu = mu;
    const Array x = two_iterations(p, "ladmm", st);
    for (size_t i = 0; i < b.size(); ++i) {
      const double v1 = 2 * mu * b[i] / (2 * mu + 1);
      const double u1 = v1 - soft(v1, lmb);
      EXPECT_NEAR(x.data[i], (2 * mu * b[i] + v1 - (2 * mu / lmb) * u1) / (2 * mu + 1), 1e-6)
          << "lambda " << lmb << " mu " << mu << " entry " << i;
    }
  }
}

TEST_F(Settings, AdmmRho) {
  // One psi term norm1(x − b): v1 = 0; z1 = b + soft(−b, 1/ρ); u1 = −z1; v2 = z1 − u1 = 2·z1.
  const Problem p = parse("norm1(x - b)");
  for (double rho : {1.0, 0.5, 4.0}) {
    StepSizes st;
    st.admm_rho = rho;
    const Array x = two_iterations(p, "admm", st);
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_NEAR(x.data[i], 2 * (b[i] + soft(-b[i], 1 / rho)), 1e-6) << "rho " << rho << " entry " << i;
    }
  }
}

TEST_F(Settings, HqsContinuation) {
  // The levels rho_0, rho_0·scale, ... below rho_max, then rho_max, each
  // max_inner_iters long: with 3 levels of 4 iterations, the same run as
  // 12 iterations spread over the same 3 levels; another rho_0 or scale is
  // another run.
  const Problem p = parse("sum_squares(x - b) + norm1(grad(x))");
  auto run = [&](double rho_0, double scale, double rho_max, int inner) {
    SolverOptions o;
    o.solver = "hqs";
    o.max_iters = 12;
    o.eps_abs = o.eps_rel = 0;
    o.hqs_rho_0 = rho_0;
    o.hqs_rho_scale = scale;
    o.hqs_rho_max = rho_max;
    o.hqs_max_inner_iters = inner;
    return solve(p, o, emulator()).x.at("x");
  };
  const Array inner = run(2, 4, 32, 4), spread = run(2, 4, 32, 0);
  EXPECT_EQ(worst_difference(inner, spread), 0.0);
  EXPECT_GT(worst_difference(inner, run(1, 4, 32, 4)), 1e-4);
  EXPECT_GT(worst_difference(inner, run(2, 2, 32, 4)), 1e-4);
  EXPECT_GT(worst_difference(inner, run(2, 4, 32, 2)), 1e-4);
}

TEST(MultiVariable, SolversAgreeOnTheOptimumWithTwoVariables) {
  // Two variables coupled by a term of both: every solver splits it and
  // reaches the same objective.
  Problem p = parse_program("b = load(\"noisy.npy\")\nx = variable(shape(b))\ny = variable(shape(b))\n"
                            "minimize sum_squares(x - b) + sum_squares(y - 0.5) + 0.5 * norm1(x - y)"
                            " + 0.1 * group_norm1(grad(x), [2])\n",
                            "two.prox", data_dir())
                  .problem;
  std::map<std::string, double> obj;
  for (const char* solver : {"pc", "ladmm", "admm"}) {
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 3000;
    o.eps_abs = o.eps_rel = 1e-8;
    SolveResult r = solve(p, o, emulator());
    ASSERT_EQ(r.x.size(), 2u);
    EXPECT_TRUE(r.x.count("x") && r.x.count("y"));
    obj[solver] = r.summary.objective;
  }
  EXPECT_NEAR(obj["ladmm"], obj["pc"], 1e-3 * obj["pc"]);
  EXPECT_NEAR(obj["admm"], obj["pc"], 1e-3 * obj["pc"]);
}

// conv with a zero or replicated boundary is no circulant: no FFT solve
// (the data term is split off), yet every solver reaches the optimum of the
// strongly convex problem ||K x − b||² + 0.1·||x − 0.5||², where the gradient
// 2Kᵀ(K x − b) + 0.2 (x − 0.5) vanishes: at the result its largest entry is
// below 1e-3 of its largest at x = 0 (float32 iterates; measured 1e-5).
TEST(Boundary, NonCircularDeconvolutionsReachTheirOptimum) {
  for (const char* boundary : {"zero", "replicate"}) {
    Problem p = parse_program("b = load(\"noisy.npy\")\nx = variable(shape(b))\nk = gaussian([5, 5], 1.5)\n"
                              "minimize sum_squares(conv(k, x, boundary=\"" + std::string(boundary) +
                                  "\") - b) + 0.1 * sum_squares(x - 0.5)\n",
                              "bd.prox", data_dir())
                    .problem;
    const Expr conv = p.terms[0].arg->args[0];
    ASSERT_EQ(conv->kind, ExprKind::Conv);
    const Expr var = linop_variables(conv)[0];
    const emulate::Tensor b = emulate::Tensor::from(p.terms[0].arg->args[1]->constant->array);
    auto gradient_max = [&](const emulate::Tensor& x) {
      emulate::Tensor r = emulate::forward(conv, {{var.get(), &x}}, false);
      for (size_t i = 0; i < r.size(); ++i) r.data[i] -= b.data[i];
      emulate::Tensor g = emulate::adjoint(conv, r).at(var.get());
      double m = 0;
      for (size_t i = 0; i < g.size(); ++i) m = std::max(m, std::fabs(2 * g.data[i] + 0.2 * (x.data[i] - 0.5)));
      return m;
    };
    const double at_zero = gradient_max(emulate::Tensor(var->shape));
    for (const char* solver : {"pc", "ladmm", "admm"}) {
      SCOPED_TRACE(std::string(boundary) + ", " + solver);
      SolverOptions o;
      o.solver = solver;
      o.max_iters = 3000;
      o.eps_abs = o.eps_rel = 1e-7;
      SolveResult r = solve(p, o, halide());
      EXPECT_LT(gradient_max(emulate::Tensor::from(r.x.at("x"))), 1e-3 * at_zero);
    }
  }
}

TEST(Trajectory, HalideFollowsTheEmulator) {
  // The same algorithm on float state: after 10 iterations the iterates agree
  // to 1e-4 of the image's scale (a few float roundings per iteration).
  for (const Canonical& c : {kProblems[1], kProblems[2], kProblems[6]}) {
    for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
      SCOPED_TRACE(std::string(c.name) + " " + solver);
      Problem p = problem(c);
      SolverOptions o;
      o.solver = solver;
      o.max_iters = 10;
      o.eps_abs = o.eps_rel = 0;
      SolveResult e = solve(p, o, emulator()), h = solve(p, o, halide());
      EXPECT_EQ(h.summary.iterations, 10);
      const Array &xe = e.x.at("x"), &xh = h.x.at("x");
      EXPECT_LE(worst_difference(xe, xh), 1e-4);
    }
  }
}

TEST(Fuse, FusedIterationsMatchSingleOnes) {
  Problem p = problem(kProblems[2]);
  for (const char* solver : {"pc", "ladmm"}) {
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 20;
    o.eps_abs = o.eps_rel = 0;
    o.check_every = 1;  // with fuse 5: a check after every run
    SolveResult one = solve(p, o, emulator());
    o.fuse = 5;
    SolveResult five = solve(p, o, emulator());
    EXPECT_EQ(five.summary.iterations, 20);
    EXPECT_EQ(five.history.size(), 4u);
    const double worst = worst_difference(one.x.at("x"), five.x.at("x"));
    // Fused iterations keep the state in double inside the pipeline: float rounding only.
    EXPECT_LE(worst, 1e-5) << solver;
  }
}

// On halide a fused program keeps its check gated inside its one pipeline:
// the runs without a check leave the check's values an empty region (which
// a schedule must not shift into the arrays' outside), and the result is the
// unfused emulator's.
TEST(Fuse, GatedChecksOnHalideMatchTheEmulator) {
  Problem p = problem(kProblems[1]);  // every extent at least 8: the schedule without tail copies
  for (const char* solver : {"pc", "ladmm"}) {
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 8;
    o.eps_abs = o.eps_rel = 0;
    // With fuse 2: runs without a check, then one with. (Fuse 5 showed the same
    // and took a minute of CI to compile.)
    o.check_every = 4;
    SolveResult one = solve(p, o, emulator());
    o.fuse = 2;
    SolveResult two = solve(p, o, halide());
    EXPECT_EQ(two.summary.iterations, 8);
    EXPECT_EQ(two.history.size(), 2u);
    const double worst = worst_difference(one.x.at("x"), two.x.at("x"));
    // As the halide-against-emulator solves above: float rounding over 8 iterations.
    EXPECT_LE(worst, 1e-4) << solver;
  }
}

TEST(Admm, DirectXUpdateWhenTheGramMatrixAllowsIt) {
  PassManagerOptions po;
  po.pass.solver = "admm";
  SolverOptions o;
  o.solver = "admm";
  std::string fft = print_step_program(iteration_program(run_passes(problem(kProblems[4]), po), o));
  EXPECT_THAT(fft, ::testing::HasSubstr("circulant_solve"));
  EXPECT_THAT(fft, ::testing::HasSubstr("output x0"));
  std::string diag = print_step_program(iteration_program(run_passes(problem(kProblems[5]), po), o));
  EXPECT_THAT(diag, ::testing::HasSubstr("div"));
  EXPECT_THAT(diag, ::testing::HasSubstr("output x0"));
  // With grad in K there is no direct solve: the x-update is CG on the host.
  std::string cg = print_step_program(iteration_program(run_passes(problem(kProblems[1]), po), o));
  EXPECT_THAT(cg, ::testing::Not(::testing::HasSubstr("output x0")));
}

// ProxImaL's partition for admm: nonneg(x) is psi, the conv least squares is
// omega and solved with it in the x-update (one FFT solve, ρ·I + 2·CᵀC). Before,
// both were psi and the solve ran out of iterations with nonneg violated.
// ProxImaL 0.1.7's Problem.solve(solver="admm", eps_abs=eps_rel=1e-5) returns
// x = [82.785927, −1.36e-4, −1.36e-4], objective 76305.157 (it checks every 100
// iterations, proxc every 10: both stop within the tolerances, not at one point).
TEST(Admm, PartitionedAsProximalItReachesProximalsSolution) {
  const Problem p = parse_program(
                        "k = array([3], [1, 2, 3])\nb = array([3], [-41, 413, 2])\nx = variable(3)\n"
                        "minimize nonneg(x) + sum_squares(conv(k, x) - b)\n",
                        "p.prox", test::temp_dir())
                        .problem;
  SolverOptions o;
  o.solver = "admm";
  o.eps_abs = o.eps_rel = 1e-5;
  PassManagerOptions po;
  po.pass.solver = "admm";
  EXPECT_THAT(print_step_program(iteration_program(run_passes(p, po), o)),
              ::testing::HasSubstr("circulant_solve"));
  for (Backend* b : {&emulator(), &halide()}) {
    const SolveResult r = solve(p, o, *b);
    EXPECT_EQ(r.summary.termination, Termination::Converged) << b->name();
    const Array& x = r.x.at("x");
    // The tolerances bound ‖Kx − z‖ by about 1e-5·‖Kx‖ ≈ 4e-3: x within that of ProxImaL's.
    EXPECT_NEAR(x.data[0], 82.785927, 4e-3) << b->name();
    EXPECT_NEAR(x.data[1], 0, 4e-3) << b->name();
    EXPECT_NEAR(x.data[2], 0, 4e-3) << b->name();
    EXPECT_NEAR(r.summary.objective, 76305.157, 76305.157 * 1e-5)
        << b->name();  // finite: nonneg holds within 1e-3
  }
}

// Where admm's x-update is not direct (grad in K) it is CG
// in three programs of the backend; the summary counts its steps (between 1
// and cg_max_iters per x-update from the second on: the first one's residual
// may be 0 from x = 0, z = u = 0), and a direct x-update has none.
TEST(Cg, StepsAreCountedAndTheProgramsKeepTheArrays) {
  PassManagerOptions po;
  po.pass.solver = "admm";
  SolverOptions o;
  o.solver = "admm";
  o.max_iters = 10;
  o.eps_abs = o.eps_rel = 0;
  const Problem split = run_passes(problem(kProblems[1]), po);
  const std::vector<StepProgram> cg = cg_step_programs(split, o);
  ASSERT_EQ(cg.size(), 3u);
  auto outputs = [](const StepProgram& p) {
    std::set<std::string> names;
    for (const auto& [name, step] : p.outputs) names.insert(name);
    return names;
  };
  EXPECT_EQ(outputs(cg[0]), (std::set<std::string>{"r0", "rr", "bb"}));
  EXPECT_EQ(outputs(cg[1]), (std::set<std::string>{"p0", "ap0", "pap"}));
  EXPECT_EQ(outputs(cg[2]), (std::set<std::string>{"x0", "r0", "rr"}));
  for (Backend* b : {&emulator(), &halide()}) {
    SolveResult r = solve(problem(kProblems[1]), o, *b);
    EXPECT_GE(r.summary.cg_steps, 9) << b->name();
    EXPECT_LE(r.summary.cg_steps, 10 * o.cg_max_iters) << b->name();
    EXPECT_THAT(r.summary.to_json(), ::testing::HasSubstr("\"cg_steps\": " + std::to_string(r.summary.cg_steps)));
    // The profile: each program's runs, in the order of their first run
    // (cg_init, then the iteration: the first x-update's residual is 0 here,
    // from x = z = u = 0; each CG step is one cg_apply and one cg_update),
    // and seconds that fit in the iterating time.
    std::map<std::string, SolverSummary::ProgramTime> runs;
    std::vector<std::string> order;
    double seconds = 0;
    for (const auto& t : r.summary.programs) {
      runs[t.name] = t;
      order.push_back(t.name);
      seconds += t.seconds;
    }
    EXPECT_EQ(order, (std::vector<std::string>{"cg_init", "admm_iteration", "cg_apply", "cg_update"})) << b->name();
    EXPECT_EQ(runs["cg_init"].runs, 10) << b->name();
    EXPECT_EQ(runs["admm_iteration"].runs, 10) << b->name();
    EXPECT_EQ(runs["cg_apply"].runs, r.summary.cg_steps) << b->name();
    EXPECT_EQ(runs["cg_update"].runs, r.summary.cg_steps) << b->name();
    EXPECT_GT(seconds, 0) << b->name();
    EXPECT_LE(seconds, r.summary.iterate_s) << b->name();
    EXPECT_THAT(r.summary.to_json(), ::testing::HasSubstr("\"name\": \"cg_apply\""));
    EXPECT_THAT(r.summary.full_report(), ::testing::HasSubstr("cg_update"));
  }
  // A direct x-update (mul_elemwise only in K): no CG.
  EXPECT_TRUE(cg_step_programs(run_passes(problem(kProblems[5]), po), o).empty());
  EXPECT_EQ(solve(problem(kProblems[5]), o, emulator()).summary.cg_steps, 0);
  o.solver = "pc";
  EXPECT_TRUE(cg_step_programs(split, o).empty());
}

// A deconvolution's Kᵀb depends on the data alone: the solver computes it
// once (hoist_invariants), and the iteration reads it. On the emulator the
// two programs compute what the one did but for Kᵀb rounded to float32
// (within a program the emulator computes in double): one rounding, carried
// through one iteration of operators of norm about 1 and proxes (contractions),
// so within a few float ulps of the values' magnitude; 8 allowed.
TEST(Hoisting, KtbIsComputedOnceAndTheIterationIsUnchanged) {
  for (const char* solver : {"pc", "ladmm"}) {
    SCOPED_TRACE(solver);
    PassManagerOptions po;
    po.pass.solver = solver;
    SolverOptions o;
    o.solver = solver;
    StepProgram whole = iteration_program(run_passes(problem(kProblems[2]), po), o);
    HoistSplit h = hoist_invariants(whole);
    ASSERT_EQ(h.setup.outputs.size(), 1u);
    EXPECT_THAT(print_step_program(h.setup), ::testing::HasSubstr("adjoint[conv("));
    EXPECT_THAT(print_step_program(h.rest), ::testing::Not(::testing::HasSubstr("adjoint[conv(")));
    EXPECT_THAT(print_step_program(whole), ::testing::HasSubstr("adjoint[conv("));
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    std::map<std::string, Array> state;
    StepInputs in;
    for (const Step& input : whole.inputs()) {
      Array a(input->shape);
      for (float& v : a.data) v = u(rng);
      state[input->name] = std::move(a);
    }
    for (const auto& [name, a] : state) in.buffers[name] = &a;
    StepOutputs expected = emulator().compile(whole)->run(in);
    StepOutputs invariants = emulator().compile(h.setup)->run(StepInputs{});
    for (const auto& [name, a] : invariants.arrays) in.buffers[name] = &a;
    for (const auto& [name, v] : invariants.scalars) in.params[name] = v;
    StepOutputs got = emulator().compile(h.rest)->run(in);
    ASSERT_EQ(got.arrays.size(), expected.arrays.size());
    constexpr double kEps32 = 1.0 / (1 << 23);
    for (const auto& [name, a] : expected.arrays) {
      const Array& g = got.arrays.at(name);
      ASSERT_EQ(g.shape, a.shape) << name;
      double scale = 1, worst = 0;
      for (size_t i = 0; i < a.data.size(); ++i) {
        scale = std::max(scale, static_cast<double>(std::fabs(a.data[i])));
        worst = std::max(worst, static_cast<double>(std::fabs(g.data[i] - a.data[i])));
      }
      EXPECT_LE(worst, 8 * kEps32 * scale) << name;
    }
    // Sums of squares of n such values: 8 ulps relative each.
    for (const auto& [name, v] : expected.scalars) EXPECT_NEAR(got.scalars.at(name), v, 8 * kEps32 * std::fabs(v)) << name;
  }
  // Elementwise work on data (a mask times b) is not worth a pipeline.
  {
    PassManagerOptions po;
    po.pass.solver = "pc";
    SolverOptions o;
    StepProgram inpaint = iteration_program(run_passes(problem(kProblems[3]), po), o);
    EXPECT_TRUE(hoist_invariants(inpaint).setup.outputs.empty());
  }
  // Nothing to hoist: the program as it was.
  PassManagerOptions po;
  po.pass.solver = "pc";
  SolverOptions o;
  StepProgram tv = iteration_program(run_passes(problem(kProblems[1]), po), o);
  HoistSplit h = hoist_invariants(tv);
  EXPECT_TRUE(h.setup.outputs.empty());
  EXPECT_EQ(print_step_program(h.rest), print_step_program(tv));
}

// g = grad(u) in two functions: ProxImaL splits it into two terms, each with
// its own copy of 0.35 * grad(u); the iteration applies it to x̄ once.
TEST(CommonSubexpressions, ATermUsedTwiceIsAppliedOnce) {
  Problem prob = parse_program(
                     "b = load(\"noisy.npy\")\nx = variable(shape(b))\ng = grad(x)\n"
                     "minimize sum_squares(x - b) + 0.1 * group_norm1(g, [2]) + 0.01 * norm1(g)\n",
                     "twice.prox", data_dir())
                     .problem;
  PassManagerOptions po;
  po.pass.solver = "pc";
  SolverOptions o;
  const std::string text = print_step_program(iteration_program(run_passes(prob, po), o));
  size_t applied = 0;
  for (size_t at = text.find("grad(x)](%xbar0)"); at != std::string::npos; at = text.find("grad(x)](%xbar0)", at + 1)) {
    ++applied;
  }
  EXPECT_EQ(applied, 1u) << text;

  // Equal structure over the same variable is one node; another variable, or
  // another constant of the same values and name, is not.
  Expr x = make_variable({6, 5}, "x"), y = make_variable({6, 5}, "x");
  auto data = [] {
    auto d = std::make_shared<ConstantData>();
    d->array = Array(Shape{3, 3}, FloatData(9, 0.25f));
    d->source.type = ConstantSource::Type::Inline;
    return make_constant(d, "k");
  };
  Expr k = data();
  Step in = step_input("in", {6, 5});
  StepProgram p;
  p.outputs = {{"a", step_forward(make_scale(0.5, make_grad(x)), {in})},
               {"b", step_forward(make_scale(0.5, make_grad(x)), {in})},
               {"c", step_forward(make_scale(0.5, make_grad(y)), {in})},
               {"d", step_forward(make_conv(k, x), {in})},
               {"e", step_forward(make_conv(k, x), {in})},
               {"f", step_forward(make_conv(data(), x), {in})}};
  StepProgram q = eliminate_common_subexpressions(p);
  auto node = [&](const char* name) {
    for (const auto& [n, st] : q.outputs) {
      if (n == name) return st.get();
    }
    return static_cast<const StepNode*>(nullptr);
  };
  EXPECT_EQ(node("a"), node("b"));
  EXPECT_NE(node("a"), node("c"));
  EXPECT_EQ(node("d"), node("e"));
  EXPECT_NE(node("d"), node("f"));
  // And the outputs are what they were.
  Array v(Shape{6, 5});
  for (size_t i = 0; i < v.data.size(); ++i) v.data[i] = static_cast<float>(i % 7) - 2.5f;
  StepInputs si;
  si.buffers["in"] = &v;
  StepOutputs before = emulator().compile(p)->run(si), after = emulator().compile(q)->run(si);
  for (const auto& [name, a] : before.arrays) EXPECT_EQ(after.arrays.at(name).data, a.data) << name;
}

// ‖c·v‖² is c²·‖v‖²: the norm of a scaled identity's result (pc's ‖K x⁺‖²
// for nonneg(x), K = x/3) is the norm of its operand the program takes
// already; a norm of an operator that is not a scaled identity stays.
TEST(CommonSubexpressions, ANormOfAScaledIdentityIsItsOperandsNorm) {
  Expr x = make_variable({6, 5}, "x");
  Step in = step_input("in", {6, 5}), check = step_param(kCheckParam);
  auto norm = [&](const Step& v) { return step_reduce(StepKind::SumSquares, v, nullptr, check); };
  StepProgram p;
  p.outputs = {{"v", norm(in)},
               {"third", norm(step_forward(make_scale(1.0 / 3, x), {in}))},
               {"neg", norm(step_adjoint(make_neg(make_scale(0.5, x)), 0, in))},
               {"grad", norm(step_forward(make_scale(0.5, make_grad(x)), {in}))}};
  StepProgram q = eliminate_common_subexpressions(p);
  std::map<std::string, Step> out(q.outputs.begin(), q.outputs.end());
  for (const char* name : {"third", "neg"}) {
    ASSERT_EQ(out.at(name)->kind, StepKind::Mul) << name;
    EXPECT_EQ(out.at(name)->args[1], out.at("v")) << name << ": the operand's norm, taken once";
    EXPECT_TRUE(is_gated(*out.at(name)->args[1])) << "the gate is kept";
  }
  EXPECT_EQ(out.at("grad")->kind, StepKind::SumSquares);
  size_t reductions = 0;
  for (const Step& n : q.nodes()) reductions += is_reduction(n->kind);
  EXPECT_EQ(reductions, 2u);
  Array v(Shape{6, 5});
  for (size_t i = 0; i < v.data.size(); ++i) v.data[i] = static_cast<float>(i % 7) - 2.5f;
  StepInputs si;
  si.buffers["in"] = &v;
  si.params[kCheckParam] = 1;
  StepOutputs before = emulator().compile(p)->run(si), after = emulator().compile(q)->run(si);
  for (const auto& [name, a] : before.scalars) EXPECT_NEAR(after.scalars.at(name), a, 1e-12 * a) << name;
  EXPECT_NEAR(after.scalars.at("third"), after.scalars.at("v") / 9, 1e-12 * after.scalars.at("v"));
}

// A problem whose iterates overflow to inf and NaN within a few iterations
// (data 3e38 weighted by 1e30), its data in the test's folder.
Problem diverging_problem(int64_t rows, int64_t cols) {
  const std::string dir = test::temp_dir();
  Array big(Shape{rows, cols});
  for (float& v : big.data) v = 3e38f;
  io::write_npy(dir + "/big.npy", big);
  const std::string text = "b = load(\"big.npy\")\nx = variable(" + std::to_string(rows) + ", " + std::to_string(cols) +
                           ")\nminimize 1e30 * sum_squares(x - b) + norm1(grad(x))\n";
  return parse_program(text, "p.prox", dir).problem;
}

TEST(Faults, NanStopsAsDivergedAndKeepsTheLastFiniteIterate) {
  const Problem p = diverging_problem(4, 4);
  // Checked every iteration, the state before the failing run is kept; checked
  // every 10, the variables of the last check that passed are.
  for (int every : {1, 10}) {
    SCOPED_TRACE(every);
    SolverOptions o;
    o.solver = "ladmm";
    o.max_iters = 50;
    o.check_every = every;
    SolveResult r = solve(p, o, emulator());
    EXPECT_EQ(r.summary.termination, Termination::Diverged);
    EXPECT_EQ(r.summary.iterations % every, 0);
    for (float v : r.x.at("x").data) EXPECT_TRUE(std::isfinite(v));
  }
}

// A checking run tells the host that the state is finite by the norms
// finite_A = ‖A‖² of its array outputs A (add_finiteness_norms), instead
// of a pass over the arrays on the host: every array output has one, below
// FLT_MAX only when the array is finite, on both backends (Halide: the
// inpainting's check is a pipeline of its own, the deconvolution's is gated
// in the iteration's). Each input in turn gets one +inf or NaN (which reaches
// some outputs and not others); every finite output of these random states
// has its norm below FLT_MAX; a run without a check computes none.
TEST(StoppingRule, FinitenessNormsCoverEveryArrayOutput) {
  for (const Canonical& c : {kProblems[2], kProblems[3]}) {
    for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
      PassManagerOptions po;
      po.pass.solver = solver;
      const Problem split = run_passes(problem(c), po);
      SolverOptions o;
      o.solver = solver;
      const StepProgram prog = iteration_program(split, o);
      std::vector<Backend*> backends = {&emulator()};
      if (std::string(solver) == "pc" || std::string(solver) == "admm") backends.push_back(&halide());
      for (Backend* b : backends) {
        SCOPED_TRACE(std::string(c.name) + " " + solver + " " + b->name());
        std::unique_ptr<CompiledStep> run = b->compile(prog);
        std::mt19937 rng(3);
        std::normal_distribution<float> g(0, 1);
        std::map<std::string, Array> state;
        for (const Step& in : prog.inputs()) {
          Array a(in->shape);
          for (float& v : a.data) v = g(rng);
          state[in->name] = std::move(a);
        }
        auto run_with = [&](const std::string& planted, float bad, bool check) {
          std::map<std::string, Array> st = state;
          if (!planted.empty()) st.at(planted).data[st.at(planted).data.size() / 3] = bad;
          StepInputs in;
          for (const auto& [name, a] : st) in.buffers[name] = &a;
          in.params[kCheckParam] = check ? 1 : 0;
          in.params[state_names::kRho] = 2;
          return run->run(in);
        };
        std::vector<std::string> plants = {""};
        for (const auto& [name, a] : state) plants.push_back(name);
        int caught = 0;
        for (const std::string& planted : plants) {
          for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
            SCOPED_TRACE("planted in '" + planted + "': " + std::to_string(bad));
            const StepOutputs out = run_with(planted, bad, true);
            ASSERT_FALSE(out.arrays.empty());
            for (const auto& [name, a] : out.arrays) {
              const auto norm = out.scalars.find(state_names::finite(name));
              ASSERT_NE(norm, out.scalars.end()) << name;
              bool finite = true;
              for (float v : a.data) finite = finite && std::isfinite(v);
              EXPECT_EQ(norm->second < std::numeric_limits<float>::max(), finite) << name;
              caught += finite ? 0 : 1;
            }
          }
        }
        EXPECT_GT(caught, 0);
        const StepOutputs unchecked = run_with("", 0, false);
        for (const auto& [name, a] : unchecked.arrays)
          EXPECT_EQ(unchecked.scalars.count(state_names::finite(name)), 0u) << name;
      }
    }
  }
}

// The GPU schedule's backend on OpenCL (PoCL runs it on this machine's CPU;
// scripts/install-deps.sh installs it), or on $PROXC_TEST_GPU_TARGET.
Backend& opencl() { return test::gpu_backend(); }

// On a GPU a solve's state stays on the device from run to run: a resident
// run (StepInputs::resident) leaves its array outputs there, their host
// memory stale, reads the device copies earlier runs left (arrays known by
// their host addresses, so that the outputs of one run are the inputs of the
// next), copies back only its scalars, and Backend::to_host() brings the
// arrays back. A run that is not resident brings back what it reads first.
TEST(DeviceResidency, ResidentRunsLeaveTheirArraysOnTheDevice) {
  Backend& b = opencl();
  ASSERT_TRUE(test::runs_on_gpu(b.target_used()));
  ASSERT_TRUE(b.keeps_arrays_on_device());
  const Shape s{40, 36};
  StepProgram p;
  p.name = "affine";
  Step a = step_input("a", s), c = step_input("c", s);
  Step next = step_binary(StepKind::Add, times(0.5, a), c);
  p.outputs = {{"a", next}, {"ss", step_reduce(StepKind::SumSquares, next)}};
  std::unique_ptr<CompiledStep> run = b.compile(p);
  Array state(s), ones(s);
  for (size_t i = 0; i < state.data.size(); ++i) state.data[i] = 0.1f * static_cast<float>(i % 7);
  for (float& v : ones.data) v = 1.0f;
  std::vector<double> expect(state.data.begin(), state.data.end());
  auto step_expected = [&] {
    double ss = 0;
    for (double& v : expect) {
      v = 0.5 * v + 1.0;
      ss += v * v;
    }
    return ss;
  };
  auto expect_state = [&](const Array& got) {
    ASSERT_EQ(got.data.size(), expect.size());
    for (size_t i = 0; i < expect.size(); ++i) ASSERT_NEAR(got.data[i], expect[i], 1e-6 * std::fabs(expect[i])) << i;
  };
  StepOutputs out;
  for (int k = 0; k < 4; ++k) {
    SCOPED_TRACE(k);
    StepInputs in;
    in.buffers = {{"a", &state}, {"c", &ones}};
    in.resident = true;
    run->run_into(in, &out);
    const double ss = step_expected();
    EXPECT_NEAR(out.scalars.at("ss"), ss, 1e-6 * ss);
    if (k == 0) {
      // The output's host memory is the new array's zeros: the values are on the device.
      for (float v : out.arrays.at("a").data) ASSERT_EQ(v, 0.0f);
    }
    std::swap(state, out.arrays.at("a"));
  }
  b.to_host();
  expect_state(state);
  // Written on the host after to_host(), the array is copied up again.
  for (float& v : state.data) v = 2.0f;
  std::fill(expect.begin(), expect.end(), 2.0);
  StepInputs in;
  in.buffers = {{"a", &state}, {"c", &ones}};
  in.resident = true;
  run->run_into(in, &out);
  step_expected();
  std::swap(state, out.arrays.at("a"));
  // A run that is not resident, reading what the resident one left on the device.
  in.buffers = {{"a", &state}, {"c", &ones}};
  in.resident = false;
  run->run_into(in, &out);
  step_expected();
  expect_state(out.arrays.at("a"));
  b.to_host();
}

// A solve on OpenCL keeps its state on the device, and comes back to the
// host wherever the host loop looks at the state: checks every 10 (the
// variables of the last check set aside on the device), every iteration,
// snapshots, a callback with the iterate at each check, ProxImaL's stopping
// rule (pc keeps arrays of its own at its checks), admm's adaptive penalty
// (which rescales the duals on the host), and the variables of the last
// check returned after a divergence. Each gives the CPU's iterate (and
// snapshots) to within float rounding.
TEST(DeviceResidency, SolvesOnOpenClGiveTheCpuIterates) {
  ASSERT_TRUE(test::runs_on_gpu(opencl().target_used()));
  struct Case {
    const char* what;
    const char* solver;
    std::function<void(SolverOptions*)> set;
  };
  const std::vector<Case> cases = {
      {"pc, checks every 10", "pc", [](SolverOptions* o) { o->check_every = 10; }},
      {"pc, checks every iteration", "pc", [](SolverOptions* o) { o->check_every = 1; }},
      {"ladmm, snapshots every 7", "ladmm",
       [](SolverOptions* o) {
         o->check_every = 10;
         o->snapshot_every = 7;
       }},
      {"pc, the iterate at each check", "pc",
       [](SolverOptions* o) {
         o->check_every = 5;
         o->iterate_callback = [](const IterationInfo&, const std::map<std::string, Array>&) { return true; };
       }},
      {"pc, ProxImaL's stopping rule", "pc",
       [](SolverOptions* o) {
         o->check_every = 5;
         o->proximal_stopping = true;
       }},
      {"admm, adaptive penalty", "admm",
       [](SolverOptions* o) {
         o->check_every = 3;
         o->adaptive_steps = true;
       }},
  };
  const Problem p = problem(kProblems[1]);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::map<int, Array> snaps[2];
    SolveResult r[2];
    Backend* backends[2] = {&halide(), &opencl()};
    for (int k = 0; k < 2; ++k) {
      SolverOptions o;
      o.solver = c.solver;
      o.max_iters = 40;
      o.eps_abs = o.eps_rel = 0;
      c.set(&o);
      if (o.snapshot_every > 0) {
        o.snapshot_callback = [&, k](int it, const std::map<std::string, Array>& x) { snaps[k][it] = x.at("x"); };
      }
      r[k] = solve(p, o, *backends[k]);
    }
    const Array &cpu = r[0].x.at("x"), &gpu = r[1].x.at("x");
    EXPECT_EQ(r[0].summary.iterations, r[1].summary.iterations);
    float lo = cpu.data[0], hi = cpu.data[0], worst = 0;
    for (size_t i = 0; i < cpu.data.size(); ++i) {
      lo = std::min(lo, cpu.data[i]);
      hi = std::max(hi, cpu.data[i]);
      worst = std::max(worst, std::fabs(cpu.data[i] - gpu.data[i]));
    }
    EXPECT_GT(hi - lo, 0.1f);
    EXPECT_LE(worst, 1e-5f * (hi - lo));
    ASSERT_EQ(snaps[0].size(), snaps[1].size());
    for (const auto& [it, x] : snaps[0]) {
      const Array& g = snaps[1].at(it);
      for (size_t i = 0; i < x.data.size(); ++i) ASSERT_NEAR(g.data[i], x.data[i], 1e-5f * (hi - lo)) << it;
    }
  }
  // The NaN of Faults.NanStopsAsDivergedAndKeepsTheLastFiniteIterate: the
  // last check's variables, kept on the device, come back.
  const Problem bad = diverging_problem(24, 20);
  for (int every : {1, 10}) {
    SCOPED_TRACE(every);
    SolverOptions o;
    o.solver = "ladmm";
    o.max_iters = 50;
    o.check_every = every;
    const SolveResult cpu = solve(bad, o, halide()), gpu = solve(bad, o, opencl());
    EXPECT_EQ(gpu.summary.termination, Termination::Diverged);
    EXPECT_EQ(gpu.summary.iterations, cpu.summary.iterations);
    const Array &g = gpu.x.at("x"), &c = cpu.x.at("x");
    for (size_t i = 0; i < g.data.size(); ++i) {
      ASSERT_TRUE(std::isfinite(g.data[i]));
      ASSERT_NEAR(g.data[i], c.data[i], 1e-5 * std::fabs(c.data[i])) << i;
    }
  }
}

// A state beyond 1.8e19 but finite: its finiteness norms reach FLT_MAX, so
// the host scans the arrays, which find it finite (the emulator's double
// residuals stay finite; Halide's float row sums of such residuals overflow,
// which docs/solvers.md states as divergence).
TEST(Faults, ALargeFiniteStateIsNotDiverged) {
  std::string dir = test::temp_dir();
  Array big(Shape{6, 5});
  for (size_t i = 0; i < big.data.size(); ++i) big.data[i] = 1e20f * (1 + 0.1f * static_cast<float>(i % 3));
  io::write_npy(dir + "/big.npy", big);
  Problem p = parse_program("b = load(\"big.npy\")\nx = variable(6, 5)\nminimize sum_squares(x - b) + norm1(grad(x))\n",
                            "p.prox", dir)
                  .problem;
  for (const char* solver : {"pc", "ladmm"}) {
    SCOPED_TRACE(solver);
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 30;
    o.eps_abs = o.eps_rel = 0;
    SolveResult r = solve(p, o, emulator());
    EXPECT_EQ(r.summary.termination, Termination::MaxIterations);
    EXPECT_EQ(r.summary.iterations, 30);
    for (float v : r.x.at("x").data) EXPECT_TRUE(std::isfinite(v) && std::fabs(v) > 1e19f) << v;
  }
}

TEST(CheckEvery, ChecksFallOnMultiplesAndTheIteratesDoNotChange) {
  // The iterates do not depend on how often convergence is checked: a solve
  // checked every 10 iterations stops at the first multiple of 10 at or after
  // the iteration where one checked every iteration converged, with the
  // iterate of an unchecked run of that length, bit for bit. On halide the
  // runs between checks skip the residuals (check = 0) in the same pipeline.
  // (deconv: three psi terms, so ADMM's state has a "z2" among its outputs.)
  Problem p = problem(kProblems[2]);
  for (Backend* b : {&emulator(), &halide()}) {
    for (const char* solver : {"pc", "ladmm", "admm"}) {
      SCOPED_TRACE(b->name() + " " + solver);
      SolverOptions o;
      o.solver = solver;
      o.max_iters = 400;
      o.check_every = 1;
      SolveResult each = solve(p, o, *b);
      ASSERT_EQ(each.summary.termination, Termination::Converged);
      o.check_every = 10;
      SolveResult tens = solve(p, o, *b);
      ASSERT_EQ(tens.summary.termination, Termination::Converged);
      EXPECT_EQ(tens.summary.iterations, (each.summary.iterations + 9) / 10 * 10);
      for (const IterationInfo& i : tens.history) EXPECT_EQ(i.iteration % 10, 0);
      SolverOptions fixed = o;
      fixed.max_iters = tens.summary.iterations;
      fixed.eps_abs = fixed.eps_rel = 0;
      fixed.check_every = 1;
      SolveResult same = solve(p, fixed, *b);
      EXPECT_EQ(same.x.at("x").data, tens.x.at("x").data);
      EXPECT_EQ(same.summary.last.r, tens.summary.last.r);
    }
  }
}

TEST(Checkpoint, ResumingGivesTheUninterruptedResult) {
  std::string dir = test::temp_dir();
  for (const char* solver : {"pc", "ladmm", "admm", "hqs"}) {
    SCOPED_TRACE(solver);
    Problem p = problem(kProblems[2]);
    SolverOptions o;
    o.solver = solver;
    o.max_iters = 40;
    o.eps_abs = o.eps_rel = 0;
    SolveResult full = solve(p, o, emulator());
    SolverOptions a = o;
    a.checkpoint_path = dir + "/state.ckpt";
    a.checkpoint_every = 10;
    a.check_every = 1;  // the callback sees every iteration
    a.callback = [](const IterationInfo& i) { return i.iteration < 23; };  // stopped early, as by a crash
    SolveResult first = solve(p, a, emulator());
    EXPECT_EQ(first.summary.iterations, 23);
    SolverOptions b = o;
    b.resume_path = a.checkpoint_path;
    SolveResult resumed = solve(p, b, emulator());
    EXPECT_EQ(resumed.summary.iterations, 40);
    EXPECT_EQ(resumed.x.at("x").data, full.x.at("x").data);  // bit for bit
  }
  // A checkpoint of another solver or problem is refused.
  SolverOptions c;
  c.solver = "pc";
  c.resume_path = dir + "/state.ckpt";  // written by hqs last
  EXPECT_THAT(test::user_error_of([&] { solve(problem(kProblems[2]), c, emulator()); }),
              ::testing::HasSubstr("the checkpoint is of the solver 'hqs'"));
}

// Adaptive step sizes (SolverOptions::adaptive_steps; pc: Goldstein, Li and
// Yuan's residual balancing of tau and sigma with their product kept; admm:
// Boyd et al.'s residual balancing of rho; ladmm: the same of 1/lambda, mu
// with lambda) reach the reference optimum of TV denoising, TV deconvolution
// and inpainting, changing the steps on the way; the summary reports the
// last ones.
TEST(Adaptive, StepsReachTheReferenceOptimum) {
  for (int k : {1, 2, 3}) {
    const Problem p = problem(kProblems[k]);
    const double opt = reference_optimum(p);
    for (const char* solver : {"pc", "admm", "ladmm"}) {
      SCOPED_TRACE(std::string(kProblems[k].name) + " " + solver);
      SolverOptions o;
      o.solver = solver;
      o.adaptive_steps = true;
      o.max_iters = 2000;
      o.eps_abs = o.eps_rel = 1e-7;
      const SolveResult r = solve(p, o, emulator());
      const double got = objective(p, r.x.at("x"));
      EXPECT_LE(std::fabs(got - opt), 1e-3 * std::fabs(opt)) << "objective " << got << ", optimum " << opt;
      EXPECT_GT(r.summary.step_changes, 0);
      if (std::string(solver) == "pc") {
        ASSERT_EQ(r.summary.adapted_steps.size(), 2u);
        const double tau = r.summary.adapted_steps.at("pc_tau"), sigma = r.summary.adapted_steps.at("pc_sigma");
        EXPECT_NE(tau, 1.0);
        EXPECT_NEAR(tau * sigma, 1.0, 1e-12);  // tau * sigma * ||K||^2 <= 1 is kept
      } else {
        ASSERT_EQ(r.summary.adapted_steps.size(), 1u);
        const double step = r.summary.adapted_steps.at(std::string(solver) == "admm" ? "admm_rho" : "ladmm_lambda");
        EXPECT_EQ(std::exp2(std::round(std::log2(step))), step);  // doubled and halved from 1
      }
      EXPECT_THAT(r.summary.to_json(), ::testing::HasSubstr("\"adapted_steps\""));
      // The solve without adaptive steps reports none.
      o.adaptive_steps = false;
      o.max_iters = 20;
      EXPECT_TRUE(solve(p, o, emulator()).summary.adapted_steps.empty());
    }
  }
}

// The compiled programs take the adapted steps as run-time parameters and
// follow the emulator; a checkpoint keeps the steps exactly, so a resumed
// adaptive solve is the uninterrupted one bit for bit; a checkpoint of an
// adaptive solve does not resume a fixed-step one.
TEST(Adaptive, HalideFollowsAndCheckpointsKeepTheSteps) {
  const std::string dir = test::temp_dir();
  // (deconv: pc's omega prox is the FFT solve, whose scalars now depend on
  // the parameter tau: the extern stage takes them inlined.)
  for (int k : {2, 3}) {
    for (const char* solver : {"pc", "admm", "ladmm"}) {
      SCOPED_TRACE(std::string(kProblems[k].name) + " " + solver);
      const Problem p = problem(kProblems[k]);
      SolverOptions o;
      o.solver = solver;
      o.adaptive_steps = true;
      o.steps.admm_rho = 1.0 / 64;  // far from balanced: rho changes within 40 iterations
      o.steps.ladmm_lambda = o.steps.ladmm_mu = 64;  // and lambda
      o.max_iters = 40;
      o.eps_abs = o.eps_rel = 0;
      const SolveResult full = solve(p, o, emulator());
      EXPECT_GT(full.summary.step_changes, 0);
      SolverOptions fixed = o;
      fixed.adaptive_steps = false;
      EXPECT_NE(solve(p, fixed, emulator()).x.at("x").data, full.x.at("x").data);  // the steps are used
      const SolveResult compiled = solve(p, o, halide());
      EXPECT_LE(worst_difference(compiled.x.at("x"), full.x.at("x")), 1e-4);
      EXPECT_EQ(compiled.summary.step_changes, full.summary.step_changes);
      SolverOptions a = o;
      a.checkpoint_path = dir + "/adaptive.ckpt";
      a.checkpoint_every = 10;
      a.callback = [](const IterationInfo& i) { return i.iteration < 20; };
      EXPECT_EQ(solve(p, a, emulator()).summary.iterations, 20);
      SolverOptions b = o;
      b.resume_path = a.checkpoint_path;
      const SolveResult resumed = solve(p, b, emulator());
      EXPECT_EQ(resumed.summary.iterations, 40);
      EXPECT_EQ(resumed.x.at("x").data, full.x.at("x").data);
      EXPECT_EQ(resumed.summary.adapted_steps, full.summary.adapted_steps);
      b.adaptive_steps = false;
      EXPECT_THAT(test::user_error_of([&] { solve(p, b, emulator()); }),
                  ::testing::HasSubstr("the checkpoint belongs to another run"));
    }
  }
}

// Resident memory in bytes (Linux).
double rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

TEST(Endurance, ThousandCompileAndSolveCyclesDoNotGrowMemory) {
  // Each cycle parses the problem again, runs the passes, compiles (a cache hit
  // after the first), solves 3 iterations on halide and evaluates the objective.
  // Bound: resident memory may grow by at most 16 MiB between cycle 100 and 1000
  // (a leak of one 16×16 float image per cycle would already be 1 MiB).
  const char* text = "b = load(\"noisy.npy\")\nx = variable(shape(b))\n"
                     "minimize sum_squares(x - b) + 0.1 * group_norm1(grad(x), [2]) + nonneg(x)\n";
  double at100 = 0;
  for (int cycle = 1; cycle <= 1000; ++cycle) {
    Problem p = parse_program(text, "endurance.prox", data_dir()).problem;
    SolverOptions o;
    o.max_iters = 3;
    o.eps_abs = o.eps_rel = 0;
    SolveResult r = solve(p, o, halide());
    ASSERT_EQ(r.summary.iterations, 3);
    if (cycle == 100) at100 = rss_bytes();
  }
  double at1000 = rss_bytes();
  std::printf("endurance: RSS %.1f MiB after 100 cycles, %.1f MiB after 1000\n", at100 / 1048576, at1000 / 1048576);
  EXPECT_LE(at1000 - at100, 16.0 * 1048576);
}

TEST(Options, ValidateNamesTheField) {
  SolverOptions o;
  o.max_iters = 0;
  EXPECT_THAT(test::user_error_of([&] { o.validate(); }), ::testing::HasSubstr("max_iters"));
  o = SolverOptions();
  o.solver = "sgd";
  EXPECT_THAT(test::user_error_of([&] { o.validate(); }), ::testing::HasSubstr("unknown solver 'sgd'"));
  o = SolverOptions();
  o.fuse = 0;
  EXPECT_THAT(test::user_error_of([&] { o.validate(); }), ::testing::HasSubstr("fuse"));
  o = SolverOptions();
  o.solver = "hqs";
  o.adaptive_steps = true;
  EXPECT_THAT(test::user_error_of([&] { o.validate(); }),
              ::testing::HasSubstr("SolverOptions.adaptive_steps: pc, ladmm and admm adapt their step sizes, not hqs"));
  o.solver = "ladmm";
  o.validate();
  o.solver = "pc";
  o.validate();
  o.proximal_stopping = true;
  EXPECT_THAT(test::user_error_of([&] { o.validate(); }),
              ::testing::HasSubstr("ProxImaL's stopping rule reads fixed step sizes"));
}

TEST(Callback, CanStopTheSolve) {
  Problem p = problem(kProblems[0]);
  SolverOptions o;
  o.eps_abs = o.eps_rel = 0;
  o.check_every = 1;
  o.callback = [](const IterationInfo& i) { return i.iteration < 7; };
  SolveResult r = solve(p, o, emulator());
  EXPECT_EQ(r.summary.termination, Termination::UserStop);
  EXPECT_EQ(r.summary.iterations, 7);
}

}  // namespace
}  // namespace proxc::internal
