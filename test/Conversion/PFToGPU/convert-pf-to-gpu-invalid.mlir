// What convert-pf-to-gpu cannot compile is a located error, never host
// code on device addresses.
// RUN: not pf-opt %s -split-input-file -pf-compile-gpu-pipeline="optimizer=sgd" 2>&1 | FileCheck %s

// A value placed on "cpu".
#P = #pf.placement<"cpu", [0]>
#B = #pf.sbp<[B]>
// CHECK: invalid.mlir:[[@LINE+1]]:1: error: 'pf.param' op is placed on 'cpu', but convert-pf-to-gpu compiles GPU ranks
pf.param @w : !pf.global<4x8xf32, #P, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<2x8xf32, #P, #B>, %y: !pf.global<2xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !pf.global<4x8xf32, #P, #B>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<2x8xf32, #P, #B>, !pf.global<4x8xf32, #P, #B>) -> !pf.global<2x4xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<2x4xf32, #P>, !pf.global<2xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// An op whose runtime function has no device twin yet: named, with the
// function and where the twins are listed (the broadcast of int64 labels
// from one GPU rank to two; float broadcasts have their staged twin).
#P = #pf.placement<"cuda", [0]>
#P01 = #pf.placement<"cuda", [0, 1]>
#B = #pf.sbp<[B]>
pf.param @w : !pf.global<4x8xf32, #P01, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<2x8xf32, #P01, #B>, %y: !pf.global<2xi64, #P, #B>) -> !pf.global<f32, #P01> {
  %w = pf.read_param @w : !pf.global<4x8xf32, #P01, #B>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<2x8xf32, #P01, #B>, !pf.global<4x8xf32, #P01, #B>) -> !pf.global<2x4xf32, #P01>
  // CHECK: invalid.mlir:[[@LINE+1]]:9: error: 'pf.broadcast' has no GPU lowering yet: libpfrt's pfrt_broadcast_i64 has no device twin (runtime/include/pfrt/pfrt_device.def)
  %yb = pf.to_global %y : !pf.global<2xi64, #P, #B> -> !pf.global<2xi64, #P01, #B>
  %l = pf.softmax_cross_entropy %h, %yb : (!pf.global<2x4xf32, #P01>, !pf.global<2xi64, #P01, #B>) -> !pf.global<f32, #P01>
  return %l : !pf.global<f32, #P01>
}
