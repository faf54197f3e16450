//===- PFLogicalOps.td - comparisons, boolean tensors, casts -*- tablegen -*-===//
//
// Element-wise ops that make or read boolean (i1) tensors: comparisons,
// logical and/or/xor/not, selection by a condition, and element-type
// casts. A boolean tensor is stored one byte an element (0 or 1). None of
// these passes a gradient to a comparison's or a logical op's operands;
// pf.where passes its result's gradient to the operand each element came
// from. Included from PFOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFLOGICALOPS_TD
#define PF_DIALECT_PF_IR_PFLOGICALOPS_TD

def PF_CompareOp : PF_DiffOp<"compare"> {
  let summary = "element-wise comparison of two tensors: a boolean tensor";
  let description = [{
    `result = lhs <predicate> rhs`, where `predicate` is one of `eq`, `ne`,
    `lt`, `le`, `gt`, `ge` (pf::ComparePredicate). The operands share one
    shape and element type (float, integer or i1); the result is i1 of that
    shape. A comparison with NaN is false but for `ne`. Frontends broadcast
    with pf.broadcast_to and compare with a number through a splat
    pf.constant. No gradient reaches the operands.

    ```mlir
    %m = pf.compare %mask, %zero {predicate = "eq"}
        : (!pf.global<8x8xf32, #P>, !pf.global<8x8xf32, #P>) -> !pf.global<8x8xi1, #P>
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs, StrAttr:$predicate);
  let results = (outs PF_Global:$result);
  let hasVerifier = 1;
}

class PF_LogicalBinaryOp<string mnemonic, string what>
    : PF_DiffOp<mnemonic, [Commutative]> {
  let summary = "element-wise logical " # what # " of two boolean tensors";
  let description = [{
    Both operands are i1 of one shape; so is the result. No gradient.

    ```mlir
    %c = pf.}] # mnemonic # [{ %a, %b : (!B, !B) -> !B
    ```
  }];
  let arguments = (ins PF_Global:$lhs, PF_Global:$rhs);
  let results = (outs PF_Global:$result);
}

def PF_LogicalAndOp : PF_LogicalBinaryOp<"logical_and", "and">;
def PF_LogicalOrOp : PF_LogicalBinaryOp<"logical_or", "or">;
def PF_LogicalXorOp : PF_LogicalBinaryOp<"logical_xor", "exclusive or">;

def PF_LogicalNotOp : PF_DiffOp<"logical_not"> {
  let summary = "element-wise logical negation of a boolean tensor";
  let description = [{
    ```mlir
    %n = pf.logical_not %m : (!pf.global<8x8xi1, #P>) -> !pf.global<8x8xi1, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
}

def PF_WhereOp : PF_DiffOp<"where"> {
  let summary = "element-wise selection: true_value where condition, else false_value";
  let description = [{
    `result = condition ? true_value : false_value`. The condition is i1;
    the values share its shape and one element type, the result's. The
    result's gradient goes to `true_value` where the condition holds and to
    `false_value` elsewhere (zeros in the other places); none to the
    condition.

    ```mlir
    %y = pf.where %c, %a, %b : (!pf.global<4x8xi1, #P>, !pf.global<4x8xf32, #P>,
        !pf.global<4x8xf32, #P>) -> !pf.global<4x8xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$condition, PF_Global:$true_value,
                   PF_Global:$false_value);
  let results = (outs PF_Global:$result);
}

def PF_CastOp : PF_Op<"cast", [Pure,
    DeclareOpInterfaceMethods<PF_SBPOpInterface>,
    DeclareOpInterfaceMethods<PF_AutodiffOpInterface>]> {
  let summary = "converts every element to the result's element type";
  let description = [{
    Same shape and placement, another element type: to i1 `x != 0`; from
    i1 0 or 1; float to integer rounds toward zero (NaN gives 0, values out
    of range the nearest representable one); integer to integer keeps the
    low bits. A float-to-float cast passes the gradient on; a cast from or
    to an integer type passes none.

    ```mlir
    %f = pf.cast %m : !pf.global<8x8xi1, #P> -> !pf.global<8x8xf32, #P>
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFLOGICALOPS_TD
