//===- Inputs.cpp - inputs of compiled steps, steps for a host program ----===//
//
// A compiled step asks for each input with pfrt_load_input. An executable
// (pfrt_main) feeds seeded synthetic batches; a host program such as the
// Python front end switches to user inputs and gives every input's local
// data before each step. Mixing is impossible by construction: in user mode
// a missing input is fatal, never replaced by synthetic data.
//
//===----------------------------------------------------------------------===//

#include "pfrt/pfrt.h"

#include "Internal.h"

#include <cstring>
#include <unordered_map>
#include <vector>

namespace {
struct UserInput {
  std::vector<char> data;
};
bool gUserInputs = false;
std::unordered_map<int64_t, UserInput> &userInputs() {
  static std::unordered_map<int64_t, UserInput> m;
  return m;
}
/// Executables feed the same synthetic batch every step: made once per
/// input, then copied.
std::unordered_map<int64_t, std::vector<char>> &syntheticCache() {
  static std::unordered_map<int64_t, std::vector<char>> m;
  return m;
}
std::vector<float> &lastLosses() {
  static std::vector<float> v;
  return v;
}
} // namespace

using namespace pfrt;

extern "C" {

void pfrt_use_user_inputs(int32_t on) { gUserInputs = on != 0; }

int pfrt_set_input(int64_t index, const void *data, int64_t bytes) {
  if (index < 0)
    fatal("pfrt_set_input: input index %lld is negative", (long long)index);
  if (bytes < 0 || (bytes > 0 && !data))
    fatal("pfrt_set_input: input %lld: bad buffer (%lld bytes)",
          (long long)index, (long long)bytes);
  UserInput &in = userInputs()[index];
  in.data.assign(static_cast<const char *>(data),
                 static_cast<const char *>(data) + bytes);
  return 0;
}

int pfrt_load_input(int64_t index, void *out, int64_t bytes, int32_t dtype,
                    int64_t num_classes, uint64_t seed, uint64_t stream,
                    int64_t ndim, const int64_t *shape) {
  if (gUserInputs) {
    auto it = userInputs().find(index);
    if (it == userInputs().end())
      fatal("input %lld of the step was not given (pfrt_set_input) before "
            "the step",
            (long long)index);
    if ((int64_t)it->second.data.size() != bytes)
      fatal("input %lld has %lld bytes but this rank's part of it needs "
            "%lld",
            (long long)index, (long long)it->second.data.size(),
            (long long)bytes);
    std::memcpy(out, it->second.data.data(), bytes);
    return 0;
  }
  // Executables: the seed program's fixed synthetic batch (data step 0),
  // generated on first use and copied afterwards.
  std::vector<char> &cached = syntheticCache()[index];
  if ((int64_t)cached.size() != bytes) {
    cached.resize(bytes);
    if (dtype == PFRT_DTYPE_F32)
      pfrt_synthetic_batch(reinterpret_cast<float *>(cached.data()), seed,
                           stream, 0, ndim, shape, nullptr, nullptr);
    else if (dtype == PFRT_DTYPE_I64)
      pfrt_synthetic_labels(reinterpret_cast<int64_t *>(cached.data()),
                            num_classes, seed, stream, 0, ndim, shape, nullptr,
                            nullptr);
    else
      fatal("pfrt_load_input: input %lld: unsupported dtype %d",
            (long long)index, dtype);
  }
  std::memcpy(out, cached.data(), bytes);
  return 0;
}

int pfrt_load_input_boxes(int64_t index, void *out, int64_t bytes,
                          int32_t dtype, int64_t num_classes, uint64_t seed,
                          uint64_t stream, int64_t ndim,
                          const int64_t *logical_shape, int64_t num_boxes,
                          const int64_t *offsets, const int64_t *box_shape) {
  if (gUserInputs)
    return pfrt_load_input(index, out, bytes, dtype, num_classes, seed, stream,
                           ndim, logical_shape);
  if (num_boxes < 1 || (ndim > 0 && (!offsets || !box_shape)))
    fatal("pfrt_load_input_boxes: input %lld: bad boxes (%lld)",
          (long long)index, (long long)num_boxes);
  int64_t elems = 1;
  for (int64_t i = 0; i < ndim; ++i)
    elems *= box_shape[i];
  int64_t width = dtype == PFRT_DTYPE_F32 ? 4 : 8;
  if (elems * width * num_boxes != bytes)
    fatal("pfrt_load_input_boxes: input %lld: %lld boxes of %lld elements "
          "do not fill %lld bytes",
          (long long)index, (long long)num_boxes, (long long)elems,
          (long long)bytes);
  std::vector<char> &cached = syntheticCache()[index];
  if ((int64_t)cached.size() != bytes) {
    cached.resize(bytes);
    for (int64_t b = 0; b < num_boxes; ++b) {
      char *dst = cached.data() + b * elems * width;
      const int64_t *off = ndim > 0 ? offsets + b * ndim : nullptr;
      if (dtype == PFRT_DTYPE_F32)
        pfrt_synthetic_batch(reinterpret_cast<float *>(dst), seed, stream, 0,
                             ndim, logical_shape, off, box_shape);
      else if (dtype == PFRT_DTYPE_I64)
        pfrt_synthetic_labels(reinterpret_cast<int64_t *>(dst), num_classes,
                              seed, stream, 0, ndim, logical_shape, off,
                              box_shape);
      else
        fatal("pfrt_load_input_boxes: input %lld: unsupported dtype %d",
              (long long)index, dtype);
    }
  }
  std::memcpy(out, cached.data(), bytes);
  return 0;
}

void pfrt_begin_step(int64_t step) {
  lastLosses() = stepLosses();
  pfrt_arena_reset();
  *pfrt_scalar("step") = static_cast<float>(step + 1);
}

void pfrt_end_step(void) { lastLosses() = stepLosses(); }

int32_t pfrt_loss_count(void) { return (int32_t)lastLosses().size(); }

float pfrt_loss_value(int32_t k) {
  if (k < 0 || k >= (int32_t)lastLosses().size())
    fatal("pfrt_loss_value: micro-batch %d of %d", k,
          (int)lastLosses().size());
  return lastLosses()[k];
}

} // extern "C"
