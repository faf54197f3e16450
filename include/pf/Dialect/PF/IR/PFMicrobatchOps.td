//===- PFMicrobatchOps.td - micro-batching ops -------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD
#define PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD

def PF_MicrobatchOp : PF_Op<"microbatch", [Pure,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>]> {
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

def PF_PackOp : PF_Op<"pack", [Pure,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>]> {
  let summary = "stacks one value per micro-batch along a new leading axis";
  let description = [{
    How a step returns its per-micro-batch results: the losses of
    gradient-accumulation steps with shape `[m]`, as OneFlow's graph returns
    them, and any other output of the forward pass (logits of shape
    `[b/m, c]` per micro-batch) as `[m, b/m, c]`. The elements share one
    type; a split of axis k becomes a split of axis k + 1.

    ```mlir
    %losses = pf.pack %l0, %l1 : (!pf.global<f32, #P>, !pf.global<f32, #P>) -> !pf.global<2xf32, #P>
    ```
  }];
  let arguments = (ins Variadic<PF_Global>:$elements);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$elements attr-dict `:` functional-type($elements, results)";
  let hasVerifier = 1;
}

def PF_ScheduleOp : PF_Op<"schedule", [HasParent<"::mlir::ModuleOp">]> {
  let summary = "a static pipeline schedule: each rank's ordered actions";
  let description = [{
    One list per rank (pipeline position) of the actions it runs, in order:
    `F<mb>` forward, `B<mb>` input-gradient backward (with the weight
    gradient unless the schedule splits it off), `W<mb>` weight-gradient
    backward of micro-batch `<mb>`; with virtual chunks (interleaved 1F1B)
    each action names its chunk, `F<mb>:<chunk>`. The stage of an action of
    chunk `c` on rank `r` is `c * num_stages + r`. `pf-schedule` builds it;
    `pf-verify-schedule` simulates it (blocking point-to-point semantics) and
    rejects any order that deadlocks.

    ```mlir
    pf.schedule {kind = "1f1b", num_stages = 2, num_microbatches = 3, num_chunks = 1,
                 actions = [["F0", "F1", "B0", "F2", "B1", "B2"],
                            ["F0", "B0", "F1", "B1", "F2", "B2"]]}
    ```
  }];
  let arguments = (ins StrAttr:$kind, I64Attr:$num_stages,
                   I64Attr:$num_microbatches, I64Attr:$num_chunks,
                   TypedArrayAttrBase<StrArrayAttr, "per-rank action lists">:$actions);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFMICROBATCHOPS_TD
