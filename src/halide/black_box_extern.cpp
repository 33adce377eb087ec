#include "halide/black_box_extern.h"

#include <algorithm>
#include <string>
#include <vector>

#include "proxc/black_box.h"

namespace {

// Copies between a dense C-order array of `shape` (numpy order) and a Halide
// buffer (dimension 0 innermost = numpy's last axis) over the part of the
// array that the buffer's region covers, element by element through its
// strides. `to_buffer` picks the direction.
void transfer(float* dense, const std::vector<int64_t>& shape, halide_buffer_t* b, bool to_buffer) {
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
    if (to_buffer) host[off] = dense[f];
    else dense[f] = host[off];
    int a = rank - 1;
    while (a >= 0 && ++idx[a] == hi[a]) {
      idx[a] = lo[a];
      --a;
    }
    if (a < 0) return;
  }
}

// The buffer holds exactly the whole array, densely in C order.
bool whole_and_dense(const halide_buffer_t* b, const std::vector<int64_t>& shape) {
  int64_t stride = 1;
  const int rank = static_cast<int>(shape.size());
  for (int i = 0; i < rank; ++i) {
    const halide_dimension_t& d = b->dim[i];
    if (d.min != 0 || d.extent != shape[rank - 1 - i] || d.stride != stride) return false;
    stride *= d.extent;
  }
  return true;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

int fail(const std::string& message) {
  proxc_black_box_set_failure(message.c_str());
  return -1;
}

}  // namespace

extern "C" int proxc_black_box_stage(halide_buffer_t* in, uint64_t id, int adjoint, int in_rank, int i0, int i1, int i2,
                               int i3, int i4, int i5, int out_rank, int o0, int o1, int o2, int o3, int o4, int o5,
                               halide_buffer_t* out) {
  const int ie[6] = {i0, i1, i2, i3, i4, i5}, oe[6] = {o0, o1, o2, o3, o4, o5};
  const std::vector<int64_t> in_shape(ie, ie + in_rank), out_shape(oe, oe + out_rank);
  if (in->is_bounds_query()) {
    // The operator reads its whole operand, whatever part of its output is asked for.
    for (int i = 0; i < in_rank; ++i) {
      in->dim[i].min = 0;
      in->dim[i].extent = ie[in_rank - 1 - i];
    }
    return 0;
  }
  const proxc_black_box* op = proxc_find_black_box_by_id(id);
  if (!op) return fail("black_box: no operator with id " + std::to_string(id) + " is registered in this program");
  const char* role = adjoint ? "adjoint" : "forward";
  int64_t n_in = 1, n_out = 1;
  for (int64_t e : in_shape) n_in *= e;
  for (int64_t e : out_shape) n_out *= e;
  std::vector<float> x;
  const float* src = reinterpret_cast<const float*>(in->host);
  if (!whole_and_dense(in, in_shape)) {
    x.resize(static_cast<size_t>(n_in));
    transfer(x.data(), in_shape, in, false);
    src = x.data();
  }
  std::vector<float> y;
  float* dst = reinterpret_cast<float*>(out->host);
  const bool direct = whole_and_dense(out, out_shape);
  if (!direct) {
    y.assign(static_cast<size_t>(n_out), 0.0f);
    dst = y.data();
  }
  const proxc_black_box_apply_fn f = adjoint ? op->adjoint : op->forward;
  int rc = 0;
  try {
    rc = f(op->user, src, in_shape.data(), in_rank, dst, out_shape.data(), out_rank);
  } catch (...) {
    return fail(std::string("black_box ") + op->name + ": the " + role + " callback threw an exception (input " +
                shape_text(in_shape) + ", output " + shape_text(out_shape) + ")");
  }
  if (rc != 0) {
    return fail(std::string("black_box ") + op->name + ": the " + role + " callback failed (returned " +
                std::to_string(rc) + "; input " + shape_text(in_shape) + ", output " + shape_text(out_shape) + ")");
  }
  if (!direct) transfer(y.data(), out_shape, out, true);
  return 0;
}
