// A proxc plugin: the blur of a lens whose sharpness falls off towards the
// corners of the frame (field curvature), a forward model that no built-in
// operator expresses, because the blur changes from pixel to pixel.
//
// Output pixel (i, j) is a normalised 7×7 Gaussian average of the input
// around (i, j) whose standard deviation grows from 0.6 px at the centre of
// the frame to 2.2 px in its corners; pixels outside the frame count as 0,
// the weights of each output pixel sum to 1. The adjoint scatters every
// output value back with the same weights. Images are (H, W) or (H, W, C),
// channels blurred alike.
//
// Build (CMake does it: examples/CMakeLists.txt):
//   c++ -std=c++17 -O2 -shared -fPIC -Iinclude examples/plugins/lens_blur.cpp -o libproxc_lens_blur.so
// Use:
//   proxc --plugin build/release/examples/libproxc_lens_blur.so solve examples/photos/deblur_lens.prox
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "proxc/black_box.h"

namespace {

constexpr int kRadius = 3;
constexpr int kTaps = 2 * kRadius + 1;  // 7×7

double sigma_at(int64_t i, int64_t j, int64_t h, int64_t w) {
  const double ci = 0.5 * static_cast<double>(h - 1), cj = 0.5 * static_cast<double>(w - 1);
  const double corner = ci * ci + cj * cj;  // 0 for a 1×1 frame
  const double r2 = corner > 0 ? ((i - ci) * (i - ci) + (j - cj) * (j - cj)) / corner : 0;  // 0 centre, 1 corner
  return 0.6 + 1.6 * r2;
}

// The weights of one frame size, tap-major: weight[t][i·w + j] is the weight
// of input pixel (i + a, j + b) in output pixel (i, j) for tap t = (a, b)
// (0 where that pixel is outside the frame), so that each tap is one pass of
// contiguous, vectorisable row loops. Computed once per size and kept: a
// solver calls the operator several times per iteration.
struct Taps {
  std::vector<float> weight[kTaps * kTaps];
};

const Taps& taps_for(int64_t h, int64_t w) {
  static std::mutex m;
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Taps>> cache;
  std::lock_guard<std::mutex> lock(m);
  std::unique_ptr<Taps>& t = cache[{h, w}];
  if (t) return *t;
  t = std::make_unique<Taps>();
  for (auto& v : t->weight) v.assign(static_cast<size_t>(h * w), 0.0f);
  double wt[kTaps * kTaps];
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      const double s = sigma_at(i, j, h, w);
      double sum = 0;
      for (int a = -kRadius; a <= kRadius; ++a) {
        for (int b = -kRadius; b <= kRadius; ++b) {
          double v = std::exp(-(a * a + b * b) / (2 * s * s));
          wt[(a + kRadius) * kTaps + b + kRadius] = v;
          sum += v;
        }
      }
      for (int a = -kRadius; a <= kRadius; ++a) {
        for (int b = -kRadius; b <= kRadius; ++b) {
          const int64_t si = i + a, sj = j + b;
          if (si < 0 || si >= h || sj < 0 || sj >= w) continue;
          const int tap = (a + kRadius) * kTaps + b + kRadius;
          t->weight[tap][static_cast<size_t>(i * w + j)] = static_cast<float>(wt[tap] / sum);
        }
      }
    }
  }
  return *t;
}

int apply(bool adjoint, const float* in, const int64_t* shape, int rank, float* out) {
  if (rank != 2 && rank != 3) return 1;
  const int64_t h = shape[0], w = shape[1], c = rank == 3 ? shape[2] : 1;
  const Taps& t = taps_for(h, w);
  for (int64_t k = 0; k < h * w * c; ++k) out[k] = 0;
  for (int a = -kRadius; a <= kRadius; ++a) {
    for (int b = -kRadius; b <= kRadius; ++b) {
      const float* wt = t.weight[(a + kRadius) * kTaps + b + kRadius].data();
      // Output rows i and columns j whose tap (a, b) lies in the frame.
      const int64_t i0 = std::max<int64_t>(0, -a), i1 = std::min<int64_t>(h, h - a);
      const int64_t j0 = std::max<int64_t>(0, -b), j1 = std::min<int64_t>(w, w - b);
      for (int64_t i = i0; i < i1; ++i) {
        const float* wr = wt + i * w;
        // Forward: out(i, j) += wt · in(i + a, j + b); adjoint: the transpose.
        float* o = adjoint ? out + ((i + a) * w + b) * c : out + i * w * c;
        const float* x = adjoint ? in + i * w * c : in + ((i + a) * w + b) * c;
        if (c == 1) {
          for (int64_t j = j0; j < j1; ++j) o[j] += wr[j] * x[j];
        } else {
          for (int64_t j = j0; j < j1; ++j) {
            for (int64_t ch = 0; ch < c; ++ch) o[j * c + ch] += wr[j] * x[j * c + ch];
          }
        }
      }
    }
  }
  return 0;
}

int forward(void*, const float* in, const int64_t* shape, int rank, float* out, const int64_t*, int) {
  return apply(false, in, shape, rank, out);
}
int adjoint(void*, const float* in, const int64_t* shape, int rank, float* out, const int64_t*, int) {
  return apply(true, in, shape, rank, out);
}

}  // namespace

extern "C" int proxc_plugin_init(proxc_register_black_box_fn register_op) {
  // Rows of the operator sum to 1; its columns need not: no declared bound,
  // proxc estimates ||K|| when a solver needs it.
  const proxc_black_box op = {"lens_blur", forward, adjoint, nullptr, 0.0, nullptr};
  return register_op(&op);
}
