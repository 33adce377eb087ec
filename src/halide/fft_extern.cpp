#include "halide/fft_extern.h"
#include "halide/extern_inputs.h"

#include <fftw3.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {

struct Plans {
  fftwf_plan forward = nullptr;
  fftwf_plan inverse = nullptr;
  float* real = nullptr;
  fftwf_complex* spec = nullptr;
};

// Transforms of at least this many points run on FFTW's threads, one per
// core: a 512² pair of transforms is about a millisecond on one core, as long
// as the rest of a deconvolution iteration on all of them.
constexpr size_t kThreadedFftPoints = size_t{1} << 16;

// Transforms of at least this many points are planned with FFTW_MEASURE
// when a wisdom file is set (proxc_fft_set_wisdom_file). Measured here, a
// pair of float transforms on 2 threads, ESTIMATE → MEASURE: 0.98–1.21 →
// 1.08–1.17 ms at 512² (no gain, so not measured), 4.0–6.2 → 3.0–4.8 ms at
// 1024², 38–55 → 21–31 ms at 2048² (docs/performance-history.md).
constexpr size_t kMeasuredFftPoints = size_t{1} << 20;

std::mutex& planner_mutex() {  // FFTW's planner and wisdom are not thread-safe
  static std::mutex m;
  return m;
}
std::string& wisdom_file() {
  static std::string path;
  return path;
}

// Whether the file's wisdom is loaded (once per process; a missing or
// unreadable file is no wisdom).
void import_wisdom(const std::string& path) {
  static std::string loaded;
  if (loaded == path) return;
  loaded = path;
  fftwf_import_wisdom_from_filename(path.c_str());
}

// The process's wisdom into the file: written to a temporary file made
// exclusively beside it (never through a link planted at its name) and
// renamed over it, so that a reader sees the old file or the new one.
// Wisdom is a cache: a failure to write it is not an error. The backend sets
// a wisdom file only in a cache folder that is this user's alone.
void export_wisdom(const std::string& path) {
  char* text = fftwf_export_wisdom_to_string();
  if (!text) return;
  const std::string wisdom(text);
  fftwf_free(text);
  static std::atomic<unsigned> serial{0};
  const std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(serial++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // (support/file_util.h's write_all, which this runtime of AOT programs cannot link.)
  size_t done = 0;
  while (done < wisdom.size()) {
    const ssize_t n = ::write(fd, wisdom.data() + done, wisdom.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = ::close(fd) == 0 && done == wisdom.size();
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

// Plans per spatial size, made once.
Plans& plans_for(const std::vector<int>& dims) {
  static std::map<std::vector<int>, Plans> cache;
  static const bool threads = fftwf_init_threads() != 0;
  std::lock_guard<std::mutex> lock(planner_mutex());
  Plans& p = cache[dims];
  if (!p.forward) {
    size_t n = 1, half = 1;
    for (size_t i = 0; i < dims.size(); ++i) {
      n *= static_cast<size_t>(dims[i]);
      half *= i + 1 == dims.size() ? static_cast<size_t>(dims[i] / 2 + 1) : static_cast<size_t>(dims[i]);
    }
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (threads) fftwf_plan_with_nthreads(n >= kThreadedFftPoints ? cores : 1);
    p.real = fftwf_alloc_real(n);
    p.spec = fftwf_alloc_complex(half);
    const std::string wisdom = wisdom_file();
    const bool measure = !wisdom.empty() && n >= kMeasuredFftPoints;
    // (MEASURE plans on p.real and p.spec, which hold nothing yet.)
    if (measure) import_wisdom(wisdom);
    const unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    // Preserving its input (r2c's default, said here): it may transform a
    // buffer that other stages read.
    p.forward = fftwf_plan_dft_r2c(static_cast<int>(dims.size()), dims.data(), p.real, p.spec,
                                   flags | FFTW_PRESERVE_INPUT);
    p.inverse = fftwf_plan_dft_c2r(static_cast<int>(dims.size()), dims.data(), p.spec, p.real, flags);
    if (measure) export_wisdom(wisdom);
  }
  return p;
}

std::mutex& exec_mutex() {
  static std::mutex m;
  return m;
}

using Layout = proxc::internal::FftLayout;

// Answers Halide's bounds query: `in` is needed over out's region, the
// spectrum whole (its dimensions from `spectral_first` on are the spatial
// ones, the innermost halved by r2c).
void answer_bounds_query(halide_buffer_t* in, halide_buffer_t* spectrum, int spectral_first, int spatial_rank,
                         const halide_buffer_t* out) {
  if (in->is_bounds_query()) {
    for (int i = 0; i < out->dimensions; ++i) in->dim[i] = out->dim[i];
  }
  if (spectrum->is_bounds_query()) {
    for (int i = 0; i < spectral_first; ++i) {
      spectrum->dim[i].min = 0;
      spectrum->dim[i].extent = 2;  // (re, im)
    }
    const int first = out->dimensions - spatial_rank;
    for (int i = 0; i < spatial_rank; ++i) {
      int extent = out->dim[first + i].extent;
      spectrum->dim[spectral_first + i].min = 0;
      spectrum->dim[spectral_first + i].extent = i == 0 ? extent / 2 + 1 : extent;
    }
  }
}

// For each channel of `in`: r2c FFT, `filter` on the half spectrum (given
// 1/n, the inverse transform's scale, to fold in), c2r, into `out`. Element
// (channel ch, spatial flat index f) sits at ch + f·channels: the buffers are
// dense (Halide lays dimension 0 innermost), or copied to be so
// (extern_inputs.h: an AOT caller's padded output, which the stage may write
// itself). One channel transforms from `in` and into `out` directly when
// they are aligned as the plan's arrays (an r2c transform leaves its input
// as it was); others are copied.
template <typename Filter>
void filter_channels(const Layout& l, halide_buffer_t* in_buf, halide_buffer_t* out_buf, Filter filter) {
  std::vector<int64_t> shape;  // numpy order
  for (int i = out_buf->dimensions; i-- > 0;) shape.push_back(out_buf->dim[i].extent);
  std::vector<float> in_copy;
  // (FFTW takes the input as non-const; the plan preserves it.)
  float* in = const_cast<float*>(proxc::internal::dense_input(in_buf, shape, &in_copy));
  proxc::internal::DenseOutput out(out_buf, shape);
  float* o = out.data();
  Plans& p = plans_for(l.spatial);
  std::lock_guard<std::mutex> lock(exec_mutex());  // the plan's buffers are shared
  const float scale = 1.0f / static_cast<float>(l.n);
  const int aligned = fftwf_alignment_of(p.real);
  if (l.channels == 1 && fftwf_alignment_of(in) == aligned && fftwf_alignment_of(o) == aligned) {
    fftwf_execute_dft_r2c(p.forward, in, p.spec);
    for (int64_t k = 0; k < l.half; ++k) filter(k, scale, p.spec[k]);
    fftwf_execute_dft_c2r(p.inverse, p.spec, o);
  } else {
    for (int64_t ch = 0; ch < l.channels; ++ch) {
      for (int64_t f = 0; f < l.n; ++f) p.real[f] = in[ch + f * l.channels];
      fftwf_execute(p.forward);
      for (int64_t k = 0; k < l.half; ++k) filter(k, scale, p.spec[k]);
      fftwf_execute(p.inverse);
      for (int64_t f = 0; f < l.n; ++f) o[ch + f * l.channels] = p.real[f];
    }
  }
  out.finish();
}

}  // namespace

void proxc::internal::host_fft(const std::vector<int>& spatial, int64_t channels, bool forward, const float* in,
                               float* out) {
  Plans& p = plans_for(spatial);
  std::lock_guard<std::mutex> lock(exec_mutex());  // the plan's buffers are shared
  int64_t n = 1;
  for (int e : spatial) n *= e;
  const int64_t half = n / spatial.back() * (spatial.back() / 2 + 1);
  for (int64_t ch = 0; ch < channels; ++ch) {
    if (forward) {
      for (int64_t f = 0; f < n; ++f) p.real[f] = in[ch + f * channels];
      fftwf_execute(p.forward);
      for (int64_t k = 0; k < half; ++k) {
        out[2 * (ch + k * channels)] = p.spec[k][0];
        out[2 * (ch + k * channels) + 1] = p.spec[k][1];
      }
    } else {
      for (int64_t k = 0; k < half; ++k) {
        p.spec[k][0] = in[2 * (ch + k * channels)];
        p.spec[k][1] = in[2 * (ch + k * channels) + 1];
      }
      fftwf_execute(p.inverse);
      for (int64_t f = 0; f < n; ++f) out[ch + f * channels] = p.real[f];
    }
  }
}

extern "C" void proxc_fft_set_wisdom_file(const char* path) {
  std::lock_guard<std::mutex> lock(planner_mutex());
  wisdom_file() = path ? path : "";
}

extern "C" int proxc_circulant_solve(halide_buffer_t* rhs, halide_buffer_t* otf2, double a_in, double c_in,
                                     int spatial_rank, halide_buffer_t* out) {
  if (rhs->is_bounds_query() || otf2->is_bounds_query()) {
    answer_bounds_query(rhs, otf2, 0, spatial_rank, out);
    return 0;
  }
  if (int rc = proxc::internal::inputs_on_host({rhs, otf2}); rc != 0) return rc;
  const float a = static_cast<float>(a_in);
  const float c = static_cast<float>(c_in);
  const float* s = reinterpret_cast<const float*>(otf2->host);
  filter_channels(Layout(out, spatial_rank), rhs, out, [&](int64_t k, float scale, fftwf_complex& z) {
    const float r = scale / (a * s[k] + c);
    z[0] *= r;
    z[1] *= r;
  });
  return 0;
}

extern "C" int proxc_fft_conv(halide_buffer_t* x, halide_buffer_t* otf, int spatial_rank, int adjoint,
                              halide_buffer_t* out) {
  if (x->is_bounds_query() || otf->is_bounds_query()) {
    answer_bounds_query(x, otf, 1, spatial_rank, out);
    return 0;
  }
  if (int rc = proxc::internal::inputs_on_host({x, otf}); rc != 0) return rc;
  const float* t = reinterpret_cast<const float*>(otf->host);
  const float sign = adjoint ? -1.0f : 1.0f;
  filter_channels(Layout(out, spatial_rank), x, out, [&](int64_t k, float scale, fftwf_complex& z) {
    const float re = z[0], im = z[1];
    const float tr = scale * t[2 * k], ti = scale * sign * t[2 * k + 1];
    z[0] = re * tr - im * ti;
    z[1] = re * ti + im * tr;
  });
  return 0;
}
