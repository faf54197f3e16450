//===- test_vocab_xent.cpp - the cross-entropy split by class -------------===//
//
// Every rank draws the same logits [n, C] and labels (pure functions of the
// run's seed), keeps the column block of its position in the group, and
// calls pfrt_softmax_xent_vocab and its gradient in the three modes (mean;
// mean over the rows whose label is not ignore_index; sum). Each result
// must equal the one-rank kernels on the whole logits (pfrt_k_softmax_xent,
// _ignore, _sum and their gradients, the gradient's matching column block)
// within float32 rounding, on every rank. Groups: the whole world and, when
// it has more than one rank, each rank alone (a group of one: its block is
// the whole row).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

uint64_t gSeed;
int gRank, gSize;

bool close(double got, double want, double scale) {
  return std::fabs(got - want) <= 2e-6 * std::max(scale, 1e-6);
}

void runCase(const std::vector<int64_t> &group, int64_t n, int64_t perRank,
             int64_t mode, uint64_t call) {
  const int64_t members = int64_t(group.size());
  int64_t pos = 0;
  while (group[size_t(pos)] != gRank)
    ++pos;
  const int64_t C = perRank * members, offset = pos * perRank;
  const int64_t ignore = mode == 0 ? -1 : -100;
  std::vector<float> full(size_t(n * C));
  for (int64_t i = 0; i < n * C; ++i)
    full[size_t(i)] = 6.0f * pt_value(gSeed, call, 0, uint64_t(i));
  std::vector<int64_t> labels(static_cast<size_t>(n));
  uint64_t state = pt_mix(gSeed ^ call);
  for (int64_t r = 0; r < n; ++r) {
    labels[size_t(r)] = pt_randint(&state, 0, C - 1);
    if (mode != 0 && r % 3 == 1)
      labels[size_t(r)] = ignore; // some rows ignored
  }
  std::vector<float> block(size_t(n * perRank));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k = 0; k < perRank; ++k)
      block[size_t(r * perRank + k)] = full[size_t(r * C + offset + k)];

  float loss = 0, want = 0, dloss = 0.7f;
  std::vector<float> grad(block.size()), wantGrad(full.size());
  pfrt_softmax_xent_vocab(block.data(), labels.data(), &loss, n, perRank,
                          offset, C, ignore, mode, group.data(), members);
  pfrt_softmax_xent_vocab_grad(block.data(), labels.data(), &dloss, grad.data(),
                               n, perRank, offset, C, ignore, mode,
                               group.data(), members);
  if (mode == 0) {
    pfrt_k_softmax_xent(full.data(), labels.data(), &want, n, C);
    pfrt_k_softmax_xent_grad(full.data(), labels.data(), &dloss,
                             wantGrad.data(), n, C);
  } else if (mode == 1) {
    pfrt_k_softmax_xent_ignore(full.data(), labels.data(), &want, n, C, ignore);
    pfrt_k_softmax_xent_grad_ignore(full.data(), labels.data(), &dloss,
                                    wantGrad.data(), n, C, ignore);
  } else {
    pfrt_k_softmax_xent_sum(full.data(), labels.data(), &want, n, C, ignore);
    pfrt_k_softmax_xent_grad_sum(full.data(), labels.data(), &dloss,
                                 wantGrad.data(), n, C, ignore);
  }
  CHECK(close(loss, want, std::fabs(want)),
        "rank %d, group of %lld, mode %lld: loss %.9g, one rank %.9g", gRank,
        (long long)members, (long long)mode, loss, want);
  double scale = 0;
  for (float g : wantGrad)
    scale = std::max(scale, double(std::fabs(g)));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k = 0; k < perRank; ++k) {
      float got = grad[size_t(r * perRank + k)];
      float w = wantGrad[size_t(r * C + offset + k)];
      CHECK(close(got, w, scale),
            "rank %d, group of %lld, mode %lld: dlogits[%lld][%lld] %.9g, one "
            "rank %.9g",
            gRank, (long long)members, (long long)mode, (long long)r,
            (long long)(offset + k), got, w);
    }
}

} // namespace

int main(int argc, char **argv) {
  gSeed = pt_start(&argc, &argv, "vocab_xent", &gRank, &gSize);
  std::vector<int64_t> world;
  for (int r = 0; r < gSize; ++r)
    world.push_back(r);
  uint64_t call = 0;
  for (int64_t mode = 0; mode < 3; ++mode)
    for (int64_t n : {int64_t(1), int64_t(7)})
      for (int64_t perRank : {int64_t(1), int64_t(5), int64_t(33)}) {
        runCase(world, n, perRank, mode, ++call);
        if (gSize > 1)
          runCase({int64_t(gRank)}, n, perRank, mode, ++call);
      }
  if (gRank == 0)
    printf("vocab_xent: %d ranks OK\n", gSize);
  pfrt_finalize();
  return 0;
}
