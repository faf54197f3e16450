//===- SendCompletion.h - where a non-blocking send is known done -*- C++
//-*-===//
//
// Sends are non-blocking and only receives block, as the schedule simulator
// assumes; without more knowledge a send's buffer must live until the end
// of the step. But the whole job's programs are known here, so for a send
// S from rank r to q (received by q's matching receive R) this finds the
// first op of r after S that cannot complete before q has passed R:
//
//  - a receive on r whose matching send on q comes after R in q's program;
//  - a collective on r whose group holds q (all-reduce, all-gather,
//    reduce-scatter, all-to-all: r's result needs every member's input)
//    and whose instance on q comes after R.
//
// S is then complete once that op has completed: the conversion waits for
// it there and the memory plan frees its buffer. Sends and receives match
// by (source, destination, tag) in order, collectives by group in order,
// as MPI matches them (pf/Analysis/CommEvents.h). Only such direct
// evidence is used (no chains through third ranks); a send without any
// stays until the end of the step.
//
//===----------------------------------------------------------------------===//

#ifndef PF_CONVERSION_COMMON_SENDCOMPLETION_H
#define PF_CONVERSION_COMMON_SENDCOMPLETION_H

#include "pf/Analysis/CommEvents.h"

namespace mlir::pf {

/// For every pf.send of every rank, the op of the same rank after which the
/// send is complete; sends without one are absent.
llvm::DenseMap<Operation *, Operation *>
analyzeSendCompletion(const RankSteps &steps);

} // namespace mlir::pf

#endif // PF_CONVERSION_COMMON_SENDCOMPLETION_H
