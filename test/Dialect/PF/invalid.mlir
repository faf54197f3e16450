// RUN: pf-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{placement device must be "cpu" or "cuda", got "tpu"}}
func.func @bad_device(%x: !pf.global<4xf32, #pf.placement<"tpu", [0]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{placement ranks must be non-negative, got -1}}
func.func @negative_rank(%x: !pf.global<4xf32, #pf.placement<"cpu", [0, -1]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{placement rank 7382263761063757596 is beyond the largest world PipeFlow compiles (131072 ranks, one program each)}}
func.func @huge_rank(%x: !pf.global<4xf32, #pf.placement<"cpu", [0, 7382263761063757596]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{placement rank 131072 is beyond the largest world PipeFlow compiles (131072 ranks, one program each)}}
func.func @rank_at_bound(%x: !pf.global<4xf32, #pf.placement<"cpu", [131072]>, #pf.sbp<[B]>>) { return }

// -----

// The largest rank allowed.
func.func @rank_below_bound(%x: !pf.global<4xf32, #pf.placement<"cpu", [131071]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{placement rank 1 appears more than once}}
func.func @duplicate_rank(%x: !pf.global<4xf32, #pf.placement<"cpu", [1, 1]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{placement rank lists must be rectangular: expected 2 entries at nesting depth 1, got 1}}
func.func @ragged(%x: !pf.global<4xf32, #pf.placement<"cpu", [[0, 1], [2]]>, #pf.sbp<[B, B]>>) { return }

// -----

// expected-error @+1 {{placement rank lists must be rectangular: ranks at different nesting depths}}
func.func @mixed_depth(%x: !pf.global<4xf32, #pf.placement<"cpu", [[0, 1], [[2, 3]]]>, #pf.sbp<[B, B]>>) { return }

// -----

// expected-error @+1 {{placement rank lists must not be empty}}
func.func @empty_placement(%x: !pf.global<4xf32, #pf.placement<"cpu", []>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{unknown SBP entry 'Q': expected S(axis), B or P}}
func.func @unknown_sbp(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[Q]>>) { return }

// -----

// expected-error @+1 {{expected an SBP entry: S(axis), S(axis, g), B or P}}
func.func @sbp_not_keyword(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[0]>>) { return }

// -----

// expected-error @+1 {{SBP split axis must be non-negative, got -1}}
func.func @negative_split(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[S(-1)]>>) { return }

// -----

// expected-error @+1 {{an SBP needs at least one entry}}
func.func @empty_sbp(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[]>>) { return }

// -----

// expected-error @+1 {{SBP #pf.sbp<[S(0), B]> has 2 entries but the placement has 1 hierarchy dimension(s)}}
func.func @sbp_rank_mismatch(%x: !pf.global<4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0), B]>>) { return }

// -----

// expected-error @+1 {{SBP splits axis 2 but the tensor has rank 2}}
func.func @split_out_of_range(%x: !pf.global<4x4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(2)]>>) { return }

// -----

// expected-error @+1 {{dimension 0 of size 15 is not divisible by the 2 ranks it is split over}}
func.func @non_divisible(%x: !pf.global<15x4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0)]>>) { return }

// -----

// Both hierarchy dims split axis 1: 6 must divide by 2 * 2.
// expected-error @+1 {{dimension 1 of size 6 is not divisible by the 4 ranks it is split over}}
func.func @non_divisible_nd(%x: !pf.global<4x6xf32, #pf.placement<"cpu", [[0, 1], [2, 3]]>, #pf.sbp<[S(1), S(1)]>>) { return }

// -----

// expected-error @+1 {{global tensor element type must be an integer or float type, got 'index'}}
func.func @bad_element(%x: !pf.global<4xindex, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{global tensor dimensions must be positive, got 0}}
func.func @zero_dim(%x: !pf.global<0x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{expected static shape}}
func.func @dynamic_dim(%x: !pf.global<?x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{expected a #pf.placement, got #pf.sbp<[B]>}}
func.func @not_a_placement(%x: !pf.global<4xf32, #pf.sbp<[B]>, #pf.sbp<[B]>>) { return }

// -----

// expected-error @+1 {{expected a #pf.sbp, got #pf.placement<"cpu", [0]>}}
func.func @not_an_sbp(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.placement<"cpu", [0]>>) { return }

// -----

// expected-error @+1 {{unknown initializer 'xavier': expected zeros, ones, constant, uniform, normal or kaiming_uniform}}
pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<xavier>

// -----

// expected-error @+1 {{uniform initializer needs low <= high}}
pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<uniform(1.0, 0.0)>

// -----

// expected-error @+1 {{normal initializer needs a non-negative std, got -1}}
pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<normal(0.0, -1.0)>

// -----

// expected-error @+1 {{kaiming_uniform initializer needs a positive integer fan_in, got 0}}
pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<kaiming_uniform(0)>

// -----

func.func @stage_not_int(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.stage' must be an integer stage id, got "one"}}
  %r = pf.relu %x {pf.stage = "one"} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @stage_negative(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.stage' must be non-negative, got -2}}
  %r = pf.relu %x {pf.stage = -2} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @checkpoint_not_unit(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.checkpoint' must be a unit attribute}}
  %r = pf.relu %x {pf.checkpoint = 1} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @unknown_discardable(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{unknown discardable attribute 'pf.stag' of the pf dialect}}
  %r = pf.relu %x {pf.stag = 1} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @missing_param() {
  // expected-error @+1 {{'pf.read_param' op @nope does not name a pf.param}}
  %w = pf.read_param @nope : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<zeros>
func.func @param_type_mismatch() {
  // expected-error @+1 {{'pf.read_param' op result type '!pf.global<8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>' does not match the type '!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>' of parameter @w}}
  %w = pf.read_param @w : !pf.global<8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

pf.param @w : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> = #pf.init<zeros>
func.func @write_mismatch(%v: !pf.global<4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.write_param' op value type '!pf.global<4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>' does not match the shape, element type and placement of parameter @w}}
  pf.write_param %v to @w : !pf.global<4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @write_missing(%v: !pf.global<4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.write_param' op @nope does not name a pf.param}}
  pf.write_param %v to @nope : !pf.global<4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @constant_mismatch() {
  // expected-error @+1 {{'pf.constant' op value of type 'tensor<3xf32>' does not match the logical shape and element type}}
  %c = pf.constant dense<1.0> : tensor<3xf32> : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @to_global_without_sbp(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pf.to_global' op result type '!pf.global<4xf32, #pf.placement<"cpu", [1]>>' needs an SBP: the local data's layout must be given}}
  %y = pf.to_global %x : tensor<4xf32> -> !pf.global<4xf32, #pf.placement<"cpu", [1]>>
  return
}

// -----

func.func @to_global_changes_shape(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.to_global' op changes the logical tensor}}
  %y = pf.to_global %x : !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>> -> !pf.global<8xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @to_global_local_shape(%x: tensor<16x4xf32>) {
  // expected-error @+1 {{'pf.to_global' op local tensor shape [16, 4] is not the shard shape [8, 4] of '!pf.global<16x4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0)]>>'}}
  %y = pf.to_global %x : tensor<16x4xf32> -> !pf.global<16x4xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0)]>>
  return
}

// -----

func.func @to_global_local_element(%x: tensor<4xi32>) {
  // expected-error @+1 {{'pf.to_global' op local element type 'i32' differs from 'f32'}}
  %y = pf.to_global %x : tensor<4xi32> -> !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @to_local_without_sbp(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>>) {
  // expected-error @+1 {{'pf.to_local' op operand type '!pf.global<4xf32, #pf.placement<"cpu", [0]>>' has no SBP yet; its local part is undefined}}
  %y = pf.to_local %x : !pf.global<4xf32, #pf.placement<"cpu", [0]>> -> tensor<4xf32>
  return
}

// -----

func.func @to_local_shape(%x: !pf.global<4x2xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(1)]>>) {
  // expected-error @+1 {{'pf.to_local' op result type 'tensor<2x2xf32>' is not the local part 'tensor<4x1xf32>'}}
  %y = pf.to_local %x : !pf.global<4x2xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(1)]>> -> tensor<2x2xf32>
  return
}

// -----

!A = !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_rank(%a: !A) {
  // expected-error @+2 {{'pf.matmul' op operands need rank >= 2, got shapes [4] and [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %a : (!A, !A) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!B = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_contraction(%a: !A, %b: !B) {
  // expected-error @+2 {{'pf.matmul' op contraction sizes differ: 8 (lhs [4, 8]) vs 4 (rhs [4, 3])}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %b : (!A, !B) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!A = !pf.global<2x4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!B = !pf.global<3x8x5xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_batch(%a: !A, %b: !B) {
  // expected-error @+2 {{'pf.matmul' op batch dimensions differ: [2] vs [3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %b : (!A, !B) -> !pf.global<2x4x5xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!A = !pf.global<4x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!B = !pf.global<4x4xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
func.func @matmul_placements(%a: !A, %b: !B) {
  // expected-error @+2 {{'pf.matmul' op operands must share one placement, got #pf.placement<"cpu", [0]> and #pf.placement<"cpu", [1]>; move one with pf.to_global}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %b : (!A, !B) -> !A
  return
}

// -----

!A = !pf.global<4x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!B = !pf.global<4x4xf16, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_elements(%a: !A, %b: !B) {
  // expected-error @+2 {{'pf.matmul' op operand element types differ: 'f32' vs 'f16'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %b : (!A, !B) -> !A
  return
}

// -----

!A = !pf.global<4x4xi32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_integer(%a: !A) {
  // expected-error @+2 {{'pf.matmul' op lhs must have a float element type, got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.matmul %a, %a : (!A, !A) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @matmul_result(%a: !A) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'pf.matmul' op inferred type(s) '!pf.global<4x4xf32, #pf.placement<"cpu", [0]>>' are incompatible with return type(s) of operation '!pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>'}}
  %y = pf.matmul %a, %a {transpose_b} : (!A, !A) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @bias_axis(%a: !A, %b: !V) {
  // expected-error @+2 {{'pf.bias_add' op axis 2 is out of range for shape [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.bias_add %a, %b {axis = 2} : (!A, !V) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!V = !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @bias_size(%a: !A, %b: !V) {
  // expected-error @+2 {{'pf.bias_add' op bias of size 4 does not match axis 1 of size 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.bias_add %a, %b : (!A, !V) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @bias_rank(%a: !A) {
  // expected-error @+2 {{'pf.bias_add' op bias must have rank 1, got shape [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.bias_add %a, %a : (!A, !A) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!B = !pf.global<8x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @add_shapes(%a: !A, %b: !B) {
  // expected-error @+2 {{'pf.add' op operand shapes differ: [4, 8] vs [8, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.add %a, %b : (!A, !B) -> !A
  return
}

// -----

!I = !pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @relu_integer(%a: !I) {
  // expected-error @+2 {{'pf.relu' op input must have a float element type, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.relu %a : (!I) -> !I
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @flatten_dims(%a: !A) {
  // expected-error @+2 {{'pf.flatten' op start_dim 1 and end_dim 0 do not select axes of shape [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.flatten %a {end_dim = 0} : (!A) -> !A
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @reshape_count(%a: !A) {
  // expected-error @+1 {{'pf.reshape' op changes the element count: [4, 8] has 32, [4, 4] has 16}}
  %y = pf.reshape %a : !A -> !pf.global<4x4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @reshape_placement(%a: !A) {
  // expected-error @+1 {{'pf.reshape' op must keep element type and placement}}
  %y = pf.reshape %a : !A -> !pf.global<32xf32, #pf.placement<"cpu", [1]>>
  return
}

// -----

!A = !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @transpose_perm(%a: !A) {
  // expected-error @+2 {{'pf.transpose' op perm [0, 0] is not a permutation of the axes of shape [4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.transpose %a {perm = array<i64: 0, 0>} : (!A) -> !A
  return
}

// -----

!L = !pf.global<4x10xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!Y = !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @ce_float_labels(%l: !L, %y: !Y) {
  // expected-error @+2 {{'pf.softmax_cross_entropy' op labels must be integers, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = pf.softmax_cross_entropy %l, %y : (!L, !Y) -> !pf.global<f32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!L = !pf.global<4x10xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!Y = !pf.global<8xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @ce_batch(%l: !L, %y: !Y) {
  // expected-error @+2 {{'pf.softmax_cross_entropy' op batch sizes differ: 4 logits rows vs 8 labels}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = pf.softmax_cross_entropy %l, %y : (!L, !Y) -> !pf.global<f32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!L = !pf.global<4x10x2xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!Y = !pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @ce_rank(%l: !L, %y: !Y) {
  // expected-error @+2 {{'pf.softmax_cross_entropy' op logits must have rank 2, got shape [4, 10, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %c = pf.softmax_cross_entropy %l, %y : (!L, !Y) -> !pf.global<f32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x6x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @conv_groups(%x: !X, %w: !W) {
  // expected-error @+2 {{'pf.conv2d' op groups 4 must divide the input channels 6 and the output channels 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.conv2d %x, %w {groups = 4} : (!X, !W) -> !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x6x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @conv_channels(%x: !X, %w: !W) {
  // expected-error @+2 {{'pf.conv2d' op weight expects 3 input channels per group, the input has 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.conv2d %x, %w : (!X, !W) -> !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @conv_stride(%x: !X, %w: !W) {
  // expected-error @+2 {{'pf.conv2d' op stride and dilation must be positive and padding non-negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.conv2d %x, %w {stride = array<i64: 0, 1>} : (!X, !W) -> !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x2x2xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @conv_fit(%x: !X, %w: !W) {
  // expected-error @+2 {{'pf.conv2d' op kernel [3, 3] does not fit the padded input [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.conv2d %x, %w : (!X, !W) -> !pf.global<2x4x1x1xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @conv_rank(%x: !X, %w: !W) {
  // expected-error @+2 {{'pf.conv2d' op input (NCHW) must have rank 4, got shape [2, 3, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.conv2d %x, %w : (!X, !W) -> !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @conv_dense_pair(%x: !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.conv2d' op attribute 'stride' failed to satisfy constraint}}
  %y = pf.conv2d %x, %x {stride = array<i64: 1, 1, 1>} : (!pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<2x2x1x1xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @pool_padding(%x: !X) {
  // expected-error @+2 {{'pf.max_pool2d' op padding 2 must be between 0 and half the kernel size 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.max_pool2d %x {kernel = array<i64: 2, 2>, padding = array<i64: 2, 2>} : (!X) -> !pf.global<2x3x6x6xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x2x2xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @pool_fit(%x: !X) {
  // expected-error @+2 {{'pf.avg_pool2d' op kernel [3, 3] does not fit the padded input [2, 2]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.avg_pool2d %x {kernel = array<i64: 3, 3>} : (!X) -> !pf.global<2x3x1x1xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @pool_kernel(%x: !X) {
  // expected-error @+2 {{'pf.avg_pool2d' op kernel and stride must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.avg_pool2d %x {kernel = array<i64: 0, 2>} : (!X) -> !pf.global<2x3x1x1xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @gap_rank(%x: !X) {
  // expected-error @+2 {{'pf.global_avg_pool' op input (NCHW) must have rank 4, got shape [2, 3, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = pf.global_avg_pool %x : (!X) -> !pf.global<2x3x1x1xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!C = !pf.global<3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @bn_rank(%x: !X, %c: !C) {
  // expected-error @+2 {{'pf.batch_norm' op input must be [N, C] or [N, C, H, W], got shape [2, 3, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = pf.batch_norm %x, %c, %c, %c, %c : (!X, !C, !C, !C, !C) -> (!X, !C, !C)
  return
}

// -----

!X = !pf.global<2x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!C = !pf.global<3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!D = !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @bn_stats(%x: !X, %c: !C, %d: !D) {
  // expected-error @+2 {{'pf.batch_norm' op running_var must have shape [3], got [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %y:3 = pf.batch_norm %x, %c, %c, %c, %d : (!X, !C, !C, !C, !D) -> (!X, !C, !C)
  return
}

// -----

func.func @not_global(%x: tensor<4xf32>) {
  // expected-error @+1 {{'pf.relu' op operand #0 must be global tensor, but got 'tensor<4xf32>'}}
  %y = pf.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @bad_phase(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.phase' must be one of "forward", "backward_input", "backward_weight", "recompute", "update"; got "sideways"}}
  %r = pf.relu %x {pf.phase = "sideways"} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @bad_grad_of(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.grad_of' must be a symbol reference on a pf.param}}
  %r = pf.relu %x {pf.grad_of = @w} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!T = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
func.func @reduce_axes(%x: !T) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{'pf.reduce_sum' op axes [0, 0] must be distinct axes of shape [4, 3]}}
  %0 = pf.reduce_sum %x {axes = array<i64: 0, 0>} : (!T) -> !pf.global<3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>>
!W = !pf.global<4x3x3x3xf32, #pf.placement<"cpu", [0]>>
func.func @conv_grad_window(%dy: !pf.global<2x4x5x5xf32, #pf.placement<"cpu", [0]>>, %w: !W) {
  // expected-error @+1 {{'pf.conv2d_grad_input' op forward input [2, 3, 8, 8] gives a forward output of spatial size 6 on axis 2, not 5}}
  %0 = pf.conv2d_grad_input %dy, %w : (!pf.global<2x4x5x5xf32, #pf.placement<"cpu", [0]>>, !W) -> !X
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>>
func.func @conv_grad_channels(%x: !X, %dy: !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>) {
  // expected-error @+1 {{'pf.conv2d_grad_weight' op channels do not match}}
  %0 = pf.conv2d_grad_weight %x, %dy : (!X, !pf.global<2x4x6x6xf32, #pf.placement<"cpu", [0]>>) -> !pf.global<5x3x3x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

!X = !pf.global<2x3x8x8xf32, #pf.placement<"cpu", [0]>>
func.func @pool_grad_shape(%x: !X, %dy: !pf.global<2x3x3x3xf32, #pf.placement<"cpu", [0]>>) {
  // expected-error @+1 {{'pf.max_pool2d_grad' op forward input [2, 3, 8, 8] gives a forward output of spatial size 4 on axis 2, not 3}}
  %0 = pf.max_pool2d_grad %x, %dy {kernel = array<i64: 2, 2>} : (!X, !pf.global<2x3x3x3xf32, #pf.placement<"cpu", [0]>>) -> !X
  return
}

// -----

func.func @gap_grad(%dy: !pf.global<2x3x2x1xf32, #pf.placement<"cpu", [0]>>) {
  // expected-error @+1 {{'pf.global_avg_pool_grad' op dy [2, 3, 2, 1] must be [N, C, 1, 1] of dx [2, 3, 4, 4]}}
  %0 = pf.global_avg_pool_grad %dy : (!pf.global<2x3x2x1xf32, #pf.placement<"cpu", [0]>>) -> !pf.global<2x3x4x4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @scalar_input_shape() {
  // expected-error @+1 {{'pf.scalar_input' op result must be a float scalar}}
  %0 = pf.scalar_input "lr" : !pf.global<2xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_momentum_state(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op momentum 9.000000e-01 needs momentum buffer, step operand and new-buffer result}}
  %0 = pf.sgd_update %p, %g, %lr {momentum = 0.9 : f64} : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_dampening(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op dampening must be in [0, 1], got 2}}
  %0 = pf.sgd_update %p, %g, %lr {dampening = 2.0 : f64} : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_negative_momentum(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op momentum must be >= 0, got -1}}
  %0 = pf.sgd_update %p, %g, %lr {momentum = -1.0 : f64} : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_nesterov(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op nesterov needs momentum > 0 and zero dampening}}
  %0 = pf.sgd_update %p, %g, %lr {nesterov} : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_weight_decay(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op weight_decay must be >= 0, got -1}}
  %0 = pf.sgd_update %p, %g, %lr {weight_decay = -1.0 : f64} : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
func.func @sgd_lr_placement(%p: !W, %g: !W, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op hyper-parameter on #pf.placement<"cpu", [1]> but the parameter is on #pf.placement<"cpu", [0]>}}
  %0 = pf.sgd_update %p, %g, %lr : (!W, !W, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @sgd_grad_shape(%p: !W, %g: !pf.global<3x4xf32, #pf.placement<"cpu", [0]>>, %lr: !S) {
  // expected-error @+1 {{'pf.sgd_update' op parameter, gradient, state and results must share shape, element type and placement}}
  %0 = pf.sgd_update %p, %g, %lr : (!W, !pf.global<3x4xf32, #pf.placement<"cpu", [0]>>, !S) -> !W
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @adam_betas(%p: !W, %lr: !S) {
  // expected-error @+1 {{'pf.adam_update' op betas must be in [0, 1), got (9.000000e-01, 1.000000e+00)}}
  %0:3 = pf.adam_update %p, %p, %p, %p, %lr, %lr {beta2 = 1.0 : f64} : (!W, !W, !W, !W, !S, !S) -> (!W, !W, !W)
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
!S = !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @adam_eps(%p: !W, %lr: !S) {
  // expected-error @+1 {{'pf.adam_update' op epsilon must be >= 0, got -1}}
  %0:3 = pf.adam_update %p, %p, %p, %p, %lr, %lr {epsilon = -1.0 : f64} : (!W, !W, !W, !W, !S, !S) -> (!W, !W, !W)
  return
}

// -----

!W = !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
func.func @adam_scalar(%p: !W) {
  // expected-error @+1 {{'pf.adam_update' op hyper-parameter operands must be float scalars}}
  %0:3 = pf.adam_update %p, %p, %p, %p, %p, %p : (!W, !W, !W, !W, !W, !W) -> (!W, !W, !W)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @dropout_p(%x: !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P> {
  // expected-error @+1 {{dropout probability must be in [0, 1], got 1.5}}
  %d = pf.dropout %x {p = 1.5 : f64, stream = 1 : i64} : (!pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return %d : !pf.global<4xf32, #P>
}

// -----

// Split all-reduces (pf.all_reduce with pf.async_slot, pf.all_reduce_wait).
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
!Pt = !pf.global<8xf32, #P4, #pf.sbp<[P]>>
!Bt = !pf.global<8xf32, #P4, #pf.sbp<[B]>>
func.func @wait_not_started(%p: !Pt, %b: !Bt) {
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]} : !Pt -> !Bt
  // expected-error @+1 {{'pf.all_reduce_wait' op waits for a value that is not a started collective (a pf.all_reduce, pf.all_gather or pf.reduce_scatter with pf.async_slot)}}
  %w = pf.all_reduce_wait %s, %p {slot = 0 : i64} : !Bt, !Pt -> !Bt
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
!Pt = !pf.global<8xf32, #P4, #pf.sbp<[P]>>
!Bt = !pf.global<8xf32, #P4, #pf.sbp<[B]>>
func.func @wait_other_slot(%p: !Pt) {
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 1 : i64} : !Pt -> !Bt
  // expected-error @+1 {{'pf.all_reduce_wait' op waits on slot 2 but the pf.all_reduce started in slot 1}}
  %w = pf.all_reduce_wait %s, %p {slot = 2 : i64} : !Bt, !Pt -> !Bt
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
!Pt = !pf.global<8xf32, #P4, #pf.sbp<[P]>>
!Bt = !pf.global<8xf32, #P4, #pf.sbp<[B]>>
func.func @wait_other_input(%p: !Pt, %q: !Pt) {
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 1 : i64} : !Pt -> !Bt
  // expected-error @+1 {{'pf.all_reduce_wait' op names another value than the pf.all_reduce's input}}
  %w = pf.all_reduce_wait %s, %q {slot = 1 : i64} : !Bt, !Pt -> !Bt
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
!Pt = !pf.global<8xf32, #P4, #pf.sbp<[P]>>
!Bt = !pf.global<8xf32, #P4, #pf.sbp<[B]>>
func.func @wait_result_type(%p: !Pt) {
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 1 : i64} : !Pt -> !Bt
  // expected-error @+1 {{'pf.all_reduce_wait' op result type '!pf.global<8xf32, #pf.placement<"cpu", [0, 1, 2, 3]>, #pf.sbp<[P]>>' differs from the pf.all_reduce's '!pf.global<8xf32, #pf.placement<"cpu", [0, 1, 2, 3]>, #pf.sbp<[B]>>'}}
  %w = pf.all_reduce_wait %s, %p {slot = 1 : i64} : !Bt, !Pt -> !Pt
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
!Pt = !pf.global<8xf32, #P4, #pf.sbp<[P]>>
!Bt = !pf.global<8xf32, #P4, #pf.sbp<[B]>>
func.func @wait_not_only_user(%p: !Pt) -> !Bt {
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 1 : i64} : !Pt -> !Bt
  // expected-error @+1 {{'pf.all_reduce_wait' op is not the only user of the started pf.all_reduce (its result may be read only after the wait)}}
  %w = pf.all_reduce_wait %s, %p {slot = 1 : i64} : !Bt, !Pt -> !Bt
  return %s : !Bt
}

// -----

// A split all-gather's wait names its input (pf-overlap-collectives).
#P2 = #pf.placement<"cpu", [0, 1]>
!Sg = !pf.global<8xf32, #P2, #pf.sbp<[S(0)]>>
!Bg = !pf.global<8xf32, #P2, #pf.sbp<[B]>>
func.func @gather_wait_other_input(%p: !Sg, %q: !Sg) {
  %s = pf.all_gather %p {axis = 0 : i64, groups = [array<i64: 0, 1>], pf.async_slot = 3 : i64} : !Sg -> !Bg
  // expected-error @+1 {{'pf.all_reduce_wait' op names another value than the pf.all_gather's input}}
  %w = pf.all_reduce_wait %s, %q {slot = 3 : i64} : !Bg, !Sg -> !Bg
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @async_slot_range(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.async_slot' must be an integer in [0, 64) on a pf.all_reduce, pf.all_gather or pf.reduce_scatter}}
  %s = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>], pf.async_slot = 64 : i64} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

// Layout changes (PFBoxingOps.cpp): one case per verifier message
// (test/Coverage/verifier-messages.test checks that each has one).
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @groups_ragged(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op groups must be non-empty and of one size}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1, 2>, array<i64: 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @group_rank_outside(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op group rank 5 is not in the placement #pf.placement<"cpu", [0, 1, 2, 3]>}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 2, 5>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @rank_in_two_groups(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op rank 1 is in two groups}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1>, array<i64: 1, 2>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @groups_not_covering(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op groups must cover the placement's 4 ranks}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @collective_changes_shape(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op input and result must have the same shape, element type and placement}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<4xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @collective_without_layout(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op needs layouts on input and result}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @collective_keeps_layout(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.all_reduce' op does not change the layout #pf.sbp<[P]>}}
  %0 = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[P]>>
  return
}

// -----

// Each collective changes one kind of entry.
#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @all_reduce_wrong_change(%s: !pf.global<8xf32, #P4, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{'pf.all_reduce' op changes #pf.sbp<[S(0)]> to #pf.sbp<[B]>; it does P -> B}}
  %0 = pf.all_reduce %s {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @reduce_scatter_wrong_axis(%p: !pf.global<8x8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.reduce_scatter' op changes #pf.sbp<[P]> to #pf.sbp<[S(0)]>; it does P -> S(axis)}}
  %0 = pf.reduce_scatter %p {axis = 1, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8x8xf32, #P4, #pf.sbp<[S(0)]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @all_gather_wrong_axis(%s: !pf.global<8x8xf32, #P4, #pf.sbp<[S(1)]>>) {
  // expected-error @+1 {{'pf.all_gather' op changes #pf.sbp<[S(1)]> to #pf.sbp<[B]>; it does S(axis) -> B}}
  %0 = pf.all_gather %s {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x8xf32, #P4, #pf.sbp<[S(1)]>> -> !pf.global<8x8xf32, #P4, #pf.sbp<[B]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @all_to_all_swapped_axes(%s: !pf.global<8x8xf32, #P4, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{'pf.all_to_all' op changes #pf.sbp<[S(0)]> to #pf.sbp<[S(1)]>; it does S(concat_axis) -> S(split_axis)}}
  %0 = pf.all_to_all %s {split_axis = 0, concat_axis = 1, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x8xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x8xf32, #P4, #pf.sbp<[S(1)]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @all_to_all_same_axes(%s: !pf.global<8x8xf32, #P4, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{'pf.all_to_all' op split and concat axes must differ}}
  %0 = pf.all_to_all %s {split_axis = 0, concat_axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8x8xf32, #P4, #pf.sbp<[S(0)]>> -> !pf.global<8x8xf32, #P4, #pf.sbp<[S(1)]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @shard_from_partial(%p: !pf.global<8xf32, #P4, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.shard' op changes #pf.sbp<[P]> to #pf.sbp<[S(0)]>; it does B -> S(axis)}}
  %0 = pf.shard %p {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[P]>> -> !pf.global<8xf32, #P4, #pf.sbp<[S(0)]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @unshard_from_broadcast(%b: !pf.global<8xf32, #P4, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.unshard' op changes #pf.sbp<[B]> to #pf.sbp<[P]>; it does S(axis) -> P}}
  %0 = pf.unshard %b {axis = 0, groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8xf32, #P4, #pf.sbp<[P]>>
  return
}

// -----

#P4 = #pf.placement<"cpu", [0, 1, 2, 3]>
func.func @keep_one_to_split(%b: !pf.global<8xf32, #P4, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.keep_one' op changes #pf.sbp<[B]> to #pf.sbp<[S(0)]>; it does B -> P}}
  %0 = pf.keep_one %b {groups = [array<i64: 0, 1, 2, 3>]} : !pf.global<8xf32, #P4, #pf.sbp<[B]>> -> !pf.global<8xf32, #P4, #pf.sbp<[S(0)]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @broadcast_root_outside(%x: !pf.global<8xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.broadcast' op root 2 is not among the ranks}}
  %0 = pf.broadcast %x {root = 2, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<8xf32, #P01, #pf.sbp<[B]>>
  return
}

// -----

#P01 = #pf.placement<"cpu", [0, 1]>
func.func @broadcast_without_input() {
  // expected-error @+1 {{'pf.broadcast' op needs its input on global values}}
  %0 = pf.broadcast {root = 0, ranks = array<i64: 0, 1>} : () -> !pf.global<8xf32, #P01, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @broadcast_changes_shape(%x: !pf.global<8xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.broadcast' op input and result must have the same shape and element type}}
  %0 = pf.broadcast %x {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<4xf32, #P01, #pf.sbp<[B]>>
  return
}

// -----

#P01 = #pf.placement<"cpu", [0, 1]>
func.func @broadcast_input_not_on_root(%x: !pf.global<8xf32, #P01, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.broadcast' op input must live on the root's single-rank placement}}
  %0 = pf.broadcast %x {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[B]>>) -> !pf.global<8xf32, #P01, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @broadcast_result_split(%x: !pf.global<8xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.broadcast' op result must be B on a placement holding the root}}
  %0 = pf.broadcast %x {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<8xf32, #P01, #pf.sbp<[S(0)]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @reduce_root_outside(%p: !pf.global<8xf32, #P01, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.reduce' op root 3 is not among the ranks}}
  %0 = pf.reduce %p {root = 3, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[P]>>) -> !pf.global<8xf32, #P0, #pf.sbp<[B]>>
  return
}

// -----

#P01 = #pf.placement<"cpu", [0, 1]>
func.func @reduce_without_result(%p: !pf.global<8xf32, #P01, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.reduce' op needs its result on global values}}
  pf.reduce %p {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[P]>>) -> ()
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @reduce_changes_type(%p: !pf.global<8xf32, #P01, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.reduce' op input and result must have the same shape and element type}}
  %0 = pf.reduce %p {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[P]>>) -> !pf.global<8xf16, #P0, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P01 = #pf.placement<"cpu", [0, 1]>
func.func @reduce_of_broadcast(%b: !pf.global<8xf32, #P01, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.reduce' op input must be P in every hierarchy dimension}}
  %0 = pf.reduce %b {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[B]>>) -> !pf.global<8xf32, #P0, #pf.sbp<[B]>>
  return
}

// -----

#P01 = #pf.placement<"cpu", [0, 1]>
func.func @reduce_result_everywhere(%p: !pf.global<8xf32, #P01, #pf.sbp<[P]>>) {
  // expected-error @+1 {{'pf.reduce' op result must live on the root's single-rank placement}}
  %0 = pf.reduce %p {root = 0, ranks = array<i64: 0, 1>} : (!pf.global<8xf32, #P01, #pf.sbp<[P]>>) -> !pf.global<8xf32, #P01, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
func.func @transfer_changes_shape(%x: !pf.global<8x4xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.transfer' op input and result must have the same shape and element type}}
  %0 = pf.transfer %x {moves = [array<i64: 0, 1, 0, 0, 8, 4>]} : !pf.global<8x4xf32, #P0, #pf.sbp<[B]>> -> !pf.global<4x8xf32, #P1, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
func.func @transfer_short_move(%x: !pf.global<8x4xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.transfer' op each move is [src, dst, offsets, sizes] with 6 entries, got 5}}
  %0 = pf.transfer %x {moves = [array<i64: 0, 1, 0, 0, 8>]} : !pf.global<8x4xf32, #P0, #pf.sbp<[B]>> -> !pf.global<8x4xf32, #P1, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
func.func @transfer_foreign_rank(%x: !pf.global<8x4xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.transfer' op move 0 -> 2 names a rank outside the source or destination placement}}
  %0 = pf.transfer %x {moves = [array<i64: 0, 2, 0, 0, 8, 4>]} : !pf.global<8x4xf32, #P0, #pf.sbp<[B]>> -> !pf.global<8x4xf32, #P1, #pf.sbp<[B]>>
  return
}

// -----

#P0 = #pf.placement<"cpu", [0]>
#P1 = #pf.placement<"cpu", [1]>
func.func @transfer_box_outside(%x: !pf.global<8x4xf32, #P0, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.transfer' op move box out of bounds on axis 1}}
  %0 = pf.transfer %x {moves = [array<i64: 0, 1, 0, 2, 8, 4>]} : !pf.global<8x4xf32, #P0, #pf.sbp<[B]>> -> !pf.global<8x4xf32, #P1, #pf.sbp<[B]>>
  return
}

// -----

#C = #pf.placement<"cpu", [0, 1]>
#G = #pf.placement<"cuda", [0, 1]>
func.func @device_copy_changes_layout(%x: !pf.global<8xf32, #C, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{'pf.device_copy' op copies one layout between devices; shape, element type and SBP must agree}}
  %0 = pf.device_copy %x : !pf.global<8xf32, #C, #pf.sbp<[S(0)]>> -> !pf.global<8xf32, #G, #pf.sbp<[B]>>
  return
}

// -----

#C = #pf.placement<"cpu", [0, 1]>
#C2 = #pf.placement<"cpu", [2, 3]>
func.func @device_copy_same_device(%x: !pf.global<8xf32, #C, #pf.sbp<[S(0)]>>) {
  // expected-error @+1 {{'pf.device_copy' op needs the same ranks on two device kinds}}
  %0 = pf.device_copy %x : !pf.global<8xf32, #C, #pf.sbp<[S(0)]>> -> !pf.global<8xf32, #C2, #pf.sbp<[S(0)]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
func.func @extract_box_rank(%x: !pf.global<8x4xf32, #R, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.extract_box' op offsets, input and result need one rank}}
  %0 = pf.extract_box %x {offsets = array<i64: 0>} : !pf.global<8x4xf32, #R, #pf.sbp<[B]>> -> !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
func.func @extract_box_outside(%x: !pf.global<8x4xf32, #R, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.extract_box' op box out of bounds on axis 0}}
  %0 = pf.extract_box %x {offsets = array<i64: 6, 0>} : !pf.global<8x4xf32, #R, #pf.sbp<[B]>> -> !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
!H = !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
func.func @assemble_offsets_count(%a: !H, %b: !H) {
  // expected-error @+1 {{'pf.assemble' op needs one offset per piece}}
  %0 = pf.assemble %a, %b {offsets = [array<i64: 0, 0>]} : (!H, !H) -> !pf.global<8x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
!H = !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
func.func @assemble_rank(%a: !H, %b: !H) {
  // expected-error @+1 {{'pf.assemble' op pieces, offsets and result need one rank}}
  %0 = pf.assemble %a, %b {offsets = [array<i64: 0, 0>, array<i64: 4>]} : (!H, !H) -> !pf.global<8x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
!H = !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
func.func @assemble_outside(%a: !H, %b: !H) {
  // expected-error @+1 {{'pf.assemble' op piece out of bounds on axis 0}}
  %0 = pf.assemble %a, %b {offsets = [array<i64: 0, 0>, array<i64: 6, 0>]} : (!H, !H) -> !pf.global<8x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [0]>
!H = !pf.global<4x4xf32, #R, #pf.sbp<[B]>>
func.func @assemble_gap(%a: !H) {
  // expected-error @+1 {{'pf.assemble' op pieces hold 16 elements but the result has 32}}
  %0 = pf.assemble %a {offsets = [array<i64: 0, 0>]} : (!H) -> !pf.global<8x4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

// Point-to-point and micro-batching (PFGradOps.cpp).
#R = #pf.placement<"cpu", [0]>
func.func @send_to_self(%x: !pf.global<4xf32, #R, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.send' op peer 0 is a rank of the value's own placement #pf.placement<"cpu", [0]>}}
  pf.send %x to 0 tag 0 : !pf.global<4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [1]>
func.func @recv_from_self() {
  // expected-error @+1 {{'pf.recv' op peer 1 is a rank of the value's own placement #pf.placement<"cpu", [1]>}}
  %0 = pf.recv from 1 tag 0 : !pf.global<4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @microbatch_index(%x: !pf.global<16x4xf32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.microbatch' op index 2 is not a micro-batch of 2}}
  %0 = pf.microbatch %x {index = 2, count = 2} : !pf.global<16x4xf32, #P, #pf.sbp<[B]>> -> !pf.global<8x4xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @microbatch_uneven(%x: !pf.global<15x4xf32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.microbatch' op the batch (axis 0) of [15, 4] does not divide into 2 micro-batches}}
  %0 = pf.microbatch %x {index = 0, count = 2} : !pf.global<15x4xf32, #P, #pf.sbp<[B]>> -> !pf.global<7x4xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @microbatch_result(%x: !pf.global<16x4xf32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.microbatch' op result must be [8, 4] of the input's element type and placement}}
  %0 = pf.microbatch %x {index = 0, count = 2} : !pf.global<16x4xf32, #P, #pf.sbp<[B]>> -> !pf.global<16x4xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @pack_nothing() {
  // expected-error @+1 {{'pf.pack' op needs at least one element}}
  %0 = pf.pack : () -> !pf.global<1xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @pack_mixed_shapes(%a: !pf.global<2xf32, #P, #pf.sbp<[B]>>, %b: !pf.global<3xf32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.pack' op elements must share one shape, element type and placement}}
  %0 = pf.pack %a, %b : (!pf.global<2xf32, #P, #pf.sbp<[B]>>, !pf.global<3xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2x2xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @pack_stacks_on_a_new_axis(%a: !pf.global<2xf32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.pack' op result must be [1, element shape...] of the elements' type and placement}}
  %0 = pf.pack %a : (!pf.global<2xf32, #P, #pf.sbp<[B]>>) -> !pf.global<2xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @pack_result(%a: !pf.global<f32, #P, #pf.sbp<[B]>>, %b: !pf.global<f32, #P, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.pack' op result must be [2, element shape...] of the elements' type and placement}}
  %0 = pf.pack %a, %b : (!pf.global<f32, #P, #pf.sbp<[B]>>, !pf.global<f32, #P, #pf.sbp<[B]>>) -> !pf.global<3xf32, #P, #pf.sbp<[B]>>
  return
}

// -----

// expected-error @+1 {{'pf.schedule' op stage, micro-batch and chunk counts must be positive}}
pf.schedule {kind = "custom", num_stages = 1, num_microbatches = 0, num_chunks = 1,
             actions = [[]]}

// -----

// expected-error @+1 {{'pf.schedule' op has 1 action lists for 2 pipeline ranks}}
pf.schedule {kind = "custom", num_stages = 2, num_microbatches = 1, num_chunks = 1,
             actions = [["F0", "B0"]]}

// -----

// expected-error @+1 {{'pf.schedule' op rank 0: 'B0:x' is not an action (F<mb>, B<mb> or W<mb>, optionally :<chunk>)}}
pf.schedule {kind = "custom", num_stages = 1, num_microbatches = 1, num_chunks = 1,
             actions = [["F0", "B0:x"]]}

// -----

func.func @activation_kind(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{kind must be one of gelu, gelu_tanh, tanh, sigmoid, got 'swish'}}
  %r = pf.activation %x {kind = "swish"} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @activation_grad_kind(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{kind must be one of gelu, gelu_tanh, tanh, sigmoid, got 'relu'}}
  %r = pf.activation_grad %x, %x {kind = "relu"} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @activation_int(%x: !pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+2 {{'pf.activation' op input must have a float element type, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = pf.activation %x {kind = "tanh"} : (!pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xi64, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @softmax_axis(%x: !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{axis 2 is out of range for a rank-2 tensor}}
  %r = pf.softmax %x {axis = 2 : i64} : (!pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @softmax_grad_axis(%x: !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{axis 5 is out of range for a rank-2 tensor}}
  %r = pf.softmax_grad %x, %x {axis = 5 : i64} : (!pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @clip_scale_max_norm(%s: !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{max_norm must be > 0, got 0}}
  %f = pf.clip_scale %s {max_norm = 0.0 : f64} : (!pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<f32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
  return
}

// -----

func.func @scale_by_not_a_scalar(%x: !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+2 {{'pf.scale_by' op scale must have rank 0, got shape [4, 3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = pf.scale_by %x, %x : (!pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @scale_by_placement(%x: !pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, %s: !pf.global<f32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>) {
  // expected-error @+2 {{operands must share one placement}}
  // expected-error @+1 {{failed to infer returned types}}
  %r = pf.scale_by %x, %s : (!pf.global<4x3xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<f32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

// expected-error @+1 {{a grouped split S(axis, g) needs g >= 2, got 1}}
func.func @grouped_one(%x: !pf.global<12xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0, 1)]>>) { return }

// -----

// 12 rows are 4 blocks of 3, which do not divide over 2 ranks.
// expected-error @+1 {{dimension 0 of size 12 is not 4 blocks divisible by the 2 ranks S(0, 4) splits them over}}
func.func @grouped_uneven(%x: !pf.global<12xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0, 4)]>>) { return }

// -----

// expected-error @+1 {{the grouped split S(0, 3) shares axis 0 with another hierarchy dimension's split}}
func.func @grouped_shared(%x: !pf.global<24xf32, #pf.placement<"cpu", [[0, 1], [2, 3]]>, #pf.sbp<[S(0), S(0, 3)]>>) { return }

// -----

func.func @vocab_group_elsewhere(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.vocab_group' must be a non-empty array of ranks on a cross-entropy op}}
  %r = pf.relu %x {pf.vocab_group = array<i64: 0, 1>} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @vocab_group_negative(%l: !pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>,
                                %y: !pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.vocab_group' must be a non-empty array of ranks on a cross-entropy op}}
  %r = pf.softmax_cross_entropy %l, %y {pf.vocab_group = array<i64: 0, -1>} : (!pf.global<4x8xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>, !pf.global<4xi64, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<f32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @shard_offset_on_relu(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.shard_offset' must be an i64 array on a pf.param, pf.dropout, embedding, cross-entropy or attention op}}
  %r = pf.relu %x {pf.shard_offset = array<i64: 0>} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

// The fold passes' decisions are checked like every pf attribute.
func.func @unknown_fold(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.fold' must be one of "bias_relu"}}
  %r = pf.relu %x {pf.fold = "relu_twice"} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @in_place_not_update(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.in_place' must be an array of one string a result on an optimizer update}}
  %r = pf.relu %x {pf.in_place = ["w"]} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}

// -----

func.func @strided_not_matmul(%x: !pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.strided_a' must be an array<i64: ...> on a pf.matmul}}
  %r = pf.relu %x {pf.strided_a = array<i64: 1, 0, 1>} : (!pf.global<4xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>) -> !pf.global<4xf32, #pf.placement<"cpu", [0]>>
  return
}
