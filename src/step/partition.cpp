#include "step/partition.h"

#include <numeric>

namespace proxc::internal {

namespace {
int find(std::vector<int>& parent, int i) {
  while (parent[static_cast<size_t>(i)] != i) {
    parent[static_cast<size_t>(i)] = parent[static_cast<size_t>(parent[static_cast<size_t>(i)])];
    i = parent[static_cast<size_t>(i)];
  }
  return i;
}
}  // namespace

Partition partition_graph(const std::vector<std::vector<int>>& operands, const std::function<bool(int)>& is_cut,
                          const std::function<bool(int)>& is_output) {
  const int n = static_cast<int>(operands.size());
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  for (int i = 0; i < n; ++i) {
    if (is_cut(i)) continue;
    for (int a : operands[static_cast<size_t>(i)]) {
      if (!is_cut(a)) parent[static_cast<size_t>(find(parent, a))] = find(parent, i);
    }
  }
  Partition p;
  p.region.assign(static_cast<size_t>(n), -1);
  p.boundary.assign(static_cast<size_t>(n), false);
  std::vector<int> id(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    if (is_cut(i)) {
      p.cuts.push_back(i);
      p.boundary[static_cast<size_t>(i)] = true;
      continue;
    }
    int root = find(parent, i);
    if (id[static_cast<size_t>(root)] < 0) id[static_cast<size_t>(root)] = p.num_regions++;
    p.region[static_cast<size_t>(i)] = id[static_cast<size_t>(root)];
  }
  for (int i = 0; i < n; ++i) {
    if (is_output(i)) p.boundary[static_cast<size_t>(i)] = true;
    for (int a : operands[static_cast<size_t>(i)]) {
      if (p.region[static_cast<size_t>(a)] != p.region[static_cast<size_t>(i)] || p.region[static_cast<size_t>(i)] < 0) {
        p.boundary[static_cast<size_t>(a)] = true;
      }
    }
  }
  return p;
}

}  // namespace proxc::internal
