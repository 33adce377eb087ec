// Black-box operators for the tests, written the way a user writes one: plain
// loops over float arrays behind the C interface of proxc/black_box.h. Built
// twice: into the test programs (which call proxc_plugin_init with
// proxc_register_black_box) and as the plugin proxc_test_plugin.so that the
// CLI tests load with --plugin.
//
//   shift_blur   y[i, j] = 0.5 x[i, j] + 0.3 x[i-1, j] + 0.2 x[i, j-1], circular
//                over the first two axes, each trailing channel on its own:
//                the same operator as conv(k, x) with the 3×3 kernel
//                [[0, 0, 0], [0, 0.5, 0.2], [0, 0.3, 0]] (origin at the centre).
//   pool2        2×2 block sums over the first two axes (even extents only):
//                shape (h, w, ...) → (h/2, w/2, ...); adjoint replicates.
//   bad_adjoint  forward 2·x, "adjoint" 2.2·y: the dot test must catch it.
//   negated_adjoint  forward 2·x, "adjoint" −2·y: a sign error (KᵀK = −4·I).
//   fails        the forward callback returns 7.
//
// And prox functions (proxc/prox_fn.h), registered by proxc_plugin_init_prox:
//   soft_threshold(x, scale=1)  f = scale·||x||₁: the prox of norm1, so that
//                a problem with it must solve as the same problem with
//                scale * norm1(x) does.
//   clamp01(x, lo=0, hi=1)      the projection onto [lo, hi]; no value callback.
//   prox_fails   the prox callback returns 5.
//   picky        refuses every operand that is not 2-D (its check callback).
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"

namespace {

struct Dims {
  int64_t h, w, c;  // first two axes, then every trailing axis as channels
};
Dims dims_of(const int64_t* s, int rank) {
  Dims d{s[0], rank > 1 ? s[1] : 1, 1};
  for (int a = 2; a < rank; ++a) d.c *= s[a];
  return d;
}
int64_t wrap(int64_t i, int64_t n) { return (i % n + n) % n; }

int shift_blur(bool adjoint, const float* in, const int64_t* s, int rank, float* out) {
  const Dims d = dims_of(s, rank);
  auto at = [&](int64_t i, int64_t j, int64_t ch) { return (wrap(i, d.h) * d.w + wrap(j, d.w)) * d.c + ch; };
  // Forward reads (i-1, j) and (i, j-1); the adjoint scatters back, i.e.
  // reads (i+1, j) and (i, j+1).
  const int64_t step = adjoint ? 1 : -1;
  for (int64_t i = 0; i < d.h; ++i) {
    for (int64_t j = 0; j < d.w; ++j) {
      for (int64_t ch = 0; ch < d.c; ++ch) {
        out[at(i, j, ch)] = 0.5f * in[at(i, j, ch)] + 0.3f * in[at(i + step, j, ch)] + 0.2f * in[at(i, j + step, ch)];
      }
    }
  }
  return 0;
}
int shift_blur_forward(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  return rank >= 2 ? shift_blur(false, in, s, rank, out) : 1;
}
int shift_blur_adjoint(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  return rank >= 2 ? shift_blur(true, in, s, rank, out) : 1;
}

int pool2_shape(void*, const int64_t* s, int rank, int64_t* out, int* out_rank) {
  if (rank < 2 || s[0] % 2 || s[1] % 2) return 1;
  for (int a = 0; a < rank; ++a) out[a] = a < 2 ? s[a] / 2 : s[a];
  *out_rank = rank;
  return 0;
}
// x has the large shape, y the pooled one.
void pool2(bool adjoint, const float* x_in, const int64_t* big, int rank, float* y_out, const float* y_in,
           float* x_out) {
  const Dims d = dims_of(big, rank);
  const int64_t h2 = d.h / 2, w2 = d.w / 2;
  if (!adjoint) {
    for (int64_t k = 0; k < h2 * w2 * d.c; ++k) y_out[k] = 0;
  }
  for (int64_t i = 0; i < d.h; ++i) {
    for (int64_t j = 0; j < d.w; ++j) {
      for (int64_t ch = 0; ch < d.c; ++ch) {
        const int64_t xi = (i * d.w + j) * d.c + ch, yi = ((i / 2) * w2 + j / 2) * d.c + ch;
        if (adjoint) x_out[xi] = y_in[yi];
        else y_out[yi] += x_in[xi];
      }
    }
  }
}
int pool2_forward(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  pool2(false, in, s, rank, out, nullptr, nullptr);
  return 0;
}
int pool2_adjoint(void*, const float* in, const int64_t*, int, float* out, const int64_t* big, int rank) {
  pool2(true, nullptr, big, rank, nullptr, in, out);
  return 0;
}

int64_t count(const int64_t* s, int rank) {
  int64_t n = 1;
  for (int a = 0; a < rank; ++a) n *= s[a];
  return n;
}
int scaled(float f, const float* in, const int64_t* s, int rank, float* out) {
  for (int64_t k = 0; k < count(s, rank); ++k) out[k] = f * in[k];
  return 0;
}
int bad_forward(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  return scaled(2.0f, in, s, rank, out);
}
int bad_adjoint(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  return scaled(2.2f, in, s, rank, out);
}
int negated_adjoint(void*, const float* in, const int64_t* s, int rank, float* out, const int64_t*, int) {
  return scaled(-2.0f, in, s, rank, out);
}
int fails_forward(void*, const float*, const int64_t*, int, float*, const int64_t*, int) { return 7; }

}  // namespace

extern "C" int proxc_plugin_init(proxc_register_black_box_fn reg) {
  const proxc_black_box ops[] = {
      {"shift_blur", shift_blur_forward, shift_blur_adjoint, nullptr, 1.0, nullptr},
      {"pool2", pool2_forward, pool2_adjoint, pool2_shape, 2.0, nullptr},
      {"bad_adjoint", bad_forward, bad_adjoint, nullptr, 0.0, nullptr},
      {"negated_adjoint", bad_forward, negated_adjoint, nullptr, 0.0, nullptr},
      {"fails", fails_forward, bad_adjoint, nullptr, 0.0, nullptr},
  };
  for (const proxc_black_box& op : ops) {
    if (int rc = reg(&op)) return rc;
  }
  return 0;
}

namespace {

int soft_threshold(void*, const float* v, const int64_t* s, int rank, double rho, const double* p, float* out) {
  const double t = p[0] / rho;
  for (int64_t i = 0; i < count(s, rank); ++i) {
    const double a = std::fabs(v[i]) - t;
    out[i] = a > 0 ? static_cast<float>(std::copysign(a, static_cast<double>(v[i]))) : 0.0f;
  }
  return 0;
}
int soft_threshold_value(void*, const float* x, const int64_t* s, int rank, const double* p, double* value) {
  double f = 0;
  for (int64_t i = 0; i < count(s, rank); ++i) f += std::fabs(static_cast<double>(x[i]));
  *value = p[0] * f;
  return 0;
}
// A value that is not a number: the solve's objective is then NaN at a
// finite iterate, which must end as a failure (issue 63, item 7).
int nan_value(void*, const float*, const int64_t*, int, const double*, double* value) {
  *value = std::nan("");
  return 0;
}
int clamp01(void*, const float* v, const int64_t* s, int rank, double, const double* p, float* out) {
  for (int64_t i = 0; i < count(s, rank); ++i) {
    out[i] = static_cast<float>(std::fmin(std::fmax(static_cast<double>(v[i]), p[0]), p[1]));
  }
  return 0;
}
int prox_fails(void*, const float*, const int64_t*, int, double, const double*, float*) { return 5; }
int copy_prox(void*, const float* v, const int64_t* s, int rank, double, const double*, float* out) {
  for (int64_t i = 0; i < count(s, rank); ++i) out[i] = v[i];
  return 0;
}
int picky_check(void*, const int64_t*, int rank, const double*, char* message, size_t size) {
  if (rank == 2) return 0;
  std::snprintf(message, size, "picky takes a 2-D image, got rank %d", rank);
  return 1;
}

}  // namespace

extern "C" int proxc_plugin_init_prox(proxc_register_prox_fn_fn reg) {
  static const char* const soft_names[] = {"scale"};
  static const double soft_defaults[] = {1.0};
  static const char* const clamp_names[] = {"lo", "hi"};
  static const double clamp_defaults[] = {0.0, 1.0};
  const proxc_prox_fn fns[] = {
      {"soft_threshold", soft_threshold, soft_threshold_value, nullptr, 1, soft_names, soft_defaults, nullptr},
      {"nan_value", soft_threshold, nan_value, nullptr, 1, soft_names, soft_defaults, nullptr},
      {"clamp01", clamp01, nullptr, nullptr, 2, clamp_names, clamp_defaults, nullptr},
      {"prox_fails", prox_fails, nullptr, nullptr, 0, nullptr, nullptr, nullptr},
      {"picky", copy_prox, nullptr, picky_check, 0, nullptr, nullptr, nullptr},
  };
  for (const proxc_prox_fn& f : fns) {
    if (int rc = reg(&f)) return rc;
  }
  return 0;
}
