// Writes the synthetic data files of examples/ (data/, deblur_photo/, superres/).
//
// The files are committed; this program documents how they were made and
// remakes them:  build/dev/examples/proxc_make_example_data examples
//
// The clean image is a ramp with a bright rectangle and a grey disk (the
// shapes of the conformance solve problems), degraded as each example says.
// Noise comes from a fixed-seed std::mt19937 so the files are reproducible
// (bit-for-bit on the same standard library).

#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "io/npy.h"
#include "io/png.h"
#include "support/array.h"
#include "support/error.h"

using proxc::Array;
using proxc::Shape;

namespace {

Array clean_image(int64_t h, int64_t w) {
  Array a(Shape{h, w});
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      double v = 0.3 * static_cast<double>(j) / static_cast<double>(w - 1);
      if (i >= h / 5 && i < h / 2 && j >= w / 6 && j < w / 2) v = 0.8;
      double di = static_cast<double>(i) - 0.65 * static_cast<double>(h);
      double dj = static_cast<double>(j) - 0.68 * static_cast<double>(w);
      if (di * di + dj * dj < 0.04 * static_cast<double>(h * w)) v = 0.45;
      a.data[static_cast<size_t>(i * w + j)] = static_cast<float>(v);
    }
  }
  return a;
}

Array gaussian_kernel(int64_t n, double sigma) {
  Array k(Shape{n, n});
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double di = static_cast<double>(i - n / 2), dj = static_cast<double>(j - n / 2);
      double v = std::exp(-(di * di + dj * dj) / (2 * sigma * sigma));
      k.data[static_cast<size_t>(i * n + j)] = static_cast<float>(v);
      sum += v;
    }
  }
  for (float& v : k.data) v = static_cast<float>(v / sum);
  return k;
}

// Circular convolution with the kernel origin at (kh//2, kw//2) (SEMANTICS.md).
Array conv(const Array& k, const Array& x) {
  const int64_t kh = k.shape[0], kw = k.shape[1], h = x.shape[0], w = x.shape[1];
  Array y(x.shape);
  for (int64_t m = 0; m < h; ++m) {
    for (int64_t n = 0; n < w; ++n) {
      double s = 0;
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) {
          int64_t r = ((m - i + kh / 2) % h + h) % h, c = ((n - j + kw / 2) % w + w) % w;
          s += k.data[static_cast<size_t>(i * kw + j)] * x.data[static_cast<size_t>(r * w + c)];
        }
      }
      y.data[static_cast<size_t>(m * w + n)] = static_cast<float>(s);
    }
  }
  return y;
}

void add_noise(Array* a, double sigma, std::mt19937* rng) {
  std::normal_distribution<double> n(0.0, sigma);
  for (float& v : a->data) v = static_cast<float>(v + n(*rng));
}

Array random_mask(const Shape& s, double p, std::mt19937* rng) {
  Array m(s);
  std::bernoulli_distribution b(p);
  for (float& v : m.data) v = b(*rng) ? 1.0f : 0.0f;
  return m;
}

Array multiply(const Array& a, const Array& b) {
  Array r = a;
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] *= b.data[i];
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s EXAMPLES_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = std::string(argv[1]) + "/data/";
  const std::string photo_dir = std::string(argv[1]) + "/deblur_photo/";
  const std::string sr_dir = std::string(argv[1]) + "/superres/";
  try {
    std::mt19937 rng(20261130);
    const int64_t h = 96, w = 128;
    Array clean = clean_image(h, w);
    proxc::io::write_npy(dir + "clean.npy", clean);

    // Denoising: Gaussian noise of standard deviation 0.1.
    Array noisy = clean;
    add_noise(&noisy, 0.1, &rng);
    proxc::io::write_npy(dir + "noisy.npy", noisy);

    // Deconvolution: 7x7 Gaussian blur (sigma 1.5) and noise 0.01.
    Array psf7 = gaussian_kernel(7, 1.5);
    proxc::io::write_npy(dir + "psf_gauss7.npy", psf7);
    Array blurred = conv(psf7, clean);
    add_noise(&blurred, 0.01, &rng);
    proxc::io::write_npy(dir + "blurred.npy", blurred);

    // Inpainting: half the pixels missing, noise 0.01 on the rest.
    Array mask = random_mask(clean.shape, 0.5, &rng);
    Array observed = clean;
    add_noise(&observed, 0.01, &rng);
    proxc::io::write_npy(dir + "inpaint_mask.npy", mask);
    proxc::io::write_npy(dir + "inpaint_observed.npy", multiply(mask, observed));

    // Demosaicking: an RGB image seen through an RGGB Bayer mask.
    Array rgb(Shape{h, w, 3}), bayer(Shape{h, w, 3});
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < w; ++j) {
        float v = clean.data[static_cast<size_t>(i * w + j)];
        float colour[3] = {v, 0.6f * v + 0.2f * static_cast<float>(i) / static_cast<float>(h), 1.0f - v};
        int channel = (i % 2 == 0 && j % 2 == 0) ? 0 : (i % 2 == 1 && j % 2 == 1) ? 2 : 1;
        for (int c = 0; c < 3; ++c) {
          size_t k = static_cast<size_t>((i * w + j) * 3 + c);
          rgb.data[k] = colour[c];
          bayer.data[k] = c == channel ? 1.0f : 0.0f;
        }
      }
    }
    Array raw = multiply(bayer, rgb);
    add_noise(&raw, 0.005, &rng);
    proxc::io::write_npy(dir + "bayer_mask.npy", bayer);
    proxc::io::write_npy(dir + "bayer_raw.npy", multiply(bayer, raw));

    // The deblurring example of docs/language.md: photo_blurred.npy, psf.npy.
    Array psf5 = gaussian_kernel(5, 1.0);
    proxc::io::write_npy(photo_dir + "psf.npy", psf5);
    Array photo_blurred = conv(psf5, clean);
    add_noise(&photo_blurred, 0.01, &rng);
    proxc::io::write_npy(photo_dir + "photo_blurred.npy", photo_blurred);

    // The super-resolution example: a 640x480 scene seen at 320x240.
    Array big = clean_image(640, 480);
    Array big_blurred = conv(gaussian_kernel(5, 1.0), big);
    Array low(Shape{320, 240});
    for (int64_t i = 0; i < 320; ++i) {
      for (int64_t j = 0; j < 240; ++j) {
        low.data[static_cast<size_t>(i * 240 + j)] = big_blurred.data[static_cast<size_t>(2 * i * 480 + 2 * j)];
      }
    }
    add_noise(&low, 0.005, &rng);
    for (float& v : low.data) v = std::min(1.0f, std::max(0.0f, v));
    proxc::io::write_png(sr_dir + "low_res.png", low, 16);
    Array valid(Shape{320, 240});
    for (float& v : valid.data) v = 1.0f;
    for (int64_t j = 0; j < 240; ++j) valid.data[static_cast<size_t>(j)] = 0.0f;  // a dead sensor row
    proxc::io::write_npy(sr_dir + "valid.npy", valid);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
