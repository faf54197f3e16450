//===- PFTensorOps.td - element-wise and shape ops of transformers -*- tablegen -*-===//
//
// The ops a transformer needs beyond the MLP set: subtraction and division,
// NumPy broadcasting as an explicit op, masking, slicing, padding and
// concatenation. Included from PFOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFTENSOROPS_TD
#define PF_DIALECT_PF_IR_PFTENSOROPS_TD

def PF_SubOp : PF_DiffOp<"sub"> {
  let summary = "element-wise difference of two tensors of the same shape";
  let description = [{
    ```mlir
    %d = pf.sub %a, %b : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs);
  let results = (outs PF_Global:$result);
}

def PF_DivOp : PF_DiffOp<"div"> {
  let summary = "element-wise quotient of two tensors of the same shape";
  let description = [{
    ```mlir
    %q = pf.div %a, %b : (!T, !T) -> !T
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs);
  let results = (outs PF_Global:$result);
}

def PF_BroadcastToOp : PF_DiffOp<"broadcast_to"> {
  let summary = "NumPy broadcasting of a tensor to a larger shape";
  let description = [{
    The input's axes align with the trailing axes of `shape`; each is equal
    to the output's or 1 (repeated). Leading output axes are new. Frontends
    make broadcasting explicit with this op so that the element-wise ops
    keep one shape. The gradient sums over the repeated axes.

    ```mlir
    %e = pf.broadcast_to %pos {shape = array<i64: 4, 16, 32>}
        : (!pf.global<16x32xf32, #P>) -> !pf.global<4x16x32xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$shape);
  let results = (outs PF_Global:$result);
}

def PF_CountKeptOp : PF_DiffOp<"count_kept"> {
  let summary = "the number of labels other than ignore_index, as a float";
  let description = [{
    The denominator of a mean cross-entropy with `ignore_index`
    (pf-decompose-losses): over a split batch each rank counts its rows, a
    partial sum. Integer labels take no gradient.

    ```mlir
    %n = pf.count_kept %labels {ignore_index = -1 : i64}
        : (!pf.global<16xi64, #P>) -> !pf.global<f32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$labels, I64Attr:$ignore_index);
  let results = (outs PF_Global:$result);
}

def PF_MaskedFillOp : PF_DiffOp<"masked_fill"> {
  let summary = "replaces the elements where a mask is non-zero by a constant";
  let description = [{
    `out = mask != 0 ? value : input`; the mask (f32 or integer) has the
    input's shape. With `value = -inf` before a softmax this is the causal
    mask of attention.

    ```mlir
    %m = pf.masked_fill %att, %mask {value = 0xFFF0000000000000 : f64}
        : (!pf.global<2x4x8x8xf32, #P>, !pf.global<2x4x8x8xf32, #P>)
        -> !pf.global<2x4x8x8xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_Global:$mask, F64Attr:$value);
  let results = (outs PF_Global:$result);
}

def PF_SliceOp : PF_DiffOp<"slice"> {
  let summary = "the box of a tensor at `offsets` with `sizes`";
  let description = [{
    Step 1 on every axis; the result's shape is `sizes`. `Tensor.split`,
    `chunk` and basic indexing lower to it. The gradient is `pf.pad`.

    ```mlir
    %q = pf.slice %qkv {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 8, 32>}
        : (!pf.global<2x8x96xf32, #P>) -> !pf.global<2x8x32xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$offsets,
                   DenseI64ArrayAttr:$sizes);
  let results = (outs PF_Global:$result);
}

def PF_PadOp : PF_DiffOp<"pad"> {
  let summary = "a tensor placed at `offsets` in zeros of `shape`";
  let description = [{
    The gradient of `pf.slice` (and its inverse); its own gradient is the
    slice.

    ```mlir
    %g = pf.pad %dq {offsets = array<i64: 0, 0, 32>, shape = array<i64: 2, 8, 96>}
        : (!pf.global<2x8x32xf32, #P>) -> !pf.global<2x8x96xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$offsets,
                   DenseI64ArrayAttr:$shape);
  let results = (outs PF_Global:$result);
}

def PF_ConcatOp : PF_DiffOp<"concat"> {
  let summary = "concatenation along one axis";
  let description = [{
    Every other axis agrees. The gradient slices the result's gradient.

    ```mlir
    %c = pf.concat %a, %b {axis = 1 : i64}
        : (!pf.global<2x3xf32, #P>, !pf.global<2x5xf32, #P>) -> !pf.global<2x8xf32, #P>
    ```
  }];
  let arguments = (ins Variadic<PF_Global>:$inputs, I64Attr:$axis);
  let results = (outs PF_Global:$result);
}

#endif // PF_DIALECT_PF_IR_PFTENSOROPS_TD
