//===- PFBoxingOps.td - layout changes as communication ----*- tablegen -*-===//
//
// pf-lower-boxing turns every layout change (pf.to_global between two global
// layouts) into these ops. On global values each op names the rank groups
// it runs over; pf-partition-ranks keeps them in each rank's program with
// local types, where convert-pf-to-cpu calls the runtime's collectives.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFBOXINGOPS_TD
#define PF_DIALECT_PF_IR_PFBOXINGOPS_TD

def PF_GroupsAttr : TypedArrayAttrBase<DenseI64ArrayAttr,
    "rank groups (one array of world ranks per group)">;

// A collective within groups along one hierarchy dimension: same placement,
// same logical shape, one SBP entry changes.
class PF_GroupOp<string mnemonic, string what, dag extra = (ins)>
    : PF_Op<mnemonic, [Pure]> {
  let summary = what;
  let arguments = !con((ins PF_Global:$input, PF_GroupsAttr:$groups), extra);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def PF_AllReduceOp : PF_GroupOp<"all_reduce", "P -> B: sum within each group"> {
  let description = [{
    ```mlir
    %b = pf.all_reduce %p {groups = [array<i64: 0, 1, 2, 3>]}
        : !pf.global<512xf32, #P4, #pf.sbp<[P]>> -> !pf.global<512xf32, #P4, #pf.sbp<[B]>>
    ```
  }];
}

def PF_AllReduceWaitOp : PF_Op<"all_reduce_wait"> {
  let summary = "the end of a split collective: its result, ready to use";
  let description = [{
    In a rank's program, `pf-bucket-gradients{overlap}` splits a bucket's
    all-reduce in two: the `pf.all_reduce` carrying `pf.async_slot = k`
    starts where the bucket's last gradient is computed and returns at once
    (`pfrt_all_reduce_start`), and this op, at the update that reads the
    sum, waits for it (`pfrt_all_reduce_wait`, slot `k`).
    `pf-overlap-collectives` splits other all-reduces, all-gathers and
    reduce-scatters the same way (`pfrt_box_all_gather_start`,
    `pfrt_box_reduce_scatter_start`; their wait is
    `pfrt_box_collective_wait`). Its result is the started collective's
    buffer (no copy); `input`, the collective's input, is named here so
    that it stays allocated while the transport may still read it.

    ```mlir
    %s = pf.all_reduce %g {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64} : !T -> !T
    ...
    %r = pf.all_reduce_wait %s, %g {slot = 0 : i64} : !T, !T -> !T
    ```
  }];
  let arguments = (ins PF_Global:$started, PF_Global:$input, I64Attr:$slot);
  let results = (outs PF_Global:$result);
  let assemblyFormat = [{
    $started `,` $input attr-dict `:` qualified(type($started)) `,`
    qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def PF_ReduceScatterOp : PF_GroupOp<"reduce_scatter",
    "P -> S(axis): sum within each group, each member keeps its block",
    (ins I64Attr:$axis)> {
  let description = [{
    Blocks along `axis` other than 0 are packed contiguously first (a
    transposed pack), so any axis works.
  }];
}

def PF_AllGatherOp : PF_GroupOp<"all_gather",
    "S(axis) -> B: every member gets all blocks along axis", (ins I64Attr:$axis)>;

def PF_AllToAllOp : PF_GroupOp<"all_to_all",
    "S(concat_axis) -> S(split_axis): block exchange within each group",
    (ins I64Attr:$split_axis, I64Attr:$concat_axis)>;

def PF_ShardOp : PF_GroupOp<"shard",
    "B -> S(axis): each member keeps its block (local, no communication)",
    (ins I64Attr:$axis)>;

def PF_UnshardOp : PF_GroupOp<"unshard",
    "S(axis) -> P: each member zero-pads its block into the whole (local, no communication)",
    (ins I64Attr:$axis)> {
  let description = [{
    The partial sums of a split tensor without moving a byte: member `p` of
    each group holds the logical shape, zero except its own block `p` along
    `axis`; the sum over the group is the tensor. (Gathering and keeping one
    copy would move (n-1)/n of the tensor per rank.)
  }];
}

def PF_KeepOneOp : PF_GroupOp<"keep_one",
    "B -> P: the group's first member keeps the value, the others zero (local)">;

def PF_BroadcastOp : PF_Op<"broadcast"> {
  let summary = "1 -> N: the root's value to every rank of a placement";
  let description = [{
    On global values: the input lives on the single-rank placement of
    `root`, the result on a placement (containing the root) as B. In a
    rank's program the input is present only on the root.

    ```mlir
    %b = pf.broadcast %x {root = 0, ranks = array<i64: 0, 1, 2, 3>}
        : (!pf.global<8xf32, #P0, #pf.sbp<[B]>>) -> !pf.global<8xf32, #P4, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins Optional<PF_Global>:$input, I64Attr:$root,
                   DenseI64ArrayAttr:$ranks);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PF_ReduceOp : PF_Op<"reduce"> {
  let summary = "N -> 1: the sum of a partial value, on the root alone";
  let description = [{
    On global values: the input is P over a placement containing the root,
    the result B on the root's single-rank placement. In a rank's program
    the result exists only on the root.

    ```mlir
    %r = pf.reduce %p {root = 0, ranks = array<i64: 0, 1, 2, 3>}
        : (!pf.global<8xf32, #P4, #pf.sbp<[P]>>) -> !pf.global<8xf32, #P0, #pf.sbp<[B]>>
    ```
  }];
  let arguments = (ins PF_Global:$input, I64Attr:$root,
                   DenseI64ArrayAttr:$ranks);
  let results = (outs Optional<PF_Global>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def PF_TransferOp : PF_Op<"transfer", [Pure]> {
  let summary = "a layout change by moves of slice intersections";
  let description = [{
    Each entry of `moves` is `[src, dst, offsets..., sizes...]`: world rank
    `src` sends the logical box (`offsets`, `sizes`) of the tensor to world
    rank `dst` (a local copy when they are the same rank). The boxes cover
    every destination rank's part exactly once. The source has no partial
    entries (they are reduced first) and the destination none (B is given
    and pf.keep_one applied after).

    ```mlir
    %y = pf.transfer %x {moves = [array<i64: 0, 2, 0, 0, 8, 784>, array<i64: 1, 3, 8, 0, 8, 784>]}
        : !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>> -> !pf.global<16x784xf32, #P23, #pf.sbp<[S(0)]>>
    ```
  }];
  let arguments = (ins PF_Global:$input, PF_GroupsAttr:$moves);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def PF_DeviceCopyOp : PF_Op<"device_copy", [Pure]> {
  let summary = "host <-> device copy between a cpu and a cuda placement of the same ranks";
  let description = [{
    ```mlir
    %d = pf.device_copy %h : !pf.global<8xf32, #pf.placement<"cpu", [0, 1]>, #pf.sbp<[S(0)]>>
                          -> !pf.global<8xf32, #pf.placement<"cuda", [0, 1]>, #pf.sbp<[S(0)]>>
    ```
  }];
  let arguments = (ins PF_Global:$input);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Per-rank pieces of a transfer (after pf-partition-ranks)
//===----------------------------------------------------------------------===//

def PF_ExtractBoxOp : PF_Op<"extract_box", [Pure]> {
  let summary = "a box of a rank's local tensor (local offsets)";
  let arguments = (ins PF_Global:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def PF_AssembleOp : PF_Op<"assemble", [Pure]> {
  let summary = "a rank's local tensor put together from boxes (local offsets)";
  let description = [{
    Piece `i` lands at `offsets[i]`; the pieces cover the result exactly.
  }];
  let arguments = (ins Variadic<PF_Global>:$pieces, PF_GroupsAttr:$offsets);
  let results = (outs PF_Global:$result);
  let assemblyFormat = "$pieces attr-dict `:` functional-type($pieces, results)";
  let hasVerifier = 1;
}

#endif // PF_DIALECT_PF_IR_PFBOXINGOPS_TD
