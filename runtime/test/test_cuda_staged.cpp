//===- test_cuda_staged.cpp - host-staged twins against their host rows ---===//
//
// pfrt-test-cuda-staged [MODE], under mpiexec (2 or more ranks). Without a
// CUDA device (or PFRT_CUDA_FAKE=1's emulation) it exits 77. Otherwise it
// starts as a compiled GPU rank does (pfrt_cuda_arena_plan) and runs the
// host-staged twins of StagedComm.cpp that take shapes, descriptors or
// several buffers, on fresh random data, each against its host row on the
// same inputs (bit for bit: the twin runs the host row on host copies):
//   - pfrt_cuda_box_all_gather, _all_to_all, _slice, _unslice (f32, i64,
//     i32, bf16 and bool, ranks 1 to 4, every axis, a group in reversed order,
//     empty tensors) and _reduce_scatter (f32) and _reduce_scatter_dtype (bf16,
//     f16);
//   - pfrt_cuda_broadcast_dtype (f32, i64, i32, bf16, f16, bool) and
//     _reduce_sum_dtype (f32, bf16, f16; in place on the root or not), from
//     a drawn root of the reversed group, 0 to 1000 elements;
//   - pfrt_cuda_p2p_batch: a ring exchange in both directions with several
//     ops per peer (matched in order), an empty op with a NULL buffer, and
//     a buffer sent twice;
//   - pfrt_cuda_softmax_xent_vocab and _grad: the classes split over the
//     ranks, every mode, ignored rows, logits and dlogits in place; with
//     MODE "nccl" on the device (DeviceVocabXent.cpp: kernels and NCCL
//     all-reduces), the host row's bits all the same, and the counters
//     show it (no round-trip, the host row's all-reduce bytes over NCCL);
//     MODE "bad_label": a label outside the classes found on the device;
//   - pfrt_cuda_state_add_part: a device tensor of two parts per rank
//     gathered, then set, through the host.
// The boxing twins' collectives are host-staged where the ranks share the
// emulated GPU (no MODE) and go over NCCL with MODE "nccl" (each rank has
// a GPU of its own: PFRT_CUDA_FAKE_DEVICES; 1 rank too): the same
// comparisons, and the communication counters must show it (host
// round-trips and MPI bytes staged, NCCL bytes and no round-trip over
// NCCL; every kind's bytes exactly). The slices run on the device either
// way.
// MODE "bad_index" slices with a bad index and "overlap" gathers into a
// buffer overlapping the input: both must fail with the host row's error.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "TestUtil.h"
#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t gSeed, gState, gTag;
int gRank, gSize;
const int64_t kArena = int64_t(64) << 20;
pt::DeviceArena gArena(kArena);

int64_t randint(int64_t lo, int64_t hi) { return pt_randint(&gState, lo, hi); }

/// Fresh random bytes (the same on every rank for the same tag; `salt`
/// makes them this rank's).
std::vector<char> randomBytes(int64_t bytes, uint64_t salt) {
  std::vector<char> v(static_cast<size_t>(bytes > 0 ? bytes : 0));
  uint64_t t = ++gTag;
  for (int64_t i = 0; i < bytes; i += 4) {
    float f = pt_value(gSeed, t, salt, uint64_t(i));
    std::memcpy(v.data() + i, &f, size_t(bytes - i < 4 ? bytes - i : 4));
  }
  return v;
}

std::vector<float> uniform(int64_t n, uint64_t salt) {
  return pt::uniformValues(gSeed, ++gTag, salt, n, -4.0f, 4.0f);
}

/// `count` fresh bf16 or f16 values (this rank's), finite: magnitudes in
/// [0.25, 8) of either sign.
std::vector<char> halves(int32_t dtype, int64_t count) {
  std::vector<char> raw = randomBytes(count * 2, uint64_t(gRank) + 11);
  bool bf16 = dtype == PFRT_DTYPE_BF16;
  for (int64_t i = 0; i < count; ++i) {
    uint16_t h;
    std::memcpy(&h, raw.data() + 2 * i, 2);
    // Sign and significand kept, the exponent 2^-2 to 2^2.
    unsigned e = (h >> 11) % 5;
    h = bf16 ? uint16_t((h & 0x807fu) | ((125u + e) << 7))
             : uint16_t((h & 0x83ffu) | ((13u + e) << 10));
    std::memcpy(raw.data() + 2 * i, &h, 2);
  }
  return raw;
}

/// A fresh device buffer of `bytes` (the test's own bump allocation).
void *dalloc(int64_t bytes) { return gArena.alloc(bytes); }

void *upload(const void *host, int64_t bytes) {
  return gArena.upload(static_cast<const char *>(host), bytes);
}

std::vector<char> download(const void *d, int64_t bytes) {
  return pt::download(static_cast<const char *>(d), bytes);
}

void expectSame(const std::vector<char> &got, const std::vector<char> &want,
                const std::string &what) {
  CHECK(got.size() == want.size(), "%s: %zu bytes, the host row gives %zu",
        what.c_str(), got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == want[i],
          "%s: byte %zu differs from the host row's (0x%02x, want 0x%02x)",
          what.c_str(), i, unsigned(uint8_t(got[i])),
          unsigned(uint8_t(want[i])));
}

int64_t elemBytes(int32_t dtype) {
  switch (dtype) {
  case PFRT_DTYPE_I64:
    return 8;
  case PFRT_DTYPE_BF16:
    return 2;
  case PFRT_DTYPE_BOOL:
    return 1;
  }
  return 4;
}

/// What the boxing collectives should have counted (pfrt_comm_counters):
/// per kind the bytes of the non-empty calls (the gathered output, the
/// scattered or exchanged input), and the twins' collective calls.
struct Expected {
  int64_t bytes[PFRT_COMM_KINDS] = {};
  int64_t twinCalls = 0;
  void add(int kind, int64_t b) {
    ++twinCalls;
    bytes[kind] += b;
  }
};

/// The counters after boxing(): over NCCL (`nccl`: each rank has a GPU of
/// its own) the twins' collectives are NCCL's, with no host round-trip, and
/// MPI moved only what the host rows called for comparison did; staged
/// (the ranks share the emulated GPU) each twin's collective is one host
/// round-trip and MPI moved everything twice (the twin's host row and the
/// comparison's).
void checkCounters(const Expected &e, bool nccl) {
  pfrt_comm_counters c;
  pfrt_comm_counters_get(&c);
  const char *names[PFRT_COMM_KINDS] = {
      "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "send",       "recv",       "broadcast",      "reduce"};
  for (int k = 0; k < PFRT_COMM_KINDS; ++k) {
    CHECK(c.nccl_bytes[k] == (nccl ? e.bytes[k] : 0),
          "counters: %s nccl_bytes %lld, expected %lld", names[k],
          (long long)c.nccl_bytes[k], (long long)(nccl ? e.bytes[k] : 0));
    CHECK(c.mpi_bytes[k] == (nccl ? 1 : 2) * e.bytes[k],
          "counters: %s mpi_bytes %lld, expected %lld", names[k],
          (long long)c.mpi_bytes[k], (long long)((nccl ? 1 : 2) * e.bytes[k]));
  }
  CHECK(c.host_round_trips == (nccl ? 0 : e.twinCalls),
        "counters: %lld host round-trips, expected %lld",
        (long long)c.host_round_trips, (long long)(nccl ? 0 : e.twinCalls));
  CHECK(nccl ? c.host_round_trip_bytes == 0 : c.host_round_trip_bytes > 0,
        "counters: %lld host round-trip bytes on the %s path",
        (long long)c.host_round_trip_bytes, nccl ? "NCCL" : "staged");
  if (gRank == 0)
    printf("cuda-staged: counters (%s): %lld all_gather, %lld reduce_scatter, "
           "%lld all_to_all bytes, %lld host round-trips\n",
           nccl ? "NCCL" : "staged", (long long)e.bytes[PFRT_COMM_ALL_GATHER],
           (long long)e.bytes[PFRT_COMM_REDUCE_SCATTER],
           (long long)e.bytes[PFRT_COMM_ALL_TO_ALL],
           (long long)c.host_round_trips);
}

int64_t product(const std::vector<int64_t> &s) {
  int64_t p = 1;
  for (int64_t d : s)
    p *= d;
  return p;
}

std::string describe(const char *fn, int32_t dtype,
                     const std::vector<int64_t> &shape, int64_t axis) {
  std::string s = std::string(fn) + " dtype " + std::to_string(dtype) + " [";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "x" : "") + std::to_string(shape[d]);
  return s + "] axis " + std::to_string(axis);
}

/// Runs a boxing twin and its host row on the same input; compares.
template <typename Twin, typename Host>
void compareBoxing(const std::string &what, const std::vector<char> &in,
                   int64_t outBytes, Twin twin, Host host) {
  std::vector<char> want(static_cast<size_t>(outBytes));
  host(in.data(), want.data());
  void *din = upload(in.data(), int64_t(in.size()));
  // Garbage in the output first: the twin must write every byte.
  std::vector<char> junk = randomBytes(outBytes, 977);
  void *dout = upload(junk.data(), outBytes);
  twin(in.empty() ? nullptr : din, outBytes ? dout : nullptr);
  expectSame(download(dout, outBytes), want, what);
}

/// compareBoxing of a twin and its host row that take the same arguments:
/// (in, out, args...).
template <typename Row, typename... Args>
void compareRows(const std::string &what, const std::vector<char> &in,
                 int64_t outBytes, Row *twin, Row *host, Args... args) {
  compareBoxing(
      what, in, outBytes, [&](const void *i, void *o) { twin(i, o, args...); },
      [&](const void *i, void *o) { host(i, o, args...); });
}

/// pfrt_cuda_broadcast_dtype against pfrt_broadcast_dtype: every rank
/// starts from its own random `in`, the root's reaches every member (in
/// place, bit for bit).
void compareBroadcast(const std::string &what, const std::vector<char> &in,
                      int32_t dtype, int64_t count, int64_t root,
                      const int64_t *g, int64_t n) {
  std::vector<char> want = in;
  pfrt_broadcast_dtype(want.empty() ? nullptr : want.data(), count, dtype, root,
                       g, n);
  void *d = upload(in.data(), int64_t(in.size()));
  pfrt_cuda_broadcast_dtype(in.empty() ? nullptr : d, count, dtype, root, g, n);
  expectSame(download(d, int64_t(in.size())), want, what);
}

/// pfrt_cuda_reduce_sum_dtype against pfrt_reduce_sum_dtype: the root's
/// sum (in place on the root when `inPlace`), bit for bit.
void compareReduce(const std::string &what, const std::vector<char> &in,
                   int32_t dtype, int64_t count, int64_t root, bool inPlace,
                   const int64_t *g, int64_t n) {
  const bool isRoot = gRank == root;
  const int64_t bytes = int64_t(in.size());
  std::vector<char> want = in;
  std::vector<char> hostOut(size_t(isRoot ? bytes : 0));
  char *hin = want.empty() ? nullptr : want.data();
  pfrt_reduce_sum_dtype(hin,
                        isRoot ? (inPlace ? hin : hostOut.data()) : nullptr,
                        count, dtype, root, g, n);
  if (isRoot && !inPlace)
    want = hostOut;
  void *din = upload(in.data(), bytes);
  std::vector<char> junk = randomBytes(bytes, 979);
  void *dout = inPlace ? din : upload(junk.data(), bytes);
  pfrt_cuda_reduce_sum_dtype(bytes ? din : nullptr,
                             isRoot && bytes ? dout : nullptr, count, dtype,
                             root, g, n);
  if (isRoot)
    expectSame(download(dout, bytes), want, what);
}

/// Broadcast (f32, i64, i32, bf16, f16, bool) and reduce (f32, bf16, f16)
/// of `count` elements from a drawn root, each twin against its host row.
void broadcastAndReduce(int64_t count, const int64_t *g, int64_t n,
                        Expected &e) {
  for (int32_t dtype : {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32,
                        PFRT_DTYPE_BF16, PFRT_DTYPE_F16, PFRT_DTYPE_BOOL}) {
    int64_t es = dtype == PFRT_DTYPE_F16 ? 2 : elemBytes(dtype);
    int64_t root = g[randint(0, n - 1)];
    std::string at = " dtype " + std::to_string(dtype) + " count " +
                     std::to_string(count) + " root " + std::to_string(root);
    compareBroadcast("broadcast_dtype" + at,
                     randomBytes(count * es, uint64_t(gRank) + 13), dtype,
                     count, root, g, n);
    e.add(PFRT_COMM_BROADCAST, count * es);
    if (dtype == PFRT_DTYPE_F32 || dtype == PFRT_DTYPE_BF16 ||
        dtype == PFRT_DTYPE_F16) {
      std::vector<char> x;
      if (dtype == PFRT_DTYPE_F32) {
        std::vector<float> f = uniform(count, uint64_t(gRank) + 17);
        x.resize(size_t(count * 4));
        if (count)
          std::memcpy(x.data(), f.data(), size_t(count * 4));
      } else {
        x = halves(dtype, count);
      }
      bool inPlace = randint(0, 1) == 1;
      compareReduce("reduce_sum_dtype" + at + (inPlace ? " in place" : ""), x,
                    dtype, count, root, inPlace, g, n);
      e.add(PFRT_COMM_REDUCE, count * es);
    }
  }
}

void boxing(bool nccl) {
  // The world group, reversed: group positions differ from world ranks.
  std::vector<int64_t> group;
  for (int r = gSize - 1; r >= 0; --r)
    group.push_back(r);
  const int64_t n = gSize, pos = gSize - 1 - gRank;
  const int64_t *g = group.data();
  int cases = 0;
  Expected e;
  pfrt_comm_counters_reset();
  for (int32_t dtype : {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32,
                        PFRT_DTYPE_BF16, PFRT_DTYPE_BOOL})
    for (int64_t ndim = 1; ndim <= 4; ++ndim)
      for (int64_t axis = 0; axis < ndim; ++axis) {
        std::vector<int64_t> shape(static_cast<size_t>(ndim));
        for (int64_t &d : shape)
          d = randint(1, 4);
        shape[size_t(axis)] *= n; // splits into n blocks
        if (randint(0, 9) == 0)   // now and then an empty tensor
          shape[size_t(randint(0, ndim - 1))] = 0;
        int64_t es = elemBytes(dtype), bytes = product(shape) * es;
        const int64_t *sh = shape.data();
        std::vector<char> in = randomBytes(bytes, uint64_t(gRank) + 1);

        compareRows(describe("box_all_gather", dtype, shape, axis), in,
                    bytes * n, pfrt_cuda_box_all_gather, pfrt_box_all_gather,
                    dtype, ndim, sh, axis, g, n);
        e.add(PFRT_COMM_ALL_GATHER, bytes * n);
        compareRows(describe("box_slice", dtype, shape, axis), in, bytes / n,
                    pfrt_cuda_box_slice, pfrt_box_slice, dtype, ndim, sh, axis,
                    pos, n);
        compareRows(describe("box_unslice", dtype, shape, axis), in, bytes * n,
                    pfrt_cuda_box_unslice, pfrt_box_unslice, dtype, ndim, sh,
                    axis, pos, n);
        if (ndim >= 2) {
          int64_t concat = (axis + randint(1, ndim - 1)) % ndim;
          compareRows(describe("box_all_to_all", dtype, shape, axis) +
                          " concat " + std::to_string(concat),
                      in, bytes, pfrt_cuda_box_all_to_all, pfrt_box_all_to_all,
                      dtype, ndim, sh, axis, concat, g, n);
          e.add(PFRT_COMM_ALL_TO_ALL, bytes);
        }
        if (dtype == PFRT_DTYPE_F32) {
          std::vector<float> x = uniform(bytes / 4, uint64_t(gRank) + 7);
          std::vector<char> xin(static_cast<size_t>(bytes));
          if (bytes)
            std::memcpy(xin.data(), x.data(), size_t(bytes));
          compareBoxing(
              describe("box_reduce_scatter", dtype, shape, axis), xin,
              bytes / n,
              [&](const void *i, void *o) {
                pfrt_cuda_box_reduce_scatter(static_cast<const float *>(i),
                                             static_cast<float *>(o), ndim, sh,
                                             axis, g, n);
              },
              [&](const void *i, void *o) {
                pfrt_box_reduce_scatter(static_cast<const float *>(i),
                                        static_cast<float *>(o), ndim, sh, axis,
                                        g, n);
              });
          e.add(PFRT_COMM_REDUCE_SCATTER, bytes);
          for (int32_t half : {PFRT_DTYPE_BF16, PFRT_DTYPE_F16})
            compareRows(describe("box_reduce_scatter_dtype", half, shape, axis),
                        halves(half, bytes / 4), bytes / 2 / n,
                        pfrt_cuda_box_reduce_scatter_dtype,
                        pfrt_box_reduce_scatter_dtype, half, ndim, sh, axis, g,
                        n);
          for (int h = 0; h < 2; ++h)
            e.add(PFRT_COMM_REDUCE_SCATTER, bytes / 2);
        }
        ++cases;
      }
  for (int64_t count : {int64_t(0), int64_t(1), int64_t(7), int64_t(1000)})
    broadcastAndReduce(count, g, n, e);
  if (gRank == 0)
    printf("cuda-staged: boxing, %d shapes x 5 dtypes; broadcast and reduce "
           "in 6 and 3 dtypes\n",
           cases / 5);
  checkCounters(e, nccl);
}

/// Ring exchange: every rank sends to both neighbours (three messages to
/// the right of varying size, one to the left, the same buffer twice) and
/// receives the matching ones, plus an empty op with a NULL buffer.
void p2pBatch() {
  const int right = (gRank + 1) % gSize, left = (gRank + gSize - 1) % gSize;
  // Message sizes agreed by all ranks (the same draw everywhere).
  int64_t sizes[3];
  for (int64_t &s : sizes)
    s = randint(0, 3000);
  int64_t back = randint(1, 500);
  std::vector<std::vector<float>> sends;
  for (int64_t s : sizes)
    sends.push_back(uniform(s, uint64_t(gRank) + 100));
  std::vector<float> leftSend = uniform(back, uint64_t(gRank) + 200);

  auto ops = [&](float *const *sendBufs, float *leftBuf, float *const *recvBufs,
                 float *fromRight) {
    std::vector<pfrt_p2p_op> v;
    for (int k = 0; k < 3; ++k)
      v.push_back({1, int32_t(right), 5, sendBufs[k], sizes[k]});
    v.push_back({1, int32_t(left), 6, leftBuf, back});
    v.push_back({1, int32_t(left), 7, leftBuf, back}); // the same buffer again
    v.push_back({1, int32_t(right), 8, nullptr, 0});
    for (int k = 0; k < 3; ++k)
      v.push_back({0, int32_t(left), 5, recvBufs[k], sizes[k]});
    v.push_back({0, int32_t(right), 6, fromRight, back});
    v.push_back({0, int32_t(right), 7, fromRight + back, back});
    v.push_back({0, int32_t(left), 8, nullptr, 0});
    return v;
  };

  // Host row.
  std::vector<std::vector<float>> hostRecv(3);
  for (int k = 0; k < 3; ++k)
    hostRecv[size_t(k)].assign(size_t(sizes[k]), 0.0f);
  std::vector<float> hostFromRight(static_cast<size_t>(2 * back));
  float *hs[3] = {sends[0].data(), sends[1].data(), sends[2].data()};
  float *hr[3] = {hostRecv[0].data(), hostRecv[1].data(), hostRecv[2].data()};
  std::vector<pfrt_p2p_op> h =
      ops(hs, leftSend.data(), hr, hostFromRight.data());
  pfrt_p2p_batch(h.data(), int64_t(h.size()));

  // Twin on device buffers (receive buffers start as garbage).
  float *ds[3], *dr[3];
  for (int k = 0; k < 3; ++k) {
    ds[k] = static_cast<float *>(
        upload(sends[size_t(k)].data(), sizes[k] * int64_t(sizeof(float))));
    std::vector<char> junk = randomBytes(sizes[k] * 4, 31);
    dr[k] = static_cast<float *>(upload(junk.data(), sizes[k] * 4));
  }
  float *dleft = static_cast<float *>(upload(leftSend.data(), back * 4));
  std::vector<char> junk = randomBytes(2 * back * 4, 32);
  float *dFromRight = static_cast<float *>(upload(junk.data(), 2 * back * 4));
  std::vector<pfrt_p2p_op> d = ops(ds, dleft, dr, dFromRight);
  std::vector<pfrt_p2p_op> before = d;
  pfrt_cuda_p2p_batch(d.data(), int64_t(d.size()));
  CHECK(std::memcmp(before.data(), d.data(), d.size() * sizeof(pfrt_p2p_op)) ==
            0,
        "pfrt_cuda_p2p_batch changed its descriptors");

  for (int k = 0; k < 3; ++k) {
    std::vector<char> want(static_cast<size_t>(sizes[k] * 4));
    if (sizes[k])
      std::memcpy(want.data(), hostRecv[size_t(k)].data(), want.size());
    expectSame(download(dr[k], sizes[k] * 4), want,
               "p2p_batch receive " + std::to_string(k) + " of " +
                   std::to_string(sizes[k]) + " floats");
  }
  std::vector<char> want(static_cast<size_t>(2 * back * 4));
  std::memcpy(want.data(), hostFromRight.data(), want.size());
  expectSame(download(dFromRight, 2 * back * 4), want,
             "p2p_batch receives from the right");
  if (gRank == 0)
    printf("cuda-staged: p2p_batch, messages of %lld, %lld, %lld and %lld "
           "floats\n",
           (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
           (long long)back);
}

/// The vocabulary-parallel cross-entropy's counters for one forward and
/// gradient of n rows: over NCCL (DeviceVocabXent.cpp) four all-reduces
/// of 4n + 16n + 4n + 8n bytes and no round-trip; staged the same
/// all-reduces over MPI and two round-trips.
void checkVocabCounters(bool nccl, int64_t n, const std::string &what) {
  pfrt_comm_counters c;
  pfrt_comm_counters_get(&c);
  const int k = PFRT_COMM_ALL_REDUCE;
  const int64_t calls = nccl ? c.nccl_calls[k] : c.mpi_calls[k];
  const int64_t bytes = nccl ? c.nccl_bytes[k] : c.mpi_bytes[k];
  const int64_t other = nccl ? c.mpi_bytes[k] : c.nccl_bytes[k];
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(calls == 4 && bytes == 32 * n && other == 0,
        "%s: %lld all-reduces of %lld bytes (%lld on the other transport), "
        "expected 4 of %lld over %s",
        what.c_str(), (long long)calls, (long long)bytes, (long long)other,
        (long long)(32 * n), nccl ? "NCCL" : "MPI");
  CHECK(c.host_round_trips == (nccl ? 0 : 2),
        "%s: %lld host round-trips, expected %d", what.c_str(),
        (long long)c.host_round_trips, nccl ? 0 : 2);
}

/// The vocabulary-parallel cross-entropy: this rank's block of c classes
/// of `classes`, labels anywhere in the row (some ignored). Over NCCL
/// (`nccl`) on the device, else host-staged: the host row's bits either
/// way.
void vocabXent(bool nccl) {
  std::vector<int64_t> group;
  for (int r = 0; r < gSize; ++r)
    group.push_back(r);
  for (int64_t mode = 0; mode <= 2; ++mode)
    for (int inPlace = 0; inPlace <= 1; ++inPlace) {
      int64_t n = randint(1, 40), c = randint(1, 50);
      int64_t classes = c * gSize, offset = c * gRank;
      const int64_t ignore = -1;
      std::vector<float> logits = uniform(n * c, uint64_t(gRank) + 300);
      std::vector<int64_t> labels(static_cast<size_t>(n));
      uint64_t t = ++gTag; // the same labels on every rank
      for (int64_t r = 0; r < n; ++r) {
        uint64_t h = pt_mix(gSeed ^ pt_mix(t ^ pt_mix(uint64_t(r))));
        labels[size_t(r)] = int64_t(h % uint64_t(classes));
        if (mode != 0 && r > 0 && (h >> 32) % 4 == 0)
          labels[size_t(r)] = ignore;
      }
      float dloss = 0.5f + float(randint(0, 100)) / 64.0f;

      float wantLoss = 0;
      pfrt_softmax_xent_vocab(logits.data(), labels.data(), &wantLoss, n, c,
                              offset, classes, ignore, mode, group.data(),
                              gSize);
      // In place (dlogits over the logits) on the host too: the twin's host
      // copies alias as its device buffers do.
      std::vector<float> wantGrad(static_cast<size_t>(n * c));
      if (inPlace)
        wantGrad = logits;
      pfrt_softmax_xent_vocab_grad(inPlace ? wantGrad.data() : logits.data(),
                                   labels.data(), &dloss, wantGrad.data(), n, c,
                                   offset, classes, ignore, mode, group.data(),
                                   gSize);

      pfrt_comm_counters_reset();
      float *dx = static_cast<float *>(upload(logits.data(), n * c * 4));
      auto *dl = static_cast<int64_t *>(upload(labels.data(), n * int64_t(8)));
      float *dLoss = static_cast<float *>(dalloc(4));
      float *dDloss = static_cast<float *>(upload(&dloss, 4));
      pfrt_cuda_softmax_xent_vocab(dx, dl, dLoss, n, c, offset, classes, ignore,
                                   mode, group.data(), gSize);
      std::string what = "softmax_xent_vocab mode " + std::to_string(mode) +
                         " n " + std::to_string(n) + " c " + std::to_string(c);
      std::vector<char> wantLossBytes(4);
      std::memcpy(wantLossBytes.data(), &wantLoss, 4);
      expectSame(download(dLoss, 4), wantLossBytes, what);
      float *dg = inPlace ? dx : static_cast<float *>(dalloc(n * c * 4));
      pfrt_cuda_softmax_xent_vocab_grad(dx, dl, dDloss, dg, n, c, offset,
                                        classes, ignore, mode, group.data(),
                                        gSize);
      std::vector<char> wantGradBytes(static_cast<size_t>(n * c * 4));
      std::memcpy(wantGradBytes.data(), wantGrad.data(), wantGradBytes.size());
      expectSame(download(dg, n * c * 4), wantGradBytes,
                 what + (inPlace ? " grad in place" : " grad"));
      checkVocabCounters(nccl, n, what);
    }
  if (gRank == 0)
    printf("cuda-staged: softmax_xent_vocab and _grad, modes 0-2 (%s)\n",
           nccl ? "on the device, NCCL" : "host-staged");
}

/// A device tensor [2 * size, w]: rank r holds rows r and size + r, two
/// parts (registered, then added).
void stateParts() {
  const int64_t w = randint(1, 20), rows = 2 * gSize;
  const int64_t logical[2] = {rows, w}, box[2] = {1, w};
  std::vector<float> whole = uniform(rows * w, 0); // the same on every rank
  float *parts[2];
  for (int k = 0; k < 2; ++k) {
    int64_t row = gRank + k * gSize;
    parts[k] = static_cast<float *>(upload(whole.data() + row * w, w * 4));
  }
  const int64_t off0[2] = {gRank, 0}, off1[2] = {gSize + gRank, 0};
  pfrt_cuda_state_register("staged.parts", PFRT_DTYPE_F32, 2, logical, off0,
                           box, parts[0]);
  pfrt_cuda_state_add_part("staged.parts", off1, parts[1]);
  std::vector<float> got(static_cast<size_t>(rows * w));
  pfrt_state_gather("staged.parts", got.data(), rows * w * 4);
  CHECK(std::memcmp(got.data(), whole.data(), got.size() * 4) == 0,
        "state_add_part: the gathered tensor differs from the parts' data");
  std::vector<float> next = uniform(rows * w, 1);
  pfrt_state_set("staged.parts", next.data(), rows * w * 4);
  for (int k = 0; k < 2; ++k) {
    int64_t row = gRank + k * gSize;
    std::vector<char> want(static_cast<size_t>(w * 4));
    std::memcpy(want.data(), next.data() + row * w, want.size());
    expectSame(download(parts[k], w * 4), want,
               "state_set into part " + std::to_string(k));
  }
  if (gRank == 0)
    printf("cuda-staged: state_add_part (2 parts a rank)\n");
}

} // namespace

int main(int argc, char **argv) {
  pt::skipWithoutDevice("cuda-staged");
  gSeed = pt_start(&argc, &argv, "cuda-staged", &gRank, &gSize);
  gState = pt_mix(gSeed ^ 0x57a6ed);
  std::string mode = argc > 1 ? argv[1] : "";
  pfrt_cuda_arena_plan(kArena);
  if (mode == "bad_index") {
    const int64_t shape[2] = {4, 6};
    void *in = dalloc(24 * 4), *out = dalloc(12 * 4);
    pfrt_cuda_box_slice(in, out, PFRT_DTYPE_F32, 2, shape, 1, 5, 2);
    return 0;
  }
  if (mode == "overlap") {
    std::vector<int64_t> group;
    group.reserve(size_t(gSize));
    for (int r = 0; r < gSize; ++r)
      group.push_back(r);
    const int64_t shape[1] = {8};
    auto *buf = static_cast<char *>(dalloc(8 * 4 * (gSize + 1)));
    pfrt_cuda_box_all_gather(buf, buf + 16, PFRT_DTYPE_F32, 1, shape, 0,
                             group.data(), gSize);
    return 0;
  }
  // "bad_label": the vocabulary cross-entropy with a label outside the
  // classes on a GPU a rank: found on the device, fatal at the report.
  if (mode == "bad_label") {
    std::vector<int64_t> group(static_cast<size_t>(gSize));
    for (int r = 0; r < gSize; ++r)
      group[size_t(r)] = r;
    std::vector<float> logits = uniform(3 * 4, 1);
    const int64_t labels[3] = {1, 2 * gSize * 4, 0};
    float *dx = static_cast<float *>(upload(logits.data(), 12 * 4));
    auto *dl = static_cast<int64_t *>(upload(labels, 3 * 8));
    float *dLoss = static_cast<float *>(dalloc(4));
    pfrt_cuda_softmax_xent_vocab(dx, dl, dLoss, 3, 4, 4 * gRank, 4 * gSize, -1,
                                 0, group.data(), gSize);
    pfrt_cuda_finalize();
    return 0;
  }
  // "nccl": every rank has a GPU of its own (PFRT_CUDA_FAKE_DEVICES): the
  // boxing twins go over NCCL, on 1 rank too.
  const bool nccl = mode == "nccl";
  // NOLINTNEXTLINE(readability-simplify-boolean-expr)
  CHECK(gSize >= 2 || nccl, "run under mpiexec with 2 or more ranks (got %d)",
        gSize);
  boxing(nccl);
  if (gSize == 1) {
    pfrt_cuda_finalize();
    return pt_finish(gRank, "cuda-staged: PASS\n");
  }
  p2pBatch();
  vocabXent(nccl);
  stateParts();
  pfrt_cuda_finalize();
  return pt_finish(gRank, "cuda-staged: PASS\n");
}
