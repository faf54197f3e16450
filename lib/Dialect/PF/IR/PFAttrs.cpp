//===- PFAttrs.cpp - PipeFlow attributes ----------------------------------===//

#include "pf/Dialect/PF/IR/PFAttrs.h"
#include "pf/Dialect/PF/IR/PFDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::pf;

#include "pf/Dialect/PF/IR/PFEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "pf/Dialect/PF/IR/PFAttrs.cpp.inc"

void PFDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pf/Dialect/PF/IR/PFAttrs.cpp.inc"
      >();
}

std::string SBPDim::str() const {
  switch (kind) {
  case Kind::Split:
    if (groups > 1)
      return "S(" + std::to_string(axis) + ", " + std::to_string(groups) + ")";
    return "S(" + std::to_string(axis) + ")";
  case Kind::Broadcast:
    return "B";
  case Kind::Partial:
    return "P";
  }
  llvm_unreachable("unknown SBP kind");
}

//===----------------------------------------------------------------------===//
// PlacementAttr
//===----------------------------------------------------------------------===//

namespace {
/// Parses nested rank lists, recording the extent of every nesting level so
/// that ragged lists are rejected where they occur.
struct RankListParser {
  AsmParser &p;
  SmallVector<int64_t> shape;
  SmallVector<int64_t> ranks;
  int64_t leafDepth = -1;

  /// Parses the body of a list whose '[' has been consumed.
  ParseResult parseBody(unsigned depth, SMLoc loc) {
    if (succeeded(p.parseOptionalRSquare()))
      return p.emitError(loc, "placement rank lists must not be empty");
    bool nested = succeeded(p.parseOptionalLSquare());
    int64_t count = 0;
    do {
      if (nested) {
        SMLoc innerLoc = p.getCurrentLocation();
        if (count > 0 && p.parseLSquare())
          return failure();
        if (parseBody(depth + 1, innerLoc))
          return failure();
      } else {
        if (leafDepth >= 0 && leafDepth != depth)
          return p.emitError(p.getCurrentLocation(),
                             "placement rank lists must be rectangular: "
                             "ranks at different nesting depths");
        leafDepth = depth;
        int64_t rank;
        if (p.parseInteger(rank))
          return failure();
        ranks.push_back(rank);
      }
      ++count;
    } while (succeeded(p.parseOptionalComma()));
    if (p.parseRSquare())
      return failure();
    if (shape.size() <= depth)
      shape.resize(depth + 1, -1);
    if (shape[depth] == -1)
      shape[depth] = count;
    else if (shape[depth] != count)
      return p.emitError(loc, "placement rank lists must be rectangular: "
                              "expected ")
             << shape[depth] << " entries at nesting depth " << depth
             << ", got " << count;
    return success();
  }
};

void printRankList(AsmPrinter &printer, ArrayRef<int64_t> hierarchy,
                   ArrayRef<int64_t> ranks) {
  if (hierarchy.size() <= 1) {
    printer << "[";
    llvm::interleaveComma(ranks, printer);
    printer << "]";
    return;
  }
  int64_t inner = ranks.size() / hierarchy.front();
  printer << "[";
  for (int64_t i = 0; i < hierarchy.front(); ++i) {
    if (i)
      printer << ", ";
    printRankList(printer, hierarchy.drop_front(),
                  ranks.slice(i * inner, inner));
  }
  printer << "]";
}
} // namespace

Attribute PlacementAttr::parse(AsmParser &p, Type) {
  std::string device;
  if (p.parseLess() || p.parseString(&device) || p.parseComma())
    return {};
  SMLoc listLoc = p.getCurrentLocation();
  if (p.parseLSquare())
    return {};
  RankListParser lists{p, {}, {}};
  if (lists.parseBody(0, listLoc) || p.parseGreater())
    return {};
  return p.getChecked<PlacementAttr>(p.getContext(), device, lists.shape,
                                     lists.ranks);
}

void PlacementAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getDevice() << "\", ";
  printRankList(printer, getHierarchy(), getRanks());
  printer << ">";
}

LogicalResult
PlacementAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                      StringRef device, ArrayRef<int64_t> hierarchy,
                      ArrayRef<int64_t> ranks) {
  if (device != "cpu" && device != "cuda")
    return emitError() << "placement device must be \"cpu\" or \"cuda\", got \""
                       << device << "\"";
  if (ranks.empty())
    return emitError() << "placement rank lists must not be empty";
  int64_t product = 1;
  for (int64_t extent : hierarchy) {
    if (extent <= 0)
      return emitError() << "placement hierarchy extents must be positive";
    product *= extent;
  }
  if (hierarchy.empty() || product != static_cast<int64_t>(ranks.size()))
    return emitError() << "placement hierarchy does not match its "
                       << ranks.size() << " ranks";
  llvm::SmallDenseSet<int64_t> seen;
  for (int64_t rank : ranks) {
    if (rank < 0)
      return emitError() << "placement ranks must be non-negative, got "
                         << rank;
    if (rank >= kMaxWorldSize)
      return emitError() << "placement rank " << rank
                         << " is beyond the largest world PipeFlow compiles ("
                         << kMaxWorldSize << " ranks, one program each)";
    if (!seen.insert(rank).second)
      return emitError() << "placement rank " << rank
                         << " appears more than once";
  }
  return success();
}

int64_t PlacementAttr::indexOf(int64_t rank) const {
  auto ranks = getRanks();
  auto it = llvm::find(ranks, rank);
  return it == ranks.end() ? -1 : it - ranks.begin();
}

SmallVector<int64_t> PlacementAttr::getCoordinates(int64_t pos) const {
  auto hierarchy = getHierarchy();
  SmallVector<int64_t> coords(hierarchy.size());
  for (int64_t i = hierarchy.size() - 1; i >= 0; --i) {
    coords[i] = pos % hierarchy[i];
    pos /= hierarchy[i];
  }
  return coords;
}

PlacementAttr PlacementAttr::flatten() const {
  int64_t n = getNumRanks();
  return PlacementAttr::get(getContext(), getDevice(), ArrayRef<int64_t>(n),
                            getRanks());
}

//===----------------------------------------------------------------------===//
// SBPAttr
//===----------------------------------------------------------------------===//

Attribute SBPAttr::parse(AsmParser &p, Type) {
  SmallVector<SBPDim> dims;
  if (p.parseLess())
    return {};
  auto parseEntry = [&]() -> ParseResult {
    SMLoc loc = p.getCurrentLocation();
    StringRef kw;
    if (p.parseOptionalKeyword(&kw))
      return p.emitError(loc,
                         "expected an SBP entry: S(axis), S(axis, g), B or P");
    if (kw == "B") {
      dims.push_back(SBPDim::broadcast());
      return success();
    }
    if (kw == "P") {
      dims.push_back(SBPDim::partial());
      return success();
    }
    if (kw == "S") {
      int64_t axis, groups = 1;
      if (p.parseLParen() || p.parseInteger(axis))
        return failure();
      if (succeeded(p.parseOptionalComma())) {
        SMLoc gloc = p.getCurrentLocation();
        if (p.parseInteger(groups))
          return failure();
        if (groups < 2)
          return p.emitError(gloc, "a grouped split S(axis, g) needs g >= 2, "
                                   "got ")
                 << groups;
      }
      if (p.parseRParen())
        return failure();
      dims.push_back(SBPDim::split(axis, groups));
      return success();
    }
    return p.emitError(loc, "unknown SBP entry '")
           << kw << "': expected S(axis), B or P";
  };
  if (p.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseEntry) ||
      p.parseGreater())
    return {};
  return p.getChecked<SBPAttr>(p.getContext(), dims);
}

void SBPAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer,
                        [&](const SBPDim &d) { printer << d.str(); });
  printer << "]>";
}

LogicalResult SBPAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                              ArrayRef<SBPDim> dims) {
  if (dims.empty())
    return emitError() << "an SBP needs at least one entry";
  for (const SBPDim &d : dims)
    if (d.isSplit() && d.getAxis() < 0)
      return emitError() << "SBP split axis must be non-negative, got "
                         << d.getAxis();
  return success();
}

bool SBPAttr::isAllBroadcast() const {
  return llvm::all_of(getDims(), [](SBPDim d) { return d.isBroadcast(); });
}

int64_t SBPAttr::getSplitFactor(int64_t axis, PlacementAttr placement) const {
  int64_t factor = 1;
  for (auto [d, extent] : llvm::zip(getDims(), placement.getHierarchy()))
    if (d.isSplit() && d.getAxis() == axis)
      factor *= extent;
  return factor;
}

SBPAttr SBPAttr::getBroadcast(MLIRContext *ctx, unsigned n) {
  return SBPAttr::get(ctx, SmallVector<SBPDim>(n, SBPDim::broadcast()));
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

static unsigned getNumInitArgs(InitKind kind) {
  switch (kind) {
  case InitKind::Zeros:
  case InitKind::Ones:
    return 0;
  case InitKind::Constant:
  case InitKind::KaimingUniform:
    return 1;
  case InitKind::Uniform:
  case InitKind::Normal:
    return 2;
  }
  llvm_unreachable("unknown init kind");
}

Attribute InitAttr::parse(AsmParser &p, Type) {
  StringRef kw;
  SMLoc loc;
  if (p.parseLess())
    return {};
  loc = p.getCurrentLocation();
  if (p.parseKeyword(&kw))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(kw);
  if (!kind) {
    p.emitError(loc, "unknown initializer '")
        << kw
        << "': expected zeros, ones, constant, uniform, normal or "
           "kaiming_uniform";
    return {};
  }
  double args[2] = {0.0, 0.0};
  unsigned n = getNumInitArgs(*kind);
  if (n > 0) {
    if (p.parseLParen())
      return {};
    if (*kind == InitKind::KaimingUniform) {
      // fan_in counts elements: an integer.
      int64_t fanIn;
      if (p.parseInteger(fanIn))
        return {};
      args[0] = static_cast<double>(fanIn);
    } else {
      for (unsigned i = 0; i < n; ++i)
        if ((i && p.parseComma()) || p.parseFloat(args[i]))
          return {};
    }
    if (p.parseRParen())
      return {};
  }
  if (p.parseGreater())
    return {};
  return p.getChecked<InitAttr>(p.getContext(), *kind, APFloat(args[0]),
                                APFloat(args[1]));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyInitKind(getKind());
  switch (getNumInitArgs(getKind())) {
  case 0:
    break;
  case 1:
    if (getKind() == InitKind::KaimingUniform)
      printer << "(" << static_cast<int64_t>(getFirst()) << ")";
    else {
      printer << "(";
      printer.printFloat(getA());
      printer << ")";
    }
    break;
  default:
    printer << "(";
    printer.printFloat(getA());
    printer << ", ";
    printer.printFloat(getB());
    printer << ")";
  }
  printer << ">";
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, APFloat aValue, APFloat bValue) {
  double a = aValue.convertToDouble(), b = bValue.convertToDouble();
  switch (kind) {
  case InitKind::Uniform:
    if (!(a <= b))
      return emitError() << "uniform initializer needs low <= high, got " << a
                         << " > " << b;
    break;
  case InitKind::Normal:
    if (!(b >= 0.0))
      return emitError() << "normal initializer needs a non-negative std, got "
                         << b;
    break;
  case InitKind::KaimingUniform:
    if (!(a >= 1.0) || std::floor(a) != a)
      return emitError() << "kaiming_uniform initializer needs a positive "
                            "integer fan_in, got "
                         << a;
    break;
  default:
    break;
  }
  return success();
}
