#include "io/png.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

// libpng reports errors by calling our error function, which must not return:
// it records the message and longjmps back to the setjmp in the calling
// function. The functions that call setjmp below (read_header, read_rows,
// write_image) therefore hold only plain C data, so that no destructor is
// skipped by the longjmp. All C++ objects live in their callers.

/// State shared with the libpng callbacks: the input buffer when reading, the
/// output string when writing, and the last error message.
struct PngIo {
  const unsigned char* in = nullptr;
  size_t in_size = 0;
  size_t in_pos = 0;
  std::string* out = nullptr;
  bool out_failed = false;
  char message[512] = {0};
};

void on_error(png_structp png, png_const_charp msg) {
  auto* io = static_cast<PngIo*>(png_get_error_ptr(png));
  if (io) std::snprintf(io->message, sizeof io->message, "%s", msg ? msg : "unknown libpng error");
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void read_callback(png_structp png, png_bytep dst, png_size_t len) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (len > io->in_size - io->in_pos) png_error(png, "unexpected end of file (the file is truncated)");
  std::memcpy(dst, io->in + io->in_pos, len);
  io->in_pos += len;
}

void write_callback(png_structp png, png_bytep src, png_size_t len) {
  auto* io = static_cast<PngIo*>(png_get_io_ptr(png));
  if (io->out_failed) return;
  try {
    io->out->append(reinterpret_cast<const char*>(src), len);
  } catch (...) {
    io->out_failed = true;  // reported after libpng returns
  }
}

void flush_callback(png_structp) {}

/// The image layout after the read transformations.
struct PngHeader {
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int bit_depth = 0;
  int channels = 0;
  size_t rowbytes = 0;
  size_t raw_rowbytes = 0;  // a row as stored, before expansion
  bool too_large = false;   // more pixels than the file's bytes can hold
};

/// Reads the header and sets up expansion of palette and low-bit-depth gray
/// images to 8 bits; stops early (too_large) for an image the file cannot
/// hold. Returns false on a libpng error.
bool read_header(png_structp png, png_infop info, size_t file_bytes, PngHeader* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  h->raw_rowbytes = png_get_rowbytes(png, info);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  // Deflate expands at most about 1032:1, so a small file cannot hold a huge
  // image: stop here, before libpng allocates its row buffers (a 68-byte file
  // declaring 2^31 - 1 x 1 pixels would take 2 GB and seconds).
  h->too_large = static_cast<double>(h->height) * (static_cast<double>(h->raw_rowbytes) + 1) >
                 1100.0 * static_cast<double>(file_bytes);
  if (h->too_large) return true;
  int color = png_get_color_type(png, info);
  int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) && depth < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  h->bit_depth = png_get_bit_depth(png, info);
  h->channels = png_get_channels(png, info);
  h->rowbytes = png_get_rowbytes(png, info);
  return true;
}

/// Decodes the image into `rows`, then reads the chunks after it. Returns
/// false on a libpng error.
bool read_rows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

/// Encodes an image whose rows are ready. Returns false on a libpng error.
bool write_image(png_structp png, png_infop info, png_uint_32 width, png_uint_32 height, int bit_depth,
                 int color_type, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, width, height, bit_depth, color_type, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, nullptr);
  return true;
}

/// Owns libpng's read structures.
struct ReadStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~ReadStructs() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

/// Owns libpng's write structures.
struct WriteStructs {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~WriteStructs() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
  }
};

constexpr png_uint_32 kMaxDimension = 0x7fffffff;

}  // namespace

Array read_png(const std::string& path) { return decode_png(read_file(path), path); }

Array decode_png(const std::string& bytes, const std::string& path) {
  user_assert(!bytes.empty()) << path << ": malformed PNG: the file is empty";
  user_assert(bytes.size() >= 8 && png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8) == 0)
      << path << ": malformed PNG: not a PNG file (bad signature)";

  PngIo io;
  io.in = reinterpret_cast<const unsigned char*>(bytes.data());
  io.in_size = bytes.size();
  ReadStructs s;
  s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
  user_assert(s.png) << path << ": cannot initialise libpng (out of memory?)";
  s.info = png_create_info_struct(s.png);
  user_assert(s.info) << path << ": cannot initialise libpng (out of memory?)";
  png_set_read_fn(s.png, &io, read_callback);
  png_set_user_limits(s.png, kMaxDimension, kMaxDimension);

  PngHeader h;
  if (!read_header(s.png, s.info, bytes.size(), &h)) user_error << path << ": malformed PNG: " << io.message;
  user_assert(!h.too_large) << path << ": malformed PNG: the file is far too short for a " << h.width << " x "
                            << h.height << " image (truncated?)";
  user_assert(h.bit_depth == 8 || h.bit_depth == 16)
      << path << ": malformed PNG: unexpected bit depth " << h.bit_depth << " after expansion";
  user_assert(h.channels >= 1 && h.channels <= 4)
      << path << ": malformed PNG: unexpected channel count " << h.channels;
  const int out_channels = h.channels <= 2 ? 1 : 3;
  Shape shape = out_channels == 1 ? Shape{h.height, h.width} : Shape{h.height, h.width, 3};
  check_allocation(shape, path + ": PNG image");
  // Deflate expands at most about 1032:1, so a small file cannot hold a huge
  // image; refuse before allocating rather than fail while decoding.
  user_assert(static_cast<double>(h.height) * (h.raw_rowbytes + 1) <=
              1100.0 * static_cast<double>(bytes.size()))
      << path << ": malformed PNG: the file is far too short for a " << h.width << " x " << h.height
      << " image (truncated?)";

  std::vector<unsigned char> buf(h.rowbytes * h.height);
  std::vector<png_bytep> rows(h.height);
  for (png_uint_32 y = 0; y < h.height; ++y) rows[y] = buf.data() + y * h.rowbytes;
  if (!read_rows(s.png, s.info, rows.data())) user_error << path << ": malformed PNG: " << io.message;

  Array out(shape);
  const size_t bps = h.bit_depth / 8;
  const float maxval = h.bit_depth == 8 ? 255.0f : 65535.0f;
  float* dst = out.data.data();
  for (png_uint_32 y = 0; y < h.height; ++y) {
    const unsigned char* row = rows[y];
    for (png_uint_32 x = 0; x < h.width; ++x) {
      const unsigned char* px = row + static_cast<size_t>(x) * h.channels * bps;
      for (int c = 0; c < out_channels; ++c) {
        const unsigned char* p = px + c * bps;
        unsigned v = bps == 1 ? p[0] : (static_cast<unsigned>(p[0]) << 8 | p[1]);  // PNG is big-endian
        *dst++ = static_cast<float>(v) / maxval;
      }
    }
  }
  return out;
}

void write_png(const std::string& path, const Array& a, int bit_depth) {
  user_assert(bit_depth == 8 || bit_depth == 16)
      << path << ": PNG bit depth must be 8 or 16, not " << bit_depth;
  const bool shape_ok = a.rank() == 2 || (a.rank() == 3 && (a.shape[2] == 1 || a.shape[2] == 3));
  user_assert(shape_ok) << path << ": cannot write an array of shape " << shape_to_string(a.shape)
                        << " as a PNG image (expected (H, W), (H, W, 1) or (H, W, 3))";
  internal_assert(static_cast<int64_t>(a.data.size()) == num_elements(a.shape))
      << "array data size " << a.data.size() << " does not match shape " << shape_to_string(a.shape);
  const int64_t height = a.shape[0];
  const int64_t width = a.shape[1];
  const int channels = a.rank() == 3 ? static_cast<int>(a.shape[2]) : 1;
  user_assert(height > 0 && width > 0)
      << path << ": cannot write an empty image of shape " << shape_to_string(a.shape) << " as a PNG";
  user_assert(height <= kMaxDimension && width <= kMaxDimension)
      << path << ": image of shape " << shape_to_string(a.shape) << " is too large for PNG";

  const size_t bps = bit_depth / 8;
  const size_t rowbytes = static_cast<size_t>(width) * channels * bps;
  std::vector<unsigned char> buf(rowbytes * static_cast<size_t>(height));
  const double maxval = bit_depth == 8 ? 255.0 : 65535.0;
  for (size_t k = 0; k < a.data.size(); ++k) {
    float v = a.data[k];
    if (std::isnan(v)) {
      user_error << path << ": entry " << index_to_string(a.shape, static_cast<int64_t>(k))
                 << " is NaN; cannot write it to a PNG image";
    }
    double clamped = std::min(1.0, std::max(0.0, static_cast<double>(v)));
    unsigned q = static_cast<unsigned>(std::lround(clamped * maxval));
    if (bps == 1) {
      buf[k] = static_cast<unsigned char>(q);
    } else {
      buf[2 * k] = static_cast<unsigned char>(q >> 8);
      buf[2 * k + 1] = static_cast<unsigned char>(q & 0xff);
    }
  }
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = buf.data() + y * rowbytes;

  std::string encoded;
  PngIo io;
  io.out = &encoded;
  WriteStructs s;
  s.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &io, on_error, on_warning);
  user_assert(s.png) << path << ": cannot initialise libpng (out of memory?)";
  s.info = png_create_info_struct(s.png);
  user_assert(s.info) << path << ": cannot initialise libpng (out of memory?)";
  png_set_write_fn(s.png, &io, write_callback, flush_callback);
  png_set_user_limits(s.png, kMaxDimension, kMaxDimension);
  const int color_type = channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY;
  if (!write_image(s.png, s.info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
                   bit_depth, color_type, rows.data())) {
    user_error << path << ": cannot encode PNG: " << io.message;
  }
  user_assert(!io.out_failed) << path << ": cannot encode PNG: out of memory";
  write_file_atomic(path, encoded);
}

}  // namespace proxc::internal::io
