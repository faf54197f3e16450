// RUN: pf-opt %s -split-input-file -pf-widen-low-precision="keep-gemms=true" | FileCheck %s
// RUN: pf-opt %s -split-input-file -pf-widen-low-precision | FileCheck %s --check-prefix=WIDEN

// keep-gemms (GPU ranks): a bf16 GEMM with 16-byte rows stays on its bf16
// operands; a widened consumer's cast to f32 folds into it (the typed
// GEMM writes f32), and the consumer computes in f32 as before.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<16x64xbf16, #P, #pf.sbp<[B]>>
!W = !pf.global<64x32xbf16, #P, #pf.sbp<[B]>>
!Y = !pf.global<16x32xbf16, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: !pf.global<16x64xbf16{{.*}}, %[[W:.*]]: !pf.global<64x32xbf16
// CHECK: %[[M:.*]] = pf.matmul %[[X]], %[[W]] {pf.stage = 0 : i64, pf.typed_gemm = "bf16->f32"} : (!pf.global<16x64xbf16{{.*}}, !pf.global<64x32xbf16{{.*}}) -> !pf.global<16x32xf32
// CHECK-NEXT: %[[R:.*]] = pf.relu %[[M]] : (!pf.global<16x32xf32{{.*}}) -> !pf.global<16x32xf32
// CHECK-NEXT: %[[RB:.*]] = pf.cast %[[R]] : {{.*}} -> !pf.global<16x32xbf16
// CHECK-NEXT: return %[[RB]]
// WIDEN-LABEL: func.func @forward
// WIDEN: pf.matmul {{.*}} : (!pf.global<16x64xf32{{.*}}, !pf.global<64x32xf32{{.*}}) -> !pf.global<16x32xf32
// WIDEN-NOT: pf.typed_gemm
func.func @forward(%x: !X, %w: !W) -> !Y {
  %m = pf.matmul %x, %w {pf.stage = 0 : i64} : (!X, !W) -> !Y
  %r = pf.relu %m : (!Y) -> !Y
  return %r : !Y
}

// -----

// A weight gradient widened for its f32 accumulation: the cast folds into
// the typed GEMM (float32 output, no rounding to bf16), the f32 add reads
// the GEMM. A result the step returns (and a send would) stays bf16: the
// GEMM writes bf16, a widened reader gets its cast.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<16x64xbf16, #P, #pf.sbp<[B]>>
!DY = !pf.global<16x32xbf16, #P, #pf.sbp<[B]>>
!G = !pf.global<64x32xbf16, #P, #pf.sbp<[B]>>
!GF = !pf.global<64x32xf32, #P, #pf.sbp<[B]>>
// CHECK-LABEL: func.func @weight_grad
// CHECK: %[[G:.*]] = pf.matmul %{{.*}}, %{{.*}} {pf.typed_gemm = "bf16->f32", transpose_a} : (!pf.global<16x64xbf16{{.*}}, !pf.global<16x32xbf16{{.*}}) -> !pf.global<64x32xf32
// CHECK-NEXT: %[[S:.*]] = pf.add %{{.*}}, %[[G]] : (!pf.global<64x32xf32
// CHECK: %[[H:.*]] = pf.matmul %{{.*}}, %{{.*}} {pf.typed_gemm = "bf16->bf16", transpose_a} : {{.*}} -> !pf.global<64x32xbf16
// CHECK-NEXT: %[[HF:.*]] = pf.cast %[[H]] : !pf.global<64x32xbf16{{.*}} -> !pf.global<64x32xf32
// CHECK-NEXT: pf.relu %[[HF]]
// CHECK: return %[[S]], %[[H]]
func.func @weight_grad(%x: !X, %dy: !DY, %acc: !GF) -> (!GF, !G, !G) {
  %g = pf.matmul %x, %dy {transpose_a} : (!X, !DY) -> !G
  %gf = pf.cast %g : !G -> !GF
  %s = pf.add %acc, %gf : (!GF, !GF) -> !GF
  %h = pf.matmul %x, %dy {transpose_a} : (!X, !DY) -> !G
  %r = pf.relu %h : (!G) -> !G
  return %s, %h, %r : !GF, !G, !G
}

// -----

// Still widened under keep-gemms: rows of 6 bf16 (12 bytes, not 16-byte
// aligned) and of 4 (K = 4 with A untransposed); a batched f16 GEMM with
// aligned rows is kept (f16 alike), and its result, returned, stays f16.
#P = #pf.placement<"cuda", [0]>
// CHECK-LABEL: func.func @widened
// CHECK: pf.matmul {{.*}} : (!pf.global<4x8xf32{{.*}}, !pf.global<8x6xf32{{.*}}) -> !pf.global<4x6xf32
// CHECK: pf.matmul {{.*}} : (!pf.global<16x4xf32{{.*}}, !pf.global<4x32xf32{{.*}}) -> !pf.global<16x32xf32
// CHECK: pf.matmul %{{.*}}, %{{.*}} {pf.typed_gemm = "f16->f16"} : (!pf.global<2x16x64xf16{{.*}}, !pf.global<2x64x32xf16{{.*}}) -> !pf.global<2x16x32xf16
// CHECK-NOT: pf.typed_gemm
func.func @widened(%a: !pf.global<4x8xbf16, #P, #pf.sbp<[B]>>, %b: !pf.global<8x6xbf16, #P, #pf.sbp<[B]>>,
                   %x: !pf.global<16x4xbf16, #P, #pf.sbp<[B]>>, %w: !pf.global<4x32xbf16, #P, #pf.sbp<[B]>>,
                   %p: !pf.global<2x16x64xf16, #P, #pf.sbp<[B]>>, %q: !pf.global<2x64x32xf16, #P, #pf.sbp<[B]>>)
    -> (!pf.global<4x6xbf16, #P, #pf.sbp<[B]>>, !pf.global<16x32xbf16, #P, #pf.sbp<[B]>>, !pf.global<2x16x32xf16, #P, #pf.sbp<[B]>>) {
  %0 = pf.matmul %a, %b : (!pf.global<4x8xbf16, #P, #pf.sbp<[B]>>, !pf.global<8x6xbf16, #P, #pf.sbp<[B]>>) -> !pf.global<4x6xbf16, #P, #pf.sbp<[B]>>
  %1 = pf.matmul %x, %w : (!pf.global<16x4xbf16, #P, #pf.sbp<[B]>>, !pf.global<4x32xbf16, #P, #pf.sbp<[B]>>) -> !pf.global<16x32xbf16, #P, #pf.sbp<[B]>>
  %3 = pf.matmul %p, %q : (!pf.global<2x16x64xf16, #P, #pf.sbp<[B]>>, !pf.global<2x64x32xf16, #P, #pf.sbp<[B]>>) -> !pf.global<2x16x32xf16, #P, #pf.sbp<[B]>>
  return %0, %1, %3 : !pf.global<4x6xbf16, #P, #pf.sbp<[B]>>, !pf.global<16x32xbf16, #P, #pf.sbp<[B]>>, !pf.global<2x16x32xf16, #P, #pf.sbp<[B]>>
}
