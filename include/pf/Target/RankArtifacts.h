//===- RankArtifacts.h - per-rank executables ------------------*- C++ -*-===//

#ifndef PF_TARGET_RANKARTIFACTS_H
#define PF_TARGET_RANKARTIFACTS_H

#include "mlir/Support/LLVM.h"

namespace mlir {
class ModuleOp;
namespace pf {

/// Compiles every per-rank module (`pf.rank`, in the LLVM dialect, as
/// convert-pf-to-cpu leaves it) in-process for the host CPU and links it
/// with libpfrt into `dir/rank<r>` (an executable) and `dir/librank<r>.so`,
/// and writes `dir/manifest.json`, which it also prints to `os`.
LogicalResult emitRankArtifacts(ModuleOp module, StringRef dir,
                                raw_ostream &os);

/// Registers `--pf-emit-rank-artifacts` and its option
/// `--pf-artifact-dir=DIR`, the directory it writes; the translation's own
/// output (`-o`, stdout by default) receives a copy of the manifest.
void registerRankArtifactsTranslation();

} // namespace pf
} // namespace mlir

#endif // PF_TARGET_RANKARTIFACTS_H
