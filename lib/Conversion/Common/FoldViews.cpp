//===- FoldViews.cpp - GEMMs reading and writing views through strides ---===//
//
// BufferAnalysis::foldViewsIntoGemms (pf-fold-views): slices, reshapes and
// transposes that a GEMM reads or writes through strides instead of a copy.
//
//===----------------------------------------------------------------------===//

#include "pf/Conversion/Common/BufferAnalysis.h"
#include "pf/Dialect/PF/IR/PFOps.h"

using namespace mlir;
using namespace mlir::pf;

namespace {
/// Row-major strides of `shape`.
SmallVector<int64_t, 4> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The strides of `to`, a reshape of a view of shape `from` and strides
/// `strides`, without a copy; failure when the view's axes that merge are
/// not laid out one after the other (as NumPy's reshape without a copy).
FailureOr<SmallVector<int64_t, 4>> reshapeStrides(ArrayRef<int64_t> from,
                                                  ArrayRef<int64_t> strides,
                                                  ArrayRef<int64_t> to) {
  // Axes of extent 1 do not move through memory: left out of `from`, any
  // stride (0) in `to`.
  SmallVector<int64_t, 4> dims, st;
  for (auto [d, s] : llvm::zip(from, strides))
    if (d != 1) {
      dims.push_back(d);
      st.push_back(s);
    }
  SmallVector<int64_t, 4> out(to.size(), 0);
  size_t i = 0, j = 0;
  while (j < to.size() && to[j] == 1)
    ++j;
  while (i < dims.size() && j < to.size()) {
    // The smallest groups dims[i, i2) and to[j, j2) of equal products.
    size_t i2 = i + 1, j2 = j + 1;
    int64_t p = dims[i], q = to[j];
    while (p != q) {
      if (p < q) {
        if (i2 == dims.size())
          return failure();
        p *= dims[i2++];
      } else {
        if (j2 == to.size())
          return failure();
        q *= to[j2++];
      }
    }
    for (size_t a = i; a + 1 < i2; ++a)
      if (st[a] != st[a + 1] * dims[a + 1])
        return failure();
    int64_t s = st[i2 - 1];
    for (size_t b = j2; b-- > j;) {
      out[b] = to[b] == 1 ? 0 : s;
      s *= to[b];
    }
    i = i2;
    j = j2;
    while (j < to.size() && to[j] == 1)
      ++j;
  }
  if (i != dims.size() || j != to.size())
    return failure();
  return out;
}

bool isViewOp(Operation *op) {
  return isa_and_nonnull<TransposeOp, SliceOp, ReshapeOp>(op);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<GlobalType>(v.getType()).getShape();
}

bool hasF32Elements(Value v) {
  return cast<GlobalType>(v.getType()).getElementType().isF32();
}

/// Whether a GEMM can read or write a matrix of `shape`'s last two axes with
/// `strides`: one unit stride, rows (or columns) apart.
bool isGemmMatrix(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides) {
  size_t r = shape.size();
  int64_t rows = shape[r - 2], cols = shape[r - 1];
  int64_t rs = strides[r - 2], cs = strides[r - 1];
  bool rowMajor = cols <= 1 || (cs == 1 && (rows <= 1 || rs >= cols));
  bool colMajor = rows <= 1 || (rs == 1 && (cols <= 1 || cs >= rows));
  return rowMajor || colMajor;
}

/// A GEMM operand computed by a chain of view ops.
struct ViewUse {
  Operation *mm;
  unsigned index;
  SmallVector<Operation *, 4> chain; // the operand's view ops, user first
};

/// The view ops of `block` that compute `operand`, user first, into `chain`;
/// returns the value the chain starts from.
Value viewChain(Block &block, Value operand,
                SmallVectorImpl<Operation *> &chain) {
  Value v = operand;
  while (isViewOp(v.getDefiningOp()) &&
         v.getDefiningOp()->getBlock() == &block) {
    chain.push_back(v.getDefiningOp());
    v = v.getDefiningOp()->getOperand(0);
  }
  return v;
}

/// How `operand` reads the buffer of `base` through `chain` (user first):
/// none when a reshape in the chain would copy, or when the view is not a
/// matrix a GEMM reads.
std::optional<StridedOperand>
chainStrides(Value base, ArrayRef<Operation *> chain, Value operand) {
  if (!hasF32Elements(base))
    return std::nullopt;
  // The view's strides, from the buffer up.
  SmallVector<int64_t, 4> strides = contiguousStrides(shapeOf(base));
  SmallVector<int64_t, 4> shape(shapeOf(base));
  int64_t offset = 0;
  for (Operation *op : llvm::reverse(chain)) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t, 4> s2, d2;
      for (int64_t p : t.getPerm()) {
        s2.push_back(strides[p]);
        d2.push_back(shape[p]);
      }
      strides = s2;
      shape = d2;
    } else if (auto sl = dyn_cast<SliceOp>(op)) {
      for (auto [d, o] : llvm::enumerate(sl.getOffsets()))
        offset += o * strides[d];
      shape.assign(sl.getSizes().begin(), sl.getSizes().end());
    } else {
      ArrayRef<int64_t> to = shapeOf(op->getResult(0));
      FailureOr<SmallVector<int64_t, 4>> st =
          reshapeStrides(shape, strides, to);
      if (failed(st))
        return std::nullopt;
      strides = *st;
      shape.assign(to.begin(), to.end());
    }
  }
  if (ArrayRef<int64_t>(shape) != shapeOf(operand) || shape.size() < 2 ||
      !isGemmMatrix(shape, strides))
    return std::nullopt;
  StridedOperand view;
  view.root = chain.back();
  view.offset = offset;
  view.strides = strides;
  return view;
}

/// The GEMM reads the base where it runs: whether a parameter's buffer (a
/// read_param) is written between the chain's first op and `mm`.
bool paramWrittenBefore(Value base, ArrayRef<Operation *> chain,
                        Operation *mm) {
  if (!base.getDefiningOp<ReadParamOp>())
    return false;
  for (Operation *op = chain.back(); op && op != mm; op = op->getNextNode())
    if (isa<WriteParamOp, SGDUpdateOp, AdamUpdateOp>(op))
      return true;
  return false;
}

/// The view ops that fold: everything that reads one is a GEMM reading it
/// through strides or another folded view op. A GEMM operand whose chain has
/// an op that does not fold is read as it is (dropped from `strided`).
llvm::DenseSet<Operation *> foldableViews(
    ArrayRef<ViewUse> uses,
    std::map<std::pair<Operation *, unsigned>, StridedOperand> &strided) {
  llvm::DenseSet<Operation *> candidates;
  for (const ViewUse &use : uses)
    candidates.insert(use.chain.begin(), use.chain.end());
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation *op : llvm::to_vector(candidates)) {
      bool onlyFolded = llvm::all_of(op->getUses(), [&](OpOperand &u) {
        Operation *user = u.getOwner();
        if (candidates.contains(user))
          return true;
        return isa<MatmulOp>(user) &&
               strided.count({user, u.getOperandNumber()});
      });
      if (!onlyFolded) {
        candidates.erase(op);
        changed = true;
      }
    }
    for (const ViewUse &use : uses)
      if (strided.count({use.mm, use.index}) &&
          llvm::any_of(use.chain, [&](Operation *op) {
            return !candidates.contains(op);
          })) {
        strided.erase({use.mm, use.index});
        changed = true;
      }
  }
  return candidates;
}

/// A GEMM result whose only reader is a transpose, then reshapes (each the
/// only reader of the one before): the GEMM may write into the last value's
/// buffer in its layout.
struct WrittenChain {
  Operation *mm;
  SmallVector<Operation *, 4> chain; // transpose, reshapes
  Value last;
};

std::optional<WrittenChain>
writtenChain(Block &block, MatmulOp mm,
             const llvm::DenseSet<Operation *> &foldedViews) {
  if (!mm.getResult().hasOneUse())
    return std::nullopt;
  auto t = dyn_cast<TransposeOp>(*mm.getResult().getUsers().begin());
  if (!t || t->getBlock() != &block || foldedViews.contains(t))
    return std::nullopt;
  WrittenChain w{mm, {t}, t.getResult()};
  while (w.last.hasOneUse()) {
    auto r = dyn_cast<ReshapeOp>(*w.last.getUsers().begin());
    if (!r || r->getBlock() != &block)
      break;
    w.chain.push_back(r);
    w.last = r.getResult();
  }
  return w;
}

/// The strides of the GEMM's result when `w.last` is laid out with
/// `strides`; none when the chain would copy or the GEMM cannot write them.
std::optional<SmallVector<int64_t, 4>>
resultStrides(const WrittenChain &w, SmallVector<int64_t, 4> strides) {
  for (Operation *op : llvm::reverse(w.chain)) {
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t, 4> st(strides.size());
      for (auto [j, p] : llvm::enumerate(t.getPerm()))
        st[p] = strides[j];
      strides = st;
    } else {
      FailureOr<SmallVector<int64_t, 4>> st = reshapeStrides(
          shapeOf(op->getResult(0)), strides, shapeOf(op->getOperand(0)));
      if (failed(st))
        return std::nullopt;
      strides = *st;
    }
  }
  // C: unit column stride and rows apart, or written transposed.
  if (!isGemmMatrix(shapeOf(w.mm->getResult(0)), strides))
    return std::nullopt;
  return strides;
}

/// The pieces of `cat` when such GEMMs write every one of them, each with
/// where it goes in the concat's buffer; none otherwise.
std::optional<std::vector<std::pair<Operation *, StridedResult>>>
concatPieces(ConcatOp cat,
             const llvm::DenseMap<Value, const WrittenChain *> &byLast) {
  SmallVector<int64_t, 4> full = contiguousStrides(shapeOf(cat.getResult()));
  int64_t at = 0;
  std::vector<std::pair<Operation *, StridedResult>> pieces;
  for (Value piece : cat.getInputs()) {
    const WrittenChain *w = byLast.lookup(piece);
    std::optional<SmallVector<int64_t, 4>> st;
    if (w && piece.hasOneUse() && llvm::count(cat.getInputs(), piece) == 1)
      st = resultStrides(*w, full);
    if (!st)
      return std::nullopt;
    StridedResult res;
    res.concat = cat;
    res.offset = at * full[cat.getAxis()];
    res.strides = *st;
    pieces.emplace_back(w->mm, std::move(res));
    at += shapeOf(piece)[cat.getAxis()];
  }
  return pieces;
}
} // namespace

void BufferAnalysis::foldViewsIntoGemms(Block &block) {
  auto plainGemm = [&](MatmulOp mm) {
    return !accumulators.count(mm) && !biasOf.count(mm) &&
           !biasGradPartner.count(mm) && hasF32Elements(mm.getResult());
  };
  // Operands: every plain GEMM operand a chain of views computes, as
  // strides.
  std::vector<ViewUse> uses;
  for (auto mm : block.getOps<MatmulOp>()) {
    if (!plainGemm(mm))
      continue;
    for (unsigned index = 0; index < 2; ++index) {
      Value operand = mm->getOperand(index);
      ViewUse use{mm, index, {}};
      Value base = viewChain(block, operand, use.chain);
      // Worth it only if something is copied: a slice or a transpose.
      if (!llvm::any_of(use.chain, [](Operation *op) {
            return isa<TransposeOp, SliceOp>(op);
          }))
        continue;
      std::optional<StridedOperand> view =
          chainStrides(base, use.chain, operand);
      if (!view || paramWrittenBefore(base, use.chain, mm))
        continue;
      stridedOperands[{mm, index}] = std::move(*view);
      uses.push_back(std::move(use));
    }
  }
  foldedViews = foldableViews(uses, stridedOperands);

  // Results: written through their chain into its last value's buffer, or
  // into a concat of such pieces.
  std::vector<WrittenChain> written;
  for (auto mm : block.getOps<MatmulOp>())
    if (plainGemm(mm))
      if (std::optional<WrittenChain> w = writtenChain(block, mm, foldedViews))
        written.push_back(std::move(*w));
  llvm::DenseMap<Value, const WrittenChain *> byLast;
  for (const WrittenChain &w : written)
    byLast[w.last] = &w;
  llvm::DenseSet<Operation *> inConcat;
  for (auto cat : block.getOps<ConcatOp>()) {
    if (!hasF32Elements(cat.getResult()))
      continue;
    auto pieces = concatPieces(cat, byLast);
    if (!pieces)
      continue;
    foldedConcats.insert(cat);
    for (auto &[mm, res] : *pieces) {
      inConcat.insert(mm);
      stridedResults[mm] = std::move(res);
    }
  }
  for (const WrittenChain &w : written) {
    if (inConcat.contains(w.mm))
      continue;
    std::optional<SmallVector<int64_t, 4>> st =
        resultStrides(w, contiguousStrides(shapeOf(w.last)));
    if (!st)
      continue;
    StridedResult res;
    res.strides = *st;
    stridedResults[w.mm] = std::move(res);
  }
  for (const WrittenChain &w : written)
    if (stridedResults.count(w.mm))
      foldedViews.insert(w.chain.begin(), w.chain.end());
}
