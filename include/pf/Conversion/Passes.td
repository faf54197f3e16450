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
    Option<"foldAccumulation", "fold-accumulation", "bool", /*default=*/"true",
           "fold add(acc, matmul(...)) into the matmul (C += A B into the "
           "accumulator's buffer) when nothing else reads either">,
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
    Option<"foldAccumulation", "fold-accumulation", "bool", /*default=*/"true",
           "fold add(acc, matmul(...)) into the matmul (beta = 1 into the "
           "accumulator's buffer) when nothing else reads either">,
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

#endif // PF_CONVERSION_PASSES_TD
