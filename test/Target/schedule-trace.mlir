// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=2 num-microbatches=2" | pf-translate --pf-emit-schedule-trace | FileCheck %s --check-prefix=TRACE
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=2 num-microbatches=2" | pf-translate --pf-emit-schedule-svg | FileCheck %s --check-prefix=SVG
// RUN: not pf-translate --pf-emit-schedule-svg %s 2>&1 | FileCheck %s --check-prefix=NONE

// The predicted timeline (unit costs, 1 unit = 1 ms): rank 1 starts F0 when
// rank 0 has finished it, and its B0 (F + B = 1 + 2 units) ends at 4 ms.
// TRACE: "traceEvents": [
// TRACE: "cat": "F",
// TRACE-NEXT: "dur": 1000,
// TRACE-NEXT: "name": "F0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 0,
// TRACE-NEXT: "ts": 0
// TRACE: "name": "F0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 1,
// TRACE-NEXT: "ts": 1000
// TRACE: "dur": 2000,
// TRACE-NEXT: "name": "B0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 1,
// TRACE-NEXT: "ts": 2000

// SVG: <svg xmlns="http://www.w3.org/2000/svg" width="{{[0-9]+}}" height="{{[0-9]+}}"
// SVG: zb-h1: 2 stages, 2 micro-batches, bubble
// SVG: rank 0
// SVG: >W1</text>
// SVG: </svg>

// NONE: error: no pf.schedule to draw (run pf-schedule)
module {}
