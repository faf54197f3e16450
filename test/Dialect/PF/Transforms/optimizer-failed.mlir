// RUN: not pf-opt %s -pf-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="kind=lamb" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="momentum=-0.5" 2>&1 | FileCheck %s --check-prefix=MOM
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 dampening=1.5" 2>&1 | FileCheck %s --check-prefix=DAMP
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="momentum=0.9 dampening=0.5 nesterov=true" 2>&1 | FileCheck %s --check-prefix=NES
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="weight-decay=-3" 2>&1 | FileCheck %s --check-prefix=WD
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="kind=adam beta2=1.0" 2>&1 | FileCheck %s --check-prefix=BETA
// RUN: not pf-opt %s -pf-autodiff -pf-optimizer="kind=adam eps=-1" 2>&1 | FileCheck %s --check-prefix=EPS

// NOGRAD: error: pf-optimizer found no gradient buffers: run pf-autodiff first
// KIND: for the --kind option: Cannot find option named 'lamb'!
// MOM: error: pf-optimizer: momentum must be >= 0, got -5.000000e-01
// DAMP: error: pf-optimizer: dampening must be in [0, 1], got 1.500000e+00
// NES: error: pf-optimizer: nesterov needs momentum > 0 and zero dampening
// WD: error: pf-optimizer: weight-decay must be >= 0, got -3.000000e+00
// BETA: error: pf-optimizer: betas must be in [0, 1), got (9.000000e-01, 1.000000e+00)
// EPS: error: pf-optimizer: eps must be >= 0, got -1.000000e+00

#P = #pf.placement<"cpu", [0]>
pf.param @w : !pf.global<3x8xf32, #P, #pf.sbp<[B]>> = #pf.init<kaiming_uniform(8)>
func.func @step(%x: !pf.global<4x8xf32, #P, #pf.sbp<[B]>>, %y: !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P> {
  %w = pf.read_param @w : !pf.global<3x8xf32, #P, #pf.sbp<[B]>>
  %h = pf.matmul %x, %w {transpose_b} : (!pf.global<4x8xf32, #P, #pf.sbp<[B]>>, !pf.global<3x8xf32, #P, #pf.sbp<[B]>>) -> !pf.global<4x3xf32, #P>
  %l = pf.softmax_cross_entropy %h, %y : (!pf.global<4x3xf32, #P>, !pf.global<4xi64, #P, #pf.sbp<[B]>>) -> !pf.global<f32, #P>
  return %l : !pf.global<f32, #P>
}
