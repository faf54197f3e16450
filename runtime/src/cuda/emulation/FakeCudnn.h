//===- FakeCudnn.h - a host emulation of cuDNN's backend API ----*- C++ -*-===//
//
// For tests without a GPU: with PFRT_CUDA_FAKE=1, Cudnn.cpp binds these in
// place of libcudnn.so.9's. Descriptors are host structs keeping their
// attributes; cudnnBackendFinalize checks what cuDNN requires of each
// (missing attributes, unfinalized or mistyped descriptors, mismatched
// dims), an operation graph must be exactly one of the fused flash
// attention patterns Cudnn.cpp builds (else the plan's finalize answers
// CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN, as an engine-less graph does),
// with bf16 or f16 Q/K/V/O, float32 stats and a head dim that is a
// multiple of 8 up to 128; executing a plan enqueues, on the handle's
// emulated stream (so a capture records it), the graph interpreted on the
// host in float32, each output rounded to its tensor's dtype. README.md
// says what it models. PFRT_CUDA_FAKE_NO_CUDNN=1 emulates the library
// being absent.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_FAKECUDNN_H
#define PFRT_SRC_CUDA_FAKECUDNN_H

#include "../CudnnInternal.h"

namespace pfrt {
namespace fake {
namespace dnn {

/// Whether PFRT_CUDA_FAKE_NO_CUDNN=1 asks for cuDNN to be missing.
bool absent();

// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define PFRT_FAKE_CUDNN_DECLARE(fn) decltype(::fn) fn;
PFRT_CUDNN_FUNCTIONS(PFRT_FAKE_CUDNN_DECLARE)
#undef PFRT_FAKE_CUDNN_DECLARE

} // namespace dnn
} // namespace fake
} // namespace pfrt

#endif // PFRT_SRC_CUDA_FAKECUDNN_H
