//===- PFCommOps.td - PipeFlow communication ops -----------*- tablegen -*-===//
//
// Explicit communication in per-rank programs (after pf-partition-ranks).
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFCOMMOPS_TD
#define PF_DIALECT_PF_IR_PFCOMMOPS_TD

def PF_SendOp : PF_Op<"send"> {
  let summary = "sends a value to another rank (blocking point-to-point)";
  let description = [{
    In a per-rank program: the value's data goes to world rank `peer`, where
    a `pf.recv` with the same `tag` and type receives it.

    ```mlir
    pf.send %v to 1 tag 3 : !pf.global<16x512xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins PF_Global:$value, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = "$value `to` $peer `tag` $tag attr-dict `:` qualified(type($value))";
  let hasVerifier = 1;
}

def PF_RecvOp : PF_Op<"recv"> {
  let summary = "receives a value from another rank (blocking point-to-point)";
  let description = [{
    ```mlir
    %v = pf.recv from 0 tag 3 : !pf.global<16x512xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "`from` $peer `tag` $tag attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFCOMMOPS_TD
