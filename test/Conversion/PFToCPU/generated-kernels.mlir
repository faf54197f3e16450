// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds=generated-kernels=true -convert-pf-to-cpu="outline-actions=false generated-kernels=true" | FileCheck %s
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s --check-prefix=LIB

// With generated-kernels the element-wise ops call the compiler's own
// kernels (Kernels/Elementwise.h), a loop over the n elements in double
// through libm's exp for the sigmoid. Consecutive ones of an action are one
// kernel: the forward's add and sigmoid are pf_ew_fused_0, which stores both
// results (the sigmoid's gradient reads its input); an op alone keeps its
// own kernel.
// CHECK: llvm.func @exp(f64) -> f64
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[N:.+]] = llvm.mlir.constant(12 : i64)
// CHECK-NEXT: llvm.call @pf_ew_fused_0(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[N]])
// CHECK: llvm.call @pf_ew_activation_grad_sigmoid(
// CHECK: llvm.call @pf_ew_add(
// CHECK-NOT: pfrt_k_activation
// CHECK-NOT: pfrt_k_add
// CHECK-LABEL: llvm.func internal @pf_ew_fused_0(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: i64)
// CHECK: llvm.icmp "slt"
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK: llvm.load %{{.+}} : !llvm.ptr -> f32
// CHECK: %[[SUM:.+]] = llvm.fadd
// CHECK: llvm.fpext %[[SUM]]
// CHECK: llvm.call @exp(
// CHECK: llvm.fdiv
// CHECK: %[[SIG:.+]] = llvm.fptrunc
// CHECK: llvm.store %[[SUM]]
// CHECK: llvm.store %[[SIG]]
// CHECK-LABEL: llvm.func internal @pf_ew_activation_grad_sigmoid(
// CHECK: llvm.func internal @pf_ew_add(%{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: !llvm.ptr, %{{.+}}: i64)
// LIB-NOT: pf_ew_
// LIB: llvm.call @pfrt_k_activation(

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
