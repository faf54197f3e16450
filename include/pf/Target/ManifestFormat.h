//===- ManifestFormat.h - the rank artifacts' manifest format ---*- C++ -*-===//
//
// Header-only and free of MLIR: pf-translate writes the value into
// DIR/manifest.json and pf-run (LLVMSupport only) checks it before launching.
//
//===----------------------------------------------------------------------===//

#ifndef PF_TARGET_MANIFESTFORMAT_H
#define PF_TARGET_MANIFESTFORMAT_H

namespace mlir::pf {
/// The manifest's "format" field. Bump the suffix on any change a reader of
/// an older manifest would misread (python/pipeflow/compiler.py checks the
/// same string).
inline constexpr const char kRankArtifactsFormat[] = "pipeflow-artifacts-1";
} // namespace mlir::pf

#endif // PF_TARGET_MANIFESTFORMAT_H
