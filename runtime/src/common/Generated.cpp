//===- Generated.cpp - the generated kernels' host rows -------------------===//
//
// pfrt_generated_kernels and pfrt_launch_generated on the host: a launch
// runs the kernel's host twin (the compiler's own host build of it) over
// all n elements. GPU ranks call the device twins (cuda/Generated.cpp).
//
//===----------------------------------------------------------------------===//

#include "Generated.h"

#include "Internal.h"

namespace pfrt {

GeneratedTable checkGeneratedTable(const char *fn, const void *image,
                                   int64_t image_bytes, int64_t count,
                                   const char *const *names,
                                   const pfrt_host_kernel *host_twins,
                                   const int64_t *num_pointers) {
  if (count < 0 || image_bytes < 0 || (image_bytes > 0 && !image) ||
      (count > 0 && (!names || !host_twins || !num_pointers)))
    fatal("%s: malformed kernel table (count %lld, image %lld bytes, "
          "names %p, host twins %p, pointer counts %p)",
          fn, (long long)count, (long long)image_bytes, (const void *)names,
          (const void *)host_twins, (const void *)num_pointers);
  for (int64_t i = 0; i < count; ++i)
    if (!names[i] || !host_twins[i] || num_pointers[i] < 1 ||
        num_pointers[i] > kMaxGeneratedPointers)
      fatal("%s: kernel %lld of the table is malformed (name %s, %lld "
            "pointers, at most %lld)",
            fn, (long long)i, names[i] ? names[i] : "(null)",
            (long long)num_pointers[i], (long long)kMaxGeneratedPointers);
  GeneratedTable t;
  t.image = image;
  t.imageBytes = image_bytes;
  t.count = count;
  t.names = names;
  t.hostTwins = host_twins;
  t.numPointers = num_pointers;
  return t;
}

void checkGeneratedLaunch(const char *fn, const GeneratedTable &table,
                          bool registered, int64_t index, int64_t n,
                          int64_t num_pointers, void *const given[8],
                          void *out[8]) {
  if (!registered)
    fatal("%s: no kernel table registered (pfrt_generated_kernels)", fn);
  if (index < 0 || index >= table.count)
    fatal("%s: kernel %lld of a table of %lld", fn, (long long)index,
          (long long)table.count);
  const char *name = table.names[index];
  if (num_pointers != table.numPointers[index])
    fatal("%s: %s takes %lld buffers, launched with %lld", fn, name,
          (long long)table.numPointers[index], (long long)num_pointers);
  if (n < 0)
    fatal("%s: %s launched over %lld elements", fn, name, (long long)n);
  for (int64_t j = 0; j < kMaxGeneratedPointers; ++j) {
    if (j < num_pointers && !given[j])
      fatal("%s: buffer %lld of %s is NULL", fn, (long long)j, name);
    out[j] = j < num_pointers ? given[j] : nullptr;
  }
}

} // namespace pfrt

namespace {
pfrt::GeneratedTable gTable;
bool gRegistered = false;
} // namespace

extern "C" {

int pfrt_generated_kernels(const void *image, int64_t image_bytes,
                           int64_t count, const char *const *names,
                           const pfrt_host_kernel *host_twins,
                           const int64_t *num_pointers) {
  gTable =
      pfrt::checkGeneratedTable("pfrt_generated_kernels", image, image_bytes,
                                count, names, host_twins, num_pointers);
  gRegistered = true;
  return 0;
}

int pfrt_launch_generated(int64_t index, int64_t n, int64_t num_pointers,
                          void *p0, void *p1, void *p2, void *p3, void *p4,
                          void *p5, void *p6, void *p7) {
  void *const given[8] = {p0, p1, p2, p3, p4, p5, p6, p7};
  void *buffers[8];
  pfrt::checkGeneratedLaunch("pfrt_launch_generated", gTable, gRegistered,
                             index, n, num_pointers, given, buffers);
  gTable.hostTwins[index](buffers, n);
  return 0;
}

} // extern "C"
