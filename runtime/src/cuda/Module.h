//===- Module.h - the twins' CUDA kernels: module, launches ----*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The module of libpfrt's
// own CUDA kernels (kernels/Kernels.cu, an nvcc fatbin embedded at build
// time), loaded once by Module.cpp, and how the device twins
// (kernels/*.cpp) launch them on the compute stream; the device error
// record the kernels write what they find wrong in the data to, and the
// check that makes it fatal; grow-only device scratch.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_MODULE_H
#define PFRT_SRC_CUDA_MODULE_H

#include "kernels/CommonBodies.h"

#include <cstdint>

namespace pfrt {
namespace twin {

/// Every kernel of Kernels.cu the twins launch: its enumerator and its
/// name in the fatbin (runtime/test/check_fatbin.py reads this table).
#define PFRT_CUDA_KERNELS(X)                                                   \
  X(Relu, "pfrt_cuda_relu")                                                    \
  X(ReluGrad, "pfrt_cuda_relu_grad")                                           \
  X(Add, "pfrt_cuda_add")                                                      \
  X(Mul, "pfrt_cuda_mul")                                                      \
  X(Scale, "pfrt_cuda_scale")                                                  \
  X(Copy, "pfrt_cuda_copy")                                                    \
  X(Fill, "pfrt_cuda_fill")                                                    \
  X(SplitTF32, "pfrt_cuda_split_tf32")                                         \
  X(BiasAdd, "pfrt_cuda_bias_add")                                             \
  X(BiasRows, "pfrt_cuda_bias_rows")                                           \
  X(ReduceSum, "pfrt_cuda_reduce_sum")                                         \
  X(ReduceColumnPart, "pfrt_cuda_reduce_column_part")                          \
  X(ReduceRunPart, "pfrt_cuda_reduce_run_part")                                \
  X(ReducePartsSum, "pfrt_cuda_reduce_parts_sum")                              \
  X(XentRows, "pfrt_cuda_xent_rows")                                           \
  X(XentTotal, "pfrt_cuda_xent_total")                                         \
  X(XentCheckLabels, "pfrt_cuda_xent_check_labels")                            \
  X(XentStats, "pfrt_cuda_xent_stats")                                         \
  X(XentGrad, "pfrt_cuda_xent_grad")                                           \
  X(Sgd, "pfrt_cuda_sgd")                                                      \
  X(Adam, "pfrt_cuda_adam")                                                    \
  X(SgdMulti, "pfrt_cuda_sgd_multi")                                           \
  X(AdamMulti, "pfrt_cuda_adam_multi")                                         \
  X(Activation, "pfrt_cuda_activation")                                        \
  X(Transpose, "pfrt_cuda_transpose")                                          \
  X(Im2col, "pfrt_cuda_im2col")                                                \
  X(Col2im, "pfrt_cuda_col2im")                                                \
  X(SumImages, "pfrt_cuda_sum_images")                                         \
  X(MaxPool, "pfrt_cuda_max_pool")                                             \
  X(MaxPoolArg, "pfrt_cuda_max_pool_arg")                                      \
  X(MaxPoolGrad, "pfrt_cuda_max_pool_grad")                                    \
  X(AvgPool, "pfrt_cuda_avg_pool")                                             \
  X(AvgPoolGrad, "pfrt_cuda_avg_pool_grad")                                    \
  X(GlobalAvgPool, "pfrt_cuda_global_avg_pool")                                \
  X(GlobalAvgPoolGrad, "pfrt_cuda_global_avg_pool_grad")                       \
  X(BnRuns, "pfrt_cuda_bn_runs")                                               \
  X(BnTrainChannels, "pfrt_cuda_bn_train_channels")                            \
  X(BnEvalChannels, "pfrt_cuda_bn_eval_channels")                              \
  X(BnGradInputChannels, "pfrt_cuda_bn_grad_input_channels")                   \
  X(BnGradParamsChannels, "pfrt_cuda_bn_grad_params_channels")                 \
  X(BnAffine, "pfrt_cuda_bn_affine")                                           \
  X(BnGradInput, "pfrt_cuda_bn_grad_input")                                    \
  X(SetScalar, "pfrt_cuda_set_scalar")                                         \
  X(Sub, "pfrt_cuda_sub")                                                      \
  X(Div, "pfrt_cuda_div")                                                      \
  X(MaskedFill, "pfrt_cuda_masked_fill")                                       \
  X(Softmax, "pfrt_cuda_softmax")                                              \
  X(SoftmaxGrad, "pfrt_cuda_softmax_grad")                                     \
  X(LnStats, "pfrt_cuda_ln_stats")                                             \
  X(LnAffine, "pfrt_cuda_ln_affine")                                           \
  X(LnGradInput, "pfrt_cuda_ln_grad_input")                                    \
  X(LnGradParams, "pfrt_cuda_ln_grad_params")                                  \
  X(CopyElems, "pfrt_cuda_copy_elems")                                         \
  X(CopyBlocks, "pfrt_cuda_copy_blocks")                                       \
  X(EmbeddingCheck, "pfrt_cuda_embedding_check")                               \
  X(Embedding, "pfrt_cuda_embedding")                                          \
  X(EmbeddingIndex, "pfrt_cuda_embedding_index")                               \
  X(EmbeddingGrad, "pfrt_cuda_embedding_grad")                                 \
  X(XentRowsIgnore, "pfrt_cuda_xent_rows_ignore")                              \
  X(XentTotalIgnore, "pfrt_cuda_xent_total_ignore")                            \
  X(XentGradScale, "pfrt_cuda_xent_grad_scale")                                \
  X(XentGradIgnore, "pfrt_cuda_xent_grad_ignore")                              \
  X(CountKept, "pfrt_cuda_count_kept")                                         \
  X(VxentMax, "pfrt_cuda_vxent_max")                                           \
  X(VxentSums, "pfrt_cuda_vxent_sums")                                         \
  X(VxentLoss, "pfrt_cuda_vxent_loss")                                         \
  X(VxentScale, "pfrt_cuda_vxent_scale")                                       \
  X(VxentGrad, "pfrt_cuda_vxent_grad")                                         \
  X(Dropout, "pfrt_cuda_dropout")                                              \
  X(Attention, "pfrt_cuda_attention")                                          \
  X(AttentionDelta, "pfrt_cuda_attention_delta")                               \
  X(AttentionGradKV, "pfrt_cuda_attention_grad_kv")                            \
  X(AttentionGradQ, "pfrt_cuda_attention_grad_q")                              \
  X(Compare, "pfrt_cuda_compare")                                              \
  X(Logical, "pfrt_cuda_logical")                                              \
  X(Where, "pfrt_cuda_where")                                                  \
  X(Cast, "pfrt_cuda_cast")

enum Kernel {
#define PFRT_ENUM(id, name) k##id,
  PFRT_CUDA_KERNELS(PFRT_ENUM)
#undef PFRT_ENUM
      kNumKernels
};

/// The loaded module (Module.cpp keeps the one), its error record, the
/// dropout step slot and the scratch.
struct Module {
  bool loaded = false;
  void *fn[kNumKernels] = {};
  dev::DeviceError *err = nullptr; // device
  // Dropout's data step in a captured step: a device slot, refreshed from
  // a page-locked host copy before each replay.
  int64_t *dataStep = nullptr; // device
  int64_t *dataStepHost = nullptr;
  // Grow-only scratch (per-row sums of the cross-entropy, column matrices
  // of the convolutions, max-pool arg-maxes, batch-norm sums). A smaller
  // buffer it replaces is kept: enqueued kernels or a captured graph may use
  // it.
  void *scratch = nullptr;
  int64_t scratchBytes = 0;
};

/// Fatal unless the GPU is initialised.
void requireDevice(const char *fn);

/// Loads the kernels and allocates the error record (once; the device must
/// be initialised).
Module &kernels(const char *fn);

/// Device scratch of at least `bytes` bytes (stream-ordered reuse).
void *scratch(int64_t bytes, const char *fn);

/// Launches kernel k with kBlock threads a block over n items (grid-stride
/// beyond 2^20 blocks); n == 0 launches nothing.
void launch(Kernel k, int64_t n, void **args, const char *fn);
/// Launches kernel k on `blocks` blocks of kBlock threads.
void launchBlocks(Kernel k, int64_t blocks, void **args, const char *fn);
/// Launches kernel k on one block of kBlock threads.
void launchBlock(Kernel k, void **args, const char *fn);
/// Launches kernel k on one thread.
void launchSingle(Kernel k, void **args, const char *fn);

/// Reads the device error record (waits for the stream) and makes a
/// recorded error fatal, naming the twin that found it and `where`.
void checkErrors(const char *where);

} // namespace twin
} // namespace pfrt

#endif // PFRT_SRC_CUDA_MODULE_H
