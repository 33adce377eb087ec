#include "support/blocks.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "support/array.h"

// Sanitizers that check heap accesses need their own allocator.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_HWADDRESS__)
#define PROXC_BLOCKS_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(hwaddress_sanitizer) || __has_feature(memory_sanitizer)
#define PROXC_BLOCKS_OFF 1
#endif
#endif

namespace proxc::internal {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kGranule = size_t{64} << 10;      // block sizes are multiples of this
constexpr size_t kRegionBytes = size_t{64} << 20;  // address space reserved at a time
constexpr size_t kSmallAlignment = 128;            // Halide's
// A new block starts `color` × kColorStep bytes into its first granule, the
// color cycling through kColors: arrays that a loop reads side by side then
// map to different sets of the L1 and L2 caches (all at one offset, ten
// streams of one loop took 1.2-1.5x as long in a standalone test here).
constexpr size_t kColorStep = 4096 + 128, kColors = 15;  // 15 · 4224 < kGranule
static_assert(kColors * kColorStep < kGranule, "a block's color fits in its first granule");

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Free blocks that keep their pages, beyond which the least recently freed
// give them back: a 64th of the machine's memory, between 128 MiB and 512 MiB
// (enough for the arrays of a few 2048² solves; the block cache of Halide's
// buffers that the store replaced kept up to 1 GiB).
size_t default_cache_cap() {
  const auto phys = static_cast<size_t>(physical_memory_bytes());
  return std::clamp(phys / 64, size_t{128} << 20, size_t{512} << 20);
}

// A block's size for a request of `bytes`: whole granules, and one more for
// its color.
size_t block_bytes(size_t bytes) { return round_up(bytes, kGranule) + kGranule; }

struct Store {
  // A free block that keeps its pages, and when it was freed (a count).
  struct Cached {
    void* p;
    uint64_t freed;
  };
  using CachedBySize = std::multimap<size_t, Cached>;

  std::mutex m;
  char* next = nullptr;  // the bump pointer of the current region
  char* end = nullptr;
  CachedBySize cached;                                // by size (as handed out: colored)
  std::map<uint64_t, CachedBySize::iterator> by_age;  // the same blocks, least recently freed first
  std::multimap<size_t, void*> released;              // free blocks whose pages went back, by size
  uint64_t frees = 0;
  size_t color = 0;
  size_t cap = default_cache_cap();
  BlockStats stats;

  // A 2 MiB-aligned mapping of `bytes` (a multiple of 2 MiB), advised to use
  // huge pages; null when the system has no memory for it.
  char* map_region(size_t bytes) {
    void* raw =
        ::mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return nullptr;
    auto start = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = round_up(start, kHugePage);
    if (aligned > start) ::munmap(raw, aligned - start);
    const uintptr_t tail = aligned + bytes, raw_end = start + bytes + kHugePage;
    if (raw_end > tail) ::munmap(reinterpret_cast<void*>(tail), raw_end - tail);
    char* p = reinterpret_cast<char*>(aligned);
#ifdef MADV_HUGEPAGE
    stats.huge_pages = ::madvise(p, bytes, MADV_HUGEPAGE) == 0 || stats.huge_pages;
#endif
    stats.reserved += bytes;
    return p;
  }

  // Of the free blocks of `bytes` that keep their pages, the one freed last
  // (its lines the likeliest still in cache); null when there is none.
  void* take_cached(size_t bytes) {
    auto range = cached.equal_range(bytes);
    if (range.first == range.second) return nullptr;
    auto it = std::prev(range.second);  // equal sizes are kept in the order they were freed
    void* p = it->second.p;
    by_age.erase(it->second.freed);
    cached.erase(it);
    stats.cached -= bytes;
    return p;
  }

  void* take_released(size_t bytes) {
    auto it = released.find(bytes);
    if (it == released.end()) return nullptr;
    void* p = it->second;
    released.erase(it);
    stats.released -= bytes;
    return p;
  }

  // A block of `bytes` (a multiple of kGranule, the first granule for its
  // color), as handed out: its start plus its color's offset.
  void* allocate(size_t bytes) {
    std::lock_guard<std::mutex> lock(m);
    void* p = take_cached(bytes);
    if (!p) p = take_released(bytes);
    if (!p) {
      char* start = nullptr;
      if (bytes > kRegionBytes / 2) {
        start = map_region(round_up(bytes, kHugePage));  // a region of its own
      } else {
        if (static_cast<size_t>(end - next) < bytes) {
          next = map_region(kRegionBytes);  // the rest of the last region stays untouched
          end = next ? next + kRegionBytes : nullptr;
        }
        if (next) {
          start = next;
          next += bytes;
        }
      }
      if (start) {
        p = start + color * kColorStep;
        color = (color + 1) % kColors;
      }
    }
    if (!p) throw std::bad_alloc();
    stats.live += bytes;
    return p;
  }

  // A freed block keeps its pages; then, while the blocks that keep theirs
  // pass the cap, the least recently freed give theirs back. (Keeping the
  // first ones freed instead filled the cap with the arrays of an earlier,
  // larger problem, and every array of the next one was faulted in afresh:
  // the bench's 512² solves after its 2048² operators ran 1.5x as long.)
  void free(void* p, size_t bytes) noexcept {
    std::lock_guard<std::mutex> lock(m);
    stats.live -= bytes;
    if (bytes > cap) {
      give_back(p, bytes);
      return;
    }
    try {
      auto it = cached.emplace(bytes, Cached{p, ++frees});
      try {
        by_age.emplace(frees, it);
      } catch (const std::bad_alloc&) {
        cached.erase(it);
        throw;
      }
      stats.cached += bytes;
    } catch (const std::bad_alloc&) {
      give_back(p, bytes);  // no memory for the lists' nodes: the block's pages go back
      return;
    }
    evict_beyond_cap();
  }

  void evict_beyond_cap() noexcept {
    while (stats.cached > cap && !by_age.empty()) {
      auto oldest = by_age.begin();
      auto it = oldest->second;
      const size_t n = it->first;
      void* p = it->second.p;
      cached.erase(it);
      by_age.erase(oldest);
      stats.cached -= n;
      give_back(p, n);
    }
  }

  // A free block's pages go back to the system; its addresses stay for reuse
  // (unless there is no memory to list them: then they stay mapped, unused).
  void give_back(void* p, size_t bytes) noexcept {
    ::madvise(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) / kGranule * kGranule), bytes,
              MADV_DONTNEED);
    try {
      released.emplace(bytes, p);
      stats.released += bytes;
    } catch (const std::bad_alloc&) {
    }
  }
};

Store& store() {
  static Store* s = new Store;  // never destroyed: blocks may be freed during static destruction
  return *s;
}

// The large requests in use, counted whether or not blocks serve them (a
// sanitizer's build counts as any other).
std::atomic<size_t> g_in_use{0};

thread_local std::string t_memory_use;

[[noreturn]] void refuse(size_t bytes, size_t before) {
  throw MemoryBudgetExceeded(memory_budget_text() + " cannot hold " +
                             format_bytes(static_cast<double>(bytes)) + " more" +
                             (t_memory_use.empty() ? "" : " for " + t_memory_use) + ": " +
                             format_bytes(static_cast<double>(before)) + " are in use");
}

size_t budget_bytes() { return static_cast<size_t>(std::max<int64_t>(Limits::max_array_bytes(), 0)); }

// Counts `bytes` against the budget, or throws before anything is taken.
void reserve(size_t bytes) {
  const size_t budget = budget_bytes();
  const size_t before = g_in_use.fetch_add(bytes);
  if (before + bytes <= budget && before + bytes >= before) return;
  g_in_use.fetch_sub(bytes);
  refuse(bytes, before);
}

}  // namespace

size_t budgeted_bytes_in_use() { return g_in_use.load(); }


MemoryUse::MemoryUse(std::string what) : outer_(std::move(t_memory_use)) { t_memory_use = std::move(what); }

MemoryUse::~MemoryUse() { t_memory_use = std::move(outer_); }

void* allocate_block(size_t bytes) {
  // No object is larger (and the rounding below must not wrap).
  if (bytes > static_cast<size_t>(PTRDIFF_MAX)) throw std::bad_alloc();
  if (bytes >= kMinBlockBytes) {
    reserve(bytes);
    try {
#ifndef PROXC_BLOCKS_OFF
      return store().allocate(block_bytes(bytes));
#else
      return ::operator new(bytes, std::align_val_t(kSmallAlignment));
#endif
    } catch (...) {
      g_in_use.fetch_sub(bytes);
      throw;
    }
  }
  return ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(kSmallAlignment));
}

void free_block(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes >= kMinBlockBytes) g_in_use.fetch_sub(bytes);
#ifndef PROXC_BLOCKS_OFF
  if (bytes >= kMinBlockBytes) {
    store().free(p, block_bytes(bytes));
    return;
  }
#endif
  ::operator delete(p, std::align_val_t(kSmallAlignment));
}

bool blocks_enabled() {
#ifdef PROXC_BLOCKS_OFF
  return false;
#else
  return true;
#endif
}

size_t set_block_cache_bytes(size_t bytes) {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.m);
  const size_t old = s.cap;
  s.cap = bytes;
  s.evict_beyond_cap();  // the least recently freed beyond the new cap give their pages back now
  return old;
}

BlockStats block_stats() {
  Store& s = store();
  std::lock_guard<std::mutex> lock(s.m);
  return s.stats;
}

}  // namespace proxc::internal
