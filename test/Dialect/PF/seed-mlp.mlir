// The seed MLP parses, verifies and round-trips (custom and generic form).
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir | pf-opt | FileCheck %s
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -mlir-print-op-generic | pf-opt | FileCheck %s
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir > %t.1.mlir
// RUN: pf-opt %t.1.mlir > %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir

// CHECK-DAG: #[[P0:.*]] = #pf.placement<"cpu", [0]>
// CHECK-DAG: #[[P1:.*]] = #pf.placement<"cpu", [1]>
// CHECK: pf.param @m_stage0.linear0.weight : !pf.global<512x784xf32, #[[P0]], #pf.sbp<[B]>> = #pf.init<kaiming_uniform(784)>
// CHECK: pf.param @m_stage1.linear2.bias : !pf.global<10xf32, #[[P1]], #pf.sbp<[B]>> = #pf.init<kaiming_uniform(512)>
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: !pf.global<16x1x28x28xf32, #[[P0]], #pf.sbp<[B]>>, %[[Y:.*]]: !pf.global<16xi64, #[[P1]], #pf.sbp<[B]>>)
// CHECK: %[[W0:.*]] = pf.read_param @m_stage0.linear0.weight {pf.stage = 0 : i64}
// CHECK: %[[F:.*]] = pf.flatten %[[X]] {pf.stage = 0 : i64}
// CHECK: %[[H0:.*]] = pf.matmul %[[F]], %[[W0]] {pf.stage = 0 : i64, transpose_b}
// CHECK: %[[A0:.*]] = pf.relu %{{.*}} {pf.stage = 0 : i64}
// CHECK: %[[IN1:.*]] = pf.to_global %[[A0]] : !pf.global<16x512xf32, #[[P0]]> -> !pf.global<16x512xf32, #[[P1]], #pf.sbp<[B]>>
// CHECK: pf.matmul %[[IN1]], %{{.*}} {pf.stage = 1 : i64, transpose_b}
// CHECK: %[[L:.*]] = pf.softmax_cross_entropy %{{.*}}, %[[Y]] {pf.stage = 1 : i64} : {{.*}} -> !pf.global<f32, #[[P1]]>
// CHECK: return %[[L]]
