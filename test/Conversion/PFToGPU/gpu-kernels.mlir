// RUN: pf-opt %s -pf-gpu-kernels | FileCheck %s
// RUN: pf-opt %s --pass-pipeline='builtin.module(pf-gpu-kernels,nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm,convert-arith-to-llvm),reconcile-unrealized-casts,gpu-module-to-binary{toolkit=%cuda_toolkit format=isa})' | FileCheck %s --check-prefix=PTX
// RUN: pf-opt %s --pass-pipeline='builtin.module(pf-gpu-kernels,nvvm-attach-target{chip=sm_90 features=+ptx80},gpu.module(convert-gpu-to-nvvm,convert-arith-to-llvm),reconcile-unrealized-casts,gpu-module-to-binary{toolkit=%cuda_toolkit format=bin})' | FileCheck %s --check-prefix=BIN
// REQUIRES: cuda

// One kernel per element-wise op and kind (the two GELUs share one), one
// thread per element with a guard against the tail, built from the same
// description as the CPU lowering's generated kernels.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @pf_kernels
// CHECK: gpu.func @pf_ew_add(%[[OUT:.+]]: !llvm.ptr, %[[A:.+]]: !llvm.ptr, %[[B:.+]]: !llvm.ptr, %[[N:.+]]: i64) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: gpu.block_id x
// CHECK: gpu.block_dim x
// CHECK: gpu.thread_id x
// CHECK: %[[I:.+]] = llvm.add
// CHECK: %[[IN:.+]] = llvm.icmp "slt" %[[I]], %[[N]]
// CHECK: llvm.cond_br %[[IN]], ^[[WORK:.+]], ^[[EXIT:.+]]
// CHECK: ^[[WORK]]:
// CHECK: llvm.getelementptr %[[A]][%[[I]]]
// CHECK: llvm.getelementptr %[[B]][%[[I]]]
// CHECK: llvm.fadd
// CHECK: llvm.getelementptr %[[OUT]][%[[I]]]
// CHECK: llvm.store
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: gpu.return
// CHECK: gpu.func @pf_ew_activation_gelu(
// CHECK: math.erf %{{.+}} : f64
// CHECK: math.exp %{{.+}} : f64
// CHECK: gpu.func @pf_ew_activation_grad_tanh(
// CHECK: math.tanh %{{.+}} : f64
// CHECK: gpu.func @pf_ew_relu(
// CHECK: llvm.fcmp "olt"
// CHECK: llvm.select
// CHECK-NOT: gpu.func @pf_ew_activation_gelu(

// PTX for sm_90 with libdevice linked in (no call to an __nv_ function is
// left), every kernel an entry point.
// PTX: gpu.binary @pf_kernels
// PTX-SAME: .target sm_90
// PTX-SAME: .entry pf_ew_add(
// PTX-SAME: .entry pf_ew_activation_gelu(
// PTX-SAME: .entry pf_ew_activation_grad_tanh(
// PTX-SAME: .entry pf_ew_relu(
// PTX-NOT: __nv_

// ptxas makes a cubin (an ELF image).
// BIN: gpu.binary @pf_kernels [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">, {{.*}}bin = "\7FELF

#P = #pf.placement<"cuda", [0]>
!X = !pf.global<4x3xf32, #P>
func.func @f(%x: !X, %y: !X) -> !X {
  %a = pf.add %x, %y : (!X, !X) -> !X
  %h = pf.activation %a {kind = "gelu"} : (!X) -> !X
  %h2 = pf.activation %h {kind = "gelu"} : (!X) -> !X
  %t = pf.activation_grad %h2, %a {kind = "tanh"} : (!X, !X) -> !X
  %r = pf.relu %t : (!X) -> !X
  return %r : !X
}
