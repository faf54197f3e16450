//===- test_cuda_logical.cpp - comparisons and bools: bodies and twins ----===//
//
// pfrt-test-cuda-logical [twins]: the device bodies of pfrt_k_compare,
// pfrt_k_logical, pfrt_k_where, pfrt_k_cast and masked_fill's masks
// (LogicalBodies.h, ElementwiseBodies.h), built for the host, against the
// CPU kernels, byte for byte: every dtype, predicate, kind and pair of
// dtypes (bf16 and f16 too), on fresh random data with ties, NaN and
// infinities. With `twins` the device twins (pfrt_cuda_k_*) against the
// same kernels, in place too, and a bool broadcast and copy_box; that needs
// a device (a GPU, or the emulation: PFRT_CUDA_FAKE=1) and exits 77 without
// one.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include "../src/cuda/kernels/DeviceBodies.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace pfrt::dev;

namespace {

uint64_t gSeed, gState;
int gChecks = 0;

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

/// n elements of each dtype, one buffer each: small sets (ties), the
/// extremes, NaN and infinities.
struct Data {
  std::vector<float> f;
  std::vector<int64_t> i64;
  std::vector<int32_t> i32;
  std::vector<uint8_t> b;
  std::vector<uint16_t> bf16, f16; // their bits
  const void *of(int32_t dtype) const {
    switch (dtype) {
    case PFRT_DTYPE_F32:
      return f.data();
    case PFRT_DTYPE_I64:
      return i64.data();
    case PFRT_DTYPE_I32:
      return i32.data();
    case PFRT_DTYPE_BF16:
      return bf16.data();
    case PFRT_DTYPE_F16:
      return f16.data();
    default:
      return b.data();
    }
  }
};

Data draw(int64_t n) {
  const float fs[] = {-2.5f,
                      -0.0f,
                      0.0f,
                      1.0f,
                      3e9f,
                      -3e10f,
                      std::numeric_limits<float>::infinity(),
                      NAN};
  const int64_t is[] = {-3, 0, 1, int64_t(1) << 62,
                        std::numeric_limits<int64_t>::min()};
  Data d;
  for (int64_t k = 0; k < n; ++k) {
    d.f.push_back(fs[randint(0, 7)] * (randint(0, 1) ? 1.0f : 0.5f));
    d.i64.push_back(is[randint(0, 4)] + randint(0, 1));
    d.i32.push_back(int32_t(randint(-3, 3)));
    d.b.push_back(uint8_t(randint(0, 2))); // 2: a non-canonical true
    // Zeros, one, inf and NaN (ties), or any pattern.
    const uint16_t bs[] = {0x0000, 0x8000, 0x3f80, 0x7f80, 0x7fc0};
    const uint16_t hs[] = {0x0000, 0x8000, 0x3c00, 0x7c00, 0x7e00};
    bool pick = randint(0, 1) == 0;
    d.bf16.push_back(pick ? bs[randint(0, 4)] : uint16_t(randint(0, 65535)));
    d.f16.push_back(pick ? hs[randint(0, 4)] : uint16_t(randint(0, 65535)));
  }
  return d;
}

const int64_t kBytes[] = {4, 8, 4, 1, 2, 2};
const int32_t kDtypes = 6; // f32, i64, i32, bool, bf16, f16

void expectBytes(const void *got, const void *want, int64_t bytes,
                 const std::string &what) {
  CHECK(std::memcmp(got, want, size_t(bytes)) == 0, "%s differs (seed %llu)",
        what.c_str(), (unsigned long long)gSeed);
  ++gChecks;
}

//===----------------------------------------------------------------------===//
// The bodies against the CPU kernels
//===----------------------------------------------------------------------===//

void bodies() {
  for (int64_t n : {int64_t(1), int64_t(9), int64_t(1031)}) {
    std::string at = " n=" + std::to_string(n);
    Data a = draw(n), b = draw(n);
    std::vector<uint8_t> got(static_cast<size_t>(n)),
        want(static_cast<size_t>(n));
    for (int32_t dt = 0; dt < kDtypes; ++dt)
      for (int32_t p = 0; p < 6; ++p) {
        for (int64_t i = 0; i < n; ++i)
          compareAt(a.of(dt), b.of(dt), got.data(), dt, p, i);
        pfrt_k_compare(a.of(dt), b.of(dt), want.data(), n, dt, p);
        expectBytes(got.data(), want.data(), n,
                    "compare dtype " + std::to_string(dt) + " predicate " +
                        std::to_string(p) + at);
      }
    for (int32_t kind = 0; kind < 4; ++kind) {
      for (int64_t i = 0; i < n; ++i)
        logicalAt(a.b.data(), b.b.data(), got.data(), kind, i);
      pfrt_k_logical(a.b.data(), b.b.data(), want.data(), n, kind);
      expectBytes(got.data(), want.data(), n,
                  "logical kind " + std::to_string(kind) + at);
    }
    std::vector<uint8_t> cond(static_cast<size_t>(n));
    pfrt_k_compare(a.f.data(), b.f.data(), cond.data(), n, PFRT_DTYPE_F32, 2);
    std::vector<char> g(static_cast<size_t>(n) * 8), w(size_t(n) * 8);
    for (int32_t dt = 0; dt < kDtypes; ++dt) {
      for (int64_t i = 0; i < n; ++i)
        whereAt(cond.data(), a.of(dt), b.of(dt), g.data(), kBytes[dt], i);
      pfrt_k_where(cond.data(), a.of(dt), b.of(dt), w.data(), n, dt);
      expectBytes(g.data(), w.data(), n * kBytes[dt],
                  "where dtype " + std::to_string(dt) + at);
    }
    for (int32_t from = 0; from < kDtypes; ++from)
      for (int32_t to = 0; to < kDtypes; ++to) {
        for (int64_t i = 0; i < n; ++i)
          castAt(a.of(from), from, g.data(), to, i);
        pfrt_k_cast(a.of(from), from, w.data(), to, n);
        expectBytes(g.data(), w.data(), n * kBytes[to],
                    "cast " + std::to_string(from) + " to " +
                        std::to_string(to) + at);
      }
    std::vector<float> fg(static_cast<size_t>(n)), fw(static_cast<size_t>(n));
    for (int32_t dt = 0; dt < kDtypes; ++dt) {
      for (int64_t i = 0; i < n; ++i)
        maskedFillAt(a.f.data(), b.of(dt), fg.data(), dt, -1e9f, i);
      pfrt_k_masked_fill(a.f.data(), b.of(dt), fw.data(), n, dt, -1e9);
      expectBytes(fg.data(), fw.data(), n * 4,
                  "masked_fill mask dtype " + std::to_string(dt) + at);
    }
  }
}

//===----------------------------------------------------------------------===//
// The device twins against the CPU kernels
//===----------------------------------------------------------------------===//

int64_t gArenaTop = 0;

/// A fresh device buffer of `bytes` in the test's arena.
void *dalloc(int64_t bytes) {
  void *p = pfrt_cuda_arena_ptr(gArenaTop, bytes > 0 ? bytes : 1);
  gArenaTop += (bytes + 255) / 256 * 256 + 256;
  return p;
}

void *upload(const void *host, int64_t bytes) {
  void *d = dalloc(bytes);
  if (bytes)
    pfrt_cuda_h2d(d, host, bytes);
  return d;
}

std::vector<char> download(const void *d, int64_t bytes) {
  std::vector<char> h(size_t(bytes) + 1);
  if (bytes)
    pfrt_cuda_d2h(h.data(), d, bytes);
  return h;
}

void twins() {
  for (int64_t n : {int64_t(1), int64_t(9), int64_t(1031)}) {
    std::string at = " n=" + std::to_string(n);
    Data a = draw(n), b = draw(n);
    const void *da[kDtypes], *db[kDtypes];
    for (int32_t dt = 0; dt < kDtypes; ++dt) {
      da[dt] = upload(a.of(dt), n * kBytes[dt]);
      db[dt] = upload(b.of(dt), n * kBytes[dt]);
    }
    auto *dout = static_cast<uint8_t *>(dalloc(8 * n));
    std::vector<char> want(static_cast<size_t>(n) * 8);
    for (int32_t dt = 0; dt < kDtypes; ++dt)
      for (int32_t p = 0; p < 6; ++p) {
        pfrt_cuda_k_compare(da[dt], db[dt], dout, n, dt, p);
        pfrt_k_compare(a.of(dt), b.of(dt),
                       reinterpret_cast<uint8_t *>(want.data()), n, dt, p);
        expectBytes(download(dout, n).data(), want.data(), n,
                    "pfrt_cuda_k_compare dtype " + std::to_string(dt) +
                        " predicate " + std::to_string(p) + at);
      }
    auto *wb = reinterpret_cast<uint8_t *>(want.data());
    for (int32_t kind = 0; kind < 4; ++kind) {
      pfrt_cuda_k_logical(static_cast<const uint8_t *>(da[3]),
                          kind == 3 ? nullptr
                                    : static_cast<const uint8_t *>(db[3]),
                          dout, n, kind);
      pfrt_k_logical(a.b.data(), b.b.data(), wb, n, kind);
      expectBytes(download(dout, n).data(), want.data(), n,
                  "pfrt_cuda_k_logical kind " + std::to_string(kind) + at);
    }
    // In place over the first operand.
    auto *dinplace = static_cast<uint8_t *>(upload(a.b.data(), n));
    pfrt_cuda_k_logical(dinplace, static_cast<const uint8_t *>(db[3]), dinplace,
                        n, 1);
    pfrt_k_logical(a.b.data(), b.b.data(), wb, n, 1);
    expectBytes(download(dinplace, n).data(), want.data(), n,
                "pfrt_cuda_k_logical in place" + at);
    std::vector<uint8_t> cond(static_cast<size_t>(n));
    pfrt_k_compare(a.f.data(), b.f.data(), cond.data(), n, PFRT_DTYPE_F32, 4);
    auto *dcond = static_cast<const uint8_t *>(upload(cond.data(), n));
    for (int32_t dt = 0; dt < kDtypes; ++dt) {
      pfrt_cuda_k_where(dcond, da[dt], db[dt], dout, n, dt);
      pfrt_k_where(cond.data(), a.of(dt), b.of(dt), want.data(), n, dt);
      expectBytes(download(dout, n * kBytes[dt]).data(), want.data(),
                  n * kBytes[dt],
                  "pfrt_cuda_k_where dtype " + std::to_string(dt) + at);
    }
    for (int32_t from = 0; from < kDtypes; ++from)
      for (int32_t to = 0; to < kDtypes; ++to) {
        pfrt_cuda_k_cast(da[from], from, dout, to, n);
        pfrt_k_cast(a.of(from), from, want.data(), to, n);
        expectBytes(download(dout, n * kBytes[to]).data(), want.data(),
                    n * kBytes[to],
                    "pfrt_cuda_k_cast " + std::to_string(from) + " to " +
                        std::to_string(to) + at);
      }
    auto *dx = static_cast<float *>(upload(a.f.data(), 4 * n));
    std::vector<float> fw(static_cast<size_t>(n));
    for (int32_t dt = 0; dt < kDtypes; ++dt) {
      pfrt_cuda_k_masked_fill(dx, db[dt], reinterpret_cast<float *>(dout), n,
                              dt, 0.25);
      pfrt_k_masked_fill(a.f.data(), b.of(dt), fw.data(), n, dt, 0.25);
      expectBytes(download(dout, 4 * n).data(), fw.data(), 4 * n,
                  "pfrt_cuda_k_masked_fill mask dtype " + std::to_string(dt) +
                      at);
    }
  }
  // A bool broadcast [1, 7] -> [5, 7] and the box [1:4, 2:6] of it.
  std::vector<uint8_t> x(7), y(35), z(20, 0), dz(20);
  for (auto &e : x)
    e = uint8_t(randint(0, 1));
  const int64_t in[] = {1, 7}, out[] = {5, 7}, off[] = {1, 2}, dst[] = {4, 5},
                sizes[] = {3, 4};
  void *dxb = upload(x.data(), 7), *dy = dalloc(35),
       *dzb = upload(z.data(), 20);
  pfrt_cuda_k_broadcast(dxb, dy, 2, in, out, 1);
  pfrt_k_broadcast(x.data(), y.data(), 2, in, out, 1);
  expectBytes(download(dy, 35).data(), y.data(), 35,
              "pfrt_cuda_k_broadcast of bools");
  pfrt_cuda_copy_box(dy, out, off, dzb, dst, nullptr, sizes, 2,
                     PFRT_DTYPE_BOOL);
  pfrt_copy_box(y.data(), out, off, z.data(), dst, nullptr, sizes, 2,
                PFRT_DTYPE_BOOL);
  expectBytes(download(dzb, 20).data(), z.data(), 20,
              "pfrt_cuda_copy_box of bools");
}

} // namespace

int main(int argc, char **argv) {
  bool device = argc > 1 && std::string(argv[1]) == "twins";
  if (device && pfrt_cuda_device_count() == 0) {
    printf("cuda-logical: no CUDA device here, skipped\n");
    return 77;
  }
  pfrt_init(&argc, &argv);
  gSeed = pt_seed("cuda-logical");
  gState = pt_mix(gSeed ^ 0x10c1ca1);
  if (device) {
    pfrt_cuda_arena_plan(int64_t(16) << 20);
    twins();
    pfrt_cuda_synchronize();
    pfrt_cuda_finalize();
  } else {
    bodies();
  }
  printf("cuda-logical %s: %d comparisons with the CPU kernels passed\n",
         device ? "twins" : "bodies", gChecks);
  pfrt_finalize();
  return 0;
}
