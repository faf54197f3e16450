//===- PFOps.td - PipeFlow ops -----------------------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFOPS_TD
#define PF_DIALECT_PF_IR_PFOPS_TD

include "pf/Dialect/PF/IR/PFTypes.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "pf/Interfaces/AutodiffInterface.td"
include "pf/Interfaces/SBPInterface.td"

def PF_Global : DialectType<PF_Dialect,
    CPred<"::llvm::isa<::mlir::pf::GlobalType>($_self)">, "global tensor",
    "::mlir::pf::GlobalType">;

def PF_I64Pair : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>]>;

// Ops whose result types follow from their operands; a result type may carry
// any SBP (or none), shape, element type and placement must match.
class PF_InferredOp<string mnemonic, list<Trait> traits = []>
    : PF_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptorWithIsCompatible,
        DeclareOpInterfaceMethods<PF_SBPOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// A forward op with a reverse-mode gradient rule.
class PF_DiffOp<string mnemonic, list<Trait> traits = []>
    : PF_InferredOp<mnemonic, !listconcat(traits,
        [DeclareOpInterfaceMethods<PF_AutodiffOpInterface>])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def PF_ParamOp : PF_Op<"param", [Symbol]> {
  let summary = "a module-level model parameter or buffer";
  let description = [{
    Declares a named parameter: its global type (logical shape, placement,
    SBP) and its initializer. A `buffer` is state that the optimizer does not
    update (batch-norm running statistics, optimizer moments).

    ```mlir
    pf.param @linear0.weight : !pf.global<512x784xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
        = #pf.init<kaiming_uniform(784)>
    pf.param @bn.running_var : !pf.global<16xf32, #pf.placement<"cpu", [0]>> = #pf.init<ones> buffer
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<PF_Global>:$type,
    PF_InitAttr:$init,
    UnitAttr:$buffer
  );
  let assemblyFormat = "$sym_name `:` $type `=` qualified($init) (`buffer` $buffer^)? attr-dict";
  let extraClassDeclaration = [{
    GlobalType getGlobalType() { return ::llvm::cast<GlobalType>(getType()); }
  }];
}

def PF_ReadParamOp : PF_Op<"read_param", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead]>]> {
  let summary = "reads a parameter's current value inside a function";
  let description = [{
    ```mlir
    %w = pf.read_param @linear0.weight : !W
    ```
    The result type is the parameter's type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$param);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$param attr-dict `:` qualified(type($result))";
}

def PF_WriteParamOp : PF_Op<"write_param", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemWrite]>]> {
  let summary = "stores a new value into a parameter or buffer";
  let description = [{
    Used for updated batch-norm running statistics and optimizer updates.
    The value must have the parameter's shape, element type and placement;
    a different SBP is a layout change that boxing resolves.

    ```mlir
    pf.write_param %new_mean to @bn.running_mean : !M
    ```
  }];
  let arguments = (ins PF_Global:$value, FlatSymbolRefAttr:$param);
  let assemblyFormat = "$value `to` $param attr-dict `:` qualified(type($value))";
}

//===----------------------------------------------------------------------===//
// Constants and layout conversions
//===----------------------------------------------------------------------===//

def PF_ConstantOp : PF_Op<"constant", [ConstantLike, Pure]> {
  let summary = "a global tensor with a constant logical value";
  let description = [{
    ```mlir
    %c = pf.constant dense<1.0> : tensor<4xf32> : !pf.global<4xf32, #P, #pf.sbp<[B]>>
    ```
    The value's shape and element type are the logical ones.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$value attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def PF_ToGlobalOp : PF_Op<"to_global", [Pure,
    DeclareOpInterfaceMethods<PF_AutodiffOpInterface>]> {
  let summary = "makes a local tensor global, or changes a global tensor's layout";
  let description = [{
    From a local `tensor`: each rank of the placement contributes its local
    data as OneFlow's `to_global` does: under `S(k)` the local tensor is that
    rank's shard, under `B` every rank holds the whole value, under `P` the
    locals are addends of the value. The local shape must be the shard shape.

    From a global tensor: an explicit layout change (placement and/or SBP)
    that keeps the logical value; boxing lowers it to communication.

    ```mlir
    %g = pf.to_global %l : tensor<8x784xf32> -> !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>>
    %b = pf.to_global %g : !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>>
                        -> !pf.global<16x784xf32, #P01, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins AnyTypeOf<[PF_Global, AnyRankedTensor]>:$input);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def PF_ToLocalOp : PF_Op<"to_local", [Pure]> {
  let summary = "the calling rank's local part of a global tensor";
  let description = [{
    ```mlir
    %l = pf.to_local %g : !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>> -> tensor<8x784xf32>
    ```
    The result shape is the shard shape under the operand's SBP.
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Dense algebra and element-wise ops
//===----------------------------------------------------------------------===//

def PF_MatmulOp : PF_DiffOp<"matmul"> {
  let summary = "matrix product, optionally transposed and batched";
  let description = [{
    `out = op(a) * op(b)` over the last two axes, where `op` transposes when
    the flag is set. Leading (batch) axes must match; a 2-D `b` is shared by
    every batch of `a` (as `x @ W` in a linear layer). `nn.Linear` is
    `pf.matmul %x, %w {transpose_b}` followed by `pf.bias_add`.

    ```mlir
    %y = pf.matmul %x, %w {transpose_b} : (!pf.global<16x784xf32, #P, #S0>,
        !pf.global<512x784xf32, #P, #B>) -> !pf.global<16x512xf32, #P, #S0>
    ```
  }];
  let arguments = (ins PF_Global:$a, PF_Global:$b, UnitAttr:$transpose_a,
                   UnitAttr:$transpose_b);
  let results = (outs PF_Global:$result);
}

def PF_BiasAddOp : PF_DiffOp<"bias_add"> {
  let summary = "adds a 1-D bias along one axis";
  let description = [{
    `out[..., i, ...] = x[..., i, ...] + bias[i]` with `i` on `axis` (1 by
    default: the features of a 2-D activation, the channels of NCHW).

    ```mlir
    %y = pf.bias_add %x, %b : (!pf.global<16x512xf32, #P, #S0>,
        !pf.global<512xf32, #P, #B>) -> !pf.global<16x512xf32, #P, #S0>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$bias,
                   DefaultValuedAttr<I64Attr, "1">:$axis);
  let results = (outs PF_Global:$result);
}

def PF_AddOp : PF_DiffOp<"add", [Commutative]> {
  let summary = "element-wise sum of two tensors of the same shape";
  let description = [{
    ```mlir
    %s = pf.add %a, %b : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs);
  let results = (outs PF_Global:$result);
}

def PF_MulOp : PF_DiffOp<"mul", [Commutative]> {
  let summary = "element-wise product of two tensors of the same shape";
  let description = [{
    ```mlir
    %p = pf.mul %a, %b : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs);
  let results = (outs PF_Global:$result);
}

def PF_MulScalarOp : PF_DiffOp<"mul_scalar"> {
  let summary = "multiplies every element by a compile-time scalar";
  let description = [{
    ```mlir
    %h = pf.mul_scalar %x {scalar = 5.000000e-01 : f64} : (!T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input, F64Attr:$scalar);
  let results = (outs PF_Global:$result);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def PF_ReluOp : PF_DiffOp<"relu"> {
  let summary = "element-wise max(x, 0)";
  let description = [{
    ```mlir
    %r = pf.relu %x : (!T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
}

def PF_ActivationOp : PF_DiffOp<"activation"> {
  let summary = "element-wise GELU, tanh or sigmoid";
  let description = [{
    `kind` is one of
    - `gelu`: `x * (1 + erf(x / sqrt(2))) / 2` (torch's default GELU);
    - `gelu_tanh`: `x * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) / 2`
      (torch's `approximate="tanh"`, GPT-2's);
    - `tanh`, `sigmoid`.

    ```mlir
    %h = pf.activation %x {kind = "gelu"} : (!T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input, StrAttr:$kind);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

def PF_SoftmaxOp : PF_DiffOp<"softmax"> {
  let summary = "softmax (or log-softmax) along one axis";
  let description = [{
    `y = exp(x - max) / sum(exp(x - max))` along `axis`; with `log`,
    `y = x - max - log(sum(exp(x - max)))` (torch's `log_softmax`).

    ```mlir
    %p = pf.softmax %x {axis = 1 : i64} : (!T) -> !T
    %l = pf.softmax %x {axis = 1 : i64, log} : (!T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input, I64Attr:$axis, UnitAttr:$log);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

def PF_LayerNormOp : PF_DiffOp<"layer_norm"> {
  let summary = "layer normalisation over the last axis, with weight and bias";
  let description = [{
    Each row (the last axis, of size `C`) is normalised with its own mean
    and biased variance, then scaled by `gamma` and shifted by `beta`
    (`[C]` each), as torch's `LayerNorm(C)`.

    ```mlir
    %y = pf.layer_norm %x, %gamma, %beta {epsilon = 1.0e-05 : f64}
        : (!X, !C, !C) -> !X
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$gamma, PF_Global:$beta,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs PF_Global:$result);
}

def PF_EmbeddingOp : PF_DiffOp<"embedding"> {
  let summary = "rows of a table gathered by integer ids";
  let description = [{
    `y[i..., :] = table[ids[i...], :]` for a `[V, D]` table and i64 ids of
    any shape (result `ids.shape + [D]`). An id outside `[0, V)` is a
    run-time error. Its gradient scatter-adds into the table's shape.

    ```mlir
    %e = pf.embedding %table, %ids : (!pf.global<64x8xf32, #P>,
        !pf.global<4x16xi64, #P>) -> !pf.global<4x16x8xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$table, PF_Global:$ids);
  let results = (outs PF_Global:$result);
}

def PF_DropoutOp : PF_DiffOp<"dropout"> {
  let summary = "seeded, layout-independent dropout";
  let description = [{
    `y = keep ? x / (1 - p) : 0` per element, `keep = u >= p` with `u` the
    uniform draw of the runtime's counter-based generator (the initialisers'
    Philox) at the element's logical index, under the run's seed and a
    stream from `stream`, the step and the micro-batch. Every layout of the
    program, and its single-rank run, drops the same logical elements. The
    gradient is the same dropout of the upstream gradient (same mask).

    ```mlir
    %y = pf.dropout %x {p = 5.000000e-01 : f64, stream = 7 : i64} : (!T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$input, F64Attr:$p, I64Attr:$stream);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def PF_FlattenOp : PF_DiffOp<"flatten"> {
  let summary = "merges the axes start_dim..end_dim into one (nn.Flatten)";
  let description = [{
    Defaults are those of `nn.Flatten`: `start_dim = 1`, `end_dim = -1`.

    ```mlir
    %f = pf.flatten %x : (!pf.global<16x1x28x28xf32, #P, #B>) -> !pf.global<16x784xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input,
                   DefaultValuedAttr<I64Attr, "1">:$start_dim,
                   DefaultValuedAttr<I64Attr, "-1">:$end_dim);
  let results = (outs PF_Global:$result);
  let hasFolder = 1;
}

def PF_ReshapeOp : PF_Op<"reshape", [Pure,
    DeclareOpInterfaceMethods<PF_AutodiffOpInterface>,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>]> {
  let summary = "reinterprets the logical shape (row-major, same element count)";
  let description = [{
    ```mlir
    %r = pf.reshape %x : !pf.global<16x784xf32, #P, #B> -> !pf.global<16x28x28xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def PF_TransposeOp : PF_DiffOp<"transpose"> {
  let summary = "permutes the axes: result axis i is input axis perm[i]";
  let description = [{
    ```mlir
    %t = pf.transpose %x {perm = array<i64: 1, 0>} : (!pf.global<4x8xf32, #P, #B>)
        -> !pf.global<8x4xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$perm);
  let results = (outs PF_Global:$result);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def PF_SoftmaxCrossEntropyOp : PF_DiffOp<"softmax_cross_entropy"> {
  let summary = "mean softmax cross-entropy of logits against integer labels";
  let description = [{
    `loss = mean_n(logsumexp(logits[n, :]) - logits[n, labels[n]])`, a scalar,
    as `nn.CrossEntropyLoss()` with its default mean reduction. Logits are
    `[N, C]` floats, labels `[N]` integers in `[0, C)`. With `ignore_index`,
    rows with that label are left out and the mean is over the others (as
    torch's `ignore_index`). With `sum`, the loss is the sum over the rows
    (kept rows) instead of their mean: pf-decompose-losses writes the mean
    with `ignore_index` as this sum divided by `pf.count_kept`, so that a
    split batch gives each rank partial sums of both (the mean's
    denominator is not known per rank).

    ```mlir
    %loss = pf.softmax_cross_entropy %logits, %labels : (!pf.global<16x10xf32, #P, #B>,
        !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$logits, PF_Global:$labels,
                   OptionalAttr<I64Attr>:$ignore_index, UnitAttr:$sum);
  let results = (outs PF_Global:$loss);
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalisation
//===----------------------------------------------------------------------===//

def PF_Conv2DOp : PF_DiffOp<"conv2d"> {
  let summary = "2-D convolution, NCHW input, OIHW weight (no bias: use bias_add)";
  let description = [{
    `out[n, o, y, x] = sum_{c, i, j} in[n, g*C/G + c, y*s - p + i*d, x*s - p + j*d] * w[o, c, i, j]`
    with `g` the group of output channel `o`. Output size per spatial axis:
    `(H + 2p - d(k - 1) - 1) / s + 1`.

    ```mlir
    %y = pf.conv2d %x, %w {padding = array<i64: 2, 2>} : (!pf.global<16x1x28x28xf32, #P, #B>,
        !pf.global<6x1x5x5xf32, #P, #B>) -> !pf.global<16x6x28x28xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$weight,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding,
                   DefaultValuedAttr<PF_I64Pair, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs PF_Global:$result);
}

class PF_Pool2DOp<string mnemonic, string what> : PF_DiffOp<mnemonic> {
  let summary = what # " pooling over NCHW windows";
  let description = [{
    Windows of `kernel` size move by `stride` (the kernel size when absent)
    over the input padded by `padding` on each side (at most half the
    kernel, as PyTorch requires); the output size per axis is
    `(H + 2p - k) / s + 1` (floor).

    ```mlir
    %p = pf.max_pool2d %x {kernel = array<i64: 2, 2>} : (!pf.global<16x6x28x28xf32, #P, #B>)
        -> !pf.global<16x6x14x14xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_I64Pair:$kernel,
                   OptionalAttr<PF_I64Pair>:$stride,
                   DefaultValuedAttr<PF_I64Pair, "{0, 0}">:$padding);
  let results = (outs PF_Global:$result);
  let extraClassDeclaration = [{
    ::llvm::SmallVector<int64_t, 2> getEffectiveStride() {
      if (auto s = getStride())
        return ::llvm::SmallVector<int64_t, 2>(*s);
      return ::llvm::SmallVector<int64_t, 2>(getKernel());
    }
  }];
}

def PF_MaxPool2DOp : PF_Pool2DOp<"max_pool2d", "max"> {
  let description = [{
    Max over each window; padded positions never win.

    ```mlir
    %p = pf.max_pool2d %x {kernel = array<i64: 2, 2>} : (!pf.global<16x6x28x28xf32, #P, #B>)
        -> !pf.global<16x6x14x14xf32, #P, #B>
    ```
  }];
}

def PF_AvgPool2DOp : PF_Pool2DOp<"avg_pool2d", "average"> {
  let description = [{
    Mean over each window; padded positions count as zeros in the divisor
    (PyTorch's `count_include_pad=True`).

    ```mlir
    %p = pf.avg_pool2d %x {kernel = array<i64: 2, 2>} : (!pf.global<16x6x28x28xf32, #P, #B>)
        -> !pf.global<16x6x14x14xf32, #P, #B>
    ```
  }];
}

def PF_GlobalAvgPoolOp : PF_DiffOp<"global_avg_pool"> {
  let summary = "mean over the spatial axes: NCHW -> NC11 (AdaptiveAvgPool2d(1))";
  let description = [{
    ```mlir
    %g = pf.global_avg_pool %x : (!pf.global<16x512x7x7xf32, #P, #B>)
        -> !pf.global<16x512x1x1xf32, #P, #B>
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
}

def PF_BatchNormOp : PF_DiffOp<"batch_norm"> {
  let summary = "batch normalisation in training mode, with running statistics";
  let description = [{
    Normalises each channel (axis 1 of an `[N, C]` or `[N, C, H, W]` input)
    with the batch's mean and biased variance, then scales by `gamma` and
    shifts by `beta`. Also returns the updated running statistics,
    `(1 - momentum) * running + momentum * batch` with the unbiased batch
    variance for `running_var`, as PyTorch does; store them back with
    `pf.write_param`. With `inference` (eval mode) it normalises with the
    running statistics instead and returns them unchanged; that form has
    no gradient rule (eval-mode batch norm is for inference graphs).

    ```mlir
    %y, %m, %v = pf.batch_norm %x, %gamma, %beta, %rm, %rv
        : (!X, !C, !C, !C, !C) -> (!X, !C, !C)
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$gamma, PF_Global:$beta,
                   PF_Global:$running_mean, PF_Global:$running_var,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                   DefaultValuedAttr<F64Attr, "0.1">:$momentum,
                   UnitAttr:$inference);
  let results = (outs PF_Global:$result, PF_Global:$new_running_mean,
                 PF_Global:$new_running_var);
}

include "pf/Dialect/PF/IR/PFTensorOps.td"
include "pf/Dialect/PF/IR/PFLogicalOps.td"
include "pf/Dialect/PF/IR/PFGradOps.td"
include "pf/Dialect/PF/IR/PFAttentionOps.td"
include "pf/Dialect/PF/IR/PFOptimOps.td"
include "pf/Dialect/PF/IR/PFCommOps.td"
include "pf/Dialect/PF/IR/PFBoxingOps.td"
include "pf/Dialect/PF/IR/PFMicrobatchOps.td"

#endif // PF_DIALECT_PF_IR_PFOPS_TD
