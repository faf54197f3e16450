// RUN: pf-opt %s -split-input-file -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-cpu-folds -convert-pf-to-cpu=outline-actions=false | FileCheck %s
// RUN: sed -e "s/\"cpu\"/\"cuda\"/g" %s | pf-opt - -split-input-file -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-gpu-folds -convert-pf-to-gpu=outline-actions=false | FileCheck %s --check-prefix=GPU
// RUN: pf-opt %s -split-input-file -pf-infer-sbp -pf-insert-boxing -pf-lower-boxing -pf-partition-ranks -pf-fold-views | FileCheck %s --check-prefix=FOLD

// The decisions pf-fold-views records (what the lowering below reads): the
// attention's slices, reshapes and transposes are never computed, the GEMMs
// read q, k and v through strides ([views, offset, strides...]) and the
// weighted sum is written through strides ([offset, strides...]).
// FOLD-LABEL: func.func @attention
// FOLD-COUNT-9: pf.fold = "strided_view"
// FOLD: pf.matmul {{.*}}{pf.strided_a = array<i64: 3, 0, 90, 3, 18, 1>, pf.strided_b = array<i64: 3, 6, 90, 3, 1, 18>}
// FOLD: pf.matmul {{.*}}{pf.strided_b = array<i64: 3, 12, 90, 3, 18, 1>, pf.strided_result = array<i64: 0, 30, 3, 6, 1>}
// FOLD-COUNT-2: pf.fold = "strided_view"
// Three GEMMs write the pieces of one concat, which copies nothing.
// FOLD-LABEL: func.func @concat
// FOLD: pf.strided_result = array<i64: 0, 90, 3, 18, 1>
// FOLD: pf.strided_result = array<i64: 6, 90, 3, 18, 1>
// FOLD: pf.strided_result = array<i64: 12, 90, 3, 18, 1>
// FOLD: pf.concat {{.*}}pf.fold = "strided_concat"
// A parameter's transpose read after the parameter is written is copied.
// FOLD-LABEL: func.func @param
// FOLD-NOT: pf.fold
// FOLD-NOT: pf.strided

// Attention's views on CPU ranks: q, k and v are column ranges of one
// [B, T, 3C] projection with the heads moved to the front; the GEMMs read
// them through strides (no slice, reshape or transpose is copied), and the
// weighted sum is written straight in [B, T, C] layout (its transpose and
// reshape copy nothing). B = 2, T = 5, H = 2 heads of D = 3, C = 6.
#P = #pf.placement<"cpu", [0]>
!QKV = !pf.global<2x5x18xf32, #P, #pf.sbp<[B]>>
!X = !pf.global<2x5x6xf32, #P, #pf.sbp<[B]>>
!X4 = !pf.global<2x5x2x3xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<2x2x5x3xf32, #P, #pf.sbp<[B]>>
!HT = !pf.global<2x2x3x5xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<2x2x5x5xf32, #P, #pf.sbp<[B]>>
func.func @attention(%qkv: !QKV) -> (!pf.global<f32, #P>, !X) {
  %q = pf.slice %qkv {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 2, 5, 6>} : (!QKV) -> !X
  %k = pf.slice %qkv {offsets = array<i64: 0, 0, 6>, sizes = array<i64: 2, 5, 6>} : (!QKV) -> !X
  %v = pf.slice %qkv {offsets = array<i64: 0, 0, 12>, sizes = array<i64: 2, 5, 6>} : (!QKV) -> !X
  %q4 = pf.reshape %q : !X -> !X4
  %k4 = pf.reshape %k : !X -> !X4
  %v4 = pf.reshape %v : !X -> !X4
  %qh = pf.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (!X4) -> !H
  %kt = pf.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (!X4) -> !HT
  %vh = pf.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (!X4) -> !H
  %s = pf.matmul %qh, %kt : (!H, !HT) -> !S
  %p = pf.softmax %s {axis = 3 : i64} : (!S) -> !S
  %y = pf.matmul %p, %vh : (!S, !H) -> !H
  %yt = pf.transpose %y {perm = array<i64: 0, 2, 1, 3>} : (!H) -> !X4
  %yc = pf.reshape %yt : !X4 -> !X
  %l = pf.reduce_sum %yc {axes = array<i64: 0, 1, 2>} : (!X) -> !pf.global<f32, #P>
  return %l, %yc : !pf.global<f32, #P>, !X
}
// The strides: batch (b, h), then the matrix's rows and columns.
// CHECK-DAG: llvm.mlir.global private constant @[[QS:__pf_dims[0-9]+]](dense<[90, 3, 18, 1]> : tensor<4xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[KS:__pf_dims[0-9]+]](dense<[90, 3, 1, 18]> : tensor<4xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[SS:__pf_dims[0-9]+]](dense<[50, 25, 5, 1]> : tensor<4xi64>)
// CHECK-DAG: llvm.mlir.global private constant @[[YS:__pf_dims[0-9]+]](dense<[30, 3, 6, 1]> : tensor<4xi64>)
// (The stride arrays' addresses are made once, at the step's entry.)
// CHECK-LABEL: llvm.func @pf_step
// CHECK-DAG: %[[A1:.*]] = llvm.mlir.addressof @[[QS]]
// CHECK-DAG: %[[B1:.*]] = llvm.mlir.addressof @[[KS]]
// CHECK-DAG: %[[C1:.*]] = llvm.mlir.addressof @[[SS]]
// CHECK-DAG: %[[Y1:.*]] = llvm.mlir.addressof @[[YS]]
// CHECK-NOT: llvm.call @pfrt_copy_box
// CHECK-NOT: llvm.call @pfrt_k_transpose
// q at column 0 of the projection, k at column 6 (a GEP of 6 floats).
// CHECK: %[[SIX:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[K:.*]] = llvm.getelementptr %[[QKV:[0-9]+]][%[[SIX]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.call @pfrt_k_matmul_strided(%[[QKV]], %[[K]], %{{.*}}, %{{.*}}, %{{.*}}, %[[A1]], %[[B1]], %[[C1]],
// CHECK: llvm.call @pfrt_k_softmax
// v at column 12; the result in [b, t, h, d] order.
// CHECK: %[[TWELVE:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK-NEXT: llvm.getelementptr %[[QKV]][%[[TWELVE]]]
// CHECK: llvm.call @pfrt_k_matmul_strided({{.*}}, %[[Y1]],
// CHECK-NOT: llvm.call @pfrt_copy_box
// CHECK-NOT: llvm.call @pfrt_k_transpose
// CHECK: llvm.call @pfrt_k_reduce_sum

// GPU ranks copy the views (the strided GEMM has no device twin yet).
// GPU: llvm.call @pfrt_cuda_k_transpose
// GPU: llvm.call @pfrt_cuda_k_matmul(

// -----

// A view something else reads too is copied, and the GEMMs read the copy;
// a transpose whose rows would not have a unit stride (a GEMM result
// transposed to [d, t] order is fine: written column-major; one whose
// columns merge with others by a reshape is not) stays.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x6xf32, #P, #pf.sbp<[B]>>
!XT = !pf.global<6x4xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
func.func @shared(%x: !X, %w: !X) -> (!pf.global<f32, #P>, !XT, !Y) {
  %t = pf.transpose %w {perm = array<i64: 1, 0>} : (!X) -> !XT
  %y = pf.matmul %x, %t : (!X, !XT) -> !Y
  %z = pf.matmul %x, %t : (!X, !XT) -> !Y
  %zt = pf.transpose %z {perm = array<i64: 1, 0>} : (!Y) -> !Y
  %l = pf.reduce_sum %y {axes = array<i64: 0, 1>} : (!Y) -> !pf.global<f32, #P>
  return %l, %t, %zt : !pf.global<f32, #P>, !XT, !Y
}
// The second product is written transposed (column-major, strides
// [1, 4]): no transpose of it.
// CHECK-LABEL: module @rank0
// CHECK: llvm.mlir.global private constant @[[CT:__pf_dims[0-9]+]](dense<[1, 4]> : tensor<2xi64>)
// CHECK: %[[CTP:.*]] = llvm.mlir.addressof @[[CT]]
// CHECK: llvm.call @pfrt_k_transpose(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK: llvm.call @pfrt_k_matmul_strided({{.*}}, %[[CTP]],
// CHECK-NOT: llvm.call @pfrt_k_transpose
// CHECK: llvm.return

// -----

// Attention's backward: three GEMM results, each transposed back to
// [B, T, H, D] and reshaped to [B, T, C], concatenated into the [B, T, 3C]
// projection gradient: each GEMM writes its columns of the concat's buffer
// (row stride 18) and the concat copies nothing.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<2x5x6xf32, #P, #pf.sbp<[B]>>
!X4 = !pf.global<2x5x2x3xf32, #P, #pf.sbp<[B]>>
!H = !pf.global<2x2x5x3xf32, #P, #pf.sbp<[B]>>
!S = !pf.global<2x2x5x5xf32, #P, #pf.sbp<[B]>>
!QKV = !pf.global<2x5x18xf32, #P, #pf.sbp<[B]>>
func.func @concat(%s: !S, %h: !H) -> (!pf.global<f32, #P>, !QKV) {
  %a = pf.matmul %s, %h : (!S, !H) -> !H
  %b = pf.matmul %s, %h {transpose_a} : (!S, !H) -> !H
  %c = pf.matmul %s, %h : (!S, !H) -> !H
  %at = pf.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (!H) -> !X4
  %bt = pf.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (!H) -> !X4
  %ct = pf.transpose %c {perm = array<i64: 0, 2, 1, 3>} : (!H) -> !X4
  %ar = pf.reshape %at : !X4 -> !X
  %br = pf.reshape %bt : !X4 -> !X
  %cr = pf.reshape %ct : !X4 -> !X
  %cat = pf.concat %ar, %br, %cr {axis = 2 : i64} : (!X, !X, !X) -> !QKV
  %l = pf.reduce_sum %cat {axes = array<i64: 0, 1, 2>} : (!QKV) -> !pf.global<f32, #P>
  return %l, %cat : !pf.global<f32, #P>, !QKV
}
// CHECK-LABEL: module @rank0
// CHECK: llvm.mlir.global private constant @[[CS:__pf_dims[0-9]+]](dense<[90, 3, 18, 1]> : tensor<4xi64>)
// One buffer (the same arena offset) for the three results.
// CHECK-LABEL: llvm.func @pf_step
// CHECK: %[[CSP:.*]] = llvm.mlir.addressof @[[CS]]
// CHECK: llvm.call @pfrt_trace_begin(
// CHECK-NEXT: llvm.mlir.constant([[OFF:[0-9]+]] : i64) : i64
// CHECK-NEXT: llvm.mlir.constant([[BYTES:[0-9]+]] : i64) : i64
// CHECK-NEXT: %[[O1:.*]] = llvm.call @pfrt_arena_at(
// CHECK: llvm.call @pfrt_k_matmul_strided(%{{[0-9]+}}, %{{[0-9]+}}, %[[O1]], {{.*}}, %[[CSP]],
// CHECK: llvm.call @pfrt_trace_begin(
// CHECK-NEXT: llvm.mlir.constant([[OFF]] : i64) : i64
// CHECK-NEXT: llvm.mlir.constant([[BYTES]] : i64) : i64
// CHECK-NEXT: %[[O2:.*]] = llvm.call @pfrt_arena_at(
// CHECK-NEXT: %[[C6:.*]] = llvm.mlir.constant(6 : i64) : i64
// CHECK-NEXT: %[[B:.*]] = llvm.getelementptr %[[O2]][%[[C6]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.call @pfrt_k_matmul_strided(%{{[0-9]+}}, %{{[0-9]+}}, %[[B]],
// CHECK: llvm.call @pfrt_trace_begin(
// CHECK-NEXT: llvm.mlir.constant([[OFF]] : i64) : i64
// CHECK-NEXT: llvm.mlir.constant([[BYTES]] : i64) : i64
// CHECK-NEXT: %[[O3:.*]] = llvm.call @pfrt_arena_at(
// CHECK-NEXT: %[[C12:.*]] = llvm.mlir.constant(12 : i64) : i64
// CHECK-NEXT: %[[C:.*]] = llvm.getelementptr %[[O3]][%[[C12]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.call @pfrt_k_matmul_strided(%{{[0-9]+}}, %{{[0-9]+}}, %[[C]],
// CHECK-NOT: llvm.call @pfrt_copy_box
// CHECK-NOT: llvm.call @pfrt_k_transpose
// CHECK: llvm.call @pfrt_k_reduce_sum

// -----

// A GEMM reading a transposed parameter after the parameter is written
// reads the transpose's copy: the write lies between the view and the GEMM.
#P = #pf.placement<"cpu", [0]>
!X = !pf.global<4x6xf32, #P, #pf.sbp<[B]>>
!XT = !pf.global<6x4xf32, #P, #pf.sbp<[B]>>
!Y = !pf.global<4x4xf32, #P, #pf.sbp<[B]>>
pf.param @w : !X = #pf.init<ones>
func.func @param(%x: !X, %n: !X) -> (!pf.global<f32, #P>) {
  %w = pf.read_param @w : !X
  %t = pf.transpose %w {perm = array<i64: 1, 0>} : (!X) -> !XT
  pf.write_param %n to @w : !X
  %y = pf.matmul %x, %t : (!X, !XT) -> !Y
  %l = pf.reduce_sum %y {axes = array<i64: 0, 1>} : (!Y) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
// CHECK-LABEL: module @rank0
// CHECK: llvm.call @pfrt_k_transpose(
// CHECK: llvm.call @pfrt_k_matmul(
// CHECK-NOT: pfrt_k_matmul_strided
