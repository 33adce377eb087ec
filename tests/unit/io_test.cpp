// Unit tests for src/io: .npy, .png and .tif readers and writers, and the
// extension dispatch with its finiteness check.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <png.h>
#include <tiffio.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "io/array_io.h"
#include "io/montage.h"
#include "io/npy.h"
#include "io/png.h"
#include "io/tiff.h"
#include "support/array.h"
#include "support/error.h"

namespace proxc::internal::io {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------
// Helpers.

/// This process's temporary folder, removed when the process exits.
struct TmpDir {
  std::string path;
  TmpDir() {
    path = testing::TempDir();
    if (!path.empty() && path.back() != '/') path += '/';
    path += "proxc_io_test_" + std::to_string(getpid());
    std::filesystem::create_directories(path);
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// A path in this process's temporary folder.
std::string tmp_path(const std::string& name) {
  static const TmpDir dir;
  return dir.path + "/" + name;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Runs `f`, expecting a UserError; returns its message. Any other outcome
/// (no exception, an InternalError, something else) fails the test.
std::string user_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  } catch (const InternalError& e) {
    ADD_FAILURE() << "InternalError: " << e.what();
    return "";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception was thrown";
  return "";
}

/// Restores the allocation limit when it goes out of scope.
struct LimitGuard {
  int64_t saved = Limits::max_array_bytes();
  ~LimitGuard() { Limits::set_max_array_bytes(saved); }
};

Array ramp(Shape shape, float lo = 0.0f, float hi = 1.0f) {
  Array a(shape);
  const size_t n = a.data.size();
  for (size_t i = 0; i < n; ++i) a.data[i] = n > 1 ? lo + (hi - lo) * static_cast<float>(i) / (n - 1) : lo;
  return a;
}

template <typename T>
std::string raw(const std::vector<T>& v, bool big_endian = false) {
  std::string out;
  for (const T& x : v) {
    char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    if (big_endian) std::reverse(b, b + sizeof(T));  // the tests run on little-endian hosts
    out.append(b, sizeof(T));
  }
  return out;
}

/// A .npy file with the given header dictionary, padded per the spec.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string header = dict;
  size_t total = pre + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < pre - 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

/// Writes a PNG with libpng's low-level API from packed rows (test-only; plain
/// C data only, since it uses setjmp).
bool write_raw_png(const char* path, png_uint_32 w, png_uint_32 h, int bit_depth, int color_type,
                   const unsigned char* data, size_t rowbytes, int interlace, const png_color* palette,
                   int num_palette) {
  FILE* f = std::fopen(path, "wb");
  if (!f) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(f);
    return false;
  }
  png_init_io(png, f);
  png_set_IHDR(png, info, w, h, bit_depth, color_type, interlace, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (palette) png_set_PLTE(png, info, palette, num_palette);
  png_write_info(png, info);
  int passes = png_set_interlace_handling(png);
  for (int p = 0; p < passes; ++p) {
    for (png_uint_32 y = 0; y < h; ++y) png_write_row(png, const_cast<unsigned char*>(data) + y * rowbytes);
  }
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
  return true;
}

/// Options for write_test_tiff.
struct TiffSpec {
  uint32_t width = 0, height = 0;
  uint16_t spp = 1, bits = 8, format = SAMPLEFORMAT_UINT;
  uint16_t photometric = PHOTOMETRIC_MINISBLACK;
  uint16_t planar = PLANARCONFIG_CONTIG;
  uint16_t compression = COMPRESSION_NONE;
  uint32_t tile = 0;  // tile width and height; 0 for strips
  uint32_t rows_per_strip = 3;
};

/// Writes one TIFF page (or appends one when `tif` is given) whose samples,
/// in (y, x, sample) order, are `samples` as raw bytes of `spec.bits` each.
void write_tiff_page(TIFF* tif, const TiffSpec& s, const std::string& samples) {
  TIFFSetField(tif, TIFFTAG_IMAGEWIDTH, s.width);
  TIFFSetField(tif, TIFFTAG_IMAGELENGTH, s.height);
  TIFFSetField(tif, TIFFTAG_SAMPLESPERPIXEL, s.spp);
  TIFFSetField(tif, TIFFTAG_BITSPERSAMPLE, s.bits);
  TIFFSetField(tif, TIFFTAG_SAMPLEFORMAT, s.format);
  TIFFSetField(tif, TIFFTAG_PHOTOMETRIC, s.photometric);
  TIFFSetField(tif, TIFFTAG_PLANARCONFIG, s.planar);
  TIFFSetField(tif, TIFFTAG_COMPRESSION, s.compression);
  if (s.spp == 4) {
    uint16_t extra = EXTRASAMPLE_UNASSALPHA;
    TIFFSetField(tif, TIFFTAG_EXTRASAMPLES, 1, &extra);
  }
  const size_t bps = s.bits / 8;
  const bool separate = s.planar == PLANARCONFIG_SEPARATE;
  const int planes = separate ? s.spp : 1;
  const int cs = separate ? 1 : s.spp;
  // Rearranges (y, x, sample) data into one plane's (y, x, cs) layout.
  auto plane_bytes = [&](int p) {
    std::string out;
    for (uint32_t y = 0; y < s.height; ++y) {
      for (uint32_t x = 0; x < s.width; ++x) {
        for (int c = 0; c < cs; ++c) {
          size_t sample = (static_cast<size_t>(y) * s.width + x) * s.spp + (separate ? p : c);
          out.append(samples, sample * bps, bps);
        }
      }
    }
    return out;
  };
  if (s.tile) {
    TIFFSetField(tif, TIFFTAG_TILEWIDTH, s.tile);
    TIFFSetField(tif, TIFFTAG_TILELENGTH, s.tile);
    for (int p = 0; p < planes; ++p) {
      std::string plane = plane_bytes(p);
      for (uint32_t ty = 0; ty < s.height; ty += s.tile) {
        for (uint32_t tx = 0; tx < s.width; tx += s.tile) {
          std::string tile(static_cast<size_t>(s.tile) * s.tile * cs * bps, '\0');
          for (uint32_t y = ty; y < std::min(ty + s.tile, s.height); ++y) {
            for (uint32_t x = tx; x < std::min(tx + s.tile, s.width); ++x) {
              size_t src = (static_cast<size_t>(y) * s.width + x) * cs * bps;
              size_t dst = (static_cast<size_t>(y - ty) * s.tile + (x - tx)) * cs * bps;
              tile.replace(dst, cs * bps, plane, src, cs * bps);
            }
          }
          uint32_t index = TIFFComputeTile(tif, tx, ty, 0, static_cast<uint16_t>(p));
          ASSERT_GE(TIFFWriteEncodedTile(tif, index, tile.data(), static_cast<tmsize_t>(tile.size())), 0);
        }
      }
    }
  } else {
    TIFFSetField(tif, TIFFTAG_ROWSPERSTRIP, s.rows_per_strip);
    for (int p = 0; p < planes; ++p) {
      std::string plane = plane_bytes(p);
      size_t row_bytes = static_cast<size_t>(s.width) * cs * bps;
      for (uint32_t y = 0; y < s.height; ++y) {
        std::string row = plane.substr(y * row_bytes, row_bytes);
        ASSERT_EQ(TIFFWriteScanline(tif, row.data(), y, static_cast<uint16_t>(p)), 1);
      }
    }
  }
  ASSERT_EQ(TIFFWriteDirectory(tif), 1);
}

void write_test_tiff(const std::string& path, const TiffSpec& s, const std::string& samples) {
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tif, nullptr);
  write_tiff_page(tif, s, samples);
  TIFFClose(tif);
}

// ---------------------------------------------------------------------------
// .npy

TEST(Montage, PutsImagesSideBySideWithAGapAndClamps) {
  Array grey(Shape{2, 3}, {0, 0.5f, 1, 2, -1, 0.25f});
  Array colour(Shape{2, 1, 3}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f});
  Array m = montage({grey, colour}, {"a", "b"}, 2);
  ASSERT_EQ(m.shape, Shape({2, 6, 3}));  // 3 + 2 (gap) + 1 columns; colour because b has colour
  auto at = [&](int64_t i, int64_t j, int64_t c) { return m.data[static_cast<size_t>((i * 6 + j) * 3 + c)]; };
  EXPECT_EQ(at(0, 1, 0), 0.5f);
  EXPECT_EQ(at(0, 1, 2), 0.5f);  // grey repeated into the 3 channels
  EXPECT_EQ(at(1, 0, 1), 1.0f);  // 2 clamped to 1
  EXPECT_EQ(at(1, 1, 0), 0.0f);  // -1 clamped to 0
  EXPECT_EQ(at(0, 3, 0), 1.0f);  // the white gap
  EXPECT_EQ(at(1, 5, 2), 0.6f);
  Array grey_only = montage({grey, grey}, {"a", "a2"});
  EXPECT_EQ(grey_only.shape, Shape({2, 10}));
}

TEST(Montage, DifferentHeightsNameBothImages) {
  try {
    montage({Array(Shape{2, 3}), Array(Shape{4, 3})}, {"in.png", "out.png"});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("out.png has shape (4, 3) but in.png has (2, 3)"));
  }
  EXPECT_THROW(montage({Array(Shape{2, 3, 2})}, {"two_channels.npy"}), UserError);
}

TEST(Npy, RoundTripIsExact) {
  Array a = ramp({2, 3, 4}, -3.5f, 7.25f);
  a.data[5] = std::numeric_limits<float>::denorm_min();
  a.data[6] = std::numeric_limits<float>::max();
  a.data[7] = -0.0f;
  std::string path = tmp_path("roundtrip.npy");
  write_npy(path, a);
  Array b = read_npy(path);
  EXPECT_EQ(b.shape, a.shape);
  ASSERT_EQ(b.data.size(), a.data.size());
  EXPECT_EQ(std::memcmp(b.data.data(), a.data.data(), a.data.size() * 4), 0);
}

TEST(Npy, RoundTripScalarVectorAndEmpty) {
  for (Shape shape : {Shape{}, Shape{5}, Shape{0, 3}, Shape{1, 1, 1, 1, 1, 1, 1, 2}}) {
    Array a = ramp(shape, 1.0f, 2.0f);
    Array b = parse_npy(encode_npy(a), "mem.npy");
    EXPECT_EQ(b.shape, shape) << shape_to_string(shape);
    EXPECT_EQ(b.data, a.data) << shape_to_string(shape);
  }
}

TEST(Npy, EncodedHeaderFollowsTheSpec) {
  std::string bytes = encode_npy(ramp({2, 3}));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(bytes[6], 1);
  EXPECT_EQ(bytes[7], 0);
  size_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 6 * 4);
  std::string header = bytes.substr(10, header_len);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_THAT(header, HasSubstr("'descr': '<f4'"));
  EXPECT_THAT(header, HasSubstr("'fortran_order': False"));
  EXPECT_THAT(header, HasSubstr("'shape': (2, 3)"));
  EXPECT_THAT(encode_npy(ramp({7})), HasSubstr("'shape': (7,)"));
  EXPECT_THAT(encode_npy(ramp({})), HasSubstr("'shape': ()"));
}

TEST(Npy, HeaderKeysInAnyOrderWithSpaces) {
  std::string bytes = make_npy("{ \"shape\" : ( 2 ,  3 ) ,'fortran_order':False,  'descr' : '<f4' }",
                               raw<float>({1, 2, 3, 4, 5, 6}));
  Array a = parse_npy(bytes, "x.npy");
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(a.data, (FloatData{1, 2, 3, 4, 5, 6}));
  // Python 2 long literals and a missing trailing comma.
  Array b = parse_npy(
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L)}", raw<float>({1, 2})), "y.npy");
  EXPECT_EQ(b.shape, (Shape{2, 1}));
}

TEST(Npy, Versions2And3) {
  for (int major : {2, 3}) {
    Array a = parse_npy(make_npy(dict("<f4", "(3,)"), raw<float>({1, 2, 3}), major), "v.npy");
    EXPECT_EQ(a.shape, (Shape{3}));
    EXPECT_EQ(a.data, (FloatData{1, 2, 3}));
  }
  std::string bad = make_npy(dict("<f4", "(3,)"), raw<float>({1, 2, 3}), 1);
  bad[6] = 4;
  EXPECT_THAT(user_error_of([&] { parse_npy(bad, "v4.npy"); }),
              HasSubstr("v4.npy: unsupported .npy format version 4.0"));
}

TEST(Npy, ScalarAndOneElementTupleShapes) {
  Array s = parse_npy(make_npy(dict("<f4", "()"), raw<float>({2.5f})), "s.npy");
  EXPECT_EQ(s.shape, Shape{});
  EXPECT_EQ(s.data, FloatData{2.5f});
  Array v = parse_npy(make_npy(dict("<f4", "(5,)"), raw<float>({1, 2, 3, 4, 5})), "v.npy");
  EXPECT_EQ(v.shape, Shape{5});
}

TEST(Npy, ConvertsIntegerAndBoolDtypes) {
  auto check = [](const std::string& descr, const std::string& data, FloatData want) {
    Array a = parse_npy(make_npy(dict(descr, "(" + std::to_string(want.size()) + ",)"), data), "d.npy");
    EXPECT_EQ(a.data, want) << descr;
  };
  check("|u1", raw<uint8_t>({0, 7, 255}), {0, 7, 255});
  check("|i1", raw<int8_t>({-128, 0, 127}), {-128, 0, 127});
  check("<u2", raw<uint16_t>({0, 65535}), {0, 65535});
  check("<i2", raw<int16_t>({-32768, 5}), {-32768, 5});
  check("<u4", raw<uint32_t>({0, 123456}), {0, 123456});
  check("<i4", raw<int32_t>({-7, 1 << 20}), {-7, 1 << 20});
  check("<i8", raw<int64_t>({-3, int64_t{1} << 40}), {-3, 1099511627776.0f});
  check("<u8", raw<uint64_t>({9}), {9});
  check("|b1", raw<uint8_t>({0, 1, 1}), {0, 1, 1});
  check("<f8", raw<double>({0.5, -1e10, 1e-50}), {0.5f, -1e10f, 0.0f});
}

TEST(Npy, BigEndian) {
  Array a = parse_npy(make_npy(dict(">f4", "(2,)"), raw<float>({1.5f, -2.0f}, true)), "be.npy");
  EXPECT_EQ(a.data, (FloatData{1.5f, -2.0f}));
  Array b = parse_npy(make_npy(dict(">i2", "(2,)"), raw<int16_t>({-300, 12}, true)), "be.npy");
  EXPECT_EQ(b.data, (FloatData{-300, 12}));
  Array c = parse_npy(make_npy(dict(">f8", "(1,)"), raw<double>({0.25}, true)), "be.npy");
  EXPECT_EQ(c.data, (FloatData{0.25f}));
  Array d = parse_npy(make_npy(dict(">u4", "(1,)"), raw<uint32_t>({70000}, true)), "be.npy");
  EXPECT_EQ(d.data, (FloatData{70000}));
}

TEST(Npy, F8OutsideFloatRangeIsAnError) {
  std::string bytes = make_npy(dict("<f8", "(2, 2)"), raw<double>({1, 2, 3, -1e300}));
  std::string msg = user_error_of([&] { parse_npy(bytes, "big.npy"); });
  EXPECT_THAT(msg, HasSubstr("big.npy"));
  EXPECT_THAT(msg, HasSubstr("entry (1, 1)"));
  EXPECT_THAT(msg, HasSubstr("outside the float32 range"));
  // Just above FLT_MAX still rounds to FLT_MAX, as NumPy does.
  Array a = parse_npy(make_npy(dict("<f8", "(1,)"), raw<double>({3.4028235e38})), "edge.npy");
  EXPECT_EQ(a.data[0], std::numeric_limits<float>::max());
}

TEST(Npy, FortranOrder) {
  // A (2, 3) array [[0, 1, 2], [3, 4, 5]] stored column by column.
  Array a = parse_npy(make_npy(dict("<f4", "(2, 3)", true), raw<float>({0, 3, 1, 4, 2, 5})), "f.npy");
  EXPECT_EQ(a.shape, (Shape{2, 3}));
  EXPECT_EQ(a.data, (FloatData{0, 1, 2, 3, 4, 5}));
  // A (2, 3, 4) array whose entry (i, j, k) is 100i + 10j + k.
  std::vector<float> fdata;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) fdata.push_back(static_cast<float>(100 * i + 10 * j + k));
  FloatData want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(static_cast<float>(100 * i + 10 * j + k));
  std::string data = raw(fdata);
  Array b =
      parse_npy(make_npy("{'fortran_order': True, 'shape': (2, 3, 4), 'descr': '<f4'}", data), "f3.npy");
  EXPECT_EQ(b.data, want);
  // Fortran order with a converted dtype.
  Array c = parse_npy(make_npy(dict("<i2", "(2, 2)", true), raw<int16_t>({1, 3, 2, 4})), "f.npy");
  EXPECT_EQ(c.data, (FloatData{1, 2, 3, 4}));
}

TEST(Npy, UnsupportedDtype) {
  for (std::string descr : {"<c8", "|O", "<U5", "|S3", "<f2", "<M8[ns]"}) {
    std::string msg = user_error_of([&] { parse_npy(make_npy(dict(descr, "(1,)"), "12345678"), "t.npy"); });
    EXPECT_THAT(msg, HasSubstr("t.npy: unsupported dtype '" + descr + "'"));
    EXPECT_THAT(msg, HasSubstr("supported: '<f4'"));
  }
  std::string structured = "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (1,), }";
  std::string msg = user_error_of([&] { parse_npy(make_npy(structured, "12345678"), "s.npy"); });
  EXPECT_THAT(msg, HasSubstr("s.npy: unsupported dtype '[('a', '<f4'), ('b', '<i4')]'"));
}

TEST(Npy, EmptyFile) {
  std::string path = tmp_path("empty.npy");
  write_bytes(path, "");
  std::string msg = user_error_of([&] { read_npy(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("empty"));
}

TEST(Npy, BadMagic) {
  std::string path = tmp_path("magic.npy");
  write_bytes(path, "PK\x03\x04 this is a zip file");
  std::string msg = user_error_of([&] { read_npy(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": not a .npy file: bad magic"));
}

TEST(Npy, TruncatedHeader) {
  std::string full = make_npy(dict("<f4", "(2,)"), raw<float>({1, 2}));
  for (size_t len : {size_t{7}, size_t{9}, size_t{40}}) {
    std::string msg = user_error_of([&] { parse_npy(full.substr(0, len), "th.npy"); });
    EXPECT_THAT(msg, HasSubstr("th.npy: truncated .npy header")) << len;
  }
}

TEST(Npy, TruncatedData) {
  std::string path = tmp_path("short.npy");
  write_bytes(path, make_npy(dict("<f4", "(2, 3)"), raw<float>({1, 2, 3, 4, 5})));
  std::string msg = user_error_of([&] { read_npy(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": truncated data"));
  EXPECT_THAT(msg, HasSubstr("needs 24 bytes but the file has only 20"));
}

TEST(Npy, TrailingGarbage) {
  std::string msg = user_error_of([&] {
    parse_npy(make_npy(dict("<f4", "(2,)"), raw<float>({1, 2}) + "xyz"), "g.npy");
  });
  EXPECT_THAT(msg, HasSubstr("g.npy: 3 bytes of trailing garbage"));
}

TEST(Npy, NegativeShape) {
  std::string msg = user_error_of([&] { parse_npy(make_npy(dict("<f4", "(2, -3)"), ""), "neg.npy"); });
  EXPECT_THAT(msg, HasSubstr("neg.npy: malformed .npy header: negative extent -3"));
}

TEST(Npy, RankAboveEight) {
  std::string msg = user_error_of(
      [&] { parse_npy(make_npy(dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), "1234"), "r9.npy"); });
  EXPECT_THAT(msg, HasSubstr("r9.npy: array of rank 9 is not supported"));
}

TEST(Npy, AbsurdShapeIsRefusedQuickly) {
  auto start = std::chrono::steady_clock::now();
  std::string msg = user_error_of(
      [&] { parse_npy(make_npy(dict("<f4", "(100000, 100000, 100000)"), "1234"), "huge.npy"); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_THAT(msg, HasSubstr("huge.npy"));
  EXPECT_THAT(msg, HasSubstr("(100000, 100000, 100000)"));
  EXPECT_THAT(msg, HasSubstr("more than the memory budget"));
  EXPECT_LT(seconds, 1.0);
  // An extent too large for int64 at all.
  std::string msg2 =
      user_error_of([&] { parse_npy(make_npy(dict("<f4", "(99999999999999999999999,)"), ""), "x.npy"); });
  EXPECT_THAT(msg2, HasSubstr("x.npy: malformed .npy header"));
}

TEST(Npy, DataLengthCheckedBeforeAllocating) {
  // Within the memory limit, but the file holds far less than the shape says.
  LimitGuard guard;
  Limits::set_max_array_bytes(int64_t{1} << 40);
  std::string msg =
      user_error_of([&] { parse_npy(make_npy(dict("<f8", "(30000, 30000)"), "12345678"), "t.npy"); });
  EXPECT_THAT(msg, HasSubstr("t.npy: truncated data"));
}

TEST(Npy, MalformedHeaderDictionary) {
  struct Case {
    std::string dict, phrase;
  };
  std::vector<Case> cases = {
      {"{'descr': '<f4', 'shape': (2,), }", "missing key 'fortran_order'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'fortran_order': False, 'shape': (2,)}", "missing key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "'fortran_order' must be True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': 2}", "'shape' must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, a)}",
       "shape extent 'a' is not a valid integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "expected ',' or '}'"},
      {"['descr', '<f4']", "the header must start with '{'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "malformed .npy header"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "unexpected text after the header"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':' after key 'descr'"},
  };
  for (const Case& c : cases) {
    std::string msg = user_error_of([&] { parse_npy(make_npy(c.dict, raw<float>({1, 2})), "h.npy"); });
    EXPECT_THAT(msg, HasSubstr("h.npy: ")) << c.dict;
    EXPECT_THAT(msg, HasSubstr(c.phrase)) << c.dict;
  }
}

TEST(Npy, MissingFile) {
  std::string path = tmp_path("does_not_exist.npy");
  std::string msg = user_error_of([&] { read_npy(path); });
  EXPECT_THAT(msg, HasSubstr(path));
}

// ---------------------------------------------------------------------------
// .png

TEST(Png, RoundTrip8BitGray) {
  Array a = ramp({5, 7});
  std::string path = tmp_path("gray8.png");
  write_png(path, a);
  Array b = read_png(path);
  ASSERT_EQ(b.shape, (Shape{5, 7}));
  for (size_t i = 0; i < a.data.size(); ++i) EXPECT_NEAR(b.data[i], a.data[i], 0.5 / 255 + 1e-6) << i;
}

TEST(Png, RoundTrip16BitGray) {
  Array a = ramp({4, 9});
  std::string path = tmp_path("gray16.png");
  write_png(path, a, 16);
  Array b = read_png(path);
  ASSERT_EQ(b.shape, (Shape{4, 9}));
  for (size_t i = 0; i < a.data.size(); ++i) EXPECT_NEAR(b.data[i], a.data[i], 0.5 / 65535 + 1e-7) << i;
}

TEST(Png, RoundTripColour) {
  Array a = ramp({3, 4, 3});
  for (int depth : {8, 16}) {
    std::string path = tmp_path("rgb" + std::to_string(depth) + ".png");
    write_png(path, a, depth);
    Array b = read_png(path);
    ASSERT_EQ(b.shape, (Shape{3, 4, 3}));
    double tol = depth == 8 ? 1.0 / 255 : 1.0 / 65535;
    for (size_t i = 0; i < a.data.size(); ++i) EXPECT_NEAR(b.data[i], a.data[i], tol) << i;
  }
}

TEST(Png, SingleChannelShapeIsWrittenAsGray) {
  std::string path = tmp_path("one.png");
  write_png(path, ramp({2, 3, 1}));
  EXPECT_EQ(read_png(path).shape, (Shape{2, 3}));
}

TEST(Png, ClampsAndRounds) {
  std::string path = tmp_path("clamp.png");
  write_png(path, Array({1, 4}, {-1.0f, 2.0f, 0.5f, std::numeric_limits<float>::infinity()}));
  Array b = read_png(path);
  EXPECT_EQ(b.data, (FloatData{0.0f, 1.0f, 128 / 255.0f, 1.0f}));
}

TEST(Png, GrayAlphaAndRgbaDropAlpha) {
  const unsigned char ga[] = {10, 200, 20, 0, 30, 255, 40, 1};  // 2x2 gray+alpha
  std::string p1 = tmp_path("ga.png");
  ASSERT_TRUE(
      write_raw_png(p1.c_str(), 2, 2, 8, PNG_COLOR_TYPE_GRAY_ALPHA, ga, 4, PNG_INTERLACE_NONE, nullptr, 0));
  Array a = read_png(p1);
  EXPECT_EQ(a.shape, (Shape{2, 2}));
  EXPECT_EQ(a.data, (FloatData{10 / 255.f, 20 / 255.f, 30 / 255.f, 40 / 255.f}));

  const uint16_t rgba16[] = {0x0100, 0x0200, 0xffff, 0x0000};  // 1x1 RGBA, 16-bit, big-endian in the file
  unsigned char be[8];
  for (int i = 0; i < 4; ++i) {
    be[2 * i] = static_cast<unsigned char>(rgba16[i] >> 8);
    be[2 * i + 1] = static_cast<unsigned char>(rgba16[i] & 0xff);
  }
  std::string p2 = tmp_path("rgba16.png");
  ASSERT_TRUE(
      write_raw_png(p2.c_str(), 1, 1, 16, PNG_COLOR_TYPE_RGB_ALPHA, be, 8, PNG_INTERLACE_NONE, nullptr, 0));
  Array b = read_png(p2);
  EXPECT_EQ(b.shape, (Shape{1, 1, 3}));
  EXPECT_EQ(b.data, (FloatData{256 / 65535.f, 512 / 65535.f, 1.0f}));
}

TEST(Png, PaletteIsExpandedToRgb) {
  png_color palette[2] = {{255, 0, 0}, {0, 51, 255}};
  const unsigned char bits[] = {0b01000000};  // 2x1 image, 1-bit indices 0 and 1
  std::string path = tmp_path("pal.png");
  ASSERT_TRUE(
      write_raw_png(path.c_str(), 2, 1, 1, PNG_COLOR_TYPE_PALETTE, bits, 1, PNG_INTERLACE_NONE, palette, 2));
  Array a = read_png(path);
  EXPECT_EQ(a.shape, (Shape{1, 2, 3}));
  EXPECT_EQ(a.data, (FloatData{1, 0, 0, 0, 51 / 255.f, 1}));
}

TEST(Png, LowBitDepthGrayAndInterlace) {
  // 4x2, 1-bit: rows 1010, 0110.
  const unsigned char one[] = {0b10100000, 0b01100000};
  std::string p1 = tmp_path("bits1.png");
  ASSERT_TRUE(
      write_raw_png(p1.c_str(), 4, 2, 1, PNG_COLOR_TYPE_GRAY, one, 1, PNG_INTERLACE_ADAM7, nullptr, 0));
  Array a = read_png(p1);
  EXPECT_EQ(a.shape, (Shape{2, 4}));
  EXPECT_EQ(a.data, (FloatData{1, 0, 1, 0, 0, 1, 1, 0}));
  // 2x1, 4-bit: values 0x3 and 0xf -> 3/15 and 1.
  const unsigned char four[] = {0x3f};
  std::string p2 = tmp_path("bits4.png");
  ASSERT_TRUE(
      write_raw_png(p2.c_str(), 2, 1, 4, PNG_COLOR_TYPE_GRAY, four, 1, PNG_INTERLACE_NONE, nullptr, 0));
  Array b = read_png(p2);
  EXPECT_NEAR(b.data[0], 3 / 15.f, 1e-6);
  EXPECT_EQ(b.data[1], 1.0f);
}

TEST(Png, EmptyFile) {
  std::string path = tmp_path("empty.png");
  write_bytes(path, "");
  std::string msg = user_error_of([&] { read_png(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed PNG: the file is empty"));
}

TEST(Png, NotAPng) {
  std::string path = tmp_path("text.png");
  write_bytes(path, "hello, this is not an image");
  std::string msg = user_error_of([&] { read_png(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed PNG: not a PNG file"));
}

TEST(Png, Truncated) {
  std::string good = tmp_path("good.png");
  write_png(good, ramp({40, 50, 3}), 16);
  std::string bytes = read_bytes(good);
  for (size_t len : {size_t{8}, size_t{20}, size_t{60}, bytes.size() / 2, bytes.size() - 5}) {
    std::string path = tmp_path("trunc.png");
    write_bytes(path, bytes.substr(0, len));
    std::string msg = user_error_of([&] { read_png(path); });
    EXPECT_THAT(msg, HasSubstr(path + ": malformed PNG: ")) << len;
  }
}

TEST(Png, CorruptChunk) {
  std::string good = tmp_path("good2.png");
  write_png(good, ramp({10, 10}));
  std::string bytes = read_bytes(good);
  bytes[20] ^= 0x55;  // inside IHDR: the CRC no longer matches
  std::string path = tmp_path("crc.png");
  write_bytes(path, bytes);
  std::string msg = user_error_of([&] { read_png(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed PNG: "));
  EXPECT_THAT(msg, HasSubstr("CRC"));
}

TEST(Png, AllocationIsCheckedBeforeDecoding) {
  std::string path = tmp_path("alloc.png");
  write_png(path, ramp({100, 100}));
  LimitGuard guard;
  Limits::set_max_array_bytes(1000);
  std::string msg = user_error_of([&] { read_png(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("more than the memory budget"));
}

TEST(Png, WriteErrors) {
  std::string path = tmp_path("bad.png");
  EXPECT_THAT(user_error_of([&] {
                write_png(path, ramp({2, 2, 2}));
              }),
              HasSubstr(path + ": cannot write an array of shape (2, 2, 2) as a PNG"));
  EXPECT_THAT(user_error_of([&] { write_png(path, ramp({4})); }), HasSubstr("as a PNG"));
  EXPECT_THAT(user_error_of([&] { write_png(path, ramp({0, 4})); }), HasSubstr("empty image"));
  EXPECT_THAT(user_error_of([&] {
                write_png(path, ramp({2, 2}), 12);
              }),
              HasSubstr("bit depth must be 8 or 16"));
  Array nan = ramp({2, 2});
  nan.data[3] = std::nanf("");
  EXPECT_THAT(user_error_of([&] { write_png(path, nan); }), HasSubstr("entry (1, 1) is NaN"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_THAT(user_error_of([&] {
                write_png(tmp_path("no/such/dir/x.png"), ramp({2, 2}));
              }),
              HasSubstr("no/such/dir/x.png"));
}

// ---------------------------------------------------------------------------
// .tif / .tiff

TEST(Tiff, RoundTripFloatIsExact) {
  Array a = ramp({6, 5}, -100.0f, 1e6f);
  a.data[2] = std::numeric_limits<float>::denorm_min();
  std::string path = tmp_path("f.tif");
  write_tiff(path, a);
  Array b = read_tiff(path);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
}

TEST(Tiff, RoundTripColour) {
  Array a = ramp({7, 3, 3}, -1.0f, 2.0f);
  std::string path = tmp_path("rgb.tiff");
  write_tiff(path, a);
  Array b = read_tiff(path);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
  // (H, W, 1) is written as a single-sample image.
  write_tiff(path, ramp({2, 3, 1}));
  EXPECT_EQ(read_tiff(path).shape, (Shape{2, 3}));
}

TEST(Tiff, WriteLeavesNoTemporaryFile) {
  std::string path = tmp_path("clean/x.tif");
  std::filesystem::create_directories(tmp_path("clean"));
  write_tiff(path, ramp({2, 2}));
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp_path("clean"))) {
    (void)e;
    ++count;
  }
  EXPECT_EQ(count, 1);
}

TEST(Tiff, IntegerSamplesAreScaled) {
  TiffSpec s;
  s.width = 3;
  s.height = 1;
  s.bits = 8;
  std::string p8 = tmp_path("u8.tif");
  write_test_tiff(p8, s, raw<uint8_t>({0, 51, 255}));
  EXPECT_EQ(read_tiff(p8).data, (FloatData{0, 51 / 255.f, 1}));

  s.bits = 16;
  std::string p16 = tmp_path("u16.tif");
  write_test_tiff(p16, s, raw<uint16_t>({0, 1000, 65535}));
  Array b = read_tiff(p16);
  EXPECT_EQ(b.shape, (Shape{1, 3}));
  EXPECT_NEAR(b.data[1], 1000 / 65535.0, 1e-7);
  EXPECT_EQ(b.data[2], 1.0f);

  s.bits = 32;
  std::string p32 = tmp_path("u32.tif");
  write_test_tiff(p32, s, raw<uint32_t>({0, 2147483648u, 4294967295u}));
  Array c = read_tiff(p32);
  EXPECT_NEAR(c.data[1], 0.5, 1e-7);
  EXPECT_EQ(c.data[2], 1.0f);

  s.bits = 64;
  s.format = SAMPLEFORMAT_IEEEFP;
  std::string p64 = tmp_path("f64.tif");
  write_test_tiff(p64, s, raw<double>({-2.5, 0.125, 1e10}));
  EXPECT_EQ(read_tiff(p64).data, (FloatData{-2.5f, 0.125f, 1e10f}));
}

TEST(Tiff, RgbaDropsAlpha) {
  TiffSpec s;
  s.width = 2;
  s.height = 1;
  s.spp = 4;
  s.photometric = PHOTOMETRIC_RGB;
  std::string path = tmp_path("rgba.tif");
  write_test_tiff(path, s, raw<uint8_t>({255, 0, 51, 7, 0, 255, 0, 9}));
  Array a = read_tiff(path);
  EXPECT_EQ(a.shape, (Shape{1, 2, 3}));
  EXPECT_EQ(a.data, (FloatData{1, 0, 51 / 255.f, 0, 1, 0}));
}

TEST(Tiff, TiledAndSeparatePlanes) {
  const uint32_t w = 37, h = 20;
  std::vector<float> samples(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<float>(i) * 0.5f;
  TiffSpec s;
  s.width = w;
  s.height = h;
  s.spp = 3;
  s.bits = 32;
  s.format = SAMPLEFORMAT_IEEEFP;
  s.photometric = PHOTOMETRIC_RGB;
  for (uint32_t tile : {0u, 16u}) {
    for (uint16_t planar : {PLANARCONFIG_CONTIG, PLANARCONFIG_SEPARATE}) {
      s.tile = tile;
      s.planar = planar;
      std::string path = tmp_path("layout.tif");
      write_test_tiff(path, s, raw(samples));
      Array a = read_tiff(path);
      EXPECT_EQ(a.shape, (Shape{h, w, 3})) << tile << " " << planar;
      EXPECT_EQ(std::vector<float>(a.data.begin(), a.data.end()), samples) << "tile " << tile << " planar " << planar;
    }
  }
}

TEST(Tiff, CompressedStrips) {
  if (!TIFFIsCODECConfigured(COMPRESSION_LZW)) GTEST_SKIP() << "libtiff without LZW";
  TiffSpec s;
  s.width = 30;
  s.height = 10;
  s.bits = 16;
  s.compression = COMPRESSION_LZW;
  std::vector<uint16_t> v(300);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint16_t>(i * 200);
  std::string path = tmp_path("lzw.tif");
  write_test_tiff(path, s, raw(v));
  Array a = read_tiff(path);
  ASSERT_EQ(a.data.size(), 300u);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(a.data[i], v[i] / 65535.0, 1e-7);
}

TEST(Tiff, PagesOfOneShapeAreAStack) {
  std::string path = tmp_path("stack.tif");
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tif, nullptr);
  TiffSpec s;
  s.width = 3;
  s.height = 2;
  s.bits = 16;
  for (uint16_t page = 0; page < 4; ++page) {
    write_tiff_page(tif, s, raw<uint16_t>({0, 1, 2, 3, 4, static_cast<uint16_t>(65535 - page)}));
  }
  // A reduced-resolution page (a thumbnail) is not part of the stack.
  s.width = 1;
  s.height = 1;
  TIFFSetField(tif, TIFFTAG_SUBFILETYPE, FILETYPE_REDUCEDIMAGE);
  write_tiff_page(tif, s, raw<uint16_t>({7}));
  TIFFClose(tif);
  Array a = read_tiff(path);
  ASSERT_EQ(a.shape, (Shape{4, 2, 3}));
  for (int page = 0; page < 4; ++page) {
    EXPECT_FLOAT_EQ(a.data[static_cast<size_t>(page * 6 + 1)], 1.0f / 65535);
    EXPECT_FLOAT_EQ(a.data[static_cast<size_t>(page * 6 + 5)], static_cast<float>(65535 - page) / 65535);
  }
}

TEST(Tiff, PagesOfDifferentShapesAreAnError) {
  std::string path = tmp_path("pages.tif");
  TIFF* tif = TIFFOpen(path.c_str(), "w");
  ASSERT_NE(tif, nullptr);
  TiffSpec s;
  s.width = 2;
  s.height = 2;
  write_tiff_page(tif, s, raw<uint8_t>({255, 0, 0, 255}));
  s.width = 3;
  write_tiff_page(tif, s, raw<uint8_t>({1, 2, 3, 4, 5, 6}));
  TIFFClose(tif);
  EXPECT_THAT(user_error_of([&] { read_tiff(path); }),
              HasSubstr(path + ": page 1 has shape (2, 3), page 0 (2, 2): a stack needs pages of one shape"));
}

TEST(Tiff, StacksRoundTrip) {
  for (const Shape& shape : {Shape{5, 4, 6}, Shape{3, 4, 6, 3}, Shape{2, 3, 4, 1}, Shape{1, 4, 6}}) {
    Array a = ramp(shape, -2.0f, 3.0f);
    std::string path = tmp_path("stack_rt.tif");
    write_tiff(path, a);
    Array b = read_tiff(path);
    // (D, H, W, 1) reads back as (D, H, W); a one-page stack (1, H, W) too.
    EXPECT_EQ(b.data, a.data) << shape_to_string(shape);
    EXPECT_EQ(num_elements(b.shape), num_elements(a.shape));
    EXPECT_EQ(b.shape[0], a.shape[0] == 1 && shape.size() == 3 ? a.shape[1] : a.shape[0]);
  }
  EXPECT_THAT(user_error_of([&] { write_tiff(tmp_path("x.tif"), ramp({2, 3, 4, 5})); }),
              HasSubstr("a stack of pages (D, H, W) or (D, H, W, 1 | 3)"));
}

TEST(Tiff, MinIsWhiteIsInverted) {
  TiffSpec s;
  s.width = 2;
  s.height = 1;
  s.photometric = PHOTOMETRIC_MINISWHITE;
  std::string path = tmp_path("white.tif");
  write_test_tiff(path, s, raw<uint8_t>({0, 255}));
  EXPECT_EQ(read_tiff(path).data, (FloatData{1, 0}));
}

TEST(Tiff, UnsupportedSampleType) {
  TiffSpec s;
  s.width = 2;
  s.height = 1;
  s.bits = 16;
  s.format = SAMPLEFORMAT_INT;
  std::string path = tmp_path("i16.tif");
  write_test_tiff(path, s, raw<int16_t>({-1, 1}));
  std::string msg = user_error_of([&] { read_tiff(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": unsupported TIFF sample type: 16-bit signed integer"));
}

TEST(Tiff, EmptyFile) {
  std::string path = tmp_path("empty.tif");
  write_bytes(path, "");
  EXPECT_THAT(user_error_of([&] { read_tiff(path); }),
              HasSubstr(path + ": malformed TIFF: the file is empty"));
}

TEST(Tiff, NotATiff) {
  std::string path = tmp_path("text.tif");
  write_bytes(path, "this is not a TIFF file at all");
  std::string msg = user_error_of([&] { read_tiff(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed TIFF: "));
  EXPECT_THAT(msg, Not(HasSubstr("cannot open the file as a TIFF")));  // libtiff's own reason is shown
}

TEST(Tiff, Truncated) {
  std::string good = tmp_path("good.tif");
  write_tiff(good, ramp({50, 40}));
  std::string bytes = read_bytes(good);
  // Our writer puts the directory after the data, so any cut loses it; also
  // cut just the pixel data of a file whose directory comes first.
  for (size_t len : {size_t{4}, size_t{8}, size_t{100}, bytes.size() / 2, bytes.size() - 10}) {
    std::string path = tmp_path("trunc.tif");
    write_bytes(path, bytes.substr(0, len));
    std::string msg = user_error_of([&] { read_tiff(path); });
    EXPECT_THAT(msg, HasSubstr(path + ": malformed TIFF: ")) << len;
  }
}

/// A hand-made little-endian 100 x 100 8-bit TIFF with one uncompressed strip
/// of 10000 bytes at `strip_offset`, followed by `padding` bytes of pixels.
std::string hand_made_tiff(uint32_t strip_offset, size_t padding) {
  std::string t = "II*";
  t += '\0';
  t += raw<uint32_t>({8});
  const uint16_t n = 8;
  t += raw<uint16_t>({n});
  auto entry = [](uint16_t tag, uint16_t type, uint32_t count, uint32_t value) {
    return raw<uint16_t>({tag, type}) + raw<uint32_t>({count, value});
  };
  t += entry(256, 4, 1, 100);           // ImageWidth
  t += entry(257, 4, 1, 100);           // ImageLength
  t += entry(258, 3, 1, 8);             // BitsPerSample
  t += entry(259, 3, 1, 1);             // Compression: none
  t += entry(262, 3, 1, 1);             // Photometric: min-is-black
  t += entry(273, 4, 1, strip_offset);  // StripOffsets
  t += entry(278, 4, 1, 100);           // RowsPerStrip
  t += entry(279, 4, 1, 10000);         // StripByteCounts
  t += raw<uint32_t>({0});
  return t + std::string(padding, '\x7f');
}

TEST(Tiff, HandMadeFileReads) {
  std::string path = tmp_path("hand.tif");
  write_bytes(path, hand_made_tiff(8 + 2 + 8 * 12 + 4, 10000));
  Array a = read_tiff(path);
  EXPECT_EQ(a.shape, (Shape{100, 100}));
  EXPECT_EQ(a.data[9999], 127 / 255.f);
}

TEST(Tiff, TruncatedPixelData) {
  // The directory is intact but the strip runs past the end of the file.
  std::string path = tmp_path("short.tif");
  write_bytes(path, hand_made_tiff(5000, 10000));
  std::string msg = user_error_of([&] { read_tiff(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed TIFF: cannot read strip 0"));
  // A file much shorter than the uncompressed image is refused before allocating.
  write_bytes(path, hand_made_tiff(8 + 2 + 8 * 12 + 4, 500));
  msg = user_error_of([&] { read_tiff(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": malformed TIFF: the file is too short"));
}

TEST(Tiff, AllocationIsCheckedBeforeDecoding) {
  std::string path = tmp_path("alloc.tif");
  write_tiff(path, ramp({100, 100}));
  LimitGuard guard;
  Limits::set_max_array_bytes(1000);
  std::string msg = user_error_of([&] { read_tiff(path); });
  EXPECT_THAT(msg, HasSubstr(path));
  EXPECT_THAT(msg, HasSubstr("more than the memory budget"));
}

TEST(Tiff, WriteErrors) {
  std::string path = tmp_path("bad.tif");
  EXPECT_THAT(user_error_of([&] {
                write_tiff(path, ramp({2, 2, 4, 2}));
              }),
              HasSubstr(path + ": cannot write an array of shape (2, 2, 4, 2) as a TIFF"));
  EXPECT_THAT(user_error_of([&] { write_tiff(path, ramp({4})); }), HasSubstr("as a TIFF"));
  EXPECT_THAT(user_error_of([&] { write_tiff(path, ramp({3, 0})); }), HasSubstr("empty image"));
  std::string msg = user_error_of([&] { write_tiff(tmp_path("no/such/dir/x.tif"), ramp({2, 2})); });
  EXPECT_THAT(msg, HasSubstr("no/such/dir/x.tif: cannot write file"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---------------------------------------------------------------------------
// Dispatch by extension, and the finiteness check.

TEST(ArrayIo, HasArrayExtension) {
  EXPECT_TRUE(has_array_extension("a.npy"));
  EXPECT_TRUE(has_array_extension("dir.x/a.PNG"));
  EXPECT_TRUE(has_array_extension("a.Tif"));
  EXPECT_TRUE(has_array_extension("a.tiff"));
  EXPECT_FALSE(has_array_extension("a.jpg"));
  EXPECT_FALSE(has_array_extension("npy"));
  EXPECT_FALSE(has_array_extension("a.npy.txt"));
}

TEST(ArrayIo, RoundTripEachFormat) {
  Array gray = ramp({4, 6});
  Array colour = ramp({4, 6, 3});
  for (std::string name : {"d.npy", "d.NPY", "d.tif", "d.TIFF"}) {
    std::string path = tmp_path(name);
    save_array(path, colour);
    Array b = load_array(path);
    EXPECT_EQ(b.shape, colour.shape) << name;
    EXPECT_EQ(b.data, colour.data) << name;
  }
  std::string path = tmp_path("d.Png");
  save_array(path, gray);
  Array b = load_array(path);
  EXPECT_EQ(b.shape, gray.shape);
  for (size_t i = 0; i < gray.data.size(); ++i) EXPECT_NEAR(b.data[i], gray.data[i], 1.0 / 255);
}

TEST(ArrayIo, UnknownExtension) {
  std::string path = tmp_path("data.csv");
  write_bytes(path, "1,2,3\n");
  std::string msg = user_error_of([&] { load_array(path); });
  EXPECT_THAT(msg, HasSubstr(path + ": unknown array file extension '.csv'"));
  EXPECT_THAT(msg, HasSubstr(".npy, .png, .tif, .tiff"));
  EXPECT_THAT(user_error_of([&] {
                save_array(tmp_path("out.jpg"), ramp({2, 2}));
              }),
              HasSubstr("unknown array file extension '.jpg'"));
  EXPECT_THAT(user_error_of([&] { load_array(tmp_path("noext")); }), HasSubstr("no file extension"));
}

TEST(ArrayIo, NanAndInfAreReportedWithTheirIndex) {
  struct Case {
    float value;
    std::string word;
  };
  for (const Case& c : {Case{std::nanf(""), "NaN"}, Case{std::numeric_limits<float>::infinity(), "Inf"},
                        Case{-std::numeric_limits<float>::infinity(), "-Inf"}}) {
    Array a = ramp({2, 4, 3});
    a.data[1 * 12 + 2 * 3 + 1] = c.value;
    a.data[23] = std::nanf("");  // a later bad entry is not the one reported
    for (std::string name : {"bad.npy", "bad.tif"}) {
      std::string path = tmp_path(name);
      save_array(path, a);
      std::string msg = user_error_of([&] { load_array(path); });
      EXPECT_THAT(msg, HasSubstr(path + ": entry (1, 2, 1) is " + c.word + "; data must be finite"));
    }
  }
  Array v({3}, {0, 1, std::nanf("")});
  std::string path = tmp_path("vec.npy");
  save_array(path, v);
  EXPECT_THAT(user_error_of([&] { load_array(path); }), HasSubstr("entry (2,) is NaN"));
  Array s({}, {std::numeric_limits<float>::infinity()});
  save_array(path, s);
  EXPECT_THAT(user_error_of([&] { load_array(path); }), HasSubstr("entry () is Inf"));
}

TEST(ArrayIo, F8InfinityIsCaughtByTheFiniteCheck) {
  std::string path = tmp_path("inf64.npy");
  write_bytes(path,
              make_npy(dict("<f8", "(2,)"), raw<double>({1.0, -std::numeric_limits<double>::infinity()})));
  EXPECT_THAT(user_error_of([&] { load_array(path); }), HasSubstr(path + ": entry (1,) is -Inf"));
}

TEST(ArrayIo, EmptyFileForEachFormat) {
  for (std::string name : {"e.npy", "e.png", "e.tif", "e.tiff"}) {
    std::string path = tmp_path(name);
    write_bytes(path, "");
    std::string msg = user_error_of([&] { load_array(path); });
    EXPECT_THAT(msg, HasSubstr(path + ": ")) << name;
    EXPECT_THAT(msg, HasSubstr("empty")) << name;
  }
}

TEST(ArrayIo, IndexToString) {
  EXPECT_EQ(index_to_string({2, 3}, 4), "(1, 1)");
  EXPECT_EQ(index_to_string({5}, 4), "(4,)");
  EXPECT_EQ(index_to_string({}, 0), "()");
  EXPECT_EQ(index_to_string({2, 3, 4}, 23), "(1, 2, 3)");
}

// A 146-byte deflate TIFF that declares a 20000 x 20000 float32 image (1.6 GB):
// refused from its header, before anything is allocated (issue 27).
TEST(Tiff, ACompressedImageTooLargeForItsFileIsRefusedBeforeAllocating) {
  std::string b = "II*";
  b += '\0';
  auto u16 = [&](uint32_t v) { b += static_cast<char>(v & 0xff), b += static_cast<char>((v >> 8) & 0xff); };
  auto u32 = [&](uint32_t v) { u16(v & 0xffff), u16(v >> 16); };
  u32(8);  // the first IFD
  const uint32_t data_at = 8 + 2 + 10 * 12 + 4;
  const std::pair<uint16_t, uint32_t> tags[] = {{256, 20000}, {257, 20000}, {258, 32}, {259, 8}, {262, 1},
                                                {273, data_at}, {277, 1}, {278, 20000}, {279, 12}, {339, 3}};
  u16(10);
  for (const auto& [tag, value] : tags) {
    u16(tag);
    const bool is_short = tag == 258 || tag == 259 || tag == 262 || tag == 277 || tag == 339;
    u16(is_short ? 3 : 4);  // SHORT or LONG
    u32(1);
    if (is_short) {
      u16(value);
      u16(0);
    } else {
      u32(value);
    }
  }
  u32(0);                     // no next IFD
  b += std::string(12, 'x');  // the "compressed" strip
  ASSERT_EQ(b.size(), 146u);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THAT(user_error_of([&] { decode_tiff(b, "big.tif"); }), HasSubstr("cannot hold a compressed"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

}  // namespace
}  // namespace proxc::internal::io
