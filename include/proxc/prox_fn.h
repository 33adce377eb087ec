/* \file
 * Prox functions of your own: a nonlinear proximal operator written as plain
 * code (a non-local-means or BM3D denoiser, a learned denoiser, a projection
 * proxc has no closed form for), used in a problem like any function:
 *
 *     minimize sum_squares(conv(k, x) - b) + patch_NLM(x, sigma_fixed=0)
 *
 * A prox function is registered by name with a callback computing
 *
 *     out = prox_{f/rho}(v) = argmin_x f(x) + (rho/2)·||x − v||²
 *
 * over a dense float32 array in numpy (C) order, and optionally its value
 * f(x). Its scalar parameters are declared with their defaults and written
 * by keyword in a problem (`patch_NLM(x, sigma_scale=4)`); the function's
 * usual parameters alpha, beta, b, c, gamma and d apply on top of it
 * (alpha·f(beta·x − b) + <c, x> + gamma·||x||² + d), proxc folding them into
 * the v and rho it passes. The term is called by the emulator and, in
 * compiled pipelines, as the extern stage proxc_prox_fn_stage
 * (libproxc_runtime) between fused Halide regions. Plug-and-play priors are
 * prox functions whose callback is a denoiser of noise level sqrt(1/rho).
 *
 * This header is C, so that a plugin or an ahead-of-time program needs no
 * proxc C++ library: a plugin is a shared library exporting
 *
 *     int proxc_plugin_init_prox(proxc_register_prox_fn_fn register_fn);
 *
 * (beside or instead of proxc_plugin_init of black_box.h), which calls
 * register_fn once per function and returns 0 (`proxc ... --plugin lib.so`
 * loads it). A program linking proxc directly calls proxc_register_prox_fn.
 */
#ifndef PROXC_PROX_FN_H
#define PROXC_PROX_FN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The largest rank of a prox function's operand. */
#define PROXC_PROX_FN_MAX_RANK 6
/** The most scalar parameters a prox function declares. */
#define PROXC_PROX_FN_MAX_PARAMS 8

/** out = prox_{f/rho}(v) = argmin_x f(x) + (rho/2)||x − v||². `v` and `out`
 * are dense, C order, of `shape` (numpy order), and do not alias; rho > 0 and
 * finite; `params` holds the declared parameters in their declared order.
 * Returns 0, or non-zero on failure (the solve stops with an error naming the
 * function, and quoting what the callback said with
 * proxc_black_box_set_failure of black_box.h, if it said something). */
typedef int (*proxc_prox_fn_apply)(void* user, const float* v, const int64_t* shape, int rank, double rho,
                                   const double* params, float* out);

/** *value = f(x) (before alpha, beta, b, c, gamma and d are applied).
 * Returns 0, or non-zero on failure. */
typedef int (*proxc_prox_fn_value)(void* user, const float* x, const int64_t* shape, int rank, const double* params,
                                   double* value);

/** Whether the function accepts an operand of this shape with these
 * parameters: returns 0, or non-zero after writing a message of at most
 * message_size bytes (NUL included) that says why not. Called when a problem
 * is built, so that a bad shape or parameter is an error there (exit 2), not
 * in the middle of a solve. */
typedef int (*proxc_prox_fn_check)(void* user, const int64_t* shape, int rank, const double* params, char* message,
                                   size_t message_size);

typedef struct proxc_prox_fn {
  /** An identifier: letters, digits and '_', not starting with a digit, not
   * the name of a built-in function or operator. */
  const char* name;
  proxc_prox_fn_apply prox;
  /** NULL when f has no value to report (a denoiser): the solve's objective
   * then leaves the term out, and says so. */
  proxc_prox_fn_value value;
  /** NULL: every shape and parameter value is accepted. */
  proxc_prox_fn_check check;
  /** The declared parameters: num_params (at most PROXC_PROX_FN_MAX_PARAMS)
   * identifiers, other than alpha, beta, b, c, gamma and d, and their
   * defaults (finite). */
  int num_params;
  const char* const* param_names;
  const double* param_defaults;
  /** Passed to every callback. */
  void* user;
} proxc_prox_fn;

/** Registers a prox function (the descriptor, its name and its parameter
 * names and defaults are copied). Returns 0; 1 for a bad name, 2 for a missing
 * prox callback, 3 when another function already holds the name or its 64-bit
 * id, 4 for bad parameters (too many, a bad or repeated name, a reserved one,
 * a default that is not finite). Registering the same descriptor twice is
 * allowed. Thread-safe. */
int proxc_register_prox_fn(const proxc_prox_fn* fn);

typedef int (*proxc_register_prox_fn_fn)(const proxc_prox_fn* fn);

/** The function registered under `name`, or NULL. */
const proxc_prox_fn* proxc_find_prox_fn(const char* name);

/** The function whose id (proxc_prox_fn_id of its name) is `id`, or NULL. */
const proxc_prox_fn* proxc_find_prox_fn_by_id(uint64_t id);

/** The 64-bit id of a name (FNV-1a, with a seed other than the black boxes'):
 * what compiled pipelines carry to find the function at run time. */
static inline uint64_t proxc_prox_fn_id(const char* name) {
  uint64_t h = 14695981039346656037ull ^ 0x70726f78u; /* "prox" */
  for (const unsigned char* p = (const unsigned char*)name; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return h;
}

#ifdef __cplusplus
}
#endif

#endif /* PROXC_PROX_FN_H */
