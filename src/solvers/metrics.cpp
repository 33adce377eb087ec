#include "solvers/metrics.h"

#include <cmath>
#include <vector>

#include "support/error.h"

namespace proxc::internal {

double psnr(const Array& x, const Array& reference) {
  user_assert(x.shape == reference.shape) << "PSNR: the result has shape " << shape_to_string(x.shape)
                                          << ", the reference " << shape_to_string(reference.shape);
  double mse = 0;
  for (size_t i = 0; i < x.data.size(); ++i) {
    double d = static_cast<double>(x.data[i]) - reference.data[i];
    mse += d * d;
  }
  mse /= static_cast<double>(x.data.size());
  return mse == 0 ? INFINITY : 10 * std::log10(1.0 / mse);
}

double ssim(const Array& x, const Array& reference) {
  user_assert(x.shape == reference.shape) << "SSIM: the result has shape " << shape_to_string(x.shape)
                                          << ", the reference " << shape_to_string(reference.shape);
  user_assert(x.rank() == 2 || x.rank() == 3) << "SSIM needs an image (H, W) or (H, W, C)";
  const int64_t h = x.shape[0], w = x.shape[1], ch = x.rank() == 3 ? x.shape[2] : 1;
  const int radius = 5;
  std::vector<double> g(2 * radius + 1);
  double gs = 0;
  for (int i = -radius; i <= radius; ++i) gs += g[static_cast<size_t>(i + radius)] = std::exp(-i * i / (2 * 1.5 * 1.5));
  for (double& v : g) v /= gs;
  const double c1 = 0.01 * 0.01, c2 = 0.03 * 0.03;
  // Separable Gaussian filtering with clamped borders.
  auto filter = [&](const std::vector<double>& in) {
    std::vector<double> tmp(in.size()), out(in.size());
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        double s = 0;
        for (int k = -radius; k <= radius; ++k) {
          int64_t jj = std::min(std::max<int64_t>(j + k, 0), w - 1);
          s += g[static_cast<size_t>(k + radius)] * in[static_cast<size_t>(i * w + jj)];
        }
        tmp[static_cast<size_t>(i * w + j)] = s;
      }
    }
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        double s = 0;
        for (int k = -radius; k <= radius; ++k) {
          int64_t ii = std::min(std::max<int64_t>(i + k, 0), h - 1);
          s += g[static_cast<size_t>(k + radius)] * tmp[static_cast<size_t>(ii * w + j)];
        }
        out[static_cast<size_t>(i * w + j)] = s;
      }
    }
    return out;
  };
  // Averaged, as scikit-image's structural_similarity does, over the pixels
  // whose whole window lies inside the image (all of them for an image of
  // at most 2·radius pixels a side).
  const int64_t crop = h > 2 * radius && w > 2 * radius ? radius : 0;
  double total = 0;
  const size_t n = static_cast<size_t>(h * w);
  for (int64_t c = 0; c < ch; ++c) {
    std::vector<double> a(n), b(n), aa(n), bb(n), ab(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = x.data[i * static_cast<size_t>(ch) + static_cast<size_t>(c)];
      b[i] = reference.data[i * static_cast<size_t>(ch) + static_cast<size_t>(c)];
      aa[i] = a[i] * a[i];
      bb[i] = b[i] * b[i];
      ab[i] = a[i] * b[i];
    }
    auto ma = filter(a), mb = filter(b), saa = filter(aa), sbb = filter(bb), sab = filter(ab);
    for (int64_t r = crop; r < h - crop; ++r) {
      for (int64_t q = crop; q < w - crop; ++q) {
        const size_t i = static_cast<size_t>(r * w + q);
        double va = saa[i] - ma[i] * ma[i], vb = sbb[i] - mb[i] * mb[i], cov = sab[i] - ma[i] * mb[i];
        total +=
            ((2 * ma[i] * mb[i] + c1) * (2 * cov + c2)) / ((ma[i] * ma[i] + mb[i] * mb[i] + c1) * (va + vb + c2));
      }
    }
  }
  return total / static_cast<double>((h - 2 * crop) * (w - 2 * crop) * ch);
}

}  // namespace proxc::internal
