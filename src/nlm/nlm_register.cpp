// patch_NLM's registration, its checks and the loading of its prox from the
// module libproxc_nlm.so (nlm.cpp), which is found beside the library or
// program this code is part of (libproxc.so, or proxc's own build folder).
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <mutex>
#include <string>

#include "nlm/nlm.h"

namespace {

using namespace proxc::nlm;

const char* const kNames[kParams] = {"sigma_fixed",         "sigma_scale", "templateWindowSizeNLM",
                                     "searchWindowSizeNLM", "gamma_trans", "prior"};
// ProxImaL's defaults.
const double kDefaults[kParams] = {0.6, 6.0, 3, 11, 1.0, 1};

// The module's prox, or null with *why set.
proxc_prox_fn_apply load_module(std::string* why) {
  static std::once_flag once;
  static proxc_prox_fn_apply fn = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    std::string tried;
    auto attempt = [&](const std::string& path) {
      if (fn || path.empty()) return;
      void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        tried += "\n  " + std::string(::dlerror());
        return;
      }
      fn = reinterpret_cast<proxc_prox_fn_apply>(::dlsym(h, "proxc_nlm_prox"));
      if (!fn) tried += "\n  " + path + ": no proxc_nlm_prox";
    };
    Dl_info info;
    if (::dladdr(reinterpret_cast<void*>(&load_module), &info) && info.dli_fname) {
      std::string self = info.dli_fname;
      attempt(self.substr(0, self.find_last_of('/') + 1) + "libproxc_nlm.so");
    }
#ifdef PROXC_NLM_BUILD_MODULE
    attempt(PROXC_NLM_BUILD_MODULE);  // programs of proxc's own build tree (tests, tools)
#endif
    if (!fn) failure = "patch_NLM needs its module libproxc_nlm.so (OpenCV), which did not load:" + tried;
  });
  *why = failure;
  return fn;
}

int check(void*, const int64_t* shape, int rank, const double* p, char* message, size_t size) {
  if (!(rank == 2 || (rank == 3 && (shape[2] == 1 || shape[2] == 3)))) {
    std::snprintf(message, size, "patch_NLM needs an image of 1 or 3 channels, shape (H, W) or (H, W, 1|3)");
    return 1;
  }
  if (shape[0] > 32767 || shape[1] > 32767) {
    std::snprintf(message, size, "patch_NLM: an image of at most 32767 pixels a side (OpenCV's limit)");
    return 1;
  }
  for (int k : {kTemplateWindow, kSearchWindow}) {
    const double w = p[k];
    if (!(w >= 1 && w <= 99 && w == std::floor(w) && static_cast<int>(w) % 2 == 1)) {
      std::snprintf(message, size, "%s must be an odd whole number from 1 to 99, got %g", kNames[k], w);
      return 1;
    }
  }
  if (!(p[kGammaTrans] > 0)) {
    std::snprintf(message, size, "gamma_trans must be > 0, got %g", p[kGammaTrans]);
    return 1;
  }
  if (!(p[kSigmaScale] > 0)) {
    std::snprintf(message, size, "sigma_scale must be > 0, got %g", p[kSigmaScale]);
    return 1;
  }
  // Where the problem is built, not in the middle of a solve: the module loads.
  std::string why;
  if (!load_module(&why)) {
    std::snprintf(message, size, "%s", why.c_str());
    return 1;
  }
  return 0;
}

int prox(void* user, const float* v, const int64_t* shape, int rank, double rho, const double* p, float* out) {
  std::string why;
  proxc_prox_fn_apply fn = load_module(&why);
  return fn ? fn(user, v, shape, rank, rho, p, out) : 100;
}

}  // namespace

extern "C" int proxc_nlm_register(proxc_register_prox_fn_fn register_fn) {
  const proxc_prox_fn fn = {"patch_NLM", prox, nullptr, check, kParams, kNames, kDefaults, nullptr};
  return register_fn(&fn);
}
