//===- Passes.td - PipeFlow passes -------------------------*- tablegen -*-===//

#ifndef PF_DIALECT_PF_TRANSFORMS_PASSES_TD
#define PF_DIALECT_PF_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// Options of an enum of PFEnums.td take its spellings from the .td through
// ::mlir::pf::enumOptionValues (PassOptions.h).

// pf-schedule's and pf-verify-schedule's report costs.
defvar PF_ScheduleCostsOption =
    Option<"costs", "costs", "::mlir::pf::ScheduleCosts",
           "::mlir::pf::ScheduleCosts::Unit",
           "report costs: unit (F = B = W = 1) or flops (per-stage FLOPs of "
           "the program's ops)",
           "::mlir::pf::enumOptionValues<::mlir::pf::ScheduleCosts>()">;

def AssignStagesPass : Pass<"pf-assign-stages", "::mlir::ModuleOp"> {
  let summary = "completes and checks the pipeline-stage assignment";
  let description = [{
    On the forward program: an op without `pf.stage` takes the latest stage
    of the values it reads; an op that reads none (a parameter read, a
    constant) takes the earliest stage of its users. Layout changes
    (`pf.to_global`) stay stage-less: they are the boundaries. Errors, each
    located: a value that flows from a later stage back to an earlier one,
    a stage whose ops sit on more than one placement, and an empty stage
    (stage ids must be 0..S-1).
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def AutoStagesPass : Pass<"pf-auto-stages", "::mlir::ModuleOp"> {
  let summary = "cuts an unstaged program into balanced pipeline stages";
  let description = [{
    For a forward program on one placement without `pf.stage`: cuts its
    compute ops, in program order, into `num-stages` x `num-chunks`
    contiguous stages minimising the largest stage's cost (exact: binary
    search on the optimum and a dynamic program that, among optimal cuts,
    picks the one carrying the fewest activation bytes). Costs (`balance`):
    `flops` (forward + input- and weight-gradient FLOPs), `params` (parameter
    bytes) or `memory` (parameter and gradient bytes plus the activations an
    op keeps for its backward). Virtual stage g runs on pipeline rank
    g mod num-stages, whose placement is the program's layout shifted to
    ranks r*W .. r*W + W - 1. Parameter reads and constants join their
    first consumer's stage, inputs the stage of their first use, and values
    that cross stages get a `pf.to_global` keeping their SBP. `report`
    prints the cut and every stage's cost.
  }];
  let options = [
    Option<"numStages", "num-stages", "int64_t", "2", "pipeline ranks">,
    Option<"numChunks", "num-chunks", "int64_t", "1",
           "virtual chunks per rank (interleaved 1F1B)">,
    Option<"balance", "balance", "::mlir::pf::StageBalance",
           "::mlir::pf::StageBalance::Flops", "flops, params or memory",
           "::mlir::pf::enumOptionValues<::mlir::pf::StageBalance>()">,
    Option<"report", "report", "bool", "false",
           "print the chosen cut and each stage's cost">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def AutocastPass : Pass<"pf-autocast", "::mlir::ModuleOp"> {
  let summary = "mixed precision: GEMMs in bf16 or f16, the rest as torch's autocast";
  let description = [{
    Rewrites the forward program, before `pf-autodiff`, as torch's and
    OneFlow's autocast do. With `dtype=bf16|f16`, every op is converted;
    with `dtype=none` only the ops that carry the discardable attribute
    `pf.autocast = "bf16"|"f16"` (the front end's `with flow.autocast(...)`;
    `"f32"` keeps an op out of a global autocast):

    - GEMMs (`pf.matmul`, `pf.conv2d`): float operands are `pf.cast` to the
      low type, the results are low;
    - float32 ops (`pf.softmax` and log-softmax, `pf.softmax_cross_entropy`,
      `pf.layer_norm`, `pf.batch_norm`, `pf.reduce_sum`,
      `pf.global_avg_pool`): low operands are cast back to f32;
    - element-wise and layout ops (add, sub, mul, div, bias_add, relu,
      activation, mul_scalar, dropout, masked_fill, where, reshape,
      flatten, transpose, broadcast_to, slice, pad, concat, pools,
      to_global) follow their float operands: all of one low type gives
      that type, a mix is computed in f32 (the low operands cast); GEMMs
      and float32 ops outside the converted set follow their operands too;
    - any other op (and the function's results) gets its operands back in
      the type they had, so the function's signature is unchanged.

    Result types are inferred again from the new operands (the SBP a result
    had is kept). A value is cast once per type, right after its
    definition, so a parameter read by two GEMMs has one `pf.cast`.
    pf-autodiff then differentiates through the casts (the gradient of a
    float-to-float cast is the cast back), so parameters, their gradients
    and the optimizer's states stay float32 (master weights).

    ```mlir
    // pf-opt --pf-autocast="dtype=bf16"
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "::mlir::pf::AutocastDtype",
           "::mlir::pf::AutocastDtype::None",
           "low-precision type of every GEMM: bf16, f16 or none (only ops "
           "marked pf.autocast)",
           "::mlir::pf::enumOptionValues<::mlir::pf::AutocastDtype>()">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def AutodiffPass : Pass<"pf-autodiff", "::mlir::ModuleOp"> {
  let summary = "builds the reverse-mode gradient of a loss w.r.t. every parameter";
  let description = [{
    For every function whose first result is a scalar float loss, appends the
    backward pass before its return: gradients flow from `1/m` (with `m`
    accumulation steps, so that summing the micro-batch gradients gives the
    gradient of the mean loss) through each op's gradient rule
    (`AutodiffOpInterface`). Each trainable parameter gets a gradient buffer
    `@<name>.grad` (`pf.grad_of = @<name>`, zero-initialised) to which the
    step adds its gradient; `pf-optimizer` consumes and clears it.

    Backward ops take their forward op's `pf.stage` and a `pf.phase`:
    `backward_input` for work on the path to activation gradients ("B"),
    `backward_weight` for work that only feeds parameter gradients ("W"),
    `recompute` for forward ops marked `pf.checkpoint` that are recomputed
    instead of kept.

    ```mlir
    // pf-opt --pf-autodiff="accumulation-steps=2"
    ```
  }];
  let options = [
    Option<"accumulationSteps", "accumulation-steps", "int64_t", "1",
           "micro-batches per step: the loss gradient is seeded with 1/m">,
    Option<"wrtInputs", "wrt-inputs", "bool", "false",
           "also return the gradients w.r.t. the function's inputs">,
    Option<"lossScale", "loss-scale", "std::string", "\"\"",
           "loss scaling: the seed is multiplied by this run-time scalar "
           "(pf.scalar_input); empty: none">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def OptimizerPass : Pass<"pf-optimizer", "::mlir::ModuleOp"> {
  let summary = "appends the parameter updates of SGD, Adam or AdamW";
  let description = [{
    After `pf-autodiff`: for every gradient buffer, reads the parameter and
    its gradient, applies the update (phase `update`, on the parameter's
    stage), writes the parameter and the optimizer state back and clears the
    gradient buffer. Optimizer state (momentum buffers, Adam moments) are
    `buffer` parameters with their parameter's type and layout. The learning
    rate (`"lr"`) and the 1-based step count (`"step"`) are run-time scalars
    (`pf.scalar_input`), so learning-rate schedules need no recompile.

    Options (declared once, with the training pipelines', by
    `OptimizerOptionsT` in PassOptions.h; the pipelines spell `kind` as
    `optimizer`): `kind` (sgd, adam or adamw; default sgd), `momentum`,
    `dampening`, `nesterov` (SGD), `weight-decay` (default 0, 0.01 for
    AdamW), `beta1`, `beta2`, `eps`, `bias-correction` (Adam, AdamW). A
    parameter's `pf.optimizer` dictionary overrides them for that parameter.

    ZeRO (`zero-stage`, `zero-min-size`): on every hierarchy axis where a
    parameter of at least `zero-min-size` elements is replicated (B, a
    data-parallel axis), stage 1 gives its optimizer states a split S(k)
    (k the first tensor axis that divides among the axis's ranks), stage 2
    its gradient buffer too, stage 3 the parameter too. SBP inference then
    updates each shard where it lives: the gradient is reduce-scattered
    instead of all-reduced and the updated parameter all-gathered (stages
    1 and 2), or gathered where the forward and backward read it (stage 3).

    Gradient clipping by global norm: the parameters whose `pf.optimizer`
    has `clip_max_norm` (and a `clip_group` number) form clipping groups;
    each member's gradient is squared and summed (`pf.mul`,
    `pf.reduce_sum`, reduced across ranks by SBP inference), the sums meet
    on the first member's placement (unstaged `pf.to_global` moves between
    stages), `pf.clip_scale` makes `min(1, max_norm / (norm + 1e-6))` there,
    and `pf.scale_by` multiplies every member's gradient by it before its
    update, as `torch.nn.utils.clip_grad_norm_`.

    ```mlir
    // pf-opt --pf-optimizer="kind=adamw beta2=0.99"
    ```
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def MicrobatchPass : Pass<"pf-microbatch", "::mlir::ModuleOp"> {
  let summary = "splits a training step into micro-batches (gradient accumulation)";
  let description = [{
    After `pf-training-pipeline` with `accumulation-steps=m` (which seeds
    the loss gradient with `1/m`): splits axis 0 of every input into `m`
    micro-batches (`pf.microbatch`; a batch that does not divide is an
    error), repeats the forward and backward work once per micro-batch
    (`pf.microbatch = k` on each copy) so that the gradient buffers
    accumulate the sum of the micro-batch gradients, runs the update once
    after the last micro-batch, and returns the loss packed over
    micro-batches with shape `[m]` (`pf.pack`), as OneFlow does; every
    other result of the forward or backward pass comes back the same way,
    stacked along a new axis 0 (`[m, *shape]`).

    The copies are laid out in GPipe order (every micro-batch's forward,
    then every micro-batch's backward), which each rank's program follows
    after `pf-partition-ranks`.

    With `template`, the function keeps one micro-batch's copy
    (`pf.microbatch = 0`, `pf.microbatch_template = m` on the function, the
    packs taking that copy's value m times): the passes up to
    `pf-partition-ranks` then work on one micro-batch instead of m, and
    `pf-unroll-microbatches` makes the other copies in each rank's program.
    The compile pipelines do this, so their time up to the rank programs
    does not grow with the number of micro-batches.
  }];
  let options = [
    Option<"numMicrobatches", "num-microbatches", "int64_t", "1",
           "micro-batches per step">,
    Option<"keepTemplate", "template", "bool", "false",
           "keep one micro-batch's copy for pf-unroll-microbatches">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def UnrollMicrobatchesPass : Pass<"pf-unroll-microbatches", "::mlir::ModuleOp"> {
  let summary = "makes every micro-batch's copy of a pf-microbatch template";
  let description = [{
    For every function marked `pf.microbatch_template = m` (by
    `pf-microbatch{template}`), in the module or in its per-rank modules:
    copies the ops of micro-batch 0 (those marked `pf.microbatch`, and every
    op using one's result) for micro-batches 1 to m - 1 (`pf.microbatch =
    k`, `pf.microbatch` index k), forward copies after the last marked
    forward op and backward copies after the last marked backward op (GPipe
    order; an unmarked op after those points, such as a layout change
    feeding the pack, is copied where it is), and gives each gathering
    `pf.pack` micro-batch k's value as operand k. An unmarked transfer,
    rooted collective or op with effects that uses a copied value is an
    error (its peer's half might not be copied). Sends and
    receives get distinct tags: micro-batch k's transfer t takes tag
    `k * n + t`, where n is one more than the module's largest tag, and the
    transfers outside the micro-batches take `m * n + t`, the same on every
    rank. A micro-batch's value used anywhere else (the update, the return)
    is an error.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def SchedulePass : Pass<"pf-schedule", "::mlir::ModuleOp"> {
  let summary = "builds a static pipeline schedule and checks it";
  let description = [{
    Builds each pipeline rank's ordered actions (`pf.schedule`) for GPipe,
    1F1B (Megatron-LM's warm-up of p - r - 1 forwards, steady state,
    cool-down), interleaved 1F1B with `num-chunks` virtual chunks (the
    micro-batch count must be a multiple of the stage count) or ZB-H1
    (weight-gradient work placed in the bubbles, at 1F1B's activation
    memory), simulates it with unit costs (F = B = W = 1) to prove it free of
    deadlock, and with `report` prints each rank's actions, the predicted
    bubble (fraction of the step, and idle time per rank) and the peak number
    of in-flight micro-batches per rank. With `costs=flops` the prediction
    uses every stage's forward, input-gradient and weight-gradient FLOPs
    (CostModel.h) and the report adds each stage's activation bytes per
    micro-batch and every rank's peak activation bytes.

    The stage and micro-batch counts come from the program (`pf.stage`,
    `pf.microbatch`) unless given as options.
  }];
  let options = [
    Option<"kind", "kind", "::mlir::pf::ScheduleKind",
           "::mlir::pf::ScheduleKind::OneFOneB",
           "gpipe, 1f1b, interleaved-1f1b or zb-h1",
           "::mlir::pf::enumOptionValues<::mlir::pf::ScheduleKind>("
           "{::mlir::pf::ScheduleKind::None})">,
    Option<"numChunks", "num-chunks", "int64_t", "1",
           "virtual chunks per rank (interleaved-1f1b)">,
    Option<"numStages", "num-stages", "int64_t", "0",
           "pipeline ranks (0: from the program's pf.stage)">,
    Option<"numMicrobatches", "num-microbatches", "int64_t", "0",
           "micro-batches (0: from the program's pf.microbatch)">,
    Option<"report", "report", "bool", "false",
           "print the schedule report (pf-schedule-report)">,
    PF_ScheduleCostsOption
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def VerifySchedulePass : Pass<"pf-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "simulates every pf.schedule and rejects one that deadlocks";
  let description = [{
    Runs each rank's action list of every `pf.schedule` (hand-written or
    built) with receive-blocking point-to-point semantics; a schedule in
    which no rank can go on is a located error naming the ranks, the
    actions and the micro-batches they wait for.
  }];
  let options = [
    Option<"report", "report", "bool", "false", "print the schedule report">,
    PF_ScheduleCostsOption
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def ApplySchedulePass : Pass<"pf-apply-schedule", "::mlir::ModuleOp"> {
  let summary = "orders each rank's program by the module's pf.schedule";
  let description = [{
    After `pf-partition-ranks` and `pf-schedule`: groups each per-rank
    step's ops into actions (forward `F`, input-gradient `B`, weight-gradient
    `W` work of micro-batch `pf.microbatch` on chunk `pf.stage / p`) and lays
    the actions out in the rank's scheduled order, between the step's
    prologue and its update. Stage `s` must live on pipeline rank `s mod p`.
    An order that would use a value before it is computed is an error.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

include "pf/Dialect/PF/Transforms/CommPassDefs.td"

def SplitStagesPass : Pass<"pf-split-stages", "::mlir::ModuleOp"> {
  let summary = "makes every scheduled action of a stage a function";
  let description = [{
    On each rank's step in its final order (after `pf-apply-schedule`): the
    ops of each action become a private function `@stage<s>_forward_mb<k>`,
    `@stage<s>_backward_input_mb<k>`, `@stage<s>_backward_weight_mb<k>`
    (apart when the schedule splits W, as ZB-H1 does) or `@stage<s>_update`,
    tagged with its stage, phase and micro-batch; the step calls them in the
    schedule's order. Values crossing actions are arguments and results;
    values crossing stages are the static-shape send/recv pairs (carrying
    their layout) that `pf-partition-ranks` made. `pf-inline-stages` undoes
    it for the CPU lowering.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect", "::mlir::func::FuncDialect"];
}

def InlineStagesPass : Pass<"pf-inline-stages", "::mlir::ModuleOp"> {
  let summary = "inlines pf-split-stages' functions back into the step";
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def DecomposeLossesPass : Pass<"pf-decompose-losses", "::mlir::ModuleOp"> {
  let summary = "writes a mean cross-entropy with ignore_index as sum / count";
  let description = [{
    `pf.softmax_cross_entropy {ignore_index}` averages over the rows whose
    label is not ignored. Over a split batch each rank knows only its own
    count, so the op as a whole keeps the batch whole (the logits are
    gathered). This pass rewrites it as
    `pf.div(pf.softmax_cross_entropy {ignore_index, sum}, pf.count_kept)`:
    both are partial sums over a split batch, reduced as two scalars. Run
    before `pf-autodiff` (the gradients then follow the rewritten ops).
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def FuseAttentionPass : Pass<"pf-fuse-attention", "::mlir::ModuleOp"> {
  let summary = "rewrites the unfused attention spelling as pf.attention";
  let description = [{
    nanoGPT without flash attention writes
    `softmax(masked_fill(q @ k^T * s, mask, -inf)) @ v` (optionally with a
    dropout of the probabilities); this pass replaces such a chain by one
    `pf.attention`, whose kernels never store the `[T, S]` scores and whose
    gradient recomputes them.

    It matches, from the final `pf.matmul %p, %v` (rank 4, no transposes):
    an optional `pf.dropout` (its `p` and stream carry over, so the same
    elements drop), a `pf.softmax` over the last axis (not log), optionally
    a `pf.masked_fill` with `-inf` and an `i1` mask or a `pf.add` of a
    rank-4 float mask, an optional `pf.mul_scalar` (the scale), and
    `pf.matmul %q, %k {transpose_b}` or `pf.matmul %q, %kT` with `%kT` a
    `pf.transpose` of `%k` by `[0, 1, 3, 2]`. Every intermediate must have
    no other use (a probability tensor that is also returned or reused stays
    unfused). A `pf.broadcast_to` of the mask is looked through; a constant
    mask that fills the upper triangle becomes `causal`, any other constant
    is inverted (attention keeps keys where its mask holds), and a computed
    one goes through `pf.logical_not`. Discardable attributes (stage,
    checkpointing, autocast) are those of the final matmul.

    Run before `pf-autocast` and `pf-autodiff`; the compile pipelines do
    (option `fuse-attention`, default on).
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def SelectiveCheckpointPass
    : Pass<"pf-selective-checkpoint", "::mlir::ModuleOp"> {
  let summary = "selective activation checkpointing: recompute core attention";
  let description = [{
    Megatron-LM's selective checkpointing: of the ops a module marked
    `pf.checkpoint_selective` (Python: `config.activation_checkpointing =
    "selective"`), only core attention is recomputed in the backward, the
    part whose saved tensors grow with the square of the sequence and that
    costs little to compute again. This pass marks `pf.checkpoint` on

    - every `pf.attention` (its output and log-sum-exp are recomputed from
      q, k and v), and
    - in the unfused spelling, the ops from a batched `pf.matmul` (both
      operands of rank 3 or more: the scores q k^T) along its uses through
      the scale and mask (`pf.mul_scalar`, `pf.mul`, `pf.div`, `pf.add`,
      `pf.masked_fill`, `pf.where`, `pf.cast`) to a `pf.softmax` over the
      last axis, and on through `pf.dropout` (or `pf.cast`) to the batched
      `pf.matmul` that takes the probabilities as its left operand (the
      product with v, which stays unmarked: its backward reads the
      recomputed probabilities and its own output is kept as without
      checkpointing). Each op on the way must carry the selective mark and
      be the one such user of the value before it; a chain that ends
      anywhere else is not attention and stays unmarked. A marked
      `pf.broadcast_to` that expands the mask (or a `pf.where`'s fill
      value) of such an op is marked too: expanding the small mask again
      costs less than keeping its `[B, H, T, S]` elements for the
      recomputed masking.

    Every other op keeps its results (projections, layer norm, the MLP),
    and every `pf.checkpoint_selective` is removed.

    ```mlir
    // before
    %o, %lse = pf.attention %q, %k, %v {scale = 0.125 : f64, causal,
        pf.checkpoint_selective} : (!Q, !K, !V) -> (!O, !L)
    // after
    %o, %lse = pf.attention %q, %k, %v {scale = 0.125 : f64, causal,
        pf.checkpoint} : (!Q, !K, !V) -> (!O, !L)
    ```

    Run after `pf-fuse-attention` and before `pf-autodiff`; the compile
    pipelines do.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def GroupFusedSplitsPass : Pass<"pf-group-fused-splits", "::mlir::ModuleOp"> {
  let summary = "lays out a split fused projection so that its blocks stay split";
  let description = [{
    nanoGPT computes q, k and v with one projection, `c_attn`, and cuts its
    output in three. With the weight column-split over n ranks, S(0), rank r
    holds rows [r 3C/n, (r+1) 3C/n): the cut does not fall on those rows,
    and the blocks would have to be gathered. This pass gives such a weight
    (and its bias) the grouped split S(0, g) instead: rank r holds its part
    of each of the g blocks, which is what g separate column-split
    projections would hold (Megatron stores its fused QKV weight so for the
    same reason). Cutting the output into blocks then moves nothing, and
    their gradients pad back in place. The logical values are unchanged:
    initialisation, checkpoints and `state_dict` see the same tensor.

    It applies to a parameter with a plain split S(a) over more than one
    rank that every read uses as the weight of a `pf.matmul` on its output
    columns (axis a is the product's last axis), optionally through a
    `pf.bias_add` of a parameter split the same way, when all users of the
    product are `pf.slice`s cutting the last axis into equal blocks (the
    other axes whole), g = columns / block >= 2, and each block divides
    over the ranks. Run before `pf-autodiff`, so that gradient buffers and
    optimizer states copy the layout; otherwise a no-op.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def InferSBPPass : Pass<"pf-infer-sbp", "::mlir::ModuleOp"> {
  let summary = "chooses every value's SBP layout by boxing cost";
  let description = [{
    Layouts fixed by the user stay: function inputs, parameters and
    `pf.to_global` targets that carry an SBP, and op results whose type
    already has one (a constraint on the op's signature). Every other value
    gets one in program order: for each op the n-D signatures of
    `SBPOpInterface` (products of 1-D signatures per hierarchy dimension,
    filtered by shape) are priced by the bytes of boxing their operands need
    (DESIGN.md's table) and the cheapest wins; ties go to the earlier
    signature, which the rules order data-parallel first, so "no
    communication, then data parallel" decides.

    Values whose layout nobody fixed take it from their first consumer
    (backward propagation): a parameter, an input or a constant without an
    SBP costs nothing to lay out as the consumer wants; a `pf.to_global`
    without a target SBP is priced by its transfer. What no consumer
    decides becomes B (a cross-placement move keeps its source layout when
    valid). Partial-sum results of the step are returned as B.

    Every op with a signature gets `pf.sbp_operands`, the layouts its
    operands need; `pf-insert-boxing` materialises the differences. An op
    whose fixed result layout no signature produces is a located error
    naming both layouts.

    `sequence-parallel` (Megatron-LM's sequence parallelism, opt-in): the
    price of a signature also counts the activation bytes per rank of its
    results, as a tie-break below the bytes moved (never traded against
    them), and a partial sum reduced into a split of its sequence axis
    (the axis before the last: [batch, sequence, hidden]) is priced as
    the all-reduce it halves, its gather being paid with it. A
    row-parallel GEMM's output is then reduce-scattered along the
    sequence, layer norm, dropout and the residual run on 1/n of the
    tokens, and the next column-parallel GEMM all-gathers them: the same
    bytes as the all-reduce, 1/n of the memory. The backward follows from
    the same prices (its all-gathers become reduce-scatters and vice
    versa; layer norm's parameter gradients become partial sums reduced
    with the other gradients). A program with no partial-sum activation
    (no tensor-parallel axis), or whose row-parallel output's sequence
    axis does not divide over its ranks, is a located error.
  }];
  let options = [
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "keep layer norm, dropout and residual regions split along the "
           "sequence over the tensor-parallel axis (reduce-scatter and "
           "all-gather instead of the all-reduce)">,
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def InsertBoxingPass : Pass<"pf-insert-boxing", "::mlir::ModuleOp"> {
  let summary = "inserts a pf.to_global wherever an operand's layout differs from the one its consumer needs";
  let description = [{
    Reads `pf.sbp_operands` (from `pf-infer-sbp`), parameter layouts (for
    `pf.write_param`) and function result types, inserts the layout changes
    and drops the attribute. Afterwards every op's operand layouts form one
    of its signatures; an op whose layouts do not is a located error.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def LowerBoxingPass : Pass<"pf-lower-boxing", "::mlir::ModuleOp"> {
  let summary = "lowers layout changes to collectives and transfers over explicit rank groups";
  let description = [{
    Each `pf.to_global` between two layouts becomes communication on
    global values:
    - same placement, per hierarchy dimension `d` within the groups along
      `d`: P->B `pf.all_reduce`, P->S(k) `pf.reduce_scatter`, S(i)->B
      `pf.all_gather`, S(i)->S(j) `pf.all_to_all`, B->S(k) `pf.shard`
      (local), B->P `pf.keep_one` (local); S->P goes through B. A layout
      that is the same on the flattened placement ((S0, S0) on 2x2 is S0 on
      4) is changed with one collective over all ranks.
    - another placement: 1->N `pf.broadcast` (B), N->1 `pf.reduce` (P),
      otherwise partial sums are reduced in the source placement and
      `pf.transfer` moves slice intersections (local copies where the
      placements overlap); partial targets are formed after with
      `pf.keep_one`.
    - cpu <-> cuda with the same ranks: `pf.device_copy` after changing the
      layout on the source device.
    A change it cannot lower is a located error naming both layouts.

    With `report`, prints every layout change (kind, groups, bytes per rank
    by DESIGN.md's closed forms) and the step's total to stdout (or to
    `report-file`).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "print the boxing report">,
    Option<"reportFile", "report-file", "std::string", /*default=*/"\"\"",
           "write the report to this file instead of stdout">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def PartitionRanksPass : Pass<"pf-partition-ranks", "::mlir::ModuleOp"> {
  let summary = "splits the global program into one module per rank";
  let description = [{
    Produces, inside the input module, one nested module `@rank<r>`
    (`pf.rank = r`) per world rank, holding that rank's parameters and
    functions with local types: each value lives on the single-rank
    placement `[r]` with SBP `B` (its local data). A layout change that
    moves a value from rank `a` to rank `b` becomes `pf.send` on `a` and
    `pf.recv` on `b`, tagged by its position in the program so every pair
    matches; ops on other ranks' placements are dropped. The outer module
    records `pf.world_size`.

    This version partitions programs whose placements each hold one rank
    (pipeline stages on single ranks, as in the seed program); a placement
    of several ranks is a located error until SBP lowering lands.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def VerifyCommPass : Pass<"pf-verify-comm", "::mlir::ModuleOp"> {
  let summary = "proves every rank's communication matches and cannot deadlock";
  let description = [{
    On the per-rank modules (`pf.rank = r`, one step function each, after
    `pf-partition-ranks` and `pf-apply-schedule`): every rank's sends,
    receives and collectives in program order (pf/Analysis/CommEvents.h)
    are checked across the whole job, and the job is simulated with sends
    buffered, receives blocking until their send ran, and collectives
    blocking until every member of the group entered:

    - every `pf.send` meets exactly one `pf.recv` (same source, destination
      and tag, in order) of the same byte size and element type, and every
      receive has its send;
    - every member of a collective's group enters it as its same ordinal
      on that group, with the same kind, root, element count and type and
      the same group list; all_gather, reduce_scatter and all_to_all sizes
      agree with the group's size;
    - some rank can always advance until all finished: no deadlock.

    A violation is a located error on the offending op, naming both ranks,
    with a note on the other rank's op; the pass fails. The IR is unchanged.
    Runs at the end of `pf-compile-cpu-pipeline`, before the conversion.
    Linear in the number of communication ops (a 1,024-rank 3-D parallel
    job: bench/verify_comm_bench.py).

    ```mlir
    // rank 0 waits for rank 1, which waits for rank 0:
    module @rank0 attributes {pf.rank = 0 : i64} {
      func.func @step(%x: !T) {
        %y = pf.recv from 1 tag 0 : !T  // error: deadlock
        pf.send %x to 1 tag 1 : !T
        return
      }
    }
    module @rank1 attributes {pf.rank = 1 : i64} {
      func.func @step(%x: !T) {
        %y = pf.recv from 0 tag 1 : !T  // note: rank 1 is blocked here
        pf.send %x to 0 tag 0 : !T
        return
      }
    }
    ```
  }];
}

def WidenLowPrecisionPass : Pass<"pf-widen-low-precision", "::mlir::ModuleOp"> {
  let summary = "bf16/f16 storage with float32 arithmetic: ops widened between casts";
  let description = [{
    Rewrites every PF op that reads or makes a bf16 or f16 value into the
    same op on float32 values: a `pf.cast` to f32 of each low-precision
    operand, the op with f32 result types, and a `pf.cast` of each result
    back to its low type. The kernels then compute in float32 and every
    value between ops (the activations the backward keeps) is stored in 2
    bytes; every op works in bf16 and f16 without a kernel of its own.
    Kept as they are: `pf.cast` (the only conversion: round to nearest
    even), `pf.send`/`pf.recv`, `pf.microbatch` and `pf.pack` (their bytes
    move unchanged) and ops of other dialects (the step's results keep
    their type). A bf16/f16 `pf.constant` becomes an f32 constant of the
    same values, which widened ops read directly. A no-op on programs
    without bf16/f16 values. Runs in the compile pipelines on each rank's
    program, before the fold passes; the rank lowerings refuse any other op
    on bf16/f16 values.

    With `keep-gemms` (set by pf-compile-gpu-pipeline; CPU ranks widen
    every op) a `pf.matmul` whose two operands and result are bf16 (or all
    f16) stays unwidened when the last dimension of each (every row of the
    GEMM's A, B and C) is a multiple of 8 elements: convert-pf-to-gpu runs
    it as a typed cuBLASLt GEMM on tensor cores with float32 compute
    (`pfrt_k_matmul_typed`). When only casts to f32 read its result (a
    weight gradient widened for its f32 accumulation buffer, a widened
    consumer) the GEMM makes the f32 result itself and the casts go (its
    float32 output is not rounded to bf16 first). Each such GEMM is marked
    `pf.typed_gemm = "bf16->bf16"` (or `"bf16->f32"`, f16 alike); the
    others (mixed operand types, other shapes) are widened as above.

    ```mlir
    %y = pf.relu %x : (!pf.global<4xbf16, #P, #pf.sbp<[B]>>) -> !pf.global<4xbf16, #P, #pf.sbp<[B]>>
    // becomes
    %0 = pf.cast %x : !pf.global<4xbf16, ...> -> !pf.global<4xf32, ...>
    %1 = pf.relu %0 : (!pf.global<4xf32, ...>) -> !pf.global<4xf32, ...>
    %y = pf.cast %1 : !pf.global<4xf32, ...> -> !pf.global<4xbf16, ...>
    ```
  }];
  let options = [
    Option<"keepGemms", "keep-gemms", "bool", /*default=*/"false",
           "keep bf16/f16 pf.matmul ops with 16-byte rows as typed GEMMs "
           "(GPU ranks)">
  ];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

def SelectCudnnAttentionPass : Pass<"pf-select-cudnn-attention", "::mlir::ModuleOp"> {
  let summary = "GPU ranks: which bf16/f16 attention runs on cuDNN's fused flash attention";
  let description = [{
    Marks each `pf.attention` and `pf.attention_grad` with
    `pf.cudnn_attention`: `"bf16"` or `"f16"` where cuDNN 9's fused flash
    attention takes it (Q, K, V, O, dO and the gradients all of that type,
    head dims multiples of 8 up to 128, no dropout, no mask or an additive
    one whole over `[T, S]` (a bf16/f16 one cast exactly to f32 for
    cuDNN's bias), causal only on whole queries), else `"kernel: <why>"`
    (dropout: cuDNN's draw is not our layout-independent Philox mask;
    float32; a boolean mask; a head dim; a causal query shard). A marked `"bf16"`/`"f16"` op keeps its 2-byte
    operands through `pf-widen-low-precision` and lowers to
    `pfrt_k_attention_typed(_grad)`, whose GPU twins call cuDNN; the others
    are widened and run the float32 flash kernel as on CPU ranks.
    pf-compile-gpu-pipeline runs it before `pf-widen-low-precision`; CPU
    ranks never do.
  }];
  let dependentDialects = ["::mlir::pf::PFDialect"];
}

#endif // PF_DIALECT_PF_TRANSFORMS_PASSES_TD
