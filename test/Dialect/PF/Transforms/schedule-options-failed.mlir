// RUN: not pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=4 num-microbatches=6" 2>&1 | FileCheck %s --check-prefix=MULTIPLE
// RUN: not pf-opt %s -pf-schedule="kind=bubbly num-stages=2 num-microbatches=2" 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not pf-opt %s -pf-schedule="kind=1f1b num-chunks=2 num-stages=2 num-microbatches=2" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not pf-opt %s -pf-schedule="kind=none num-stages=2 num-microbatches=2" 2>&1 | FileCheck %s --check-prefix=NONE

// MULTIPLE: error: pf-schedule: interleaved-1f1b needs the number of micro-batches (6) to be a multiple of the number of pipeline stages (4), as Megatron-LM and Colossal-AI require
// KIND: for the --kind option: Cannot find option named 'bubbly'!
// CHUNKS: error: pf-schedule: only interleaved-1f1b uses virtual chunks (num-chunks = 2)
// NONE: for the --kind option: Cannot find option named 'none'!
module {}
