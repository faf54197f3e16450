//===- SBPInterface.h - SBP signatures of ops -------------------*- C++ -*-===//

#ifndef PF_INTERFACES_SBPINTERFACE_H
#define PF_INTERFACES_SBPINTERFACE_H

#include "mlir/IR/OpDefinition.h"
#include "pf/Dialect/PF/IR/PFAttrs.h"

namespace mlir::pf {
/// One 1-D SBP signature: the layout of every operand and every result over
/// one hierarchy dimension.
struct SBPSignature {
  SmallVector<SBPDim> operands;
  SmallVector<SBPDim> results;
  bool operator==(const SBPSignature &o) const {
    return operands == o.operands && results == o.results;
  }
};
} // namespace mlir::pf

#include "pf/Interfaces/SBPInterface.h.inc"

#endif // PF_INTERFACES_SBPINTERFACE_H
