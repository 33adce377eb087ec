/// \file
/// What proxc's extern stages share: their inputs on the host, and their
/// buffers as dense arrays (a copy where Halide's strides or region differ).
#pragma once

#include <HalideRuntime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

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

/// The number of elements of an array of `shape`.
inline int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

/// Copies between a dense C-order float array of `shape` (numpy order) and a
/// Halide buffer (dimension 0 innermost = numpy's last axis) over the part of
/// the array that the buffer's region covers, element by element through its
/// strides. `to_buffer` picks the direction.
inline void transfer(float* dense, const std::vector<int64_t>& shape, halide_buffer_t* b, bool to_buffer) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> lo(rank), hi(rank), idx(rank), stride(rank, 1);
  for (int a = rank - 2; a >= 0; --a) stride[a] = stride[a + 1] * shape[a + 1];
  for (int a = 0; a < rank; ++a) {
    const halide_dimension_t& d = b->dim[rank - 1 - a];
    lo[a] = std::max<int64_t>(0, d.min);
    hi[a] = std::min<int64_t>(shape[a], static_cast<int64_t>(d.min) + d.extent);
    if (lo[a] >= hi[a]) return;
    idx[a] = lo[a];
  }
  float* host = reinterpret_cast<float*>(b->host);
  while (true) {
    int64_t f = 0, off = 0;
    for (int a = 0; a < rank; ++a) {
      f += idx[a] * stride[a];
      const halide_dimension_t& d = b->dim[rank - 1 - a];
      off += (idx[a] - d.min) * static_cast<int64_t>(d.stride);
    }
    if (to_buffer)
      host[off] = dense[f];
    else
      dense[f] = host[off];
    int a = rank - 1;
    while (a >= 0 && ++idx[a] == hi[a]) {
      idx[a] = lo[a];
      --a;
    }
    if (a < 0) return;
  }
}

/// Whether the buffer holds exactly the whole array of `shape`, densely in C order.
inline bool whole_and_dense(const halide_buffer_t* b, const std::vector<int64_t>& shape) {
  int64_t stride = 1;
  const int rank = static_cast<int>(shape.size());
  for (int i = 0; i < rank; ++i) {
    const halide_dimension_t& d = b->dim[i];
    if (d.min != 0 || d.extent != shape[rank - 1 - i] || d.stride != stride) return false;
    stride *= d.extent;
  }
  return true;
}

/// A stage's input as a dense array of `shape`: the buffer's own memory when
/// it is that already, else a copy into *copy (zero where the buffer's region
/// does not reach).
inline const float* dense_input(halide_buffer_t* in, const std::vector<int64_t>& shape,
                                std::vector<float>* copy) {
  if (whole_and_dense(in, shape)) return reinterpret_cast<const float*>(in->host);
  copy->assign(static_cast<size_t>(element_count(shape)), 0.0f);
  transfer(copy->data(), shape, in, false);
  return copy->data();
}

/// A stage's output as a dense array of `shape`: the buffer's own memory
/// when it is that already, else a zeroed copy that finish() writes into the
/// part of the array the buffer holds (an output of other strides: a padded
/// view an AOT caller passes, since a stage may write a step's output itself,
/// Graph::output).
class DenseOutput {
 public:
  DenseOutput(halide_buffer_t* out, std::vector<int64_t> shape)
      : out_(out), shape_(std::move(shape)), direct_(whole_and_dense(out, shape_)) {
    if (!direct_) copy_.assign(static_cast<size_t>(element_count(shape_)), 0.0f);
  }
  float* data() { return direct_ ? reinterpret_cast<float*>(out_->host) : copy_.data(); }
  void finish() {
    if (!direct_) transfer(copy_.data(), shape_, out_, true);
  }

 private:
  halide_buffer_t* out_;
  std::vector<int64_t> shape_;
  bool direct_;
  std::vector<float> copy_;
};

}  // namespace proxc::internal
