/// \file
/// The extern stage of user black-box operators (include/proxc/black_box.h)
/// in Halide pipelines: reads its whole operand, calls the registered
/// forward or adjoint callback, writes the part of the output asked for.
#pragma once

#include <HalideRuntime.h>

#include <cstdint>

extern "C" {
/// `id`: proxc_black_box_id of the operator's name; `adjoint`: 0 or 1; the
/// ranks and extents (numpy order, unused ones 1) of `in` and `out` as
/// arrays. Returns 0, or -1 with proxc_black_box_failure() set.
int proxc_black_box_stage(halide_buffer_t* in, uint64_t id, int adjoint, int in_rank, int i0, int i1, int i2, int i3, int i4,
                    int i5, int out_rank, int o0, int o1, int o2, int o3, int o4, int o5, halide_buffer_t* out);
}
