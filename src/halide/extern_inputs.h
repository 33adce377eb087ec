/// \file
/// What every extern stage of proxc does first: its inputs on the host.
#pragma once

#include <HalideRuntime.h>

#include <initializer_list>

namespace proxc::internal {

/// Copies back each input a GPU pipeline left on the device (device_dirty):
/// Halide hands an extern stage its input buffers as they are, and proxc's
/// stages read the host's memory. 0, or the runtime's error code. Bounds
/// queries and host-only buffers are left as they are.
inline int inputs_on_host(std::initializer_list<halide_buffer_t*> inputs) {
  for (halide_buffer_t* b : inputs) {
    if (b && !b->is_bounds_query() && b->device_dirty() && b->device_interface) {
      if (int rc = b->device_interface->copy_to_host(nullptr, b); rc != 0) return rc;
    }
  }
  return 0;
}

}  // namespace proxc::internal
