//===- Partition.h - balanced contiguous partitions -------------*- C++ -*-===//
//
// The core of pf-auto-stages: cut a sequence of op costs into k contiguous,
// non-empty groups so that the largest group's cost is as small as possible
// (exactly: binary search on the integer answer with a greedy check), and
// among the partitions reaching that optimum pick one whose cuts carry the
// fewest bytes (a dynamic program over cut positions with a sliding-window
// minimum, O(k n)).
//
//===----------------------------------------------------------------------===//

#ifndef PF_ANALYSIS_PARTITION_H
#define PF_ANALYSIS_PARTITION_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mlir::pf::partition {

struct Result {
  /// First item of each group; starts[0] == 0, strictly increasing.
  std::vector<size_t> starts;
  /// The largest group's cost (the optimum).
  int64_t maxCost = 0;
  /// Sum of cutWeights at the chosen cuts.
  int64_t cutCost = 0;
};

/// costs: non-negative item costs in order; k: the number of groups
/// (1 <= k <= costs.size()); cutWeights (empty, or costs.size() entries):
/// cutWeights[j] is the price of a cut just before item j (j >= 1).
/// Returns std::nullopt if k is out of range or a cost is negative.
std::optional<Result> minMaxContiguous(llvm::ArrayRef<int64_t> costs, size_t k,
                                       llvm::ArrayRef<int64_t> cutWeights = {});

} // namespace mlir::pf::partition

#endif // PF_ANALYSIS_PARTITION_H
