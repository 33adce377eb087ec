/// \file
/// Storage for large arrays (the solver's state, the pipelines' outputs and
/// temporaries): blocks of at least kMinBlockBytes come from 2 MiB-aligned
/// regions that the kernel backs with transparent huge pages
/// (madvise(MADV_HUGEPAGE): one page fault per 2 MiB where 4 KiB pages take
/// 512), and a freed block is kept for the next request of its size (a
/// solve's next arrays, the next solve's state) instead of being unmapped
/// and faulted in again, as glibc does with blocks above its mmap threshold;
/// of several free blocks of a size, the one freed last is handed out. When
/// the free blocks that keep their pages pass a cap, the least recently
/// freed give them back (MADV_DONTNEED) and keep their addresses for reuse.
/// Successive blocks start at staggered offsets (cache "colors"), so that
/// arrays read side by side do not compete for the same cache sets. Smaller
/// requests, and every request in a build with a sanitizer that checks heap
/// accesses (Address, HWAddress, Memory), go to operator new.
#pragma once

#include <cstddef>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace proxc::internal {

/// Requests of at least this many bytes are blocks.
constexpr size_t kMinBlockBytes = size_t{256} << 10;

/// The process's memory budget (Limits::max_array_bytes, --max-memory):
/// the large requests in use together (every array of kMinBlockBytes or
/// more: variables, constants, decoded files, the passes' folded constants,
/// the emulator's and Halide's buffers, the solver's state) may not exceed
/// it. A request that would is refused before anything is allocated, with
/// this exception: a std::bad_alloc (so that a C callback's caller, Halide,
/// sees a failed allocation) whose what() says how much was asked for, how
/// much is in use and for what (MemoryUse).
class MemoryBudgetExceeded : public std::bad_alloc {
 public:
  explicit MemoryBudgetExceeded(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

/// Bytes of large requests in use now (what the budget counts).
size_t budgeted_bytes_in_use();

/// What this thread is doing, for the budget's message ("reading b.png",
/// "the passes"), while the object lives; the innermost one is named.
class MemoryUse {
 public:
  explicit MemoryUse(std::string what);
  ~MemoryUse();
  MemoryUse(const MemoryUse&) = delete;
  MemoryUse& operator=(const MemoryUse&) = delete;

 private:
  std::string outer_;
};

/// At least `bytes` of storage aligned to 128 bytes; throws
/// MemoryBudgetExceeded beyond the budget, std::bad_alloc when the system
/// has none.
void* allocate_block(size_t bytes);
/// Returns what allocate_block(bytes) gave, with the same `bytes`.
void free_block(void* p, size_t bytes) noexcept;

/// What the block store holds (for tests and benchmarks).
struct BlockStats {
  size_t reserved = 0;      ///< address space of the regions
  size_t live = 0;          ///< bytes of blocks in use
  size_t cached = 0;        ///< bytes of free blocks that keep their pages
  size_t released = 0;      ///< bytes of free blocks whose pages went back
  bool huge_pages = false;  ///< the regions are advised to use huge pages
};
BlockStats block_stats();

/// False in builds with a heap-checking sanitizer: every request goes to operator new.
bool blocks_enabled();

/// The most bytes of free blocks that keep their pages (default: a 64th of
/// the machine's memory, between 128 MiB and 512 MiB); beyond it the least
/// recently freed give their pages back, now and as blocks are freed.
/// Returns the cap it replaces.
size_t set_block_cache_bytes(size_t bytes);

/// A std::allocator that takes its large requests from the block store.
template <typename T>
struct BlockAllocator {
  using value_type = T;
  BlockAllocator() noexcept = default;
  template <typename U>
  BlockAllocator(const BlockAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    return static_cast<T*>(allocate_block(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { free_block(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const BlockAllocator<U>&) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const BlockAllocator<U>&) const noexcept {
    return false;
  }
};

/// A vector whose large storage comes from the block store.
template <typename T>
using BlockVector = std::vector<T, BlockAllocator<T>>;

}  // namespace proxc::internal
