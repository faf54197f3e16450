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
#include "KernelArgs.h"
#include "LogicalMath.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using namespace pfrt;

namespace {
struct UserInput {
  std::vector<char> data;
};
bool gUserInputs = false;
std::unordered_map<int64_t, UserInput> &userInputs() {
  static std::unordered_map<int64_t, UserInput> m;
  return m;
}
/// The host's data for input `index`, which must hold `bytes` bytes.
const char *userInput(int64_t index, int64_t bytes) {
  auto it = userInputs().find(index);
  if (it == userInputs().end())
    fatal("input %lld of the step was not given (pfrt_set_input) before "
          "the step",
          (long long)index);
  if ((int64_t)it->second.data.size() != bytes)
    fatal("input %lld has %lld bytes but this rank's part of it needs %lld",
          (long long)index, (long long)it->second.data.size(),
          (long long)bytes);
  return it->second.data.data();
}
/// Executables feed the same synthetic batch every step. The compiler's
/// memory plan keeps an input's buffer resident for the whole step and the
/// program never writes it, so the batch is generated straight into the
/// buffer once and later loads of the same input into the same buffer
/// have nothing to do (no second copy of the data in memory).
struct Resident {
  void *out = nullptr;
  int64_t bytes = -1;
};
std::unordered_map<int64_t, Resident> &syntheticResident() {
  static std::unordered_map<int64_t, Resident> m;
  return m;
}
/// Whether input `index` already holds its synthetic batch at `out`; if
/// not, records that it will.
bool alreadyLoaded(int64_t index, void *out, int64_t bytes) {
  Resident &r = syntheticResident()[index];
  if (r.out == out && r.bytes == bytes)
    return true;
  r.out = out;
  r.bytes = bytes;
  return false;
}
/// pfrt_set_data_dir's directory ("" = synthetic data) and the data step.
std::string &dataDir() {
  static std::string d;
  return d;
}
int64_t gDataStep = 0;

/// Reads this rank's boxes of input `index` for the current data step from
/// dataDir()/input<index>.npy: the file is the logical input or a stack of
/// batches [N, logical...] (step k takes batch k mod N).
void readDataBoxes(int64_t index, void *out, int64_t bytes, int32_t dtype,
                   int64_t ndim, const int64_t *logical, int64_t numBoxes,
                   const int64_t *offsets, const int64_t *boxShape) {
  const char *fn = "pfrt_load_input";
  std::string path = dataDir() + "/input" + std::to_string(index) + ".npy";
  std::vector<int64_t> fileShape = npyShape(path.c_str(), fn);
  std::vector<int64_t> want(logical, logical + ndim);
  bool stacked = false;
  if (fileShape != want) {
    stacked = int64_t(fileShape.size()) == ndim + 1 && fileShape[0] > 0 &&
              std::equal(want.begin(), want.end(), fileShape.begin() + 1);
    if (!stacked)
      fatal("%s: '%s' has shape %s, but input %lld of the step is %s (or a "
            "stack of batches [N, ...] of it)",
            fn, path.c_str(),
            shapeToString(int64_t(fileShape.size()), fileShape.data()).c_str(),
            (long long)index, shapeToString(ndim, logical).c_str());
  }
  int64_t width = kern::checkDtype(fn, "dtype", dtype);
  int64_t elems = 1;
  for (int64_t i = 0; i < ndim; ++i)
    elems *= boxShape[i];
  if (elems * width * numBoxes != bytes)
    fatal("%s: input %lld: %lld boxes of %lld elements do not fill %lld "
          "bytes",
          fn, (long long)index, (long long)numBoxes, (long long)elems,
          (long long)bytes);
  int64_t batch = stacked ? gDataStep % fileShape[0] : 0;
  std::vector<int64_t> off(size_t(ndim + 1)), shape(size_t(ndim + 1));
  for (int64_t b = 0; b < numBoxes; ++b) {
    char *dst = static_cast<char *>(out) + b * elems * width;
    const int64_t *o = offsets + b * ndim;
    if (!stacked) {
      pfrt_npy_read_shard(path.c_str(), dtype, ndim, logical, o, boxShape, dst);
      continue;
    }
    off[0] = batch;
    shape[0] = 1;
    std::copy(o, o + ndim, off.begin() + 1);
    std::copy(boxShape, boxShape + ndim, shape.begin() + 1);
    pfrt_npy_read_shard(path.c_str(), dtype, ndim + 1, fileShape.data(),
                        off.data(), shape.data(), dst);
  }
}

/// Synthetic data of `dtype` for the box (offset, shape) of the logical
/// input (NULL offset: the whole of it): pfrt_synthetic_batch's floats,
/// pfrt_synthetic_labels' labels (int32 ones narrowed; numClasses 2 where
/// the step gives none), or bools, labels of 2 classes.
void syntheticBox(void *out, int32_t dtype, int64_t numClasses, uint64_t seed,
                  uint64_t stream, int64_t ndim, const int64_t *logicalShape,
                  const int64_t *offset, const int64_t *shape, const char *fn) {
  if (dtype == PFRT_DTYPE_F32) {
    pfrt_synthetic_batch(static_cast<float *>(out), seed, stream, 0, ndim,
                         logicalShape, offset, shape);
    return;
  }
  if (dtype == PFRT_DTYPE_I64) {
    pfrt_synthetic_labels(static_cast<int64_t *>(out), numClasses, seed, stream,
                          0, ndim, logicalShape, offset, shape);
    return;
  }
  kern::checkDtype(fn, "dtype", dtype);
  int64_t elems = 1;
  for (int64_t d = 0; d < ndim; ++d)
    elems *= shape[d];
  if (logical::isHalf(dtype)) { // the float32 normals, rounded
    std::vector<float> floats(static_cast<size_t>(elems));
    pfrt_synthetic_batch(floats.data(), seed, stream, 0, ndim, logicalShape,
                         offset, shape);
    for (int64_t i = 0; i < elems; ++i)
      logical::castAt(floats.data(), logical::kF32, out, dtype, i);
    return;
  }
  std::vector<int64_t> labels(static_cast<size_t>(elems));
  int64_t classes =
      dtype == PFRT_DTYPE_BOOL ? 2 : (numClasses > 0 ? numClasses : 2);
  pfrt_synthetic_labels(labels.data(), classes, seed, stream, 0, ndim,
                        logicalShape, offset, shape);
  for (int64_t i = 0; i < elems; ++i)
    if (dtype == PFRT_DTYPE_BOOL)
      static_cast<uint8_t *>(out)[i] = uint8_t(labels[size_t(i)]);
    else
      static_cast<int32_t *>(out)[i] = int32_t(labels[size_t(i)]);
}

StepOutputs &lastOutputs() {
  static StepOutputs outputs;
  return outputs;
}

std::vector<float> &lastLosses() {
  static std::vector<float> v;
  return v;
}
} // namespace

bool pfrt::userInputsInUse() { return gUserInputs; }

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
    std::memcpy(out, userInput(index, bytes), size_t(bytes));
    return 0;
  }
  if (!dataDir().empty()) {
    std::vector<int64_t> zeros(size_t(ndim), 0);
    readDataBoxes(index, out, bytes, dtype, ndim, shape, 1, zeros.data(),
                  shape);
    return 0;
  }
  // Executables: the seed program's fixed synthetic batch (data step 0),
  // generated on first use and copied afterwards.
  if (alreadyLoaded(index, out, bytes))
    return 0;
  syntheticBox(out, dtype, num_classes, seed, stream, ndim, shape, nullptr,
               shape, "pfrt_load_input");
  return 0;
}

namespace {
/// Synthetic data for `numBoxes` boxes of the logical input, one after
/// another in `out` (`boxBytes` each).
void syntheticBoxes(void *out, int32_t dtype, int64_t numClasses, uint64_t seed,
                    uint64_t stream, int64_t ndim, const int64_t *logicalShape,
                    int64_t numBoxes, const int64_t *offsets,
                    const int64_t *boxShape, int64_t boxBytes, const char *fn) {
  for (int64_t b = 0; b < numBoxes; ++b)
    syntheticBox(static_cast<char *>(out) + b * boxBytes, dtype, numClasses,
                 seed, stream, ndim, logicalShape,
                 ndim > 0 ? offsets + b * ndim : nullptr, boxShape, fn);
}
} // namespace

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
  int64_t width = kern::checkDtype("pfrt_load_input_boxes", "dtype", dtype);
  if (elems * width * num_boxes != bytes)
    fatal("pfrt_load_input_boxes: input %lld: %lld boxes of %lld elements "
          "do not fill %lld bytes",
          (long long)index, (long long)num_boxes, (long long)elems,
          (long long)bytes);
  if (!dataDir().empty()) {
    readDataBoxes(index, out, bytes, dtype, ndim, logical_shape, num_boxes,
                  offsets, box_shape);
    return 0;
  }
  if (alreadyLoaded(index, out, bytes))
    return 0;
  syntheticBoxes(out, dtype, num_classes, seed, stream, ndim, logical_shape,
                 num_boxes, offsets, box_shape, elems * width,
                 "pfrt_load_input_boxes");
  return 0;
}

int pfrt_zero_partial_input(void *buf, int64_t bytes) {
  if (bytes < 0 || (bytes > 0 && !buf))
    fatal("pfrt_zero_partial_input: bad buffer (%lld bytes)", (long long)bytes);
  if (!gUserInputs && bytes > 0)
    std::memset(buf, 0, size_t(bytes));
  return 0;
}

int pfrt_set_data_dir(const char *dir) {
  dataDir() = dir ? dir : "";
  while (dataDir().size() > 1 && dataDir().back() == '/')
    dataDir().pop_back();
  return 0;
}

void pfrt_set_data_step(int64_t step) { gDataStep = step; }

} // extern "C"

ShardSpec pfrt::kern::checkDropoutArgs(const char *fn, const float *x,
                                       const float *y, int64_t n, double p,
                                       int64_t rank_ndim,
                                       const int64_t *logical_shape,
                                       const int64_t *offset,
                                       const int64_t *shape) {
  if (!(p >= 0.0 && p <= 1.0))
    fatal("%s: probability %g is not in [0, 1]", fn, p);
  if (n < 0 || (n > 0 && (!x || !y)))
    fatal("%s: bad buffers (%lld elements)", fn, (long long)n);
  ShardSpec s = makeShard(fn, rank_ndim, logical_shape, offset, shape);
  if (s.shardElems != n)
    fatal("%s: the box holds %lld elements, the buffers %lld", fn,
          (long long)s.shardElems, (long long)n);
  return s;
}

int64_t pfrt::kern::currentDataStep() { return gDataStep; }

extern "C" {

int pfrt_k_dropout(const float *x, float *y, int64_t n, double p, uint64_t seed,
                   uint64_t stream, int64_t microbatch, int64_t rank_ndim,
                   const int64_t *logical_shape, const int64_t *offset,
                   const int64_t *shape) {
  const char *fn = "pfrt_k_dropout";
  kern::checkDropoutArgs(fn, x, y, n, p, rank_ndim, logical_shape, offset,
                         shape);
  if (n == 0)
    return 0;
  // u at every element's logical index (the initialisers' generator), on a
  // stream of this op, step and micro-batch.
  uint64_t sub = pfrt_stream_for_step(
      pfrt_stream_for_step(stream, uint64_t(gDataStep)), uint64_t(microbatch));
  static thread_local std::vector<float> u;
  u.resize(size_t(n));
  pfrt_init_param(u.data(), PFRT_INIT_UNIFORM, 0.0, 1.0, seed, sub, rank_ndim,
                  logical_shape, offset, shape);
  const float scale = p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f;
  const float threshold = float(p);
  for (int64_t i = 0; i < n; ++i)
    y[i] = u[size_t(i)] >= threshold ? x[i] * scale : 0.0f;
  return 0;
}

void pfrt_begin_step(int64_t step) {
  gDataStep = step;
  lastLosses() = stepLosses();
  lastOutputs() = stepOutputs();
  pfrt_arena_reset();
  *pfrt_scalar("step") = static_cast<float>(step + 1);
}

void pfrt_end_step(void) {
  lastLosses() = stepLosses();
  lastOutputs() = stepOutputs();
}

int32_t pfrt_loss_count(void) { return (int32_t)lastLosses().size(); }

float pfrt_loss_value(int32_t k) {
  if (k < 0 || k >= (int32_t)lastLosses().size())
    fatal("pfrt_loss_value: micro-batch %d of %d", k, (int)lastLosses().size());
  return lastLosses()[k];
}

int32_t pfrt_output_count(void) { return (int32_t)lastOutputs().have.size(); }

int64_t pfrt_output_bytes(int32_t index) {
  const StepOutputs &o = lastOutputs();
  if (index < 0 || index >= (int32_t)o.have.size() || !o.have[size_t(index)])
    return -1;
  return (int64_t)o.data[size_t(index)].size();
}

int pfrt_output_copy(int32_t index, void *out, int64_t bytes) {
  int64_t have = pfrt_output_bytes(index);
  if (have < 0)
    fatal("pfrt_output_copy: result %d was not reported in the last step",
          index);
  if (bytes != have || (bytes > 0 && !out))
    fatal("pfrt_output_copy: result %d has %lld bytes, asked for %lld", index,
          (long long)have, (long long)bytes);
  if (bytes > 0)
    std::memcpy(out, lastOutputs().data[size_t(index)].data(), size_t(bytes));
  return 0;
}

} // extern "C"

int pfrt_load_input_part(int64_t index, void *out, int64_t bytes, int64_t part,
                         int64_t num_parts, int32_t dtype, int64_t num_classes,
                         uint64_t seed, uint64_t stream, int64_t ndim,
                         const int64_t *logical_shape, int64_t num_boxes,
                         const int64_t *offsets, const int64_t *box_shape) {
  const char *fn = "pfrt_load_input_part";
  if (num_parts < 1 || part < 0 || part >= num_parts || num_boxes < 1 ||
      bytes < 0 || (ndim > 0 && (!offsets || !box_shape)))
    fatal("%s: input %lld: part %lld of %lld, %lld boxes", fn, (long long)index,
          (long long)part, (long long)num_parts, (long long)num_boxes);
  if (gUserInputs) {
    std::memcpy(out, userInput(index, bytes * num_parts) + part * bytes,
                size_t(bytes));
    return 0;
  }
  // The part's boxes: whole boxes when the parts group them, else one row
  // range of the box that holds the part.
  std::vector<int64_t> off, shape(box_shape, box_shape + ndim);
  int64_t count;
  if (num_boxes % num_parts == 0) {
    count = num_boxes / num_parts;
    off.assign(offsets + part * count * ndim,
               offsets + (part + 1) * count * ndim);
  } else if (num_parts % num_boxes == 0 && ndim > 0 &&
             box_shape[0] % (num_parts / num_boxes) == 0) {
    int64_t split = num_parts / num_boxes, box = part / split;
    count = 1;
    shape[0] = box_shape[0] / split;
    off.assign(offsets + box * ndim, offsets + (box + 1) * ndim);
    off[0] += (part % split) * shape[0];
  } else {
    fatal("%s: input %lld: %lld parts of %lld boxes", fn, (long long)index,
          (long long)num_parts, (long long)num_boxes);
  }
  int64_t elems = 1;
  for (int64_t d : shape)
    elems *= d;
  int64_t width = kern::checkDtype(fn, "dtype", dtype);
  if (elems * width * count != bytes)
    fatal("%s: input %lld: %lld boxes of %lld elements do not fill %lld "
          "bytes",
          fn, (long long)index, (long long)count, (long long)elems,
          (long long)bytes);
  if (!dataDir().empty())
    readDataBoxes(index, out, bytes, dtype, ndim, logical_shape, count,
                  off.data(), shape.data());
  else
    syntheticBoxes(out, dtype, num_classes, seed, stream, ndim, logical_shape,
                   count, off.data(), shape.data(), elems * width, fn);
  return 0;
}
