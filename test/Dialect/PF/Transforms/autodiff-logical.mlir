// RUN: pf-opt %s -split-input-file -pf-autodiff="wrt-inputs=true" | FileCheck %s

// pf.where: the result's gradient goes to the true value where the
// condition holds (masked where it does not) and to the false value
// elsewhere; the comparison that made the condition, and its operands, get
// none from it.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<2x4xi1, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @where_grad
// CHECK-SAME: (%[[A:arg[0-9]+]]: !pf.global<2x4xf32{{.*}}, %[[B:arg[0-9]+]]: !pf.global<2x4xf32
// CHECK: %[[C:.*]] = pf.compare %[[A]], %[[B]] {predicate = "gt"}
// CHECK: pf.where %[[C]], %[[A]], %[[B]]
// CHECK: %[[NOT:.*]] = pf.logical_not %[[C]]
// CHECK: %[[DA:.*]] = pf.masked_fill %{{.*}}, %[[NOT]] {{{.*}}value = 0.000000e+00 : f64}
// CHECK: %[[DB:.*]] = pf.masked_fill %{{.*}}, %[[C]] {{{.*}}value = 0.000000e+00 : f64}
// CHECK-NOT: pf.compare
// CHECK: return %{{.*}}, %[[DA]], %[[DB]]
func.func @where_grad(%a: !T, %b: !T) -> !pf.global<f32, #P> {
  %c = pf.compare %a, %b {predicate = "gt"} : (!T, !T) -> !M
  %w = pf.where %c, %a, %b : (!M, !T, !T) -> !T
  %l = pf.reduce_sum %w {axes = array<i64: 0, 1>} : (!T) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// A bool mask made of comparisons and logical ops, cast to float and
// multiplied in: the input's gradient is the mask times the result's; the
// mask's operands (an input compared with itself) get nothing through
// pf.cast or the logical ops, and a boolean input gets no gradient.
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<4xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<4xi1, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @mask_grad
// CHECK-SAME: (%[[X:arg[0-9]+]]: !pf.global<4xf32{{.*}}, %[[K:arg[0-9]+]]: !pf.global<4xi1
// CHECK: %[[F:.*]] = pf.cast %{{.*}} : !pf.global<4xi1, {{.*}}> -> !pf.global<4xf32
// CHECK: %[[P:.*]] = pf.mul %[[X]], %[[F]]
// CHECK: %[[DX:.*]] = pf.mul %{{.*}}, %[[F]]
// CHECK-NOT: pf.cast
// CHECK: return %{{.*}}, %[[DX]] :
func.func @mask_grad(%x: !T, %k: !M) -> !pf.global<f32, #P> {
  %z = pf.constant dense<0.0> : tensor<4xf32> : !T
  %pos = pf.compare %x, %z {predicate = "ge"} : (!T, !T) -> !M
  %and = pf.logical_and %pos, %k : (!M, !M) -> !M
  %or = pf.logical_or %and, %k : (!M, !M) -> !M
  %xor = pf.logical_xor %or, %pos : (!M, !M) -> !M
  %not = pf.logical_not %xor : (!M) -> !M
  %f = pf.cast %not : !M -> !T
  %p = pf.mul %x, %f : (!T, !T) -> !T
  %l = pf.reduce_sum %p {axes = array<i64: 0>} : (!T) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// masked_fill with a boolean mask: the input's gradient is masked with the
// same mask (filled elements do not depend on the input).
#P = #pf.placement<"cpu", [0]>
!T = !pf.global<2x4xf32, #P, #pf.sbp<[B]>>
!M = !pf.global<2x4xi1, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @masked_fill_bool
// CHECK-SAME: %[[K:arg[0-9]+]]: !pf.global<2x4xi1
// CHECK: pf.masked_fill %{{.*}}, %[[K]] {{{.*}}value = 2.500000e+00 : f64}
// CHECK: %[[DX:.*]] = pf.masked_fill %{{.*}}, %[[K]] {{{.*}}value = 0.000000e+00 : f64}
// CHECK: return %{{.*}}, %[[DX]] :
func.func @masked_fill_bool(%x: !T, %k: !M) -> !pf.global<f32, #P> {
  %m = pf.masked_fill %x, %k {value = 2.5 : f64} : (!T, !M) -> !T
  %l = pf.reduce_sum %m {axes = array<i64: 0, 1>} : (!T) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// A float-to-float cast passes the gradient on (cast back to the input's
// type); none flows through a cast to an integer type.
#P = #pf.placement<"cpu", [0]>
// CHECK-LABEL: func.func @cast_grad
// CHECK: %[[H:.*]] = pf.cast %{{.*}} : !pf.global<4xf32, {{.*}}> -> !pf.global<4xf16
// CHECK: %[[I:.*]] = pf.cast %{{.*}} : !pf.global<4xf32, {{.*}}> -> !pf.global<4xi32
// CHECK: pf.cast %{{.*}} : !pf.global<4xf16, {{.*}}> -> !pf.global<4xf32
// CHECK-NOT: pf.cast
// CHECK: return
func.func @cast_grad(%x: !pf.global<4xf32, #P>) -> (!pf.global<f16, #P>, !pf.global<4xi32, #P>) {
  %h = pf.cast %x : !pf.global<4xf32, #P> -> !pf.global<4xf16, #P>
  %i = pf.cast %x : !pf.global<4xf32, #P> -> !pf.global<4xi32, #P>
  %l = pf.reduce_sum %h {axes = array<i64: 0>} : (!pf.global<4xf16, #P>) -> !pf.global<f16, #P>
  return %l, %i : !pf.global<f16, #P>, !pf.global<4xi32, #P>
}
