/* \file
 * User black-box linear operators: a linear map written as plain code (a
 * vendor's optics model, a forward model from another library) that proxc
 * cannot see into, used in a problem like any operator:
 *
 *     minimize sum_squares(black_box("my_blur", x) - b) + 0.01 * norm1(grad(x))
 *
 * A black box is registered by name with two callbacks, its forward map
 * K x and its adjoint Kᵀ y, over dense float32 arrays in numpy (C) order.
 * proxc calls them from the emulator, and from compiled pipelines through the
 * extern stage proxc_black_box_stage (libproxc_runtime), between fused Halide
 * regions. The adjoint must be the true adjoint: `proxc check` runs the dot
 * test on it.
 *
 * This header is C, so that a plugin or an ahead-of-time program needs no
 * proxc C++ library: a plugin is a shared library exporting
 *
 *     int proxc_plugin_init(proxc_register_black_box_fn register_op);
 *
 * which calls register_op once per operator and returns 0 (`proxc ...
 * --plugin lib.so` loads it). A program linking proxc directly calls
 * proxc_register_black_box itself.
 */
#ifndef PROXC_BLACK_BOX_H
#define PROXC_BLACK_BOX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The largest rank of a black box's input or output. */
#define PROXC_BLACK_BOX_MAX_RANK 6

/** out = K in (forward) or out = Kᵀ in (adjoint). Shapes are numpy order;
 * `in` and `out` are dense, C order, and do not alias. Returns 0, or non-zero
 * on failure (the solve stops with an error naming the operator). */
typedef int (*proxc_black_box_apply_fn)(void* user, const float* in, const int64_t* in_shape, int in_rank, float* out,
                                        const int64_t* out_shape, int out_rank);

/** The output shape for an input shape: writes at most
 * PROXC_BLACK_BOX_MAX_RANK extents to out_shape and the rank to *out_rank;
 * returns 0, or non-zero when the input shape is not one the operator
 * accepts. */
typedef int (*proxc_black_box_shape_fn)(void* user, const int64_t* in_shape, int in_rank, int64_t* out_shape,
                                        int* out_rank);

typedef struct proxc_black_box {
  /** An identifier: letters, digits and '_', not starting with a digit. */
  const char* name;
  proxc_black_box_apply_fn forward;
  proxc_black_box_apply_fn adjoint;
  /** NULL: the output has the input's shape. */
  proxc_black_box_shape_fn output_shape;
  /** An upper bound on the operator norm ||K||, or 0 when unknown (proxc
   * then estimates it by Lanczos iteration where a solver needs it). */
  double norm_bound;
  /** Passed to every callback. */
  void* user;
} proxc_black_box;

/** Registers an operator (the descriptor is copied, the name too). Returns 0;
 * 1 for a bad name, 2 for a missing forward or adjoint callback, 3 when
 * another operator already holds the name or its 64-bit id. Registering the
 * same descriptor twice is allowed. Thread-safe. */
int proxc_register_black_box(const proxc_black_box* op);

typedef int (*proxc_register_black_box_fn)(const proxc_black_box* op);

/** The operator registered under `name`, or NULL. */
const proxc_black_box* proxc_find_black_box(const char* name);

/** The operator whose id (proxc_black_box_id of its name) is `id`, or NULL. */
const proxc_black_box* proxc_find_black_box_by_id(uint64_t id);

/** What the last failed black-box call of this thread reported (which
 * operator, which callback, its return value), or "" when none failed since
 * the last proxc_black_box_clear_failure(). */
const char* proxc_black_box_failure(void);
void proxc_black_box_set_failure(const char* message);
void proxc_black_box_clear_failure(void);

/** The 64-bit id of a name (FNV-1a): what compiled pipelines carry to find
 * the operator at run time. */
static inline uint64_t proxc_black_box_id(const char* name) {
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char* p = (const unsigned char*)name; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return h;
}

#ifdef __cplusplus
}
#endif

#endif /* PROXC_BLACK_BOX_H */
