//===- KernelArgs.h - the kernels' argument checks, once -------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. Every check a CPU kernel
// (src/cpu, pfrt_k_*) makes on its arguments, shared with its device twin
// (src/cuda/kernels, pfrt_cuda_k_*): each takes the calling kernel's name for
// its messages and returns the sizes it derived, so the two kernels fail
// alike on the same arguments and cannot drift apart. Only checks on data
// (an out-of-range label or id, a step < 1 for Adam's bias correction) are
// left to the kernels themselves: the CPU reads the data, a twin checks it on
// the device.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_KERNELARGS_H
#define PFRT_SRC_COMMON_KERNELARGS_H

#include "Internal.h"

#include <cstdint>
#include <initializer_list>

namespace pfrt {
namespace kern {

//===----------------------------------------------------------------------===//
// Sizes and buffers
//===----------------------------------------------------------------------===//

/// Fatal unless v >= 0.
void checkSize(const char *fn, const char *what, int64_t v);
/// Fatal if p is NULL while the tensor it points to has elements.
void checkPtr(const char *fn, const char *what, const void *p, int64_t n);
/// a * b with an overflow check (fatal, naming fn).
int64_t mulChecked(const char *fn, int64_t a, int64_t b);

/// A named buffer argument.
struct Buf {
  const char *name;
  const void *ptr;
};
/// checkPtr of each buffer, in order, for `n` elements.
void checkBuffers(const char *fn, int64_t n, std::initializer_list<Buf> bufs);

//===----------------------------------------------------------------------===//
// Element-wise (src/cpu/Elementwise.cpp)
//===----------------------------------------------------------------------===//

/// n >= 0 and each buffer of n elements given (relu, add, mul, sub, div,
/// masked_fill, scale, copy, fill and their gradients).
void checkElementwiseArgs(const char *fn, int64_t n,
                          std::initializer_list<Buf> bufs);
/// pfrt_k_bias_add(_relu): x and y of [outer, c, inner], b of c. Returns
/// the element count.
int64_t checkBiasAddArgs(const char *fn, const void *x, const void *b,
                         const void *y, int64_t outer, int64_t c,
                         int64_t inner);
/// pfrt_k_activation(_grad): the kind, then x (and dy) and the output
/// (`y`, or `dx` when grad).
void checkActivationArgs(const char *fn, int32_t kind, const void *x,
                         const void *dy, const void *out, int64_t n, bool grad);

//===----------------------------------------------------------------------===//
// Reductions and layout (src/cpu/Reduce.cpp, Tensor.cpp)
//===----------------------------------------------------------------------===//

struct ReduceSizes {
  int64_t total, outTotal; // x's and y's element counts
};
/// pfrt_k_reduce_sum: rank in [0, kMaxRank], shape and flags given, no
/// negative dimension, x and y given when they have elements.
ReduceSizes checkReduceSumArgs(const char *fn, const void *x, const void *y,
                               int64_t rank, const int64_t *shape,
                               const int8_t *reduce);
/// The argument checks of pfrt_k_transpose: rank in [0, kMaxRank],
/// non-negative dims, perm a permutation, x and y given when there are
/// elements. Returns the element count.
int64_t checkTransposeArgs(const char *fn, const void *x, const void *y,
                           int64_t rank, const int64_t *shape,
                           const int64_t *perm);
/// The argument checks of pfrt_k_broadcast (src/cpu/Tensor.cpp). Returns
/// the output's element count.
int64_t checkBroadcastArgs(const char *fn, const void *x, const void *y,
                           int64_t rank, const int64_t *inShape,
                           const int64_t *outShape, int64_t elemBytes);
/// The argument checks of pfrt_copy_box (src/mpi/Boxing.cpp): dtype,
/// shapes, the box within both tensors, buffers given and the two boxes
/// apart. Returns the box's element count and its element size in *es.
int64_t checkCopyBoxArgs(const char *fn, const void *src,
                         const int64_t *src_shape, const int64_t *src_offset,
                         const void *dst, const int64_t *dst_shape,
                         const int64_t *dst_offset, const int64_t *sizes,
                         int64_t ndim, int32_t dtype, int64_t *es);

//===----------------------------------------------------------------------===//
// Matmul (src/cpu/Matmul.cpp)
//===----------------------------------------------------------------------===//

struct MatmulSizes {
  int64_t aSize, bSize, cSize; // one matrix of each
  int64_t cTotal;              // batch * cSize
};
/// pfrt_k_matmul's shapes: sizes >= 0, batch_b 1 or batch, no overflow;
/// then the bias (when hasBias: n elements), a, b and c.
MatmulSizes checkMatmulArgs(const char *fn, const void *a, const void *b,
                            const void *c, int64_t batch, int64_t batchB,
                            int64_t m, int64_t n, int64_t k,
                            bool hasBias = false, const void *bias = nullptr);

//===----------------------------------------------------------------------===//
// Softmax, layer norm, cross-entropy (src/cpu/Softmax.cpp, Norm.cpp,
// Xent.cpp)
//===----------------------------------------------------------------------===//

/// pfrt_k_softmax(_grad): outer, n, inner >= 0, and each buffer of
/// [outer, n, inner]. Returns the element count.
int64_t checkSoftmaxArgs(const char *fn, int64_t outer, int64_t n,
                         int64_t inner, std::initializer_list<Buf> bufs);
/// pfrt_k_softmax_masked and pfrt_k_softmax_grad_scaled: rows, n >= 0 and
/// each buffer of [rows, n]. Returns the element count.
int64_t checkSoftmaxRowsArgs(const char *fn, int64_t rows, int64_t n,
                             std::initializer_list<Buf> bufs);
/// pfrt_k_layer_norm and its gradients: rows, c >= 0, c >= 1 and eps > 0,
/// then the [rows, c] buffers and the per-channel ones. Returns rows * c.
int64_t checkLayerNormArgs(const char *fn, int64_t rows, int64_t c, double eps,
                           std::initializer_list<Buf> perElement,
                           std::initializer_list<Buf> perChannel);
/// The cross-entropies: n, c >= 1, logits [n, c] and labels [n]. Returns
/// n * c.
int64_t checkXentArgs(const char *fn, const void *logits, const void *labels,
                      int64_t n, int64_t c);
/// The forward's (then its loss, one float) and the gradient's (then dloss,
/// one float, and dlogits [n, c]; returns n * c).
void checkXentForwardArgs(const char *fn, const void *logits,
                          const void *labels, const void *loss, int64_t n,
                          int64_t c);
int64_t checkXentBackwardArgs(const char *fn, const void *logits,
                              const void *labels, const void *dloss,
                              const void *dlogits, int64_t n, int64_t c);
/// pfrt_k_count_kept: n >= 0, labels [n], count one float.
void checkCountKeptArgs(const char *fn, const void *labels, const void *count,
                        int64_t n);

//===----------------------------------------------------------------------===//
// Embedding (src/cpu/Embedding.cpp)
//===----------------------------------------------------------------------===//

/// The argument checks of pfrt_k_embedding(_rows) and their gradients but
/// the ids' values (data: the CPU kernels check them, the twins on the
/// device): n, vocab, d >= 0, ids given, and rows [row0, row0 + v) within
/// the vocabulary.
void checkEmbeddingArgs(const char *fn, const int64_t *ids, int64_t n,
                        int64_t v, int64_t d, int64_t row0, int64_t vocab);
/// The lookup's buffers (table [v, d], y [n, d]; returns n * d) and the
/// gradient's (dy [n, d], dtable [v, d]; returns v * d).
int64_t checkEmbeddingLookupArgs(const char *fn, const void *table,
                                 const void *y, int64_t n, int64_t v,
                                 int64_t d);
int64_t checkEmbeddingGradArgs(const char *fn, const void *dy,
                               const void *dtable, int64_t n, int64_t v,
                               int64_t d);

//===----------------------------------------------------------------------===//
// Optimizers (src/cpu/Optim.cpp)
//===----------------------------------------------------------------------===//

/// SGD's scalars: lr given, Nesterov only with a momentum and no
/// dampening, and the step given with a momentum.
void checkSgdScalars(const char *fn, const void *lr, const void *step,
                     double momentum, double dampening, int32_t nesterov);
/// pfrt_k_sgd's checks but buf's (the CPU needs it after step 1 only, the
/// twin always with a momentum): n, p, g, new_p, the scalars, and new_buf
/// with a momentum.
void checkSgdArgs(const char *fn, const void *p, const void *g, const void *lr,
                  const void *step, const void *newP, const void *newBuf,
                  int64_t n, double momentum, double dampening,
                  int32_t nesterov);
/// The pointer checks of pfrt_k_adam, n >= 0.
void checkAdamArgs(const char *fn, const void *p, const void *g, const void *m,
                   const void *v, const void *lr, const void *step,
                   const void *newP, const void *newM, const void *newV,
                   int64_t n);
/// The count of a multi-tensor update and its tables' presence.
void checkMultiTableArgs(const char *fn, void *const *ptrs, const int64_t *n,
                         int64_t count);

//===----------------------------------------------------------------------===//
// Convolution, pooling, batch norm (src/cpu/Conv.cpp, Pool.cpp, Norm.cpp)
//===----------------------------------------------------------------------===//

/// A tensor argument of a conv2d or pooling call: its name for messages,
/// the pointer and which of the call's tensors it is (Kind: ConvTensor or
/// PoolTensor), which gives its shape.
template <typename Kind> struct WindowBuf {
  const char *name;
  const void *ptr;
  Kind kind;
};

/// A conv2d call's dims (pfrt.h's 16) and what they derive.
struct ConvArgs {
  int64_t N, C, H, W, O, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G;
  int64_t Cg, Og, K, P, HW;
  bool direct; // 1x1, stride 1, no padding: the columns are x itself
};
/// The tensors of a conv2d call: x [N][C][H][W], w [O][K], y [N][O][OH][OW],
/// or their gradients.
enum class ConvTensor { X, W, Y };
using ConvBuf = WindowBuf<ConvTensor>;
/// pfrt_k_conv2d's checks: the dims, then each tensor in the order given.
ConvArgs checkConvArgs(const char *fn, const int64_t *dims,
                       std::initializer_list<ConvBuf> bufs);
/// A conv2d output of n floats that needs no GEMM: empty, or an empty sum
/// (emptySum), which zero(out, n) fills (host or device memory). False when
/// there is work to do.
template <typename Zero>
bool trivialConvOutput(float *out, int64_t n, bool emptySum, Zero zero) {
  if (n == 0)
    return true;
  if (emptySum)
    zero(out, n);
  return emptySum;
}

/// A pooling call's dims (pfrt.h's 12) and what they derive.
struct PoolArgs {
  int64_t N, C, H, W, OH, OW, KH, KW, sh, sw, ph, pw;
  int64_t planes, HW, P;
};
/// An input plane ([N][C][H][W]) or output plane ([N][C][OH][OW]) tensor.
enum class PoolTensor { In, Out };
using PoolBuf = WindowBuf<PoolTensor>;
/// pfrt_k_max_pool2d's checks: the dims, then each tensor in order.
PoolArgs checkPoolArgs(const char *fn, const int64_t *dims,
                       std::initializer_list<PoolBuf> bufs);
/// The max pool's gradient keeps int32 flat indices in a plane.
void checkPoolPlaneIndex(const char *fn, const PoolArgs &d);

struct GlobalPoolSizes {
  int64_t planes, total; // n * c, and n * c * hw
};
/// pfrt_k_global_avg_pool (x [n, c, hw], y [n, c], hw > 0 with planes) and
/// its gradient (dy [n, c], dx [n, c, hw]).
GlobalPoolSizes checkGlobalAvgPoolArgs(const char *fn, const void *x,
                                       const void *y, int64_t n, int64_t c,
                                       int64_t hw);
GlobalPoolSizes checkGlobalAvgPoolGradArgs(const char *fn, const void *dy,
                                           const void *dx, int64_t n, int64_t c,
                                           int64_t hw);

/// The batch norms: n, c, hw >= 0, x [n, c, hw], more than one value a
/// channel, eps >= 0; then the [n, c, hw] buffers and the per-channel ones.
/// Returns n * c * hw.
int64_t checkBatchNormArgs(const char *fn, const void *x, int64_t n, int64_t c,
                           int64_t hw, double eps,
                           std::initializer_list<Buf> perElement,
                           std::initializer_list<Buf> perChannel);
/// The training forward's running statistics: each pair both given or both
/// NULL.
void checkBatchNormRunning(const char *fn, const void *rmean, const void *rvar,
                           const void *newMean, const void *newVar);

//===----------------------------------------------------------------------===//
// Attention (src/cpu/Attention.cpp)
//===----------------------------------------------------------------------===//

/// What pfrt_k_attention(_grad) derive from their arguments: the local
/// dims, element counts, where the block lies in the logical [LB, LH, LT,
/// S] tensor (dropout's indices, causal's query offset t0) and dropout's
/// float32 threshold and keep scale (pfrt_k_dropout's).
struct AttentionSizes {
  int64_t batch, heads, queries, keys, dim, dimV; // B, H, T, S, D, Dv
  int64_t qElems, kElems, vElems, outElems;
  int64_t rows, scores;                               // B * H * T, and rows * S
  int64_t logicalBatch, logicalHeads, logicalQueries; // LB, LH, LT
  int64_t b0, h0, t0;
  bool hasMask, dropout;
  float threshold, keepScale;
};
/// The checks pfrt_k_attention(_grad) and their device twins share: dims
/// (B, H, T, S, Dv >= 0, D >= 1, no overflow), a finite scale, dropoutP in
/// [0, 1), the mask's dtype (F32 or BOOL) and strides (given, >= 0) when a
/// mask is given, the logical block (null: the local block is the whole
/// tensor) with logical[3] == S and no key offset, then each buffer: the
/// forward's {q, k, v, out, lse}, the gradient's {q, k, v, out, lse, dout,
/// dq, dk, dv} (dout of out's shape; dq, dk, dv of q's, k's and v's).
AttentionSizes checkAttentionArgs(const char *fn, const int64_t *dims,
                                  const void *mask, int32_t maskDtype,
                                  const int64_t *maskStrides, double scale,
                                  double dropoutP, const int64_t *logical,
                                  std::initializer_list<const void *> bufs);

//===----------------------------------------------------------------------===//
// Dropout (src/common/Inputs.cpp)
//===----------------------------------------------------------------------===//

/// The argument checks of pfrt_k_dropout: p in [0, 1], buffers, the shard,
/// and n its element count.
ShardSpec checkDropoutArgs(const char *fn, const float *x, const float *y,
                           int64_t n, double p, int64_t rank_ndim,
                           const int64_t *logical_shape, const int64_t *offset,
                           const int64_t *shape);
/// The data step (pfrt_begin_step / pfrt_set_data_step) dropout draws for.
int64_t currentDataStep();

//===----------------------------------------------------------------------===//
// Comparisons and boolean tensors (src/cpu/Logical.cpp)
//===----------------------------------------------------------------------===//

/// A PFRT_DTYPE_* code (`what` names the argument: dtype, maskDtype,
/// ...): its element size.
int64_t checkDtype(const char *fn, const char *what, int32_t dtype);
/// pfrt_k_compare: dtype, predicate in [0, 6), n and the buffers.
void checkCompareArgs(const char *fn, const void *a, const void *b,
                      const void *out, int64_t n, int32_t dtype,
                      int32_t predicate);
/// pfrt_k_logical: kind in [0, 4), n and the buffers (b but for `not`).
void checkLogicalArgs(const char *fn, const void *a, const void *b,
                      const void *out, int64_t n, int32_t kind);
/// pfrt_k_where: dtype, n and the buffers; returns the element size.
int64_t checkWhereArgs(const char *fn, const void *cond, const void *a,
                       const void *b, const void *out, int64_t n,
                       int32_t dtype);
/// pfrt_k_cast: both dtypes, n and the buffers.
void checkCastArgs(const char *fn, const void *x, int32_t xDtype, const void *y,
                   int32_t yDtype, int64_t n);

} // namespace kern
} // namespace pfrt

#endif // PFRT_SRC_COMMON_KERNELARGS_H
