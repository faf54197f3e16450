// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing=report -o /dev/null 2>&1 | FileCheck %s --check-prefix=BOXING
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp | FileCheck %s --check-prefix=SBP
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-autodiff -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s

// A data-parallel block of the transformer ops on 2 ranks: the batch stays
// split through broadcast, sub, div, masked_fill, slice, concat and the
// sums; the only communication is the loss's all-reduce (the parameter's
// gradient stays a partial sum in its buffer: no optimizer here). Shape
// attributes become the local shapes on each rank.
#P = #pf.placement<"cpu", [0, 1]>
pf.param @pos : !pf.global<3x4xf32, #P, #pf.sbp<[B]>> = #pf.init<normal(0.0, 1.0)>
func.func @block(%x: !pf.global<4x3x4xf32, #P, #pf.sbp<[S(0)]>>, %m: !pf.global<4x3x4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<f32, #P> {
  %p = pf.read_param @pos : !pf.global<3x4xf32, #P, #pf.sbp<[B]>>
  %e = pf.broadcast_to %p {shape = array<i64: 4, 3, 4>} : (!pf.global<3x4xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x3x4xf32, #P>
  %d = pf.sub %x, %e : (!pf.global<4x3x4xf32, #P, #pf.sbp<[S(0)]>>, !pf.global<4x3x4xf32, #P>) -> !pf.global<4x3x4xf32, #P>
  %q = pf.div %d, %e : (!pf.global<4x3x4xf32, #P>, !pf.global<4x3x4xf32, #P>) -> !pf.global<4x3x4xf32, #P>
  %f = pf.masked_fill %q, %m {value = 0xFFF0000000000000 : f64} : (!pf.global<4x3x4xf32, #P>, !pf.global<4x3x4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x3x4xf32, #P>
  %z = pf.masked_fill %f, %m {value = 0.0 : f64} : (!pf.global<4x3x4xf32, #P>, !pf.global<4x3x4xi64, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x3x4xf32, #P>
  %a = pf.slice %z {offsets = array<i64: 0, 0, 1>, sizes = array<i64: 4, 3, 2>} : (!pf.global<4x3x4xf32, #P>) -> !pf.global<4x3x2xf32, #P>
  %c = pf.concat %a, %x {axis = 2 : i64} : (!pf.global<4x3x2xf32, #P>, !pf.global<4x3x4xf32, #P, #pf.sbp<[S(0)]>>) -> !pf.global<4x3x6xf32, #P>
  %s = pf.reduce_sum %c {axes = array<i64: 0, 1, 2>} : (!pf.global<4x3x6xf32, #P>) -> !pf.global<f32, #P>
  return %s : !pf.global<f32, #P>
}
// BOXING: pf boxing report: 1 communication op(s)
// BOXING-NEXT: all_reduce f32 {{.*}} #pf.sbp<[P]> -> #pf.sbp<[B]>

// SBP-LABEL: func.func @block
// SBP: pf.broadcast_to {{.*}} -> !pf.global<4x3x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.sub {{.*}} -> !pf.global<4x3x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.div {{.*}} -> !pf.global<4x3x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.masked_fill {{.*}} -> !pf.global<4x3x4xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.slice {{.*}} -> !pf.global<4x3x2xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.concat {{.*}} -> !pf.global<4x3x6xf32, #{{.*}}, #pf.sbp<[S(0)]>>
// SBP: pf.reduce_sum {{.*}} -> !pf.global<f32, #{{.*}}, #pf.sbp<[P]>>
// The gradient of the broadcast sums the batch axis: partial over ranks.
// SBP: pf.reduce_sum {{.*}}axes = array<i64: 0>{{.*}} -> !pf.global<3x4xf32, #{{.*}}, #pf.sbp<[P]>>

// RANK-LABEL: func.func @block(%arg0: !pf.global<2x3x4xf32
// RANK: pf.broadcast_to %{{.*}} {shape = array<i64: 2, 3, 4>}
// RANK: pf.slice %{{.*}} {offsets = array<i64: 0, 0, 1>, sizes = array<i64: 2, 3, 2>}
// RANK: pf.concat {{.*}} -> !pf.global<2x3x6xf32
// RANK: pf.pad %{{.*}} {{.*}}shape = array<i64: 2, 3, 4>

// CHECK-LABEL: llvm.func @pf_step
// CHECK: llvm.call @pfrt_k_broadcast
// CHECK: llvm.call @pfrt_k_sub
// CHECK: llvm.call @pfrt_k_div
// CHECK: llvm.call @pfrt_k_masked_fill
// CHECK: llvm.call @pfrt_copy_box
// CHECK: llvm.call @pfrt_k_fill
// CHECK: llvm.call @pfrt_copy_box
