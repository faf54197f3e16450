//===- PFTypes.h - PipeFlow types -------------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_IR_PFTYPES_H
#define PF_DIALECT_PF_IR_PFTYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"
#include "pf/Dialect/PF/IR/PFAttrs.h"

#define GET_TYPEDEF_CLASSES
#include "pf/Dialect/PF/IR/PFTypes.h.inc"

#endif // PF_DIALECT_PF_IR_PFTYPES_H
