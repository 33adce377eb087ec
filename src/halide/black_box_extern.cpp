#include "halide/black_box_extern.h"
#include "halide/extern_inputs.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "proxc/black_box.h"
#include "proxc/prox_fn.h"

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

namespace {

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

// A stage's operand as a dense array: the buffer's own memory when it is
// that already, else a copy into *copy. A bounds query is answered with the
// whole array (the user's code reads all of it, whatever part of the output
// is asked for), and null is returned.
const float* whole_operand(halide_buffer_t* in, const std::vector<int64_t>& shape, std::vector<float>* copy) {
  const int rank = static_cast<int>(shape.size());
  if (in->is_bounds_query()) {
    for (int i = 0; i < rank; ++i) {
      in->dim[i].min = 0;
      in->dim[i].extent = static_cast<int32_t>(shape[static_cast<size_t>(rank - 1 - i)]);
    }
    return nullptr;
  }
  if (whole_and_dense(in, shape)) return reinterpret_cast<const float*>(in->host);
  copy->assign(static_cast<size_t>(count(shape)), 0.0f);
  transfer(copy->data(), shape, in, false);
  return copy->data();
}

// A stage's output as a dense array of `shape`: the buffer's own memory
// when it is that already, else a zeroed copy that finish() writes into the
// part of the array the buffer holds.
class DenseOutput {
 public:
  DenseOutput(halide_buffer_t* out, std::vector<int64_t> shape)
      : out_(out), shape_(std::move(shape)), direct_(whole_and_dense(out, shape_)) {
    if (!direct_) copy_.assign(static_cast<size_t>(count(shape_)), 0.0f);
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

}  // namespace

extern "C" int proxc_black_box_stage(halide_buffer_t* in, uint64_t id, int adjoint, int in_rank, int i0, int i1, int i2,
                               int i3, int i4, int i5, int out_rank, int o0, int o1, int o2, int o3, int o4, int o5,
                               halide_buffer_t* out) {
  const int ie[6] = {i0, i1, i2, i3, i4, i5}, oe[6] = {o0, o1, o2, o3, o4, o5};
  const std::vector<int64_t> in_shape(ie, ie + in_rank), out_shape(oe, oe + out_rank);
  if (int rc = proxc::internal::inputs_on_host({in}); rc != 0) return rc;
  std::vector<float> x;
  const float* src = whole_operand(in, in_shape, &x);
  if (!src) return 0;  // a bounds query
  const proxc_black_box* op = proxc_find_black_box_by_id(id);
  if (!op) return fail("black_box: no operator with id " + std::to_string(id) + " is registered in this program");
  const char* role = adjoint ? "adjoint" : "forward";
  DenseOutput dst(out, out_shape);
  const proxc_black_box_apply_fn f = adjoint ? op->adjoint : op->forward;
  int rc = 0;
  proxc_black_box_clear_failure();
  try {
    rc = f(op->user, src, in_shape.data(), in_rank, dst.data(), out_shape.data(), out_rank);
  } catch (...) {
    return fail(std::string("black_box ") + op->name + ": the " + role + " callback threw an exception (input " +
                shape_text(in_shape) + ", output " + shape_text(out_shape) + ")");
  }
  if (rc != 0) {
    // What the callback said of its failure (proxc_black_box_set_failure), when it said something.
    const std::string said = proxc_black_box_failure();
    return fail(std::string("black_box ") + op->name + ": the " + role + " callback failed (returned " +
                std::to_string(rc) + "; input " + shape_text(in_shape) + ", output " + shape_text(out_shape) + ")" +
                (said.empty() ? "" : ": " + said));
  }
  dst.finish();
  return 0;
}


extern "C" int proxc_prox_fn_stage(halide_buffer_t* in, halide_buffer_t* rho_buffer, uint64_t id, double p0, double p1, double p2,
                                   double p3, double p4, double p5, double p6, double p7, int rank, int e0, int e1,
                                   int e2, int e3, int e4, int e5, halide_buffer_t* out) {
  if (int rc = proxc::internal::inputs_on_host({in, rho_buffer}); rc != 0) return rc;
  const int ext[6] = {e0, e1, e2, e3, e4, e5};
  const double params[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
  const std::vector<int64_t> shape(ext, ext + rank);
  std::vector<float> x;
  const float* src = whole_operand(in, shape, &x);
  if (!src || rho_buffer->is_bounds_query()) return 0;  // a bounds query
  const double rho = *reinterpret_cast<const double*>(rho_buffer->host);
  const proxc_prox_fn* fn = proxc_find_prox_fn_by_id(id);
  if (!fn) return fail("prox_fn: no prox function with id " + std::to_string(id) + " is registered in this program");
  DenseOutput dst(out, shape);
  if (!(rho < HUGE_VAL)) {  // alpha = 0: the term is the identity's prox
    std::copy(src, src + count(shape), dst.data());
  } else {
    int rc = 0;
    try {
      rc = fn->prox(fn->user, src, shape.data(), rank, rho, params, dst.data());
    } catch (...) {
      return fail(std::string(fn->name) + ": the prox callback threw an exception (operand " + shape_text(shape) +
                  ")");
    }
    if (rc != 0) {
      return fail(std::string(fn->name) + ": the prox callback failed (returned " + std::to_string(rc) +
                  "; operand " + shape_text(shape) + ", rho " + std::to_string(rho) + ")");
    }
  }
  dst.finish();
  return 0;
}

extern "C" int proxc_prox_fn_value_stage(halide_buffer_t* in, uint64_t id, double p0, double p1, double p2,
                                         double p3, double p4, double p5, double p6, double p7, int rank, int e0,
                                         int e1, int e2, int e3, int e4, int e5, halide_buffer_t* out) {
  if (int rc = proxc::internal::inputs_on_host({in}); rc != 0) return rc;
  const int ext[6] = {e0, e1, e2, e3, e4, e5};
  const double params[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
  const std::vector<int64_t> shape(ext, ext + rank);
  std::vector<float> x;
  const float* src = whole_operand(in, shape, &x);
  if (!src) return 0;  // a bounds query
  const proxc_prox_fn* fn = proxc_find_prox_fn_by_id(id);
  if (!fn) return fail("prox_fn: no prox function with id " + std::to_string(id) + " is registered in this program");
  double value = 0;
  if (fn->value) {
    int rc = 0;
    try {
      rc = fn->value(fn->user, src, shape.data(), rank, params, &value);
    } catch (...) {
      return fail(std::string(fn->name) + ": the value callback threw an exception (operand " + shape_text(shape) +
                  ")");
    }
    if (rc != 0) {
      return fail(std::string(fn->name) + ": the value callback failed (returned " + std::to_string(rc) +
                  "; operand " + shape_text(shape) + ")");
    }
  }
  // The output is one double at index 0 (the only element any consumer reads).
  if (out->dim[0].min <= 0 && out->dim[0].min + out->dim[0].extent > 0) {
    reinterpret_cast<double*>(out->host)[-out->dim[0].min] = value;
  }
  return 0;
}
