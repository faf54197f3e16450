// RUN: pf-opt %s -pf-compile-cpu-pipeline="training=false pf-compile-to=rank" | FileCheck %s --check-prefix=RANK
// RUN: pf-opt %s -pf-compile-cpu-pipeline="training=false" -o %t.cpu.mlir
// RUN: FileCheck %s --check-prefix=CPU < %t.cpu.mlir
// RUN: rm -rf %t.art && pf-translate --pf-emit-rank-artifacts %t.cpu.mlir --pf-artifact-dir=%t.art > /dev/null
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.art/manifest.json
// RUN: sed 's/"cpu"/"cuda"/' %s | pf-opt -pf-compile-gpu-pipeline="training=false" | FileCheck %s --check-prefix=GPU

// bf16/f16 storage with float32 arithmetic through the compile pipelines:
// a bf16 layer (weights and inputs cast from f32, a bf16 bias input), an
// f16 input and cast results. At the rank stop every op but the casts is
// f32 (pf-widen-low-precision); the lowering calls pfrt_k_cast with the
// dtype codes and the manifest names the dtypes.
// RANK-LABEL: module @rank0
// RANK: %[[X:.*]] = pf.cast %arg0 : !pf.global<4x8xf32{{.*}} -> !pf.global<4x8xbf16
// RANK: %[[XF:.*]] = pf.cast %[[X]] : !pf.global<4x8xbf16{{.*}} -> !pf.global<4x8xf32
// RANK: %[[M:.*]] = pf.matmul %[[XF]], %{{.*}} : (!pf.global<4x8xf32{{.*}}, !pf.global<8x6xf32{{.*}}) -> !pf.global<4x6xf32
// RANK: pf.cast %[[M]] : !pf.global<4x6xf32{{.*}} -> !pf.global<4x6xbf16
// RANK: pf.bias_add {{.*}} -> !pf.global<4x6xf32
// RANK: pf.relu {{.*}} -> !pf.global<4x6xf32
// RANK: pf.softmax {{.*}} -> !pf.global<4x6xf32
// RANK-NOT: pf.{{(matmul|bias_add|relu|softmax)}} {{.*}} -> !pf.global<{{.*}}bf16
// RANK: return
// CPU-LABEL: module @rank0
// CPU-SAME: pfrt.inputs = [{{.*}}dtype = "f32"{{.*}}dtype = "f32"{{.*}}dtype = "bf16"{{.*}}dtype = "f16"{{.*}}pfrt.memory
// CPU-SAME: pfrt.outputs = [{{.*}}dtype = "bf16"{{.*}}dtype = "bf16"{{.*}}dtype = "f16"{{.*}}dtype = "f32"{{.*}}dtype = "f32"
// CPU: llvm.call @pfrt_k_cast
// CPU: llvm.call @pfrt_k_matmul
// CPU: llvm.call @pfrt_k_softmax
// MANIFEST: "dtype": "bf16"
// MANIFEST: "dtype": "f16"
// GPU: llvm.call @pfrt_cuda_k_cast
// GPU-NOT: error
#P = #pf.placement<"cpu", [0]>
#B = #pf.sbp<[B]>
func.func @step(%x: !pf.global<4x8xf32, #P, #B>, %w: !pf.global<8x6xf32, #P, #B>, %b: !pf.global<6xbf16, #P, #B>, %hx: !pf.global<4x8xf16, #P, #B>) -> (!pf.global<4x6xbf16, #P>, !pf.global<4x8xbf16, #P, #B>, !pf.global<4x8xf16, #P>, !pf.global<4x8xf32, #P>, !pf.global<6xf32, #P>) {
  %xb = pf.cast %x : !pf.global<4x8xf32, #P, #B> -> !pf.global<4x8xbf16, #P, #B>
  %wb = pf.cast %w : !pf.global<8x6xf32, #P, #B> -> !pf.global<8x6xbf16, #P, #B>
  %h = pf.matmul %xb, %wb : (!pf.global<4x8xbf16, #P, #B>, !pf.global<8x6xbf16, #P, #B>) -> !pf.global<4x6xbf16, #P>
  %hb = pf.bias_add %h, %b : (!pf.global<4x6xbf16, #P>, !pf.global<6xbf16, #P, #B>) -> !pf.global<4x6xbf16, #P>
  %r = pf.relu %hb : (!pf.global<4x6xbf16, #P>) -> !pf.global<4x6xbf16, #P>
  %s = pf.softmax %r {axis = 1 : i64} : (!pf.global<4x6xbf16, #P>) -> !pf.global<4x6xbf16, #P>
  %xh = pf.cast %x : !pf.global<4x8xf32, #P, #B> -> !pf.global<4x8xf16, #P>
  %hf = pf.cast %hx : !pf.global<4x8xf16, #P, #B> -> !pf.global<4x8xf32, #P>
  %bf = pf.cast %b : !pf.global<6xbf16, #P, #B> -> !pf.global<6xf32, #P>
  return %s, %xb, %xh, %hf, %bf : !pf.global<4x6xbf16, #P>, !pf.global<4x8xbf16, #P, #B>, !pf.global<4x8xf16, #P>, !pf.global<4x8xf32, #P>, !pf.global<6xf32, #P>
}
