#include "io/tiff.h"

#include <tiffio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <vector>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

// ---------------------------------------------------------------------------
// Error capture. libtiff reports through process-wide handlers; ours append
// the message to a per-thread string instead of printing it.

thread_local std::string t_tiff_error;

void on_tiff_error(const char* /*module*/, const char* fmt, va_list ap) {
  char buf[1024];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  if (t_tiff_error.size() > 2000) return;
  if (!t_tiff_error.empty()) t_tiff_error += "; ";
  t_tiff_error += buf;
}

void on_tiff_warning(const char*, const char*, va_list) {}

/// Installs the handlers (once) and clears this thread's captured message.
void begin_tiff_call() {
  static std::once_flag once;
  std::call_once(once, [] {
    TIFFSetErrorHandler(on_tiff_error);
    TIFFSetWarningHandler(on_tiff_warning);
  });
  t_tiff_error.clear();
}

std::string tiff_message(const char* fallback) {
  return t_tiff_error.empty() ? std::string(fallback) : t_tiff_error;
}

// ---------------------------------------------------------------------------
// Reading from memory through TIFFClientOpen.

struct MemFile {
  const unsigned char* data = nullptr;
  uint64_t size = 0;
  uint64_t pos = 0;
};

tmsize_t mem_read(thandle_t h, void* buf, tmsize_t n) {
  auto* f = static_cast<MemFile*>(h);
  if (n <= 0) return 0;
  uint64_t avail = f->pos < f->size ? f->size - f->pos : 0;
  uint64_t k = std::min<uint64_t>(static_cast<uint64_t>(n), avail);
  if (k) std::memcpy(buf, f->data + f->pos, k);
  f->pos += k;
  return static_cast<tmsize_t>(k);
}

tmsize_t mem_write(thandle_t, void*, tmsize_t) { return 0; }

toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  auto* f = static_cast<MemFile*>(h);
  uint64_t base = whence == SEEK_CUR ? f->pos : whence == SEEK_END ? f->size : 0;
  // toff_t is unsigned; offsets relative to the current position or the end
  // may be negative in two's complement.
  uint64_t pos = base + static_cast<uint64_t>(off);
  if (whence != SEEK_SET && static_cast<int64_t>(off) < 0 &&
      static_cast<uint64_t>(-static_cast<int64_t>(off)) > base) {
    return static_cast<toff_t>(-1);
  }
  f->pos = pos;
  return pos;
}

int mem_close(thandle_t) { return 0; }

toff_t mem_size(thandle_t h) { return static_cast<MemFile*>(h)->size; }

int mem_map(thandle_t, void**, toff_t*) { return 0; }

void mem_unmap(thandle_t, void*, toff_t) {}

struct TiffCloser {
  TIFF* tif = nullptr;
  ~TiffCloser() {
    if (tif) TIFFClose(tif);
  }
};

/// The numeric type of the samples.
enum class SampleType { kU8, kU16, kU32, kF32, kF64 };

/// Where a decoded chunk (strip or tile) goes in the output.
struct Block {
  const unsigned char* src;    // the decoded chunk
  int64_t src_row_pixels;      // pixels per row in the chunk
  int samples;                 // samples per pixel in the chunk
  int first_channel;           // output channel of the chunk's first sample
  int64_t y0, x0, rows, cols;  // the region of the image it covers
};

float to_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > FLT_MAX) {
    return v > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(v);
}

template <typename T>
void copy_block(const Block& b, int64_t width, int out_channels, double maxval, bool invert, float* out) {
  for (int64_t r = 0; r < b.rows; ++r) {
    for (int64_t x = 0; x < b.cols; ++x) {
      const unsigned char* px = b.src + ((r * b.src_row_pixels + x) * b.samples) * sizeof(T);
      float* dst = out + ((b.y0 + r) * width + (b.x0 + x)) * out_channels;
      for (int s = 0; s < b.samples; ++s) {
        int ch = b.first_channel + s;
        if (ch >= out_channels) break;
        T v;
        std::memcpy(&v, px + s * sizeof(T), sizeof(T));
        double d = static_cast<double>(v) / maxval;
        if (invert) d = 1.0 - d;
        dst[ch] = to_float(d);
      }
    }
  }
}

void copy_block(SampleType t, const Block& b, int64_t width, int out_channels, bool invert, float* out) {
  switch (t) {
    case SampleType::kU8:
      copy_block<uint8_t>(b, width, out_channels, 255.0, invert, out);
      break;
    case SampleType::kU16:
      copy_block<uint16_t>(b, width, out_channels, 65535.0, invert, out);
      break;
    case SampleType::kU32:
      copy_block<uint32_t>(b, width, out_channels, 4294967295.0, invert, out);
      break;
    case SampleType::kF32:
      copy_block<float>(b, width, out_channels, 1.0, false, out);
      break;
    case SampleType::kF64:
      copy_block<double>(b, width, out_channels, 1.0, false, out);
      break;
  }
}

std::string describe_sample(uint16_t format, uint16_t bits) {
  const char* kind = format == SAMPLEFORMAT_INT             ? "signed integer"
                     : format == SAMPLEFORMAT_IEEEFP        ? "float"
                     : format == SAMPLEFORMAT_COMPLEXINT    ? "complex integer"
                     : format == SAMPLEFORMAT_COMPLEXIEEEFP ? "complex float"
                                                            : "unsigned integer";
  return std::to_string(bits) + "-bit " + kind;
}

}  // namespace

Array read_tiff(const std::string& path) { return decode_tiff(read_file(path), path); }

// Refuses, before anything is allocated, an image its file cannot hold:
// uncompressed data shorter than the image, or more than 4096:1 for the codecs
// whose expansion is bounded (LZW's longest 12-bit code; deflate about
// 1032:1; PackBits 64:1). Others (ZSTD, LZMA, ...) are bounded by the memory
// limit alone.
static void check_declared_size(const std::string& path, size_t file_bytes, int64_t W, int64_t H,
                                double raw_bytes, int compression) {
  user_assert(compression != COMPRESSION_NONE || raw_bytes <= static_cast<double>(file_bytes))
      << path << ": malformed TIFF: the file is too short for an uncompressed " << W << " x " << H
      << " image (truncated?)";
  const bool bounded = compression == COMPRESSION_LZW || compression == COMPRESSION_DEFLATE ||
                       compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_PACKBITS;
  user_assert(!bounded || raw_bytes <= 4096.0 * static_cast<double>(file_bytes) + 65536.0)
      << path << ": malformed TIFF: " << file_bytes << " bytes cannot hold a compressed " << W << " x " << H
      << " image of " << format_bytes(raw_bytes) << " (at most 4096:1)";
}

// Decodes the page libtiff has current into an array (H, W) or (H, W, 3).
static Array decode_page(TIFF* tif, const std::string& path, size_t file_bytes) {
  uint32_t width = 0, height = 0;
  user_assert(TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width) == 1 &&
              TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height) == 1)
      << path << ": malformed TIFF: the image width or height is missing";
  user_assert(width > 0 && height > 0)
      << path << ": malformed TIFF: the image is empty (" << width << " x " << height << ")";
  uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  uint16_t compression = COMPRESSION_NONE, photometric = PHOTOMETRIC_MINISBLACK;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar);
  TIFFGetFieldDefaulted(tif, TIFFTAG_COMPRESSION, &compression);
  if (TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric) != 1) {
    photometric = spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  }

  switch (photometric) {
    case PHOTOMETRIC_MINISBLACK:
    case PHOTOMETRIC_MINISWHITE:
    case PHOTOMETRIC_RGB:
      break;
    case PHOTOMETRIC_YCBCR:
      user_assert(compression == COMPRESSION_JPEG)
          << path << ": unsupported TIFF: YCbCr images are supported only with JPEG compression";
      TIFFSetField(tif, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
      break;
    case PHOTOMETRIC_PALETTE:
      user_error << path << ": unsupported TIFF: palette (colour-mapped) images are not supported";
      break;
    default:
      user_error << path << ": unsupported TIFF: photometric interpretation " << photometric
                 << " is not supported (supported: grayscale, RGB)";
  }
  user_assert(spp >= 1 && spp <= 4) << path << ": unsupported TIFF: " << spp
                                    << " samples per pixel (supported: 1 to 4)";
  user_assert(planar == PLANARCONFIG_CONTIG || planar == PLANARCONFIG_SEPARATE)
      << path << ": malformed TIFF: unknown planar configuration " << planar;

  SampleType type;
  if ((format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID) && bits == 8) {
    type = SampleType::kU8;
  } else if ((format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID) && bits == 16) {
    type = SampleType::kU16;
  } else if ((format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID) && bits == 32) {
    type = SampleType::kU32;
  } else if (format == SAMPLEFORMAT_IEEEFP && bits == 32) {
    type = SampleType::kF32;
  } else if (format == SAMPLEFORMAT_IEEEFP && bits == 64) {
    type = SampleType::kF64;
  } else {
    user_error << path << ": unsupported TIFF sample type: " << describe_sample(format, bits)
               << " (supported: 8, 16 and 32-bit unsigned integers, 32 and 64-bit floats)";
    type = SampleType::kU8;  // not reached
  }
  const int64_t sample_bytes = bits / 8;
  const bool invert = photometric == PHOTOMETRIC_MINISWHITE;

  const int out_channels = spp <= 2 ? 1 : 3;
  const bool separate = planar == PLANARCONFIG_SEPARATE && spp > 1;
  const int planes = separate ? spp : 1;
  const int chunk_samples = separate ? 1 : spp;
  const int64_t H = height, W = width;
  Shape shape = out_channels == 1 ? Shape{H, W} : Shape{H, W, 3};
  check_allocation(shape, path + ": TIFF image");
  check_declared_size(path, file_bytes, W, H,
                      static_cast<double>(H) * static_cast<double>(W) * spp * sample_bytes, compression);
  Array out(shape);

  std::vector<unsigned char> buf;
  if (TIFFIsTiled(tif)) {
    uint32_t tw = 0, th = 0;
    user_assert(TIFFGetField(tif, TIFFTAG_TILEWIDTH, &tw) == 1 &&
                TIFFGetField(tif, TIFFTAG_TILELENGTH, &th) == 1 && tw > 0 && th > 0)
        << path << ": malformed TIFF: bad tile size";
    check_allocation(Shape{th, tw, chunk_samples * sample_bytes}, path + ": TIFF tile buffer");
    const int64_t across = (W + tw - 1) / tw, down = (H + th - 1) / th;
    const int64_t per_plane = across * down;
    user_assert(static_cast<int64_t>(TIFFNumberOfTiles(tif)) >= per_plane * planes)
        << path << ": malformed TIFF: the file has " << TIFFNumberOfTiles(tif) << " tiles, expected "
        << per_plane * planes;
    const int64_t need = int64_t{tw} * th * chunk_samples * sample_bytes;
    buf.resize(static_cast<size_t>(std::max<int64_t>(need, TIFFTileSize(tif))));
    for (int p = 0; p < planes && p < out_channels; ++p) {
      for (int64_t ty = 0; ty < down; ++ty) {
        for (int64_t tx = 0; tx < across; ++tx) {
          const int64_t tile = p * per_plane + ty * across + tx;
          t_tiff_error.clear();
          tmsize_t got = TIFFReadEncodedTile(tif, static_cast<uint32_t>(tile), buf.data(), need);
          user_assert(got >= need) << path << ": malformed TIFF: cannot read tile " << tile << ": "
                                   << tiff_message("the tile data is truncated");
          Block b{buf.data(),
                  tw,
                  chunk_samples,
                  p,
                  ty * th,
                  tx * tw,
                  std::min<int64_t>(th, H - ty * th),
                  std::min<int64_t>(tw, W - tx * tw)};
          copy_block(type, b, W, out_channels, invert, out.data.data());
        }
      }
    }
  } else {
    uint32_t rps = 0;
    TIFFGetFieldDefaulted(tif, TIFFTAG_ROWSPERSTRIP, &rps);
    if (rps == 0 || rps > height) rps = height;
    check_allocation(Shape{rps, W, chunk_samples * sample_bytes}, path + ": TIFF strip buffer");
    const int64_t per_plane = (H + rps - 1) / rps;
    user_assert(static_cast<int64_t>(TIFFNumberOfStrips(tif)) >= per_plane * planes)
        << path << ": malformed TIFF: the file has " << TIFFNumberOfStrips(tif) << " strips, expected "
        << per_plane * planes;
    const int64_t row_bytes = W * chunk_samples * sample_bytes;
    buf.resize(static_cast<size_t>(std::max<int64_t>(rps * row_bytes, TIFFStripSize(tif))));
    for (int p = 0; p < planes && p < out_channels; ++p) {
      for (int64_t s = 0; s < per_plane; ++s) {
        const int64_t strip = p * per_plane + s;
        const int64_t y0 = s * rps;
        const int64_t rows = std::min<int64_t>(rps, H - y0);
        const int64_t need = rows * row_bytes;
        t_tiff_error.clear();
        tmsize_t got = TIFFReadEncodedStrip(tif, static_cast<uint32_t>(strip), buf.data(), need);
        user_assert(got >= need) << path << ": malformed TIFF: cannot read strip " << strip << ": "
                                 << tiff_message("the strip data is truncated");
        Block b{buf.data(), W, chunk_samples, p, y0, 0, rows, W};
        copy_block(type, b, W, out_channels, invert, out.data.data());
      }
    }
  }
  return out;
}

// The most pages a stack may have (a loop in a file's page chain is refused
// by libtiff; this bounds the walk of a long one).
constexpr int kMaxTiffPages = 1 << 20;

Array decode_tiff(const std::string& bytes, const std::string& path) {
  user_assert(!bytes.empty()) << path << ": malformed TIFF: the file is empty";
  begin_tiff_call();
  MemFile mf;
  mf.data = reinterpret_cast<const unsigned char*>(bytes.data());
  mf.size = bytes.size();
  TiffCloser closer;
  closer.tif = TIFFClientOpen(path.c_str(), "rm", &mf, mem_read, mem_write, mem_seek, mem_close, mem_size,
                              mem_map, mem_unmap);
  user_assert(closer.tif) << path << ": malformed TIFF: " << tiff_message("cannot open the file as a TIFF");
  TIFF* tif = closer.tif;
  // The full-resolution pages (reduced-resolution ones, thumbnails and
  // pyramid levels, are skipped): one gives (H, W[, 3]); several of one
  // shape, a stack (pages, H, W[, 3]) along the first axis.
  std::vector<tdir_t> pages;
  for (int k = 0; k < kMaxTiffPages; ++k) {
    uint32_t kind = 0;
    if (k == 0 || TIFFGetField(tif, TIFFTAG_SUBFILETYPE, &kind) != 1 || (kind & FILETYPE_REDUCEDIMAGE) == 0) {
      pages.push_back(TIFFCurrentDirectory(tif));
    }
    t_tiff_error.clear();
    if (!TIFFReadDirectory(tif)) break;
    user_assert(k + 1 < kMaxTiffPages) << path << ": unsupported TIFF: more than " << kMaxTiffPages << " pages";
  }
  user_assert(TIFFSetDirectory(tif, pages[0]) == 1)
      << path << ": malformed TIFF: " << tiff_message("cannot read the first page");
  Array first = decode_page(tif, path, bytes.size());
  if (pages.size() == 1) return first;
  Shape shape = first.shape;
  shape.insert(shape.begin(), static_cast<int64_t>(pages.size()));
  check_allocation(shape, path + ": TIFF stack of " + std::to_string(pages.size()) + " pages");
  Array out(shape);
  std::copy(first.data.begin(), first.data.end(), out.data.begin());
  const size_t page_size = first.data.size();
  for (size_t k = 1; k < pages.size(); ++k) {
    t_tiff_error.clear();
    user_assert(TIFFSetDirectory(tif, pages[k]) == 1)
        << path << ": malformed TIFF: " << tiff_message(("cannot read page " + std::to_string(k)).c_str());
    Array page = decode_page(tif, path, bytes.size());
    user_assert(page.shape == first.shape)
        << path << ": page " << k << " has shape " << shape_to_string(page.shape) << ", page 0 "
        << shape_to_string(first.shape) << ": a stack needs pages of one shape";
    std::copy(page.data.begin(), page.data.end(), out.data.begin() + static_cast<std::ptrdiff_t>(k * page_size));
  }
  return out;
}

namespace {

/// Closes the TIFF being written and removes the temporary file unless the
/// write was committed.
struct TiffWriteGuard {
  TIFF* tif = nullptr;
  std::string tmp;
  ~TiffWriteGuard() {
    if (tif) TIFFClose(tif);
    if (!tmp.empty()) std::remove(tmp.c_str());
  }
};

}  // namespace

static void write_tiff_page(TIFF* tif, const std::string& path, const Array& a, int64_t offset, int64_t width,
                            int64_t height, int channels, std::vector<float>* row);

void write_tiff(const std::string& path, const Array& a) {
  // (H, W), (H, W, 1) and (H, W, 3) are one page; another 3-D shape (D, H, W)
  // is D grey pages, (D, H, W, 1 | 3) D pages of its channels: a z-stack.
  const bool colour_last = a.rank() >= 3 && (a.shape.back() == 1 || a.shape.back() == 3);
  const bool one_page = a.rank() == 2 || (a.rank() == 3 && colour_last);
  const bool stack = (a.rank() == 3 && !colour_last) || (a.rank() == 4 && colour_last);
  user_assert(one_page || stack) << path << ": cannot write an array of shape " << shape_to_string(a.shape)
                                 << " as a TIFF image (expected (H, W), (H, W, 1 | 3), or a stack of pages (D, H, W) "
                                    "or (D, H, W, 1 | 3))";
  internal_assert(static_cast<int64_t>(a.data.size()) == num_elements(a.shape))
      << "array data size " << a.data.size() << " does not match shape " << shape_to_string(a.shape);
  const int64_t pages = stack ? a.shape[0] : 1;
  const size_t first = stack ? 1 : 0;
  const int64_t height = a.shape[first];
  const int64_t width = a.shape[first + 1];
  const int channels = a.rank() == static_cast<int>(first) + 3 ? static_cast<int>(a.shape.back()) : 1;
  user_assert(pages > 0) << path << ": cannot write an empty stack of shape " << shape_to_string(a.shape)
                         << " as a TIFF";
  user_assert(height > 0 && width > 0)
      << path << ": cannot write an empty image of shape " << shape_to_string(a.shape) << " as a TIFF";
  const int64_t max_dim = std::numeric_limits<uint32_t>::max();
  user_assert(height <= max_dim && width <= max_dim)
      << path << ": image of shape " << shape_to_string(a.shape) << " is too large for TIFF";

  begin_tiff_call();
  // libtiff writes a private file of its own (mkstemp: a new name, mode 600)
  // in the system's temporary folder; its bytes then go to `path` as every
  // output does (write_file_atomic).
  TiffWriteGuard g;
  std::error_code ec;
  std::filesystem::path tmp_dir = std::filesystem::temp_directory_path(ec);
  if (ec) tmp_dir = "/tmp";
  std::string tmpl = (tmp_dir / "proxc-XXXXXX.tif").string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemps(name.data(), 4);
  const int err = errno;
  user_assert(fd >= 0) << path << ": cannot write TIFF: no temporary file in " << tmp_dir.string() << ": "
                       << std::strerror(err);
  g.tmp = name.data();
  // Classic TIFF addresses at most 4 GiB; switch to BigTIFF well before that.
  const double raw_bytes = static_cast<double>(a.data.size()) * 4.0;
  const char* mode = raw_bytes > 4.0e9 ? "w8" : "w";
  g.tif = TIFFFdOpen(fd, g.tmp.c_str(), mode);  // TIFFClose closes fd
  if (!g.tif) ::close(fd);
  user_assert(g.tif) << path << ": cannot write file: " << tiff_message("cannot create the file");
  TIFF* tif = g.tif;
  const size_t row_len = static_cast<size_t>(width) * channels;
  std::vector<float> row(row_len);  // libtiff may modify the buffer it is given
  for (int64_t page = 0; page < pages; ++page) {
    write_tiff_page(tif, path, a, page * height * static_cast<int64_t>(row_len), width, height, channels, &row);
    if (pages > 1) {
      user_assert(TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE) == 1 &&
                  TIFFSetField(tif, TIFFTAG_PAGENUMBER, static_cast<uint16_t>(std::min<int64_t>(page, 65535)),
                               static_cast<uint16_t>(std::min<int64_t>(pages, 65535))) == 1 &&
                  TIFFWriteDirectory(tif) == 1)
          << path << ": cannot write TIFF: " << tiff_message("cannot finish a page (disk full?)");
    }
  }
  if (pages == 1) {
    user_assert(TIFFFlush(tif) == 1) << path
                                     << ": cannot write TIFF: " << tiff_message("write failed (disk full?)");
  }
  t_tiff_error.clear();
  TIFFClose(tif);
  g.tif = nullptr;
  user_assert(t_tiff_error.empty()) << path << ": cannot write TIFF: " << t_tiff_error;
  write_file_atomic(path, read_file(g.tmp));
}

// One page's tags and rows, from a.data at `offset`.
static void write_tiff_page(TIFF* tif, const std::string& path, const Array& a, int64_t offset, int64_t width,
                            int64_t height, int channels, std::vector<float>* row) {
  bool ok =
      TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, static_cast<uint32_t>(width)) == 1 &&
      TIFFSetField(tif, TIFFTAG_IMAGELENGTH, static_cast<uint32_t>(height)) == 1 &&
      TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, static_cast<uint16_t>(channels)) == 1 &&
      TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, static_cast<uint16_t>(32)) == 1 &&
      TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, static_cast<uint16_t>(SAMPLEFORMAT_IEEEFP)) == 1 &&
      TIFFSetField(tif, TIFFTAG_PLANARCONFIG, static_cast<uint16_t>(PLANARCONFIG_CONTIG)) == 1 &&
      TIFFSetField(tif, TIFFTAG_PHOTOMETRIC,
                   static_cast<uint16_t>(channels == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)) == 1 &&
      TIFFSetField(tif, TIFFTAG_COMPRESSION, static_cast<uint16_t>(COMPRESSION_NONE)) == 1 &&
      TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(tif, 0)) == 1;
  user_assert(ok) << path << ": cannot write TIFF: " << tiff_message("cannot set the image tags");
  const size_t row_len = row->size();
  for (int64_t y = 0; y < height; ++y) {
    std::copy_n(a.data.begin() + static_cast<std::ptrdiff_t>(offset + y * static_cast<int64_t>(row_len)), row_len,
                row->begin());
    user_assert(TIFFWriteScanline(tif, row->data(), static_cast<uint32_t>(y), 0) == 1)
        << path << ": cannot write TIFF: " << tiff_message("write failed (disk full?)");
  }
}

}  // namespace proxc::internal::io
