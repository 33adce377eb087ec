// patch_NLM: ProxImaL's non-local-means prior as a prox function of the
// user's kind (include/proxc/prox_fn.h), built on the same C interface a
// plugin uses, with OpenCV's fastNlMeansDenoising as its engine.
//
// The meaning is ProxImaL's (proximal/prox_fns/patch_NLM.py): the prox of
// a plug-and-play prior is a denoiser. For prox_{f/rho}(v):
//   sigma = sqrt(1/rho), or sigma_fixed / 30 · sigma_scale when sigma_fixed > 0;
//   v is mapped to [0, 1] by its minimum and maximum (the range at least
//   0.01), raised to gamma_trans, quantised to 8 bits, denoised with filter
//   strength h = 255·sigma (colour images with prior = 1: luma 1.3·sigma and
//   colour 3·sigma, fastNlMeansDenoisingColored) and the template and search
//   windows given, and mapped back. An image of one channel (H, W) or
//   (H, W, 1) is always denoised as grey (ProxImaL sets prior to 0 there).
// Like ProxImaL's, it has no value: the objective leaves it out.
//
// This file is the module libproxc_nlm.so, the only code that links OpenCV
// (with its LAPACK, BLAS and TBB): proxc loads it on the first patch_NLM
// term (nlm_register.cpp), so that a program that never uses the prior
// neither pays OpenCV's start-up nor maps its libraries.
#include "nlm/nlm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/photo.hpp>

namespace {

int64_t channels_of(const int64_t* shape, int rank) { return rank == 3 ? shape[2] : 1; }

}  // namespace

extern "C" int proxc_nlm_prox(void*, const float* v, const int64_t* shape, int rank, double rho, const double* p,
                              float* out) {
  using namespace proxc::nlm;
  const int h = static_cast<int>(shape[0]), w = static_cast<int>(shape[1]);
  const int ch = static_cast<int>(channels_of(shape, rank));
  const size_t n = static_cast<size_t>(h) * static_cast<size_t>(w) * static_cast<size_t>(ch);
  double sigma = std::sqrt(1.0 / rho);
  if (p[kSigmaFixed] > 0) sigma = p[kSigmaFixed] / 30.0 * p[kSigmaScale];
  double lo = v[0], hi = v[0];
  for (size_t i = 0; i < n; ++i) {
    lo = std::min<double>(lo, v[i]);
    hi = std::max<double>(hi, v[i]);
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) return 1;  // a diverging solve: say so, do not denoise NaNs
  hi = std::max(hi, lo + 0.01);
  const double g = p[kGammaTrans];
  cv::Mat in(h, w, CV_8UC(ch)), res;
  unsigned char* q = in.ptr<unsigned char>();
  for (size_t i = 0; i < n; ++i) {
    double t = (v[i] - lo) / (hi - lo);
    if (g != 1.0) t = std::pow(t, g);
    q[i] = static_cast<unsigned char>(std::clamp(t * 255.0, 0.0, 255.0));  // numpy's uint8 cast truncates
  }
  const int tw = static_cast<int>(p[kTemplateWindow]), sw = static_cast<int>(p[kSearchWindow]);
  if (ch == 3 && p[kPrior] > 0.5) {
    cv::fastNlMeansDenoisingColored(in, res, static_cast<float>(1.3 * sigma * 255.0),
                                    static_cast<float>(3.0 * sigma * 255.0), tw, sw);
  } else {
    cv::fastNlMeansDenoising(in, res, static_cast<float>(sigma * 255.0), tw, sw);
  }
  const unsigned char* r = res.ptr<unsigned char>();
  for (size_t i = 0; i < n; ++i) {
    double t = r[i] / 255.0;
    if (g != 1.0) t = std::pow(t, 1.0 / g);
    out[i] = static_cast<float>(t * (hi - lo) + lo);
  }
  return 0;
}
