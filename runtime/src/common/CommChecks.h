//===- CommChecks.h - argument checks of the collectives --------*- C++ -*-===//
//
// What the MPI collectives (mpi/Collectives.cpp) and their NCCL versions
// (cuda/Nccl.cpp) check of their arguments, written once so both give the
// same messages for the same mistakes.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_COMMON_COMMCHECKS_H
#define PFRT_SRC_COMMON_COMMCHECKS_H

#include "Internal.h"

#include <cstdint>
#include <string>

namespace pfrt {
namespace comm {

/// The most elements one collective moves.
constexpr int64_t kMaxCount = int64_t(1) << 60;

inline void checkCount(int64_t count, const char *fn) {
  if (count < 0 || count > kMaxCount)
    fatal("%s: count %lld is outside [0, 2^60]", fn, (long long)count);
}

inline void checkBuf(const void *p, int64_t count, const char *what,
                     const char *fn) {
  if (!p && count > 0)
    fatal("%s: %s is NULL with count %lld", fn, what, (long long)count);
}

/// Fatal if [a, a+na) and [b, b+nb) (in elements of elemSize bytes) share
/// memory.
inline void checkNoOverlap(const void *a, int64_t na, const void *b, int64_t nb,
                           const char *fn, int64_t elemSize = sizeof(float)) {
  if (na == 0 || nb == 0)
    return;
  const char *ca = static_cast<const char *>(a),
             *cb = static_cast<const char *>(b);
  if (ca < cb + nb * elemSize && cb < ca + na * elemSize)
    fatal("%s: input and output buffers overlap", fn);
}

/// "[r0, r1, ...]": a group's world ranks for messages (the first 16).
/// The buffer checks of an all-reduce (host row, split or not, and the
/// NCCL twins): a valid count, both buffers given, and out either in or
/// apart from it.
inline void checkAllReduceBuffers(const float *in, const float *out,
                                  int64_t count, const char *fn) {
  checkCount(count, fn);
  checkBuf(in, count, "in", fn);
  checkBuf(out, count, "out", fn);
  if (in != out)
    checkNoOverlap(in, count, out, count, fn);
}

inline std::string groupString(const int64_t *ranks, int64_t n) {
  std::string s = "[";
  for (int64_t i = 0; i < n && i < 16; ++i)
    s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (n > 16)
    s += ", ...";
  return s + "]";
}

/// The position of world rank `root` in the group; fatal if absent.
inline int rootPosition(const int64_t *ranks, int64_t n, int64_t root,
                        const char *fn) {
  for (int64_t i = 0; i < n; ++i)
    if (ranks[i] == root)
      return int(i);
  fatal("%s: root rank %lld is not in group %s", fn, (long long)root,
        groupString(ranks, n).c_str());
}

/// n blocks of count elements; fatal if that overflows kMaxCount.
inline int64_t mulCount(int64_t n, int64_t count, const char *fn) {
  int64_t r;
  if (__builtin_mul_overflow(n, count, &r) || r > kMaxCount)
    fatal("%s: %lld x %lld elements overflow", fn, (long long)n,
          (long long)count);
  return r;
}

/// The buffer checks of a collective over one block of count elements per
/// member of n: in and out of one block each, or of all n blocks (inAll,
/// outAll), given and apart. Returns the n blocks' element count.
inline int64_t checkBlockBuffers(const void *in, bool inAll, const void *out,
                                 bool outAll, int64_t count, int64_t n,
                                 const char *fn,
                                 int64_t elemSize = sizeof(float)) {
  checkCount(count, fn);
  int64_t total = mulCount(n, count, fn);
  int64_t inCount = inAll ? total : count, outCount = outAll ? total : count;
  checkBuf(in, inCount, "in", fn);
  checkBuf(out, outCount, "out", fn);
  checkNoOverlap(in, inCount, out, outCount, fn, elemSize);
  return total;
}

/// The buffer checks of a reduce to a root (count checked): in given, and
/// on the root out given and either in or apart from it.
inline void checkReduceBuffers(const void *in, const void *out, int64_t count,
                               bool isRoot, const char *fn,
                               int64_t elemSize = sizeof(float)) {
  checkBuf(in, count, "in", fn);
  if (!isRoot)
    return;
  checkBuf(out, count, "out (on the root)", fn);
  if (in != out)
    checkNoOverlap(in, count, out, count, fn, elemSize);
}

} // namespace comm
} // namespace pfrt

#endif // PFRT_SRC_COMMON_COMMCHECKS_H
