//===- Attention.cpp - device twins of flash-style attention --------------===//
//
// pfrt_cuda_k_attention(_grad): the CPU kernels' checks
// (checkAttentionArgs), then AttentionBodies.h's rows: the forward a thread
// per query row; the gradient as delta (a thread a row, into device
// scratch), dK and dV (a thread per key row) and dQ (a thread per query
// row). Dropout's data step is read when the kernels run, as
// pfrt_cuda_k_dropout reads it (a device slot in a captured step).
//
//===----------------------------------------------------------------------===//

#include "../Graph.h"
#include "AttentionBodies.h"
#include "Twin.h"

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;
using namespace pfrt::kern;
using namespace pfrt::twin;

namespace {

/// What the kernels of a checked call take besides their tensors: the
/// parameters, and the data step they draw dropout for (dataStepSlot).
struct AttnLaunch {
  dev::AttnParams p;
  int64_t step;
  const int64_t *slot;
};

/// The AttnLaunch of a checked call.
AttnLaunch attnLaunch(const char *fn, const AttentionSizes &a,
                      int32_t maskDtype, const int64_t *maskStrides,
                      double scale, int32_t causal, uint64_t seed,
                      uint64_t stream, int64_t microbatch) {
  AttnLaunch l;
  dev::AttnParams &p = l.p;
  p.batch = a.batch;
  p.heads = a.heads;
  p.queries = a.queries;
  p.keys = a.keys;
  p.dim = a.dim;
  p.dimV = a.dimV;
  p.maskKind = !a.hasMask ? 0 : maskDtype == PFRT_DTYPE_F32 ? 1 : 2;
  for (int i = 0; i < 4; ++i)
    p.ms[i] = a.hasMask ? maskStrides[i] : 0;
  p.causal = causal != 0;
  p.dropout = a.dropout;
  p.scale = float(scale);
  p.drop.seed = seed;
  p.drop.stream = stream;
  p.drop.microbatch = microbatch;
  p.drop.scale = a.keepScale;
  p.drop.threshold = a.threshold;
  p.logicalHeads = a.logicalHeads;
  p.logicalQueries = a.logicalQueries;
  p.b0 = a.b0;
  p.h0 = a.h0;
  p.t0 = a.t0;
  l.slot = dataStepSlot(fn, a.dropout, &l.step);
  return l;
}

/// Blocks of kBlock rows over B * H planes of `rows` rows.
int64_t rowBlocks(const AttentionSizes &a, int64_t rows) {
  return a.batch * a.heads * ((rows + dev::kBlock - 1) / dev::kBlock);
}

} // namespace

extern "C" {

int pfrt_cuda_k_attention(const float *q, const float *k, const float *v,
                          const void *mask, int32_t maskDtype,
                          const int64_t *maskStrides, float *out, float *lse,
                          const int64_t *dims, double scale, int32_t causal,
                          double dropoutP, uint64_t seed, uint64_t stream,
                          int64_t microbatch, const int64_t *logical) {
  const char *fn = "pfrt_cuda_k_attention";
  const AttentionSizes a =
      checkAttentionArgs(fn, dims, mask, maskDtype, maskStrides, scale,
                         dropoutP, logical, {q, k, v, out, lse});
  if (a.rows == 0)
    return 0;
  AttnLaunch l = attnLaunch(fn, a, maskDtype, maskStrides, scale, causal, seed,
                            stream, microbatch);
  void *args[] = {&q, &k, &v, &mask, &out, &lse, &l.p, &l.slot, &l.step};
  launchBlocks(kAttention, rowBlocks(a, a.queries), args, fn);
  return 0;
}

int pfrt_cuda_k_attention_grad(const float *q, const float *k, const float *v,
                               const void *mask, int32_t maskDtype,
                               const int64_t *maskStrides, const float *out,
                               const float *lse, const float *dout, float *dq,
                               float *dk, float *dv, const int64_t *dims,
                               double scale, int32_t causal, double dropoutP,
                               uint64_t seed, uint64_t stream,
                               int64_t microbatch, const int64_t *logical) {
  const char *fn = "pfrt_cuda_k_attention_grad";
  const AttentionSizes a = checkAttentionArgs(
      fn, dims, mask, maskDtype, maskStrides, scale, dropoutP, logical,
      {q, k, v, out, lse, dout, dq, dk, dv});
  if (a.rows == 0 && a.batch * a.heads * a.keys == 0)
    return 0;
  AttnLaunch l = attnLaunch(fn, a, maskDtype, maskStrides, scale, causal, seed,
                            stream, microbatch);
  auto *delta = static_cast<float *>(
      scratch((a.rows > 0 ? a.rows : 1) * int64_t(sizeof(float)), fn));
  int64_t dvw = a.dimV, rows = a.rows;
  void *dargs[] = {&out, &dout, &delta, &dvw, &rows};
  launch(kAttentionDelta, a.rows, dargs, fn);
  void *kvArgs[] = {&q,     &k,  &v,  &mask, &lse,    &dout,
                    &delta, &dk, &dv, &l.p,  &l.slot, &l.step};
  launchBlocks(kAttentionGradKV, rowBlocks(a, a.keys), kvArgs, fn);
  void *qArgs[] = {&q,     &k,  &v,   &mask,   &lse,   &dout,
                   &delta, &dq, &l.p, &l.slot, &l.step};
  launchBlocks(kAttentionGradQ, rowBlocks(a, a.queries), qArgs, fn);
  return 0;
}

} // extern "C"
