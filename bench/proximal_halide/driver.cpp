// Times ProxImaL's generated linearized-ADMM pipeline (`ladmm_iter`: one iteration and its
// convergence metrics per call, as its own ladmm-runtime calls it) on a W × W image of uniform
// noise: `driver W CALLS [REPEATS]` prints "W ms_per_call" (best of REPEATS, after one warm-up
// call) and the last residuals. Built by bench/proximal_halide/run.sh against the library the
// generator made; not part of the proxc build.
#include <HalideBuffer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>

#include "ladmm_iter.h"

using Halide::Runtime::Buffer;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s W CALLS [REPEATS]\n", argv[0]);
    return 2;
  }
  const int w = std::atoi(argv[1]), calls = std::atoi(argv[2]), repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  Buffer<float> input(w, w, 1);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(0, 1);
  input.for_each_value([&](float& v) { v = uniform(rng); });
  double best = 1e30;
  float r = 0, s = 0, eps_pri = 0, eps_dual = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    Buffer<float> v(w, w, 1), z0(w, w, 1, 2), z1(w, w, 1), u0(w, w, 1, 2), u1(w, w, 1);
    Buffer<float> v1(w, w, 1), z01(w, w, 1, 2), z11(w, w, 1), u01(w, w, 1, 2), u11(w, w, 1);
    for (auto* b : {&v, &z0, &z1, &u0, &u1}) b->fill(0.0f);
    auto br = Buffer<float>::make_scalar(&r), bs = Buffer<float>::make_scalar(&s);
    auto bp = Buffer<float>::make_scalar(&eps_pri), bd = Buffer<float>::make_scalar(&eps_dual);
    auto call = [&] { return ladmm_iter(input, v, z0, z1, u0, u1, v1, z01, z11, u01, u11, br, bs, bp, bd); };
    if (call() != 0) return 1;  // warm-up: the thread pool, first-touch of the outputs
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      if (call() != 0) return 1;
      volatile bool converged = r < eps_pri && s < eps_dual;  // the host's test, as ladmm-runtime makes it
      (void)converged;
      std::swap(v, v1);
      std::swap(z0, z01);
      std::swap(z1, z11);
      std::swap(u0, u01);
      std::swap(u1, u11);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms / calls < best) best = ms / calls;
  }
  std::printf("%d %.4f\n", w, best);
  std::fprintf(stderr, "last call: r %g s %g eps_pri %g eps_dual %g\n", r, s, eps_pri, eps_dual);
  return 0;
}
