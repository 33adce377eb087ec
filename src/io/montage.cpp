#include "io/montage.h"

#include <algorithm>

#include "support/error.h"

namespace proxc::internal::io {

Array montage(const std::vector<Array>& images, const std::vector<std::string>& names, int64_t gap) {
  user_assert(!images.empty()) << "montage: no image";
  user_assert(images.size() == names.size()) << "montage: " << images.size() << " images, " << names.size() << " names";
  bool colour = false;
  for (size_t i = 0; i < images.size(); ++i) {
    const Shape& s = images[i].shape;
    user_assert(s.size() == 2 || (s.size() == 3 && s[2] == 3))
        << names[i] << ": an image is (H, W) or (H, W, 3), not " << shape_to_string(s);
    user_assert(s[0] == images[0].shape[0]) << "montage: " << names[i] << " has shape " << shape_to_string(s) << " but "
                                            << names[0] << " has " << shape_to_string(images[0].shape)
                                            << ": the heights differ";
    colour = colour || s.size() == 3;
  }
  const int64_t h = images[0].shape[0], c = colour ? 3 : 1;
  int64_t w = gap * static_cast<int64_t>(images.size() - 1);
  for (const Array& a : images) w += a.shape[1];
  Shape out_shape = colour ? Shape{h, w, 3} : Shape{h, w};
  check_allocation(out_shape, "montage");
  Array out(out_shape);
  std::fill(out.data.begin(), out.data.end(), 1.0f);
  int64_t x0 = 0;
  for (const Array& a : images) {
    const int64_t aw = a.shape[1], ac = a.rank() == 3 ? 3 : 1;
    for (int64_t i = 0; i < h; ++i) {
      for (int64_t j = 0; j < aw; ++j) {
        for (int64_t k = 0; k < c; ++k) {
          float v = a.data[static_cast<size_t>((i * aw + j) * ac + (ac == 3 ? k : 0))];
          out.data[static_cast<size_t>((i * w + x0 + j) * c + k)] = std::min(1.0f, std::max(0.0f, v));
        }
      }
    }
    x0 += aw + gap;
  }
  return out;
}

}  // namespace proxc::internal::io
