// RUN: pf-opt %s -split-input-file -verify-diagnostics

// One failing case per message of PFLogicalOps.cpp (and pf.add's float rule).

#P = #pf.placement<"cpu", [0]>
func.func @compare_predicate(%a: !pf.global<4xf32, #P>) {
  // expected-error @+1 {{predicate must be one of eq, ne, lt, le, gt, ge, got 'less'}}
  %0 = pf.compare %a, %a {predicate = "less"} : (!pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xi1, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @compare_types(%a: !pf.global<4xf32, #P>, %b: !pf.global<4xi64, #P>) {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.compare %a, %b {predicate = "eq"} : (!pf.global<4xf32, #P>, !pf.global<4xi64, #P>) -> !pf.global<4xi1, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @compare_shapes(%a: !pf.global<4xf32, #P>, %b: !pf.global<1xf32, #P>) {
  // expected-error @+2 {{operand shapes differ: [4] vs [1]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.compare %a, %b {predicate = "eq"} : (!pf.global<4xf32, #P>, !pf.global<1xf32, #P>) -> !pf.global<4xi1, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @compare_result(%a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{inferred type(s) '!pf.global<4xi1, #pf.placement<"cpu", [0]>>' are incompatible with return type(s) of operation '!pf.global<4xf32, #pf.placement<"cpu", [0]>>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.compare %a, %a {predicate = "eq"} : (!pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @and_float(%a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{lhs must be a boolean (i1) tensor, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.logical_and %a, %a : (!pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @or_mixed(%a: !pf.global<4xi1, #P>, %b: !pf.global<4xi64, #P>) {
  // expected-error @+2 {{operand element types differ: 'i1' vs 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.logical_or %a, %b : (!pf.global<4xi1, #P>, !pf.global<4xi64, #P>) -> !pf.global<4xi1, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @not_int(%a: !pf.global<4xi32, #P>) {
  // expected-error @+2 {{input must be a boolean (i1) tensor, got 'i32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.logical_not %a : (!pf.global<4xi32, #P>) -> !pf.global<4xi32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @where_condition(%c: !pf.global<4xf32, #P>, %a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{condition must be a boolean (i1) tensor, got 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.where %c, %a, %a : (!pf.global<4xf32, #P>, !pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @where_shape(%c: !pf.global<1xi1, #P>, %a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{condition shape [1] differs from the values' shape [4]; broadcast it first (pf.broadcast_to)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.where %c, %a, %a : (!pf.global<1xi1, #P>, !pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @where_values(%c: !pf.global<4xi1, #P>, %a: !pf.global<4xf32, #P>, %b: !pf.global<4xi64, #P>) {
  // expected-error @+2 {{operand element types differ: 'f32' vs 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.where %c, %a, %b : (!pf.global<4xi1, #P>, !pf.global<4xf32, #P>, !pf.global<4xi64, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
#Q = #pf.placement<"cpu", [1]>
func.func @where_placement(%c: !pf.global<4xi1, #Q>, %a: !pf.global<4xf32, #P>) {
  // expected-error @+2 {{operands must share one placement}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.where %c, %a, %a : (!pf.global<4xi1, #Q>, !pf.global<4xf32, #P>, !pf.global<4xf32, #P>) -> !pf.global<4xf32, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @cast_shape(%a: !pf.global<4xf32, #P>) {
  // expected-error @+1 {{must keep shape and placement}}
  %0 = pf.cast %a : !pf.global<4xf32, #P> -> !pf.global<2x2xi1, #P>
  return
}

// -----
#P = #pf.placement<"cpu", [0]>
func.func @add_int(%a: !pf.global<4xi64, #P>) {
  // expected-error @+2 {{rhs must have a float element type, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = pf.add %a, %a : (!pf.global<4xi64, #P>, !pf.global<4xi64, #P>) -> !pf.global<4xi64, #P>
  return
}
