//===- PFTypes.cpp - PipeFlow types ---------------------------------------===//

#include "pf/Dialect/PF/IR/PFTypes.h"
#include "pf/Dialect/PF/IR/PFDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::pf;

#define GET_TYPEDEF_CLASSES
#include "pf/Dialect/PF/IR/PFTypes.cpp.inc"

void PFDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "pf/Dialect/PF/IR/PFTypes.cpp.inc"
      >();
}

Type GlobalType::parse(AsmParser &p) {
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute placement, sbp;
  if (p.parseLess() ||
      p.parseDimensionList(shape, /*allowDynamic=*/false,
                           /*withTrailingX=*/true) ||
      p.parseType(elementType) || p.parseComma())
    return {};
  SMLoc placementLoc = p.getCurrentLocation();
  if (p.parseAttribute(placement))
    return {};
  auto placementAttr = dyn_cast<PlacementAttr>(placement);
  if (!placementAttr) {
    p.emitError(placementLoc, "expected a #pf.placement, got ") << placement;
    return {};
  }
  SBPAttr sbpAttr;
  if (succeeded(p.parseOptionalComma())) {
    SMLoc sbpLoc = p.getCurrentLocation();
    if (p.parseAttribute(sbp))
      return {};
    sbpAttr = dyn_cast<SBPAttr>(sbp);
    if (!sbpAttr) {
      p.emitError(sbpLoc, "expected a #pf.sbp, got ") << sbp;
      return {};
    }
  }
  if (p.parseGreater())
    return {};
  return p.getChecked<GlobalType>(p.getContext(), shape, elementType,
                                  placementAttr, sbpAttr);
}

void GlobalType::print(AsmPrinter &printer) const {
  printer << "<";
  for (int64_t d : getShape())
    printer << d << "x";
  printer << getElementType() << ", " << getPlacement();
  if (getSbp())
    printer << ", " << getSbp();
  printer << ">";
}

LogicalResult GlobalType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> shape, Type elementType,
                                 PlacementAttr placement, SBPAttr sbp) {
  if (!elementType.isIntOrFloat())
    return emitError() << "global tensor element type must be an integer or "
                          "float type, got "
                       << elementType;
  for (int64_t d : shape)
    if (d <= 0)
      return emitError() << "global tensor dimensions must be positive, got "
                         << d;
  if (!placement)
    return emitError() << "global tensor needs a placement";
  if (!sbp)
    return success();
  if (sbp.size() != placement.getNumHierarchyDims())
    return emitError() << "SBP " << sbp << " has " << sbp.size()
                       << " entries but the placement has "
                       << placement.getNumHierarchyDims()
                       << " hierarchy dimension(s)";
  for (SBPDim d : sbp.getDims()) {
    if (!d.isSplit())
      continue;
    if (d.getAxis() >= static_cast<int64_t>(shape.size()))
      return emitError() << "SBP splits axis " << d.getAxis()
                         << " but the tensor has rank " << shape.size();
  }
  for (int64_t axis = 0, e = shape.size(); axis < e; ++axis) {
    int64_t factor = sbp.getSplitFactor(axis, placement);
    if (shape[axis] % factor != 0)
      return emitError() << "dimension " << axis << " of size " << shape[axis]
                         << " is not divisible by the " << factor
                         << " ranks it is split over";
  }
  for (auto [d, dim] : llvm::enumerate(sbp.getDims())) {
    if (!dim.isGrouped())
      continue;
    int64_t axis = dim.getAxis(), ranks = placement.getHierarchy()[d];
    if (sbp.getSplitFactor(axis, placement) != ranks)
      return emitError() << "the grouped split " << dim.str() << " shares axis "
                         << axis << " with another hierarchy dimension's split";
    if (shape[axis] % (dim.getGroups() * ranks) != 0)
      return emitError() << "dimension " << axis << " of size " << shape[axis]
                         << " is not " << dim.getGroups()
                         << " blocks divisible by the " << ranks << " ranks "
                         << dim.str() << " splits them over";
  }
  return success();
}

int64_t GlobalType::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : getShape())
    n *= d;
  return n;
}

SmallVector<int64_t> GlobalType::getLocalShape() const {
  assert(getSbp() && "local shape of a global tensor without SBP");
  SmallVector<int64_t> local(getShape());
  for (auto [d, extent] :
       llvm::zip(getSbp().getDims(), getPlacement().getHierarchy()))
    if (d.isSplit())
      local[d.getAxis()] /= extent;
  return local;
}

GlobalType GlobalType::withSBP(SBPAttr sbp) const {
  return GlobalType::get(getContext(), getShape(), getElementType(),
                         getPlacement(), sbp);
}

GlobalType GlobalType::withShape(ArrayRef<int64_t> shape) const {
  return GlobalType::get(getContext(), shape, getElementType(), getPlacement(),
                         getSbp());
}

GlobalType GlobalType::withPlacementAndSBP(PlacementAttr placement,
                                           SBPAttr sbp) const {
  return GlobalType::get(getContext(), getShape(), getElementType(), placement,
                         sbp);
}

RankedTensorType GlobalType::getLocalTensorType() const {
  return RankedTensorType::get(getLocalShape(), getElementType());
}

bool GlobalType::isLayoutCompatibleWith(GlobalType other) const {
  return getShape() == other.getShape() &&
         getElementType() == other.getElementType() &&
         getPlacement() == other.getPlacement();
}
