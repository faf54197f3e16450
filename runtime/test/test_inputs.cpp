//===- test_inputs.cpp - inputs loaded one micro-batch at a time ----------===//
//
// pfrt_load_input_part must give exactly the bytes of part k of what
// pfrt_load_input_boxes loads for the same boxes: when parts group whole
// boxes, when they split each box's rows, for f32 data and i64 labels, and
// for user inputs (a slice of the host's data). `part_mismatch` is an error
// case for run_tests.sh.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>
#include <vector>

namespace {

/// Loads the whole input with pfrt_load_input_boxes and every part with
/// pfrt_load_input_part, and compares bytes.
void checkParts(int64_t index, int32_t dtype, int64_t parts,
                const std::vector<int64_t> &logical,
                const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &boxShape, uint64_t seed) {
  int64_t ndim = int64_t(logical.size());
  int64_t numBoxes = int64_t(offsets.size()) / ndim;
  int64_t elems = numBoxes, width = dtype == PFRT_DTYPE_F32 ? 4 : 8;
  for (int64_t d : boxShape)
    elems *= d;
  int64_t bytes = elems * width, partBytes = bytes / parts;
  std::vector<char> whole(static_cast<size_t>(bytes)),
      part(static_cast<size_t>(partBytes));
  pfrt_load_input_boxes(index, whole.data(), bytes, dtype, 10, seed, 7, ndim,
                        logical.data(), numBoxes, offsets.data(),
                        boxShape.data());
  for (int64_t k = 0; k < parts; ++k) {
    std::memset(part.data(), 0xcd, part.size());
    pfrt_load_input_part(index, part.data(), partBytes, k, parts, dtype, 10,
                         seed, 7, ndim, logical.data(), numBoxes,
                         offsets.data(), boxShape.data());
    CHECK(!std::memcmp(part.data(), whole.data() + k * partBytes,
                       size_t(partBytes)),
          "input %lld dtype %d: part %lld of %lld differs from the whole "
          "load's bytes",
          (long long)index, dtype, (long long)k, (long long)parts);
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "part_mismatch")) {
    std::vector<int64_t> logical = {8, 3}, offsets = {0, 0, 4, 0}, box = {4, 3};
    std::vector<float> out(8);
    pfrt_load_input_part(0, out.data(), 32, 0, 3, PFRT_DTYPE_F32, 0, 1, 2, 2,
                         logical.data(), 2, offsets.data(), box.data());
    return 0;
  }
  pfrt_init(&argc, &argv);
  uint64_t seed = pt_seed("inputs");
  // Two boxes (rows 0-3 and 8-11 of a 16x3 input): 2 parts group whole
  // boxes, 4 and 8 parts split their rows.
  std::vector<int64_t> logical = {16, 3}, offsets = {0, 0, 8, 0}, box = {4, 3};
  checkParts(0, PFRT_DTYPE_F32, 2, logical, offsets, box, seed);
  checkParts(1, PFRT_DTYPE_F32, 4, logical, offsets, box, seed);
  checkParts(2, PFRT_DTYPE_F32, 8, logical, offsets, box, seed);
  // Labels, one box, four parts.
  std::vector<int64_t> labels = {12}, lOff = {0}, lBox = {12};
  checkParts(3, PFRT_DTYPE_I64, 4, labels, lOff, lBox, seed);
  // Four boxes, two parts of two boxes each.
  std::vector<int64_t> off4 = {0, 0, 4, 0, 8, 0, 12, 0};
  checkParts(4, PFRT_DTYPE_F32, 2, logical, off4, box, seed);

  // User data: part k is bytes [k*S, (k+1)*S) of what the host gave.
  pfrt_use_user_inputs(1);
  std::vector<float> host(24);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = pt_value(seed, 9, 0, i);
  pfrt_set_input(5, host.data(), int64_t(host.size() * sizeof(float)));
  std::vector<float> part(6);
  for (int64_t k = 0; k < 4; ++k) {
    pfrt_load_input_part(5, part.data(), 24, k, 4, PFRT_DTYPE_F32, 0, seed, 7,
                         2, logical.data(), 2, offsets.data(), box.data());
    CHECK(!std::memcmp(part.data(), host.data() + 6 * k, 24),
          "user input part %lld is not the host's slice", (long long)k);
  }
  pfrt_use_user_inputs(0);
  printf("inputs: parts equal the whole load's slices; OK\n");
  pfrt_finalize();
  return 0;
}
