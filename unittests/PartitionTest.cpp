//===- PartitionTest.cpp - pf-auto-stages' partition against brute force --===//

#include "pf/Analysis/Partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

using namespace mlir::pf;

namespace {

struct Best {
  int64_t maxCost = std::numeric_limits<int64_t>::max();
  int64_t cutCost = std::numeric_limits<int64_t>::max();
};

/// Every way to cut n items into k non-empty contiguous groups.
void enumerate(const std::vector<int64_t> &costs,
               const std::vector<int64_t> &cuts, size_t k, size_t start,
               int64_t curMax, int64_t curCut, Best &best) {
  size_t n = costs.size();
  if (k == 1) {
    int64_t sum = 0;
    for (size_t i = start; i < n; ++i)
      sum += costs[i];
    int64_t m = std::max(curMax, sum);
    if (m < best.maxCost || (m == best.maxCost && curCut < best.cutCost))
      best = {m, curCut};
    return;
  }
  int64_t sum = 0;
  for (size_t end = start + 1; end + (k - 1) <= n; ++end) {
    sum += costs[end - 1];
    enumerate(costs, cuts, k - 1, end, std::max(curMax, sum),
              curCut + cuts[end], best);
  }
}

TEST(Partition, MatchesBruteForceOnRandomCases) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 3000; ++trial) {
    size_t n = 1 + rng() % 11;
    size_t k = 1 + rng() % std::min<size_t>(n, 5);
    std::vector<int64_t> costs(n), cuts(n);
    bool zeros = rng() % 4 == 0; // zero-cost ops (reshapes) happen
    for (size_t i = 0; i < n; ++i) {
      costs[i] = zeros && rng() % 3 == 0 ? 0 : int64_t(rng() % 100);
      cuts[i] = int64_t(rng() % 50);
    }
    cuts[0] = 0;
    Best best;
    enumerate(costs, cuts, k, 0, 0, 0, best);
    std::optional<partition::Result> r =
        partition::minMaxContiguous(costs, k, cuts);
    ASSERT_TRUE(r.has_value());
    ASSERT_EQ(r->maxCost, best.maxCost) << "trial " << trial;
    ASSERT_EQ(r->cutCost, best.cutCost) << "trial " << trial;
    // The returned partition is what it claims.
    ASSERT_EQ(r->starts.size(), k);
    ASSERT_EQ(r->starts[0], 0u);
    int64_t maxSeen = 0, cutSeen = 0;
    for (size_t g = 0; g < k; ++g) {
      size_t end = g + 1 < k ? r->starts[g + 1] : n;
      ASSERT_LT(r->starts[g], end);
      int64_t sum = 0;
      for (size_t i = r->starts[g]; i < end; ++i)
        sum += costs[i];
      maxSeen = std::max(maxSeen, sum);
      if (g > 0)
        cutSeen += cuts[r->starts[g]];
    }
    EXPECT_EQ(maxSeen, r->maxCost);
    EXPECT_EQ(cutSeen, r->cutCost);
  }
}

TEST(Partition, TwentyFourUnevenLayersIntoFourStages) {
  // Costs of 24 layers with uneven widths (3 ops each: matmul, bias, relu).
  std::mt19937_64 rng(std::random_device{}());
  std::vector<int64_t> costs;
  for (int l = 0; l < 24; ++l) {
    int64_t w = 32 + int64_t(rng() % 480);
    costs.push_back(6 * w * w);
    costs.push_back(2 * w);
    costs.push_back(w);
  }
  std::optional<partition::Result> r = partition::minMaxContiguous(costs, 4);
  ASSERT_TRUE(r.has_value());
  // Any layout's largest stage is at least total/4 and the largest op.
  int64_t total = 0, largest = 0;
  for (int64_t c : costs) {
    total += c;
    largest = std::max(largest, c);
  }
  EXPECT_GE(r->maxCost, std::max(largest, (total + 3) / 4));
  // Within one layer of the fractional optimum total/4.
  int64_t widestLayer = 0;
  for (size_t i = 0; i < costs.size(); i += 3)
    widestLayer = std::max(widestLayer, costs[i] + costs[i + 1] + costs[i + 2]);
  EXPECT_LE(r->maxCost, (total + 3) / 4 + widestLayer);
}

TEST(Partition, RejectsBadArguments) {
  std::vector<int64_t> costs = {1, 2, 3};
  EXPECT_FALSE(partition::minMaxContiguous(costs, 0).has_value());
  EXPECT_FALSE(partition::minMaxContiguous(costs, 4).has_value());
  std::vector<int64_t> negative = {1, -2, 3};
  EXPECT_FALSE(partition::minMaxContiguous(negative, 2).has_value());
  std::vector<int64_t> shortCuts = {0, 1};
  EXPECT_FALSE(partition::minMaxContiguous(costs, 2, shortCuts).has_value());
}

} // namespace
