// A distributed solve (SolverOptions::communicator) through the public API,
// its ranks being threads of this process: proxc's Communicator interface
// implemented without MPI, as a program with its own transport would. Each
// rank's slab iterates give the single-process iterate to float rounding
// (the emulator, in double within a run), the residuals are the whole
// image's, a checkpoint holds the whole state, and problems that cannot be
// cut into slabs are refused with the reason. The same over MPI ranks with
// the Halide backend: tests/cli (CliDistributed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <proxc/proxc.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

namespace {

using ::testing::HasSubstr;

// What the threads of one run share: a barrier and one mailbox per rank.
struct Mailboxes {
  explicit Mailboxes(int n) : n(n), to_prev(n), to_next(n), sums(n), parts(n) {}
  void barrier() {
    std::unique_lock<std::mutex> lock(m);
    const int gen = generation;
    if (++arrived == n) {
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return gen != generation; });
    }
  }
  int n;
  std::mutex m;
  std::condition_variable cv;
  int arrived = 0, generation = 0;
  std::vector<std::vector<float>> to_prev, to_next;
  std::vector<std::vector<double>> sums;
  std::vector<std::vector<float>> parts;
};

class ThreadRank : public proxc::Communicator {
 public:
  ThreadRank(Mailboxes& box, int rank) : box_(box), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return box_.n; }
  void exchange_ring(const float* to_prev, const float* to_next, float* from_prev, float* from_next,
                     size_t n) override {
    box_.to_prev[rank_].assign(to_prev, to_prev + n);
    box_.to_next[rank_].assign(to_next, to_next + n);
    box_.barrier();
    const std::vector<float>& a = box_.to_prev[(rank_ + 1) % box_.n];
    const std::vector<float>& b = box_.to_next[(rank_ + box_.n - 1) % box_.n];
    std::copy(a.begin(), a.end(), from_next);
    std::copy(b.begin(), b.end(), from_prev);
    box_.barrier();
  }
  void sum(double* values, size_t n) override {
    box_.sums[rank_].assign(values, values + n);
    box_.barrier();
    for (size_t i = 0; i < n; ++i) {
      double s = 0;
      for (int r = 0; r < box_.n; ++r) s += box_.sums[r][i];
      values[i] = s;
    }
    box_.barrier();
  }
  void gather(const float* mine, size_t n, std::vector<float>* all) override {
    box_.parts[rank_].assign(mine, mine + n);
    box_.barrier();
    if (rank_ == 0) {
      all->clear();
      for (const auto& p : box_.parts) all->insert(all->end(), p.begin(), p.end());
    }
    box_.barrier();
  }

 private:
  Mailboxes& box_;
  int rank_;
};

// A noisy ramp of `rows` × 20.
proxc::Array noisy(int64_t rows) {
  std::vector<float> v(static_cast<size_t>(rows) * 20);
  uint32_t seed = 777;
  for (size_t i = 0; i < v.size(); ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = static_cast<float>((i / 20) / double(rows) + ((seed >> 8) / 16777216.0 - 0.5) * 0.4);
  }
  return proxc::Array({rows, 20}, v);
}

struct RankRun {
  proxc::SolverSummary summary;
  proxc::Array x;
  std::string error;
};

// The problem solved on `ranks` threads (0: one process, no communicator);
// rank 0's summary and result. `make` builds the problem and its variable.
template <typename Make>
RankRun solve_on(int ranks, const Make& make, proxc::SolverOptions o) {
  o.backend = proxc::BackendKind::Emulate;
  if (ranks == 0) {
    proxc::Expr x;
    proxc::Problem p = make(&x);
    RankRun r;
    r.summary = proxc::solve(p, o);
    r.x = p.value(x);
    return r;
  }
  Mailboxes box(ranks);
  std::vector<RankRun> runs(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int k = 0; k < ranks; ++k) {
    threads.emplace_back([&, k] {
      proxc::Expr x;
      proxc::Problem p = make(&x);
      proxc::SolverOptions mine = o;
      mine.communicator = std::make_shared<ThreadRank>(box, k);
      try {
        runs[k].summary = proxc::solve(p, mine);
        if (k == 0) runs[k].x = p.value(x);
      } catch (const proxc::UserError& e) {
        runs[k].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const RankRun& r : runs) EXPECT_EQ(r.error, runs[0].error);  // every rank stops alike
  return runs[0];
}

double max_diff(const proxc::Array& a, const proxc::Array& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double d = 0;
  for (int64_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(double(a[i]) - b[i]));
  return d;
}

double range(const proxc::Array& a) {
  const auto [lo, hi] = std::minmax_element(a.data(), a.data() + a.size());
  return *hi - *lo;
}

proxc::SolverOptions fixed_iterations(int iters, proxc::SolverKind solver) {
  proxc::SolverOptions o;
  o.solver = solver;
  o.max_iters = iters;
  o.eps_abs = 0;
  o.eps_rel = 0;
  o.check_every = 5;
  o.adaptive_steps = false;  // fixed steps: the iterates of every rank count agree to rounding
  return o;
}

auto tv_denoise(int64_t rows) {
  return [rows](proxc::Expr* x) {
    proxc::Array b = noisy(rows);
    proxc::Problem p;
    *x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(*x - b) + 0.1 * proxc::group_norm1(proxc::grad(*x), {2}) + proxc::nonneg(*x));
    return p;
  };
}

auto inpaint(int64_t rows) {
  return [rows](proxc::Expr* x) {
    proxc::Array b = noisy(rows);
    std::vector<float> m(static_cast<size_t>(b.size()));
    for (size_t i = 0; i < m.size(); ++i) m[i] = (i * 7919) % 3 == 0 ? 0.0f : 1.0f;
    proxc::Array mask(b.shape(), m);
    proxc::Problem p;
    *x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(proxc::mul_elemwise(mask, *x) - b) + 0.05 * proxc::norm1(proxc::grad(*x)));
    return p;
  };
}

auto tv_deconv(int64_t rows) {
  return [rows](proxc::Expr* x) {
    proxc::Array b = noisy(rows);
    proxc::Problem p;
    *x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(proxc::conv(proxc::gaussian({5, 5}, 1.2), *x) - b) +
               0.02 * proxc::group_norm1(proxc::grad(*x), {2}));
    return p;
  };
}

TEST(ApiDistributed, SlabsGiveTheSingleProcessIterate) {
  // admm and hqs: their CG x-update runs on the slabs too (its dot products summed over the ranks).
  const std::pair<proxc::SolverKind, int> runs[] = {
      {proxc::SolverKind::PockChambolle, 1}, {proxc::SolverKind::PockChambolle, 2},
      {proxc::SolverKind::LinearizedADMM, 1}, {proxc::SolverKind::LinearizedADMM, 2},
      {proxc::SolverKind::ADMM, 1}, {proxc::SolverKind::HQS, 1}};
  for (const auto& [solver, fuse] : runs) {
    {
      proxc::SolverOptions o = fixed_iterations(30, solver);
      o.fuse = fuse;
      o.check_every = 10;
      for (const auto& [name, one] : {std::pair{"tv", solve_on(0, tv_denoise(43), o)},
                                      {"inpaint", solve_on(0, inpaint(43), o)}}) {
        for (int ranks : {1, 2, 3, 4}) {
          SCOPED_TRACE(std::string(proxc::to_string(solver)) + " fuse " + std::to_string(fuse) + " " + name +
                       " on " + std::to_string(ranks) + " ranks");
          const RankRun many = std::string(name) == "tv" ? solve_on(ranks, tv_denoise(43), o)
                                                     : solve_on(ranks, inpaint(43), o);
          ASSERT_EQ(many.error, "");
          EXPECT_EQ(many.summary.iterations, 30);
          EXPECT_EQ(many.summary.cg_steps, one.summary.cg_steps);
          EXPECT_LT(max_diff(many.x, one.x), 1e-5 * range(one.x));
          // The residuals of the whole image, at every check.
          ASSERT_EQ(many.summary.history.size(), one.summary.history.size());
          for (size_t i = 0; i < one.summary.history.size(); ++i) {
            EXPECT_NEAR(many.summary.history[i].r, one.summary.history[i].r, 1e-5 * one.summary.history[i].r);
            EXPECT_NEAR(many.summary.history[i].eps_dual, one.summary.history[i].eps_dual,
                        1e-5 * one.summary.history[i].eps_dual);
          }
          EXPECT_NEAR(many.summary.objective_at_projection, one.summary.objective_at_projection,
                      1e-5 * std::fabs(one.summary.objective_at_projection));
        }
      }
    }
  }
}

// A matrix per pixel (pxwise_matrixmult): its matrices are cut into slabs with
// the rows they belong to.
TEST(ApiDistributed, PixelMatricesAreCutWithTheirRows) {
  const int64_t rows = 37;
  auto make = [rows](proxc::Expr* x) {
    const proxc::Array flat = noisy(rows);
    const proxc::Array b({rows, 10, 2}, std::vector<float>(flat.data(), flat.data() + flat.size()));
    std::vector<float> a;
    for (int64_t p = 0; p < rows * 10; ++p) {
      const float s = static_cast<float>(std::sin(0.37 * static_cast<double>(p)));
      a.insert(a.end(), {1.0f + 0.3f * s, 0.2f, 0.1f * s, 0.8f});
    }
    proxc::Problem prob;
    *x = prob.variable(b.shape(), "x");
    prob.minimize(proxc::sum_squares(proxc::pxwise_matrixmult(proxc::Array({rows, 10, 2, 2}, a), *x) - b) +
                  0.1 * proxc::group_norm1(proxc::grad(*x, 2), {2, 3}));
    return prob;
  };
  for (proxc::SolverKind solver : {proxc::SolverKind::PockChambolle, proxc::SolverKind::ADMM}) {
    SCOPED_TRACE(proxc::to_string(solver));
    const proxc::SolverOptions o = fixed_iterations(30, solver);
    const RankRun one = solve_on(0, make, o);
    const RankRun three = solve_on(3, make, o);
    ASSERT_EQ(three.error, "");
    EXPECT_EQ(three.summary.iterations, 30);
    EXPECT_LT(max_diff(three.x, one.x), 1e-5 * range(one.x));
  }
}

TEST(ApiDistributed, StopsWhereTheSingleProcessStops) {
  proxc::SolverOptions o;  // the default tolerances, fixed steps (an adaptive decision on residuals
  o.check_every = 1;       // summed in another order could fall the other way at a tie)
  o.adaptive_steps = false;
  const RankRun one = solve_on(0, tv_denoise(40), o);
  const RankRun many = solve_on(3, tv_denoise(40), o);
  ASSERT_EQ(one.summary.termination, proxc::Termination::Converged);
  EXPECT_EQ(many.summary.termination, proxc::Termination::Converged);
  EXPECT_EQ(many.summary.iterations, one.summary.iterations);
}

TEST(ApiDistributed, DeconvolutionAppliesTheConvOnSlabsAndReachesTheOptimum) {
  // One process solves the conv by FFTs; the slabs apply it as an operator
  // (the same split on one rank as on four: the same iterates).
  proxc::SolverOptions o = fixed_iterations(3000, proxc::SolverKind::PockChambolle);
  o.check_every = 3000;
  const RankRun fft = solve_on(0, tv_deconv(32), o);
  const RankRun four = solve_on(4, tv_deconv(32), o);
  ASSERT_EQ(four.error, "");
  EXPECT_NEAR(four.summary.objective, fft.summary.objective, 1e-4 * std::fabs(fft.summary.objective));
  EXPECT_LT(max_diff(four.x, fft.x), 1e-2 * range(fft.x));
  proxc::SolverOptions short_run = fixed_iterations(40, proxc::SolverKind::PockChambolle);
  EXPECT_LT(max_diff(solve_on(4, tv_deconv(32), short_run).x, solve_on(1, tv_deconv(32), short_run).x),
            1e-5 * range(fft.x));
}

TEST(ApiDistributed, CheckpointsHoldTheWholeStateForAnyNumberOfRanks) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/proxc_api_distributed_ckpt";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  proxc::SolverOptions o = fixed_iterations(20, proxc::SolverKind::PockChambolle);
  const RankRun whole = solve_on(0, tv_denoise(40), o);
  proxc::SolverOptions first = fixed_iterations(10, proxc::SolverKind::PockChambolle);
  first.checkpoint_path = dir + "/state.ckpt";
  ASSERT_EQ(solve_on(3, tv_denoise(40), first).error, "");
  // Resumed on 2 ranks, and on one process.
  proxc::SolverOptions rest = o;
  rest.resume_path = first.checkpoint_path;
  EXPECT_LT(max_diff(solve_on(2, tv_denoise(40), rest).x, whole.x), 1e-5 * range(whole.x));
  EXPECT_LT(max_diff(solve_on(0, tv_denoise(40), rest).x, whole.x), 1e-5 * range(whole.x));
  std::filesystem::remove_all(dir);
}

TEST(ApiDistributed, ProblemsThatCannotBeCutSayWhy) {
  proxc::SolverOptions o = fixed_iterations(4, proxc::SolverKind::PockChambolle);
  // Too few rows: a pc run reads 3 rows across an edge (grad, its adjoint, grad for the residuals).
  EXPECT_THAT(solve_on(8, tv_denoise(12), o).error,
              HasSubstr("12 rows over 8 ranks leave 1 rows to a rank, and each needs at least 3"));
  auto transposed = [](proxc::Expr* x) {
    proxc::Array b = noisy(20);
    proxc::Problem p;
    *x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(*x - b) + proxc::norm1(proxc::transpose(*x, {1, 0})));
    return p;
  };
  EXPECT_THAT(solve_on(2, transposed, o).error, HasSubstr("the operator transpose cannot run on a slab"));
  // admm's x-update of a conv and nonneg alone is an FFT solve of the whole image.
  auto deconv_nonneg = [](proxc::Expr* x) {
    proxc::Array b = noisy(40);
    proxc::Problem p;
    *x = p.variable(b.shape(), "x");
    p.minimize(proxc::sum_squares(proxc::conv(proxc::gaussian({5, 5}, 1.2), *x) - b) + proxc::nonneg(*x));
    return p;
  };
  proxc::SolverOptions admm = fixed_iterations(4, proxc::SolverKind::ADMM);
  EXPECT_THAT(solve_on(2, deconv_nonneg, admm).error, HasSubstr("use --solver pc or ladmm"));
  EXPECT_EQ(solve_on(2, tv_deconv(40), admm).error, "");  // with TV: a CG solve, which runs on slabs
}

}  // namespace
