// RUN: pf-translate --pf-emit-graph-dot %pf_src_root/examples/mlir/seed_mlp.mlir | FileCheck %s
// RUN: pf-translate --pf-emit-graph-dot %s | FileCheck %s --check-prefix=NOSTAGE

// One cluster per function, argument nodes, op nodes filled by stage, edges
// labelled with shape, placement and SBP ([?] = not inferred yet).
// CHECK: digraph pipeflow {
// CHECK: subgraph cluster_0 {
// CHECK: label="@train_step";
// CHECK: [[X:n[0-9]+]] [shape=ellipse, label="%arg0"];
// CHECK: [[Y:n[0-9]+]] [shape=ellipse, label="%arg1"];
// CHECK: [[W0:n[0-9]+]] [shape=box, style=filled, fillcolor="#a6cee3", label="pf.read_param @m_stage0.linear0.weight\nstage 0"];
// CHECK: [[F:n[0-9]+]] [shape=box, style=filled, fillcolor="#a6cee3", label="pf.flatten\nstage 0"];
// CHECK: [[X]] -> [[F]] [label="16x1x28x28xf32\ncpu[0] [B]"];
// CHECK: [[MM:n[0-9]+]] [shape=box, style=filled, fillcolor="#a6cee3", label="pf.matmul\nstage 0"];
// CHECK-DAG: [[F]] -> [[MM]] [label="16x784xf32\ncpu[0] [?]"];
// CHECK-DAG: [[W0]] -> [[MM]] [label="512x784xf32\ncpu[0] [B]"];
// CHECK: [[TG:n[0-9]+]] [shape=box, style=filled, fillcolor="white", label="pf.to_global"];
// CHECK: [[MM1:n[0-9]+]] [shape=box, style=filled, fillcolor="#b2df8a", label="pf.matmul\nstage 1"];
// CHECK: [[TG]] -> [[MM1]] [label="16x512xf32\ncpu[1] [B]"];
// CHECK: [[CE:n[0-9]+]] [shape=box, style=filled, fillcolor="#b2df8a", label="pf.softmax_cross_entropy\nstage 1"];
// CHECK: [[Y]] -> [[CE]] [label="16xi64\ncpu[1] [B]"];
// CHECK: [[RET:n[0-9]+]] [shape=box, style=filled, fillcolor="white", label="func.return"];
// CHECK: [[CE]] -> [[RET]] [label="f32\ncpu[1] [?]"];
// CHECK: subgraph cluster_legend {
// CHECK: legend_0 [shape=box, style=filled, fillcolor="#a6cee3", label="stage 0"];
// CHECK: legend_1 [shape=box, style=filled, fillcolor="#b2df8a", label="stage 1"];

// NOSTAGE-LABEL: label="@nd";
// NOSTAGE: label="%arg0"
// NOSTAGE: [[R:n[0-9]+]] [shape=box, style=filled, fillcolor="white", label="pf.relu"];
// NOSTAGE: -> [[R]] [label="4x4xf32\ncuda[2x2: 0, 1, 2, 3] [S(0), P]"];
// NOSTAGE-NOT: cluster_legend
func.func @nd(%x: !pf.global<4x4xf32, #pf.placement<"cuda", [[0, 1], [2, 3]]>, #pf.sbp<[S(0), P]>>) {
  %r = pf.relu %x : (!pf.global<4x4xf32, #pf.placement<"cuda", [[0, 1], [2, 3]]>, #pf.sbp<[S(0), P]>>) -> !pf.global<4x4xf32, #pf.placement<"cuda", [[0, 1], [2, 3]]>>
  return
}
