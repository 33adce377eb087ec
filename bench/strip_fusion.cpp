// proxc_bench_strips: what fusing the passes of an iteration (and of several
// iterations: temporal blocking) over strips of rows could buy, measured on a
// hand-written Halide model of Pock–Chambolle's iteration for anisotropic TV
// denoising with nonneg (the y-update of grad's two components and of the
// identity, then the x-update, then x̄ = 2x⁺ − x), not on proxc's generated
// pipelines. Figures for docs/performance.md ("--fuse N"). Release build.
//
//   proxc_bench_strips [--sizes 512,1024] [--iters 200] [--repeats 5] [--strip 16]
//
// Variants, each run for --iters iterations (the state ping-pongs between two
// sets of buffers), best of --repeats, every variant's iterate compared with
// the first's:
//   two passes       the y-update writes y⁺ (a pass through memory), the
//                    x-update reads it back (proxc's default schedule);
//   two passes, run-time extents
//                    the same with the image's extents as run-time parameters
//                    (proxc's pipelines serve every size of a structure);
//   one pass         y⁺ computed per strip of rows of the x-update (with a
//                    row of halo) and written from there (compute_with);
//   N per pass       N iterations per strip (halos of N rows), one pass
//                    through memory per N iterations.

#include <Halide.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace Halide;

const Var x("x"), y("y"), c("c"), yo("yo"), yi("yi");
constexpr float kS = 1.0f / 3, kWeight = 0.1f, kTau = 0.577f;
constexpr int kLanes = 8;

struct State {
  Func x0, y0, xbar, y1;
};

// One iteration's values (not scheduled); the y-update's and the new x's
// Funcs are appended to *ys and *xs.
State iterate(const State& in, const Func& b, const Expr& w, const Expr& h, std::vector<Func>* ys,
              std::vector<Func>* xs) {
  Func xb = BoundaryConditions::repeat_edge(in.xbar, {{0, w}, {0, h}});
  Func yv("yv"), y1v("y1v"), xv("xv"), xbar("xbar");
  // grad's components (forward differences, zero at the far border), y ← y + σKx̄ minus its prox.
  Expr gx = xb(x + 1, y) - xb(x, y), gy = xb(x, y + 1) - xb(x, y);
  yv(x, y, c) = clamp(in.y0(x, y, c) + kS * select(c == 0, gx, gy), -kWeight, kWeight);
  y1v(x, y) = min(in.y1(x, y) + kS * in.xbar(x, y), 0.0f);
  Func yz = BoundaryConditions::constant_exterior(yv, 0.0f, {{0, w}, {0, h}, {0, 2}});
  Expr kty = kS * (yz(x - 1, y, 0) - yz(x, y, 0) + yz(x, y - 1, 1) - yz(x, y, 1)) + kS * y1v(x, y);
  xv(x, y) = (in.x0(x, y) - kTau * kty + 1.15f * b(x, y)) / 1.667f;
  xbar(x, y) = 2 * xv(x, y) - in.x0(x, y);
  yv.bound(c, 0, 2);
  ys->push_back(yv);
  ys->push_back(y1v);
  xs->push_back(xv);
  return {xv, yv, xbar, y1v};
}

struct Variant {
  std::string name;
  int per_pass;  // iterations per pipeline run; 0: two passes
  bool const_extents;
};

struct Buffers {
  Buffer<float> x0, y0, xbar, y1;
};

double run(const Variant& v, int n, int iters, int repeats, int strip, Buffer<float>* x_out) {
  ImageParam x0(Float(32), 2, "x0"), y0(Float(32), 3, "y0"), xbar(Float(32), 2, "xbar"),
      y1(Float(32), 2, "y1"), b(Float(32), 2, "b");
  Param<int> pw("w"), ph("h");
  const Expr w = v.const_extents ? Expr(n) : Expr(pw), h = v.const_extents ? Expr(n) : Expr(ph);
  State st{x0, y0, xbar, y1};
  std::vector<Func> ys, xs;
  const int per = std::max(v.per_pass, 1);
  for (int i = 0; i < per; ++i) st = iterate(st, b, w, h, &ys, &xs);
  Func out_x("out_x"), out_y0("out_y0"), out_y1("out_y1");
  out_x(x, y) = Tuple(st.x0(x, y), st.xbar(x, y));
  std::vector<Func> outs;
  out_x.split(y, yo, yi, strip).parallel(yo).vectorize(x, kLanes);
  if (v.per_pass == 0) {
    // The y-update's Funcs are the outputs y⁺ themselves; the x-update reads them back.
    for (Func f : {ys[0], ys[1]}) f.split(y, yo, yi, strip).parallel(yo).vectorize(x, kLanes);
    ys[0].reorder(x, c, yi, yo).unroll(c);
    ys[1].compute_with(ys[0], yo);
    outs = {ys[0], ys[1], out_x};
  } else {
    out_y0(x, y, c) = st.y0(x, y, c);
    out_y1(x, y) = st.y1(x, y);
    out_y0.bound(c, 0, 2)
        .split(y, yo, yi, strip)
        .reorder(x, c, yi, yo)
        .parallel(yo)
        .unroll(c)
        .vectorize(x, kLanes);
    out_y1.split(y, yo, yi, strip).parallel(yo).vectorize(x, kLanes);
    out_y0.compute_with(out_x, yo);
    out_y1.compute_with(out_x, yo);
    for (size_t i = 0; i < ys.size(); ++i) {
      ys[i].compute_at(out_x, yo).vectorize(x, kLanes);
      if (i % 2 == 0) ys[i].reorder(x, c, y).unroll(c);
    }
    for (size_t i = 0; i + 1 < xs.size(); ++i) xs[i].compute_at(out_x, yo).vectorize(x, kLanes);
    outs = {out_y0, out_y1, out_x};
  }
  if (v.const_extents) {
    for (Func f : outs) f.bound(x, 0, n).bound(y, 0, n);
  }
  Pipeline p(outs);
  p.compile_jit(get_jit_target_from_environment());

  // A deterministic start (not a solve's: the figures are per iteration).
  Buffer<float> bb(n, n);
  Buffers a{Buffer<float>(n, n), Buffer<float>(n, n, 2), Buffer<float>(n, n), Buffer<float>(n, n)};
  Buffers z{Buffer<float>(n, n), Buffer<float>(n, n, 2), Buffer<float>(n, n), Buffer<float>(n, n)};
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        a.x0(i, j) = static_cast<float>((i * 7 + j * 3) % 11) * 0.1f;
        a.xbar(i, j) = a.x0(i, j);
        a.y1(i, j) = 0;
        bb(i, j) = static_cast<float>((i * 5 + j) % 13) * 0.05f;
        a.y0(i, j, 0) = a.y0(i, j, 1) = 0.01f * static_cast<float>((i + j) % 5);
      }
    }
    pw.set(n);
    ph.set(n);
    b.set(bb);
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; it += per) {
      x0.set(a.x0);
      y0.set(a.y0);
      xbar.set(a.xbar);
      y1.set(a.y1);
      p.realize(Realization({z.y0, z.y1, z.x0, z.xbar}));
      std::swap(a, z);
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  *x_out = a.x0;
  return best * 1e3 / iters;
}

std::vector<int> parse_sizes(const char* s) {
  std::vector<int> sizes;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) sizes.push_back(std::atoi(item.c_str()));
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> sizes = {512, 1024};
  int iters = 200, repeats = 5, strip = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--sizes")) {
      sizes = parse_sizes(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--iters")) {
      iters = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--repeats")) {
      repeats = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "--strip")) {
      strip = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--sizes 512,1024] [--iters 200] [--repeats 5] [--strip 16]\n",
                   argv[0]);
      return 2;
    }
  }
  if (sizes.empty() || iters < 4 || iters % 4 != 0 || repeats < 1 || strip < 1) {
    std::fprintf(stderr, "%s: --iters must be a positive multiple of 4; sizes, repeats and strip positive\n",
                 argv[0]);
    return 2;
  }
  const std::vector<Variant> variants = {{"two passes", 0, true},
                                         {"two passes, run-time extents", 0, false},
                                         {"one pass", 1, true},
                                         {"2 per pass", 2, true},
                                         {"4 per pass", 4, true}};
  std::printf(
      "%d iterations, best of %d, strips of %d rows\n\n| size | variant | ms/it | ÷ two passes | max |x - "
      "x₁| |\n"
      "|---|---|---|---|---|\n",
      iters, repeats, strip);
  try {
    for (int n : sizes) {
      Buffer<float> first;
      double base = 0;
      for (const Variant& v : variants) {
        Buffer<float> xo;
        const double ms = run(v, n, iters, repeats, strip, &xo);
        if (!first.defined()) {
          first = xo;
          base = ms;
        }
        double diff = 0;
        for (int j = 0; j < n; ++j) {
          for (int i = 0; i < n; ++i)
            diff = std::max(diff, static_cast<double>(std::fabs(xo(i, j) - first(i, j))));
        }
        std::printf("| %d² | %s | %.3f | %.2f | %.1e |\n", n, v.name.c_str(), ms, ms / base, diff);
        std::fflush(stdout);
      }
    }
  } catch (const Halide::Error& e) {
    std::fprintf(stderr, "Halide: %s\n", e.what());
    return 1;
  }
  return 0;
}
