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

using proxc::internal::dense_input;
using proxc::internal::DenseOutput;
using proxc::internal::element_count;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

int fail(const std::string& message) {
  proxc_black_box_set_failure(message.c_str());
  return -1;
}

// ": <what a failed prox-function callback said of its failure>", or "".
std::string said_by_callback() {
  const std::string said = proxc_black_box_failure();
  return said.empty() ? "" : ": " + said;
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
  return dense_input(in, shape, copy);
}

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
    std::copy(src, src + element_count(shape), dst.data());
  } else {
    int rc = 0;
    proxc_black_box_clear_failure();
    try {
      rc = fn->prox(fn->user, src, shape.data(), rank, rho, params, dst.data());
    } catch (...) {
      return fail(std::string(fn->name) + ": the prox callback threw an exception (operand " + shape_text(shape) +
                  ")");
    }
    if (rc != 0) {
      return fail(std::string(fn->name) + ": the prox callback failed (returned " + std::to_string(rc) +
                  "; operand " + shape_text(shape) + ", rho " + std::to_string(rho) + ")" +
                  said_by_callback());
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
    proxc_black_box_clear_failure();
    try {
      rc = fn->value(fn->user, src, shape.data(), rank, params, &value);
    } catch (...) {
      return fail(std::string(fn->name) + ": the value callback threw an exception (operand " + shape_text(shape) +
                  ")");
    }
    if (rc != 0) {
      return fail(std::string(fn->name) + ": the value callback failed (returned " + std::to_string(rc) +
                  "; operand " + shape_text(shape) + ")" + said_by_callback());
    }
  }
  // The output is one double at index 0 (the only element any consumer reads).
  if (out->dim[0].min <= 0 && out->dim[0].min + out->dim[0].extent > 0) {
    reinterpret_cast<double*>(out->host)[-out->dim[0].min] = value;
  }
  return 0;
}
