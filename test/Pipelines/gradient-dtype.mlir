// RUN: pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=bf16 pf-compile-to=rank boxing-report=%t.bf16.txt" | FileCheck %s --check-prefix=RANK
// RUN: FileCheck %s --check-prefix=REPORT < %t.bf16.txt
// RUN: pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=f16 bucket-bytes=0" | FileCheck %s --check-prefix=CPU
// RUN: pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=f16 overlap-gradients=on" | FileCheck %s --check-prefix=OVERLAP
// RUN: pf-opt %s -pf-compile-cpu-pipeline="pf-compile-to=rank boxing-report=%t.f32.txt" | FileCheck %s --check-prefix=F32
// RUN: FileCheck %s --check-prefix=REPORT32 < %t.f32.txt
// RUN: sed 's/"cpu"/"cuda"/' %s | pf-opt -pf-compile-gpu-pipeline="gradient-dtype=bf16" | FileCheck %s --check-prefix=GPU
// RUN: pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=bf16 zero-stage=2 zero-min-size=0 pf-compile-to=rank boxing-report=%t.zero.txt" | FileCheck %s --check-prefix=ZERO
// RUN: FileCheck %s --check-prefix=ZREPORT < %t.zero.txt
// RUN: pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=f16 zero-stage=2 zero-min-size=0" | FileCheck %s --check-prefix=ZCPU
// RUN: pf-opt %s -pf-compile-cpu-pipeline="zero-stage=2 zero-min-size=0 pf-compile-to=rank boxing-report=%t.zero32.txt" | FileCheck %s --check-prefix=ZERO32
// RUN: FileCheck %s --check-prefix=ZREPORT32 < %t.zero32.txt
// RUN: sed 's/"cpu"/"cuda"/' %s | pf-opt -pf-compile-gpu-pipeline="gradient-dtype=bf16 zero-stage=2 zero-min-size=0" | FileCheck %s --check-prefix=ZGPU
// RUN: not pf-opt %s -pf-compile-cpu-pipeline="gradient-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BAD

// gradient-dtype=bf16|f16 (graph.config.set_gradient_dtype): each
// data-parallel gradient all-reduce moves the low type. The bucket of f32
// gradients is cast down once, the all-reduce sums bf16 values, and the sum
// is cast back to f32 before the update reads it; pf-widen-low-precision
// keeps the update's all-reduces low. The loss's all-reduce (not a
// gradient) stays f32, and so does the boxing report's count for it.
// RANK-LABEL: module @rank0
// RANK: %[[C:.*]] = pf.cast %{{.*}} : !pf.global<54xf32{{.*}} -> !pf.global<54xbf16
// RANK: %[[S:.*]] = pf.all_reduce %[[C]] {{.*}}pf.phase = "update"{{.*}} : !pf.global<54xbf16{{.*}} -> !pf.global<54xbf16
// RANK: pf.cast %[[S]] {{.*}} : !pf.global<54xbf16{{.*}} -> !pf.global<54xf32
// RANK: pf.sgd_update
// RANK-NOT: pf.all_reduce {{.*}}xf32{{.*}}pf.phase = "update"
// RANK-NOT: pf.all_reduce {{.*}}pf.phase = "update"{{.*}}xf32
// RANK: return

// REPORT: all_reduce 6x8xbf16 {{.*}}: 96 bytes/rank
// REPORT: all_reduce 6xbf16 {{.*}}: 12 bytes/rank
// REPORT: all_reduce f32 {{.*}}: 4 bytes/rank
// REPORT: total: 112 bytes/rank per step

// Without buckets one all-reduce per gradient, each the runtime's f16
// sum; with overlap the bucket's f16 all-reduce starts early and is waited
// for at the update. The loss's stays f32.
// CPU-LABEL: module @rank0
// CPU-COUNT-2: llvm.call @pfrt_all_reduce_sum_dtype({{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i32, !llvm.ptr, i64) -> i32
// CPU: llvm.call @pfrt_all_reduce_sum(
// OVERLAP-LABEL: module @rank0
// OVERLAP: llvm.call @pfrt_all_reduce_start_dtype({{.*}}) : (!llvm.ptr, !llvm.ptr, i64, i32, !llvm.ptr, i64, i64) -> i32
// OVERLAP: llvm.call @pfrt_all_reduce_wait(

// F32-NOT: bf16
// F32: pf.all_reduce {{.*}}pf.phase = "update"{{.*}} : !pf.global<54xf32
// REPORT32: total: 220 bytes/rank per step

// GPU: llvm.call @pfrt_cuda_all_reduce_start_dtype

// ZeRO-2 (zero-stage=2): each gradient's P -> S(0) is a reduce-scatter in
// the backward, into the rank's shard of its buffer; gradient-dtype moves it
// in bf16 between the same casts (the runtime's sum in that type,
// pfrt_box_reduce_scatter_dtype), and the report counts 2 bytes an element.
// Without gradient-dtype it stays f32.
// ZERO-LABEL: module @rank0
// ZERO: %[[C:.*]] = pf.cast %{{.*}} {pf.phase = "backward_weight"} : !pf.global<6x8xf32{{.*}} -> !pf.global<6x8xbf16
// ZERO-NEXT: %[[S:.*]] = pf.reduce_scatter %[[C]] {axis = 0 : i64, {{.*}}pf.phase = "backward_weight"} : !pf.global<6x8xbf16{{.*}} -> !pf.global<3x8xbf16
// ZERO-NEXT: pf.cast %[[S]] {{.*}} : !pf.global<3x8xbf16{{.*}} -> !pf.global<3x8xf32
// ZERO: %[[CB:.*]] = pf.cast %{{.*}} : !pf.global<6xf32{{.*}} -> !pf.global<6xbf16
// ZERO-NEXT: %[[SB:.*]] = pf.reduce_scatter %[[CB]] {{.*}} : !pf.global<6xbf16{{.*}} -> !pf.global<3xbf16
// ZERO-NEXT: pf.cast %[[SB]] {{.*}} : !pf.global<3xbf16{{.*}} -> !pf.global<3xf32
// ZERO-NOT: pf.reduce_scatter {{.*}}xf32
// ZERO: return
// ZREPORT-DAG: reduce_scatter 6xbf16 {{.*}}: 6 bytes/rank
// ZREPORT-DAG: reduce_scatter 6x8xbf16 {{.*}}: 48 bytes/rank
// ZREPORT: total: 166 bytes/rank per step
// ZCPU-LABEL: module @rank0
// ZCPU-COUNT-2: llvm.call @pfrt_box_reduce_scatter_dtype({{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i64, !llvm.ptr, i64, !llvm.ptr, i64) -> i32
// ZCPU-NOT: llvm.call @pfrt_box_reduce_scatter(
// ZERO32-NOT: bf16
// ZERO32: pf.reduce_scatter {{.*}}pf.phase = "backward_weight"{{.*}} : !pf.global<6x8xf32{{.*}} -> !pf.global<3x8xf32
// ZREPORT32-DAG: reduce_scatter 6xf32 {{.*}}: 12 bytes/rank
// ZREPORT32-DAG: reduce_scatter 6x8xf32 {{.*}}: 96 bytes/rank
// ZREPORT32: total: 220 bytes/rank per step
// ZGPU: llvm.call @pfrt_cuda_box_reduce_scatter_{{dtype|start}}(

// BAD: gradient-dtype

#P = #pf.placement<"cpu", [0, 1]>
#B = #pf.sbp<[B]>
#S = #pf.sbp<[S(0)]>
pf.param @m.weight : !pf.global<6x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
pf.param @m.bias : !pf.global<6xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
func.func @train_step(%x: !pf.global<4x8xf32, #P, #S>, %y: !pf.global<4xi64, #P, #S>) -> !pf.global<f32, #P> {
  %w = pf.read_param @m.weight : !pf.global<6x8xf32, #P, #B>
  %b = pf.read_param @m.bias : !pf.global<6xf32, #P, #B>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<4x8xf32, #P, #S>, !pf.global<6x8xf32, #P, #B>) -> !pf.global<4x6xf32, #P>
  %hb = pf.bias_add %h, %b : (!pf.global<4x6xf32, #P>, !pf.global<6xf32, #P, #B>) -> !pf.global<4x6xf32, #P>
  %loss = pf.softmax_cross_entropy %hb, %y : (!pf.global<4x6xf32, #P>, !pf.global<4xi64, #P, #S>) -> !pf.global<f32, #P>
  return %loss : !pf.global<f32, #P>
}
