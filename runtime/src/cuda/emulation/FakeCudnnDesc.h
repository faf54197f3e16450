//===- FakeCudnnDesc.h - the emulated cuDNN's descriptors -------*- C++ -*-===//
//
// Not installed; what FakeCudnn.cpp (the API, the finalize checks) and
// FakeCudnnRun.cpp (executing a graph on the host) share.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_FAKECUDNNDESC_H
#define PFRT_SRC_CUDA_FAKECUDNNDESC_H

#include <cuda.h>
#include <cudnn_graph.h>

#include <array>
#include <cstdint>
#include <map>
#include <vector>

namespace pfrt {
namespace fake {
namespace dnn {

using Dims = std::array<int64_t, 4>;

struct Attr {
  cudnnBackendAttributeType_t type;
  int64_t n;
  std::vector<uint8_t> bytes;
};

struct Desc;

/// A finalized tensor descriptor.
struct Tensor {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  Dims dims{}, strides{};
  int64_t uid = 0;
  bool isVirtual = false, byValue = false;
};

/// A finalized operation: its kind (the descriptor type), its mode (the
/// pointwise mode or reduction operator), and its tensors.
struct Op {
  cudnnBackendDescriptorType_t kind;
  int mode = -1;
  int64_t axis = -1;
  Desc *x = nullptr, *b = nullptr, *y = nullptr, *t = nullptr;
};

struct Desc {
  cudnnBackendDescriptorType_t type;
  std::map<int, Attr> attrs;
  bool finalized = false;
  Tensor tensor;
  Op op;
  int mode = -1;             // a pointwise or reduction descriptor's
  int64_t axis = -1;         // a pointwise descriptor's GEN_INDEX axis
  std::vector<Desc *> order; // a graph's operations
  cudnnStatus_t support = CUDNN_STATUS_SUCCESS; // a graph's engine answer
  int64_t workspace = 0;                        // a graph's, a plan's
  Desc *graph = nullptr; // heuristics, engine config, plan
};

struct Handle {
  CUstream stream = nullptr;
};

/// Runs graph's operations in order on the host: `ptrs` are the real
/// tensors' buffers by unique id, `values` the by-value tensors' floats.
void runGraph(const Desc &graph, const std::map<int64_t, void *> &ptrs,
              const std::map<int64_t, float> &values);

} // namespace dnn
} // namespace fake
} // namespace pfrt

#endif // PFRT_SRC_CUDA_FAKECUDNNDESC_H
