//===- Passes.td - PipeFlow conversion passes --------------*- tablegen -*-===//

#ifndef PF_CONVERSION_PASSES_TD
#define PF_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPFToCPUPass : Pass<"convert-pf-to-cpu", "::mlir::ModuleOp"> {
  let summary = "lowers per-rank pf programs to the LLVM dialect over libpfrt";
  let description = [{
    For every per-rank module (`pf.rank`, from `pf-partition-ranks`), or the
    module itself if it carries `pf.rank`: parameters become persistent
    buffers initialised by `pf_init_params(seed)` from their `#pf.init`
    over logical indices; the training step becomes `pf_step(step)`, where
    every value is a buffer from the step's arena and every op a call into
    libpfrt's CPU kernels (GEMMs through OpenBLAS); `pf.send`/`pf.recv`
    become MPI point-to-point calls; inputs are seeded synthetic batches
    (labels sized by the loss that reads them); the loss is reported to the
    runtime. A `main` hands both functions to `pfrt_main`. Shape ops
    (reshape, flatten) alias their input. Every op is wrapped in a trace
    event labelled with its stage and phase (free unless `PF_TRACE` is set).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"reportOutputs", "report-outputs", "bool", /*default=*/"false",
           "an inference step: every result of the step is reported with "
           "pfrt_report_output (its local part on each rank that holds it) "
           "instead of as per-micro-batch losses">,
    Option<"outlineActions", "outline-actions", "bool", /*default=*/"true",
           "make the step a loop over its actions: one function per shape "
           "of (stage, phase, micro-batch) action, constants that differ "
           "between micro-batches read from tables (code size independent "
           "of the micro-batch count)">,
    Option<"generatedKernels", "generated-kernels", "bool", /*default=*/"false",
           "run the element-wise ops (relu, activations and their "
           "gradients, add, mul) through the compiler's generated kernels "
           "(the host twins of the GPU kernels, Kernels/Elementwise.h) "
           "instead of libpfrt's">,
  ];
}

def ConvertPFToGPUPass : Pass<"convert-pf-to-gpu", "::mlir::ModuleOp"> {
  let summary = "lowers per-rank pf programs for one GPU a rank (host side)";
  let description = [{
    The host side of the GPU backend, built on convert-pf-to-cpu's patterns
    (one set of patterns, two targets): every value of a rank whose ops are
    all placed on "cuda" is a buffer of the device arena the static memory
    plan sizes (`pfrt_cuda_arena_plan`, which also picks the rank's GPU:
    local rank mod the node's devices), and every runtime call is the
    device twin of the CPU lowering's call (runtime/include/pfrt/
    pfrt_device.def): GEMMs through cuBLASLt (`pfrt_cuda_k_matmul*` over
    `pfrt_cuda_gemm`, exact float32; the weight-gradient GEMM accumulating
    into its buffer with beta = 1, the bias folded in as cuBLASLt's BIAS
    epilogue), libpfrt's deterministic CUDA kernels for the rest;
    parameters are initialised on the host (bit-identical to a CPU run)
    and copied over; inputs are loaded on the host and copied; losses and
    outputs are copied back when reported; run-time scalars (the learning
    rate) are device mirrors refreshed every step.

    Every runtime function the lowering calls has a device twin today; a
    call of one without (a future row) is a located error naming the op
    and the function, never host code run on device addresses; a value
    placed on "cpu" is an error too. The
    manifest says `backend: cuda`.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
  let options = [
    Option<"reportOutputs", "report-outputs", "bool", /*default=*/"false",
           "an inference step: every result of the step is reported with "
           "pfrt_report_output instead of as per-micro-batch losses">,
    Option<"outlineActions", "outline-actions", "bool", /*default=*/"true",
           "make the step a loop over its actions (as convert-pf-to-cpu)">,
    Option<"generatedKernels", "generated-kernels", "bool", /*default=*/"true",
           "element-wise ops as the compiler's generated kernels, runs of "
           "consecutive ones fused into one (false: libpfrt's device twins "
           "of the CPU kernels, one launch an op)">,
  ];
}

def EmbedGPUKernelsPass : Pass<"pf-embed-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "compiles each GPU rank's generated kernels into the fatbin "
                "its executable carries";
  let description = [{
    After `convert-pf-to-gpu`: every rank module holding a
    `gpu.module @pf_kernels` (or the module itself) goes through the NVVM
    pipeline (`nvvm-attach-target` for `chip` with `features`,
    `convert-gpu-to-nvvm`, `convert-arith-to-llvm`,
    `reconcile-unrealized-casts`, `gpu-module-to-binary` with the CUDA
    toolkit's ptxas, fatbinary and libdevice); the resulting image (by
    default a fatbin of sm_90 SASS and its PTX, so newer GPUs JIT the PTX)
    becomes the rank's `__pf_kernels_image` global, which pf_init_params
    registers with the runtime. The toolkit is `toolkit`, else
    `$PF_CUDA_TOOLKIT`, else the one the build found. A module without
    kernels is left alone; a toolkit without ptxas is an error.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect",
    "::mlir::NVVM::NVVMDialect"
  ];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "the CUDA toolkit's root (ptxas, fatbinary, libdevice)">,
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "the GPU architecture of the SASS">,
    Option<"features", "features", "std::string", /*default=*/"\"+ptx80\"",
           "PTX features (MLIR 22's default PTX 6.0 fails for sm_90)">,
    Option<"format", "format", "std::string", /*default=*/"\"fatbin\"",
           "gpu-module-to-binary's format: fatbin (SASS and PTX), bin "
           "(SASS) or isa (PTX, JIT by the driver)">,
  ];
}

def GPUKernelsPass : Pass<"pf-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "builds the GPU kernels of a program's element-wise ops";
  let description = [{
    The first step of the GPU lowering. For every per-rank module
    (`pf.rank`), or the module itself when there is none: each element-wise
    op (`pf.relu`, `pf.relu_grad`, `pf.activation`, `pf.activation_grad`,
    `pf.add`, `pf.mul`) gets its kernel in the rank's
    `gpu.module @pf_kernels`, one per op and kind: a `gpu.func` with one
    thread per element built from the same description as the CPU
    lowering's generated kernels (`generated-kernels=true`), so CI checks
    its arithmetic on the CPU. The module becomes a GPU container module;
    `nvvm-attach-target`, `convert-gpu-to-nvvm` and `gpu-module-to-binary`
    (with `toolkit=/usr/local/cuda`) turn the kernels into a cubin and PTX.
  }];
  let dependentDialects = [
    "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect",
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::math::MathDialect"
  ];
}

def MemoryReportPass : Pass<"pf-memory-report", "::mlir::ModuleOp"> {
  let summary = "prints each rank's static memory plan and checks it against "
                "the device's memory";
  let description = [{
    After `convert-pf-to-cpu` or `convert-pf-to-gpu` (the end of
    `pf-compile-cpu-pipeline` and `pf-compile-gpu-pipeline`): reads the
    memory plan every rank module carries (`pfrt.memory`, the manifest's
    `memory`) and prints one table on stderr, a line per rank in rank order
    with its parameters, gradients, optimizer states (and running
    statistics), inputs, activations at their peak, the step's buffers at
    their peak and the arena (parameters + gradients + optimizer states +
    step peak), each in bytes and readable; then the step's lower bound of
    the rank with the largest arena by element type. The IR is unchanged.
    The seed MLP's two ranks (each line folded here):

    ```
    pf-memory-report: 2 ranks, bytes (arena = parameters + gradients + ...)
    rank 0: parameters 1607680 (1.53 MiB), gradients 0 (0 bytes), ...,
      arena 3329024 (3.17 MiB)
    rank 1: parameters 1071168 (1.02 MiB), ..., arena 2255040 (2.15 MiB)
    largest: rank 0, arena 3329024 (3.17 MiB); step lower bound 1690624
      (1.61 MiB): f32 1690624 (1.61 MiB)
    ```

    With `device-memory` (bytes; 0: no check) a line says which ranks do not
    fit, each of them is an error at its module naming the rank, the bytes
    it needs, the device's and the largest of the arena's parts, and the
    pass fails. A module without memory plans is an error. `pf-opt
    --memory-report` runs the pass after whatever pipeline the command line
    asks for (`--memory-report-device-memory=<bytes>` sets `device-memory`).
  }];
  let options = [
    Option<"deviceMemory", "device-memory", "int64_t", /*default=*/"0",
           "the device's memory in bytes: a rank whose arena is larger is an "
           "error (0: no check)">,
  ];
}

//===----------------------------------------------------------------------===//
// Fusion and buffer decisions (lib/Conversion/Fusion). Each pass decides one
// kind over every rank's step and records it as attributes of the ops
// (lib/Conversion/Common/FoldAttributes.cpp), which the rank lowering only
// reads. The pipelines pf-cpu-folds and pf-gpu-folds run them in order
// (later ones read the earlier decisions).
//===----------------------------------------------------------------------===//

class FoldPass<string arg, string sum, string desc>
    : Pass<arg, "::mlir::ModuleOp"> {
  let summary = sum;
  let description = desc;
}

def ResetFoldsPass : FoldPass<"pf-reset-folds",
    "drops every recorded fusion and buffer decision", [{
  Removes the attributes the fold passes record (`pf.fold`,
  `pf.kernel_group`, ...), so that a fold pipeline decides everything
  afresh (pf-cpu-folds and pf-gpu-folds start with it).
}]>;

def HoistBiasReadsPass : FoldPass<"pf-hoist-bias-reads",
    "reads a Linear's bias before its GEMM", [{
  A traced Linear reads its bias after its GEMM; reading it just before lets
  the GEMM start from the bias rows (pf-fold-gemm-bias). Only a read between
  the GEMM and its bias_add, of the same stage, micro-batch and phase, with
  no write of the parameter in between, moves: the values read are the same.
}]>;

def PlanInPlacePass : FoldPass<"pf-plan-in-place",
    "marks copying reads and in-place optimizer updates", [{
  A read_param aliases its parameter's buffer unless the parameter is
  written before the read's last use: then it copies (`pf.copy_read`). An
  optimizer update computes each result straight into the buffer its only
  write_param stores it to (`pf.in_place = ["param", ...]`), unless the old
  value is still read after the update or a read between the update and
  the store would see the new value early.
}]>;

def FuseBiasReluPass : FoldPass<"pf-fuse-bias-relu",
    "computes a relu with the bias_add before it", [{
  A bias_add whose only user is a relu computes both in one pass into the
  relu's buffer: the relu gets `pf.fold = "bias_relu"`.
}]>;

def LoadInputsByPartsPass : FoldPass<"pf-load-inputs-by-parts",
    "loads inputs a micro-batch at a time", [{
  An input read only through pf.microbatch slices whose parts are whole
  boxes or even row ranges of one box is loaded one micro-batch at a time
  where each slice is taken (argument attribute `pf.load_by_parts`).
}]>;

def FoldAccumulationPass : FoldPass<"pf-fold-accumulation",
    "folds add(acc, matmul) into the matmul (C += A B)", [{
  In `add(acc, matmul(...))` where the matmul's only user is the add and
  `acc`, a fresh step buffer computed before the matmul, is read by nothing
  else, the matmul adds its product into acc's buffer (beta = 1): the add
  gets `pf.fold = "gemm_accumulate"` and `pf.fold_operand`, the product's
  operand number.
}]>;

def FoldGemmBiasPass : FoldPass<"pf-fold-gemm-bias",
    "computes a bias_add by the GEMM before it", [{
  A bias_add over the last axis of a plain GEMM's only use (not an
  accumulating one) is computed by the GEMM: its bias rows fill C first, or
  cuBLASLt's BIAS epilogue (`pf.fold = "gemm_bias"`). With `relu`, also one
  whose relu is fused (cuBLASLt's RELU_BIAS: the relu gets
  `pf.fold = "gemm_bias_relu"`); without, such a bias_add keeps its fused
  pass (one pass less on a CPU).
}]> {
  let options = [
    Option<"relu", "relu", "bool", /*default=*/"false",
           "also fold a bias_add whose relu is fused (RELU_BIAS epilogue)">,
  ];
}

def FoldBiasGradPass : FoldPass<"pf-fold-bias-grad",
    "computes a bias gradient by the weight-gradient GEMM", [{
  reduce_sum(dZ, axis 0) and matmul(dZ, X, transpose_a) of one action are
  one GEMM with cuBLASLt's BGRADB epilogue, run at the later of the two
  when nothing reads the earlier one's result before it: both get
  `pf.bias_grad_pair = n`.
}]>;

def FoldSoftmaxPass : FoldPass<"pf-fold-softmax",
    "computes the attention scale and mask in the softmax", [{
  A softmax over the last axis computes the masked_fill and mul_scalar
  before it (each its successor's only operand use, one action, no
  parameter written in between) at its own place, reading the mask from a
  broadcast over leading axes without the broadcast: those ops get
  `pf.fold = "softmax_prologue"`. A mul_scalar that is a softmax gradient's
  only user is computed by the gradient's kernel
  (`pf.fold = "softmax_grad_scale"`).
}]>;

def FoldViewsPass : FoldPass<"pf-fold-views",
    "reads and writes GEMM operands through strides", [{
  A plain GEMM operand computed by slices, reshapes and transposes (one of
  them a slice or transpose) is read through strides from the buffer the
  views start from (`pf.strided_a`/`pf.strided_b = array<i64: views,
  offset, strides...>`); a GEMM result read only by a transpose and
  reshapes (perhaps into a concat of such pieces) is written through
  strides into their buffer (`pf.strided_result = array<i64: offset,
  strides...>`). The view ops only GEMMs read through, and concats whose
  pieces GEMMs wrote, are never computed (`pf.fold = "strided_view"`,
  `"strided_concat"`).
}]>;

def GroupElementwisePass : FoldPass<"pf-group-elementwise",
    "groups element-wise ops into generated kernels", [{
  A run of consecutive element-wise ops with generated kernels, of one
  action and one shape (f32, operands of the result's type, no other
  decision of their own), is one kernel at the last op's place, with at
  most `max-pointers` buffers: each op gets `pf.kernel_group = n`. A
  member's result read only inside the group is never stored.
}]> {
  let options = [
    Option<"maxPointers", "max-pointers", "unsigned", /*default=*/"8",
           "the most buffers (inputs and outputs) one kernel takes">,
  ];
}

def GroupUpdatesPass : FoldPass<"pf-group-updates",
    "groups optimizer updates into multi-tensor calls", [{
  A run of in-place optimizer updates of one kind, one action, one lr and
  step and the same hyper-parameters, with nothing between them but reads
  of parameters no member has written yet, run-time scalars, constants and
  their no-op write_params, is one multi-tensor call at the run's last
  update (pfrt_k_sgd_multi / pfrt_k_adam_multi): `pf.update_group = n`.
}]>;

#endif // PF_CONVERSION_PASSES_TD
