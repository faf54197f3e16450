// RUN: pf-opt %s -split-input-file -verify-diagnostics

#P = #pf.placement<"cpu", [0]>
func.func @sub_shapes(%a: !pf.global<4x6xf32, #P>, %b: !pf.global<4x5xf32, #P>) {
  // expected-error @+2 {{operand shapes differ: [4, 6] vs [4, 5]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.sub %a, %b : (!pf.global<4x6xf32, #P>, !pf.global<4x5xf32, #P>) -> !pf.global<4x6xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @div_int(%a: !pf.global<4xi64, #P>) {
  // expected-error @+2 {{lhs must have a float element type, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.div %a, %a : (!pf.global<4xi64, #P>, !pf.global<4xi64, #P>) -> !pf.global<4xi64, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @broadcast_bad(%a: !pf.global<3x4xf32, #P>) {
  // expected-error @+2 {{cannot broadcast shape [3, 4] to [2, 4, 4] (trailing axes must be equal or 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.broadcast_to %a {shape = array<i64: 2, 4, 4>} : (!pf.global<3x4xf32, #P>) -> !pf.global<2x4x4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @broadcast_rank(%a: !pf.global<2x3x4xf32, #P>) {
  // expected-error @+2 {{cannot broadcast shape [2, 3, 4] to [3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.broadcast_to %a {shape = array<i64: 3, 4>} : (!pf.global<2x3x4xf32, #P>) -> !pf.global<3x4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @mask_shape(%a: !pf.global<4x4xf32, #P>, %m: !pf.global<1x4xi64, #P>) {
  // expected-error @+2 {{mask shape [1, 4] differs from input shape [4, 4]; broadcast it first (pf.broadcast_to)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.masked_fill %a, %m {value = 0.0 : f64} : (!pf.global<4x4xf32, #P>, !pf.global<1x4xi64, #P>) -> !pf.global<4x4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @slice_out(%a: !pf.global<4x6xf32, #P>) {
  // expected-error @+2 {{the box at [2, 0] of sizes [3, 6] does not fit in [4, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.slice %a {offsets = array<i64: 2, 0>, sizes = array<i64: 3, 6>} : (!pf.global<4x6xf32, #P>) -> !pf.global<3x6xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @slice_rank(%a: !pf.global<4x6xf32, #P>) {
  // expected-error @+2 {{offsets [0] and sizes [4, 6] need one entry per axis of [4, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.slice %a {offsets = array<i64: 0>, sizes = array<i64: 4, 6>} : (!pf.global<4x6xf32, #P>) -> !pf.global<4x6xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @pad_out(%a: !pf.global<4x6xf32, #P>) {
  // expected-error @+2 {{the box at [0, 3] of input shape [4, 6] does not fit in [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.pad %a {offsets = array<i64: 0, 3>, shape = array<i64: 4, 8>} : (!pf.global<4x6xf32, #P>) -> !pf.global<4x8xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @concat_shapes(%a: !pf.global<4x6xf32, #P>, %b: !pf.global<5x2xf32, #P>) {
  // expected-error @+2 {{cannot concatenate shapes [4, 6] and [5, 2] along axis 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.concat %a, %b {axis = 1 : i64} : (!pf.global<4x6xf32, #P>, !pf.global<5x2xf32, #P>) -> !pf.global<4x8xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @concat_axis(%a: !pf.global<4x6xf32, #P>) {
  // expected-error @+2 {{axis 2 is not an axis of shape [4, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.concat %a, %a {axis = 2 : i64} : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #P>) -> !pf.global<4x12xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
#Q = #pf.placement<"cpu", [1]>
func.func @concat_placement(%a: !pf.global<4x6xf32, #P>, %b: !pf.global<4x6xf32, #Q>) {
  // expected-error @+2 {{operands must share one placement}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.concat %a, %b {axis = 1 : i64} : (!pf.global<4x6xf32, #P>, !pf.global<4x6xf32, #Q>) -> !pf.global<4x12xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @slice_overflow(%a: !pf.global<4x6xf32, #P>) {
  // expected-error @+2 {{the box at [9223372036854775807, 0] of sizes [9223372036854775807, 6] does not fit in [4, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.slice %a {offsets = array<i64: 9223372036854775807, 0>, sizes = array<i64: 9223372036854775807, 6>} : (!pf.global<4x6xf32, #P>) -> !pf.global<3x6xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @count_float_labels(%a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{labels must be integers, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.count_kept %a {ignore_index = -1 : i64} : (!pf.global<4xf32, #P>) -> !pf.global<f32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @count_2d_labels(%a: !pf.global<4x2xi64, #P>) {
  // expected-error @+2 {{labels must have rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.count_kept %a {ignore_index = -1 : i64} : (!pf.global<4x2xi64, #P>) -> !pf.global<f32, #P>
  return
}
