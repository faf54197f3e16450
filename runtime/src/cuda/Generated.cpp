//===- Generated.cpp - the generated kernels on the GPU -------------------===//
//
// The device twins of pfrt_generated_kernels and pfrt_launch_generated: the
// rank's image (the fatbin pf-embed-gpu-kernels put in the executable) is
// loaded at the first launch, one function a kernel; a launch runs one
// thread an element on the compute stream, so a captured step replays it.
// With PFRT_CUDA_FAKE=1 the emulated driver runs each kernel's host twin
// instead (emulation/FakeDevice.h): the image is not read.
//
//===----------------------------------------------------------------------===//

#include "../common/Generated.h"
#include "../common/Internal.h"
#include "CudaInternal.h"
#include "emulation/FakeDevice.h"
#include "pfrt/pfrt_cuda.h"

#include <vector>

namespace {

pfrt::GeneratedTable gTable;
bool gRegistered = false;
std::vector<void *> gFunctions; // loaded at the first launch

void load(const char *fn) {
  bool fake = pfrt::fake::enabled();
  if (fake)
    for (int64_t i = 0; i < gTable.count; ++i)
      pfrt::fake::registerPackedKernel(
          gTable.names[i], static_cast<unsigned>(gTable.numPointers[i]),
          gTable.hostTwins[i]);
  else if (gTable.imageBytes == 0)
    pfrt::fatal("%s: the executable has no GPU image of its %lld generated "
                "kernels (compile with pf-compile-gpu-pipeline, whose "
                "pf-embed-gpu-kernels builds it)",
                fn, (long long)gTable.count);
  // The emulation's module load only checks for an image.
  static const char kNoImage[] = "";
  void *module =
      pfrt_cuda_module_load(gTable.imageBytes ? gTable.image : kNoImage);
  gFunctions.assign(gTable.count, nullptr);
  for (int64_t i = 0; i < gTable.count; ++i)
    gFunctions[i] = pfrt_cuda_function(module, gTable.names[i]);
}

} // namespace

extern "C" {

int pfrt_cuda_generated_kernels(const void *image, int64_t image_bytes,
                                int64_t count, const char *const *names,
                                const pfrt_host_kernel *host_twins,
                                const int64_t *num_pointers) {
  pfrt::GeneratedTable t = pfrt::checkGeneratedTable(
      "pfrt_cuda_generated_kernels", image, image_bytes, count, names,
      host_twins, num_pointers);
  // pf_init_params runs again on a checkpoint load: the same table keeps
  // its loaded functions.
  if (gRegistered && t.image == gTable.image && t.names == gTable.names &&
      t.count == gTable.count)
    return 0;
  gTable = t;
  gRegistered = true;
  gFunctions.clear();
  return 0;
}

int pfrt_cuda_launch_generated(int64_t index, int64_t n, int64_t num_pointers,
                               void *p0, void *p1, void *p2, void *p3, void *p4,
                               void *p5, void *p6, void *p7) {
  const char *fn = "pfrt_cuda_launch_generated";
  void *const given[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
  void *buffers[8];
  pfrt::checkGeneratedLaunch(fn, gTable, gRegistered, index, n, num_pointers,
                             given, buffers);
  if (n == 0)
    return 0;
  if (gFunctions.empty())
    load(fn);
  // cuLaunchKernel's arguments: a pointer to each (the buffers, then n).
  void *params[pfrt::kMaxGeneratedPointers + 1];
  for (int64_t j = 0; j < num_pointers; ++j)
    params[j] = &buffers[j];
  params[num_pointers] = &n;
  int64_t blocks = (n + PFRT_GENERATED_BLOCK - 1) / PFRT_GENERATED_BLOCK;
  if (blocks > INT32_MAX)
    pfrt::fatal("%s: %s over %lld elements needs %lld blocks (at most %d)", fn,
                gTable.names[index], (long long)n, (long long)blocks,
                INT32_MAX);
  return pfrt_cuda_launch(gFunctions[index], blocks, 1, 1, PFRT_GENERATED_BLOCK,
                          1, 1, 0, params);
}

} // extern "C"
