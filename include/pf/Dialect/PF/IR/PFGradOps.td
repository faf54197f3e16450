//===- PFGradOps.td - PipeFlow backward ops ----------------*- tablegen -*-===//
//
// The ops that pf-autodiff emits for gradients that are not themselves
// forward ops (matmul's gradients are matmuls, flatten's a reshape, ...).
// Input-gradient ("B") and weight-gradient ("W") work are separate ops so the
// zero-bubble schedule can place them apart.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFGRADOPS_TD
#define PF_DIALECT_PF_IR_PFGRADOPS_TD

// Backward ops whose result shape is given by the result type (it cannot
// always be inferred: a strided window forgets trailing input rows).
class PF_GradOp<string mnemonic, list<Trait> traits = []>
    : PF_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<PF_SBPOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PF_ReluGradOp : PF_InferredOp<"relu_grad"> {
  let summary = "gradient of relu: dy where the forward output is positive";
  let description = [{
    `dx = y > 0 ? dy : 0`, with `y` relu's output (positive exactly where its
    input was).

    ```mlir
    %dx = pf.relu_grad %y, %dy : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$output, PF_Global:$result_grad);
  let results = (outs PF_Global:$result);
}

def PF_ActivationGradOp : PF_InferredOp<"activation_grad"> {
  let summary = "gradient of an activation: f'(x) * dy";
  let description = [{
    `x` is the activation's input and `kind` its kind (see `pf.activation`).

    ```mlir
    %dx = pf.activation_grad %x, %dy {kind = "gelu"} : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$result_grad,
                   StrAttr:$kind);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

def PF_SoftmaxGradOp : PF_InferredOp<"softmax_grad"> {
  let summary = "gradient of softmax (or log-softmax) from its output";
  let description = [{
    With `y` the forward output: softmax `dx = y (dy - sum(dy y))`,
    log-softmax `dx = dy - exp(y) sum(dy)`, sums along `axis`.

    ```mlir
    %dx = pf.softmax_grad %y, %dy {axis = 1 : i64} : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$output, PF_Global:$result_grad,
                   I64Attr:$axis, UnitAttr:$log);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

def PF_ReduceSumOp : PF_DiffOp<"reduce_sum"> {
  let summary = "sums over the given axes and drops them";
  let description = [{
    The bias gradient (sum over every axis but the bias axis), `Tensor.sum`
    and `mean`. Its gradient broadcasts back (`pf.broadcast_to`).

    ```mlir
    %db = pf.reduce_sum %dy {axes = array<i64: 0>} : (!pf.global<16x512xf32, #P>)
        -> !pf.global<512xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$axes);
  let results = (outs PF_Global:$result);
}

def PF_SoftmaxCrossEntropyGradOp : PF_InferredOp<"softmax_cross_entropy_grad"> {
  let summary = "gradient of the mean softmax cross-entropy w.r.t. the logits";
  let description = [{
    `dlogits[n, c] = (softmax(logits[n])[c] - (c == labels[n])) * dloss / N`;
    with `ignore_index`, N counts the other rows and ignored rows get zeros;
    with `sum` (the gradient of the summed loss), N is 1.

    ```mlir
    %dl = pf.softmax_cross_entropy_grad %logits, %labels, %dloss
        : (!pf.global<16x10xf32, #P>, !pf.global<16xi64, #P>, !pf.global<f32, #P>)
        -> !pf.global<16x10xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$logits, PF_Global:$labels, PF_Global:$loss_grad,
                   OptionalAttr<I64Attr>:$ignore_index, UnitAttr:$sum);
  let results = (outs PF_Global:$result);
}

def PF_Conv2DGradInputOp : PF_GradOp<"conv2d_grad_input"> {
  let summary = "input gradient of conv2d (a transposed convolution)";
  let description = [{
    `dx` of `y = conv2d(x, w)` given `dy`; the result type is `x`'s.

    ```mlir
    %dx = pf.conv2d_grad_input %dy, %w {padding = array<i64: 2, 2>}
        : (!pf.global<16x6x28x28xf32, #P>, !pf.global<6x1x5x5xf32, #P>) -> !pf.global<16x1x28x28xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$result_grad, PF_Global:$weight,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs PF_Global:$result);
}

def PF_Conv2DGradWeightOp : PF_GradOp<"conv2d_grad_weight"> {
  let summary = "weight gradient of conv2d";
  let description = [{
    `dw` of `y = conv2d(x, w)` given `x` and `dy`; the result type is `w`'s.

    ```mlir
    %dw = pf.conv2d_grad_weight %x, %dy {padding = array<i64: 2, 2>}
        : (!pf.global<16x1x28x28xf32, #P>, !pf.global<16x6x28x28xf32, #P>) -> !pf.global<6x1x5x5xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$result_grad,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs PF_Global:$result);
}

def PF_MaxPool2DGradOp : PF_GradOp<"max_pool2d_grad"> {
  let summary = "gradient of max pooling: dy routed to each window's first maximum";
  let description = [{
    ```mlir
    %dx = pf.max_pool2d_grad %x, %dy {kernel = array<i64: 2, 2>}
        : (!pf.global<16x6x28x28xf32, #P>, !pf.global<16x6x14x14xf32, #P>) -> !pf.global<16x6x28x28xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$result_grad, PF_I64Pair:$kernel,
                   OptionalAttr<PF_I64Pair>:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding);
  let results = (outs PF_Global:$result);
}

def PF_AvgPool2DGradOp : PF_GradOp<"avg_pool2d_grad"> {
  let summary = "gradient of average pooling: dy spread evenly over each window";
  let description = [{
    ```mlir
    %dx = pf.avg_pool2d_grad %dy {kernel = array<i64: 2, 2>}
        : (!pf.global<16x6x14x14xf32, #P>) -> !pf.global<16x6x28x28xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$result_grad, PF_I64Pair:$kernel,
                   OptionalAttr<PF_I64Pair>:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding);
  let results = (outs PF_Global:$result);
}

def PF_GlobalAvgPoolGradOp : PF_GradOp<"global_avg_pool_grad"> {
  let summary = "gradient of global average pooling: dy / (H * W) everywhere";
  let description = [{
    ```mlir
    %dx = pf.global_avg_pool_grad %dy : (!pf.global<16x512x1x1xf32, #P>) -> !pf.global<16x512x7x7xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$result_grad);
  let results = (outs PF_Global:$result);
}

def PF_BatchNormGradInputOp : PF_InferredOp<"batch_norm_grad_input"> {
  let summary = "input gradient of training-mode batch norm";
  let description = [{
    With the batch statistics recomputed from `x`:
    `dx = gamma * invstd / M * (M * dy - sum(dy) - xhat * sum(dy * xhat))`,
    sums per channel over the `M` elements of each channel.

    ```mlir
    %dx = pf.batch_norm_grad_input %x, %gamma, %dy : (!X, !C, !X) -> !X
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$gamma, PF_Global:$result_grad,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs PF_Global:$result);
}

def PF_BatchNormGradParamsOp : PF_InferredOp<"batch_norm_grad_params"> {
  let summary = "gamma and beta gradients of training-mode batch norm";
  let description = [{
    `dgamma = sum(dy * xhat)`, `dbeta = sum(dy)` per channel.

    ```mlir
    %dg, %db = pf.batch_norm_grad_params %x, %dy : (!X, !X) -> (!C, !C)
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$result_grad,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs PF_Global:$gamma_grad, PF_Global:$beta_grad);
}

def PF_LayerNormGradInputOp : PF_InferredOp<"layer_norm_grad_input"> {
  let summary = "input gradient of layer norm";
  let description = [{
    Per row, with `g = dy * gamma` and the row's statistics recomputed:
    `dx = invstd / C * (C g - sum(g) - xhat sum(g xhat))`.

    ```mlir
    %dx = pf.layer_norm_grad_input %x, %gamma, %dy : (!X, !C, !X) -> !X
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$gamma,
                   PF_Global:$result_grad,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs PF_Global:$result);
}

def PF_LayerNormGradParamsOp : PF_InferredOp<"layer_norm_grad_params"> {
  let summary = "gamma and beta gradients of layer norm";
  let description = [{
    `dgamma = sum(dy * xhat)`, `dbeta = sum(dy)` over every row.

    ```mlir
    %dg, %db = pf.layer_norm_grad_params %x, %dy : (!X, !X) -> (!C, !C)
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$result_grad,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs PF_Global:$gamma_grad, PF_Global:$beta_grad);
}

def PF_EmbeddingGradOp : PF_InferredOp<"embedding_grad"> {
  let summary = "table gradient of an embedding: dy scatter-added by id";
  let description = [{
    `dtable[v, :] = sum of dy[i..., :] over ids[i...] == v`, a `[V, D]`
    result with `V = num_rows` (summed in a fixed order, so the result does
    not depend on thread timing).

    ```mlir
    %dt = pf.embedding_grad %ids, %dy {num_rows = 64 : i64}
        : (!pf.global<4x16xi64, #P>, !pf.global<4x16x8xf32, #P>)
        -> !pf.global<64x8xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$ids, PF_Global:$result_grad,
                   I64Attr:$num_rows);
  let results = (outs PF_Global:$result);
}

#endif // PF_DIALECT_PF_IR_PFGRADOPS_TD
