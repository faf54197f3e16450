//===- Collectives.cpp - Group communicators and collectives over MPI -----===//

#include "../common/CommChecks.h"
#include "../common/HalfMath.h"
#include "../common/Internal.h"
#include "../common/LogicalMath.h"
#include "../cuda/kernels/XentBodies.h"
#include "MpiInternal.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <vector>

using pfrt::comm::groupString;
using pfrt::comm::rootPosition;

using namespace pfrt;

namespace {

struct Group {
  MPI_Comm comm = MPI_COMM_NULL;
  int pos = -1; // our group position
  int n = 0;
};

struct RankListHash {
  size_t operator()(const std::vector<int64_t> &v) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t r : v)
      h = (h ^ uint64_t(r)) * 0x100000001b3ull;
    return size_t(h);
  }
};

std::unordered_map<std::vector<int64_t>, Group, RankListHash> &groupCache() {
  static std::unordered_map<std::vector<int64_t>, Group, RankListHash> cache;
  return cache;
}

/// Validates the group and returns its (cached) communicator.
const Group &getGroup(const int64_t *ranks, int64_t n, const char *fn) {
  requireInit(fn);
  const State &st = state();
  if (!ranks || n < 1 || n > st.size)
    fatal("%s: group size %lld is outside [1, %d] (or ranks is NULL)", fn,
          (long long)n, st.size);
  std::vector<int64_t> key(ranks, ranks + n);
  auto &cache = groupCache();
  auto it = cache.find(key);
  if (it != cache.end())
    return it->second;

  std::vector<char> seen(st.size, 0);
  std::vector<int> members(n);
  int pos = -1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t r = ranks[i];
    if (r < 0 || r >= st.size)
      fatal("%s: group %s names rank %lld, world size is %d", fn,
            groupString(ranks, n).c_str(), (long long)r, st.size);
    if (seen[r]++)
      fatal("%s: group %s lists rank %lld twice", fn,
            groupString(ranks, n).c_str(), (long long)r);
    members[i] = int(r);
    if (r == st.rank)
      pos = int(i);
  }
  if (pos < 0)
    fatal("%s: this rank is not a member of group %s", fn,
          groupString(ranks, n).c_str());

  // Only the members call MPI_Comm_create_group, so disjoint groups never
  // wait for each other. The tag separates creations of different groups.
  MPI_Group worldGroup, sub;
  PFRT_MPI(MPI_Comm_group, (worldComm(), &worldGroup));
  PFRT_MPI(MPI_Group_incl, (worldGroup, int(n), members.data(), &sub));
  int tag = int(RankListHash()(key) & 0x7fff);
  Group g;
  g.pos = pos;
  g.n = int(n);
  PFRT_MPI(MPI_Comm_create_group, (worldComm(), sub, tag, &g.comm));
  PFRT_MPI(MPI_Group_free, (&sub));
  PFRT_MPI(MPI_Group_free, (&worldGroup));
  PFRT_MPI(MPI_Comm_set_errhandler, (g.comm, MPI_ERRORS_RETURN));
  int check = -1;
  PFRT_MPI(MPI_Comm_rank, (g.comm, &check));
  if (check != pos)
    fatal("%s: internal: group position %d but communicator rank %d", fn, pos,
          check);
  return cache.emplace(std::move(key), g).first->second;
}

using comm::checkBuf;
using comm::checkCount;
using comm::kMaxCount;
/// Largest piece of one MPI_Reduce in pfrt_reduce_sum (see there).
constexpr int64_t kReducePiece = int64_t(1) << 24;

int64_t bytesOf(int64_t elems, int64_t elemSize = sizeof(float)) {
  return elems * elemSize;
}

/// A block of c elements of `elem` (elemSize bytes each) whose extent is
/// `stride` elements, so that one datatype instance per peer addresses the
/// c-element slice of each peer's block.
struct StridedBlock {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  StridedBlock(int64_t c, int64_t stride, MPI_Datatype elem = MPI_FLOAT,
               int64_t elemSize = sizeof(float)) {
    MPI_Datatype tmp;
    PFRT_MPI(MPI_Type_contiguous, (int(c), elem, &tmp));
    PFRT_MPI(MPI_Type_create_resized,
             (tmp, 0, MPI_Aint(stride) * MPI_Aint(elemSize), &type));
    PFRT_MPI(MPI_Type_commit, (&type));
    PFRT_MPI(MPI_Type_free, (&tmp));
  }
  ~StridedBlock() { MPI_Type_free(&type); }
};

/// Calls fn(offset, len) over [0, count) in pieces of at most maxMsgElems.
template <typename Fn> void chunked(int64_t count, Fn &&fn) {
  int64_t step = state().maxMsgElems;
  for (int64_t off = 0; off < count; off += step)
    fn(off, std::min(step, count - off));
}

/// The frame of a collective over one block of count elements per member:
/// the group; in and out of one block each, or of all n (inAll, outAll),
/// checked and apart; a trace event over the n blocks; then body(group),
/// unless the blocks are empty.
template <typename Body>
void blockCollective(const void *in, bool inAll, void *out, bool outAll,
                     int64_t count, int64_t elemSize, const int64_t *ranks,
                     int64_t n, const char *fn, const char *traceName,
                     Body body) {
  const Group &g = getGroup(ranks, n, fn);
  int64_t total =
      comm::checkBlockBuffers(in, inAll, out, outAll, count, n, fn, elemSize);
  CommScope trace(traceName, bytesOf(total, elemSize), n, -1);
  if (count > 0)
    body(g);
}

int broadcastImpl(void *buf, int64_t count, MPI_Datatype type, int64_t elemSize,
                  int64_t root, const int64_t *ranks, int64_t n, const char *fn,
                  const char *traceName) {
  const Group &g = getGroup(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(buf, count, "buf", fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  CommScope trace(traceName, bytesOf(count, elemSize), n, -1);
  chunked(count, [&](int64_t off, int64_t c) {
    PFRT_MPI(MPI_Bcast,
             ((char *)buf + off * elemSize, int(c), type, rootPos, g.comm));
  });
  return 0;
}

/// The split all-reduces in flight (pfrt_all_reduce_start), by slot.
struct AsyncReduce {
  bool active = false;
  std::vector<MPI_Request> requests;
};
AsyncReduce gAsync[PFRT_MAX_ASYNC_SLOTS];

/// The group of an all-reduce (blocking or split) after its argument
/// checks: in == out is in place, other overlap is an error.
const Group &allReduceArgs(const void *in, const void *out, int64_t count,
                           int64_t elemSize, const int64_t *ranks, int64_t n,
                           const char *fn) {
  const Group &g = getGroup(ranks, n, fn);
  checkCount(count, fn);
  checkBuf(in, count, "in", fn);
  checkBuf(out, count, "out", fn);
  if (in != out)
    comm::checkNoOverlap(in, count, out, count, fn, elemSize);
  return g;
}

/// inout[i] = round(in[i] + inout[i]) over bf16 (ToF = bf16ToFloat) or f16
/// payloads: the float32 sum of the two (exact unless their exponents are
/// far apart), rounded to nearest even (HalfMath.h).
template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void sumHalves(void *in, void *inout, int *len, MPI_Datatype * /*type*/) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = FromF(ToF(a[i]) + ToF(b[i]));
}

AsyncReduce &asyncSlot(int64_t slot, const char *fn) {
  if (slot < 0 || slot >= PFRT_MAX_ASYNC_SLOTS)
    fatal("%s: slot %lld is outside [0, %d)", fn, (long long)slot,
          PFRT_MAX_ASYNC_SLOTS);
  return gAsync[slot];
}

} // namespace

namespace pfrt {

ReduceType reduceTypeOf(int32_t dtype, const char *fn) {
  static MPI_Op bf16Sum = MPI_OP_NULL, f16Sum = MPI_OP_NULL;
  switch (dtype) {
  case PFRT_DTYPE_F32:
    return {MPI_FLOAT, MPI_SUM, sizeof(float)};
  case PFRT_DTYPE_BF16:
    if (bf16Sum == MPI_OP_NULL)
      PFRT_MPI_AS(
          fn, MPI_Op_create,
          (&sumHalves<half::bf16ToFloat, half::floatToBf16>, 1, &bf16Sum));
    return {MPI_UINT16_T, bf16Sum, 2};
  case PFRT_DTYPE_F16:
    if (f16Sum == MPI_OP_NULL)
      PFRT_MPI_AS(fn, MPI_Op_create,
                  (&sumHalves<half::f16ToFloat, half::floatToF16>, 1, &f16Sum));
    return {MPI_UINT16_T, f16Sum, 2};
  default:
    fatal("%s: dtype %d is not summed (f32, bf16 or f16)", fn, int(dtype));
  }
}

void checkNoReduceInFlight(const char *fn) {
  for (int64_t s = 0; s < PFRT_MAX_ASYNC_SLOTS; ++s)
    if (gAsync[s].active)
      fatal("%s: the all-reduce started in slot %lld was never waited for "
            "(pfrt_all_reduce_wait)",
            fn, (long long)s);
}

int groupPosition(const int64_t *ranks, int64_t n, const char *fn) {
  return getGroup(ranks, n, fn).pos;
}

MPI_Comm groupComm(const int64_t *ranks, int64_t n, const char *fn) {
  return getGroup(ranks, n, fn).comm;
}

namespace {
/// allGather (in: one block) and allToAll (in: a block per member) are one
/// exchange: MPI_Allgather or MPI_Alltoall, chunked through a strided
/// datatype when a block exceeds maxMsgElems.
void exchangeBlocks(bool toAll, const void *in, void *out, int64_t count,
                    MPI_Datatype type, int64_t elemSize, const int64_t *ranks,
                    int64_t n, const char *fn, const char *traceName) {
  auto *exchange = toAll ? &MPI_Alltoall : &MPI_Allgather;
  const char *name = toAll ? "MPI_Alltoall" : "MPI_Allgather";
  blockCollective(
      in, toAll, out, true, count, elemSize, ranks, n, fn, traceName,
      [&](const Group &g) {
        if (count <= state().maxMsgElems) {
          mpiCheck(
              exchange(in, int(count), type, out, int(count), type, g.comm),
              name, fn);
          return;
        }
        chunked(count, [&](int64_t off, int64_t c) {
          StridedBlock blk(c, count, type, elemSize);
          // Each member sends its c-element slice: of its one block, or of
          // every block.
          mpiCheck(exchange((const char *)in + off * elemSize,
                            toAll ? 1 : int(c), toAll ? blk.type : type,
                            (char *)out + off * elemSize, 1, blk.type, g.comm),
                   name, fn);
        });
      });
}
} // namespace

void allGather(const void *in, void *out, int64_t count, MPI_Datatype type,
               int64_t elemSize, const int64_t *ranks, int64_t n,
               const char *fn, const char *traceName) {
  exchangeBlocks(false, in, out, count, type, elemSize, ranks, n, fn,
                 traceName);
}

void reduceScatterSum(const void *in, void *out, int64_t count, int32_t dtype,
                      const int64_t *ranks, int64_t n, const char *fn,
                      const char *traceName) {
  ReduceType rt = reduceTypeOf(dtype, fn);
  const auto *send = static_cast<const char *>(in);
  auto *recv = static_cast<char *>(out);
  blockCollective(
      in, true, out, false, count, rt.elemSize, ranks, n, fn, traceName,
      [&](const Group &g) {
        if (count <= state().maxMsgElems) {
          PFRT_MPI_AS(fn, MPI_Reduce_scatter_block,
                      (in, out, int(count), rt.type, rt.op, g.comm));
          return;
        }
        // Reductions on derived datatypes are not portable, so large blocks
        // go as one reduce per destination, each chunked.
        for (int p = 0; p < g.n; ++p)
          chunked(count, [&](int64_t off, int64_t c) {
            PFRT_MPI_AS(fn, MPI_Reduce,
                        (send + (int64_t(p) * count + off) * rt.elemSize,
                         p == g.pos ? recv + off * rt.elemSize : nullptr,
                         int(c), rt.type, rt.op, p, g.comm));
          });
      });
}

void allToAll(const void *in, void *out, int64_t count, MPI_Datatype type,
              int64_t elemSize, const int64_t *ranks, int64_t n, const char *fn,
              const char *traceName) {
  exchangeBlocks(true, in, out, count, type, elemSize, ranks, n, fn, traceName);
}

} // namespace pfrt

extern "C" {

int pfrt_all_reduce_sum_dtype(const void *in, void *out, int64_t count,
                              int32_t dtype, const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_all_reduce_sum";
  ReduceType rt = reduceTypeOf(dtype, fn);
  const Group &g = allReduceArgs(in, out, count, rt.elemSize, ranks, n, fn);
  bool inPlace = in == out;
  CommScope trace("all_reduce_sum", bytesOf(count, rt.elemSize), n, -1);
  chunked(count, [&](int64_t off, int64_t c) {
    const void *send =
        inPlace ? MPI_IN_PLACE
                : (const void *)((const char *)in + off * rt.elemSize);
    PFRT_MPI(MPI_Allreduce, (send, (char *)out + off * rt.elemSize, int(c),
                             rt.type, rt.op, g.comm));
  });
  return 0;
}

int pfrt_all_reduce_sum(const float *in, float *out, int64_t count,
                        const int64_t *ranks, int64_t n) {
  return pfrt_all_reduce_sum_dtype(in, out, count, PFRT_DTYPE_F32, ranks, n);
}

int pfrt_all_reduce_start_dtype(const void *in, void *out, int64_t count,
                                int32_t dtype, const int64_t *ranks, int64_t n,
                                int64_t slot) {
  const char *fn = "pfrt_all_reduce_start";
  ReduceType rt = reduceTypeOf(dtype, fn);
  const Group &g = allReduceArgs(in, out, count, rt.elemSize, ranks, n, fn);
  bool inPlace = in == out;
  AsyncReduce &a = asyncSlot(slot, fn);
  if (a.active)
    fatal("%s: slot %lld is in flight (started and not waited for)", fn,
          (long long)slot);
  CommScope trace("all_reduce_start", bytesOf(count, rt.elemSize), n, -1);
  a.requests.clear();
  chunked(count, [&](int64_t off, int64_t c) {
    const void *send =
        inPlace ? MPI_IN_PLACE
                : (const void *)((const char *)in + off * rt.elemSize);
    MPI_Request r;
    PFRT_MPI(MPI_Iallreduce, (send, (char *)out + off * rt.elemSize, int(c),
                              rt.type, rt.op, g.comm, &r));
    a.requests.push_back(r);
  });
  a.active = true;
  return 0;
}

int pfrt_all_reduce_start(const float *in, float *out, int64_t count,
                          const int64_t *ranks, int64_t n, int64_t slot) {
  return pfrt_all_reduce_start_dtype(in, out, count, PFRT_DTYPE_F32, ranks, n,
                                     slot);
}

int pfrt_all_reduce_wait(int64_t slot) {
  const char *fn = "pfrt_all_reduce_wait";
  AsyncReduce &a = asyncSlot(slot, fn);
  if (!a.active)
    fatal("%s: slot %lld has no all-reduce in flight", fn, (long long)slot);
  CommScope trace("all_reduce_wait", 0, 0, -1);
  PFRT_MPI(MPI_Waitall,
           (int(a.requests.size()), a.requests.data(), MPI_STATUSES_IGNORE));
  a.requests.clear();
  a.active = false;
  return 0;
}

int pfrt_all_gather(const float *in, float *out, int64_t count,
                    const int64_t *ranks, int64_t n) {
  allGather(in, out, count, MPI_FLOAT, sizeof(float), ranks, n,
            "pfrt_all_gather", "all_gather");
  return 0;
}

int pfrt_reduce_scatter_sum(const float *in, float *out, int64_t count,
                            const int64_t *ranks, int64_t n) {
  reduceScatterSum(in, out, count, PFRT_DTYPE_F32, ranks, n,
                   "pfrt_reduce_scatter_sum", "reduce_scatter_sum");
  return 0;
}

int pfrt_all_to_all(const float *in, float *out, int64_t count,
                    const int64_t *ranks, int64_t n) {
  allToAll(in, out, count, MPI_FLOAT, sizeof(float), ranks, n,
           "pfrt_all_to_all", "all_to_all");
  return 0;
}

int pfrt_broadcast(float *buf, int64_t count, int64_t rootWorldRank,
                   const int64_t *ranks, int64_t n) {
  return broadcastImpl(buf, count, MPI_FLOAT, sizeof(float), rootWorldRank,
                       ranks, n, "pfrt_broadcast", "broadcast");
}

int pfrt_broadcast_i64(int64_t *buf, int64_t count, int64_t rootWorldRank,
                       const int64_t *ranks, int64_t n) {
  return broadcastImpl(buf, count, MPI_INT64_T, sizeof(int64_t), rootWorldRank,
                       ranks, n, "pfrt_broadcast_i64", "broadcast_i64");
}

int pfrt_reduce_sum_dtype(const void *in, void *out, int64_t count,
                          int32_t dtype, int64_t root, const int64_t *ranks,
                          int64_t n) {
  const char *fn = "pfrt_reduce_sum";
  ReduceType rt = reduceTypeOf(dtype, fn);
  const Group &g = getGroup(ranks, n, fn);
  checkCount(count, fn);
  int rootPos = rootPosition(ranks, n, root, fn);
  bool isRoot = rootPos == g.pos;
  comm::checkReduceBuffers(in, out, count, isRoot, fn, rt.elemSize);
  bool inPlace = isRoot && in == out;
  CommScope trace("reduce_sum", bytesOf(count, rt.elemSize), n, -1);
  // MPICH 4.0.x crashes on MPI_Reduce with MPI_IN_PLACE at a non-zero root
  // (pmodels/mpich#6540, fixed in 4.1.2), so an in-place root reduces from
  // a copy. Pieces are capped at 2^24 elements to bound that copy; every
  // rank uses the same cap so the calls pair up whoever is in place.
  int64_t piece = std::min<int64_t>(state().maxMsgElems, kReducePiece);
  std::vector<char> copy;
  const auto *src = static_cast<const char *>(in);
  auto *dst = static_cast<char *>(out);
  for (int64_t off = 0; off < count; off += piece) {
    int64_t len = std::min(piece, count - off);
    const char *send = src + off * rt.elemSize;
    if (inPlace) {
      copy.assign(dst + off * rt.elemSize, dst + (off + len) * rt.elemSize);
      send = copy.data();
    }
    PFRT_MPI(MPI_Reduce, (send, isRoot ? dst + off * rt.elemSize : nullptr,
                          int(len), rt.type, rt.op, rootPos, g.comm));
  }
  return 0;
}

int pfrt_reduce_sum(const float *in, float *out, int64_t count,
                    int64_t rootWorldRank, const int64_t *ranks, int64_t n) {
  return pfrt_reduce_sum_dtype(in, out, count, PFRT_DTYPE_F32, rootWorldRank,
                               ranks, n);
}

int pfrt_broadcast_dtype(void *buf, int64_t count, int32_t dtype, int64_t root,
                         const int64_t *ranks, int64_t n) {
  const char *fn = "pfrt_broadcast";
  MPI_Datatype type = MPI_DATATYPE_NULL;
  switch (dtype) {
  case PFRT_DTYPE_F32:
    type = MPI_FLOAT;
    break;
  case PFRT_DTYPE_I64:
    type = MPI_INT64_T;
    break;
  case PFRT_DTYPE_I32:
    type = MPI_INT32_T;
    break;
  case PFRT_DTYPE_BOOL:
    type = MPI_UINT8_T;
    break;
  case PFRT_DTYPE_BF16:
  case PFRT_DTYPE_F16:
    type = MPI_UINT16_T;
    break;
  default:
    fatal("%s: dtype %d is not a pfrt dtype (PFRT_DTYPE_*)", fn, int(dtype));
  }
  return broadcastImpl(buf, count, type, logical::dtypeBytes(dtype), root,
                       ranks, n, fn, "broadcast");
}

int pfrt_group_barrier(const int64_t *ranks, int64_t n) {
  const Group &g = getGroup(ranks, n, "pfrt_group_barrier");
  CommScope trace("group_barrier", 0, n, -1);
  PFRT_MPI(MPI_Barrier, (g.comm));
  return 0;
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Vocabulary-parallel cross-entropy
//===----------------------------------------------------------------------===//

namespace {

/// What both directions of the vocabulary-parallel cross-entropy share: the
/// validated arguments, the group and the all-reduced row statistics.
struct VocabXent {
  /// Validates the arguments (fatal, naming `fn`) and finds the group.
  VocabXent(const char *fn, const float *logits, const int64_t *labels,
            int64_t n, int64_t c, int64_t offset, int64_t classes,
            int64_t ignore, int64_t mode, const int64_t *ranks, int64_t nranks)
      : fn(fn), logits(logits), labels(labels), n(n), c(c), offset(offset),
        classes(classes), ignore(ignore), mode(mode) {
    check(ranks, nranks);
  }
  const char *fn;
  const float *logits;
  const int64_t *labels;
  int64_t n, c, offset, classes, ignore, mode;
  const Group *group = nullptr;
  int64_t groupSize = 0;
  std::vector<float> rowMax; // [n], all-reduced with MPI_MAX
  std::vector<double> sums;  // [n] sum of exp(x - max), then [n] target

  bool ignored(int64_t r) const { return mode != 0 && labels[r] == ignore; }

  void check(const int64_t *ranks, int64_t nranks) {
    if (n < 1 || c < 1 || offset < 0 || classes < offset + c)
      fatal("%s: n = %lld, c = %lld, offset = %lld do not lie in a row of "
            "%lld classes",
            fn, (long long)n, (long long)c, (long long)offset,
            (long long)classes);
    if (n > INT32_MAX / 2) // 2n doubles in one all-reduce
      fatal("%s: %lld rows are more than one all-reduce takes", fn,
            (long long)n);
    if (mode < 0 || mode > 2)
      fatal("%s: mode %lld is not 0 (mean), 1 (mean of kept rows) or 2 (sum)",
            fn, (long long)mode);
    checkBuf(logits, n * c, "logits", fn);
    checkBuf(labels, n, "labels", fn);
    group = &getGroup(ranks, nranks, fn);
    groupSize = nranks;
    for (int64_t r = 0; r < n; ++r)
      if (!ignored(r) && (labels[r] < 0 || labels[r] >= classes))
        fatal("%s: label %lld at row %lld is outside [0, %lld)", fn,
              (long long)labels[r], (long long)r, (long long)classes);
  }

  /// The body parameters of this call (XentBodies.h).
  dev::VocabXent params() const {
    return {n, c, offset, classes, ignore, int32_t(mode), 0};
  }

  /// The rows' maxima and sums of exponentials over every member's block
  /// (and, with `target`, each row's label logit): XentBodies.h's bodies,
  /// which the device twin (cuda/DeviceVocabXent.cpp) runs between NCCL's
  /// all-reduces, so both give the same bits.
  void reduce(bool target) {
    const dev::VocabXent p = params();
    rowMax.assign(n, 0.0f);
    for (int64_t r = 0; r < n; ++r)
      dev::vxentRowMaxAt(logits, rowMax.data(), p, r);
    {
      CommScope trace("all_reduce_max", int64_t(sizeof(float)) * n, groupSize,
                      -1);
      PFRT_MPI_AS(fn, MPI_Allreduce,
                  (MPI_IN_PLACE, rowMax.data(), int(n), MPI_FLOAT, MPI_MAX,
                   group->comm));
    }
    int64_t count = target ? 2 * n : n;
    sums.assign(count, 0.0);
    for (int64_t r = 0; r < n; ++r)
      dev::vxentRowSumsAt(logits, labels, rowMax.data(), sums.data(), p, target,
                          r);
    CommScope trace("all_reduce_sum", int64_t(sizeof(double)) * count,
                    groupSize, -1);
    PFRT_MPI_AS(fn, MPI_Allreduce,
                (MPI_IN_PLACE, sums.data(), int(count), MPI_DOUBLE, MPI_SUM,
                 group->comm));
  }
};

} // namespace

extern "C" {

int pfrt_softmax_xent_vocab(const float *logits, const int64_t *labels,
                            float *loss, int64_t n, int64_t c, int64_t offset,
                            int64_t classes, int64_t ignore_index, int64_t mode,
                            const int64_t *ranks, int64_t nranks) {
  VocabXent x("pfrt_softmax_xent_vocab", logits, labels, n, c, offset, classes,
              ignore_index, mode, ranks, nranks);
  checkBuf(loss, 1, "loss", x.fn);
  x.reduce(/*target=*/true);
  // The labels are checked (check()): the error record stays empty.
  dev::DeviceError err = {};
  dev::vxentLoss(labels, x.rowMax.data(), x.sums.data(), loss, x.params(),
                 &err);
  return 0;
}

int pfrt_softmax_xent_vocab_grad(const float *logits, const int64_t *labels,
                                 const float *dloss, float *dlogits, int64_t n,
                                 int64_t c, int64_t offset, int64_t classes,
                                 int64_t ignore_index, int64_t mode,
                                 const int64_t *ranks, int64_t nranks) {
  VocabXent x("pfrt_softmax_xent_vocab_grad", logits, labels, n, c, offset,
              classes, ignore_index, mode, ranks, nranks);
  checkBuf(dloss, 1, "dloss", x.fn);
  checkBuf(dlogits, n * c, "dlogits", x.fn);
  x.reduce(/*target=*/false);
  const dev::VocabXent p = x.params();
  dev::DeviceError err = {};
  double scale;
  dev::vxentGradScale(labels, dloss, &scale, p, &err);
  for (int64_t i = 0; i < n * c; ++i)
    dev::vxentGradAt(logits, labels, x.rowMax.data(), x.sums.data(), &scale,
                     dlogits, p, i);
  return 0;
}

} // extern "C"
