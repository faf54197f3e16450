//===- CudaInternal.h - what the twins need of the driver layer -*- C++ -*-===//
//
// Not installed; nothing here is part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef PFRT_SRC_CUDA_CUDAINTERNAL_H
#define PFRT_SRC_CUDA_CUDAINTERNAL_H

#include <cstdint>
#include <string>

namespace pfrt {
namespace cuda {

/// Whether pfrt_cuda_init has run.
bool deviceReady();

/// A device allocation of `bytes` outside the arena, kept for the
/// program's life (scalars, scratch, the error record). Fatal, naming
/// `what`, when the device has no room, or during a graph capture (where
/// allocating is not allowed: the first step must run uncaptured).
void *allocPersistent(int64_t bytes, const char *what);

/// Page-locked host memory of `bytes` (zeroed), kept for the program's
/// life, for copies captured in a graph (each replay re-reads or rewrites
/// it). Fatal, naming `what`, when the driver refuses.
void *allocPinned(int64_t bytes, const char *what);

/// A device-to-host copy enqueued on the compute stream, not waited for
/// (the destination should be page-locked; pfrt_cuda_d2h waits).
void copyToHostAsync(void *dst, const void *src, int64_t bytes);

/// A host-staged communication call ran (StagedComm.cpp): the program's
/// steps wait for the host in the middle and are not captured.
void noteHostStagedCommunication();
bool hostStagedCommunication();
/// The point-to-point calls that were staged now go over NCCL (Nccl.cpp),
/// and nothing else was staged: later steps may be captured.
void clearHostStagedCommunication();

/// Another stream (non-blocking), and events (no timing) to order streams:
/// recordEvent(e, s) marks the work enqueued on s so far, streamWaitEvent
/// makes a stream wait for it (inside a capture: a fork or a join).
void *newStream(const char *what);
void *newEvent(const char *what);
void recordEvent(void *event, void *stream);
void streamWaitEvent(void *stream, void *event);

/// Copies enqueued on `stream`, not waited for (host memory should be
/// page-locked), and a host wait for an event's work.
void copyToHostOn(void *dst, const void *src, int64_t bytes, void *stream);
void copyToDeviceOn(void *dst, const void *src, int64_t bytes, void *stream);
void eventSynchronize(void *event);

/// Times the device work enqueued on `stream` during its life as a
/// communication span of the trace (thread 2); free unless PF_TRACE is
/// set on a GPU rank. The device twin of the host's CommScope.
class DeviceCommScope {
public:
  DeviceCommScope(const char *name, void *stream, int64_t bytes,
                  int64_t groupSize);
  ~DeviceCommScope();
  DeviceCommScope(const DeviceCommScope &) = delete;
  DeviceCommScope &operator=(const DeviceCommScope &) = delete;

private:
  const char *name;
  void *stream, *begin = nullptr;
  int64_t bytes, groupSize;
};

/// Whether the compute stream is being captured into a graph.
bool streamCapturing();

/// Counts the completed pfrt_cuda_synchronize calls: a host buffer whose
/// copy was enqueued when the count was k is free again once it exceeds k.
uint64_t syncCount();

/// dlopen of `name` in the directories the CUDA libraries are searched in
/// (pfrt_cuda.h), or null; `tried` then lists where it looked.
void *openOptionalLibrary(const char *name, std::string *tried);

/// The compute stream (a CUstream) every twin enqueues on, and the ordinal
/// of the device this rank uses.
void *computeStream();
/// A 63-bit hash of this rank's GPU's UUID: equal for two ranks exactly
/// when they use one physical GPU, whatever ordinals CUDA_VISIBLE_DEVICES
/// gives it in each (a per-rank binding shows each rank its GPU as 0).
int64_t deviceIdentity();

/// Called by pfrt_cuda_init once the device is ready: chooses the transport
/// of the collective twins (Nccl.cpp).
void configureCollectives();

/// Called by pfrt_cuda_finalize after its synchronisation: stops the NCCL
/// watchdog thread (Nccl.cpp).
void stopCollectives();

/// Called by pfrt_cuda_finalize after its synchronisation: reports an error
/// the kernels recorded (Module.cpp).
void checkKernelErrors();

} // namespace cuda
} // namespace pfrt

#endif // PFRT_SRC_CUDA_CUDAINTERNAL_H
