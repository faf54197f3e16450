#!/usr/bin/env bash
# Regenerates the reference docs from the .td files and copies them over the
# committed ones (docs/Dialects/PF.md, docs/Passes.md); commit the result.
# test/Docs/generated-docs.test fails while they differ.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PF_BUILD_DIR:-$root/build}
ninja -C "$build" pf-doc
git -C "$root" status --short -- docs
