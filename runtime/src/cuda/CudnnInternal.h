//===- CudnnInternal.h - cuDNN's backend API, dlopen'ed ---------*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI. The cuDNN 9 entry points
// that Cudnn.cpp (pfrt_cuda_cudnn_attention(_grad)) binds at first use:
// libcudnn.so.9's backend API, typed from cudnn_graph.h. Under
// PFRT_CUDA_FAKE=1 they are emulation/FakeCudnn.h's host structs instead.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_CUDNNINTERNAL_H
#define PFRT_SRC_CUDA_CUDNNINTERNAL_H

#include <cudnn_graph.h>

namespace pfrt {
namespace cuda {
namespace dnn {

// The entry points used, each typed from its declaration.
#define PFRT_CUDNN_FUNCTIONS(X)                                                \
  X(cudnnGetVersion)                                                           \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreate)                                                               \
  X(cudnnSetStream)                                                            \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

struct Api {
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define PFRT_FIELD(fn) decltype(&::fn) fn = nullptr;
  PFRT_CUDNN_FUNCTIONS(PFRT_FIELD)
#undef PFRT_FIELD
};

/// The bound entry points (loaded at the first call: the library, or the
/// emulation under PFRT_CUDA_FAKE=1); a missing library is one line naming
/// it, exit status 2.
const Api &api();

} // namespace dnn
} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_CUDNNINTERNAL_H
