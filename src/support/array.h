/// \file
/// Shapes and dense float32 arrays in NumPy order (C order, axis 0 is rows).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/blocks.h"

namespace proxc::internal {

/// Extents in NumPy order: (rows, cols[, channels/depth ...]). A rank-0 shape
/// is a scalar.
using Shape = std::vector<int64_t>;

/// Number of elements of `shape` (1 for a scalar). Throws UserError if the
/// product overflows.
int64_t num_elements(const Shape& shape);

/// "(16, 24)" — the Python tuple spelling, used in every message.
std::string shape_to_string(const Shape& shape);

/// The multi-index of element `flat_index` of an array of `shape` in C order,
/// spelled as a Python tuple: "(1, 2)", "(4,)", "()".
std::string index_to_string(const Shape& shape, int64_t flat_index);

/// The largest float32 (FLT_MAX, 2^128 - 2^104): proxc computes in float32,
/// so every number that enters a problem must lie within ±this.
inline constexpr double kFloat32Max = 3.4028234663852886e38;

/// Whether `v` is a finite number within float32's range.
inline bool fits_float32(double v) { return v >= -kFloat32Max && v <= kFloat32Max; }

/// An array's elements: large ones in the block store (support/blocks.h:
/// huge pages, freed storage kept for the next array of its size).
using FloatData = BlockVector<float>;
/// The emulator's elements (double precision), stored the same way.
using DoubleData = BlockVector<double>;

/// A dense float32 array with a shape, stored in C order.
struct Array {
  Shape shape;
  FloatData data;

  Array() = default;
  /// A zero-filled array. The caller checks the size against limits first.
  explicit Array(Shape s);
  Array(Shape s, FloatData d);

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
};

/// The machine's physical memory (16 GiB where the system does not say).
int64_t physical_memory_bytes();

/// The memory the machine has available when first asked (MemAvailable:
/// free memory and the page cache the kernel may drop), at most its
/// physical memory.
int64_t available_memory_bytes();

/// Process-wide resource limits, checked before allocating.
struct Limits {
  /// The memory budget: the largest number of bytes one array (a variable,
  /// a constant, a file's payload) may take, and all the large ones in use
  /// together (support/blocks.h). Defaults to the memory the machine has
  /// available when the process first asks.
  static int64_t max_array_bytes();
  static void set_max_array_bytes(int64_t bytes);
};

/// Throws UserError (naming `what` and the size) when an array of `shape`
/// float32 entries would exceed Limits::max_array_bytes().
void check_allocation(const Shape& shape, const std::string& what);

/// "1.5 GiB", "12 KiB", "100 B".
std::string format_bytes(double bytes);

/// "the memory budget of 80.0 MiB (...)": the budget and where it comes
/// from, as every refusal for memory names it.
std::string memory_budget_text();

}  // namespace proxc::internal
