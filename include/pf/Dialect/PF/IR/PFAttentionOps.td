//===- PFAttentionOps.td - fused attention ------------------*- tablegen -*-===//
//
// Scaled dot-product attention as one op (forward and gradient), so that no
// [T, S] score or probability tensor is ever planned: the kernels tile the
// keys with an online softmax (flash attention) and the backward recomputes
// the probabilities from the saved log-sum-exp.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFATTENTIONOPS_TD
#define PF_DIALECT_PF_IR_PFATTENTIONOPS_TD

def PF_AttentionOp : PF_DiffOp<"attention"> {
  let summary = "scaled dot-product attention (fused, flash style)";
  let description = [{
    For queries `q [B, H, T, D]`, keys `k [B, H, S, D]` and values
    `v [B, H, S, Dv]`:
    `out = dropout(softmax(scale * q k^T + mask)) v`, `out [B, H, T, Dv]`,
    as torch's `scaled_dot_product_attention`. The second result `lse
    [B, H, T]` (float32) is each query row's log-sum-exp of its scaled,
    masked scores; the gradient reads it instead of storing probabilities.

    - `causal`: key `s` takes part in query `t`'s row only if `s <= t`
      (torch's `is_causal`: the top-left lower triangle of an `[T, S]`
      matrix of ones).
    - `mask` (optional, rank 4, each axis 1 or the full size, broadcast):
      of the queries' float type it is added to the scores (`-inf`
      excludes); `i1` keeps a key where it is true (torch's bool
      `attn_mask`).
    - `dropout_p` (with `stream`): each probability is kept where the
      run's counter-based uniform at its logical index `(b, h, t, s)` of
      `[B, H, T, S]` is at least `dropout_p`, and scaled by
      `1 / (1 - dropout_p)`; the same draw as `pf.dropout` of the
      materialised probabilities with that stream, so every layout drops
      the same elements.

    A query row in which no key takes part gives zeros (and `lse = -inf`).

    ```mlir
    %o, %lse = pf.attention %q, %k, %v {scale = 1.250000e-01 : f64, causal}
        : (!Q, !K, !V) -> (!O, !pf.global<4x12x64xf32, #P, #B>)
    ```
  }];
  let arguments = (ins PF_Global:$query, PF_Global:$key, PF_Global:$value,
                   Optional<PF_Global>:$mask, F64Attr:$scale,
                   UnitAttr:$causal,
                   DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                   DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs PF_Global:$result, PF_Global:$lse);
  let hasVerifier = 1;
}

def PF_AttentionGradOp : PF_InferredOp<"attention_grad"> {
  let summary = "gradients of pf.attention (flash-attention backward)";
  let description = [{
    From the forward's operands, its output `out`, its `lse` and the output
    gradient `dout`: `dq`, `dk` and `dv` (the shapes of `q`, `k`, `v`),
    with the probabilities recomputed tile by tile from `lse` (and the same
    dropout draw), `delta = rowsum(dout * out)`. Attributes as
    `pf.attention`'s.

    ```mlir
    %dq, %dk, %dv = pf.attention_grad %q, %k, %v, %o, %lse, %do
        {scale = 1.250000e-01 : f64, causal}
        : (!Q, !K, !V, !O, !L, !O) -> (!Q, !K, !V)
    ```
  }];
  let arguments = (ins PF_Global:$query, PF_Global:$key, PF_Global:$value,
                   PF_Global:$output, PF_Global:$lse, PF_Global:$result_grad,
                   Optional<PF_Global>:$mask, F64Attr:$scale,
                   UnitAttr:$causal,
                   DefaultValuedAttr<F64Attr, "0.0">:$dropout_p,
                   DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs PF_Global:$query_grad, PF_Global:$key_grad,
                      PF_Global:$value_grad);
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFATTENTIONOPS_TD
