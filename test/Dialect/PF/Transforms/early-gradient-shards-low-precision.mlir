// pf-early-gradient-shards{low-precision-only} (the compile pipelines
// below ZeRO-2): under mixed precision each weight gradient comes out of
// its bf16 GEMM and is cast up to be added to its f32 sum; autodiff adds
// them all after the whole backward, so every whole f32 gradient of a
// micro-batch was alive at once. The pass moves each cast, read, add and
// write to just after its GEMM. In float32 (no cast: the accumulation
// folds into the GEMM later) it moves nothing.
// RUN: pf-opt %s -pf-autocast="dtype=bf16" -pf-autodiff -pf-optimizer -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse -pf-early-gradient-shards="low-precision-only" | FileCheck %s
// RUN: pf-opt %s -pf-autocast="dtype=bf16" -pf-autodiff -pf-optimizer -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse | FileCheck %s --check-prefix=OFF
// RUN: pf-opt %s -pf-autodiff -pf-optimizer -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -cse -pf-early-gradient-shards="low-precision-only" | FileCheck %s --check-prefix=F32

#ONE = #pf.placement<"cpu", [0]>
!W = !pf.global<6x8xf32, #ONE, #pf.sbp<[B]>>
!V = !pf.global<4x6xf32, #ONE, #pf.sbp<[B]>>
pf.param @w : !W = #pf.init<kaiming_uniform(8)>
pf.param @v : !V = #pf.init<kaiming_uniform(6)>

func.func @step(%x: !pf.global<64x8xf32, #ONE, #pf.sbp<[B]>>, %y: !pf.global<64xi64, #ONE, #pf.sbp<[B]>>) -> !pf.global<f32, #ONE> {
  %w = pf.read_param @w : !W
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<64x8xf32, #ONE, #pf.sbp<[B]>>, !W) -> !pf.global<64x6xf32, #ONE>
  %v = pf.read_param @v : !V
  %o = pf.matmul %h, %v {transpose_b} : (!pf.global<64x6xf32, #ONE>, !V) -> !pf.global<64x4xf32, #ONE>
  %l = pf.softmax_cross_entropy %o, %y : (!pf.global<64x4xf32, #ONE>, !pf.global<64xi64, #ONE, #pf.sbp<[B]>>) -> !pf.global<f32, #ONE>
  return %l : !pf.global<f32, #ONE>
}
// Each weight gradient's bf16 GEMM is followed by its cast, read, add and
// write before the next gradient's GEMM.
// CHECK-LABEL: func.func @step
// CHECK: %[[GW:.*]] = pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<6x8xbf16
// CHECK-NEXT: %[[CW:.*]] = pf.cast %[[GW]]
// CHECK-NEXT: pf.read_param @w.grad
// CHECK-NEXT: pf.add %{{.*}}, %[[CW]]
// CHECK-NEXT: pf.write_param %{{.*}} to @w.grad
// CHECK-NEXT: %[[GV:.*]] = pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<4x6xbf16
// CHECK-NEXT: %[[CV:.*]] = pf.cast %[[GV]]
// CHECK-NEXT: pf.read_param @v.grad
// CHECK-NEXT: pf.add %{{.*}}, %[[CV]]
// CHECK-NEXT: pf.write_param %{{.*}} to @v.grad

// Without it both bf16 gradients are made before either is added.
// OFF-LABEL: func.func @step
// OFF: pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<4x6xbf16
// OFF-NOT: pf.write_param
// OFF: pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<6x8xbf16
// OFF: pf.write_param

// In float32 nothing moves.
// F32-LABEL: func.func @step
// F32: pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<4x6xf32
// F32-NOT: pf.write_param
// F32: pf.matmul {{.*}}transpose_a{{.*}} -> !pf.global<6x8xf32
// F32: pf.write_param
