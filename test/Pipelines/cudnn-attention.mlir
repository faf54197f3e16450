// RUN: pf-opt %s -pf-compile-gpu-pipeline="training=false pf-compile-to=rank" | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-compile-gpu-pipeline="training=false" | FileCheck %s --check-prefix=GPU
// RUN: sed 's/"cuda"/"cpu"/' %s | pf-opt -pf-compile-cpu-pipeline="training=false pf-compile-to=rank" | FileCheck %s --check-prefix=CPU
// RUN: pf-opt %s -pf-select-cudnn-attention | FileCheck %s --check-prefix=SELECT

// GPU ranks: which attention goes to cuDNN's fused flash attention
// (pf-select-cudnn-attention), visible at the rank stop as
// pf.cudnn_attention on each op, and what the lowering calls. cuDNN takes
// bf16 causal (forward and gradient), bf16 with an additive bf16 mask
// broadcast over B (cast exactly to the f32 bias), f16; the others keep
// the float32 flash kernel, widened, and the IR says why: dropout, float32,
// head dim 12, a boolean mask. CPU ranks never mark or keep one.
// RANK-LABEL: module @rank0
// RANK: pf.attention %{{.*}} {causal, pf.cudnn_attention = "bf16"{{.*}} : (!pf.global<2x2x16x32xbf16
// RANK: %[[M:.*]] = pf.cast %{{.*}} : !pf.global<1x2x16x24xbf16{{.*}} -> !pf.global<1x2x16x24xf32
// RANK: pf.attention %{{.*}}, %[[M]] {pf.cudnn_attention = "bf16"{{.*}} : (!pf.global<2x2x16x32xbf16{{.*}}, !pf.global<1x2x16x24xf32
// RANK: pf.attention %{{.*}} {pf.cudnn_attention = "f16"{{.*}} : (!pf.global<2x2x16x32xf16
// RANK: pf.attention {{.*}}pf.cudnn_attention = "kernel: dropout (cuDNN's draw is not the layout-independent Philox mask)"{{.*}} : (!pf.global<2x2x16x32xf32
// RANK: pf.attention {{.*}}pf.cudnn_attention = "kernel: float32 (cuDNN's fused attention takes bf16 or f16)"{{.*}} : (!pf.global<2x2x16x32xf32
// RANK: pf.attention {{.*}}pf.cudnn_attention = "kernel: head dim 12 (cuDNN takes a multiple of 8 up to 128)"{{.*}} : (!pf.global<2x2x16x12xf32
// RANK: pf.attention {{.*}}pf.cudnn_attention = "kernel: boolean mask"{{.*}} : (!pf.global<2x2x16x32xf32
// RANK: pf.attention_grad {{.*}}pf.cudnn_attention = "bf16"{{.*}} : (!pf.global<2x2x16x32xbf16
// GPU-LABEL: module @rank0
// GPU-COUNT-3: llvm.call @pfrt_cuda_cudnn_attention(
// GPU-COUNT-4: llvm.call @pfrt_cuda_k_attention(
// GPU: llvm.call @pfrt_cuda_cudnn_attention_grad(
// GPU-NOT: llvm.call @pfrt_cuda_k_attention_grad(
// CPU-LABEL: module @rank0
// CPU-NOT: cudnn
// CPU-NOT: pf.attention {{.*}} : (!pf.global<{{[0-9x]*}}x{{(bf|f)}}16
// SELECT-COUNT-3: pf.cudnn_attention = "{{(bf16|f16)}}"
// SELECT-COUNT-4: pf.cudnn_attention = "kernel: 
// SELECT: pf.attention_grad {{.*}}pf.cudnn_attention = "bf16"
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
func.func @step(%q: !pf.global<2x2x16x32xf32, #P, #B>, %k: !pf.global<2x2x24x32xf32, #P, #B>, %v: !pf.global<2x2x24x32xf32, #P, #B>, %m: !pf.global<1x2x16x24xf32, #P, #B>, %q12: !pf.global<2x2x16x12xf32, #P, #B>, %k12: !pf.global<2x2x24x12xf32, #P, #B>, %bm: !pf.global<2x1x16x24xi1, #P, #B>, %d: !pf.global<2x2x16x32xf32, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xf32, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>) {
  %qb = pf.cast %q : !pf.global<2x2x16x32xf32, #P, #B> -> !pf.global<2x2x16x32xbf16, #P, #B>
  %kb = pf.cast %k : !pf.global<2x2x24x32xf32, #P, #B> -> !pf.global<2x2x24x32xbf16, #P, #B>
  %vb = pf.cast %v : !pf.global<2x2x24x32xf32, #P, #B> -> !pf.global<2x2x24x32xbf16, #P, #B>
  %mb = pf.cast %m : !pf.global<1x2x16x24xf32, #P, #B> -> !pf.global<1x2x16x24xbf16, #P, #B>
  %o1, %l1 = pf.attention %qb, %kb, %vb {scale = 0.125 : f64, causal} : (!pf.global<2x2x16x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>)
  %o2, %l2 = pf.attention %qb, %kb, %vb, %mb {scale = 0.125 : f64} : (!pf.global<2x2x16x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<1x2x16x24xbf16, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>)
  %qh = pf.cast %q : !pf.global<2x2x16x32xf32, #P, #B> -> !pf.global<2x2x16x32xf16, #P, #B>
  %kh = pf.cast %k : !pf.global<2x2x24x32xf32, #P, #B> -> !pf.global<2x2x24x32xf16, #P, #B>
  %vh = pf.cast %v : !pf.global<2x2x24x32xf32, #P, #B> -> !pf.global<2x2x24x32xf16, #P, #B>
  %o3, %l3 = pf.attention %qh, %kh, %vh {scale = 0.125 : f64} : (!pf.global<2x2x16x32xf16, #P, #B>, !pf.global<2x2x24x32xf16, #P, #B>, !pf.global<2x2x24x32xf16, #P, #B>) -> (!pf.global<2x2x16x32xf16, #P>, !pf.global<2x2x16xf32, #P>)
  %o4, %l4 = pf.attention %qb, %kb, %vb {scale = 0.125 : f64, causal, dropout_p = 0.1 : f64, stream = 3 : i64} : (!pf.global<2x2x16x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>)
  %o5, %l5 = pf.attention %q, %k, %v {scale = 0.125 : f64, causal} : (!pf.global<2x2x16x32xf32, #P, #B>, !pf.global<2x2x24x32xf32, #P, #B>, !pf.global<2x2x24x32xf32, #P, #B>) -> (!pf.global<2x2x16x32xf32, #P>, !pf.global<2x2x16xf32, #P>)
  %q12b = pf.cast %q12 : !pf.global<2x2x16x12xf32, #P, #B> -> !pf.global<2x2x16x12xbf16, #P, #B>
  %k12b = pf.cast %k12 : !pf.global<2x2x24x12xf32, #P, #B> -> !pf.global<2x2x24x12xbf16, #P, #B>
  %o6, %l6 = pf.attention %q12b, %k12b, %vb {scale = 0.125 : f64} : (!pf.global<2x2x16x12xbf16, #P, #B>, !pf.global<2x2x24x12xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>)
  %o7, %l7 = pf.attention %qb, %kb, %vb, %bm {scale = 0.125 : f64} : (!pf.global<2x2x16x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x1x16x24xi1, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>)
  %db = pf.cast %d : !pf.global<2x2x16x32xf32, #P, #B> -> !pf.global<2x2x16x32xbf16, #P, #B>
  %dq, %dk, %dv = pf.attention_grad %qb, %kb, %vb, %o1, %l1, %db {scale = 0.125 : f64, causal} : (!pf.global<2x2x16x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x24x32xbf16, #P, #B>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16xf32, #P>, !pf.global<2x2x16x32xbf16, #P, #B>) -> (!pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>)
  return %o1, %o2, %o3, %o4, %o5, %o6, %o7, %dq, %dk, %dv : !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xf32, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x16x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>, !pf.global<2x2x24x32xbf16, #P>
}
