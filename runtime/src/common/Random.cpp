//===- Random.cpp - Philox4x32-10 and layout-independent initialisers -----===//
//
// Every value is a pure function of (seed, stream, logical element index),
// so any shard of a tensor, computed on any rank, equals the same slice of
// the whole tensor. The formulas are spelled out in pfrt.h and mirrored by
// runtime/python/pfrt_philox.py; change both together.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "KernelMath.h"
#include "pfrt/pfrt.h"

#include <cmath>

using namespace pfrt;

namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
// 2*pi rounded to double; the NumPy twin uses 2.0 * math.pi, the same value.
constexpr double kTwoPi = 6.283185307179586;

/// Philox4x32-10 (KernelMath.h, shared with the device's dropout masks).
using Block = kern::PhiloxBlock;
using kern::philox;
using kern::philoxAt;
using kern::uniformValue;
using kern::unitOpen;

inline float normalValue(const Block &b, double mean, double std) {
  double u0 = unitOpen(b.x[0]);
  double u1 = unitOpen(b.x[1]);
  double r = std::sqrt(-2.0 * std::log(u0));
  double z = r * std::cos(kTwoPi * u1);
  return float(mean + std * z);
}

/// Runs value(block) over every element of the shard.
template <typename T, typename Fn>
void fillRandom(T *out, const ShardSpec &s, uint64_t seed, uint64_t stream,
                Fn &&value) {
  forEachRun(s, [&](int64_t start, int64_t local, int64_t len) {
    T *dst = out + local;
    for (int64_t j = 0; j < len; ++j)
      dst[j] = value(philoxAt(seed, stream, start + j));
  });
}

void checkOut(const void *out, const ShardSpec &s, const char *fn) {
  if (!out && s.shardElems > 0)
    fatal("%s: output buffer is NULL", fn);
}

void checkFinite(double v, const char *what, const char *fn) {
  if (!std::isfinite(v))
    fatal("%s: %s is not finite (%g)", fn, what, v);
}

} // namespace

void pfrt::uniformBlock(float *u, int64_t ldu, uint64_t seed, uint64_t stream,
                        int64_t first, int64_t rowStride, int64_t rows,
                        int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float *dst = u + r * ldu;
    const int64_t start = first + r * rowStride;
    for (int64_t c = 0; c < cols; ++c)
      dst[c] = uniformValue(philoxAt(seed, stream, start + c), 0.0, 1.0);
  }
}

extern "C" {

int pfrt_philox4x32_10(const uint32_t counter[4], const uint32_t key[2],
                       uint32_t out[4]) {
  if (!counter || !key || !out)
    fatal("pfrt_philox4x32_10: NULL argument");
  Block b =
      philox(counter[0], counter[1], counter[2], counter[3], key[0], key[1]);
  for (int i = 0; i < 4; ++i)
    out[i] = b.x[i];
  return 0;
}

uint64_t pfrt_stream_id(const char *param_name) {
  if (!param_name)
    fatal("pfrt_stream_id: NULL name");
  uint64_t h = kFnvOffset;
  for (const unsigned char *p = (const unsigned char *)param_name; *p; ++p)
    h = (h ^ *p) * kFnvPrime;
  return h;
}

uint64_t pfrt_stream_for_step(uint64_t stream, uint64_t step) {
  uint64_t h = stream;
  for (int j = 0; j < 8; ++j)
    h = (h ^ ((step >> (8 * j)) & 0xff)) * kFnvPrime;
  return h;
}

int pfrt_init_param(float *out, int32_t kind, double a, double b, uint64_t seed,
                    uint64_t stream, int64_t rank_ndim,
                    const int64_t *logical_shape, const int64_t *shard_offset,
                    const int64_t *shard_shape) {
  const char *fn = "pfrt_init_param";
  ShardSpec s =
      makeShard(fn, rank_ndim, logical_shape, shard_offset, shard_shape);
  checkOut(out, s, fn);
  switch (kind) {
  case PFRT_INIT_ZEROS:
  case PFRT_INIT_ONES:
  case PFRT_INIT_CONSTANT: {
    float v = kind == PFRT_INIT_ZEROS  ? 0.0f
              : kind == PFRT_INIT_ONES ? 1.0f
                                       : float(a);
    for (int64_t i = 0; i < s.shardElems; ++i)
      out[i] = v;
    return 0;
  }
  case PFRT_INIT_UNIFORM:
    checkFinite(a, "uniform low (a)", fn);
    checkFinite(b, "uniform high (b)", fn);
    if (a > b)
      fatal("%s: uniform low %g > high %g", fn, a, b);
    fillRandom(out, s, seed, stream,
               [=](const Block &blk) { return uniformValue(blk, a, b); });
    return 0;
  case PFRT_INIT_NORMAL:
    checkFinite(a, "normal mean (a)", fn);
    checkFinite(b, "normal std (b)", fn);
    if (b < 0)
      fatal("%s: normal std %g < 0", fn, b);
    fillRandom(out, s, seed, stream,
               [=](const Block &blk) { return normalValue(blk, a, b); });
    return 0;
  case PFRT_INIT_KAIMING_UNIFORM: {
    checkFinite(a, "kaiming fan_in (a)", fn);
    if (!(a > 0))
      fatal("%s: kaiming fan_in %g must be > 0", fn, a);
    double bound = 1.0 / std::sqrt(a);
    double low = -bound, high = bound;
    fillRandom(out, s, seed, stream,
               [=](const Block &blk) { return uniformValue(blk, low, high); });
    return 0;
  }
  default:
    fatal("%s: unknown init kind %d", fn, (int)kind);
  }
}

int pfrt_synthetic_batch(float *out, uint64_t seed, uint64_t stream,
                         uint64_t step, int64_t rank_ndim,
                         const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape) {
  return pfrt_init_param(out, PFRT_INIT_NORMAL, 0.0, 1.0, seed,
                         pfrt_stream_for_step(stream, step), rank_ndim,
                         logical_shape, shard_offset, shard_shape);
}

int pfrt_synthetic_labels(int64_t *out, int64_t num_classes, uint64_t seed,
                          uint64_t stream, uint64_t step, int64_t rank_ndim,
                          const int64_t *logical_shape,
                          const int64_t *shard_offset,
                          const int64_t *shard_shape) {
  const char *fn = "pfrt_synthetic_labels";
  ShardSpec s =
      makeShard(fn, rank_ndim, logical_shape, shard_offset, shard_shape);
  checkOut(out, s, fn);
  if (num_classes < 1 || num_classes > INT32_MAX)
    fatal("%s: num_classes %lld is outside [1, 2^31)", fn,
          (long long)num_classes);
  uint64_t nc = uint64_t(num_classes);
  fillRandom(out, s, seed, pfrt_stream_for_step(stream, step),
             [=](const Block &blk) {
               return int64_t((uint64_t(blk.x[0]) * nc) >> 32);
             });
  return 0;
}

} // extern "C"
