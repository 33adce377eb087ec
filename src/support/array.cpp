#include "support/array.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <sstream>

#include "support/error.h"

namespace proxc::internal {

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) {
    user_assert(e >= 0) << "negative extent in shape " << shape_to_string(shape);
    if (e != 0 && n > std::numeric_limits<int64_t>::max() / e) {
      user_error << "shape " << shape_to_string(shape) << " has too many elements to address";
    }
    n *= e;
  }
  return n;
}

std::string index_to_string(const Shape& shape, int64_t flat_index) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t ax = shape.size(); ax-- > 0;) {
    if (shape[ax] > 0) {
      idx[ax] = flat_index % shape[ax];
      flat_index /= shape[ax];
    }
  }
  return shape_to_string(idx);
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s << ", ";
    s << shape[i];
  }
  if (shape.size() == 1) s << ",";
  s << ")";
  return s.str();
}

Array::Array(Shape s) : shape(std::move(s)), data(static_cast<size_t>(num_elements(shape)), 0.0f) {}

Array::Array(Shape s, FloatData d) : shape(std::move(s)), data(std::move(d)) {
  internal_assert(static_cast<int64_t>(data.size()) == num_elements(shape))
      << "array data size " << data.size() << " does not match shape " << shape_to_string(shape);
}

int64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{1} << 34;
  return static_cast<int64_t>(pages) * page;
}

int64_t available_memory_bytes() {
  // MemAvailable: what the kernel can give without swapping (free memory
  // and the page cache it may drop), as of now.
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    }
    std::fclose(f);
    if (kib > 0) return std::min<int64_t>(static_cast<int64_t>(kib) * 1024, physical_memory_bytes());
  }
  return physical_memory_bytes();
}

namespace {
int64_t& max_bytes_storage() {
  static int64_t v = available_memory_bytes();
  return v;
}
}  // namespace

int64_t Limits::max_array_bytes() { return max_bytes_storage(); }
void Limits::set_max_array_bytes(int64_t bytes) { max_bytes_storage() = bytes; }

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 6) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

void check_allocation(const Shape& shape, const std::string& what) {
  // Compute in double so that absurd shapes do not overflow before the check.
  double n = 1;
  for (int64_t e : shape) n *= static_cast<double>(e);
  double bytes = n * sizeof(float);
  if (bytes > static_cast<double>(Limits::max_array_bytes())) {
    user_error << what << " of shape " << shape_to_string(shape) << " would need "
               << format_bytes(bytes) << ", more than " << memory_budget_text();
  }
}

std::string memory_budget_text() {
  return "the memory budget of " + format_bytes(static_cast<double>(Limits::max_array_bytes())) +
         " (the machine's available memory, --max-memory or Python's set_max_memory)";
}

}  // namespace proxc::internal
