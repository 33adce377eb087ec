#include "io/hdf5_layout.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "support/error.h"

namespace proxc {

namespace {

// A positive decimal integer of at most 18 digits, or -1.
int64_t positive_integer(const std::string& s) {
  if (s.empty() || s.size() > 18) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v > 0 ? v : -1;
}

}  // namespace

SaveOptions parse_save_options(const std::string& spec, const std::string& what) {
  SaveOptions o;
  bool contiguous = false;
  std::istringstream parts(spec);
  std::string part;
  int count = 0;
  while (std::getline(parts, part, ',')) {
    ++count;
    const size_t eq = part.find('=');
    const std::string key = part.substr(0, eq), value = eq == std::string::npos ? "" : part.substr(eq + 1);
    const bool has_value = eq != std::string::npos;
    if (key == "contiguous" && !has_value) {
      contiguous = true;
    } else if (key == "shuffle" && !has_value) {
      o.shuffle = true;
    } else if (key == "gzip") {
      o.gzip = 4;  // h5py's compression_opts default
      if (has_value) {
        const int64_t level = positive_integer(value);
        user_assert(level >= 1 && level <= 9) << what << " '" << spec << "': gzip=" << value
                                               << ": the level is 1 (fastest) to 9 (smallest)";
        o.gzip = static_cast<int>(level);
      }
    } else if (key == "chunks" && has_value) {
      o.chunked = true;
      if (value == "auto") continue;
      std::istringstream extents(value);
      std::string e;
      while (std::getline(extents, e, 'x')) {
        const int64_t v = positive_integer(e);
        user_assert(v > 0) << what << " '" << spec << "': chunks=" << value
                           << ": the chunk shape is positive extents joined by 'x' (chunks=64x64), or chunks=auto";
        o.chunks.push_back(v);
      }
      user_assert(!o.chunks.empty() && value.back() != 'x')
          << what << " '" << spec << "': chunks=" << value
          << ": the chunk shape is positive extents joined by 'x' (chunks=64x64), or chunks=auto";
    } else {
      user_error << what << " '" << spec << "': '" << part
                 << "' is not a layout; the parts are chunks=AxB (or chunks=auto), gzip or gzip=1..9, shuffle, or "
                    "contiguous alone";
    }
  }
  user_assert(count > 0) << what << " is empty; the parts are chunks=AxB (or chunks=auto), gzip or gzip=1..9, "
                                    "shuffle, or contiguous alone";
  user_assert(!contiguous || o.is_default())
      << what << " '" << spec << "': contiguous storage has no chunks and no filters";
  return o;
}

namespace internal::io {

std::vector<int64_t> choose_chunks(const Shape& shape) {
  // The sizes h5py's guess_chunk works with (h5py/_hl/filters.py).
  constexpr double kBase = 16 * 1024, kMin = 8 * 1024, kMax = 1024 * 1024;
  std::vector<int64_t> chunks(shape.begin(), shape.end());
  auto bytes = [&] {
    double b = 4;
    for (int64_t c : chunks) b *= static_cast<double>(c);
    return b;
  };
  const double target = std::min(kMax, std::max(kMin, kBase * std::pow(2.0, std::log10(bytes() / (1024.0 * 1024.0)))));
  for (size_t turn = 0; !chunks.empty(); ++turn) {
    const double b = bytes();
    if ((b < target || std::fabs(b - target) / target < 0.5) && b < kMax) break;
    if (b == 4) break;  // one element a chunk
    int64_t& c = chunks[turn % chunks.size()];
    c = (c + 1) / 2;
  }
  return chunks;
}

Hdf5Layout resolve_hdf5_layout(const SaveOptions& options, const Shape& shape, const std::string& where) {
  Hdf5Layout l;
  user_assert(options.gzip >= 0 && options.gzip <= 9)
      << where << ": gzip level " << options.gzip << ": the level is 1 (fastest) to 9 (smallest), or 0 for none";
  if (!options.chunks.empty()) {
    user_assert(options.chunks.size() == shape.size())
        << where << ": the chunk shape " << shape_to_string(options.chunks) << " has " << options.chunks.size()
        << " axes and the array " << shape_to_string(shape) << " has " << shape.size();
    double bytes = 4;
    for (size_t k = 0; k < shape.size(); ++k) {
      user_assert(options.chunks[k] >= 1 && options.chunks[k] <= std::max<int64_t>(shape[k], 1))
          << where << ": the chunk shape " << shape_to_string(options.chunks) << " does not fit the array "
          << shape_to_string(shape) << " (axis " << k << ": each extent is 1 to the array's)";
      bytes *= static_cast<double>(options.chunks[k]);
    }
    user_assert(bytes < 4294967296.0) << where << ": the chunk shape " << shape_to_string(options.chunks)
                                      << " makes chunks of " << bytes << " bytes; HDF5's limit is 4 GiB";
  }
  if (options.is_default()) return l;
  bool empty = shape.empty();
  for (int64_t e : shape) empty = empty || e == 0;
  if (empty) return l;  // nothing to chunk or compress
  l.chunks = options.chunks.empty() ? choose_chunks(shape) : options.chunks;
  l.gzip = options.gzip;
  l.shuffle = options.shuffle;
  return l;
}

}  // namespace internal::io
}  // namespace proxc
