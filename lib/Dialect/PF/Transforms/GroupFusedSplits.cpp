//===- GroupFusedSplits.cpp - grouped splits for cut fused projections ----===//
//
// A column-split weight whose product is only ever cut into g equal blocks
// gets the grouped split S(a, g), so that each block is split contiguously
// (see Passes.td). The decision is per parameter: every read must fit.
//
//===----------------------------------------------------------------------===//

#include "pf/Dialect/PF/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "pf-group-fused-splits"

namespace mlir::pf {
#define GEN_PASS_DEF_GROUPFUSEDSPLITSPASS
#include "pf/Dialect/PF/Transforms/Passes.h.inc"
} // namespace mlir::pf

using namespace mlir;
using namespace mlir::pf;

namespace {

/// The number of equal blocks the users of `v` cut its last axis into, or 0
/// when some user is not such a cut.
int64_t blocksOfCuts(Value v) {
  auto t = cast<GlobalType>(v.getType());
  int64_t last = t.getRank() - 1, n = t.getShape()[last], block = 0;
  if (v.use_empty())
    return 0;
  for (Operation *user : v.getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice)
      return 0;
    ArrayRef<int64_t> offsets = slice.getOffsets(), sizes = slice.getSizes();
    for (int64_t k = 0; k < last; ++k)
      if (offsets[k] != 0 || sizes[k] != t.getShape()[k])
        return 0;
    int64_t size = sizes[last];
    if ((block && size != block) || size <= 0 || n % size != 0 ||
        offsets[last] % size != 0)
      return 0;
    block = size;
  }
  return n / block;
}

struct Candidate {
  ParamOp weight;
  unsigned dim;
  int64_t groups = 0;
  ParamOp bias; // may be null
};

class Grouper {
public:
  explicit Grouper(ModuleOp module) : module(module) {
    for (auto p : module.getOps<ParamOp>())
      params[p.getSymName()] = p;
    module.walk([&](ReadParamOp r) { reads[r.getParam()].push_back(r); });
  }

  void run() {
    SmallVector<Candidate> found;
    for (auto &[name, param] : params)
      if (std::optional<Candidate> c = match(param))
        found.push_back(*c);
    for (const Candidate &c : found) {
      regroup(c.weight, c.dim, c.groups);
      if (c.bias)
        regroup(c.bias, c.dim, c.groups);
    }
  }

private:
  /// The plain split S(axis) of `param`'s layout over more than one rank.
  static std::optional<std::pair<unsigned, int64_t>> splitDim(ParamOp param) {
    GlobalType t = param.getGlobalType();
    if (!t.hasSBP())
      return std::nullopt;
    std::optional<std::pair<unsigned, int64_t>> found;
    for (auto [d, dim] : llvm::enumerate(t.getSbp().getDims())) {
      if (!dim.isSplit() || t.getPlacement().getHierarchy()[d] == 1)
        continue;
      if (found || dim.isGrouped())
        return std::nullopt;
      found = {unsigned(d), dim.getAxis()};
    }
    return found;
  }

  std::optional<Candidate> match(ParamOp param) {
    std::optional<std::pair<unsigned, int64_t>> split = splitDim(param);
    auto it = reads.find(param.getSymName());
    if (!split || it == reads.end() || param.getGlobalType().getRank() != 2)
      return std::nullopt;
    auto [dim, axis] = *split;
    Candidate c{param, dim};
    for (ReadParamOp read : it->second) {
      Value w = read.getResult();
      if (!w.hasOneUse())
        return std::nullopt;
      auto mm = dyn_cast<MatmulOp>(*w.getUsers().begin());
      // The weight's columns of the product: axis 0 of a transposed b.
      if (!mm || mm.getB() != w || mm.getA() == w ||
          axis != (mm.getTransposeB() ? 0 : 1))
        return std::nullopt;
      Value product = mm.getResult();
      ParamOp bias;
      if (product.hasOneUse())
        if (auto add = dyn_cast<BiasAddOp>(*product.getUsers().begin())) {
          auto biasRead = add.getBias().getDefiningOp<ReadParamOp>();
          if (!biasRead || add.getInput() != product ||
              int64_t(add.getAxis()) !=
                  cast<GlobalType>(product.getType()).getRank() - 1)
            return std::nullopt;
          bias = params.lookup(biasRead.getParam());
          if (!bias || !biasAlike(bias, param, dim))
            return std::nullopt;
          product = add.getResult();
        }
      int64_t g = blocksOfCuts(product);
      // Every read the same way: the same blocks, the same bias.
      if (g < 2 || (c.groups && (g != c.groups || bias != c.bias)))
        return std::nullopt;
      c.groups = g;
      c.bias = bias;
    }
    GlobalType t = param.getGlobalType();
    int64_t ranks = t.getPlacement().getHierarchy()[dim];
    if (t.getShape()[axis] % (c.groups * ranks) != 0)
      return std::nullopt;
    return c;
  }

  /// Whether `bias` is split over `dim` like `weight` and read only by bias
  /// additions.
  bool biasAlike(ParamOp bias, ParamOp weight, unsigned dim) {
    GlobalType b = bias.getGlobalType(), w = weight.getGlobalType();
    if (!b.hasSBP() || b.getRank() != 1 || b.getPlacement() != w.getPlacement())
      return false;
    std::optional<std::pair<unsigned, int64_t>> split = splitDim(bias);
    if (!split || split->first != dim || split->second != 0)
      return false;
    for (ReadParamOp r : reads.lookup(bias.getSymName()))
      for (Operation *user : r->getUsers())
        if (!isa<BiasAddOp>(user))
          return false;
    return true;
  }

  void regroup(ParamOp param, unsigned dim, int64_t groups) {
    GlobalType t = param.getGlobalType();
    SmallVector<SBPDim> dims(t.getSbp().getDims());
    dims[dim] = dims[dim].withGroups(groups);
    GlobalType grouped = t.withSBP(SBPAttr::get(param.getContext(), dims));
    param.setTypeAttr(TypeAttr::get(grouped));
    for (ReadParamOp r : reads.lookup(param.getSymName()))
      r.getResult().setType(grouped);
  }

  ModuleOp module;
  llvm::StringMap<ParamOp> params;
  llvm::StringMap<SmallVector<ReadParamOp>> reads;
};

struct GroupFusedSplitsPass
    : public pf::impl::GroupFusedSplitsPassBase<GroupFusedSplitsPass> {
  void runOnOperation() override { Grouper(getOperation()).run(); }
};

} // namespace
