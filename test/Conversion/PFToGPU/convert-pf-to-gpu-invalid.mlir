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

// (Every runtime row the lowering calls has a device twin now; the error
// for one without, naming the op and the row, is unittests/
// RuntimeABITest.cpp's.)
