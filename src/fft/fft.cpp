#include "fft/fft.h"

#include <fftw3.h>

#include <cmath>
#include <mutex>

#include "support/error.h"

namespace proxc::internal::fft {

namespace {

// FFTW's planner is not thread-safe; plans are made under this lock.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= s[i];
  return n;
}

std::vector<int> int_dims(const Shape& dims) {
  std::vector<int> out;
  for (int64_t d : dims) {
    internal_assert(d > 0 && d < (int64_t{1} << 30)) << "FFT extent out of range";
    out.push_back(static_cast<int>(d));
  }
  return out;
}

// r2c transform of one real array of extents `dims` (row-major).
std::vector<std::complex<double>> forward(const std::vector<double>& in, const Shape& dims) {
  std::vector<int> n = int_dims(dims);
  int64_t total = product(dims, 0, dims.size());
  int64_t half = product(dims, 0, dims.size() - 1) * (dims.back() / 2 + 1);
  std::vector<double> buf(in);
  std::vector<std::complex<double>> out(static_cast<size_t>(half));
  internal_assert(static_cast<int64_t>(in.size()) == total) << "fft input size";
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = fftw_plan_dft_r2c(static_cast<int>(n.size()), n.data(), buf.data(),
                             reinterpret_cast<fftw_complex*>(out.data()), FFTW_ESTIMATE);
  }
  internal_assert(plan) << "FFTW could not plan a transform";
  fftw_execute(plan);
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(plan);
  }
  return out;
}

// c2r inverse transform, normalised (divides by the number of entries).
std::vector<double> inverse(std::vector<std::complex<double>> in, const Shape& dims) {
  std::vector<int> n = int_dims(dims);
  int64_t total = product(dims, 0, dims.size());
  std::vector<double> out(static_cast<size_t>(total));
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = fftw_plan_dft_c2r(static_cast<int>(n.size()), n.data(), reinterpret_cast<fftw_complex*>(in.data()),
                             out.data(), FFTW_ESTIMATE);
  }
  internal_assert(plan) << "FFTW could not plan a transform";
  fftw_execute(plan);
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(plan);
  }
  for (double& v : out) v /= static_cast<double>(total);
  return out;
}

}  // namespace

std::vector<std::complex<double>> kernel_otf(const Array& k, const Shape& dims) {
  internal_assert(k.rank() == static_cast<int>(dims.size())) << "kernel_otf: rank mismatch";
  std::vector<double> padded(static_cast<size_t>(product(dims, 0, dims.size())), 0.0);
  const size_t r = dims.size();
  std::vector<int64_t> idx(r, 0);
  for (int64_t flat = 0; flat < k.size(); ++flat) {
    // Kernel index -> circularly shifted position (origin at size//2 goes to 0).
    int64_t rem = flat, pos = 0;
    for (size_t a = r; a-- > 0;) {
      idx[a] = rem % k.shape[a];
      rem /= k.shape[a];
    }
    for (size_t a = 0; a < r; ++a) {
      int64_t p = ((idx[a] - k.shape[a] / 2) % dims[a] + dims[a]) % dims[a];
      pos = pos * dims[a] + p;
    }
    padded[static_cast<size_t>(pos)] += k.data[static_cast<size_t>(flat)];
  }
  return forward(padded, dims);
}

double conv_norm(const Array& k, const Shape& dims) {
  double m = 0;
  for (const auto& z : kernel_otf(k, dims)) m = std::max(m, std::abs(z));
  return m;
}

void circulant_solve(const Array& k, const Shape& shape, double a, double c, DoubleData* rhs) {
  const size_t r = static_cast<size_t>(k.rank());
  internal_assert(shape.size() >= r) << "circulant_solve: kernel rank above the signal's";
  Shape dims(shape.begin(), shape.begin() + static_cast<long>(r));
  const int64_t inner = product(shape, r, shape.size());  // trailing (channel) extent
  const int64_t n = product(dims, 0, r);
  auto otf = kernel_otf(k, dims);
  std::vector<double> channel(static_cast<size_t>(n));
  for (int64_t ch = 0; ch < inner; ++ch) {
    for (int64_t i = 0; i < n; ++i) channel[static_cast<size_t>(i)] = (*rhs)[static_cast<size_t>(i * inner + ch)];
    auto f = forward(channel, dims);
    for (size_t i = 0; i < f.size(); ++i) {
      double denom = a * std::norm(otf[i]) + c;
      internal_assert(denom > 0) << "circulant_solve: singular system";
      f[i] /= denom;
    }
    auto x = inverse(std::move(f), dims);
    for (int64_t i = 0; i < n; ++i) (*rhs)[static_cast<size_t>(i * inner + ch)] = x[static_cast<size_t>(i)];
  }
}

}  // namespace proxc::internal::fft
