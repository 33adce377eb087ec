#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "support/array.h"
#include "support/blocks.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/format.h"
#include "support/names.h"
#include "test_util.h"

namespace proxc::internal {
namespace {

using ::testing::HasSubstr;

TEST(FormatDouble, ShortestSpellingParsesBackExactly) {
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(2), "2");
  EXPECT_EQ(format_double(-2.5), "-2.5");
  EXPECT_EQ(format_double(1e-5), "1e-05");
  EXPECT_EQ(format_double(0.001), "0.001");
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> bits;
  for (int i = 0; i < 20000; ++i) {
    uint64_t b = bits(rng);
    double v;
    std::memcpy(&v, &b, sizeof v);
    if (!std::isfinite(v)) continue;
    ASSERT_EQ(std::strtod(format_double(v).c_str(), nullptr), v) << format_double(v);
  }
}

TEST(FormatDouble, FloatValuesPrintShort) {
  // A float32 widened to double prints its exact double value, parsing back
  // to the same float.
  float f = 0.1f;
  EXPECT_EQ(static_cast<float>(std::strtod(format_double(f).c_str(), nullptr)), f);
}

TEST(QuoteString, EscapesWhatTheLexerReads) {
  EXPECT_EQ(quote_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(quote_string(std::string("\x01", 1)), "\"\\x01\"");
}

TEST(NameScope, ClashesGetSuffixesInOrder) {
  NameScope s;
  EXPECT_EQ(s.unique("b"), "b");
  EXPECT_EQ(s.unique("b"), "b_1");
  EXPECT_EQ(s.unique("b"), "b_2");
  EXPECT_EQ(s.unique("b_1"), "b_1_1");
  EXPECT_EQ(s.unique(""), "t");
  EXPECT_EQ(s.unique("", "x"), "x");
}

TEST(NameScope, SanitizesHintsAndAvoidsReservedWords) {
  NameScope s;
  EXPECT_EQ(s.unique("my-image.npy"), "my_image_npy");
  EXPECT_EQ(s.unique("2d"), "_2d");
  EXPECT_EQ(s.unique("grad"), "grad_");
  EXPECT_EQ(s.unique("minimize"), "minimize_");
}

TEST(Shape, PrintsAsPythonTuple) {
  EXPECT_EQ(shape_to_string({16, 24}), "(16, 24)");
  EXPECT_EQ(shape_to_string({5}), "(5,)");
  EXPECT_EQ(shape_to_string({}), "()");
}

TEST(Limits, RefusesHugeAllocationsBeforeAllocating) {
  std::string msg = test::user_error_of([] { check_allocation({100000, 100000, 100000}, "variable 'x'"); });
  EXPECT_THAT(msg, HasSubstr("variable 'x' of shape (100000, 100000, 100000) would need"));
  EXPECT_THAT(msg, HasSubstr("PiB"));
  int64_t saved = Limits::max_array_bytes();
  Limits::set_max_array_bytes(1000);
  EXPECT_THAT(test::user_error_of([] { check_allocation({16, 16}, "array"); }), HasSubstr("more than the memory budget of 1000 B"));
  Limits::set_max_array_bytes(saved);
  check_allocation({16, 16}, "array");
}

// The block tests use sizes no other code here allocates: a free block is
// reused for a request of its size (of several, the one freed last).
TEST(Blocks, LargeArraysReuseFreedStorageAlignedAndZeroed) {
  if (!blocks_enabled()) GTEST_SKIP() << "the block store is off under heap-checking sanitizers";
  const Shape big{700, 700};  // 1.9 MiB: a block
  const BlockStats before = block_stats();
  const float* first = nullptr;
  {
    Array a(big);
    first = a.data.data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 128, 0u);
    for (float& v : a.data) v = 7;
    EXPECT_GE(block_stats().live, before.live + a.data.size() * sizeof(float));
  }
  // The freed block is kept and handed out again for the same size, zeroed
  // by the vector as every Array(shape) is.
  EXPECT_GE(block_stats().cached, size_t{700 * 700 * sizeof(float)});
  Array b(big);
  EXPECT_EQ(b.data.data(), first);
  for (float v : b.data) ASSERT_EQ(v, 0.0f);
  // A second live block of the size is another one, at another cache color.
  Array c(big);
  EXPECT_NE(c.data.data(), first);
  EXPECT_NE(reinterpret_cast<uintptr_t>(c.data.data()) % 65536, reinterpret_cast<uintptr_t>(first) % 65536);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c.data.data()) % 128, 0u);
  // Small arrays are not blocks.
  const size_t live = block_stats().live;
  Array small(Shape{8, 8});
  EXPECT_EQ(block_stats().live, live);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.data.data()) % 128, 0u);
}

TEST(Blocks, FreeBlocksBeyondTheCapGiveTheirPagesBackAndStayReusable) {
  if (!blocks_enabled()) GTEST_SKIP() << "the block store is off under heap-checking sanitizers";
  struct Cap {  // nothing kept while the test runs, the old cap after it
    size_t old = set_block_cache_bytes(0);
    ~Cap() { set_block_cache_bytes(old); }
  } cap;
  const size_t n = (size_t{3} << 20) + (size_t{448} << 10), count = n / sizeof(float);
  auto* a = static_cast<float*>(allocate_block(n));
  auto* b = static_cast<float*>(allocate_block(n));  // after a in its region
  for (size_t i = 0; i < count; ++i) a[i] = 1.5f, b[i] = 2.5f;
  const BlockStats before = block_stats();
  free_block(a, n);
  const BlockStats after = block_stats();
  EXPECT_EQ(after.cached, before.cached);
  EXPECT_GE(after.released, before.released + n);
  // The neighbour keeps its values; the released block's addresses serve the
  // next request of its size, as fresh zero pages (allocate_block does not
  // fill them).
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(b[i], 2.5f) << i;
  auto* again = static_cast<float*>(allocate_block(n));
  EXPECT_EQ(again, a);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(again[i], 0.0f) << i;
  free_block(again, n);
  free_block(b, n);
}

// When the free blocks that keep their pages pass the cap, the least
// recently freed give theirs back: the arrays of the last problem solved stay
// warm, not those of the first (which filled the cap for good before).
TEST(Blocks, TheLeastRecentlyFreedGiveTheirPagesBackFirst) {
  if (!blocks_enabled()) GTEST_SKIP() << "the block store is off under heap-checking sanitizers";
  struct Cap {
    size_t old = set_block_cache_bytes(0);  // nothing cached from other tests
    ~Cap() { set_block_cache_bytes(old); }
  } cap;
  const size_t n = (size_t{2} << 20) + (size_t{320} << 10), count = n / sizeof(float);
  auto* a = static_cast<float*>(allocate_block(n));
  auto* b = static_cast<float*>(allocate_block(n));
  auto* c = static_cast<float*>(allocate_block(n));
  for (size_t i = 0; i < count; ++i) a[i] = 1.5f, b[i] = 2.5f, c[i] = 3.5f;
  const size_t block = n + (size_t{64} << 10);  // whole granules, and one for its cache color
  set_block_cache_bytes(2 * block);
  const BlockStats before = block_stats();
  free_block(a, n);
  free_block(b, n);
  EXPECT_EQ(block_stats().cached, before.cached + 2 * block);
  free_block(c, n);  // a, the least recently freed, gives its pages back
  const BlockStats after = block_stats();
  EXPECT_EQ(after.cached, before.cached + 2 * block);
  EXPECT_EQ(after.released, before.released + block);
  // The last freed first, with its pages (and so its values); a's addresses last, as zero pages.
  auto* first = static_cast<float*>(allocate_block(n));
  auto* second = static_cast<float*>(allocate_block(n));
  auto* third = static_cast<float*>(allocate_block(n));
  EXPECT_EQ(first, c);
  EXPECT_EQ(second, b);
  EXPECT_EQ(third, a);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(first[i], 3.5f) << i;
    ASSERT_EQ(second[i], 2.5f) << i;
    ASSERT_EQ(third[i], 0.0f) << i;
  }
  // A block larger than the cap gives its pages back at once and evicts nothing.
  free_block(first, n);
  set_block_cache_bytes(block);
  const size_t big = (size_t{5} << 20) + (size_t{192} << 10);
  void* large = allocate_block(big);
  const size_t released = block_stats().released;
  free_block(large, big);
  EXPECT_EQ(block_stats().cached, before.cached + block);
  // Whole granules, and one for its color.
  EXPECT_EQ(block_stats().released, released + big + (size_t{64} << 10));
  free_block(second, n);
  free_block(third, n);
}

TEST(LocatedError, ShowsLineAndCaret) {
  std::string msg = format_located_error(SourceLoc{"p.prox", 2, 5}, "bad", "first\nabc def\nthird");
  EXPECT_EQ(msg, "p.prox:2:5: error: bad\n  abc def\n      ^");
}

TEST(Asserts, UserAndInternalErrorsDiffer) {
  EXPECT_THROW({ user_assert(1 == 2) << "user"; }, UserError);
  EXPECT_THROW({ internal_assert(1 == 2) << "bug"; }, InternalError);
  try {
    internal_assert(false) << "detail";
  } catch (const InternalError& e) {
    EXPECT_THAT(e.what(), HasSubstr("internal error (a bug in proxc)"));
    EXPECT_THAT(e.what(), HasSubstr("detail"));
  }
}

TEST(FileUtil, AtomicWriteReplacesWholeFileAndHashesContent) {
  std::string dir = test::temp_dir();
  std::string path = dir + "/out.txt";
  write_file_atomic(path, "hello");
  EXPECT_EQ(read_file(path), "hello");
  write_file_atomic(path, "bye");
  EXPECT_EQ(read_file(path), "bye");
  EXPECT_EQ(content_hash("abc"), content_hash("abc"));
  EXPECT_NE(content_hash("abc"), content_hash("abd"));
  EXPECT_THAT(content_hash("abc"), ::testing::StartsWith("xxh3-128:"));
  EXPECT_THAT(test::user_error_of([&] { write_file_atomic(dir + "/no/such/dir/f", "x"); }),
              HasSubstr(dir + "/no/such/dir/f"));
  EXPECT_THAT(test::user_error_of([&] { read_file(dir + "/missing"); }), HasSubstr("no such file"));
  EXPECT_THAT(test::user_error_of([&] { read_file(dir); }), HasSubstr("is a directory"));
}

}  // namespace
}  // namespace proxc::internal
