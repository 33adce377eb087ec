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

Array::Array() = default;

Array::Array(const Shape& shape) : impl_(std::make_unique<Impl>()) {
  for (int64_t e : shape) {
    if (e < 0) throw UserError("Array: the shape " + shape_to_string(shape) + " has a negative extent");
  }
  internal::check_allocation(shape, "Array of shape " + shape_to_string(shape));
  impl_->array = internal::Array(shape);
}

Array::Array(const Shape& shape, const std::vector<float>& values) : Array(shape) {
  // An explicit throw: the copy below must never run past the end.
  if (static_cast<int64_t>(values.size()) != size()) {
    throw UserError("Array: " + std::to_string(values.size()) + " values for the shape " +
                    shape_to_string(shape) + " of " + std::to_string(size()) + " elements");
  }
  std::copy(values.begin(), values.end(), impl_->array.data.begin());
}

Array::Array(const Array& other) : impl_(std::make_unique<Impl>(other.impl())) {}
Array::Array(Array&& other) noexcept = default;
Array& Array::operator=(const Array& other) {
  if (this != &other) impl() = other.impl();
  return *this;
}
Array& Array::operator=(Array&& other) noexcept {
  std::swap(impl_, other.impl_);
  return *this;
}
Array::~Array() = default;

const Array::Impl& Array::impl() const {
  static const Impl empty;
  return impl_ ? *impl_ : empty;
}

Array::Impl& Array::impl() {
  if (!impl_) impl_ = std::make_unique<Impl>();
  return *impl_;
}

const Shape& Array::shape() const { return impl().array.shape; }
int Array::rank() const { return impl().array.rank(); }
int64_t Array::size() const { return impl().array.size(); }
const float* Array::data() const { return impl().array.data.data(); }
float* Array::data() {
  Impl& i = impl();
  i.source = internal::ConstantSource{};
  i.node.reset();
  return i.array.data.data();
}
std::vector<float> Array::to_vector() const { return {impl().array.data.begin(), impl().array.data.end()}; }
const std::string& Array::source_path() const { return impl().source.resolved_path; }

std::string shape_to_string(const Shape& shape) { return internal::shape_to_string(shape); }

Array load_array(const std::string& path) {
  std::string hash;
  internal::Array a = internal::io::load_array(path, &hash);  // the file read once
  internal::ConstantSource source;
  source.type = internal::ConstantSource::Type::File;
  std::error_code ec;
  const internal::MemberPath split = internal::split_member_path(path);
  const std::string absolute = std::filesystem::absolute(split.file, ec).lexically_normal().string();
  source.path = source.resolved_path = ec ? path : internal::MemberPath{absolute, split.member}.joined();
  source.hash = std::move(hash);
  return internal::Access::make_array(std::move(a), std::move(source));
}

void check_save_path(const std::string& path) { internal::io::check_array_output(path); }

void check_save_path(const std::string& path, const Shape& shape, const SaveOptions& options) {
  internal::io::check_array_output(path);
  internal::io::check_save_options(path, shape, options);
}

void save_array(const std::string& path, const Array& a) {
  internal::io::save_array(path, internal::Access::array(a));
}

void save_array(const std::string& path, const Array& a, const SaveOptions& options) {
  internal::io::save_array(path, internal::Access::array(a), options);
}

bool has_array_extension(const std::string& path) { return internal::io::has_array_extension(path); }

bool is_hdf5_path(const std::string& path) { return internal::io::is_hdf5_path(path); }

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

proxc::Array Access::make_array(internal::Array a, internal::ConstantSource source) {
  proxc::Array out;
  proxc::Array::Impl& i = out.impl();
  i.array = std::move(a);
  i.source = std::move(source);
  return out;
}

}  // namespace internal
}  // namespace proxc
