#include <gtest/gtest.h>

#include "step/partition.h"

namespace proxc::internal {
namespace {

// 0 → 1 → 2(cut) → 3 → 4, and 1 → 4: the cut splits the chain into two
// regions; what crosses the cut (1 into the cut, the cut into 3, 1 into 4)
// and the output must be materialised.
TEST(Partition, CutNodesSplitFusableRegions) {
  std::vector<std::vector<int>> operands = {{}, {0}, {1}, {2}, {3, 1}};
  Partition p = partition_graph(operands, [](int i) { return i == 2; }, [](int i) { return i == 4; });
  EXPECT_EQ(p.cuts, std::vector<int>({2}));
  EXPECT_EQ(p.region[2], -1);
  EXPECT_EQ(p.region[0], p.region[1]);
  EXPECT_EQ(p.region[3], p.region[4]);
  // 1 feeds 4 directly: the two sides are one region through that edge.
  EXPECT_EQ(p.region[1], p.region[4]);
  EXPECT_EQ(p.num_regions, 1);
  EXPECT_TRUE(p.boundary[1]);   // read by the cut
  EXPECT_TRUE(p.boundary[2]);   // the cut itself
  EXPECT_TRUE(p.boundary[4]);   // an output
  EXPECT_FALSE(p.boundary[0]);  // fuses into 1
  EXPECT_FALSE(p.boundary[3]);  // fuses into 4
}

TEST(Partition, IndependentChainsAreSeparateRegions) {
  std::vector<std::vector<int>> operands = {{}, {0}, {}, {2}, {1}, {3}};
  Partition p = partition_graph(operands, [](int i) { return i == 4 || i == 5; }, [](int) { return false; });
  EXPECT_EQ(p.num_regions, 2);
  EXPECT_NE(p.region[0], p.region[2]);
  EXPECT_TRUE(p.boundary[1]);
  EXPECT_TRUE(p.boundary[3]);
  EXPECT_FALSE(p.boundary[0]);
}

}  // namespace
}  // namespace proxc::internal
