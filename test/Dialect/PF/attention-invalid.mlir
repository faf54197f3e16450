// RUN: pf-opt %s -split-input-file -verify-diagnostics

#P = #pf.placement<"cpu", [0]>
func.func @rank3(%q: !pf.global<2x4x8xf32, #P>) {
  // expected-error @+2 {{query must have rank 4, got shape [2, 4, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = pf.attention %q, %q, %q {scale = 1.0 : f64} : (!pf.global<2x4x8xf32, #P>, !pf.global<2x4x8xf32, #P>, !pf.global<2x4x8xf32, #P>) -> (!pf.global<2x4x8xf32, #P>, !pf.global<2x4xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @head_dims(%q: !pf.global<1x2x4x8xf32, #P>, %k: !pf.global<1x2x4x6xf32, #P>) {
  // expected-error @+2 {{expects query [B, H, T, D], key [B, H, S, D] and value [B, H, S, Dv], got [1, 2, 4, 8], [1, 2, 4, 6] and [1, 2, 4, 6]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = pf.attention %q, %k, %k {scale = 1.0 : f64} : (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x6xf32, #P>, !pf.global<1x2x4x6xf32, #P>) -> (!pf.global<1x2x4x6xf32, #P>, !pf.global<1x2x4xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @mask_shape(%q: !pf.global<1x2x4x8xf32, #P>, %m: !pf.global<1x2x3x4xi1, #P>) {
  // expected-error @+2 {{mask of shape [1, 2, 3, 4] does not broadcast to the scores [1, 2, 4, 4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = pf.attention %q, %q, %q, %m {scale = 1.0 : f64} : (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x3x4xi1, #P>) -> (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @mask_type(%q: !pf.global<1x2x4x8xf32, #P>, %m: !pf.global<1x1x4x4xi64, #P>) {
  // expected-error @+2 {{mask must be i1 or a float type, got 'i64'}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %l = pf.attention %q, %q, %q, %m {scale = 1.0 : f64} : (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x1x4x4xi64, #P>) -> (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @dropout(%q: !pf.global<1x2x4x8xf32, #P>) {
  // expected-error @+1 {{dropout_p must be in [0, 1), got 1}}
  %o, %l = pf.attention %q, %q, %q {scale = 1.0 : f64, dropout_p = 1.0 : f64} : (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>) -> (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4xf32, #P>)
  return
}

// -----

#P = #pf.placement<"cpu", [0]>
func.func @grad_shapes(%q: !pf.global<1x2x4x8xf32, #P>, %lse: !pf.global<1x2x8xf32, #P>) {
  // expected-error @+2 {{expects output and result_grad of shape [1, 2, 4, 8] and lse of [1, 2, 4], got [1, 2, 4, 8], [1, 2, 4, 8] and [1, 2, 8]}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = pf.attention_grad %q, %q, %q, %q, %lse, %q {scale = 1.0 : f64} : (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>) -> (!pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>, !pf.global<1x2x4x8xf32, #P>)
  return
}
