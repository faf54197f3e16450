//===- P2P.cpp - Point-to-point transfers between world ranks -------------===//
//
// Messages above PFRT_MAX_MSG_ELEMS go as several MPI messages with the same
// tag; MPI's non-overtaking rule keeps them in order.
//
//===----------------------------------------------------------------------===//

#include "../common/CommCounters.h"
#include "../common/Internal.h"
#include "MpiInternal.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace pfrt;

namespace {
/// Sends posted by pfrt_isend and not yet completed by pfrt_wait_sends.
std::vector<MPI_Request> &pendingSends() {
  static std::vector<MPI_Request> requests;
  return requests;
}
/// pfrt_isend_tracked's handles: the range of pendingSends() each send's
/// pieces took.
std::vector<std::pair<size_t, size_t>> &trackedSends() {
  static std::vector<std::pair<size_t, size_t>> ranges;
  return ranges;
}
} // namespace

namespace {

int tagUpperBound() {
  static int ub = -1;
  if (ub < 0) {
    int *attr = nullptr;
    int flag = 0;
    PFRT_MPI(MPI_Comm_get_attr, (worldComm(), MPI_TAG_UB, &attr, &flag));
    ub = flag && attr ? *attr : 32767;
  }
  return ub;
}

void checkPeer(int64_t peer, int64_t tag, int64_t count, const void *buf,
               const char *fn) {
  const State &st = state();
  if (peer < 0 || peer >= st.size)
    fatal("%s: peer rank %lld is outside [0, %d)", fn, (long long)peer,
          st.size);
  if (tag < 0 || tag > tagUpperBound())
    fatal("%s: tag %lld is outside [0, %d]", fn, (long long)tag,
          tagUpperBound());
  if (count < 0 || count > (int64_t(1) << 60))
    fatal("%s: count %lld is outside [0, 2^60]", fn, (long long)count);
  if (!buf && count > 0)
    fatal("%s: buffer is NULL with count %lld", fn, (long long)count);
}

/// Calls piece(off, len) for each MPI message a transfer of count elements
/// is split into (at most PFRT_MAX_MSG_ELEMS each; at least one message, so
/// zero-length transfers still synchronise).
template <typename Piece> void forEachPiece(int64_t count, Piece piece) {
  int64_t step = state().maxMsgElems;
  int64_t np = count == 0 ? 1 : (count + step - 1) / step;
  for (int64_t p = 0; p < np; ++p)
    piece(p * step, int(std::min(step, count - p * step)));
}

/// One blocking or non-blocking transfer with a peer: the checks, a trace
/// event `name`, then piece(off, len) for each of its messages.
template <typename Piece>
void transfer(const char *fn, const char *name, const float *buf, int64_t count,
              int32_t peer, int32_t tag, Piece piece) {
  requireInit(fn);
  checkPeer(peer, tag, count, buf, fn);
  CommScope trace(name, count * int64_t(sizeof(float)), 2, peer);
  forEachPiece(count, piece);
}

/// Fatal unless a receive got exactly the expected number of floats.
void checkReceived(const MPI_Status &status, int expected, int64_t peer,
                   int64_t tag, const char *fn) {
  int got = 0;
  PFRT_MPI(MPI_Get_count, (&status, MPI_FLOAT, &got));
  if (got != expected)
    fatal("%s: message from rank %lld tag %lld has %d elements, expected %d "
          "(sender and receiver disagree on the count)",
          fn, (long long)peer, (long long)tag, got, expected);
}

} // namespace

extern "C" {

int pfrt_send(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  const char *fn = "pfrt_send";
  transfer(fn, "send", buf, count, dst, tag, [&](int64_t off, int len) {
    PFRT_MPI_AS(fn, MPI_Send,
                (buf + off, len, MPI_FLOAT, dst, tag, worldComm()));
  });
  return 0;
}

int pfrt_isend(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  const char *fn = "pfrt_isend";
  transfer(fn, "isend", buf, count, dst, tag, [&](int64_t off, int len) {
    MPI_Request request;
    PFRT_MPI_AS(fn, MPI_Isend,
                (buf + off, len, MPI_FLOAT, dst, tag, worldComm(), &request));
    pendingSends().push_back(request);
  });
  return 0;
}

int pfrt_wait_sends(void) {
  const char *fn = "pfrt_wait_sends";
  requireInit(fn);
  std::vector<MPI_Request> &requests = pendingSends();
  trackedSends().clear();
  if (requests.empty())
    return 0;
  CommScope trace("wait_sends", 0, 2, -1);
  // Requests already completed by pfrt_wait_send are MPI_REQUEST_NULL.
  PFRT_MPI(MPI_Waitall,
           ((int)requests.size(), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
  return 0;
}

int64_t pfrt_isend_tracked(const float *buf, int64_t count, int32_t dst,
                           int32_t tag) {
  size_t first = pendingSends().size();
  pfrt_isend(buf, count, dst, tag);
  trackedSends().push_back({first, pendingSends().size()});
  return int64_t(trackedSends().size()) - 1;
}

int pfrt_wait_send(int64_t handle) {
  const char *fn = "pfrt_wait_send";
  requireInit(fn);
  std::vector<std::pair<size_t, size_t>> &tracked = trackedSends();
  if (handle < 0 || handle >= int64_t(tracked.size()))
    fatal("%s: no pending send has handle %lld", fn, (long long)handle);
  auto [first, last] = tracked[size_t(handle)];
  if (last > first) {
    CommScope trace("wait_send", 0, 2, -1);
    PFRT_MPI(MPI_Waitall, (int(last - first), pendingSends().data() + first,
                           MPI_STATUSES_IGNORE));
  }
  return 0;
}

int pfrt_recv(float *buf, int64_t count, int32_t src, int32_t tag) {
  const char *fn = "pfrt_recv";
  transfer(fn, "recv", buf, count, src, tag, [&](int64_t off, int len) {
    MPI_Status status;
    PFRT_MPI_AS(fn, MPI_Recv,
                (buf + off, len, MPI_FLOAT, src, tag, worldComm(), &status));
    checkReceived(status, len, src, tag, fn);
  });
  return 0;
}

int pfrt_p2p_batch(const pfrt_p2p_op *ops, int64_t nops) {
  const char *fn = "pfrt_p2p_batch";
  requireInit(fn);
  if (nops < 0 || (nops > 0 && !ops))
    fatal("%s: bad op list (nops %lld)", fn, (long long)nops);
  // Validate everything before posting anything, so a bad op cannot leave
  // requests in flight.
  int64_t bytes = 0;
  for (int64_t i = 0; i < nops; ++i) {
    checkPeer(ops[i].peer, ops[i].tag, ops[i].count, ops[i].buf, fn);
    bytes += ops[i].count * int64_t(sizeof(float));
  }
  CommScope trace("p2p_batch", bytes, -1, -1);
  for (int64_t i = 0; i < nops; ++i) // the batch's trace event counts no kind
    counters::add(ops[i].is_send ? PFRT_COMM_SEND : PFRT_COMM_RECV,
                  counters::Transport::Mpi,
                  ops[i].count * int64_t(sizeof(float)));
  std::vector<MPI_Request> reqs;
  // For each request: the op it belongs to and its expected length.
  std::vector<std::pair<int64_t, int>> owner;
  for (int64_t i = 0; i < nops; ++i) {
    const pfrt_p2p_op &op = ops[i];
    forEachPiece(op.count, [&](int64_t off, int len) {
      MPI_Request r;
      if (op.is_send)
        PFRT_MPI_AS(
            fn, MPI_Isend,
            (op.buf + off, len, MPI_FLOAT, op.peer, op.tag, worldComm(), &r));
      else
        PFRT_MPI_AS(
            fn, MPI_Irecv,
            (op.buf + off, len, MPI_FLOAT, op.peer, op.tag, worldComm(), &r));
      reqs.push_back(r);
      owner.emplace_back(i, len);
    });
  }
  std::vector<MPI_Status> statuses(reqs.size());
  int rc = MPI_Waitall(int(reqs.size()), reqs.data(), statuses.data());
  if (rc == MPI_ERR_IN_STATUS) {
    // Name the first op that failed rather than the batch as a whole.
    for (size_t r = 0; r < statuses.size(); ++r) {
      int err = statuses[r].MPI_ERROR;
      if (err != MPI_SUCCESS && err != MPI_ERR_PENDING) {
        const pfrt_p2p_op &op = ops[owner[r].first];
        char what[128];
        snprintf(what, sizeof(what), "MPI_Waitall (op %lld: %s rank %d tag %d)",
                 (long long)owner[r].first,
                 op.is_send ? "send to" : "recv from", op.peer, op.tag);
        mpiCheck(err, what, fn);
      }
    }
  }
  mpiCheck(rc, "MPI_Waitall", fn);
  for (size_t r = 0; r < statuses.size(); ++r) {
    const pfrt_p2p_op &op = ops[owner[r].first];
    if (!op.is_send)
      checkReceived(statuses[r], owner[r].second, op.peer, op.tag, fn);
  }
  return 0;
}

} // extern "C"
