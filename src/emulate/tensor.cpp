#include "emulate/tensor.h"

namespace proxc::internal::emulate {

Tensor Tensor::from(const Array& a) {
  Tensor t;
  t.shape = a.shape;
  t.data.assign(a.data.begin(), a.data.end());
  return t;
}

Array Tensor::to_array() const {
  Array a;
  a.shape = shape;
  a.data.resize(data.size());
  for (size_t i = 0; i < data.size(); ++i) a.data[i] = static_cast<float>(data[i]);
  return a;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

}  // namespace proxc::internal::emulate
