/// \file
/// A generic graph partition: given a DAG (nodes in topological order, each
/// with its operands) and a predicate marking the cut nodes — the ones a code
/// generator cannot fuse (FFT solves, black boxes) — find the maximal fusable
/// regions between them. Nothing here knows about Halide; any code generator
/// can use it.
#pragma once

#include <functional>
#include <vector>

namespace proxc::internal {

struct Partition {
  /// region[i]: the region of node i, or -1 for a cut node.
  std::vector<int> region;
  int num_regions = 0;
  /// The cut nodes, in topological order.
  std::vector<int> cuts;
  /// Nodes whose value crosses a boundary (used by a cut node or by another
  /// region, or an output): they must be materialised; everything else can
  /// be fused into its users.
  std::vector<bool> boundary;
};

/// `operands[i]` lists the operand indices of node i (all < i).
/// `is_cut(i)` marks the nodes that cannot be fused; `is_output(i)` the
/// program's outputs. Regions are the connected components of the non-cut
/// nodes (connected through operand edges that avoid cut nodes).
Partition partition_graph(const std::vector<std::vector<int>>& operands, const std::function<bool(int)>& is_cut,
                          const std::function<bool(int)>& is_output);

}  // namespace proxc::internal
