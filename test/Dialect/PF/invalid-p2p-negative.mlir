// RUN: pf-opt %s -split-input-file -verify-diagnostics
// XFAIL: *

// Known bug: pf.send/pf.recv's verifier checks `getPeer() < 0 ||
// getTag() < 0`, but an I64Attr's getter returns uint64_t, so a negative
// peer or tag is accepted and the message "peer and tag must be
// non-negative" is never emitted. When the verifier is fixed this test
// passes unexpectedly (XPASS): move these cases into invalid.mlir and
// delete this file.

#R = #pf.placement<"cpu", [0]>
func.func @send_negative_tag(%x: !pf.global<4xf32, #R, #pf.sbp<[B]>>) {
  // expected-error @+1 {{'pf.send' op peer and tag must be non-negative}}
  pf.send %x to 1 tag -1 : !pf.global<4xf32, #R, #pf.sbp<[B]>>
  return
}

// -----

#R = #pf.placement<"cpu", [1]>
func.func @recv_negative_peer() {
  // expected-error @+1 {{'pf.recv' op peer and tag must be non-negative}}
  %0 = pf.recv from -1 tag 0 : !pf.global<4xf32, #R, #pf.sbp<[B]>>
  return
}
