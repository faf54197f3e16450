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

/// Registers `--pf-emit-rank-artifacts`. Its output directory is the
/// translation's `-o DIR` (rewritten by rewriteArtifactArguments).
void registerRankArtifactsTranslation();

/// pf-translate's `-o DIR` for `--pf-emit-rank-artifacts` names a directory:
/// rewrites it to `-o DIR/manifest.json` and remembers DIR.
void rewriteArtifactArguments(int &argc, char **&argv);

} // namespace pf
} // namespace mlir

#endif // PF_TARGET_RANKARTIFACTS_H
