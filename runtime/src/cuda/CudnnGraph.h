//===- CudnnGraph.h - cuDNN's SDPA graphs from backend descriptors -*- C++ -*-//
//
// Not installed; nothing here is part of the ABI. The operation graphs of
// cuDNN 9's fused flash attention ("fused flash attention fprop / bprop"
// in cuDNN's graph API documentation), written from the documented backend
// descriptors: MATMUL, POINTWISE (scale, bias, the causal mask as GEN_INDEX
// + CMP_GE + BINARY_SELECT, EXP, LOG, DIV, SUB, MUL), REDUCTION (max, add)
// and RESHAPE (the transposes of P and dS), with the softmax statistics
// (each query row's log-sum-exp, float32) the forward writes and the
// backward reads. The [B, H, T, D] tensors are read in place: K and V
// enter the products transposed through their strides.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_CUDNNGRAPH_H
#define PFRT_SRC_CUDA_CUDNNGRAPH_H

#include <cudnn_graph.h>

#include <array>
#include <cstdint>
#include <vector>

namespace pfrt {
namespace cuda {
namespace dnn {

/// The tensors' unique ids in the variant pack.
enum Uid : int64_t {
  kQ = 1,
  kKT = 2, // K as [B, H, D, S] (strides)
  kVT = 3, // V as [B, H, Dv, S] (the backward's dP)
  kO = 4,
  kStats = 5,
  kBias = 6,
  kScale = 7,  // by value
  kNegInf = 8, // by value
  kDO = 9,
  kDQ = 10,
  kDK = 11,
  kDV = 12,
  kK = 13, // K as [B, H, S, D] (the backward's dQ)
  kV = 14, // V as [B, H, S, Dv] (the forward's P V)
};

/// What fixes a graph: the sizes, the dtype, the mask's kind and strides,
/// causal, the direction. One plan is built for each.
struct SdpaKey {
  int64_t b, h, t, s, d, dv;
  cudnnDataType_t dtype;
  int32_t causal;
  int32_t bias;                 // an additive float32 [B|1, H|1, T, S] mask
  std::array<int64_t, 4> biasS; // its strides (0 on a broadcast axis)
  int32_t backward;
  bool operator<(const SdpaKey &o) const;
};

/// Owns the descriptors of one graph (destroyed with it) and builds them;
/// every failure is fatal, naming the call.
class SdpaGraph {
public:
  explicit SdpaGraph(cudnnHandle_t handle) : handle(handle) {}
  ~SdpaGraph();
  SdpaGraph(const SdpaGraph &) = delete;
  SdpaGraph &operator=(const SdpaGraph &) = delete;

  /// The forward (O and the stats) or the backward (dQ, dK, dV) of `key`;
  /// the finalized operation graph.
  cudnnBackendDescriptor_t build(const SdpaKey &key);

private:
  using D = cudnnBackendDescriptor_t;
  using Dims = std::array<int64_t, 4>;
  cudnnHandle_t handle;
  std::vector<D> owned, ops;
  int64_t nextVirtual = 100;
  D scaleT = nullptr; // the by-value scale, one descriptor a graph

  D scale();

  D make(cudnnBackendDescriptorType_t type);
  void set(D d, cudnnBackendAttributeName_t attr, cudnnBackendAttributeType_t t,
           int64_t n, const void *v);
  void setDesc(D d, cudnnBackendAttributeName_t attr, D v);
  void finalize(D d, const char *what);
  D tensor(int64_t uid, cudnnDataType_t type, Dims dims, Dims strides,
           bool isVirtual, bool byValue = false);
  D virt(Dims dims, cudnnDataType_t type = CUDNN_DATA_FLOAT);
  D matmul(D a, D b, D c);
  D pointwise(cudnnPointwiseMode_t mode, D x, D b, D y, D t = nullptr,
              int64_t axis = -1);
  D unary(cudnnPointwiseMode_t mode, D x, Dims dims);
  D binary(cudnnPointwiseMode_t mode, D x, D b, Dims dims);
  D reduce(cudnnReduceTensorOp_t op, D x, Dims dims);
  D transpose(D x, Dims dims);
  D scores(const SdpaKey &k, D q, D kt);
  void forward(const SdpaKey &k);
  void backward(const SdpaKey &k);
};

} // namespace dnn
} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_CUDNNGRAPH_H
