//===- StagedP2P.cpp - GPU ranks' point to point through the host --------===//
//
// The device twins of the point-to-point rows: over NCCL once the setup
// moved them there (NcclP2P.cpp: at start-up from a compiled rank's plan,
// pfrt_cuda_p2p_plan, or after a first step without one); before,
// host-staged (StagedComm.h) and recorded for that setup.
//
//===----------------------------------------------------------------------===//

#include "StagedComm.h"

#include "../common/Internal.h"
#include "Module.h"
#include "NcclComm.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <array>
#include <climits>
#include <cstdint>
#include <map>
#include <vector>

using namespace pfrt;
using namespace pfrt::staged;

namespace {

/// Host copies of sends not known to be complete, by handle (tracked) or
/// in order (untracked, freed by pfrt_cuda_wait_sends).
std::map<int64_t, std::vector<float>> gTrackedSends;
std::vector<std::vector<float>> gUntrackedSends;

} // namespace

extern "C" {

int pfrt_cuda_p2p_plan(const int64_t *table, int64_t len) {
  const char *fn = "pfrt_cuda_p2p_plan";
  static std::vector<int64_t> made;
  static bool called = false;
  if (len < 0 || len > (int64_t(1) << 40) || len % 4 != 0 ||
      (len > 0 && !table))
    fatal("%s: a table of %lld entries at %p (4 a message)", fn, (long long)len,
          static_cast<const void *>(table));
  std::vector<int64_t> flat(table, table + len);
  if (called) {
    if (flat != made)
      fatal("%s: called again with another plan (a rank's plan is made once)",
            fn);
    return 0;
  }
  twin::requireDevice(fn);
  int64_t world = pfrt_world_size();
  std::vector<std::array<int64_t, 4>> messages;
  for (int64_t i = 0; i < len; i += 4) {
    int64_t peer = table[i], isSend = table[i + 1], tag = table[i + 2],
            count = table[i + 3];
    if (peer < 0 || peer >= world || (isSend != 0 && isSend != 1) || tag < 0 ||
        tag > INT32_MAX || count < 0 || count > (int64_t(1) << 60))
      fatal("%s: message %lld: peer %lld, is_send %lld, tag %lld, count %lld "
            "(peer a rank of the job's %lld, is_send 0 or 1, tag in [0, "
            "2^31), count in [0, 2^60])",
            fn, (long long)(i / 4), (long long)peer, (long long)isSend,
            (long long)tag, (long long)count, (long long)world);
    messages.push_back({peer, isSend, tag, count});
  }
  called = true;
  made = std::move(flat);
  nccl::planPointToPoint(messages);
  return 0;
}

// Point to point: over NCCL once the setup moved it there (Nccl.cpp), and
// host-staged (recorded while there is no plan) before.

int pfrt_cuda_send(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  if (nccl::pointToPointOverNccl(dst)) {
    nccl::waitFor(nccl::send(buf, count, dst, tag, "pfrt_cuda_send"));
    return 0;
  }
  enterPointToPoint("pfrt_cuda_send");
  std::vector<float> h = toHost(buf, count);
  int rc = pfrt_send(h.data(), count, dst, tag);
  nccl::recordPointToPoint(true, dst, tag, count);
  return rc;
}

int pfrt_cuda_recv(float *buf, int64_t count, int32_t src, int32_t tag) {
  if (nccl::pointToPointOverNccl(src)) {
    nccl::recv(buf, count, src, tag, "pfrt_cuda_recv");
    return 0;
  }
  enterPointToPoint("pfrt_cuda_recv");
  std::vector<float> h(size_t(count > 0 ? count : 0));
  int rc = pfrt_recv(h.data(), count, src, tag);
  toDevice(buf, h);
  nccl::recordPointToPoint(false, src, tag, count);
  return rc;
}

int pfrt_cuda_isend(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  if (nccl::pointToPointOverNccl(dst)) {
    nccl::send(buf, count, dst, tag, "pfrt_cuda_isend");
    return 0;
  }
  enterPointToPoint("pfrt_cuda_isend");
  gUntrackedSends.push_back(toHost(buf, count));
  int rc = pfrt_isend(gUntrackedSends.back().data(), count, dst, tag);
  nccl::recordPointToPoint(true, dst, tag, count);
  return rc;
}

int64_t pfrt_cuda_isend_tracked(const float *buf, int64_t count, int32_t dst,
                                int32_t tag) {
  if (nccl::pointToPointOverNccl(dst))
    return nccl::track(
        nccl::send(buf, count, dst, tag, "pfrt_cuda_isend_tracked"));
  enterPointToPoint("pfrt_cuda_isend_tracked");
  std::vector<float> h = toHost(buf, count);
  int64_t handle = pfrt_isend_tracked(h.data(), count, dst, tag);
  // The vector's heap buffer moves with it: MPI's pointer stays valid.
  gTrackedSends[handle] = std::move(h);
  nccl::recordPointToPoint(true, dst, tag, count);
  return handle;
}

int pfrt_cuda_wait_send(int64_t handle) {
  if (nccl::ownsHandle(handle)) {
    nccl::waitSend(handle);
    return 0;
  }
  int rc = pfrt_wait_send(handle);
  gTrackedSends.erase(handle);
  return rc;
}

int pfrt_cuda_wait_sends(void) {
  // (The step's end: every split all-reduce was waited for; a direct
  // caller's pending one is finished before MPI waits on sends.)
  finishStagedReduces();
  nccl::joinSends();
  int rc = pfrt_wait_sends();
  gTrackedSends.clear();
  gUntrackedSends.clear();
  return rc;
}

// The batch's descriptors stay on the host. Over NCCL: every send on its
// peer's stream, the receives in one group on the compute stream, then the
// compute stream waits for the sends (the batch completes them, as the
// host row does). Staged: each op's buffer is copied, sends to the host
// before the batch, receives back after it.
int pfrt_cuda_p2p_batch(const pfrt_p2p_op *ops, int64_t nops) {
  const char *fn = "pfrt_cuda_p2p_batch";
  bool overNccl = nops > 0 && ops;
  for (int64_t k = 0; overNccl && k < nops; ++k)
    overNccl = nccl::pointToPointOverNccl(ops[k].peer);
  if (overNccl) {
    std::vector<void *> sent;
    for (int64_t k = 0; k < nops; ++k)
      if (ops[k].is_send)
        sent.push_back(
            nccl::send(ops[k].buf, ops[k].count, ops[k].peer, ops[k].tag, fn));
    nccl::groupBegin();
    for (int64_t k = 0; k < nops; ++k)
      if (!ops[k].is_send)
        nccl::recv(ops[k].buf, ops[k].count, ops[k].peer, ops[k].tag, fn);
    nccl::groupEnd();
    for (void *done : sent)
      nccl::waitFor(done);
    return 0;
  }
  enterPointToPoint(fn);
  if (nops < 0 || (nops > 0 && !ops))
    return pfrt_p2p_batch(ops, nops); // fatal: a bad op list
  std::vector<pfrt_p2p_op> host(ops, ops + nops);
  HostStage stage;
  for (const pfrt_p2p_op &op : host) {
    // A bad count is the host row's error (it validates every op first).
    int64_t bytes = op.count >= 0 && op.count <= (int64_t(1) << 60)
                        ? op.count * int64_t(sizeof(float))
                        : 0;
    stage.add(op.buf, bytes, /*read=*/op.is_send != 0,
              /*written=*/op.is_send == 0);
  }
  stage.toHost();
  for (size_t k = 0; k < host.size(); ++k)
    host[k].buf = stage.host<float>(k);
  int rc = pfrt_p2p_batch(host.data(), nops);
  stage.toDevice();
  for (int64_t k = 0; k < nops; ++k)
    nccl::recordPointToPoint(ops[k].is_send != 0, ops[k].peer, ops[k].tag,
                             ops[k].count);
  return rc;
}

} // extern "C"
