// Predicted bubbles of the four schedules against their closed forms, with
// unit costs, for p in {2, 4, 8} stages and m in {p, 2p, 4p} micro-batches:
//   GPipe and 1F1B: (p-1)/(m+p-1) of the step; interleaved (v chunks):
//   (p-1)/(v m+p-1); ZB-H1 with F = B = W: idle time p-1 per rank, a third of
//   1F1B's 3(p-1) (its B does the weight gradient too, costing 2).
// Peak in-flight micro-batches: GPipe m; 1F1B min(p - r, m) on rank r;
// ZB-H1 min(p, m) on every rank (a micro-batch is held until its W; W runs
// early enough that no rank holds more than 1F1B's first rank does);
// interleaved Megatron-LM's warm-up count (p-r-1)*2 + (v-1)*p, plus the one
// forward of the steady state, in chunk forwards.

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=2 num-microbatches=2 report=true" -o /dev/null | FileCheck %s --check-prefix=GP2M2
// GP2M2: bubble fraction 0.333333
// GP2M2: peak in-flight micro-batches per rank: 2 2
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=2 num-microbatches=2 report=true" -o /dev/null | FileCheck %s --check-prefix=OP2M2
// OP2M2: bubble fraction 0.333333
// OP2M2: idle time per rank: 3 3
// OP2M2: peak in-flight micro-batches per rank: 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=2 num-microbatches=2 report=true" -o /dev/null | FileCheck %s --check-prefix=IP2M2
// IP2M2: bubble fraction 0.200000
// IP2M2: peak in-flight micro-batches per rank: 4 3
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=2 num-microbatches=2 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP2M2
// ZP2M2: idle time per rank: 1 1
// ZP2M2: peak in-flight micro-batches per rank: 2 2

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=2 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=GP2M4
// GP2M4: bubble fraction 0.200000
// GP2M4: peak in-flight micro-batches per rank: 4 4
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=2 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=OP2M4
// OP2M4: bubble fraction 0.200000
// OP2M4: idle time per rank: 3 3
// OP2M4: peak in-flight micro-batches per rank: 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=2 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=IP2M4
// IP2M4: bubble fraction 0.111111
// IP2M4: peak in-flight micro-batches per rank: 5 3
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=2 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP2M4
// ZP2M4: idle time per rank: 1 1
// ZP2M4: peak in-flight micro-batches per rank: 2 2

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=2 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=GP2M8
// GP2M8: bubble fraction 0.111111
// GP2M8: peak in-flight micro-batches per rank: 8 8
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=2 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=OP2M8
// OP2M8: bubble fraction 0.111111
// OP2M8: idle time per rank: 3 3
// OP2M8: peak in-flight micro-batches per rank: 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=2 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=IP2M8
// IP2M8: bubble fraction 0.058824
// IP2M8: peak in-flight micro-batches per rank: 5 3
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=2 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP2M8
// ZP2M8: idle time per rank: 1 1
// ZP2M8: peak in-flight micro-batches per rank: 2 2

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=4 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=GP4M4
// GP4M4: bubble fraction 0.428571
// GP4M4: peak in-flight micro-batches per rank: 4 4 4 4
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=4 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=OP4M4
// OP4M4: bubble fraction 0.428571
// OP4M4: idle time per rank: 9 9 9 9
// OP4M4: peak in-flight micro-batches per rank: 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=4 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=IP4M4
// IP4M4: bubble fraction 0.272727
// IP4M4: peak in-flight micro-batches per rank: 8 8 7 5
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=4 num-microbatches=4 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP4M4
// ZP4M4: idle time per rank: 3 3 3 3
// ZP4M4: peak in-flight micro-batches per rank: 4 4 4 4

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=4 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=GP4M8
// GP4M8: bubble fraction 0.272727
// GP4M8: peak in-flight micro-batches per rank: 8 8 8 8
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=4 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=OP4M8
// OP4M8: bubble fraction 0.272727
// OP4M8: idle time per rank: 9 9 9 9
// OP4M8: peak in-flight micro-batches per rank: 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=4 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=IP4M8
// IP4M8: bubble fraction 0.157895
// IP4M8: peak in-flight micro-batches per rank: 11 9 7 5
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=4 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP4M8
// ZP4M8: idle time per rank: 3 3 3 3
// ZP4M8: peak in-flight micro-batches per rank: 4 4 4 4

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=4 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=GP4M16
// GP4M16: bubble fraction 0.157895
// GP4M16: peak in-flight micro-batches per rank: 16 16 16 16
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=4 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=OP4M16
// OP4M16: bubble fraction 0.157895
// OP4M16: idle time per rank: 9 9 9 9
// OP4M16: peak in-flight micro-batches per rank: 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=4 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=IP4M16
// IP4M16: bubble fraction 0.085714
// IP4M16: peak in-flight micro-batches per rank: 11 9 7 5
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=4 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP4M16
// ZP4M16: idle time per rank: 3 3 3 3
// ZP4M16: peak in-flight micro-batches per rank: 4 4 4 4

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=8 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=GP8M8
// GP8M8: bubble fraction 0.466667
// GP8M8: peak in-flight micro-batches per rank: 8 8 8 8 8 8 8 8
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=8 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=OP8M8
// OP8M8: bubble fraction 0.466667
// OP8M8: idle time per rank: 21 21 21 21 21 21 21 21
// OP8M8: peak in-flight micro-batches per rank: 8 7 6 5 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=8 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=IP8M8
// IP8M8: bubble fraction 0.304348
// IP8M8: peak in-flight micro-batches per rank: 16 16 16 16 15 13 11 9
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=8 num-microbatches=8 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP8M8
// ZP8M8: idle time per rank: 7 7 7 7 7 7 7 7
// ZP8M8: peak in-flight micro-batches per rank: 8 8 8 8 8 8 8 8

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=8 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=GP8M16
// GP8M16: bubble fraction 0.304348
// GP8M16: peak in-flight micro-batches per rank: 16 16 16 16 16 16 16 16
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=8 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=OP8M16
// OP8M16: bubble fraction 0.304348
// OP8M16: idle time per rank: 21 21 21 21 21 21 21 21
// OP8M16: peak in-flight micro-batches per rank: 8 7 6 5 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=8 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=IP8M16
// IP8M16: bubble fraction 0.179487
// IP8M16: peak in-flight micro-batches per rank: 23 21 19 17 15 13 11 9
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=8 num-microbatches=16 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP8M16
// ZP8M16: idle time per rank: 7 7 7 7 7 7 7 7
// ZP8M16: peak in-flight micro-batches per rank: 8 8 8 8 8 8 8 8

// RUN: pf-opt %s -pf-schedule="kind=gpipe num-stages=8 num-microbatches=32 report=true" -o /dev/null | FileCheck %s --check-prefix=GP8M32
// GP8M32: bubble fraction 0.179487
// GP8M32: peak in-flight micro-batches per rank: 32 32 32 32 32 32 32 32
// RUN: pf-opt %s -pf-schedule="kind=1f1b num-stages=8 num-microbatches=32 report=true" -o /dev/null | FileCheck %s --check-prefix=OP8M32
// OP8M32: bubble fraction 0.179487
// OP8M32: idle time per rank: 21 21 21 21 21 21 21 21
// OP8M32: peak in-flight micro-batches per rank: 8 7 6 5 4 3 2 1
// RUN: pf-opt %s -pf-schedule="kind=interleaved-1f1b num-chunks=2 num-stages=8 num-microbatches=32 report=true" -o /dev/null | FileCheck %s --check-prefix=IP8M32
// IP8M32: bubble fraction 0.098592
// IP8M32: peak in-flight micro-batches per rank: 23 21 19 17 15 13 11 9
// RUN: pf-opt %s -pf-schedule="kind=zb-h1 num-stages=8 num-microbatches=32 report=true" -o /dev/null | FileCheck %s --check-prefix=ZP8M32
// ZP8M32: idle time per rank: 7 7 7 7 7 7 7 7
// ZP8M32: peak in-flight micro-batches per rank: 8 8 8 8 8 8 8 8

module {}
