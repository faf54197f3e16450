//===- DeviceBodies.h - per-element bodies of the CUDA kernels --*- C++ -*-===//
//
// The arithmetic of libpfrt's CUDA kernels (Kernels.cu), one element or one
// row at a time, written once for both compilers: nvcc builds the kernels
// from these bodies, the emulation (../emulation/FakeKernels.cpp) builds
// Kernels.cu for the host, and the host compiler builds the same bodies
// into pfrt-test-cuda-bodies, which runs them in host loops against the CPU
// kernels (src/cpu). Each body repeats its CPU kernel's operations in the
// same order and precision (float32 where the CPU computes in float32,
// float64 sums with the same accumulator pattern), so on the host they give
// the CPU's bits; nvcc must build them with --fmad=false (no contraction,
// like -ffp-contract=off here) and IEEE division and square roots.
//
// One header a kernel family, as src/cpu has one file a family; this one
// includes them all (a twin includes only its family's).
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_KERNELS_DEVICEBODIES_H
#define PFRT_SRC_CUDA_KERNELS_DEVICEBODIES_H

#include "AttentionBodies.h"
#include "CommonBodies.h"
#include "ConvBodies.h"
#include "ElementwiseBodies.h"
#include "EmbeddingBodies.h"
#include "LogicalBodies.h"
#include "NormBodies.h"
#include "OptimBodies.h"
#include "PoolBodies.h"
#include "ReduceBodies.h"
#include "SoftmaxBodies.h"
#include "TensorBodies.h"
#include "XentBodies.h"

#endif // PFRT_SRC_CUDA_KERNELS_DEVICEBODIES_H
