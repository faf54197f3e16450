// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-cpu-pipeline="accumulation-steps=2 pf-compile-to=rank" | FileCheck %s --check-prefix=CPU
// RUN: pf-opt %pf_src_root/examples/mlir/seed_mlp.mlir -pf-compile-gpu-pipeline="accumulation-steps=2 pf-compile-to=rank" | FileCheck %s --check-prefix=GPU
// RUN: sed -e 's/"cuda"/"cpu"/g' %S/../Conversion/PFToGPU/Inputs/cuda-gpt.mlir | pf-opt -pf-compile-cpu-pipeline="pf-compile-to=rank" | FileCheck %s --check-prefix=GPT

// Every fusion and buffer decision is in the IR the compile pipelines print
// at pf-compile-to=rank (the lowering only reads it), and each target makes
// its own: the seed MLP (two stages, two micro-batches) on CPU ranks keeps
// bias + relu as one pass, on GPU ranks folds them into cuBLASLt's
// RELU_BIAS epilogue, pairs the bias gradients with their weight-gradient
// GEMMs (BGRADB), groups element-wise ops into generated kernels and the
// updates into multi-tensor calls. Both accumulate the second micro-batch's
// weight gradients in place and load the inputs by parts.
// CPU-LABEL: module @rank0
// CPU: pf.input = 0 : i64, pf.load_by_parts
// CPU: pf.relu {{.*}}pf.fold = "bias_relu"
// CPU: pf.add {{.*}}pf.fold = "gemm_accumulate"
// CPU: pf.sgd_update {{.*}}pf.in_place = [
// CPU-NOT: pf.kernel_group
// CPU-NOT: pf.update_group
// CPU-NOT: pf.bias_grad_pair
// CPU-NOT: "gemm_bias_relu"
// GPU-LABEL: module @rank0
// GPU: pf.input = 0 : i64, pf.load_by_parts
// GPU-DAG: pf.bias_add {{.*}}pf.fold = "gemm_bias"
// GPU-DAG: pf.relu {{.*}}pf.fold = "gemm_bias_relu"
// GPU-DAG: pf.bias_grad_pair = 0 : i64
// GPU-DAG: pf.kernel_group = 0 : i64
// GPU-DAG: pf.fold = "gemm_accumulate"
// GPU-DAG: pf.update_group = 0 : i64
// The GPT's attention on CPU ranks: the softmax computes its scale and
// causal mask, the GEMMs read q, k, v through strides.
// GPT-LABEL: module @rank0
// GPT-DAG: pf.fold = "softmax_prologue"
// GPT-DAG: pf.fold = "softmax_grad_scale"
// GPT-DAG: pf.fold = "strided_view"
// GPT-DAG: pf.strided_a = array<i64:
// GPT-DAG: pf.strided_result = array<i64:
