/// \file
/// The extern stages of user code in Halide pipelines: black-box operators
/// (include/proxc/black_box.h) and prox functions (include/proxc/prox_fn.h).
/// Each reads its whole operand, calls the registered callback, writes the
/// part of the output asked for.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>

extern "C" {
/// `id`: proxc_black_box_id of the operator's name; `adjoint`: 0 or 1; the
/// ranks and extents (numpy order, unused ones 1) of `in` and `out` as
/// arrays. Returns 0, or -1 with proxc_black_box_failure() set.
int proxc_black_box_stage(halide_buffer_t* in, uint64_t id, int adjoint, int in_rank, int i0, int i1, int i2, int i3, int i4,
                    int i5, int out_rank, int o0, int o1, int o2, int o3, int o4, int o5, halide_buffer_t* out);

/// out = prox_{f/rho}(in) of the prox function whose id (proxc_prox_fn_id)
/// is `id`, with parameters p0..p7 (those it declares), over an array of
/// `rank` extents e0..e5 (numpy order, unused ones 1); rho is a 0-d double
/// buffer (+inf copies).
/// Returns 0, or -1 with proxc_black_box_failure() set.
int proxc_prox_fn_stage(halide_buffer_t* in, halide_buffer_t* rho, uint64_t id, double p0, double p1, double p2, double p3,
                        double p4, double p5, double p6, double p7, int rank, int e0, int e1, int e2, int e3, int e4,
                        int e5, halide_buffer_t* out);
/// out[0] = f(in) (double; 0 for a function without a value callback).
int proxc_prox_fn_value_stage(halide_buffer_t* in, uint64_t id, double p0, double p1, double p2, double p3, double p4,
                              double p5, double p6, double p7, int rank, int e0, int e1, int e2, int e3, int e4, int e5,
                              halide_buffer_t* out);
}
