//===- Partition.cpp - balanced contiguous partitions ---------------------===//

#include "pf/Analysis/Partition.h"

#include <deque>
#include <limits>

using namespace mlir::pf;

std::optional<partition::Result>
partition::minMaxContiguous(llvm::ArrayRef<int64_t> costs, size_t k,
                            llvm::ArrayRef<int64_t> cutWeights) {
  size_t n = costs.size();
  if (k < 1 || k > n || (!cutWeights.empty() && cutWeights.size() != n))
    return std::nullopt;
  std::vector<int64_t> prefix(n + 1, 0);
  int64_t largest = 0;
  for (size_t i = 0; i < n; ++i) {
    if (costs[i] < 0)
      return std::nullopt;
    prefix[i + 1] = prefix[i] + costs[i];
    largest = std::max(largest, costs[i]);
  }
  // Smallest T such that greedy packing into groups of cost <= T needs at
  // most k groups (then some group can always be split to make exactly k).
  auto groupsNeeded = [&](int64_t limit) {
    size_t groups = 1;
    int64_t run = 0;
    for (int64_t c : costs) {
      if (run + c > limit) {
        ++groups;
        run = 0;
      }
      run += c;
    }
    return groups;
  };
  int64_t lo = largest, hi = prefix[n];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (groupsNeeded(mid) <= k)
      hi = mid;
    else
      lo = mid + 1;
  }
  const int64_t limit = lo;

  // dp[g][i]: the least cut weight splitting items [0, i) into g groups of
  // cost <= limit; from[g][i] the start of the last group.
  const int64_t inf = std::numeric_limits<int64_t>::max() / 4;
  auto weight = [&](size_t j) -> int64_t {
    return cutWeights.empty() || j == 0 ? 0 : cutWeights[j];
  };
  std::vector<std::vector<int64_t>> dp(k + 1, std::vector<int64_t>(n + 1, inf));
  std::vector<std::vector<size_t>> from(k + 1, std::vector<size_t>(n + 1, 0));
  dp[0][0] = 0;
  for (size_t g = 1; g <= k; ++g) {
    // j ranges over [lo_i, i - 1] with prefix[i] - prefix[j] <= limit; the
    // window's left end only moves right as i grows.
    std::deque<size_t> window; // candidate j, increasing value
    size_t left = 0, added = 0;
    for (size_t i = 1; i <= n; ++i) {
      while (added < i) { // admit j = added
        size_t j = added++;
        if (dp[g - 1][j] >= inf)
          continue;
        int64_t v = dp[g - 1][j] + weight(j);
        while (!window.empty() &&
               dp[g - 1][window.back()] + weight(window.back()) >= v)
          window.pop_back();
        window.push_back(j);
      }
      while (prefix[i] - prefix[left] > limit)
        ++left;
      while (!window.empty() && window.front() < left)
        window.pop_front();
      if (window.empty())
        continue;
      size_t j = window.front();
      dp[g][i] = dp[g - 1][j] + weight(j);
      from[g][i] = j;
    }
  }
  if (dp[k][n] >= inf)
    return std::nullopt; // cannot happen for k <= n
  Result r;
  r.maxCost = limit;
  r.cutCost = dp[k][n];
  r.starts.assign(k, 0);
  size_t end = n;
  for (size_t g = k; g >= 1; --g) {
    r.starts[g - 1] = from[g][end];
    end = from[g][end];
  }
  return r;
}
