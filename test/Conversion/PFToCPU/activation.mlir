// RUN: pf-opt %s -pf-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// The gradient of an activation is its activation_grad of the input; both
// lower to the runtime's kernels with the kind's code (sigmoid = 3).
// GRAD: %[[H:.+]] = pf.activation %[[X:.+]] {kind = "sigmoid"}
// GRAD: pf.activation_grad %[[X]], %{{.+}} {kind = "sigmoid", pf.phase = "backward_input"}
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[K:.+]] = llvm.mlir.constant(3 : i32)
// CHECK-NEXT: %[[N:.+]] = llvm.mlir.constant(12 : i64)
// CHECK-NEXT: llvm.call @pfrt_k_activation(%[[K]], %[[X:.+]], %{{.+}}, %[[N]])
// CHECK: %[[KG:.+]] = llvm.mlir.constant(3 : i32)
// CHECK-NEXT: %[[NG:.+]] = llvm.mlir.constant(12 : i64)
// CHECK-NEXT: llvm.call @pfrt_k_activation_grad(%[[KG]], %[[X]], %{{.+}}, %{{.+}}, %[[NG]])

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<f32, #P>
pf.param @w : !X = #pf.init<normal(0.0, 1.0)>
func.func @train_step(%x: !X, %y: !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !S {
  %w = pf.read_param @w : !X
  %a = pf.add %x, %w : (!X, !X) -> !pf.global<4x3xf32, #P>
  %h = pf.activation %a {kind = "sigmoid"} : (!pf.global<4x3xf32, #P>) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !S
  return %l : !S
}
