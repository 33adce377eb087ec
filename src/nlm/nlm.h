/// \file
/// patch_NLM, ProxImaL's non-local-means prior (OpenCV's
/// fastNlMeansDenoising), as a prox function (include/proxc/prox_fn.h).
/// proxc registers it itself (register_builtin_prox_fns); its prox runs in
/// the module libproxc_nlm.so, loaded on first use, the only code that links
/// OpenCV. A program that runs an ahead-of-time compiled pipeline calling it
/// registers it with proxc_nlm_register(proxc_register_prox_fn) (libproxc).
#pragma once

#include "proxc/prox_fn.h"

namespace proxc::nlm {
/// Its parameters, in ProxImaL's order, with ProxImaL's names and defaults.
enum Param { kSigmaFixed, kSigmaScale, kTemplateWindow, kSearchWindow, kGammaTrans, kPrior, kParams };
}  // namespace proxc::nlm

extern "C" {
/// Registers patch_NLM through `register_fn`; returns what it returns.
int proxc_nlm_register(proxc_register_prox_fn_fn register_fn);
/// The prox (libproxc_nlm.so).
int proxc_nlm_prox(void* user, const float* v, const int64_t* shape, int rank, double rho, const double* params,
                   float* out);
}
