#include "io/npy.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>

#include "support/error.h"
#include "support/file_util.h"

namespace proxc::internal::io {

namespace {

constexpr int kMaxRank = 8;
constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr const char* kSupportedDtypes =
    "'<f4', '<f8', '|u1', '|i1', '<u2', '<i2', '<u4', '<i4', '<u8', '<i8', '|b1', "
    "or the same in big-endian order";

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool host_is_little_endian() {
  uint16_t x = 1;
  unsigned char c;
  std::memcpy(&c, &x, 1);
  return c == 1;
}

/// A printable, shortened copy of `s` for messages.
std::string printable(const std::string& s, size_t max_len = 60) {
  std::string out;
  for (char ch : s) {
    unsigned char u = static_cast<unsigned char>(ch);
    out += (u < 0x20 || u >= 0x7f) ? '?' : ch;
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
  }
  return out;
}

/// A value of the header dictionary. Only the kinds the .npy header uses are
/// decoded; anything else (lists, dicts, numbers) is kept as raw text.
struct HeaderValue {
  enum Kind { kString, kBool, kTuple, kOther } kind = kOther;
  std::string str;                 // kString: the contents
  bool b = false;                  // kBool
  std::vector<std::string> items;  // kTuple: the raw text of each item
  std::string raw;                 // the value's text as written
};

/// A hand-written parser for the Python literal dictionary in a .npy header,
/// e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }".
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  /// Parses the whole header; returns the key/value pairs in order.
  std::vector<std::pair<std::string, HeaderValue>> parse_dict() {
    std::vector<std::pair<std::string, HeaderValue>> out;
    skip_ws();
    expect('{', "the header must start with '{'");
    for (;;) {
      skip_ws();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      user_assert(peek() == '\'' || peek() == '"')
          << where() << "expected a quoted key or '}' but found " << describe_here();
      std::string key = parse_string();
      skip_ws();
      expect(':', "expected ':' after key '" + printable(key) + "'");
      skip_ws();
      HeaderValue v = parse_value();
      out.emplace_back(key, v);
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      user_assert(peek() == '}') << where() << "expected ',' or '}' after the value of '" << printable(key)
                                 << "' but found " << describe_here();
    }
    // Only padding may follow the dictionary.
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      user_assert(c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\0')
          << where() << "unexpected text after the header dictionary: '" << printable(s_.substr(pos_), 20)
          << "'";
      ++pos_;
    }
    return out;
  }

 private:
  std::string where() const { return path_ + ": malformed .npy header: "; }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool at_end() const { return pos_ >= s_.size(); }

  std::string describe_here() const {
    if (at_end()) return "the end of the header";
    return "'" + printable(s_.substr(pos_, 1)) + "'";
  }

  void skip_ws() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const std::string& what) {
    user_assert(peek() == c && !at_end()) << where() << what << " (found " << describe_here() << ")";
    ++pos_;
  }

  std::string parse_string() {
    char quote = s_[pos_++];
    std::string out;
    for (;;) {
      user_assert(!at_end()) << where() << "unterminated string";
      char c = s_[pos_++];
      if (c == quote) break;
      if (c == '\\') {
        user_assert(!at_end()) << where() << "unterminated string";
        c = s_[pos_++];
      }
      out += c;
    }
    return out;
  }

  /// Skips a bracketed or bare value, respecting quotes; returns its text.
  std::string skip_other() {
    size_t start = pos_;
    int depth = 0;
    while (!at_end()) {
      char c = s_[pos_];
      if (c == '\'' || c == '"') {
        parse_string();
        continue;
      }
      if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) break;
        --depth;
      } else if (c == ',' && depth == 0) {
        break;
      }
      ++pos_;
    }
    user_assert(depth == 0) << where() << "unbalanced brackets";
    std::string raw = s_.substr(start, pos_ - start);
    while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\t')) raw.pop_back();
    return raw;
  }

  HeaderValue parse_value() {
    HeaderValue v;
    size_t start = pos_;
    char c = peek();
    user_assert(!at_end()) << where() << "missing value at the end of the header";
    if (c == '\'' || c == '"') {
      v.kind = HeaderValue::kString;
      v.str = parse_string();
    } else if (s_.compare(pos_, 4, "True") == 0 && !is_ident(pos_ + 4)) {
      v.kind = HeaderValue::kBool;
      v.b = true;
      pos_ += 4;
    } else if (s_.compare(pos_, 5, "False") == 0 && !is_ident(pos_ + 5)) {
      v.kind = HeaderValue::kBool;
      v.b = false;
      pos_ += 5;
    } else if (c == '(') {
      v.kind = HeaderValue::kTuple;
      ++pos_;
      for (;;) {
        skip_ws();
        user_assert(!at_end()) << where() << "unterminated tuple";
        if (peek() == ')') {
          ++pos_;
          break;
        }
        std::string item = skip_other();
        user_assert(!item.empty()) << where() << "empty item in a tuple (found " << describe_here() << ")";
        v.items.push_back(item);
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        user_assert(peek() == ')') << where() << "expected ',' or ')' in a tuple but found "
                                   << describe_here();
      }
    } else {
      v.kind = HeaderValue::kOther;
      skip_other();
    }
    v.raw = s_.substr(start, pos_ - start);
    return v;
  }

  bool is_ident(size_t p) const {
    if (p >= s_.size()) return false;
    char c = s_[p];
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

/// A supported element type of a .npy file.
struct Dtype {
  char kind = 'f';  // 'f', 'i', 'u' or 'b'
  int size = 4;     // bytes
  bool big_endian = false;
};

bool parse_dtype(const std::string& descr, Dtype* out) {
  if (descr.empty()) return false;
  size_t p = 0;
  char order = '=';
  if (descr[0] == '<' || descr[0] == '>' || descr[0] == '|' || descr[0] == '=') {
    order = descr[0];
    p = 1;
  }
  if (p >= descr.size()) return false;
  char kind = descr[p++];
  std::string digits = descr.substr(p);
  if (digits.empty() || digits.size() > 2 || !std::all_of(digits.begin(), digits.end(), is_digit)) {
    return false;
  }
  int size = std::stoi(digits);
  bool ok = (kind == 'f' && (size == 4 || size == 8)) ||
            ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
            (kind == 'b' && size == 1);
  if (!ok) return false;
  out->kind = kind;
  out->size = size;
  out->big_endian = order == '>' || ((order == '=' || order == '|') && !host_is_little_endian());
  return true;
}

/// Parses one shape extent as written in the tuple ("12", "12L").
bool parse_extent(const std::string& text, int64_t* out, bool* negative) {
  std::string t = text;
  *negative = false;
  if (!t.empty() && (t.back() == 'L' || t.back() == 'l')) t.pop_back();
  if (!t.empty() && t[0] == '-') {
    *negative = true;
    t = t.substr(1);
  }
  if (t.empty() || t.size() > 18 || !std::all_of(t.begin(), t.end(), is_digit)) return false;
  *out = std::stoll(t);
  if (*negative) *out = -*out;
  return true;
}

template <typename T>
T load_value(const unsigned char* p, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

/// Converts every element to float32 in C order. With `fortran`, the file's
/// data is in Fortran order and is permuted while converting.
template <typename T, typename F>
void convert_all(const unsigned char* data, bool swap, const Shape& shape, bool fortran, float* out,
                 int64_t n, F&& to_float) {
  if (!fortran || shape.size() < 2) {
    for (int64_t k = 0; k < n; ++k) {
      out[k] = to_float(load_value<T>(data + k * sizeof(T), swap), k);
    }
    return;
  }
  // Walk the C-order multi-index, keeping the Fortran-order offset in step.
  const int r = static_cast<int>(shape.size());
  std::vector<int64_t> fstride(r), idx(r, 0);
  fstride[0] = 1;
  for (int ax = 1; ax < r; ++ax) fstride[ax] = fstride[ax - 1] * shape[ax - 1];
  int64_t off = 0;
  for (int64_t k = 0; k < n; ++k) {
    out[k] = to_float(load_value<T>(data + off * sizeof(T), swap), k);
    for (int ax = r - 1; ax >= 0; --ax) {
      if (++idx[ax] < shape[ax]) {
        off += fstride[ax];
        break;
      }
      off -= fstride[ax] * (shape[ax] - 1);
      idx[ax] = 0;
    }
  }
}

}  // namespace

Array parse_npy(const std::string& bytes, const std::string& path) {
  user_assert(!bytes.empty()) << path << ": not a .npy file: the file is empty";
  user_assert(bytes.size() >= kMagicLen && std::memcmp(bytes.data(), kMagic, kMagicLen) == 0)
      << path << ": not a .npy file: bad magic string (expected \"\\x93NUMPY\")";
  user_assert(bytes.size() >= kMagicLen + 2)
      << path << ": truncated .npy header (the file ends after the magic)";
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  user_assert((major == 1 || major == 2 || major == 3) && minor == 0)
      << path << ": unsupported .npy format version " << major << "." << minor
      << " (supported: 1.0, 2.0, 3.0)";
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t preamble = kMagicLen + 2 + len_bytes;
  user_assert(bytes.size() >= preamble) << path << ": truncated .npy header (the file ends in the preamble)";
  uint64_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) {
    header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[kMagicLen + 2 + i])) << (8 * i);
  }
  const uint64_t after_preamble = bytes.size() - preamble;
  user_assert(header_len <= after_preamble)
      << path << ": truncated .npy header: the header should be " << header_len
      << " bytes long but the file has only " << after_preamble << " bytes after the preamble";
  const std::string header = bytes.substr(preamble, header_len);

  // The header dictionary.
  HeaderParser parser(header, path);
  auto entries = parser.parse_dict();
  const HeaderValue* descr = nullptr;
  const HeaderValue* fortran = nullptr;
  const HeaderValue* shape_v = nullptr;
  for (const auto& [key, value] : entries) {
    const HeaderValue** slot = key == "descr"           ? &descr
                               : key == "fortran_order" ? &fortran
                               : key == "shape"         ? &shape_v
                                                        : nullptr;
    user_assert(slot) << path << ": malformed .npy header: unexpected key '" << printable(key)
                      << "' (expected 'descr', 'fortran_order' and 'shape')";
    user_assert(!*slot) << path << ": malformed .npy header: duplicate key '" << key << "'";
    *slot = &value;
  }
  user_assert(descr) << path << ": malformed .npy header: missing key 'descr'";
  user_assert(fortran) << path << ": malformed .npy header: missing key 'fortran_order'";
  user_assert(shape_v) << path << ": malformed .npy header: missing key 'shape'";

  Dtype dtype;
  user_assert(descr->kind == HeaderValue::kString && parse_dtype(descr->str, &dtype))
      << path << ": unsupported dtype '"
      << printable(descr->kind == HeaderValue::kString ? descr->str : descr->raw)
      << "' (supported: " << kSupportedDtypes << ")";
  user_assert(fortran->kind == HeaderValue::kBool)
      << path << ": malformed .npy header: 'fortran_order' must be True or False, not '"
      << printable(fortran->raw) << "'";
  user_assert(shape_v->kind == HeaderValue::kTuple)
      << path << ": malformed .npy header: 'shape' must be a tuple of integers, not '"
      << printable(shape_v->raw) << "'";
  user_assert(static_cast<int>(shape_v->items.size()) <= kMaxRank)
      << path << ": array of rank " << shape_v->items.size() << " is not supported (the maximum rank is "
      << kMaxRank << ")";
  Shape shape;
  for (const std::string& item : shape_v->items) {
    int64_t e = 0;
    bool negative = false;
    user_assert(parse_extent(item, &e, &negative))
        << path << ": malformed .npy header: shape extent '" << printable(item)
        << "' is not a valid integer (shape " << printable(shape_v->raw) << ")";
    user_assert(!negative) << path << ": malformed .npy header: negative extent " << e << " in shape "
                           << printable(shape_v->raw);
    shape.push_back(e);
  }

  // Sizes: refuse absurd arrays before allocating, then compare with the file.
  check_allocation(shape, path + ": .npy array");
  const int64_t n = num_elements(shape);
  const uint64_t need = static_cast<uint64_t>(n) * static_cast<uint64_t>(dtype.size);
  const uint64_t have = after_preamble - header_len;
  user_assert(have >= need) << path << ": truncated data: shape " << shape_to_string(shape) << " of dtype '"
                            << descr->str << "' needs " << need << " bytes but the file has only " << have
                            << " bytes after the header";
  user_assert(have == need) << path << ": " << (have - need)
                            << " bytes of trailing garbage after the array data (shape "
                            << shape_to_string(shape) << " of dtype '" << descr->str << "' needs " << need
                            << " bytes)";

  Array out;
  out.shape = shape;
  out.data.resize(static_cast<size_t>(n));
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data()) + preamble + header_len;
  const bool swap = dtype.big_endian == host_is_little_endian();
  const bool f_order = fortran->b;
  float* dst = out.data.data();
  auto as_float = [](auto v, int64_t) { return static_cast<float>(v); };
  switch (dtype.kind) {
    case 'f':
      if (dtype.size == 4) {
        convert_all<float>(data, swap, shape, f_order, dst, n, as_float);
      } else {
        // Values beyond this bound round to infinity in float32.
        const double limit = static_cast<double>(FLT_MAX) + std::ldexp(1.0, 103);
        convert_all<double>(data, swap, shape, f_order, dst, n, [&](double v, int64_t k) {
          if (std::isfinite(v) && std::fabs(v) >= limit) {
            std::ostringstream s;
            s.precision(17);
            s << v;
            user_error << path << ": entry " << index_to_string(shape, k) << " = " << s.str()
                       << " is outside the float32 range";
          }
          if (std::fabs(v) > FLT_MAX && std::isfinite(v)) return v > 0 ? FLT_MAX : -FLT_MAX;
          return static_cast<float>(v);
        });
      }
      break;
    case 'b':
      convert_all<uint8_t>(data, swap, shape, f_order, dst, n,
                           [](uint8_t v, int64_t) { return v ? 1.0f : 0.0f; });
      break;
    case 'i':
      switch (dtype.size) {
        case 1:
          convert_all<int8_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        case 2:
          convert_all<int16_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        case 4:
          convert_all<int32_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        default:
          convert_all<int64_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
      }
      break;
    default:  // 'u'
      switch (dtype.size) {
        case 1:
          convert_all<uint8_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        case 2:
          convert_all<uint16_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        case 4:
          convert_all<uint32_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
        default:
          convert_all<uint64_t>(data, swap, shape, f_order, dst, n, as_float);
          break;
      }
      break;
  }
  return out;
}

std::string encode_npy(const Array& a) {
  internal_assert(static_cast<int64_t>(a.data.size()) == num_elements(a.shape))
      << "array data size " << a.data.size() << " does not match shape " << shape_to_string(a.shape);
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_to_string(a.shape) + ", }";
  // Version 1.0 has a 2-byte header length; fall back to 2.0 for huge headers.
  size_t preamble = 10;
  int major = 1;
  auto padded_len = [&](size_t pre) {
    size_t total = pre + dict.size() + 1;  // +1 for the final newline
    return ((total + 63) / 64) * 64 - pre;
  };
  size_t header_len = padded_len(preamble);
  if (header_len > 0xffff) {
    preamble = 12;
    major = 2;
    header_len = padded_len(preamble);
  }
  std::string out;
  out.reserve(preamble + header_len + a.data.size() * 4);
  out.append(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  const size_t data_start = out.size();
  out.resize(data_start + a.data.size() * 4);
  if (!a.data.empty()) std::memcpy(&out[data_start], a.data.data(), a.data.size() * 4);
  if (!host_is_little_endian()) {
    for (size_t i = data_start; i < out.size(); i += 4) std::reverse(&out[i], &out[i] + 4);
  }
  return out;
}

Array read_npy(const std::string& path) {
  // The largest array allowed, as float64 (8 bytes for each of its float32
  // values), and a header: a larger file is refused before it is read.
  const double most = 2.0 * static_cast<double>(Limits::max_array_bytes()) + (1 << 20);
  return parse_npy(read_file(path, static_cast<int64_t>(std::min(most, 9.0e18))), path);
}

void write_npy(const std::string& path, const Array& a) { write_file_atomic(path, encode_npy(a)); }

}  // namespace proxc::internal::io
