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

// An op whose kernel has no device twin yet: named, with the runtime
// function and where the twins are listed.
#P = #pf.placement<"cuda", [0]>
#B = #pf.sbp<[B]>
pf.param @w : !pf.global<4x1x3x3xf32, #P, #B> = #pf.init<kaiming_uniform(9)>
func.func @step(%x: !pf.global<2x1x6x6xf32, #P, #B>, %y: !pf.global<2xi64, #P, #B>) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !pf.global<4x1x3x3xf32, #P, #B>
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'pf.conv2d' has no GPU lowering yet: libpfrt's pfrt_k_conv2d has no device twin (runtime/include/pfrt/pfrt_device.def)
  %c = pf.conv2d %x, %w : (!pf.global<2x1x6x6xf32, #P, #B>, !pf.global<4x1x3x3xf32, #P, #B>) -> !pf.global<2x4x4x4xf32, #P>
  %f = pf.flatten %c : (!pf.global<2x4x4x4xf32, #P>) -> !pf.global<2x64xf32, #P>
  %l = pf.softmax_cross_entropy %f, %y : (!pf.global<2x64xf32, #P>, !pf.global<2xi64, #P, #B>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}

// -----

// Two stages on two GPUs: send/recv need NCCL (GPU part 2).
#P0 = #pf.placement<"cuda", [0]>
#P1 = #pf.placement<"cuda", [1]>
#B = #pf.sbp<[B]>
pf.param @w0 : !pf.global<8x8xf32, #P0, #B> = #pf.init<kaiming_uniform(8)>
pf.param @w1 : !pf.global<4x8xf32, #P1, #B> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<2x8xf32, #P0, #B>, %y: !pf.global<2xi64, #P1, #B>) -> !pf.global<f32, #P1> {
  %w0 = pf.read_param @w0 {pf.stage = 0} : !pf.global<8x8xf32, #P0, #B>
  %h = pf.matmul %x, %w0 {transpose_b, pf.stage = 0} : (!pf.global<2x8xf32, #P0, #B>, !pf.global<8x8xf32, #P0, #B>) -> !pf.global<2x8xf32, #P0>
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'pf.send' has no GPU lowering yet: libpfrt's pfrt_isend
  %t = pf.to_global %h : !pf.global<2x8xf32, #P0> -> !pf.global<2x8xf32, #P1, #B>
  %w1 = pf.read_param @w1 {pf.stage = 1} : !pf.global<4x8xf32, #P1, #B>
  %o = pf.matmul %t, %w1 {transpose_b, pf.stage = 1} : (!pf.global<2x8xf32, #P1, #B>, !pf.global<4x8xf32, #P1, #B>) -> !pf.global<2x4xf32, #P1>
  %l = pf.softmax_cross_entropy %o, %y {pf.stage = 1} : (!pf.global<2x4xf32, #P1>, !pf.global<2xi64, #P1, #B>) -> !pf.global<f32, #P1>
  return %l : !pf.global<f32, #P1>
}
