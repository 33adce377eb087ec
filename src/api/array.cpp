// proxc::Array and the array functions of the public API (proxc/array.h).
#include <algorithm>
#include <filesystem>

#include "api/access.h"
#include "io/array_io.h"
#include "io/montage.h"
#include "solvers/metrics.h"
#include "support/error.h"
#include "support/file_util.h"

namespace proxc {

Array::Array() : impl_(std::make_unique<Impl>()) {}

Array::Array(const Shape& shape) : impl_(std::make_unique<Impl>()) {
  for (int64_t e : shape) user_assert(e >= 0) << "Array: the shape " << shape_to_string(shape) << " has a negative extent";
  internal::check_allocation(shape, "Array of shape " + shape_to_string(shape));
  impl_->array = internal::Array(shape);
}

Array::Array(const Shape& shape, const std::vector<float>& values) : Array(shape) {
  user_assert(static_cast<int64_t>(values.size()) == size())
      << "Array: " << values.size() << " values for the shape " << shape_to_string(shape) << " of " << size()
      << " elements";
  std::copy(values.begin(), values.end(), impl_->array.data.begin());
}

Array::Array(const Array& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Array::Array(Array&& other) noexcept : impl_(std::move(other.impl_)) { other.impl_ = std::make_unique<Impl>(); }
Array& Array::operator=(const Array& other) {
  if (this != &other) *impl_ = *other.impl_;
  return *this;
}
Array& Array::operator=(Array&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}
Array::~Array() = default;

const Shape& Array::shape() const { return impl_->array.shape; }
int Array::rank() const { return impl_->array.rank(); }
int64_t Array::size() const { return impl_->array.size(); }
const float* Array::data() const { return impl_->array.data.data(); }
float* Array::data() {
  impl_->path.clear();
  impl_->hash.clear();
  impl_->node.reset();
  return impl_->array.data.data();
}
std::vector<float> Array::to_vector() const { return {impl_->array.data.begin(), impl_->array.data.end()}; }
const std::string& Array::source_path() const { return impl_->path; }

std::string shape_to_string(const Shape& shape) { return internal::shape_to_string(shape); }

Array load_array(const std::string& path) {
  internal::Array a = internal::io::load_array(path);
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  return internal::Access::make_array(std::move(a), ec ? path : absolute,
                                      internal::content_hash(internal::read_file(path)));
}

void save_array(const std::string& path, const Array& a) {
  internal::io::save_array(path, internal::Access::array(a));
}

bool has_array_extension(const std::string& path) { return internal::io::has_array_extension(path); }

double psnr(const Array& x, const Array& reference) {
  return internal::psnr(internal::Access::array(x), internal::Access::array(reference));
}

double ssim(const Array& x, const Array& reference) {
  return internal::ssim(internal::Access::array(x), internal::Access::array(reference));
}

Array montage(const std::vector<Array>& images, const std::vector<std::string>& names, int64_t gap) {
  std::vector<internal::Array> in;
  in.reserve(images.size());
  for (const Array& a : images) in.push_back(internal::Access::array(a));
  std::vector<std::string> n = names;
  for (size_t i = n.size(); i < images.size(); ++i) n.push_back("image " + std::to_string(i + 1));
  return internal::Access::make_array(internal::io::montage(in, n, gap));
}

namespace internal {

proxc::Array Access::make_array(internal::Array a, std::string path, std::string hash) {
  proxc::Array out;
  out.impl_->array = std::move(a);
  out.impl_->path = std::move(path);
  out.impl_->hash = std::move(hash);
  return out;
}

}  // namespace internal
}  // namespace proxc
