//===- PFMicrobatchOps.td - micro-batching ops -------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD
#define PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD

def PF_MicrobatchOp : PF_Op<"microbatch", [Pure]> {
  let summary = "micro-batch `index` of `count`: rows [index*B/count, (index+1)*B/count) of axis 0";
  let description = [{
    ```mlir
    %x1 = pf.microbatch %x {index = 1, count = 2}
        : !pf.global<16x784xf32, #P, #pf.sbp<[B]>> -> !pf.global<8x784xf32, #P, #pf.sbp<[B]>>
    ```
    The batch (axis 0) must divide evenly into `count` micro-batches.
  }];
  let arguments = (ins PF_Global:$input, I64Attr:$index, I64Attr:$count);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def PF_PackOp : PF_Op<"pack", [Pure]> {
  let summary = "stacks scalars (one per micro-batch) into a 1-D tensor";
  let description = [{
    How a step returns its per-micro-batch losses, as OneFlow's graph
    returns the loss of gradient-accumulation steps with shape `[m]`.

    ```mlir
    %losses = pf.pack %l0, %l1 : (!pf.global<f32, #P>, !pf.global<f32, #P>) -> !pf.global<2xf32, #P>
    ```
  }];
  let arguments = (ins Variadic<PF_Global>:$elements);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$elements attr-dict `:` functional-type($elements, results)";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD
