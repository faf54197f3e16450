//===- PFDialect.h - PipeFlow dialect ---------------------------*- C++ -*-===//

#ifndef PF_DIALECT_PF_IR_PFDIALECT_H
#define PF_DIALECT_PF_IR_PFDIALECT_H

#include "mlir/IR/Dialect.h"

#include "pf/Dialect/PF/IR/PFDialect.h.inc"

#endif // PF_DIALECT_PF_IR_PFDIALECT_H
