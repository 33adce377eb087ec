// Writes the data files of examples/.
//
//   proxc_make_example_data EXAMPLES_DIR            the committed synthetic data
//                                                   (data/, deblur_photo/, superres/)
//   proxc_make_example_data EXAMPLES_DIR --photos   the degraded photographs and the
//                                                   3-D volume (photos/, volume/; not
//                                                   committed: the demo makes them)
//
// The clean image is a ramp with a bright rectangle and a grey disk (the
// shapes of the conformance solve problems), degraded as each example says.
// Noise comes from a fixed-seed std::mt19937 so the files are reproducible
// (bit-for-bit on the same standard library).

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>
#include <algorithm>
#include <string>

#include "io/array_io.h"
#include "io/npy.h"
#include "io/png.h"
#include "proxc/black_box.h"
#include "support/array.h"
#include "support/error.h"

// The lens of photos/deblur_lens.prox (plugins/lens_blur.cpp, linked in).
extern "C" int proxc_plugin_init(proxc_register_black_box_fn);

using proxc::internal::Array;
using proxc::internal::Shape;

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

Array multiply(const Array& a, const Array& b);

// A motion-blur kernel: a line of `length` pixels at `degrees` from the
// horizontal, antialiased by sampling, in an n×n support, summing to 1.
Array motion_kernel(int64_t n, double length, double degrees) {
  Array k(Shape{n, n});
  const double t = degrees * 3.14159265358979323846 / 180, c = static_cast<double>(n / 2);
  const int samples = 400;
  for (int s = 0; s < samples; ++s) {
    double u = (static_cast<double>(s) / (samples - 1) - 0.5) * (length - 1);
    double x = c + u * std::cos(t), y = c - u * std::sin(t);
    auto i = static_cast<int64_t>(std::lround(y)), j = static_cast<int64_t>(std::lround(x));
    if (i >= 0 && i < n && j >= 0 && j < n) k.data[static_cast<size_t>(i * n + j)] += 1.0f;
  }
  double sum = 0;
  for (float v : k.data) sum += v;
  for (float& v : k.data) v = static_cast<float>(v / sum);
  return k;
}

// 3-D circular convolution (kernel origin at the centre).
Array conv3(const Array& k, const Array& x) {
  const int64_t kd = k.shape[0], kh = k.shape[1], kw = k.shape[2];
  const int64_t d = x.shape[0], h = x.shape[1], w = x.shape[2];
  Array y(x.shape);
  for (int64_t z = 0; z < d; ++z) {
    for (int64_t m = 0; m < h; ++m) {
      for (int64_t n = 0; n < w; ++n) {
        double s = 0;
        for (int64_t a = 0; a < kd; ++a) {
          int64_t zz = ((z - a + kd / 2) % d + d) % d;
          for (int64_t i = 0; i < kh; ++i) {
            int64_t r = ((m - i + kh / 2) % h + h) % h;
            for (int64_t j = 0; j < kw; ++j) {
              int64_t c = ((n - j + kw / 2) % w + w) % w;
              s += k.data[static_cast<size_t>((a * kh + i) * kw + j)] * x.data[static_cast<size_t>((zz * h + r) * w + c)];
            }
          }
        }
        y.data[static_cast<size_t>((z * h + m) * w + n)] = static_cast<float>(s);
      }
    }
  }
  return y;
}

// The degraded photographs (photos/) and the z-stack (volume/).
void make_photo_data(const std::string& root) {
  const std::string dir = root + "/photos/", vol = root + "/volume/";
  std::mt19937 rng(20261201);
  const Array camera = proxc::internal::io::load_array(dir + "camera.png");

  // The demo: Gaussian blur (9x9, sigma 2) and noise 0.01.
  Array g = gaussian_kernel(9, 2.0);
  proxc::internal::io::write_npy(dir + "gauss_psf.npy", g);
  Array blurred = conv(g, camera);
  add_noise(&blurred, 0.01, &rng);
  proxc::internal::io::write_npy(dir + "camera_gauss_blurred.npy", blurred);

  // Motion blur: a 15-pixel line at 30 degrees, noise 0.005.
  Array m = motion_kernel(15, 15, 30);
  proxc::internal::io::write_npy(dir + "motion_psf.npy", m);
  Array moved = conv(m, camera);
  add_noise(&moved, 0.005, &rng);
  proxc::internal::io::write_npy(dir + "camera_motion_blurred.npy", moved);

  // A lens whose blur grows towards the corners (the black box of
  // plugins/lens_blur.cpp, applied through the registry as proxc would), noise 0.005.
  {
    if (proxc_plugin_init(proxc_register_black_box) != 0) throw std::runtime_error("lens_blur: cannot register");
    const proxc_black_box* lens = proxc_find_black_box("lens_blur");
    Array lensed(camera.shape);
    if (lens->forward(lens->user, camera.data.data(), camera.shape.data(), camera.rank(), lensed.data.data(),
                      lensed.shape.data(), lensed.rank()) != 0) {
      throw std::runtime_error("lens_blur: forward failed");
    }
    std::mt19937 lens_rng(20261202);  // its own stream: the other files keep their noise
    add_noise(&lensed, 0.005, &lens_rng);
    proxc::internal::io::write_npy(dir + "camera_lens_blurred.npy", lensed);
  }

  // Poisson noise: a dim exposure (30 photons at white) through a 5x5 Gaussian blur.
  Array p = gaussian_kernel(5, 1.0);
  proxc::internal::io::write_npy(dir + "poisson_psf.npy", p);
  Array expected = conv(p, camera);
  Array counts(camera.shape);
  for (size_t i = 0; i < counts.data.size(); ++i) {
    std::poisson_distribution<int> draw(30.0 * std::max(0.0f, expected.data[i]));
    counts.data[i] = static_cast<float>(draw(rng));
  }
  proxc::internal::io::write_npy(dir + "camera_counts.npy", counts);

  // Demosaicking the cat: an RGGB Bayer mask over the colour photograph.
  const Array cat = proxc::internal::io::load_array(dir + "chelsea.png");
  const int64_t h = cat.shape[0], w = cat.shape[1];
  Array bayer(cat.shape);
  for (int64_t i = 0; i < h; ++i) {
    for (int64_t j = 0; j < w; ++j) {
      int channel = (i % 2 == 0 && j % 2 == 0) ? 0 : (i % 2 == 1 && j % 2 == 1) ? 2 : 1;
      bayer.data[static_cast<size_t>((i * w + j) * 3 + channel)] = 1.0f;
    }
  }
  Array raw = cat;
  add_noise(&raw, 0.005, &rng);
  proxc::internal::io::write_npy(dir + "chelsea_bayer_mask.npy", bayer);
  proxc::internal::io::write_npy(dir + "chelsea_bayer_raw.npy", multiply(bayer, raw));

  // A z-stack: 24 planes of 64x64 with beads and a slanted rod, seen through
  // an elongated 3-D Gaussian PSF (5x7x7; sigma 1.5 along z, 1 across) and noise 0.01.
  const int64_t d = 24, n = 64;
  Array volume(Shape{d, n, n});
  std::uniform_real_distribution<double> u(0, 1);
  struct Bead { double z, y, x, r, v; };
  std::vector<Bead> beads;
  for (int b = 0; b < 12; ++b) beads.push_back({3 + 18 * u(rng), 8 + 48 * u(rng), 8 + 48 * u(rng), 2 + 3 * u(rng), 0.4 + 0.6 * u(rng)});
  for (int64_t z = 0; z < d; ++z) {
    for (int64_t y = 0; y < n; ++y) {
      for (int64_t x = 0; x < n; ++x) {
        double v = 0;
        for (const Bead& b : beads) {
          double dz = (static_cast<double>(z) - b.z) * 2, dy = static_cast<double>(y) - b.y, dx = static_cast<double>(x) - b.x;
          if (dz * dz + dy * dy + dx * dx < b.r * b.r) v = std::max(v, b.v);
        }
        double t = static_cast<double>(z) / static_cast<double>(d - 1);  // the rod
        double ry = 10 + 44 * t, rx = 50 - 30 * t;
        if ((static_cast<double>(y) - ry) * (static_cast<double>(y) - ry) + (static_cast<double>(x) - rx) * (static_cast<double>(x) - rx) < 4) v = 0.7;
        volume.data[static_cast<size_t>((z * n + y) * n + x)] = static_cast<float>(v);
      }
    }
  }
  Array psf(Shape{5, 7, 7});
  double sum = 0;
  for (int64_t a = 0; a < 5; ++a) {
    for (int64_t i = 0; i < 7; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        double dz = static_cast<double>(a - 2), dy = static_cast<double>(i - 3), dx = static_cast<double>(j - 3);
        double v = std::exp(-dz * dz / (2 * 1.5 * 1.5) - (dy * dy + dx * dx) / 2);
        psf.data[static_cast<size_t>((a * 7 + i) * 7 + j)] = static_cast<float>(v);
        sum += v;
      }
    }
  }
  for (float& v : psf.data) v = static_cast<float>(v / sum);
  proxc::internal::io::write_npy(vol + "volume_clean.npy", volume);
  proxc::internal::io::write_npy(vol + "psf3d.npy", psf);
  Array stack = conv3(psf, volume);
  add_noise(&stack, 0.01, &rng);
  proxc::internal::io::write_npy(vol + "stack_blurred.npy", stack);
}

Array multiply(const Array& a, const Array& b) {
  Array r = a;
  for (size_t i = 0; i < r.data.size(); ++i) r.data[i] *= b.data[i];
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[2]) == "--photos") {
    try {
      make_photo_data(argv[1]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
    return 0;
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s EXAMPLES_DIR [--photos]\n", argv[0]);
    return 2;
  }
  const std::string dir = std::string(argv[1]) + "/data/";
  const std::string photo_dir = std::string(argv[1]) + "/deblur_photo/";
  const std::string sr_dir = std::string(argv[1]) + "/superres/";
  try {
    std::mt19937 rng(20261130);
    const int64_t h = 96, w = 128;
    Array clean = clean_image(h, w);
    proxc::internal::io::write_npy(dir + "clean.npy", clean);

    // Denoising: Gaussian noise of standard deviation 0.1.
    Array noisy = clean;
    add_noise(&noisy, 0.1, &rng);
    proxc::internal::io::write_npy(dir + "noisy.npy", noisy);

    // Deconvolution: 7x7 Gaussian blur (sigma 1.5) and noise 0.01.
    Array psf7 = gaussian_kernel(7, 1.5);
    proxc::internal::io::write_npy(dir + "psf_gauss7.npy", psf7);
    Array blurred = conv(psf7, clean);
    add_noise(&blurred, 0.01, &rng);
    proxc::internal::io::write_npy(dir + "blurred.npy", blurred);

    // Inpainting: half the pixels missing, noise 0.01 on the rest.
    Array mask = random_mask(clean.shape, 0.5, &rng);
    Array observed = clean;
    add_noise(&observed, 0.01, &rng);
    proxc::internal::io::write_npy(dir + "inpaint_mask.npy", mask);
    proxc::internal::io::write_npy(dir + "inpaint_observed.npy", multiply(mask, observed));

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
    proxc::internal::io::write_npy(dir + "bayer_mask.npy", bayer);
    proxc::internal::io::write_npy(dir + "bayer_raw.npy", multiply(bayer, raw));

    // The deblurring example of docs/language.md: photo_blurred.npy, psf.npy.
    Array psf5 = gaussian_kernel(5, 1.0);
    proxc::internal::io::write_npy(photo_dir + "psf.npy", psf5);
    Array photo_blurred = conv(psf5, clean);
    add_noise(&photo_blurred, 0.01, &rng);
    proxc::internal::io::write_npy(photo_dir + "photo_blurred.npy", photo_blurred);

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
    proxc::internal::io::write_png(sr_dir + "low_res.png", low, 16);
    // Its ground truth (--reference), 16 bits as the observation.
    Array big_clipped = big;
    for (float& v : big_clipped.data) v = std::min(1.0f, std::max(0.0f, v));
    proxc::internal::io::write_png(sr_dir + "high_res.png", big_clipped, 16);
    Array valid(Shape{320, 240});
    for (float& v : valid.data) v = 1.0f;
    for (int64_t j = 0; j < 240; ++j) valid.data[static_cast<size_t>(j)] = 0.0f;  // a dead sensor row
    proxc::internal::io::write_npy(sr_dir + "valid.npy", valid);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
