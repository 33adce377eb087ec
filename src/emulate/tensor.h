/// \file
/// Double-precision arrays of the emulator, and conversions to float32.
#pragma once

#include <vector>

#include "support/array.h"

namespace proxc::internal::emulate {

/// A dense float64 array in C order (rank 0: one value).
struct Tensor {
  Shape shape;
  DoubleData data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(num_elements(shape)), 0.0) {}
  static Tensor from(const Array& a);
  Array to_array() const;
  size_t size() const { return data.size(); }
  /// Value i, broadcasting a rank-0 tensor.
  double at(size_t i) const { return data.size() == 1 ? data[0] : data[i]; }
};

/// Row-major strides of a shape (in elements).
std::vector<int64_t> strides_of(const Shape& s);

}  // namespace proxc::internal::emulate
