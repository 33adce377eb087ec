// proxc_bench_check_floor: what a convergence check computed in the update's
// own pass over memory can cost at best on this machine. A hand-written C++
// model (no Halide) of one Pock–Chambolle iteration of anisotropic TV
// denoising with nonneg, the program of
//   proxc compile tv.prox --solver pc --emit step
// (K = [grad(x)/3; x/3] after scaling, σ = τ = θ = 1, the x-update's absorbed
// sum_squares), and of its check under proxc's stopping rule (docs/solvers.md):
// ‖x − x⁺‖², ‖(y − y⁺) + K x̄ − K x⁺‖², ‖x⁺‖², ‖Kᵀy⁺‖², ‖y⁺‖², ‖K x⁺‖² and the
// finiteness norm ‖x̄⁺‖². Not proxc's code: a bound for it. Figures for
// docs/performance.md ("What a check costs").
//
//   proxc_bench_check_floor [--sizes 512,1024,2048] [--iters 300] [--repeats 5] [--threads 2]
//
// Variants, each run for --iters iterations (the state ping-pongs between two
// sets of arrays), best of --repeats, the threads of a pool splitting the rows:
//   unchecked   the update alone, one pass: rows in order, y⁺ of the row above
//               kept for Kᵀy⁺;
//   one pass    the update and its check in the same pass: the check of row
//               r − 1 runs after x⁺ of row r (K x⁺ reads the next row), every
//               value it needs still in L1 (one row of each kept);
//   two passes  the update, then the check as a pass of its own reading the old
//               and new state (proxc's structure: split_check).
// The one-pass norms are compared with the two-pass ones (relative 1e-5; the
// sums are in double), and both variants' iterates with the unchecked one's.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kNorms = 7;
constexpr float kS = 1.0f / 3;                 // K's scale after proxc's scaling pass
constexpr float kAlpha = 0.1f * 1.7320508f;    // norm1's threshold: its weight times √3
constexpr float kB = 1.1547005f, kInv = 0.6f;  // x⁺ = (x − Kᵀy⁺ + kB·b)·kInv

struct State {
  std::vector<float> x, xb, ya, yb, y1;  // x, x̄, y's grad components, y's identity part
  explicit State(size_t n) : x(n), xb(n), ya(n), yb(n), y1(n) {}
};

struct Norms {
  double v[kNorms] = {0};
};

// A pool of threads that run one function on every band of rows and wait.
class Pool {
 public:
  explicit Pool(int n) : n_(n) {
    for (int t = 1; t < n; ++t) workers_.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int size() const { return n_; }
  void run(const std::function<void(int)>& f) {
    {
      std::lock_guard<std::mutex> g(m_);
      job_ = &f;
      pending_ = n_ - 1;
      ++generation_;
    }
    cv_.notify_all();
    f(0);
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [&] { return pending_ == 0; });
  }

 private:
  void loop(int t) {
    long seen = 0;
    for (;;) {
      const std::function<void(int)>* job;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
        job = job_;
      }
      (*job)(t);
      std::lock_guard<std::mutex> g(m_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
  int n_;
  std::vector<std::thread> workers_;
  std::mutex m_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* job_ = nullptr;
  long generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

inline float shrink(float v) { return v > kAlpha ? v - kAlpha : (v < -kAlpha ? v + kAlpha : 0.f); }

class Model {
 public:
  Model(int w, int h) : w_(w), h_(h) {}

  // Rows [j0, j1) of the new state `out` from `in`; with kCheck, the check's
  // norms of those rows into *norms in the same pass.
  template <bool kCheck>
  void band(const State& in, const std::vector<float>& b, State& out, int j0, int j1, Norms* norms) const {
    const int w = w_;
    std::vector<float> above_b(w), scratch_a(w), scratch_b(w), scratch_1(w), scratch_x(w);
    // Two rows of what the check reads and the update computed anyway: K x̄ and Kᵀy⁺.
    std::vector<float> ka[2], kb[2], kc[2], kty[2];
    for (int k = 0; k < 2; ++k) ka[k] = kb[k] = kc[k] = kty[k] = std::vector<float>(kCheck ? w : 0);
    const float* prev_b = above_b.data();  // y⁺'s second component one row up (Kᵀ reads it)
    if (j0 > 0)
      y_update<false>(in, j0 - 1, scratch_a.data(), above_b.data(), scratch_1.data(), nullptr, nullptr,
                      nullptr);
    const float *prev_na = nullptr, *prev_n1 = nullptr;
    double acc[kNorms] = {0};
    // With the check, one row more: the check of row j1 − 1 reads x⁺ of row j1.
    const int jend = kCheck ? std::min(j1 + 1, h_) : j1;
    for (int j = j0; j < jend; ++j) {
      const bool store = j < j1;
      const int cur = j & 1;
      float* na = store ? &out.ya[idx(0, j)] : scratch_a.data();
      float* nb = store ? &out.yb[idx(0, j)] : scratch_b.data();
      float* n1 = store ? &out.y1[idx(0, j)] : scratch_1.data();
      float* xo = store ? &out.x[idx(0, j)] : scratch_x.data();
      y_update<kCheck>(in, j, na, nb, n1, ka[cur].data(), kb[cur].data(), kc[cur].data());
      x_update<kCheck>(in, b, j, na, nb, j > 0 ? prev_b : nullptr, n1, xo,
                       store ? &out.xb[idx(0, j)] : nullptr, kty[cur].data());
      if (kCheck && j > j0) {
        const int p = cur ^ 1, r = j - 1;
        check_row(in, r, &out.x[idx(0, r)], xo, prev_na, prev_b, prev_n1, ka[p].data(), kb[p].data(),
                  kc[p].data(), kty[p].data(), acc);
      }
      prev_na = na;
      prev_b = nb;
      prev_n1 = n1;
    }
    if (kCheck && j1 == h_) {  // the last row: K x⁺ has no row below
      const int r = h_ - 1, p = r & 1;
      check_row(in, r, &out.x[idx(0, r)], nullptr, prev_na, prev_b, prev_n1, ka[p].data(), kb[p].data(),
                kc[p].data(), kty[p].data(), acc);
    }
    if (norms) std::copy(acc, acc + kNorms, norms->v);
  }

  // The check as a pass of its own over rows [j0, j1): reads the old state and
  // the new, recomputes K x̄, K x⁺ and Kᵀy⁺.
  void check_pass(const State& in, const State& out, int j0, int j1, Norms* norms) const {
    const int w = w_;
    std::vector<float> ka(w), kb(w), kc(w), kty(w);
    double acc[kNorms] = {0};
    for (int r = j0; r < j1; ++r) {
      // K x̄ of the old state (the update's), Kᵀy⁺ of the new.
      const float* xb = &in.xb[idx(0, r)];
      const float* xbd = &in.xb[idx(0, std::min(r + 1, h_ - 1))];
      const float ry = r + 1 < h_ ? 1.f : 0.f;
      for (int i = 0; i < w; ++i) {
        ka[i] = kS * ((i + 1 < w ? xb[i + 1] : xb[i]) - xb[i]);
        kb[i] = kS * ry * (xbd[i] - xb[i]);
        kc[i] = kS * xb[i];
      }
      kt(&out.ya[idx(0, r)], &out.yb[idx(0, r)], r > 0 ? &out.yb[idx(0, r - 1)] : nullptr, &out.y1[idx(0, r)],
         r, kty.data());
      check_row(in, r, &out.x[idx(0, r)], r + 1 < h_ ? &out.x[idx(0, r + 1)] : nullptr, &out.ya[idx(0, r)],
                &out.yb[idx(0, r)], &out.y1[idx(0, r)], ka.data(), kb.data(), kc.data(), kty.data(), acc);
    }
    std::copy(acc, acc + kNorms, norms->v);
  }

 private:
  size_t idx(int i, int j) const { return static_cast<size_t>(j) * w_ + i; }

  // y⁺ = z − prox(z) with z = y + K x̄ (σ = 1), and with kKeep K x̄ kept for the check.
  template <bool kKeep>
  void y_update(const State& in, int j, float* __restrict na, float* __restrict nb, float* __restrict n1,
                float* __restrict ka, float* __restrict kb, float* __restrict kc) const {
    const int w = w_;
    const float* __restrict xb = &in.xb[idx(0, j)];
    const float* __restrict xbd = &in.xb[idx(0, std::min(j + 1, h_ - 1))];
    const float* __restrict ya = &in.ya[idx(0, j)];
    const float* __restrict yb = &in.yb[idx(0, j)];
    const float* __restrict y1 = &in.y1[idx(0, j)];
    const float ry = j + 1 < h_ ? 1.f : 0.f;
    // The row's last pixel has no right neighbour: gx = 0 there.
    for (int i = 0; i < w; ++i) {
      const float gx = i + 1 < w ? xb[i + 1] - xb[i] : 0.f;
      const float t1a = kS * gx, t1b = kS * ry * (xbd[i] - xb[i]), t6 = kS * xb[i];
      const float za = ya[i] + t1a, zb = yb[i] + t1b, z1 = y1[i] + t6;
      na[i] = za - shrink(za);
      nb[i] = zb - shrink(zb);
      n1[i] = z1 - std::max(z1, 0.f);
      if (kKeep) {
        ka[i] = t1a;
        kb[i] = t1b;
        kc[i] = t6;
      }
    }
  }

  // Kᵀy⁺ of row j: −div(y⁺)/3 + y1⁺/3 (the adjoint of grad's forward differences).
  void kt(const float* __restrict na, const float* __restrict nb, const float* __restrict above_b,
          const float* __restrict n1, int j, float* __restrict out) const {
    const int w = w_;
    const float ry1 = j + 1 < h_ ? 1.f : 0.f;
    auto at = [=](int i, float da) {
      const float db = ry1 * nb[i] - (above_b ? above_b[i] : 0.f);
      out[i] = -kS * (da + db) + kS * n1[i];
    };
    at(0, na[0]);
    for (int i = 1; i + 1 < w; ++i) at(i, na[i] - na[i - 1]);
    at(w - 1, -na[w - 2]);
  }

  // x⁺ = (x − Kᵀy⁺ + kB·b)·kInv and x̄⁺ = 2x⁺ − x (when xbo), and with kKeep
  // Kᵀy⁺ kept for the check.
  template <bool kKeep>
  void x_update(const State& in, const std::vector<float>& b, int j, const float* __restrict na,
                const float* __restrict nb, const float* __restrict above_b, const float* __restrict n1,
                float* __restrict xo, float* __restrict xbo, float* __restrict kty) const {
    const int w = w_;
    const float* __restrict x = &in.x[idx(0, j)];
    const float* __restrict bb = &b[idx(0, j)];
    const float ry1 = j + 1 < h_ ? 1.f : 0.f;
    auto at = [=](int i, float da) {
      const float db = ry1 * nb[i] - (above_b ? above_b[i] : 0.f);
      const float t = -kS * (da + db) + kS * n1[i];
      const float xn = (kB * bb[i] + (x[i] - t)) * kInv;
      xo[i] = xn;
      if (xbo) xbo[i] = 2 * xn - x[i];
      if (kKeep) kty[i] = t;
    };
    at(0, na[0]);
    for (int i = 1; i + 1 < w; ++i) at(i, na[i] - na[i - 1]);
    at(w - 1, -na[w - 2]);
  }

  // Row r's terms of the seven norms; `below` is x⁺ of row r + 1 (null on the last row).
  void check_row(const State& in, int r, const float* __restrict xn, const float* __restrict below,
                 const float* __restrict na, const float* __restrict nb, const float* __restrict n1,
                 const float* __restrict ka, const float* __restrict kb, const float* __restrict kc,
                 const float* __restrict kty, double* acc) const {
    const int w = w_;
    const float* __restrict xo = &in.x[idx(0, r)];
    const float* __restrict ya = &in.ya[idx(0, r)];
    const float* __restrict yb = &in.yb[idx(0, r)];
    const float* __restrict y1 = &in.y1[idx(0, r)];
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0;
    const float below_on = below ? 1.f : 0.f;
    const float* __restrict down = below ? below : xn;  // (gy = 0 on the last row)
    for (int i = 0; i < w; ++i) {
      const float xp = xn[i];
      const float gx = i + 1 < w ? kS * (xn[i + 1] - xp) : 0.f, gy = below_on * kS * (down[i] - xp);
      const float p = xo[i] - xp, gc = kS * xp;
      const float da = ya[i] - na[i] + ka[i] - gx, db = yb[i] - nb[i] + kb[i] - gy, d1 = y1[i] - n1[i] + kc[i] - gc;
      const float xbn = 2 * xp - xo[i];
      s0 += p * p;
      s1 += da * da + db * db + d1 * d1;
      s2 += xp * xp;
      s3 += kty[i] * kty[i];
      s4 += na[i] * na[i] + nb[i] * nb[i] + n1[i] * n1[i];
      s5 += gx * gx + gy * gy + gc * gc;
      s6 += xbn * xbn;
    }
    const float s[kNorms] = {s0, s1, s2, s3, s4, s5, s6};
    for (int k = 0; k < kNorms; ++k) acc[k] += s[k];
  }

  int w_, h_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<int> parse_sizes(const std::string& s) {
  std::vector<int> out;
  size_t p = 0;
  while (p < s.size()) {
    const size_t q = s.find(',', p);
    out.push_back(std::atoi(s.substr(p, q - p).c_str()));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {512, 1024, 2048};
  int iters = 300, repeats = 5, threads = 2;
  for (int a = 1; a + 1 < argc; a += 2) {
    const std::string k = argv[a];
    if (k == "--sizes")
      sizes = parse_sizes(argv[a + 1]);
    else if (k == "--iters")
      iters = std::atoi(argv[a + 1]);
    else if (k == "--repeats")
      repeats = std::atoi(argv[a + 1]);
    else if (k == "--threads")
      threads = std::atoi(argv[a + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (iters < 1 || repeats < 1 || threads < 1 || sizes.empty()) {
    std::fprintf(stderr, "--iters, --repeats and --threads must be positive\n");
    return 2;
  }
  Pool pool(threads);
  std::printf(
      "| size | unchecked ms/it | one pass | ÷ unchecked | two passes | ÷ unchecked "
      "|\n|---|---|---|---|---|---|\n");
  int failures = 0;
  for (int n : sizes) {
    if (n < 8) {
      std::fprintf(stderr, "sizes must be at least 8\n");
      return 2;
    }
    const Model m(n, n);
    const size_t count = static_cast<size_t>(n) * n;
    std::vector<float> b(count);
    for (size_t k = 0; k < count; ++k) b[k] = static_cast<float>((k * 2654435761u) % 1000) / 1000;
    // mode 0: unchecked, 1: one pass, 2: two passes. Returns ms per iteration;
    // the last iteration's norms and the final x into *norms, *x.
    auto run = [&](int mode, int its, Norms* norms, std::vector<float>* x) {
      State a(count), c(count);
      a.x = b;
      a.xb = b;
      std::vector<Norms> parts(pool.size());
      const auto t0 = std::chrono::steady_clock::now();
      for (int it = 0; it < its; ++it) {
        pool.run([&](int t) {
          const int j0 = n * t / pool.size(), j1 = n * (t + 1) / pool.size();
          if (mode == 1)
            m.band<true>(a, b, c, j0, j1, &parts[t]);
          else
            m.band<false>(a, b, c, j0, j1, nullptr);
        });
        if (mode == 2) {
          pool.run(
              [&](int t) { m.check_pass(a, c, n * t / pool.size(), n * (t + 1) / pool.size(), &parts[t]); });
        }
        std::swap(a, c);
      }
      const double ms = seconds_since(t0) * 1e3 / its;
      if (norms) {
        *norms = Norms();
        for (const Norms& p : parts)
          for (int k = 0; k < kNorms; ++k) norms->v[k] += p.v[k];
      }
      if (x) *x = a.x;
      return ms;
    };
    // Correctness: the one-pass norms against the two-pass ones, and the iterates.
    Norms one, two;
    std::vector<float> x0, x1, x2;
    run(0, 5, nullptr, &x0);
    run(1, 5, &one, &x1);
    run(2, 5, &two, &x2);
    for (int k = 0; k < kNorms; ++k) {
      if (std::abs(one.v[k] - two.v[k]) > 1e-5 * std::max(1.0, std::abs(two.v[k]))) {
        std::fprintf(stderr, "%d²: norm %d differs: one pass %.9g, two passes %.9g\n", n, k, one.v[k],
                     two.v[k]);
        ++failures;
      }
    }
    // The variants' loops may round differently (their sums are reassociated: -ffast-math).
    double diff = 0, scale = 0;
    for (size_t k = 0; k < count; ++k) {
      diff = std::max({diff, std::abs(double(x1[k]) - x0[k]), std::abs(double(x2[k]) - x0[k])});
      scale = std::max(scale, std::abs(double(x0[k])));
    }
    if (diff > 1e-5 * std::max(1.0, scale)) {
      std::fprintf(stderr, "%d²: the variants' iterates differ by %g\n", n, diff);
      ++failures;
    }
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < repeats; ++r)
      for (int mode = 0; mode < 3; ++mode)
        best[mode] = std::min(best[mode], run(mode, iters, nullptr, nullptr));
    std::printf("| %d² | %.3f | %.3f | %.2f | %.3f | %.2f |\n", n, best[0], best[1], best[1] / best[0],
                best[2], best[2] / best[0]);
    std::fflush(stdout);
  }
  return failures ? 1 : 0;
}
