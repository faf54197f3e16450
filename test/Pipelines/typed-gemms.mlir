// RUN: pf-opt %s -pf-compile-gpu-pipeline="autocast=bf16 accumulation-steps=2 pf-compile-to=rank" | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-compile-gpu-pipeline="autocast=bf16 accumulation-steps=2" | FileCheck %s --check-prefix=GPU
// RUN: sed 's/"cuda"/"cpu"/' %s | pf-opt -pf-compile-cpu-pipeline="autocast=bf16 accumulation-steps=2 pf-compile-to=rank" | FileCheck %s --check-prefix=CPU
// RUN: sed 's/"cuda"/"cpu"/' %s | pf-opt -pf-compile-cpu-pipeline="autocast=bf16 accumulation-steps=2" | FileCheck %s --check-prefix=CPULL

// Mixed precision on a GPU rank: every GEMM of the bf16 MLP (rows of 32,
// 64 and 16 elements) stays a typed bf16 GEMM (pf-widen-low-precision
// {keep-gemms}); each result only cast to f32 is the GEMM's f32 output, and
// the second micro-batch's weight gradients accumulate into the first's
// f32 buffers (gemm_accumulate: beta = 1, no cast and add). No float32
// GEMM runs on bf16 data. The bias add stays a kernel. CPU ranks widen
// every GEMM.
// RANK-LABEL: module @rank0
// RANK: %[[H:.*]] = pf.matmul {{.*}}pf.typed_gemm = "bf16->f32", transpose_b} : (!pf.global<8x32xbf16{{.*}}, !pf.global<64x32xbf16{{.*}}) -> !pf.global<8x64xf32
// RANK: pf.bias_add %[[H]]
// RANK: %[[G0:.*]] = pf.matmul {{.*}}pf.microbatch = 0 : i64{{.*}}pf.typed_gemm = "bf16->f32", transpose_a} : (!pf.global<8x16xbf16{{.*}}, !pf.global<8x64xbf16{{.*}}) -> !pf.global<16x64xf32
// RANK: %[[G1:.*]] = pf.matmul {{.*}}pf.microbatch = 1 : i64{{.*}}pf.typed_gemm = "bf16->f32", transpose_a} : (!pf.global<8x16xbf16{{.*}}, !pf.global<8x64xbf16{{.*}}) -> !pf.global<16x64xf32
// RANK-NEXT: pf.add %[[G0]], %[[G1]] {pf.fold = "gemm_accumulate", pf.fold_operand = 1 : i64
// RANK-NOT: pf.matmul {{.*}} : (!pf.global<{{[0-9x]*}}xf32
// RANK: return
// GPU-LABEL: module @rank0
// GPU-NOT: llvm.call @pfrt_cuda_k_matmul(
// GPU-NOT: llvm.call @pfrt_cuda_k_matmul_acc(
// GPU: llvm.call @pfrt_cuda_k_matmul_typed
// GPU-NOT: llvm.call @pfrt_cuda_k_matmul(
// GPU-NOT: llvm.call @pfrt_cuda_k_matmul_acc(
// CPU-LABEL: module @rank0
// CPU-NOT: pf.typed_gemm
// CPU: pf.matmul {{.*}} : (!pf.global<8x32xf32{{.*}}, !pf.global<64x32xf32
// CPU-NOT: pf.typed_gemm
// CPULL-NOT: pfrt_k_matmul_typed
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
pf.param @l1.weight : !pf.global<64x32xf32, #P, #B> = #pf.init<kaiming_uniform(32)>
pf.param @l1.bias : !pf.global<64xf32, #P, #B> = #pf.init<kaiming_uniform(32)>
pf.param @l2.weight : !pf.global<16x64xf32, #P, #B> = #pf.init<kaiming_uniform(64)>
func.func @train_step(%x: !pf.global<16x32xf32, #P, #B>, %y: !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w1 = pf.read_param @l1.weight : !pf.global<64x32xf32, #P, #B>
  %b1 = pf.read_param @l1.bias : !pf.global<64xf32, #P, #B>
  %w2 = pf.read_param @l2.weight : !pf.global<16x64xf32, #P, #B>
  %h = pf.matmul %x, %w1 {transpose_b} : (!pf.global<16x32xf32, #P, #B>, !pf.global<64x32xf32, #P, #B>) -> !pf.global<16x64xf32, #P, #B>
  %hb = pf.bias_add %h, %b1 : (!pf.global<16x64xf32, #P, #B>, !pf.global<64xf32, #P, #B>) -> !pf.global<16x64xf32, #P, #B>
  %r = pf.relu %hb : (!pf.global<16x64xf32, #P, #B>) -> !pf.global<16x64xf32, #P, #B>
  %o = pf.matmul %r, %w2 {transpose_b} : (!pf.global<16x64xf32, #P, #B>, !pf.global<16x64xf32, #P, #B>) -> !pf.global<16x16xf32, #P, #B>
  %loss = pf.softmax_cross_entropy %o, %y : (!pf.global<16x16xf32, #P, #B>, !pf.global<16xi64, #P, #B>) -> !pf.global<f32, #P>
  return %loss : !pf.global<f32, #P>
}
