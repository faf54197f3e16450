//===- GraphDot.h - Graphviz drawing of pf functions -----------*- C++ -*-===//

#ifndef PF_TARGET_GRAPHDOT_H
#define PF_TARGET_GRAPHDOT_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class Operation;
namespace pf {

/// Writes a Graphviz digraph of every function in `op`: one node per op and
/// function argument, one edge per use labelled with the value's shape,
/// placement and SBP; ops are filled with their pipeline stage's colour.
LogicalResult emitGraphDot(Operation *op, raw_ostream &os);

/// Registers `--pf-emit-graph-dot` with mlir-translate's registry.
void registerGraphDotTranslation();

} // namespace pf
} // namespace mlir

#endif // PF_TARGET_GRAPHDOT_H
