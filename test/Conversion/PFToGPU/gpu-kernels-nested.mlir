// RUN: pf-opt %s -pf-gpu-kernels | FileCheck %s

// Without rank modules the top module gets the kernels of its own ops only:
// a nested module's ops are its own business.
// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @pf_kernels
// CHECK: gpu.func @pf_ew_relu(
// CHECK-NOT: gpu.func @pf_ew_mul(

#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4xf32, #P>
func.func @f(%x: !X) -> !X {
  %r = pf.relu %x : (!X) -> !X
  return %r : !X
}
module @other {
  func.func @g(%x: !X) -> !X {
    %m = pf.mul %x, %x : (!X, !X) -> !X
    return %m : !X
  }
}
