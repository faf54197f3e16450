//===- PFOptimOps.td - PipeFlow optimizer ops --------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFOPTIMOPS_TD
#define PF_DIALECT_PF_IR_PFOPTIMOPS_TD

def PF_ClipScaleOp : PF_InferredOp<"clip_scale"> {
  let summary = "the factor of gradient clipping by global norm";
  let description = [{
    From the sum of the squared gradients of a clipping group (a 0-d f32),
    `scale = min(1, max_norm / (sqrt(sum_sq) + 1e-6))`, as
    `torch.nn.utils.clip_grad_norm_` (norm type 2). pf-optimizer builds it
    for parameters whose `pf.optimizer` has `clip_max_norm`; the gradients
    are multiplied by it (`pf.scale_by`) before the update.

    ```mlir
    %s = pf.clip_scale %sum_sq {max_norm = 1.0 : f64}
        : (!pf.global<f32, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins PF_Global:$sum_sq, F64Attr:$max_norm);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

def PF_ScaleByOp : PF_InferredOp<"scale_by"> {
  let summary = "multiplies every element by a run-time scalar (a 0-d tensor)";
  let description = [{
    `result = input * scale`; the scale is a 0-d f32 on the input's
    placement (the clipping factor of pf.clip_scale).

    ```mlir
    %g2 = pf.scale_by %g, %s : (!W, !pf.global<f32, #P, #pf.sbp<[B]>>) -> !W
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$scale);
  let results = (outs PF_Global:$result);
}

def PF_ScalarInputOp : PF_Op<"scalar_input", [Pure]> {
  let summary = "a named f32 scalar that the runtime supplies at every step";
  let description = [{
    Run-time hyper-parameters (the learning rate, the step count for Adam's
    bias correction) so that schedules need no recompile. Every rank of the
    placement receives the same value.

    ```mlir
    %lr = pf.scalar_input "lr" : !pf.global<f32, #P, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def PF_SGDUpdateOp : PF_Op<"sgd_update", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>]> {
  let summary = "one SGD step (momentum, dampening, weight decay, Nesterov)";
  let description = [{
    As `torch.optim.SGD`: `g = grad + weight_decay * p`; with momentum,
    `buf = momentum * buf + (1 - dampening) * g` (at `step` 1, the first,
    `buf = g`), `g = nesterov ? g + momentum * buf : buf`; then
    `p = p - lr * g`. With momentum, the buffer and the 1-based step count
    are operands and the new buffer is a second result.

    ```mlir
    %p2 = pf.sgd_update %p, %g, %lr : (!W, !W, !pf.global<f32, #P, #pf.sbp<[B]>>) -> !W
    %p3, %b3 = pf.sgd_update %p, %g, %lr momentum_state(%buf, %step) {momentum = 0.9 : f64}
        : (!W, !W, !S, !W, !S) -> (!W, !W)
    ```
  }];
  let arguments = (ins PF_Global:$param, PF_Global:$grad, PF_Global:$lr,
                   Optional<PF_Global>:$momentum_buffer,
                   Optional<PF_Global>:$step,
                   DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                   DefaultValuedAttr<F64Attr, "0.0">:$dampening,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                   UnitAttr:$nesterov);
  let results = (outs PF_Global:$new_param, Optional<PF_Global>:$new_momentum_buffer);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr (`momentum_state` `(` $momentum_buffer^ `,` $step `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def PF_AdamUpdateOp : PF_Op<"adam_update", [Pure,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>]> {
  let summary = "one Adam or AdamW step";
  let description = [{
    As `torch.optim.Adam` / `AdamW` with `t = step` (1-based, a run-time
    scalar): `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
    `mhat = m / (1 - b1^t)`, `vhat = v / (1 - b2^t)` (without bias correction
    `mhat = m`, `vhat = v`), `p = p - lr * mhat / (sqrt(vhat) + eps)`.
    Weight decay adds `wd * p` to `g` (Adam) or multiplies `p` by
    `1 - lr * wd` first (`decoupled`, AdamW).

    ```mlir
    %p2, %m2, %v2 = pf.adam_update %p, %g, %m, %v, %lr, %t {beta1 = 0.9 : f64}
        : (!W, !W, !W, !W, !S, !S) -> (!W, !W, !W)
    ```
  }];
  let arguments = (ins PF_Global:$param, PF_Global:$grad, PF_Global:$exp_avg,
                   PF_Global:$exp_avg_sq, PF_Global:$lr, PF_Global:$step,
                   DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                   DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                   DefaultValuedAttr<F64Attr, "1.0e-8">:$epsilon,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                   UnitAttr:$decoupled,
                   DefaultValuedAttr<BoolAttr, "true">:$bias_correction);
  let results = (outs PF_Global:$new_param, PF_Global:$new_exp_avg,
                 PF_Global:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFOPTIMOPS_TD
