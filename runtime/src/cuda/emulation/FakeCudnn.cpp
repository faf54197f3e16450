//===- FakeCudnn.cpp - a host emulation of cuDNN's backend API ------------===//
//
// See FakeCudnn.h. A descriptor is a Desc: its attributes as set (type,
// count, bytes), and once finalized what they say (a tensor, an operation,
// a graph's operations in dependency order). Executing a plan interprets
// its graph: virtual tensors are float32 host arrays, real ones are read
// and written through their strides in their dtype.
//
//===----------------------------------------------------------------------===//

#include "FakeCudnn.h"
#include "FakeCudnnDesc.h"

#include "../../common/HalfMath.h"
#include "FakeDevice.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace pfrt {
namespace fake {
namespace dnn {
namespace {

std::set<Desc *> gLive;

size_t elementBytes(cudnnBackendAttributeType_t t) {
  switch (t) {
  case CUDNN_TYPE_HANDLE:
  case CUDNN_TYPE_VOID_PTR:
  case CUDNN_TYPE_BACKEND_DESCRIPTOR:
    return sizeof(void *);
  case CUDNN_TYPE_INT64:
  case CUDNN_TYPE_DOUBLE:
    return 8;
  case CUDNN_TYPE_BOOLEAN:
    return sizeof(bool);
  case CUDNN_TYPE_DATA_TYPE:
  case CUDNN_TYPE_HEUR_MODE:
  case CUDNN_TYPE_POINTWISE_MODE:
  case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
  case CUDNN_TYPE_FLOAT:
  case CUDNN_TYPE_INT32:
    return 4;
  default:
    return 0;
  }
}

/// The attributes each emulated descriptor type takes, with their types.
cudnnBackendAttributeType_t expectedType(cudnnBackendDescriptorType_t d, int a,
                                         bool *known) {
  *known = true;
  switch (d) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    if (a == CUDNN_ATTR_TENSOR_DATA_TYPE)
      return CUDNN_TYPE_DATA_TYPE;
    if (a == CUDNN_ATTR_TENSOR_IS_VIRTUAL || a == CUDNN_ATTR_TENSOR_IS_BY_VALUE)
      return CUDNN_TYPE_BOOLEAN;
    if (a == CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT ||
        a == CUDNN_ATTR_TENSOR_DIMENSIONS || a == CUDNN_ATTR_TENSOR_STRIDES ||
        a == CUDNN_ATTR_TENSOR_UNIQUE_ID)
      return CUDNN_TYPE_INT64;
    break;
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    if (a == CUDNN_ATTR_MATMUL_COMP_TYPE)
      return CUDNN_TYPE_DATA_TYPE;
    break;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    if (a == CUDNN_ATTR_POINTWISE_MODE)
      return CUDNN_TYPE_POINTWISE_MODE;
    if (a == CUDNN_ATTR_POINTWISE_MATH_PREC)
      return CUDNN_TYPE_DATA_TYPE;
    if (a == CUDNN_ATTR_POINTWISE_AXIS)
      return CUDNN_TYPE_INT64;
    break;
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    if (a == CUDNN_ATTR_REDUCTION_OPERATOR)
      return CUDNN_TYPE_REDUCTION_OPERATOR_TYPE;
    if (a == CUDNN_ATTR_REDUCTION_COMP_TYPE)
      return CUDNN_TYPE_DATA_TYPE;
    break;
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    if (a >= CUDNN_ATTR_OPERATION_MATMUL_ADESC &&
        a <= CUDNN_ATTR_OPERATION_MATMUL_DESC)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    break;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    if ((a >= CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR &&
         a <= CUDNN_ATTR_OPERATION_POINTWISE_YDESC) ||
        a == CUDNN_ATTR_OPERATION_POINTWISE_TDESC)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    break;
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    if (a >= CUDNN_ATTR_OPERATION_REDUCTION_XDESC &&
        a <= CUDNN_ATTR_OPERATION_REDUCTION_DESC)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    break;
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    if (a == CUDNN_ATTR_OPERATION_RESHAPE_XDESC ||
        a == CUDNN_ATTR_OPERATION_RESHAPE_YDESC)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    if (a == CUDNN_ATTR_OPERATIONGRAPH_OPS)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    if (a == 800) // CUDNN_ATTR_OPERATIONGRAPH_HANDLE
      return CUDNN_TYPE_HANDLE;
    break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    if (a == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    if (a == CUDNN_ATTR_ENGINEHEUR_MODE)
      return CUDNN_TYPE_HEUR_MODE;
    break;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    if (a == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG)
      return CUDNN_TYPE_BACKEND_DESCRIPTOR;
    if (a == 400) // CUDNN_ATTR_EXECUTION_PLAN_HANDLE
      return CUDNN_TYPE_HANDLE;
    break;
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    if (a == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS)
      return CUDNN_TYPE_INT64;
    if (a == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS ||
        a == CUDNN_ATTR_VARIANT_PACK_WORKSPACE)
      return CUDNN_TYPE_VOID_PTR;
    break;
  default:
    break;
  }
  *known = false;
  return CUDNN_TYPE_HANDLE;
}

Desc *live(void *d) {
  auto *p = static_cast<Desc *>(d);
  return gLive.count(p) ? p : nullptr;
}

const Attr *find(const Desc &d, int a) {
  auto it = d.attrs.find(a);
  return it == d.attrs.end() ? nullptr : &it->second;
}

template <typename T> T scalar(const Desc &d, int a, T otherwise) {
  const Attr *at = find(d, a);
  if (!at || at->bytes.size() < sizeof(T))
    return otherwise;
  T v;
  std::memcpy(&v, at->bytes.data(), sizeof(T));
  return v;
}

template <typename T> std::vector<T> array(const Desc &d, int a) {
  const Attr *at = find(d, a);
  std::vector<T> v;
  if (at) {
    v.resize(size_t(at->n));
    std::memcpy(v.data(), at->bytes.data(), v.size() * sizeof(T));
  }
  return v;
}

/// The descriptor attribute a of d: null when unset; *bad is set to the
/// status cuDNN answers when it is not finalized or not of type `want`.
Desc *descAttr(const Desc &d, int a, cudnnBackendDescriptorType_t want,
               cudnnStatus_t *bad) {
  std::vector<void *> v = array<void *>(d, a);
  if (v.empty())
    return nullptr;
  Desc *p = live(v[0]);
  if (!p)
    *bad = CUDNN_STATUS_BAD_PARAM;
  else if (p->type != want)
    *bad = CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
  else if (!p->finalized)
    *bad = CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  return p;
}

cudnnStatus_t finalizeTensor(Desc &d) {
  for (int a : {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS,
                CUDNN_ATTR_TENSOR_STRIDES, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT})
    if (!find(d, a))
      return CUDNN_STATUS_BAD_PARAM;
  std::vector<int64_t> dims = array<int64_t>(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  std::vector<int64_t> st = array<int64_t>(d, CUDNN_ATTR_TENSOR_STRIDES);
  if (dims.size() != st.size())
    return CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  if (dims.size() != 4) // the emulation's graphs are 4-d
    return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  Tensor &t = d.tensor;
  for (int i = 0; i < 4; ++i) {
    if (dims[size_t(i)] <= 0 || st[size_t(i)] <= 0)
      return CUDNN_STATUS_BAD_PARAM;
    t.dims[size_t(i)] = dims[size_t(i)];
    t.strides[size_t(i)] = st[size_t(i)];
  }
  t.type = scalar(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_DATA_FLOAT);
  t.uid = scalar<int64_t>(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0);
  t.isVirtual = scalar(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, false);
  t.byValue = scalar(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, false);
  if (scalar<int64_t>(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0) <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/// Whether a broadcasts to y (each dim equal or 1).
bool broadcasts(const Tensor &a, const Tensor &y) {
  for (int i = 0; i < 4; ++i)
    if (a.dims[size_t(i)] != y.dims[size_t(i)] && a.dims[size_t(i)] != 1)
      return false;
  return true;
}

int64_t numel(const Dims &d) { return d[0] * d[1] * d[2] * d[3]; }

/// The shape rules of each operation (cuDNN's at finalize).
cudnnStatus_t checkShapes(const Op &op) {
  const Tensor &x = op.x->tensor, &y = op.y->tensor;
  switch (op.kind) {
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
    const Tensor &b = op.b->tensor;
    bool ok = x.dims[3] == b.dims[2] && y.dims[2] == x.dims[2] &&
              y.dims[3] == b.dims[3];
    for (size_t i = 0; i < 2; ++i)
      ok = ok && (x.dims[i] == y.dims[i] || x.dims[i] == 1) &&
           (b.dims[i] == y.dims[i] || b.dims[i] == 1);
    return ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  }
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    if (op.mode == CUDNN_POINTWISE_GEN_INDEX)
      return x.dims == y.dims && op.axis >= 0 && op.axis < 4
                 ? CUDNN_STATUS_SUCCESS
                 : CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
    if (!broadcasts(x, y) || (op.b && !broadcasts(op.b->tensor, y)) ||
        (op.t && !broadcasts(op.t->tensor, y)))
      return CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    return broadcasts(y, x) ? CUDNN_STATUS_SUCCESS
                            : CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  default: // reshape
    return numel(x.dims) == numel(y.dims)
               ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  }
}

/// The operation d says, from its attributes.
cudnnStatus_t finalizeOp(Desc &d) {
  Op &op = d.op;
  op.kind = d.type;
  cudnnStatus_t bad = CUDNN_STATUS_SUCCESS;
  const auto kTensor = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
  Desc *desc = nullptr;
  switch (d.type) {
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    op.x = descAttr(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC, kTensor, &bad);
    op.b = descAttr(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC, kTensor, &bad);
    op.y = descAttr(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC, kTensor, &bad);
    desc = descAttr(d, CUDNN_ATTR_OPERATION_MATMUL_DESC,
                    CUDNN_BACKEND_MATMUL_DESCRIPTOR, &bad);
    if (!op.b)
      return CUDNN_STATUS_BAD_PARAM;
    break;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    op.x = descAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, kTensor, &bad);
    op.b = descAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, kTensor, &bad);
    op.y = descAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, kTensor, &bad);
    op.t = descAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, kTensor, &bad);
    desc = descAttr(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                    CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &bad);
    break;
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    op.x = descAttr(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, kTensor, &bad);
    op.y = descAttr(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, kTensor, &bad);
    desc = descAttr(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                    CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &bad);
    break;
  default: // reshape
    op.x = descAttr(d, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, kTensor, &bad);
    op.y = descAttr(d, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, kTensor, &bad);
    break;
  }
  if (bad != CUDNN_STATUS_SUCCESS)
    return bad;
  if (!op.x || !op.y ||
      (d.type != CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR && !desc))
    return CUDNN_STATUS_BAD_PARAM;
  if (desc) {
    op.mode = desc->mode;
    op.axis = desc->axis;
  }
  if (d.type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) {
    const int m = op.mode;
    const bool unary = m == CUDNN_POINTWISE_EXP || m == CUDNN_POINTWISE_LOG ||
                       m == CUDNN_POINTWISE_GEN_INDEX ||
                       m == CUDNN_POINTWISE_IDENTITY;
    if (!unary && !op.b)
      return CUDNN_STATUS_BAD_PARAM;
    if ((m == CUDNN_POINTWISE_BINARY_SELECT) != (op.t != nullptr))
      return CUDNN_STATUS_BAD_PARAM;
  }
  return checkShapes(op);
}

/// The token of an operation in a graph's pattern.
std::string token(const Op &op) {
  switch (op.kind) {
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    return "mm";
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    return "reshape";
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
    return op.mode == CUDNN_REDUCE_TENSOR_MAX   ? "max"
           : op.mode == CUDNN_REDUCE_TENSOR_ADD ? "sum"
                                                : "reduce?";
  default:
    break;
  }
  switch (op.mode) {
  case CUDNN_POINTWISE_ADD:
    return "add";
  case CUDNN_POINTWISE_SUB:
    return "sub";
  case CUDNN_POINTWISE_MUL:
    return "mul";
  case CUDNN_POINTWISE_DIV:
    return "div";
  case CUDNN_POINTWISE_EXP:
    return "exp";
  case CUDNN_POINTWISE_LOG:
    return "log";
  case CUDNN_POINTWISE_GEN_INDEX:
    return op.axis == 2 ? "row" : op.axis == 3 ? "col" : "index?";
  case CUDNN_POINTWISE_CMP_GE:
    return "ge";
  case CUDNN_POINTWISE_BINARY_SELECT:
    return "select";
  default:
    return "pointwise?";
  }
}

/// The fused flash attention patterns (forward, backward), with or
/// without the bias and the causal mask.
bool supportedPattern(const std::string &sig) {
  for (int bwd = 0; bwd < 2; ++bwd)
    for (int bias = 0; bias < 2; ++bias)
      for (int causal = 0; causal < 2; ++causal) {
        std::string score = std::string("mm mul ") + (bias ? "add " : "") +
                            (causal ? "row col ge select " : "");
        std::string want =
            bwd ? "mul sum " + score +
                      "sub exp reshape mm mm sub mul mul mm reshape mm "
                : score + "max sub exp sum log add div mm ";
        if (sig == want)
          return true;
      }
  return false;
}

/// What an engine says of a graph in dependency order: the pattern, the
/// dtypes (bf16 or f16 Q, K, V, O and their gradients; float32 stats and
/// bias), the head dims, the layouts.
cudnnStatus_t engineSupport(const std::vector<Desc *> &order) {
  std::string sig;
  for (Desc *o : order)
    sig += token(o->op) + " ";
  if (!supportedPattern(sig))
    return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
  const Tensor &q = order[sig.rfind("mul sum", 0) == 0 ? 2 : 0]->op.x->tensor;
  if (q.isVirtual ||
      (q.type != CUDNN_DATA_BFLOAT16 && q.type != CUDNN_DATA_HALF))
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  for (Desc *o : order)
    for (Desc *t : {o->op.x, o->op.b, o->op.y}) {
      if (!t || t->tensor.isVirtual || t->tensor.byValue)
        continue;
      const Tensor &x = t->tensor;
      if (x.type != q.type && x.type != CUDNN_DATA_FLOAT)
        return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
      if (x.strides[3] != 1 && x.strides[2] != 1)
        return CUDNN_STATUS_NOT_SUPPORTED_LAYOUT;
      if (o->op.kind == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR &&
          x.type == CUDNN_DATA_FLOAT)
        return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE; // Q, K, V, O, dX
    }
  const int64_t d = q.dims[3], dv = order.back()->op.y->tensor.dims[3];
  for (int64_t h : {d, dv})
    if (h > 128 || h % 8 != 0)
      return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  return CUDNN_STATUS_SUCCESS;
}

/// A graph: its operations finalized, one tensor a unique id, in an order
/// where each virtual tensor is made before it is read.
cudnnStatus_t finalizeGraph(Desc &g) {
  std::vector<void *> ops = array<void *>(g, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops.empty() || !find(g, 800))
    return CUDNN_STATUS_BAD_PARAM;
  std::vector<Desc *> todo;
  std::map<int64_t, Desc *> byUid;
  for (void *p : ops) {
    Desc *o = live(p);
    if (!o)
      return CUDNN_STATUS_BAD_PARAM;
    if (!o->finalized)
      return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
    for (Desc *t : {o->op.x, o->op.b, o->op.y, o->op.t}) {
      if (!t)
        continue;
      Desc *&seen = byUid[t->tensor.uid];
      if (seen && seen != t)
        return CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES;
      seen = t;
    }
    todo.push_back(o);
  }
  std::set<int64_t> made;
  while (!todo.empty()) {
    // An op whose virtual inputs are all made.
    auto madeTensor = [&](const Desc *t) {
      return !t || !t->tensor.isVirtual || made.count(t->tensor.uid) != 0;
    };
    size_t ready = 0;
    while (ready < todo.size() &&
           !(madeTensor(todo[ready]->op.x) && madeTensor(todo[ready]->op.b) &&
             madeTensor(todo[ready]->op.t)))
      ++ready;
    if (ready == todo.size()) // a virtual tensor nothing makes (or a cycle)
      return CUDNN_STATUS_BAD_PARAM;
    made.insert(todo[ready]->op.y->tensor.uid);
    g.order.push_back(todo[ready]);
    todo.erase(todo.begin() + std::ptrdiff_t(ready));
  }
  g.support = engineSupport(g.order);
  // The backward's scratch (emulated): a float32 row sum a query row.
  const Tensor &x = g.order.front()->op.x->tensor;
  if (g.order.front()->op.kind == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
    g.workspace = x.dims[0] * x.dims[1] * x.dims[2] * 4;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalizeDesc(Desc &d) {
  cudnnStatus_t bad = CUDNN_STATUS_SUCCESS;
  switch (d.type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return finalizeTensor(d);
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    return find(d, CUDNN_ATTR_MATMUL_COMP_TYPE) ? CUDNN_STATUS_SUCCESS
                                                : CUDNN_STATUS_BAD_PARAM;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    d.mode = scalar<int>(d, CUDNN_ATTR_POINTWISE_MODE, -1);
    d.axis = scalar<int64_t>(d, CUDNN_ATTR_POINTWISE_AXIS, -1);
    if (d.mode < 0 || !find(d, CUDNN_ATTR_POINTWISE_MATH_PREC) ||
        (d.mode == CUDNN_POINTWISE_GEN_INDEX && d.axis < 0))
      return CUDNN_STATUS_BAD_PARAM;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
    d.mode = scalar<int>(d, CUDNN_ATTR_REDUCTION_OPERATOR, -1);
    return d.mode >= 0 && find(d, CUDNN_ATTR_REDUCTION_COMP_TYPE)
               ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_BAD_PARAM;
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR:
    return finalizeOp(d);
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    return finalizeGraph(d);
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    d.graph = descAttr(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                       CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &bad);
    if (bad == CUDNN_STATUS_SUCCESS &&
        (!d.graph || !find(d, CUDNN_ATTR_ENGINEHEUR_MODE)))
      bad = CUDNN_STATUS_BAD_PARAM;
    return bad;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: {
    Desc *cfg = descAttr(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                         CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &bad);
    if (bad != CUDNN_STATUS_SUCCESS)
      return bad;
    if (!cfg || !find(d, 400))
      return CUDNN_STATUS_BAD_PARAM;
    d.graph = cfg->graph;
    d.workspace = d.graph->workspace;
    return d.graph->support;
  }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
    const Attr *ids = find(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    const Attr *ptrs = find(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    if (!ids || !ptrs || !find(d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE))
      return CUDNN_STATUS_BAD_PARAM;
    return ids->n == ptrs->n ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
  }
  default: // an engine configuration is made by the heuristics
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
}

/// A plan's execution: every real tensor of its graph in the pack, the
/// workspace when it needs one; then the graph, enqueued on the stream.
cudnnStatus_t execute(Handle &h, const Desc &plan, const Desc &pack) {
  std::vector<int64_t> ids =
      array<int64_t>(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  std::vector<void *> ptrs =
      array<void *>(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  std::map<int64_t, void *> byUid;
  for (size_t i = 0; i < ids.size(); ++i)
    if (!byUid.emplace(ids[i], ptrs[i]).second)
      return CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES;
  std::map<int64_t, void *> bufs;
  std::map<int64_t, float> values;
  for (const Desc *o : plan.graph->order)
    for (const Desc *t : {o->op.x, o->op.b, o->op.y, o->op.t}) {
      if (!t || t->tensor.isVirtual)
        continue;
      auto it = byUid.find(t->tensor.uid);
      if (it == byUid.end())
        return CUDNN_STATUS_BAD_PARAM;
      if (!it->second)
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
      if (t->tensor.byValue) // read now, as cuDNN copies it at the call
        values[t->tensor.uid] = *static_cast<const float *>(it->second);
      else
        bufs[t->tensor.uid] = it->second;
    }
  if (plan.workspace > 0 &&
      !scalar<void *>(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, nullptr))
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  const Desc *graph = plan.graph;
  CUresult r = enqueueHostOpOn(
      h.stream, [graph, bufs, values] { runGraph(*graph, bufs, values); });
  return r == CUDA_SUCCESS ? CUDNN_STATUS_SUCCESS
                           : CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER;
}

} // namespace

bool absent() {
  const char *v = std::getenv("PFRT_CUDA_FAKE_NO_CUDNN");
  return v && std::strcmp(v, "1") == 0;
}

size_t cudnnGetVersion() { return CUDNN_VERSION; }

const char *cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
  case CUDNN_STATUS_SUCCESS:
    return "CUDNN_STATUS_SUCCESS";
  case CUDNN_STATUS_BAD_PARAM:
    return "CUDNN_STATUS_BAD_PARAM";
  case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
    return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
  case CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED:
    return "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED";
  case CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH:
    return "CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH";
  case CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES:
    return "CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES";
  case CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE:
    return "CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE";
  case CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE:
    return "CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE";
  case CUDNN_STATUS_NOT_SUPPORTED:
    return "CUDNN_STATUS_NOT_SUPPORTED";
  case CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN:
    return "CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN";
  case CUDNN_STATUS_NOT_SUPPORTED_SHAPE:
    return "CUDNN_STATUS_NOT_SUPPORTED_SHAPE";
  case CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE:
    return "CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE";
  case CUDNN_STATUS_NOT_SUPPORTED_LAYOUT:
    return "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT";
  case CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER:
    return "CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER";
  default:
    return "CUDNN_STATUS_UNKNOWN (emulated)";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle)
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *handle = reinterpret_cast<cudnnHandle_t>(new Handle);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle)
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  reinterpret_cast<Handle *>(handle)->stream =
      reinterpret_cast<CUstream>(stream);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *d) {
  if (!d)
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  auto *p = new Desc;
  p->type = type;
  gLive.insert(p);
  *d = p;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t d) {
  Desc *p = live(d);
  if (!p)
    return CUDNN_STATUS_BAD_PARAM;
  gLive.erase(p);
  delete p;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t n, const void *values) {
  Desc *p = live(d);
  if (!p || n <= 0)
    return CUDNN_STATUS_BAD_PARAM;
  if (!values)
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (p->finalized)
    return CUDNN_STATUS_BAD_PARAM; // a finalized descriptor is read-only
  bool known = false;
  const cudnnBackendAttributeType_t want = expectedType(p->type, name, &known);
  if (!known)
    return CUDNN_STATUS_NOT_SUPPORTED; // not an attribute emulated here
  if (type != want)
    return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  const size_t bytes = elementBytes(type) * size_t(n);
  const auto *b = static_cast<const uint8_t *>(values);
  p->attrs[name] = Attr{type, n, std::vector<uint8_t>(b, b + bytes)};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t d,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type,
                                       int64_t requested, int64_t *count,
                                       void *values) {
  Desc *p = live(d);
  if (!p)
    return CUDNN_STATUS_BAD_PARAM;
  if (!p->finalized)
    return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  if (p->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
      name == CUDNN_ATTR_ENGINEHEUR_RESULTS) {
    if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
      return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    // One engine: it answers for the graph at the plan's finalize.
    if (count)
      *count = 1;
    if (requested < 1 || !values)
      return CUDNN_STATUS_SUCCESS;
    Desc *cfg = live(static_cast<void **>(values)[0]);
    if (!cfg || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
      return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
    cfg->graph = p->graph;
    cfg->finalized = true;
    return CUDNN_STATUS_SUCCESS;
  }
  if (p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
      name == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE) {
    if (type != CUDNN_TYPE_INT64 || requested < 1 || !values)
      return CUDNN_STATUS_BAD_PARAM;
    *static_cast<int64_t *>(values) = p->workspace;
    if (count)
      *count = 1;
    return CUDNN_STATUS_SUCCESS;
  }
  const Attr *a = find(*p, name);
  if (!a)
    return CUDNN_STATUS_BAD_PARAM;
  if (a->type != type)
    return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  const int64_t n = requested < a->n ? requested : a->n;
  if (values)
    std::memcpy(values, a->bytes.data(), size_t(n) * elementBytes(type));
  if (count)
    *count = a->n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t d) {
  Desc *p = live(d);
  if (!p)
    return CUDNN_STATUS_BAD_PARAM;
  if (p->finalized)
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t s = finalizeDesc(*p);
  p->finalized = s == CUDNN_STATUS_SUCCESS;
  return s;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle,
                                  cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack) {
  Desc *pl = live(plan), *pk = live(pack);
  if (!handle || !pl || !pk)
    return CUDNN_STATUS_BAD_PARAM;
  if (pl->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      pk->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
  if (!pl->finalized || !pk->finalized)
    return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  return execute(*reinterpret_cast<Handle *>(handle), *pl, *pk);
}

} // namespace dnn
} // namespace fake
} // namespace pfrt
