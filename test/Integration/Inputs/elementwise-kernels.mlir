// Every element-wise op with a generated kernel (Kernels/Elementwise.h),
// each activation kind forward and backward: the input of
// gpu-kernels-device.test and gpu-binary.mlir.
#P = #pf.placement<"cuda", [0]>
!X = !pf.global<16xf32, #P>
func.func @all(%x: !X, %y: !X) -> !X {
  %a = pf.add %x, %y : (!X, !X) -> !X
  %m = pf.mul %a, %y : (!X, !X) -> !X
  %r = pf.relu %m : (!X) -> !X
  %rg = pf.relu_grad %r, %x : (!X, !X) -> !X
  %g = pf.activation %rg {kind = "gelu"} : (!X) -> !X
  %gg = pf.activation_grad %g, %x {kind = "gelu"} : (!X, !X) -> !X
  %t = pf.activation %gg {kind = "gelu_tanh"} : (!X) -> !X
  %tg = pf.activation_grad %t, %x {kind = "gelu_tanh"} : (!X, !X) -> !X
  %h = pf.activation %tg {kind = "tanh"} : (!X) -> !X
  %hg = pf.activation_grad %h, %x {kind = "tanh"} : (!X, !X) -> !X
  %s = pf.activation %hg {kind = "sigmoid"} : (!X) -> !X
  %sg = pf.activation_grad %s, %x {kind = "sigmoid"} : (!X, !X) -> !X
  return %sg : !X
}
