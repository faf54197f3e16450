//===- ComputePatterns.cpp - element-wise, GEMM, reductions, losses -------===//

#include "pf/Conversion/PFToRank/RankLowering.h"

using namespace mlir;
using namespace mlir::pf;

namespace {

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

struct TransposeLowering : RankPattern<TransposeOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(TransposeOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isFoldedView(op)) { // GEMMs read it through strides
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    // The kernel moves 4-byte elements (their bits).
    Type elem = op.getType().getElementType();
    if (!elem.isF32() && !elem.isInteger(32))
      return op.emitOpError("convert-pf-to-cpu transposes tensors of 4-byte "
                            "elements (f32, i32), got ")
             << elem;
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      ArrayRef<int64_t> shape = localShape(op.getInput());
      state.rt.pfrt_k_transpose(b, loc, adaptor.getInput(), out,
                                static_cast<int64_t>(shape.size()),
                                state.rt.i64Array(b, loc, shape),
                                state.rt.i64Array(b, loc, op.getPerm()));
    });
  }
};

/// A weight gradient and its bias gradient in one GEMM (BGRADB), emitted by
/// the later op of the pair (BufferAnalysis); the earlier one only takes
/// its buffer. `c` and `dbias` are the two results' buffers.
void emitBiasGradGEMM(RankLoweringState &state, ConversionPatternRewriter &b,
                      MatmulOp mm, Value c, Value dbias) {
  ArrayRef<int64_t> as = localShape(mm.getA()), cs = localShape(mm.getResult());
  state.rt.pfrt_k_matmul_bgrad(
      b, mm.getLoc(), b.getRemappedValue(mm.getA()),
      b.getRemappedValue(mm.getB()), c, dbias, cs[0], cs[1], as[0],
      static_cast<bool>(state.buffers.accumulatorOf(mm)));
}

/// A GEMM with an operand read through strides (BufferAnalysis): every
/// operand's batch and matrix strides (a shared B's batch strides are 0),
/// the transposes folded in.
LogicalResult emitStridedGEMM(RankLoweringState &state, MatmulOp op,
                              ConversionPatternRewriter &b, Value out) {
  Location loc = op.getLoc();
  rt::RuntimeABI &rt = state.rt;
  ArrayRef<int64_t> cs = localShape(op.getResult());
  int64_t r = static_cast<int64_t>(cs.size()) - 2;
  auto contiguous = [](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> st(shape.size(), 1);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
      st[d] = st[d + 1] * shape[d + 1];
    return st;
  };
  // (pointer, r + 2 strides) of operand i.
  auto operand = [&](unsigned i, bool transposed) {
    Value v = op->getOperand(i);
    const StridedOperand *view = state.buffers.stridedOperand(op, i);
    SmallVector<int64_t> st =
        view ? SmallVector<int64_t>(ArrayRef<int64_t>(view->strides))
             : contiguous(localShape(v));
    Value ptr;
    if (view) {
      ptr = b.getRemappedValue(view->base());
      if (view->offset)
        ptr = LLVM::GEPOp::create(b, loc, state.ptrType(), b.getF32Type(), ptr,
                                  ValueRange{LLVM::ConstantOp::create(
                                      b, loc, b.getI64Type(), view->offset)});
    } else {
      ptr = b.getRemappedValue(v);
    }
    SmallVector<int64_t> all(static_cast<size_t>(r) + 2 - st.size(), 0);
    llvm::append_range(all, st); // a shared operand: batch strides 0
    if (transposed)
      std::swap(all[r], all[r + 1]);
    return std::pair{ptr, all};
  };
  auto [a, as] = operand(0, op.getTransposeA());
  auto [bp, bs] = operand(1, op.getTransposeB());
  ArrayRef<int64_t> aShape = localShape(op.getA());
  int64_t k = op.getTransposeA() ? aShape[aShape.size() - 2] : aShape.back();
  // The result in its own buffer, or through strides into the buffer of
  // what its transposes, reshapes (and concat) compute.
  SmallVector<int64_t> cStrides = contiguous(cs);
  if (const StridedResult *sr = state.buffers.stridedResult(op)) {
    cStrides.assign(sr->strides.begin(), sr->strides.end());
    if (sr->offset)
      out = LLVM::GEPOp::create(b, loc, state.ptrType(), b.getF32Type(), out,
                                ValueRange{LLVM::ConstantOp::create(
                                    b, loc, b.getI64Type(), sr->offset)});
  }
  rt.pfrt_k_matmul_strided(b, loc, a, bp, out, r,
                           r ? rt.i64Array(b, loc, cs.drop_back(2))
                             : rt.nullPtr(b, loc),
                           rt.i64Array(b, loc, as), rt.i64Array(b, loc, bs),
                           rt.i64Array(b, loc, cStrides), cs[r], cs[r + 1], k);
  return success();
}

struct MatmulLowering : RankPattern<MatmulOp> {
  using RankPattern::RankPattern;
  /// A typed GEMM (pf-widen-low-precision{keep-gemms}): bf16/f16 A and B,
  /// C of their type or f32, accumulating into its accumulator's buffer
  /// (beta = 1) where pf-fold-accumulation folded its add. No other fold
  /// takes it (BufferAnalysis keeps its bias_add and bias gradient apart).
  LogicalResult lowerTyped(MatmulOp op, ConversionPatternRewriter &b) const {
    if (state.buffers.stridedOperand(op, 0) ||
        state.buffers.stridedOperand(op, 1) ||
        state.buffers.stridedResult(op) ||
        state.buffers.biasGradPartnerOf(op) || state.buffers.foldedBiasOf(op))
      return op.emitOpError("a typed bf16/f16 GEMM (pf.typed_gemm) runs "
                            "without strided views, bias or bias-gradient "
                            "folds");
    return emitInto(op, b, [&](Value out) {
      ArrayRef<int64_t> as = localShape(op.getA()), bs = localShape(op.getB()),
                        cs = localShape(op.getResult());
      int64_t k = op.getTransposeA() ? as[as.size() - 2] : as.back();
      state.rt.pfrt_k_matmul_typed(
          b, op.getLoc(), b.getRemappedValue(op.getA()),
          b.getRemappedValue(op.getB()), out, product(cs.drop_back(2)),
          product(bs.drop_back(2)), cs[cs.size() - 2], cs.back(), k,
          op.getTransposeA(), op.getTransposeB(), dtypeCode(op.getA()),
          dtypeCode(op.getResult()),
          static_cast<bool>(state.buffers.accumulatorOf(op)));
    });
  }

  LogicalResult lower(MatmulOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (op->hasAttr("pf.typed_gemm"))
      return lowerTyped(op, b);
    if (state.buffers.stridedOperand(op, 0) ||
        state.buffers.stridedOperand(op, 1) || state.buffers.stridedResult(op))
      return emitInto(
          op, b, [&](Value out) { (void)emitStridedGEMM(state, op, b, out); });
    if (Operation *reduce = state.buffers.biasGradPartnerOf(op))
      return emitInto(op, b, [&](Value out) {
        if (state.buffers.computedAt(reduce) == op)
          emitBiasGradGEMM(state, b, op, out,
                           b.getRemappedValue(reduce->getResult(0)));
      });
    return emitInto(op, b, [&](Value out) {
      ArrayRef<int64_t> as = localShape(op.getA()), bs = localShape(op.getB()),
                        cs = localShape(op.getResult());
      int64_t k = op.getTransposeA() ? as[as.size() - 2] : as.back();
      // Accumulating into its accumulator's buffer (C += A B), from the
      // bias rows of the bias_add it computes too (C = A B + bias), or
      // C = A B.
      Operation *ba = state.buffers.foldedBiasOf(op);
      if (ba && state.buffers.foldedReluOf(op))
        state.rt.pfrt_k_matmul_bias_relu(
            b, op.getLoc(), adaptor.getA(), adaptor.getB(),
            b.getRemappedValue(cast<BiasAddOp>(ba).getBias()), out,
            product(cs.drop_back(2)), product(bs.drop_back(2)),
            cs[cs.size() - 2], cs.back(), k, op.getTransposeA(),
            op.getTransposeB());
      else if (ba)
        state.rt.pfrt_k_matmul_bias(
            b, op.getLoc(), adaptor.getA(), adaptor.getB(),
            b.getRemappedValue(cast<BiasAddOp>(ba).getBias()), out,
            product(cs.drop_back(2)), product(bs.drop_back(2)),
            cs[cs.size() - 2], cs.back(), k, op.getTransposeA(),
            op.getTransposeB());
      else if (state.buffers.accumulatorOf(op))
        state.rt.pfrt_k_matmul_acc(
            b, op.getLoc(), adaptor.getA(), adaptor.getB(), out,
            product(cs.drop_back(2)), product(bs.drop_back(2)),
            cs[cs.size() - 2], cs.back(), k, op.getTransposeA(),
            op.getTransposeB());
      else
        state.rt.pfrt_k_matmul(b, op.getLoc(), adaptor.getA(), adaptor.getB(),
                               out, product(cs.drop_back(2)),
                               product(bs.drop_back(2)), cs[cs.size() - 2],
                               cs.back(), k, op.getTransposeA(),
                               op.getTransposeB());
    });
  }
};

/// bias_add feeding only a relu: one fused pass into the relu's buffer
/// (BufferAnalysis); the relu then forwards it.
struct BiasAddLowering : RankPattern<BiasAddOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(BiasAddOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isFoldedBias(op)) {
      b.replaceOp(op, adaptor.getInput()); // computed with its matmul
      return success();
    }
    Operation *relu = state.buffers.fusedReluOf(op);
    FailureOr<Value> out = relu
                               ? state.alloc(b, op.getLoc(), relu->getResult(0))
                               : state.result(b, op);
    if (failed(out))
      return failure();
    ArrayRef<int64_t> s = localShape(op.getInput());
    int64_t axis = op.getAxis();
    int64_t outer = product(s.take_front(axis)), channels = s[axis],
            inner = product(s.drop_front(axis + 1));
    if (relu)
      state.rt.pfrt_k_bias_add_relu(b, op.getLoc(), adaptor.getInput(),
                                    adaptor.getBias(), *out, outer, channels,
                                    inner);
    else
      state.rt.pfrt_k_bias_add(b, op.getLoc(), adaptor.getInput(),
                               adaptor.getBias(), *out, outer, channels, inner);
    b.replaceOp(op, *out);
    return success();
  }
};

struct ReluLowering : RankPattern<ReluOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(ReluOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (state.buffers.isFusedRelu(op)) {
      b.replaceOp(op, adaptor.getInput()); // computed with its bias_add
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_relu(b, op.getLoc(), adaptor.getInput(), out,
                           localCount(op.getResult()));
    });
  }
};

// The ops lowered to one kernel into their buffer (EmitIntoPattern).

void reluGrad(RankLoweringState &state, ReluGradOp op,
              RankAdaptor<ReluGradOp> adaptor, ConversionPatternRewriter &b,
              Value out) {
  state.rt.pfrt_k_relu_grad(b, op.getLoc(), adaptor.getOutput(),
                            adaptor.getResultGrad(), out,
                            localCount(op.getResult()));
}

void activation(RankLoweringState &state, ActivationOp op,
                RankAdaptor<ActivationOp> adaptor, ConversionPatternRewriter &b,
                Value out) {
  state.rt.pfrt_k_activation(b, op.getLoc(), activationKindCode(op.getKind()),
                             adaptor.getInput(), out,
                             localCount(op.getResult()));
}

void activationGrad(RankLoweringState &state, ActivationGradOp op,
                    RankAdaptor<ActivationGradOp> adaptor,
                    ConversionPatternRewriter &b, Value out) {
  state.rt.pfrt_k_activation_grad(
      b, op.getLoc(), activationKindCode(op.getKind()), adaptor.getInput(),
      adaptor.getResultGrad(), out, localCount(op.getResult()));
}

/// [outer, n, inner] around `axis` of `shape`.
std::tuple<int64_t, int64_t, int64_t> aroundAxis(ArrayRef<int64_t> shape,
                                                 int64_t axis) {
  return {product(shape.take_front(axis)), shape[axis],
          product(shape.drop_front(axis + 1))};
}

struct SoftmaxLowering : RankPattern<SoftmaxOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(SoftmaxOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    int64_t outer, n, inner;
    std::tie(outer, n, inner) =
        aroundAxis(localShape(op.getInput()), op.getAxis());
    if (const SoftmaxPrologue *p = state.buffers.softmaxPrologueOf(op))
      return emitInto(op, b, [&](Value out) {
        rt::RuntimeABI &rt = state.rt;
        Location loc = op.getLoc();
        Value mask = p->mask();
        rt.pfrt_k_softmax_masked(
            b, loc, b.getRemappedValue(p->x()),
            mask ? b.getRemappedValue(mask) : rt.nullPtr(b, loc),
            mask ? dtypeCode(mask) : 0, mask ? p->maskRows : 0, p->scaleValue,
            p->fillValue, out, outer, n, op.getLog());
      });
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_softmax(b, op.getLoc(), adaptor.getInput(), out, outer, n,
                              inner, op.getLog());
    });
  }
};

struct SoftmaxGradLowering : RankPattern<SoftmaxGradOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(SoftmaxGradOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    int64_t outer, n, inner;
    std::tie(outer, n, inner) =
        aroundAxis(localShape(op.getOutput()), op.getAxis());
    if (auto scale =
            dyn_cast_or_null<MulScalarOp>(state.buffers.gradScaleOf(op)))
      return emitInto(op, b, [&](Value out) {
        state.rt.pfrt_k_softmax_grad_scaled(
            b, op.getLoc(), adaptor.getOutput(), adaptor.getResultGrad(), out,
            outer, n, op.getLog(), scale.getScalar().convertToDouble());
      });
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_softmax_grad(b, op.getLoc(), adaptor.getOutput(),
                                   adaptor.getResultGrad(), out, outer, n,
                                   inner, op.getLog());
    });
  }
};

/// The first row and the vocabulary of a vocabulary-split table
/// (pf-partition-ranks' shard_offset and logical_shape), if split.
std::optional<std::pair<int64_t, int64_t>> vocabRows(Operation *op) {
  auto offset = op->getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::ShardOffsetAttrHelper::getNameStr());
  auto logical = op->getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::LogicalShapeAttrHelper::getNameStr());
  if (!offset || !logical || offset.empty() || logical.empty())
    return std::nullopt;
  return std::make_pair(offset[0], logical[0]);
}

void embedding(RankLoweringState &state, EmbeddingOp op,
               RankAdaptor<EmbeddingOp> adaptor, ConversionPatternRewriter &b,
               Value out) {
  ArrayRef<int64_t> table = localShape(op.getTable());
  if (std::optional<std::pair<int64_t, int64_t>> rows = vocabRows(op))
    state.rt.pfrt_k_embedding_rows(
        b, op.getLoc(), adaptor.getTable(), adaptor.getIds(), out,
        localCount(op.getIds()), table[0], table[1], rows->first, rows->second);
  else
    state.rt.pfrt_k_embedding(b, op.getLoc(), adaptor.getTable(),
                              adaptor.getIds(), out, localCount(op.getIds()),
                              table[0], table[1]);
}

void embeddingGrad(RankLoweringState &state, EmbeddingGradOp op,
                   RankAdaptor<EmbeddingGradOp> adaptor,
                   ConversionPatternRewriter &b, Value out) {
  ArrayRef<int64_t> table = localShape(op.getResult());
  if (std::optional<std::pair<int64_t, int64_t>> rows = vocabRows(op))
    state.rt.pfrt_k_embedding_grad_rows(
        b, op.getLoc(), adaptor.getIds(), adaptor.getResultGrad(), out,
        localCount(op.getIds()), table[0], table[1], rows->first, rows->second);
  else
    state.rt.pfrt_k_embedding_grad(b, op.getLoc(), adaptor.getIds(),
                                   adaptor.getResultGrad(), out,
                                   localCount(op.getIds()), table[0], table[1]);
}

struct AddLowering : RankPattern<AddOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(AddOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    // Folded into the matmul that produced one operand: the sum is already
    // in that matmul's (the accumulator's) buffer.
    if (state.buffers.isFoldedAdd(op)) {
      bool lhsIsProduct = static_cast<bool>(
          state.buffers.accumulatorOf(op.getLhs().getDefiningOp()));
      b.replaceOp(op, lhsIsProduct ? adaptor.getLhs() : adaptor.getRhs());
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_add(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(),
                          out, localCount(op.getResult()));
    });
  }
};

void mul(RankLoweringState &state, MulOp op, RankAdaptor<MulOp> adaptor,
         ConversionPatternRewriter &b, Value out) {
  state.rt.pfrt_k_mul(b, op.getLoc(), adaptor.getLhs(), adaptor.getRhs(), out,
                      localCount(op.getResult()));
}

struct MulScalarLowering : RankPattern<MulScalarOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(MulScalarOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    // Computed with the softmax after it or the softmax gradient before it.
    if (state.buffers.isInSoftmaxPrologue(op) ||
        state.buffers.isFoldedGradScale(op)) {
      b.replaceOp(op, adaptor.getInput());
      return success();
    }
    return emitInto(op, b, [&](Value out) {
      state.rt.pfrt_k_scale(b, op.getLoc(), adaptor.getInput(), out,
                            localCount(op.getResult()),
                            op.getScalar().convertToDouble());
    });
  }
};

/// Seeded, layout-independent: the mask comes from the logical indices of
/// this rank's shard, the step's seed, the op's stream and micro-batch.
void dropout(RankLoweringState &state, DropoutOp op,
             RankAdaptor<DropoutOp> adaptor, ConversionPatternRewriter &b,
             Value out) {
  Location loc = op.getLoc();
  rt::RuntimeABI &rt = state.rt;
  auto logical = op->getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::LogicalShapeAttrHelper::getNameStr());
  auto offset = op->getAttrOfType<DenseI64ArrayAttr>(
      PFDialect::ShardOffsetAttrHelper::getNameStr());
  ArrayRef<int64_t> local = localShape(op.getInput());
  auto mb = op->getAttrOfType<IntegerAttr>(
      PFDialect::MicrobatchAttrHelper::getNameStr());
  rt.pfrt_k_dropout(b, loc, adaptor.getInput(), out, localCount(op.getResult()),
                    op.getP().convertToDouble(), state.seed(b, loc),
                    op.getStream(), static_cast<int64_t>(mb ? mb.getInt() : 0),
                    static_cast<int64_t>(local.size()),
                    rt.i64Array(b, loc, logical ? logical.asArrayRef() : local),
                    offset ? rt.i64Array(b, loc, offset.asArrayRef())
                           : rt.nullPtr(b, loc),
                    rt.i64Array(b, loc, local));
}

struct ReduceSumLowering : RankPattern<ReduceSumOp> {
  using RankPattern::RankPattern;
  LogicalResult lower(ReduceSumOp op, OpAdaptor adaptor,
                      ConversionPatternRewriter &b) const override {
    if (Operation *mm = state.buffers.biasGradPartnerOf(op))
      return emitInto(op, b, [&](Value out) {
        if (state.buffers.computedAt(mm) == op)
          emitBiasGradGEMM(state, b, cast<MatmulOp>(mm),
                           b.getRemappedValue(mm->getResult(0)), out);
      });
    return emitInto(op, b, [&](Value out) {
      Location loc = op.getLoc();
      ArrayRef<int64_t> s = localShape(op.getInput());
      SmallVector<int8_t> mask(s.size(), 0);
      for (int64_t axis : op.getAxes())
        mask[axis] = 1;
      state.rt.pfrt_k_reduce_sum(
          b, loc, adaptor.getInput(), out, static_cast<int64_t>(s.size()),
          state.rt.i64Array(b, loc, s), state.rt.i8Array(b, loc, mask));
    });
  }
};

/// A mean over a batch split `pf.batch_split` ways: the local mean is that
/// many times this rank's share of the global one.
void scaleForBatchSplit(RankLoweringState &state, OpBuilder &b, Operation *op,
                        Value out, int64_t n) {
  auto split = op->getAttrOfType<IntegerAttr>(
      PFDialect::BatchSplitAttrHelper::getNameStr());
  if (split && split.getInt() > 1)
    state.rt.pfrt_k_scale(b, op->getLoc(), out, out, n,
                          1.0 / static_cast<double>(split.getInt()));
}

/// A cross-entropy split by class (pf-partition-ranks' pf.vocab_group):
/// where this rank's block of classes starts, how many there are, the
/// runtime's mode (0 mean, 1 mean of kept rows, 2 sum) and the group.
template <typename XentOp> struct VocabSplit {
  int64_t offset = 0, classes = 0, ignore = -1, mode = 0;
  ArrayRef<int64_t> group;
  static std::optional<VocabSplit> of(XentOp op) {
    auto group = op->template getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::VocabGroupAttrHelper::getNameStr());
    if (!group)
      return std::nullopt;
    auto offsets = op->template getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::ShardOffsetAttrHelper::getNameStr());
    auto logical = op->template getAttrOfType<DenseI64ArrayAttr>(
        PFDialect::LogicalShapeAttrHelper::getNameStr());
    VocabSplit v;
    v.offset = offsets ? offsets[1] : 0;
    v.classes = logical ? logical[1] : localShape(op.getLogits())[1];
    v.ignore = op.getIgnoreIndex().value_or(-1);
    v.mode = op.getSum() ? 2 : op.getIgnoreIndex() ? 1 : 0;
    v.group = group.asArrayRef();
    return v;
  }
};

void softmaxXent(RankLoweringState &state, SoftmaxCrossEntropyOp op,
                 RankAdaptor<SoftmaxCrossEntropyOp> adaptor,
                 ConversionPatternRewriter &b, Value out) {
  ArrayRef<int64_t> s = localShape(op.getLogits());
  std::optional<int64_t> ignore = op.getIgnoreIndex();
  if (auto v = VocabSplit<SoftmaxCrossEntropyOp>::of(op))
    state.rt.pfrt_softmax_xent_vocab(
        b, op.getLoc(), adaptor.getLogits(), adaptor.getLabels(), out, s[0],
        s[1], v->offset, v->classes, v->ignore, v->mode,
        state.rt.i64Array(b, op.getLoc(), v->group),
        static_cast<int64_t>(v->group.size()));
  else if (op.getSum())
    // A label outside [0, c) other than ignore_index is still an error:
    // without ignore_index, -1 (never a class) keeps every row.
    state.rt.pfrt_k_softmax_xent_sum(b, op.getLoc(), adaptor.getLogits(),
                                     adaptor.getLabels(), out, s[0], s[1],
                                     ignore.value_or(-1));
  else if (ignore)
    state.rt.pfrt_k_softmax_xent_ignore(b, op.getLoc(), adaptor.getLogits(),
                                        adaptor.getLabels(), out, s[0], s[1],
                                        *ignore);
  else
    state.rt.pfrt_k_softmax_xent(b, op.getLoc(), adaptor.getLogits(),
                                 adaptor.getLabels(), out, s[0], s[1]);
  scaleForBatchSplit(state, b, op, out, 1);
}

void softmaxXentGrad(RankLoweringState &state, SoftmaxCrossEntropyGradOp op,
                     RankAdaptor<SoftmaxCrossEntropyGradOp> adaptor,
                     ConversionPatternRewriter &b, Value out) {
  ArrayRef<int64_t> s = localShape(op.getLogits());
  std::optional<int64_t> ignore = op.getIgnoreIndex();
  if (auto v = VocabSplit<SoftmaxCrossEntropyGradOp>::of(op))
    state.rt.pfrt_softmax_xent_vocab_grad(
        b, op.getLoc(), adaptor.getLogits(), adaptor.getLabels(),
        adaptor.getLossGrad(), out, s[0], s[1], v->offset, v->classes,
        v->ignore, v->mode, state.rt.i64Array(b, op.getLoc(), v->group),
        static_cast<int64_t>(v->group.size()));
  else if (op.getSum())
    state.rt.pfrt_k_softmax_xent_grad_sum(
        b, op.getLoc(), adaptor.getLogits(), adaptor.getLabels(),
        adaptor.getLossGrad(), out, s[0], s[1], ignore.value_or(-1));
  else if (ignore)
    state.rt.pfrt_k_softmax_xent_grad_ignore(
        b, op.getLoc(), adaptor.getLogits(), adaptor.getLabels(),
        adaptor.getLossGrad(), out, s[0], s[1], *ignore);
  else
    state.rt.pfrt_k_softmax_xent_grad(b, op.getLoc(), adaptor.getLogits(),
                                      adaptor.getLabels(),
                                      adaptor.getLossGrad(), out, s[0], s[1]);
  scaleForBatchSplit(state, b, op, out, s[0] * s[1]);
}

void countKept(RankLoweringState &state, CountKeptOp op,
               RankAdaptor<CountKeptOp> adaptor, ConversionPatternRewriter &b,
               Value out) {
  state.rt.pfrt_k_count_kept(b, op.getLoc(), adaptor.getLabels(), out,
                             localCount(op.getLabels()), op.getIgnoreIndex());
}

} // namespace

void mlir::pf::populatePFToCPUComputePatterns(const TypeConverter &converter,
                                              RewritePatternSet &patterns,
                                              RankLoweringState &state) {
  patterns
      .add<EmitIntoPattern<ActivationOp, activation>,
           EmitIntoPattern<ActivationGradOp, activationGrad>,
           EmitIntoPattern<CountKeptOp, countKept>,
           EmitIntoPattern<EmbeddingOp, embedding>,
           EmitIntoPattern<EmbeddingGradOp, embeddingGrad>, SoftmaxLowering,
           SoftmaxGradLowering, TransposeLowering, MatmulLowering,
           BiasAddLowering, ReluLowering, EmitIntoPattern<ReluGradOp, reluGrad>,
           AddLowering, EmitIntoPattern<MulOp, mul>, MulScalarLowering,
           EmitIntoPattern<DropoutOp, dropout>, ReduceSumLowering,
           EmitIntoPattern<SoftmaxCrossEntropyOp, softmaxXent>,
           EmitIntoPattern<SoftmaxCrossEntropyGradOp, softmaxXentGrad>>(
          converter, state);
}
