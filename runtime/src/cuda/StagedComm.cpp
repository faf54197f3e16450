//===- StagedComm.cpp - GPU ranks' communication through the host ---------===//
//
// The device twins of libpfrt's collectives and point-to-point calls
// (pfrt_device.def) on the host-staged transport: the device data is copied
// to the host, the host row moves it over MPI, and the result is copied
// back. It works wherever MPI does, for ranks on one GPU or on none of
// their own (NCCL refuses two ranks on one device), and it is what every
// multi-rank GPU program uses until the NCCL transport exists (issue 15).
// Each call waits for its copies, so a step that communicates this way is
// not captured as a CUDA graph (pfrt_cuda_run_step runs it uncaptured).
//
//===----------------------------------------------------------------------===//

#include "../common/Internal.h"
#include "CudaInternal.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstring>
#include <map>
#include <vector>

using namespace pfrt;

namespace {

/// A host copy of `count` floats of device memory (or none).
std::vector<float> toHost(const float *device, int64_t count) {
  std::vector<float> host(size_t(count > 0 ? count : 0));
  if (count > 0)
    pfrt_cuda_d2h(host.data(), device, count * int64_t(sizeof(float)));
  return host;
}

/// Copies `host` to the device and waits (the host buffer then goes).
void toDevice(float *device, const std::vector<float> &host) {
  if (host.empty())
    return;
  pfrt_cuda_h2d(device, host.data(), int64_t(host.size() * sizeof(float)));
  pfrt_cuda_synchronize();
}

/// Entering a staged call: its copies wait for the stream, which a capture
/// forbids; the step is noted as communicating through the host.
void enter(const char *fn) {
  if (cuda::streamCapturing())
    fatal("%s: the host-staged transport cannot be captured in a CUDA graph "
          "(pfrt_cuda_run_step runs such steps uncaptured)",
          fn);
  cuda::noteHostStagedCommunication();
}

/// Host copies of sends not known to be complete, by handle (tracked) or
/// in order (untracked, freed by pfrt_cuda_wait_sends).
std::map<int64_t, std::vector<float>> gTrackedSends;
std::vector<std::vector<float>> gUntrackedSends;

int64_t groupSize(int64_t n) { return n > 0 ? n : pfrt_world_size(); }

} // namespace

extern "C" {

int pfrt_cuda_all_reduce_sum(const float *in, float *out, int64_t count,
                             const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_all_reduce_sum");
  std::vector<float> h = toHost(in, count);
  int rc = pfrt_all_reduce_sum(h.data(), h.data(), count, ranks, n);
  toDevice(out, h);
  return rc;
}

int pfrt_cuda_all_gather(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_all_gather");
  std::vector<float> h = toHost(in, count);
  std::vector<float> all(size_t(count * groupSize(n)));
  int rc = pfrt_all_gather(h.data(), all.data(), count, ranks, n);
  toDevice(out, all);
  return rc;
}

int pfrt_cuda_reduce_scatter_sum(const float *in, float *out, int64_t count,
                                 const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_reduce_scatter_sum");
  std::vector<float> h = toHost(in, count * groupSize(n));
  std::vector<float> mine(static_cast<size_t>(count));
  int rc = pfrt_reduce_scatter_sum(h.data(), mine.data(), count, ranks, n);
  toDevice(out, mine);
  return rc;
}

int pfrt_cuda_all_to_all(const float *in, float *out, int64_t count,
                         const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_all_to_all");
  std::vector<float> h = toHost(in, count * groupSize(n));
  std::vector<float> back(h.size());
  int rc = pfrt_all_to_all(h.data(), back.data(), count, ranks, n);
  toDevice(out, back);
  return rc;
}

int pfrt_cuda_broadcast(float *buf, int64_t count, int64_t root,
                        const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_broadcast");
  std::vector<float> h = pfrt_rank() == root
                             ? toHost(buf, count)
                             : std::vector<float>(size_t(count));
  int rc = pfrt_broadcast(h.data(), count, root, ranks, n);
  if (pfrt_rank() != root)
    toDevice(buf, h);
  return rc;
}

int pfrt_cuda_reduce_sum(const float *in, float *out, int64_t count,
                         int64_t root, const int64_t *ranks, int64_t n) {
  enter("pfrt_cuda_reduce_sum");
  std::vector<float> h = toHost(in, count);
  std::vector<float> sum(pfrt_rank() == root ? size_t(count) : 0);
  int rc = pfrt_reduce_sum(h.data(), sum.empty() ? nullptr : sum.data(), count,
                           root, ranks, n);
  if (pfrt_rank() == root && out)
    toDevice(out, sum);
  return rc;
}

int pfrt_cuda_send(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  enter("pfrt_cuda_send");
  std::vector<float> h = toHost(buf, count);
  return pfrt_send(h.data(), count, dst, tag);
}

int pfrt_cuda_recv(float *buf, int64_t count, int32_t src, int32_t tag) {
  enter("pfrt_cuda_recv");
  std::vector<float> h(size_t(count > 0 ? count : 0));
  int rc = pfrt_recv(h.data(), count, src, tag);
  toDevice(buf, h);
  return rc;
}

int pfrt_cuda_isend(const float *buf, int64_t count, int32_t dst, int32_t tag) {
  enter("pfrt_cuda_isend");
  gUntrackedSends.push_back(toHost(buf, count));
  return pfrt_isend(gUntrackedSends.back().data(), count, dst, tag);
}

int64_t pfrt_cuda_isend_tracked(const float *buf, int64_t count, int32_t dst,
                                int32_t tag) {
  enter("pfrt_cuda_isend_tracked");
  std::vector<float> h = toHost(buf, count);
  int64_t handle = pfrt_isend_tracked(h.data(), count, dst, tag);
  // The vector's heap buffer moves with it: MPI's pointer stays valid.
  gTrackedSends[handle] = std::move(h);
  return handle;
}

int pfrt_cuda_wait_send(int64_t handle) {
  int rc = pfrt_wait_send(handle);
  gTrackedSends.erase(handle);
  return rc;
}

int pfrt_cuda_wait_sends(void) {
  int rc = pfrt_wait_sends();
  gTrackedSends.clear();
  gUntrackedSends.clear();
  return rc;
}

} // extern "C"
