//===- CudnnNone.cpp - the cuDNN rows of a libpfrt built without cudnn.h --===//
//
// A CUDA build without cuDNN 9's headers (cudnn_graph.h): the rows exist
// (the ABI is the same) and say why they cannot run.
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "pfrt/pfrt_cuda.h"

using namespace pfrt;

extern "C" {

int pfrt_cuda_cudnn_attention(const void *, const void *, const void *,
                              const float *, const int64_t *, void *, float *,
                              const int64_t *, int32_t, double, int32_t) {
  fatal("pfrt_cuda_cudnn_attention: libpfrt was built without cuDNN's "
        "headers (no cudnn_graph.h)");
}

int pfrt_cuda_cudnn_attention_grad(const void *, const void *, const void *,
                                   const float *, const int64_t *, const void *,
                                   const float *, const void *, void *, void *,
                                   void *, const int64_t *, int32_t, double,
                                   int32_t) {
  fatal("pfrt_cuda_cudnn_attention_grad: libpfrt was built without cuDNN's "
        "headers (no cudnn_graph.h)");
}

int64_t pfrt_cuda_cudnn_plans_built(void) { return 0; }

} // extern "C"
