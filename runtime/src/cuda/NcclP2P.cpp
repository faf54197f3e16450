//===- NcclP2P.cpp - the point-to-point twins on NCCL ---------------------===//
//
// Point to point (send, recv, isend, isend_tracked, p2p_batch): NCCL has no
// tags, it matches a pair's messages in the order each side posts them,
// where MPI matched them by tag. So every rank's messages per peer (tag and
// count, in order) are compared with the peer's before any goes over NCCL:
// setupPointToPoint, where every rank compares its record with each peer's
// (over MPI, peers in ascending order: a pairwise exchange that cannot
// deadlock) and checks that the pair has two devices. Only if every pair of
// the job agrees (an all-reduce of the verdicts) does point-to-point move
// to NCCL, for every rank at once; otherwise it stays host-staged, said on
// stderr when the records disagree (a schedule NCCL cannot run as it
// stands), and fatal under PFRT_CUDA_COMM=nccl.
//
// The records come from one of two places. A compiled rank hands its plan
// to pfrt_cuda_p2p_plan at start-up (planPointToPoint: the compiler lists
// its step's sends and receives in order), so the setup runs before the
// first step and every step is device-only, the first included; each
// message a step then posts is checked against the plan (fatal where it
// differs, before anything moves), and the step's end checks that it
// posted them all. Without a plan (a program calling the twins itself), the
// first step runs host-staged (MPI, tags) while StagedP2P.cpp records its
// messages, and pfrt_cuda_run_step calls the setup at its end.
//
// Each pair gets two 2-rank communicators, one per direction. Receives are
// enqueued on the compute stream (a batch's in one NCCL group); a send
// waits on a stream of its peer's own, forked from the compute stream, so
// it never holds the compute stream (NCCL's send blocks its stream until
// the peer receives, where MPI's isend returned at once: the schedules
// assume only receives block). Blocking sends, pfrt_wait_send and
// pfrt_wait_sends make the compute stream wait for the send streams
// (events), and so does the end of every step (a capture must join the
// streams it forked): the steps after the first are captured as CUDA
// graphs when nothing else is staged.
//
//===----------------------------------------------------------------------===//

#include "NcclComm.h"
#include "NcclInternal.h"

#include "../common/CommChecks.h"
#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "../mpi/MpiInternal.h"
#include "CudaInternal.h"
#include "ExposedComm.h"
#include "emulation/FakeNccl.h"
#include "pfrt/pfrt.h"

#include <nccl.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

using pfrt::comm::checkBuf;
using pfrt::comm::checkCount;

using namespace pfrt;
using namespace pfrt::nccl::impl;

namespace pfrt {
namespace nccl {

namespace {

struct Message {
  int64_t tag, count;
  bool operator==(const Message &o) const {
    return tag == o.tag && count == o.count;
  }
};

struct PeerRecord {
  std::vector<Message> sends, recvs;
};

/// A pair's two communicators (this rank's sends, the peer's sends) and
/// the stream this rank's sends to the peer wait on.
struct Link {
  ncclComm_t out = nullptr, in = nullptr;
  int peerPos = 0; // the peer's position in both
  void *stream = nullptr;
  bool pending = false; // sends not joined to the compute stream yet
};

constexpr int64_t kMaxRecorded = int64_t(1) << 20;

/// How far this step got in a peer's planned messages.
struct Cursor {
  size_t sends = 0, recvs = 0;
};

struct PointToPoint {
  bool recording = true, overflow = false, over = false;
  std::map<int64_t, PeerRecord> records;
  /// The plan (pfrt_cuda_p2p_plan) where one was given: each step's
  /// messages by peer, how far this step got, and whether it posted any.
  bool planned = false, posted = false;
  std::map<int64_t, PeerRecord> plan;
  std::map<int64_t, Cursor> cursors;
  std::map<int64_t, Link> links;
  void *fork = nullptr;
  std::vector<void *> done; // events; reused after each joinSends
  size_t nextDone = 0;
  /// Tracked sends since the last joinSends, by handle: numbered from 0
  /// like the host row's (the compiler waits for handle k of the step).
  std::vector<void *> tracked;
  MPI_Comm comm = MPI_COMM_NULL;
  /// Inside a batch's receive group, and its exposed-time span (or -1).
  bool inGroup = false;
  int64_t groupSpan = -1;
} gP2P;

void *doneEvent() {
  PointToPoint &p = gP2P;
  if (p.nextDone == p.done.size())
    p.done.push_back(cuda::newEvent("pfrt point-to-point over NCCL"));
  return p.done[p.nextDone++];
}

std::string describe(const std::vector<Message> &m, size_t k) {
  if (k >= m.size())
    return "nothing";
  return std::to_string(m[k].count) + " floats (tag " +
         std::to_string(m[k].tag) + ")";
}

/// Where rank `a`'s messages to `b` (sent) and b's from a (received)
/// first differ, or "" when they agree.
std::string firstDifference(int64_t a, const std::vector<Message> &sent,
                            int64_t b, const std::vector<Message> &received) {
  for (size_t k = 0; k < std::max(sent.size(), received.size()); ++k)
    if (k >= sent.size() || k >= received.size() || !(sent[k] == received[k]))
      return "message " + std::to_string(k) + " from rank " +
             std::to_string(a) + " to rank " + std::to_string(b) + ": rank " +
             std::to_string(a) + " sends " + describe(sent, k) + ", rank " +
             std::to_string(b) + " receives " + describe(received, k);
  return "";
}

std::vector<int64_t> flatten(const PeerRecord &r, bool usable) {
  std::vector<int64_t> v = {usable ? 1 : 0, hostKey(), deviceKey(),
                            int64_t(r.sends.size()), int64_t(r.recvs.size())};
  for (const auto *list : {&r.sends, &r.recvs})
    for (const Message &m : *list)
      v.insert(v.end(), {m.tag, m.count});
  return v;
}

PeerRecord unflatten(const std::vector<int64_t> &v) {
  PeerRecord r;
  size_t k = 5;
  for (int64_t i = 0; i < v[3]; ++i, k += 2)
    r.sends.push_back({v[k], v[k + 1]});
  for (int64_t i = 0; i < v[4]; ++i, k += 2)
    r.recvs.push_back({v[k], v[k + 1]});
  return r;
}

void exchange(std::vector<int64_t> &mine, std::vector<int64_t> &theirs,
              int64_t peer) {
  const char *fn = "pfrt point-to-point setup";
  int64_t n = int64_t(mine.size()), m = 0;
  PFRT_MPI_AS(fn, MPI_Sendrecv,
              (&n, 1, MPI_INT64_T, int(peer), 1, &m, 1, MPI_INT64_T, int(peer),
               1, gP2P.comm, MPI_STATUS_IGNORE));
  theirs.assign(size_t(m), 0);
  PFRT_MPI_AS(fn, MPI_Sendrecv,
              (mine.data(), int(n), MPI_INT64_T, int(peer), 2, theirs.data(),
               int(m), MPI_INT64_T, int(peer), 2, gP2P.comm,
               MPI_STATUS_IGNORE));
}

/// One communicator of the pair {me, peer}, its id made by the lower rank.
ncclComm_t pairComm(int64_t me, int64_t peer, const char *fn) {
  int64_t lo = std::min(me, peer), hi = std::max(me, peer);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (me == lo) {
    check(gNccl.api.ncclGetUniqueId(&id), "ncclGetUniqueId", fn);
    PFRT_MPI_AS(fn, MPI_Send,
                (&id, int(sizeof(id)), MPI_BYTE, int(peer), 3, gP2P.comm));
  } else {
    PFRT_MPI_AS(fn, MPI_Recv,
                (&id, int(sizeof(id)), MPI_BYTE, int(peer), 3, gP2P.comm,
                 MPI_STATUS_IGNORE));
  }
  if (gNccl.emulated) {
    int64_t pair[2] = {lo, hi};
    fake::ncclNextGroup(pair, 2);
  }
  ncclComm_t c = nullptr;
  check(gNccl.api.ncclCommInitRank(&c, 2, id, me == lo ? 0 : 1),
        "ncclCommInitRank", fn);
  watch(c, "the point-to-point pair of ranks " + std::to_string(lo) + " and " +
               std::to_string(hi));
  return c;
}

Link &linkTo(int64_t peer, int64_t count, const void *buf, const char *fn) {
  checkCount(count, fn);
  checkBuf(buf, count, "buf", fn);
  auto it = gP2P.links.find(peer);
  if (it == gP2P.links.end())
    fatal("%s: rank %lld is not a peer of this rank's point-to-point over "
          "NCCL (%s; the steps must exchange the same messages)",
          fn, (long long)peer,
          gP2P.planned ? "the compiled plan lists no message with it"
                       : "the first step exchanged nothing with it");
  return it->second;
}

/// Checks a message against the plan (where there is one) before it is
/// posted: NCCL would match it to whatever the peer posts in its place.
void expect(int64_t peer, bool isSend, int64_t tag, int64_t count,
            const char *fn) {
  PointToPoint &p = gP2P;
  if (!p.planned)
    return;
  p.posted = true;
  const PeerRecord &r = p.plan[peer];
  const std::vector<Message> &list = isSend ? r.sends : r.recvs;
  Cursor &c = p.cursors[peer];
  size_t &k = isSend ? c.sends : c.recvs;
  Message m{tag, count};
  if (k >= list.size() || !(list[k] == m))
    fatal("%s: message %zu of this step %s rank %lld is %s, but the "
          "compiled plan (pfrt_cuda_p2p_plan) lists %s: NCCL matches a "
          "pair's messages in order, so the plan must be the step's",
          fn, k, isSend ? "to" : "from", (long long)peer,
          describe({m}, 0).c_str(), describe(list, k).c_str());
  ++k;
}

/// The step's end: every planned message was posted.
void checkStepPosted() {
  PointToPoint &p = gP2P;
  if (!p.planned || !p.posted)
    return;
  for (auto &[peer, r] : p.plan) {
    Cursor &c = p.cursors[peer];
    if (c.sends != r.sends.size() || c.recvs != r.recvs.size())
      fatal("pfrt_wait_sends: the step posted %zu of its %zu planned sends to "
            "rank %lld and %zu of its %zu planned receives from it "
            "(pfrt_cuda_p2p_plan): the steps must post the planned messages",
            c.sends, r.sends.size(), (long long)peer, c.recvs, r.recvs.size());
  }
  p.cursors.clear();
  p.posted = false;
}

} // namespace

void recordPointToPoint(bool isSend, int64_t peer, int64_t tag, int64_t count) {
  PointToPoint &p = gP2P;
  if (!p.recording)
    return;
  PeerRecord &r = p.records[peer];
  if (int64_t(r.sends.size() + r.recvs.size()) >= kMaxRecorded) {
    p.overflow = true;
    return;
  }
  (isSend ? r.sends : r.recvs).push_back({tag, count});
}

bool setupPointToPoint() {
  PointToPoint &p = gP2P;
  const char *fn = "pfrt point-to-point setup";
  if (!p.recording)
    return p.over;
  p.recording = false;
  int64_t me = pfrt_rank();
  if (pfrt_world_size() == 1)
    return false;
  // Every rank comes here (the end of its first step), whatever it has.
  PFRT_MPI_AS(fn, MPI_Comm_dup, (worldComm(), &p.comm));
  bool usable = gNccl.available && !p.overflow && !p.records.count(me);
  std::string why;
  if (!gNccl.available)
    why = "NCCL is not in use";
  else if (p.overflow)
    why = "more than 2^20 messages a step";
  else if (p.records.count(me))
    why = "rank " + std::to_string(me) + " sends to itself";
  bool ordered = true, ok = usable;
  for (auto &[peer, record] : p.records) {
    if (peer == me)
      continue;
    std::vector<int64_t> mine = flatten(record, usable), theirs;
    exchange(mine, theirs, peer);
    PeerRecord other = unflatten(theirs);
    if (theirs[0] == 0) {
      ok = false;
      if (why.empty())
        why = "rank " + std::to_string(peer) + " cannot use NCCL";
      continue;
    }
    if (theirs[1] == mine[1] && theirs[2] == mine[2]) {
      ok = false;
      if (why.empty())
        why = "ranks " + std::to_string(me) + " and " + std::to_string(peer) +
              " share a GPU";
    }
    std::string d = firstDifference(me, record.sends, peer, other.recvs);
    if (d.empty())
      d = firstDifference(peer, other.sends, me, record.recvs);
    if (!d.empty()) {
      ok = ordered = false;
      why = "the ranks post their messages in different orders (" + d + ")";
    }
  }
  int mineOk = ok ? 1 : 0, allOk = 0;
  PFRT_MPI_AS(fn, MPI_Allreduce,
              (&mineOk, &allOk, 1, MPI_INT, MPI_MIN, p.comm));
  if (!allOk) {
    p.records.clear();
    if (!ok && gNccl.forced)
      fatal("PFRT_CUDA_COMM=nccl, but point-to-point cannot go over NCCL: "
            "%s",
            why.c_str());
    if (!ordered)
      std::fprintf(stderr,
                   "pfrt: rank %lld: point-to-point stays host-staged: %s "
                   "(NCCL matches a pair's messages in order, not by tag)\n",
                   (long long)me, why.c_str());
    else if (verbose() && !ok)
      std::fprintf(stderr,
                   "pfrt: rank %lld: point-to-point stays host-staged: %s\n",
                   (long long)me, why.c_str());
    return false;
  }
  size_t sends = 0;
  for (auto &[peer, record] : p.records) {
    Link &l = p.links[peer];
    // Both ranks of a pair make its communicators in the same order: the
    // lower rank's sends first.
    ncclComm_t lowToHigh = pairComm(me, peer, fn);
    ncclComm_t highToLow = pairComm(me, peer, fn);
    l.out = me < peer ? lowToHigh : highToLow;
    l.in = me < peer ? highToLow : lowToHigh;
    l.peerPos = me < peer ? 1 : 0;
    l.stream = cuda::newStream(fn);
    sends += record.sends.size();
  }
  p.fork = cuda::newEvent(fn);
  // The done events a step needs, made now (not inside a capture).
  for (size_t k = 0; k < sends + p.links.size() + 1; ++k)
    p.done.push_back(cuda::newEvent(fn));
  p.records.clear();
  p.over = true;
  if (verbose() && !p.links.empty())
    std::fprintf(stderr,
                 "pfrt: rank %lld: point-to-point over NCCL with %zu peer%s\n",
                 (long long)me, p.links.size(), p.links.size() == 1 ? "" : "s");
  return true;
}

bool planPointToPoint(const std::vector<std::array<int64_t, 4>> &messages) {
  PointToPoint &p = gP2P;
  if (!p.recording)
    fatal("pfrt_cuda_p2p_plan: point-to-point was set up already (the plan "
          "comes before the first step's messages)");
  p.records.clear();
  for (const std::array<int64_t, 4> &m : messages) {
    PeerRecord &r = p.records[m[0]];
    (m[1] ? r.sends : r.recvs).push_back({m[2], m[3]});
  }
  p.plan = p.records;
  p.overflow = messages.size() > size_t(kMaxRecorded);
  p.planned = setupPointToPoint();
  if (!p.planned)
    p.plan.clear();
  return p.planned;
}

bool pointToPointOverNccl(int64_t) {
  // Every message once the setup moved the job (a peer the first step did
  // not message is an error in linkTo: mixing the transports could wait on
  // the host for a stream that waits on a peer).
  return gP2P.over;
}

void *send(const float *buf, int64_t count, int64_t peer, int64_t tag,
           const char *fn) {
  Link &l = linkTo(peer, count, buf, fn);
  expect(peer, true, tag, count, fn);
  counters::add(PFRT_COMM_SEND, counters::Transport::Nccl,
                count * int64_t(sizeof(float)));
  if (count == 0)
    return nullptr; // (the receiver skips it too: the records agreed)
  cuda::recordEvent(gP2P.fork, cuda::computeStream());
  cuda::streamWaitEvent(l.stream, gP2P.fork);
  check(gNccl.api.ncclSend(buf, size_t(count), ncclFloat32, l.peerPos, l.out,
                           static_cast<cudaStream_t>(l.stream)),
        "ncclSend", fn);
  l.pending = true;
  Group g;
  g.comm = l.out;
  pollAsync(g, fn);
  void *done = doneEvent();
  cuda::recordEvent(done, l.stream);
  return done;
}

void waitFor(void *done) {
  if (!done)
    return;
  cuda::exposed::Scope exposed(PFRT_COMM_SEND);
  cuda::streamWaitEvent(cuda::computeStream(), done);
}

int64_t track(void *done) {
  gP2P.tracked.push_back(done);
  return int64_t(gP2P.tracked.size()) - 1;
}

bool ownsHandle(int64_t) { return gP2P.over; }

void waitSend(int64_t handle) {
  if (handle < 0 || handle >= int64_t(gP2P.tracked.size()))
    fatal("pfrt_wait_send: no pending send has handle %lld (point-to-point "
          "over NCCL)",
          (long long)handle);
  waitFor(gP2P.tracked[size_t(handle)]);
}

void recv(float *buf, int64_t count, int64_t peer, int64_t tag,
          const char *fn) {
  Link &l = linkTo(peer, count, buf, fn);
  expect(peer, false, tag, count, fn);
  counters::add(PFRT_COMM_RECV, counters::Transport::Nccl,
                count * int64_t(sizeof(float)));
  if (count == 0)
    return;
  // A batch's receives are timed as its group (groupBegin to groupEnd).
  std::optional<cuda::exposed::Scope> exposed;
  if (!gP2P.inGroup)
    exposed.emplace(PFRT_COMM_RECV);
  check(gNccl.api.ncclRecv(buf, size_t(count), ncclFloat32, l.peerPos, l.in,
                           static_cast<cudaStream_t>(cuda::computeStream())),
        "ncclRecv", fn);
  Group g;
  g.comm = l.in;
  pollAsync(g, fn);
}

void groupBegin() {
  gP2P.inGroup = true;
  gP2P.groupSpan = cuda::exposed::begin(PFRT_COMM_RECV);
  check(gNccl.api.ncclGroupStart(), "ncclGroupStart", "pfrt_cuda_p2p_batch");
}

void groupEnd() {
  check(gNccl.api.ncclGroupEnd(), "ncclGroupEnd", "pfrt_cuda_p2p_batch");
  cuda::exposed::end(gP2P.groupSpan);
  gP2P.groupSpan = -1;
  gP2P.inGroup = false;
}

void joinSends() {
  PointToPoint &p = gP2P;
  if (!p.over)
    return;
  checkStepPosted();
  void *compute = cuda::computeStream();
  cuda::exposed::Scope exposed(PFRT_COMM_SEND);
  for (auto &[peer, l] : p.links)
    if (l.pending) {
      void *done = doneEvent();
      cuda::recordEvent(done, l.stream);
      cuda::streamWaitEvent(compute, done);
      l.pending = false;
    }
  p.tracked.clear();
  p.nextDone = 0;
  if (gNccl.emulated)
    fake::ncclDrainSends();
}

} // namespace nccl
} // namespace pfrt
