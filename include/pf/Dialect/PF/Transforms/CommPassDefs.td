//===- CommPassDefs.td - passes on a rank's communication --*- tablegen -*-===//
//
// Part of Passes.td (included there, in its order): the passes that shape
// a rank's gradient and parameter communication (ZeRO's gathers and
// reduce-scatters, gradient buckets, split collectives). Kept apart so that
// no .td grows past the project's file size.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_TRANSFORMS_COMMPASSDEFS_TD
#define PF_DIALECT_PF_TRANSFORMS_COMMPASSDEFS_TD

def RegatherParamsPass : Pass<"pf-regather-params", "::mlir::ModuleOp"> {
  let summary = "ZeRO-3: a parameter is gathered again for the backward";
  let description = [{
    After `pf-lower-boxing`: a parameter read (`pf.read_param`) that
    reaches its uses through a chain of `pf.all_gather` (and the reshapes
    around a grouped split's gather) whose gathered value is read both in
    the forward and in the backward (a `pf.phase` of the backward, or
    `recompute`) gets a copy of the chain before its first backward use,
    tagged as that use; the backward reads the copy. So the forward's
    gathered weight lives only through the forward and the backward's
    only through the backward, as ZeRO-3 (DeepSpeed, FSDP) gathers twice:
    the memory plan holds one layer's whole weights at a time, not every
    layer's from the forward to the backward. Runs at `zero-stage=3`.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def EarlyGradientShardsPass : Pass<"pf-early-gradient-shards", "::mlir::ModuleOp"> {
  let summary = "ZeRO-2/3: each gradient is reduce-scattered into its shard as soon as it is complete";
  let description = [{
    Autodiff accumulates every gradient into its buffer after the whole
    backward; with the buffer sharded (ZeRO-2 and 3) that keeps each
    layer's whole gradient alive until then, the memory ZeRO-2 means to
    save. After `pf-lower-boxing`, each backward write of a gradient buffer
    (`pf.grad_of`) moves, with the ops only it needs (the buffer's read,
    the gradient's reduce-scatter, the add), to just after the last value
    they take from elsewhere (the gradient's GEMM), unless another op
    between reads or writes the buffer. The memory plan then frees each
    whole gradient as soon as its shard is taken, as DeepSpeed's
    reduce-scatter hooks do. Runs at `zero-stage` 2 and 3.

    With `low-precision-only` (the compile pipelines below ZeRO-2), only
    the accumulations of gradients cast up from bf16 or f16 move: under
    mixed precision each micro-batch's weight gradient is cast to f32 and
    added to its sum, and left where autodiff put it every micro-batch's
    whole f32 gradient lived until the end of its backward (in f32 the
    accumulation folds into the weight-gradient GEMM where it is).
  }];
  let options = [
    Option<"lowPrecisionOnly", "low-precision-only", "bool", "false",
           "move only the accumulations of gradients cast from bf16/f16">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def ForwardGradBuffersPass : Pass<"pf-forward-grad-buffers", "::mlir::ModuleOp"> {
  let summary = "keeps accumulated gradients in values instead of buffers";
  let description = [{
    On each rank's final straight-line step (after `pf-apply-schedule`):
    a gradient buffer (`pf.grad_of`, zero-initialised, reset to a zero
    splat at the end of the step) is forwarded: the step's first read is
    zeros, so `add(read, g)` becomes `g`; later reads take the last value
    written; then every write is dead and the buffer goes. A buffer whose
    use does not fit this pattern is left unchanged.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def BucketGradientsPass : Pass<"pf-bucket-gradients", "::mlir::ModuleOp"> {
  let summary = "one all-reduce per bucket of gradients instead of one per parameter";
  let description = [{
    On each rank's final step (after `pf-forward-grad-buffers`): the
    update's gradient all-reduces (`pf.all_reduce` with `pf.phase =
    "update"`) that follow each other with no other communication between
    them, over the same groups and element type, are cut in program order
    into buckets of at most `bucket-bytes` (a gradient larger than that is
    a bucket of its own). A bucket of two or more becomes one all-reduce of
    the gradients flattened and concatenated, placed where the bucket's
    first all-reduce was, and each gradient its slice of the result: one
    collective's latency per bucket instead of one per parameter, as
    PyTorch DDP's buckets, but planned at compile time, so every member of
    a group forms the same buckets (`pf-verify-comm` checks it). The sums
    are the same element by element. `bucket-bytes=0` leaves the step as
    it is.

    With `overlap`, each bucket's all-reduce (a lone gradient's too) is
    split: the `pf.all_reduce`, marked `pf.async_slot = k`, moves to right
    after the op computing the bucket's last gradient (the backward of
    earlier layers then runs while the sum travels), and a
    `pf.all_reduce_wait` (slot k) at the bucket's old place hands the sum
    to the update. A bias gradient (an axis-0 `pf.reduce_sum` of a 2-D
    float32 dZ) counts as computed with its weight gradient's GEMM
    (`pf.matmul` dZ^T X, later in the block): the lowering computes both
    in that one GEMM (BGRADB) only if nothing reads the bias gradient
    before it. Buckets ready at one op start in slot order. The GPU
    pipeline turns it on (NCCL runs the sum on a stream of its own); on
    CPU ranks MPI would progress it only inside MPI calls, so the CPU
    pipeline leaves it off. Slots run out after 64 buckets; later buckets
    stay blocking.

    ```mlir
    %a = pf.all_reduce %ga {groups = [array<i64: 0, 1>], pf.phase = "update"} : ...
    %b = pf.all_reduce %gb {groups = [array<i64: 0, 1>], pf.phase = "update"} : ...
    // becomes
    %fa = pf.reshape %ga ...   %fb = pf.reshape %gb ...
    %c = pf.concat %fa, %fb {axis = 0 : i64} ...
    %r = pf.all_reduce %c {groups = [array<i64: 0, 1>], pf.phase = "update"} : ...
    %a = pf.reshape (pf.slice %r [0, |a|)) ...   %b = ...
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25 << 20",
           "largest bucket in bytes (0: one all-reduce per gradient)">,
    Option<"overlap", "overlap", "bool", "false",
           "start each bucket's all-reduce right after its last gradient is "
           "computed and wait for it at the update">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def OverlapCollectivesPass : Pass<"pf-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "splits blocking collectives into start and wait around the work that does not need them";
  let description = [{
    On each rank's final step (after `pf-bucket-gradients` and
    `pf-widen-low-precision`, before the fold passes): each blocking
    `pf.all_reduce`, `pf.all_gather` and `pf.reduce_scatter` (tensor
    parallelism's, sequence parallelism's, ZeRO-2/3's) whose result is not
    needed at once becomes its start (`pf.async_slot = k`:
    `pfrt_all_reduce_start`, `pfrt_box_all_gather_start`,
    `pfrt_box_reduce_scatter_start`) and a `pf.all_reduce_wait` (slot k),
    so that the compute between the two runs while it travels: on GPU
    ranks NCCL runs it on the split collectives' stream, forked from the
    compute stream and joined back by events, inside the step's CUDA graph.
    Megatron-LM's overlap of a tensor-parallel layer's input-gradient
    all-reduce with its weight-gradient GEMM falls out of it.

    - The start moves up to right after the op defining its input (a
      `pf.read_param` defining it moves up with it, past no op with side
      effects but other reads: ZeRO-3's parameter gathers), never above a
      communicating op (a collective, a wait, a send or receive, an
      op with collectives inside such as the vocabulary-parallel
      cross-entropy, a call): every member issues its collectives in the
      same order as before (`pf-verify-comm` checks the job).
    - The wait goes right before the first user of the result, or before
      the next communicating op if that comes first. So no other collective
      is issued while one split here is in flight, and at most one of them
      is in flight at a time (gradient buckets' may be too). Memory: one
      collective's result and input live from the start instead of from
      its old place, at most one at a time (ZeRO-3's next parameter gather
      is prefetched one collective ahead, no further); the memory plan is
      made on the final order, so it counts them.
    - Where only views would lie between the two, the side-effect-free ops
      after the wait that do not depend on the result (transitively) move
      up before it, in order, up to the first op with side effects,
      communicating op or op with regions, and at most one GEMM-like op
      (matmul, attention, convolution) or 32 ops. Ops with side effects
      never move.
    - A collective whose result is used at once with nothing to move stays
      blocking, and so does one for which no slot in [0, `slots`) is free
      over its span (the buckets' slots counted).

    The GPU pipeline runs it (`overlap-collectives=auto|on|off`); on CPU
    ranks MPI progresses a nonblocking collective only inside MPI calls, so
    the CPU pipeline leaves it off, as it does `overlap-gradients`.

    ```mlir
    %dx = pf.matmul %dy, %w ...                // input gradient (partial)
    %dw = pf.matmul %x, %dy {transpose_a} ...  // weight gradient
    %s = pf.all_reduce %dx {groups = [array<i64: 0, 1>]} ...
    %u = pf.add %s, %r ...
    // becomes
    %dx = pf.matmul %dy, %w ...
    %s = pf.all_reduce %dx {groups = [array<i64: 0, 1>], pf.async_slot = 0 : i64} ...
    %dw = pf.matmul %x, %dy {transpose_a} ...
    %w0 = pf.all_reduce_wait %s, %dx {slot = 0 : i64} ...
    %u = pf.add %w0, %r ...
    ```
  }];
  let options = [
    Option<"slots", "slots", "int64_t", "64",
           "slots it may use, [0, 64] (the runtime's PFRT_MAX_ASYNC_SLOTS)">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

#endif // PF_DIALECT_PF_TRANSFORMS_COMMPASSDEFS_TD
