//===- PFBase.td - PipeFlow dialect definition -------------*- tablegen -*-===//
//
// The `pf` dialect: global tensors (logical shape + placement + SBP), the nn
// ops of a training step, their backward and optimizer ops, layout changes
// and, after partitioning, explicit communication.
//
//===----------------------------------------------------------------------===//

#ifndef PF_DIALECT_PF_IR_PFBASE_TD
#define PF_DIALECT_PF_IR_PFBASE_TD

include "mlir/IR/OpBase.td"

def PF_Dialect : Dialect {
  let name = "pf";
  let cppNamespace = "::mlir::pf";
  let summary = "PipeFlow: global tensors, SBP layouts and pipeline stages";
  let description = [{
    The `pf` dialect describes one training step of a model written against
    *global tensors*, as in OneFlow's global view. A global tensor has a
    logical shape, a **placement** (which ranks hold it, as a 1-D list or an
    n-D hierarchy) and an **SBP** signature with one entry per hierarchy
    dimension: `S(k)` splits logical axis `k` over that dimension's ranks, `B`
    broadcasts (every rank holds the whole tensor) and `P` is a partial sum
    (the logical value is the sum of the ranks' values).

    ```mlir
    #P01 = #pf.placement<"cpu", [0, 1]>
    !X = !pf.global<16x784xf32, #P01, #pf.sbp<[S(0)]>>
    %y = pf.to_global %x : !X -> !pf.global<16x784xf32, #P01, #pf.sbp<[B]>>
    ```

    Ops carry their pipeline stage in the discardable attribute
    `pf.stage = <int>` and, when the user asks for activation checkpointing,
    the unit attribute `pf.checkpoint` (`pf.checkpoint_selective` for
    selective checkpointing, which `pf-selective-checkpoint` resolves); the
    passes record what they decide in further `pf.*` discardable
    attributes, each declared on the dialect with a typed C++ helper
    (`PFDialect::StageAttrHelper`, ...).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasCanonicalizer = 0;
  // The discardable attributes every pass agrees on. Each generates a
  // typed helper, e.g. `PFDialect::StageAttrHelper` (getNameStr(), getName(),
  // getAttr(op), setAttr(op, value), isAttrPresent(op), removeAttr(op));
  // PFDialect::verifyOperationAttribute checks their values and owners.
  let discardableAttrs = (ins
    // `pf.stage = s`: the pipeline stage an op (or a pf-split-stages
    // function) works for; non-negative. The front end, pf-auto-stages or
    // pf-assign-stages set it; later passes copy it onto what they create.
    "::mlir::IntegerAttr":$stage,
    // `pf.checkpoint`: recompute this forward op in the backward pass
    // instead of keeping its result (activation checkpointing).
    "::mlir::UnitAttr":$checkpoint,
    // `pf.checkpoint_selective`: the op's module asked for selective
    // checkpointing (Megatron-LM's); pf-selective-checkpoint marks the ops
    // of its core attention `pf.checkpoint` and drops this mark everywhere.
    "::mlir::UnitAttr":$checkpoint_selective,
    // `pf.autocast = "bf16" | "f16" | "f32"`: the type pf-autocast gives
    // this op (the front end's `with flow.autocast(...)`; "f32": none).
    "::mlir::StringAttr":$autocast,
    // `pf.phase = "..."`: the part of a training step an op belongs to:
    // forward (the default when absent), backward_input, backward_weight,
    // recompute or update (pf-autodiff, pf-optimizer).
    "::mlir::StringAttr":$phase,
    // `pf.microbatch = k`: the micro-batch an op works on (pf-microbatch).
    "::mlir::IntegerAttr":$microbatch,
    // `pf.microbatch_template = m` on a func.func: its ops marked
    // `pf.microbatch = 0` stand for m micro-batches (pf-microbatch{template});
    // pf-unroll-microbatches makes the other m - 1 copies.
    "::mlir::IntegerAttr":$microbatch_template,
    // `pf.grad_of = @p` on a gradient-buffer pf.param: the parameter whose
    // gradient it accumulates (pf-autodiff; pf-optimizer consumes it).
    "::mlir::FlatSymbolRefAttr":$grad_of,
    // `pf.optimizer = {...}` on a pf.param: its own update rule (kind, lr
    // scalar, hyper-parameters), overriding pf-optimizer's options.
    "::mlir::DictionaryAttr":$optimizer,
    // `pf.sbp_operands = [...]`: the layout each operand needs, one #pf.sbp
    // per operand (pf-infer-sbp; pf-insert-boxing consumes and drops it).
    "::mlir::ArrayAttr":$sbp_operands,
    // `pf.rank = r` on a per-rank module (pf-partition-ranks).
    "::mlir::IntegerAttr":$rank,
    // `pf.world_size = n` on the module holding the per-rank modules.
    "::mlir::IntegerAttr":$world_size,
    // `pf.logical_shape` on a per-rank pf.param or pf.dropout: the logical
    // (global) shape of the tensor whose shard it holds; also an argument
    // attribute of a per-rank step input.
    "::mlir::DenseI64ArrayAttr":$logical_shape,
    // `pf.shard_offset` on a per-rank pf.param or pf.dropout: where its
    // shard starts in the logical tensor (initialisers, dropout masks).
    "::mlir::DenseI64ArrayAttr":$shard_offset,
    // `pf.shard_groups = [axis, g, stride]` on a per-rank pf.param under a
    // grouped split S(axis, g): its shard is g equal parts one after the
    // other (contiguous in memory), part k at shard_offset + k * stride
    // along axis.
    "::mlir::DenseI64ArrayAttr":$shard_groups,
    // `pf.zero_init` on a per-rank pf.param: this rank holds zeros of a
    // partial sum instead of the initialiser's values.
    "::mlir::UnitAttr":$zero_init,
    // `pf.batch_split = n` on a per-rank cross-entropy (or its gradient):
    // its local mean covers 1/n of the batch rows.
    "::mlir::IntegerAttr":$batch_split,
    // `pf.vocab_group = [ranks]` on a per-rank cross-entropy (or its
    // gradient) whose logits are split by class: the ranks holding the other
    // column blocks of the same rows (this rank's block starts at
    // `pf.shard_offset[1]` of `pf.logical_shape`); the rows' maxima and sums
    // of exponentials are all-reduced within them.
    "::mlir::DenseI64ArrayAttr":$vocab_group,
    // `pf.async_slot = k` on a per-rank pf.all_reduce: it only starts there
    // (pfrt_all_reduce_start, slot k); pf.all_reduce_wait with slot k ends
    // it (pf-bucket-gradients{overlap}).
    "::mlir::IntegerAttr":$async_slot,
    // `pf.loss_replica` on a per-rank step: the loss it returns is a
    // replica, not the one the host reports.
    "::mlir::UnitAttr":$loss_replica,
    // `pf.stage_function` on a func.func that pf-split-stages outlined
    // (pf-inline-stages inlines exactly these).
    "::mlir::UnitAttr":$stage_function,
    // Argument attributes of a per-rank step's inputs (pf-partition-ranks):
    // `pf.input = i`, the input's position in the global signature;
    "::mlir::IntegerAttr":$input,
    // `pf.boxes`, the offsets in the logical input of the boxes this rank
    // reads (one per micro-batch when the batch is split);
    "::mlir::ArrayAttr":$boxes,
    // `pf.box_shape`, the shape of one such box;
    "::mlir::DenseI64ArrayAttr":$box_shape,
    // `pf.zero_input`, the rank holds zeros of a partial-sum input.
    "::mlir::UnitAttr":$zero_input,
    // Result attributes of a per-rank step (pf-partition-ranks): `pf.output
    // = i`, the result's position in the global signature;
    "::mlir::IntegerAttr":$output,
    // `pf.global_type`, its global type (placement, SBP, logical shape).
    "::mlir::TypeAttr":$global_type,
    // The fusion and buffer decisions of a rank's step, set by the fold
    // passes (lib/Conversion/Fusion) and read by the rank lowering; see
    // lib/Conversion/Common/FoldAttributes.cpp for what each means.
    // `pf.fold = "kind"`: an op computed by another (bias_relu, gemm_bias,
    // gemm_bias_relu, gemm_accumulate, softmax_prologue,
    // softmax_grad_scale) or never computed (strided_view, strided_concat);
    "::mlir::StringAttr":$fold,
    // `pf.fold_operand = i` on a gemm_accumulate add: the product operand;
    "::mlir::IntegerAttr":$fold_operand,
    // `pf.copy_read` on a read_param that copies its parameter;
    "::mlir::UnitAttr":$copy_read,
    // `pf.in_place = ["p", ""]` on an optimizer update: the parameter or
    // state each result is computed into ("" for none);
    "::mlir::ArrayAttr":$in_place,
    // `pf.load_by_parts`, an argument attribute: loaded per micro-batch;
    "::mlir::UnitAttr":$load_by_parts,
    // `pf.bias_grad_pair = n`: a matmul and reduce_sum as one BGRADB GEMM;
    "::mlir::IntegerAttr":$bias_grad_pair,
    // `pf.cudnn_attention = "bf16"` on an attention op of a GPU rank: given
    // to cuDNN's fused flash attention ("bf16"/"f16"), or "kernel: <why>"
    // (pf-select-cudnn-attention);
    "::mlir::StringAttr":$cudnn_attention,
    // `pf.typed_gemm = "bf16->f32"` on a matmul: a typed GEMM on its
    // bf16/f16 operands, result of their type or f32
    // (pf-widen-low-precision{keep-gemms});
    "::mlir::StringAttr":$typed_gemm,
    // `pf.kernel_group = n`: element-wise ops of one generated kernel;
    "::mlir::IntegerAttr":$kernel_group,
    // `pf.update_group = n`: optimizer updates of one multi-tensor call;
    "::mlir::IntegerAttr":$update_group,
    // `pf.strided_a` / `pf.strided_b = array<i64: views, offset, strides...>`
    // on a matmul: the operand read through strides from the buffer that
    // `views` view ops up from it start from;
    "::mlir::DenseI64ArrayAttr":$strided_a,
    "::mlir::DenseI64ArrayAttr":$strided_b,
    // `pf.strided_result = array<i64: offset, strides...>` on a matmul: its
    // result written through strides into its views' (or concat's) buffer.
    "::mlir::DenseI64ArrayAttr":$strided_result
  );
  let extraClassDeclaration = [{
  private:
    void registerAttributes();
    void registerTypes();
  public:
  }];
}

class PF_Op<string mnemonic, list<Trait> traits = []>
    : Op<PF_Dialect, mnemonic, traits>;

#endif // PF_DIALECT_PF_IR_PFBASE_TD
