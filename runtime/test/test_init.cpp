//===- test_init.cpp - Philox and layout-independent initialisation -------===//
//
// Known-answer vectors, then for random shapes and every kind: each rank
// computes the whole logical tensor and shards of it under several layouts
// (splits along each axis, uneven splits, 2-D blocks) and checks that each
// shard equals the matching slice bit for bit; that all ranks computed the
// same tensor; and that the values have the promised distribution.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

struct Kat {
  uint32_t ctr[4], key[2], want[4];
};

// Philox authors' test vectors (Random123 kat_vectors, philox4x32 10).
const Kat kKats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

using pt::numel;
using pt::Shape;

/// Copies the slice [off, off+shape) of a row-major tensor of shape full.
std::vector<float> slice(const std::vector<float> &t, const Shape &full,
                         const Shape &off, const Shape &shape) {
  std::vector<float> out(numel(shape));
  size_t nd = full.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t k = 0; k < int64_t(out.size()); ++k) {
    int64_t lin = 0;
    for (size_t d = 0; d < nd; ++d)
      lin = lin * full[d] + off[d] + idx[d];
    out[k] = t[lin];
    for (int64_t d = int64_t(nd) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

struct Param {
  int32_t kind;
  double a, b;
};

void checkDistribution(const std::vector<float> &t, const Param &p) {
  int64_t n = int64_t(t.size());
  // Below this the 5% spread bounds would be only a few sigma wide.
  if (n < 10000)
    return;
  double sum = 0, sq = 0;
  float lo = INFINITY, hi = -INFINITY;
  for (float v : t) {
    sum += v;
    sq += double(v) * v;
    lo = std::fmin(lo, v);
    hi = std::fmax(hi, v);
  }
  double mean = sum / n, var = sq / n - mean * mean;
  if (p.kind == PFRT_INIT_UNIFORM || p.kind == PFRT_INIT_KAIMING_UNIFORM) {
    double a = p.a, b = p.b;
    if (p.kind == PFRT_INIT_KAIMING_UNIFORM) {
      b = 1.0 / std::sqrt(p.a);
      a = -b;
    }
    CHECK(lo >= float(a) && hi <= float(b), "uniform value outside [%g, %g]", a,
          b);
    double w = b - a, sd = w / std::sqrt(12.0);
    CHECK(std::fabs(mean - (a + b) / 2) < 6 * sd / std::sqrt(double(n)),
          "uniform mean %g, expected %g", mean, (a + b) / 2);
    CHECK(std::fabs(std::sqrt(var) - sd) < 0.05 * sd, "uniform sd %g vs %g",
          std::sqrt(var), sd);
    // Both ends are reached (not a squashed range).
    CHECK(lo < a + 0.01 * w && hi > b - 0.01 * w, "range [%g, %g] too narrow",
          double(lo), double(hi));
  } else if (p.kind == PFRT_INIT_NORMAL) {
    CHECK(std::fabs(mean - p.a) < 6 * p.b / std::sqrt(double(n)),
          "normal mean %g, expected %g", mean, p.a);
    CHECK(std::fabs(std::sqrt(var) - p.b) < 0.05 * p.b, "normal sd %g vs %g",
          std::sqrt(var), p.b);
    // Tails exist but are bounded (u in (0,1) caps |z| at about 6.7).
    double zmax = std::fmax(hi - p.a, p.a - lo) / p.b;
    CHECK(zmax > 2.5 && zmax < 6.8, "normal max |z| %g", zmax);
  }
}

/// Philox's known answers and the stream ids' FNV-1a.
void checkKnownAnswers() {
  for (const Kat &k : kKats) {
    uint32_t out[4];
    pfrt_philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i)
      CHECK(out[i] == k.want[i], "KAT word %d: %08x != %08x", i, out[i],
            k.want[i]);
  }
  CHECK(pfrt_stream_id("") == 0xcbf29ce484222325ull, "fnv1a empty");
  CHECK(pfrt_stream_id("a") == 0xaf63dc4c8601ec8cull, "fnv1a 'a'");
  CHECK(pfrt_stream_id("foobar") == 0x85944171f73967e8ull, "fnv1a 'foobar'");
  CHECK(pfrt_stream_for_step(1, 0) != pfrt_stream_for_step(1, 1) &&
            pfrt_stream_for_step(1, 0) != 1,
        "stream_for_step must change the stream");
}

/// The counter is the logical index: element i of a 1-D uniform(0,1)
/// tensor is (x0 + 0.5) * 2^-32 of Philox(counter = {i, 0, s_lo, s_hi}).
void checkCounterIsIndex(uint64_t seed) {
  uint64_t stream = pfrt_stream_id("layer.weight");
  int64_t len = 9;
  float v[9];
  pfrt_init_param(v, PFRT_INIT_UNIFORM, 0.0, 1.0, seed, stream, 1, &len,
                  nullptr, nullptr);
  for (int64_t i = 0; i < len; ++i) {
    uint32_t ctr[4] = {uint32_t(i), 0, uint32_t(stream),
                       uint32_t(stream >> 32)};
    uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
    uint32_t x[4];
    pfrt_philox4x32_10(ctr, key, x);
    float want = float((double(x[0]) + 0.5) * 0x1p-32);
    CHECK(v[i] == want, "element %lld: %.9g != %.9g", (long long)i,
          double(v[i]), double(want));
  }
}

/// Every initialiser on random shapes: its values, the same tensor on every
/// rank, and each shard (uneven splits along each axis, random boxes) the
/// slice of the whole. Returns the shard comparisons made.
int checkParams(uint64_t seed, int rank, int size,
                const std::vector<int64_t> &world) {
  const Param params[] = {
      {PFRT_INIT_ZEROS, 0, 0},
      {PFRT_INIT_ONES, 0, 0},
      {PFRT_INIT_CONSTANT, 0.3, 0},
      {PFRT_INIT_UNIFORM, -2.5, 0.75},
      {PFRT_INIT_NORMAL, 0.5, 0.02},
      {PFRT_INIT_NORMAL, 0.0, 1.0},
      {PFRT_INIT_KAIMING_UNIFORM, 300, 0},
  };
  uint64_t rs = seed ^ 0x1234;
  int cases = 0;
  for (int trial = 0; trial < 6; ++trial) {
    // Shapes of rank 1..4 with odd extents; some large enough for stats.
    int nd = int(pt_randint(&rs, 1, 4));
    Shape full(nd);
    for (int d = 0; d < nd; ++d)
      full[d] = pt_randint(&rs, 1, nd <= 2 ? 200 : 23);
    if (trial == 0) { // One big tensor so the statistics are meaningful.
      nd = 2;
      full = {97, 131};
    }
    for (const Param &p : params) {
      uint64_t stream = pfrt_stream_id("param") + uint64_t(trial) * 7919;
      std::vector<float> t(numel(full));
      pfrt_init_param(t.data(), p.kind, p.a, p.b, seed, stream, nd, full.data(),
                      nullptr, nullptr);
      if (p.kind == PFRT_INIT_CONSTANT)
        for (float v : t)
          CHECK(v == float(p.a), "constant %g", double(v));
      if (p.kind == PFRT_INIT_ONES)
        for (float v : t)
          CHECK(v == 1.0f, "ones %g", double(v));
      if (p.kind == PFRT_INIT_ZEROS)
        for (float v : t)
          CHECK(v == 0.0f, "zeros %g", double(v));
      checkDistribution(t, p);

      // All ranks computed the same tensor: compare with rank 0's copy.
      std::vector<float> r0 = t;
      pfrt_broadcast(r0.data(), int64_t(r0.size()), 0, world.data(), size);
      CHECK(pt_bits_equal(r0.data(), t.data(), int64_t(t.size())),
            "rank %d computed a different tensor than rank 0", rank);

      // Layouts: split each axis into `size` uneven parts (this rank's part),
      // plus random boxes.
      for (int d = 0; d < nd; ++d) {
        Shape off(nd, 0), shp = full;
        int64_t base = full[d] / size, extra = full[d] % size;
        off[d] = rank * base + std::min<int64_t>(rank, extra);
        shp[d] = base + (rank < extra ? 1 : 0);
        std::vector<float> s(numel(shp));
        pfrt_init_param(s.data(), p.kind, p.a, p.b, seed, stream, nd,
                        full.data(), off.data(), shp.data());
        CHECK(pt_bits_equal(s.data(), slice(t, full, off, shp).data(),
                            int64_t(s.size())),
              "split along axis %d: shard differs from slice", d);
        ++cases;
      }
      for (int box = 0; box < 4; ++box) {
        Shape off(nd), shp(nd);
        for (int d = 0; d < nd; ++d) {
          off[d] = pt_randint(&rs, 0, full[d] - 1);
          shp[d] = pt_randint(&rs, 1, full[d] - off[d]);
        }
        std::vector<float> s(numel(shp));
        pfrt_init_param(s.data(), p.kind, p.a, p.b, seed, stream, nd,
                        full.data(), off.data(), shp.data());
        CHECK(pt_bits_equal(s.data(), slice(t, full, off, shp).data(),
                            int64_t(s.size())),
              "box shard differs from slice");
        ++cases;
      }

      if (p.kind >= PFRT_INIT_UNIFORM && t.size() >= 16) {
        // A different stream or seed gives different values.
        std::vector<float> o(t.size());
        pfrt_init_param(o.data(), p.kind, p.a, p.b, seed, stream + 1, nd,
                        full.data(), nullptr, nullptr);
        CHECK(!pt_bits_equal(o.data(), t.data(), int64_t(t.size())),
              "stream does not change values");
        pfrt_init_param(o.data(), p.kind, p.a, p.b, seed + 1, stream, nd,
                        full.data(), nullptr, nullptr);
        CHECK(!pt_bits_equal(o.data(), t.data(), int64_t(t.size())),
              "seed does not change values");
      }
    }
  }
  return cases;
}

/// A scalar (rank 0) is element 0.
void checkScalar(uint64_t seed) {
  float s = NAN, e = NAN;
  int64_t one = 1, zero = 0;
  pfrt_init_param(&s, PFRT_INIT_NORMAL, 0, 1, seed, 77, 0, nullptr, nullptr,
                  nullptr);
  pfrt_init_param(&e, PFRT_INIT_NORMAL, 0, 1, seed, 77, 1, &one, &zero, &one);
  CHECK(s == e && std::isfinite(s), "scalar init %g vs %g", double(s),
        double(e));
}

/// Synthetic data: standard normal per step, labels in range and spread.
void checkSynthetic(uint64_t seed) {
  Shape shp = {64, 13, 17};
  uint64_t stream = pfrt_stream_id("input");
  std::vector<float> x0(numel(shp)), x1(numel(shp)), ref(numel(shp));
  pfrt_synthetic_batch(x0.data(), seed, stream, 0, 3, shp.data(), nullptr,
                       nullptr);
  pfrt_synthetic_batch(x1.data(), seed, stream, 1, 3, shp.data(), nullptr,
                       nullptr);
  CHECK(!pt_bits_equal(x0.data(), x1.data(), int64_t(x0.size())),
        "steps give the same batch");
  pfrt_init_param(ref.data(), PFRT_INIT_NORMAL, 0.0, 1.0, seed,
                  pfrt_stream_for_step(stream, 1), 3, shp.data(), nullptr,
                  nullptr);
  CHECK(pt_bits_equal(x1.data(), ref.data(), int64_t(x1.size())),
        "synthetic_batch is not NORMAL(0,1) on the step stream");
  checkDistribution(x1, {PFRT_INIT_NORMAL, 0.0, 1.0});

  Shape ls = {5000};
  std::vector<int64_t> lab(5000);
  const int64_t classes = 10;
  pfrt_synthetic_labels(lab.data(), classes, seed, stream, 3, 1, ls.data(),
                        nullptr, nullptr);
  int64_t hist[10] = {0};
  for (int64_t v : lab) {
    CHECK(v >= 0 && v < classes, "label %lld out of range", (long long)v);
    ++hist[v];
  }
  for (int c = 0; c < 10; ++c)
    CHECK(hist[c] > 350 && hist[c] < 650, "class %d drawn %lld times of 5000",
          c, (long long)hist[c]);
  Shape off = {1234}, part = {777};
  std::vector<int64_t> shard(777);
  pfrt_synthetic_labels(shard.data(), classes, seed, stream, 3, 1, ls.data(),
                        off.data(), part.data());
  for (int i = 0; i < 777; ++i)
    CHECK(shard[i] == lab[1234 + i], "label shard differs at %d", i);
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  int rank = pfrt_rank(), size = pfrt_world_size();
  uint64_t seed = pt_seed("init");
  std::vector<int64_t> world(size);
  for (int i = 0; i < size; ++i)
    world[i] = i;
  checkKnownAnswers();
  checkCounterIsIndex(seed);
  int cases = checkParams(seed, rank, size, world);
  checkScalar(seed);
  checkSynthetic(seed);
  pfrt_barrier();
  return pt_finish(rank, "init ok: %d shard comparisons per rank\n", cases);
}
