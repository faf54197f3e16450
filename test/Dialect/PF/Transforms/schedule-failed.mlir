// RUN: pf-opt %s -split-input-file -pf-verify-schedule -verify-diagnostics

// A hand-written order that deadlocks: rank 0 starts micro-batch 1's
// backward, which needs rank 1's, which needs rank 0's forward of it.
// expected-error @+1 {{'pf.schedule' op the schedule deadlocks: rank 0 blocks at B1 (micro-batch 1) waiting for B1 of stage 1; rank 1 blocks at F1 (micro-batch 1) waiting for F1 of stage 0}}
pf.schedule {kind = "custom", num_stages = 2, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "B1", "F1", "B0"], ["F0", "B0", "F1", "B1"]]}

// -----

// expected-error @+1 {{'pf.schedule' op rank 1 has 3 actions, expected 4}}
pf.schedule {kind = "custom", num_stages = 2, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F1", "B0", "B1"], ["F0", "B0", "F1"]]}

// -----

// expected-error @+1 {{'pf.schedule' op rank 0: action F0 appears twice}}
pf.schedule {kind = "custom", num_stages = 1, num_microbatches = 2, num_chunks = 1,
             actions = [["F0", "F0", "B0", "B1"]]}

// -----

// expected-error @+1 {{'pf.schedule' op rank 0: 'X3' is not an action (F<mb>, B<mb> or W<mb>, optionally :<chunk>)}}
pf.schedule {kind = "custom", num_stages = 1, num_microbatches = 1, num_chunks = 1,
             actions = [["X3", "B0"]]}

// -----

// expected-error @+1 {{'pf.schedule' op has 1 action lists for 2 pipeline ranks}}
pf.schedule {kind = "custom", num_stages = 2, num_microbatches = 1, num_chunks = 1,
             actions = [["F0", "B0"]]}
