// The emitted graph is valid Graphviz: dot renders it to SVG.
// REQUIRES: graphviz
// RUN: pf-translate --pf-emit-graph-dot %pf_src_root/examples/mlir/seed_mlp.mlir | dot -Tsvg | FileCheck %s
// CHECK: <svg
// CHECK: pf.softmax_cross_entropy
