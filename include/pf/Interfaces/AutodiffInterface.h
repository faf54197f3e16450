//===- AutodiffInterface.h - reverse-mode gradient rules --------*- C++ -*-===//

#ifndef PF_INTERFACES_AUTODIFFINTERFACE_H
#define PF_INTERFACES_AUTODIFFINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "pf/Interfaces/AutodiffInterface.h.inc"

#endif // PF_INTERFACES_AUTODIFFINTERFACE_H
