// RUN: pf-opt %s -split-input-file -pf-apply-schedule -verify-diagnostics

// expected-error @+1 {{pf-apply-schedule: no pf.schedule (run pf-schedule)}}
module {
  module @rank0 attributes {pf.rank = 0} {
  }
}

// -----

// Stages 0 and 1 sit on pipeline ranks 0 and 1 of a 2-rank schedule: one
// rank cannot hold both.
#P0 = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
pf.schedule {kind = "gpipe", num_stages = 2, num_microbatches = 1, num_chunks = 1,
             actions = [["F0", "B0"], ["F0", "B0"]]}
module @rank0 attributes {pf.rank = 0} {
  func.func @step(%x: !A) {
    %a = pf.relu %x {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
    // expected-error @+1 {{'pf.relu' op pf-apply-schedule: rank 0 holds stages of different pipeline ranks}}
    %b = pf.relu %a {pf.stage = 1, pf.microbatch = 0} : (!A) -> !A
    return
  }
}

// -----

// Micro-batch 2 of a schedule of two.
#P0 = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
pf.schedule {kind = "gpipe", num_stages = 1, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "B1"]]}
module @rank0 attributes {pf.rank = 0} {
  func.func @step(%x: !A) {
    %a = pf.relu %x {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
    // expected-error @+1 {{'pf.relu' op pf-apply-schedule: the schedule of pipeline rank 0 has no action F2 (chunk 0) for this op}}
    %b = pf.relu %x {pf.stage = 0, pf.microbatch = 2} : (!A) -> !A
    return
  }
}

// -----

// Micro-batch 1's forward reads micro-batch 0's backward, but GPipe runs
// every forward first.
#P0 = #pf.placement<"cpu", [0]>
!A = !pf.global<4xf32, #P0, #pf.sbp<[B]>>
pf.schedule {kind = "gpipe", num_stages = 1, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "B1"]]}
module @rank0 attributes {pf.rank = 0} {
  func.func @step(%x: !A) {
    %f0 = pf.relu %x {pf.stage = 0, pf.microbatch = 0} : (!A) -> !A
    %b0 = pf.relu %f0 {pf.stage = 0, pf.microbatch = 0, pf.phase = "backward_input"} : (!A) -> !A
    // expected-error @+1 {{'pf.relu' op pf-apply-schedule: the schedule runs this op before the op that computes its operand}}
    %f1 = pf.relu %b0 {pf.stage = 0, pf.microbatch = 1} : (!A) -> !A
    %b1 = pf.relu %f1 {pf.stage = 0, pf.microbatch = 1, pf.phase = "backward_input"} : (!A) -> !A
    return
  }
}
