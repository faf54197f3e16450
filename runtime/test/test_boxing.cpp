//===- test_boxing.cpp - SBP layout changes against a logical reference ---===//
//
// Every rank builds the same LOGICAL tensors from the seed and forms its
// local tensor exactly as the source layout says (S(k): block `pos` of n
// along axis k; B: the whole tensor; P: an independent random partial per
// member, the logical tensor being their sum). It calls a boxing function
// and compares the output with the target layout's local tensor, cut from
// the logical tensor by a naive element-by-element loop. Data movement must
// match bit for bit (f32, i64 and i32); reduce_scatter must match a serial
// float64 sum. Groups: the world, the reversed world, strict subsets ({1, 3}
// of 4: the other ranks do not call) and single ranks. pfrt_box_slice and
// pfrt_copy_box (random boxes) are checked against the same naive loop. Run
// it also with PFRT_MAX_MSG_ELEMS small to cover the chunked paths.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

uint64_t gSeed;
int gRank, gSize;
std::string gCtx; // current function, dtype, shape, axes and group

using Shape = std::vector<int64_t>;
using Group = std::vector<int64_t>;

const int32_t kDtypes[] = {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32};

int64_t elemSize(int32_t dtype) { return dtype == PFRT_DTYPE_I64 ? 8 : 4; }

const char *dtypeName(int32_t dtype) {
  return dtype == PFRT_DTYPE_F32   ? "f32"
         : dtype == PFRT_DTYPE_I64 ? "i64"
                                   : "i32";
}

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// A row-major tensor of any dtype, kept as bytes.
struct Tensor {
  int32_t dtype = PFRT_DTYPE_F32;
  Shape shape;
  std::vector<unsigned char> bytes;

  Tensor(int32_t dtype, const Shape &shape)
      : dtype(dtype), shape(shape),
        // Filler, so that an element the library forgets to write shows.
        bytes(size_t(numel(shape) * elemSize(dtype)), 0xA5) {}
  int64_t ndim() const { return int64_t(shape.size()); }
  int64_t elems() const { return numel(shape); }
  void *data() { return bytes.data(); }
  const void *data() const { return bytes.data(); }
  float *f32() { return (float *)bytes.data(); }
};

/// Fills t with the values of tensor `id` of world rank `owner` (a pure
/// function of seed, id, owner and element index). i64 values exceed 2^53,
/// so any trip through float or double would change them.
void fill(Tensor &t, uint64_t id, uint64_t owner) {
  for (int64_t i = 0; i < t.elems(); ++i) {
    unsigned char *p = t.bytes.data() + i * elemSize(t.dtype);
    if (t.dtype == PFRT_DTYPE_F32) {
      float v = pt_value(gSeed, id, owner, uint64_t(i));
      memcpy(p, &v, sizeof(v));
    } else {
      uint64_t h = pt_mix(gSeed ^ pt_mix(id ^ pt_mix(owner ^ pt_mix(i))));
      if (t.dtype == PFRT_DTYPE_I64) {
        int64_t v = int64_t(h >> 1) - int64_t(h & 0xffff);
        memcpy(p, &v, sizeof(v));
      } else {
        int32_t v = int32_t(uint32_t(h >> 17));
        memcpy(p, &v, sizeof(v));
      }
    }
  }
}

Tensor logical(int32_t dtype, const Shape &shape, uint64_t id) {
  Tensor t(dtype, shape);
  fill(t, id, 0);
  return t;
}

/// The reference: copies the box of extent `sizes` at srcOff in src to
/// dstOff in dst one element at a time, through full multi-indices.
void naiveCopy(const Tensor &src, const Shape &srcOff, Tensor &dst,
               const Shape &dstOff, const Shape &sizes) {
  int64_t nd = int64_t(sizes.size()), es = elemSize(src.dtype);
  if (numel(sizes) == 0)
    return;
  Shape idx(nd, 0);
  for (;;) {
    int64_t si = 0, di = 0;
    for (int64_t d = 0; d < nd; ++d) {
      si = si * src.shape[d] + srcOff[d] + idx[d];
      di = di * dst.shape[d] + dstOff[d] + idx[d];
    }
    memcpy(dst.bytes.data() + di * es, src.bytes.data() + si * es, size_t(es));
    int64_t d = nd - 1;
    while (d >= 0 && ++idx[d] == sizes[d])
      idx[d--] = 0;
    if (d < 0)
      return;
  }
}

/// Block p of n along axis: the S(axis) local tensor of group position p.
Tensor shard(const Tensor &t, int64_t axis, int64_t p, int64_t n) {
  Shape sizes = t.shape, off(t.shape.size(), 0);
  sizes[axis] /= n;
  off[axis] = p * sizes[axis];
  Tensor r(t.dtype, sizes);
  naiveCopy(t, off, r, Shape(t.shape.size(), 0), sizes);
  return r;
}

/// Index of the first element where a and b differ bitwise, or -1.
int64_t firstDiff(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape || a.dtype != b.dtype)
    return -2;
  int64_t es = elemSize(a.dtype);
  for (int64_t i = 0; i < a.elems(); ++i)
    if (memcmp(a.bytes.data() + i * es, b.bytes.data() + i * es, size_t(es)) !=
        0)
      return i;
  return -1;
}

void expectEqual(const Tensor &got, const Tensor &want, const char *what) {
  int64_t i = firstDiff(got, want);
  CHECK(i == -1, "%s %s: differs from the reference at element %lld", what,
        gCtx.c_str(), (long long)i);
}

std::string str(const Shape &s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

void setContext(const char *fn, int32_t dtype, const Shape &shape,
                const std::string &axes, const Group &g) {
  gCtx = std::string("[") + fn + ", " + dtypeName(dtype) + ", logical shape " +
         str(shape) + ", " + axes + ", group " + str(g) + "]";
}

// S(axis) -> B.
void testAllGather(const Group &g, int pos, int32_t dtype, const Shape &shape,
                   int64_t axis, uint64_t id) {
  int64_t n = int64_t(g.size());
  setContext("box_all_gather", dtype, shape, "axis " + std::to_string(axis), g);
  Tensor whole = logical(dtype, shape, id);
  Tensor in = shard(whole, axis, pos, n), keep = in;
  Tensor out(dtype, shape);
  pfrt_box_all_gather(in.data(), out.data(), dtype, in.ndim(), in.shape.data(),
                      axis, g.data(), n);
  expectEqual(out, whole, "box_all_gather");
  expectEqual(in, keep, "box_all_gather input");
}

// P -> S(axis): member m's partial is an independent random tensor.
void testReduceScatter(const Group &g, int pos, const Shape &shape,
                       int64_t axis, uint64_t id) {
  int64_t n = int64_t(g.size());
  setContext("box_reduce_scatter", PFRT_DTYPE_F32, shape,
             "axis " + std::to_string(axis), g);
  Tensor in(PFRT_DTYPE_F32, shape);
  fill(in, id, uint64_t(gRank));
  Tensor keep = in;
  Shape outShape = shape;
  outShape[axis] /= n;
  Tensor out(PFRT_DTYPE_F32, outShape);
  pfrt_box_reduce_scatter(in.f32(), out.f32(), in.ndim(), in.shape.data(), axis,
                          g.data(), n);
  expectEqual(in, keep, "box_reduce_scatter input");
  std::vector<double> ref(out.elems(), 0.0), mag(out.elems(), 0.0);
  for (int64_t m : g) {
    Tensor partial(PFRT_DTYPE_F32, shape);
    fill(partial, id, uint64_t(m));
    Tensor blk = shard(partial, axis, pos, n);
    for (int64_t i = 0; i < blk.elems(); ++i) {
      ref[i] += blk.f32()[i];
      mag[i] += std::fabs(blk.f32()[i]);
    }
  }
  // 1e-5 relative to the sum of magnitudes, so cancellation cannot fail it.
  for (int64_t i = 0; i < out.elems(); ++i) {
    double got = out.f32()[i];
    CHECK(std::fabs(got - ref[i]) <= 1e-5 * mag[i],
          "box_reduce_scatter %s: element %lld got %.9g, serial sum %.9g",
          gCtx.c_str(), (long long)i, got, ref[i]);
  }
}

// S(concat) -> S(split).
void testAllToAll(const Group &g, int pos, int32_t dtype, const Shape &shape,
                  int64_t split, int64_t concat, uint64_t id) {
  int64_t n = int64_t(g.size());
  setContext("box_all_to_all", dtype, shape,
             "split_axis " + std::to_string(split) + " concat_axis " +
                 std::to_string(concat),
             g);
  Tensor whole = logical(dtype, shape, id);
  Tensor in = shard(whole, concat, pos, n), keep = in;
  Tensor want = shard(whole, split, pos, n);
  Tensor out(dtype, want.shape);
  pfrt_box_all_to_all(in.data(), out.data(), dtype, in.ndim(), in.shape.data(),
                      split, concat, g.data(), n);
  expectEqual(out, want, "box_all_to_all");
  expectEqual(in, keep, "box_all_to_all input");
}

// B -> S(axis) and S(axis) -> P, local, every block index: the slice is the
// block; the unslice of the block has it in place and zeros elsewhere (out
// starts as random bytes), so the blocks' unslices sum to the whole.
void testSliceAndUnslice(int32_t dtype, const Shape &shape, int64_t axis,
                         int64_t n, uint64_t id) {
  setContext("box_slice/unslice", dtype, shape,
             "axis " + std::to_string(axis) + " n " + std::to_string(n),
             Group());
  Tensor whole = logical(dtype, shape, id);
  for (int64_t index = 0; index < n; ++index) {
    Tensor want = shard(whole, axis, index, n);
    Tensor out(dtype, want.shape);
    pfrt_box_slice(whole.data(), out.data(), dtype, whole.ndim(),
                   whole.shape.data(), axis, index, n);
    expectEqual(out, want, "box_slice");
    Tensor padded = logical(dtype, shape, id + 7 + uint64_t(index));
    pfrt_box_unslice(want.data(), padded.data(), dtype, want.ndim(),
                     want.shape.data(), axis, index, n);
    Tensor zero = want;
    std::fill(zero.bytes.begin(), zero.bytes.end(), 0);
    for (int64_t q = 0; q < n; ++q)
      expectEqual(shard(padded, axis, q, n), q == index ? want : zero,
                  "box_unslice");
  }
}

/// One copy_box case: dst starts as its own random tensor, so the check also
/// covers the elements outside the box, which must stay as they were.
void copyBoxCase(int32_t dtype, const Shape &srcShape, const Shape &srcOff,
                 const Shape &dstShape, const Shape &dstOff, const Shape &sizes,
                 bool nullOffsets, uint64_t id) {
  gCtx = std::string("[copy_box, ") + dtypeName(dtype) + ", src " +
         str(srcShape) + " at " + str(srcOff) + ", dst " + str(dstShape) +
         " at " + str(dstOff) + ", sizes " + str(sizes) +
         (nullOffsets ? ", NULL offsets]" : "]");
  Tensor src = logical(dtype, srcShape, id);
  Tensor dst(dtype, dstShape);
  fill(dst, id, 1);
  Tensor want = dst;
  naiveCopy(src, srcOff, want, dstOff, sizes);
  int64_t nd = int64_t(sizes.size());
  pfrt_copy_box(src.data(), nd ? srcShape.data() : nullptr,
                nullOffsets ? nullptr : srcOff.data(), dst.data(),
                nd ? dstShape.data() : nullptr,
                nullOffsets ? nullptr : dstOff.data(),
                nd ? sizes.data() : nullptr, nd, dtype);
  expectEqual(dst, want, "copy_box");
}

void testCopyBox(uint64_t *rng) {
  // A scalar, and whole tensors (one run).
  copyBoxCase(PFRT_DTYPE_I64, {}, {}, {}, {}, {}, true, 1);
  copyBoxCase(PFRT_DTYPE_F32, {}, {}, {}, {}, {}, false, 2);
  copyBoxCase(PFRT_DTYPE_F32, {3, 4, 5}, {0, 0, 0}, {3, 4, 5}, {0, 0, 0},
              {3, 4, 5}, false, 3);
  copyBoxCase(PFRT_DTYPE_I32, {2, 7}, {1, 2}, {4, 9}, {3, 0}, {1, 5}, false, 4);
  for (uint64_t c = 0; c < 400; ++c) {
    int32_t dtype = kDtypes[pt_randint(rng, 0, 2)];
    int64_t nd = pt_randint(rng, 0, 4);
    bool zeroOff = pt_randint(rng, 0, 3) == 0;
    Shape ss(nd), ds(nd), so(nd), dof(nd), sz(nd);
    for (int64_t d = 0; d < nd; ++d) {
      ss[d] = pt_randint(rng, 0, 9) == 0 ? 0 : pt_randint(rng, 1, 6);
      ds[d] = pt_randint(rng, 0, 1) ? ss[d] : pt_randint(rng, 1, 6);
      int64_t most = ss[d] < ds[d] ? ss[d] : ds[d];
      sz[d] = pt_randint(rng, 0, 1) ? most : pt_randint(rng, 0, most);
      so[d] = zeroOff ? 0 : pt_randint(rng, 0, ss[d] - sz[d]);
      dof[d] = zeroOff ? 0 : pt_randint(rng, 0, ds[d] - sz[d]);
    }
    copyBoxCase(dtype, ss, so, ds, dof, sz, zeroOff && (c & 1), 100 + c);
  }
}

} // namespace

int main(int argc, char **argv) {
  gSeed = pt_start(&argc, &argv, "boxing", &gRank, &gSize);

  std::vector<Group> groups = pt::baseGroups(gSize);
  if (gSize >= 3) {
    groups.push_back({2, 0});
    groups.push_back({2});
  }

  // Logical shapes; a case runs where the layouts divide evenly.
  const std::vector<Shape> shapes = {{24},       {8, 12},      {4, 6, 8},
                                     {12, 5, 6}, {2, 3, 4, 6}, {0, 12}};

  int64_t calls = 0;
  // Every rank walks the same list in the same order and joins the groups
  // it belongs to; tensor ids come from the case indices, not a counter.
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const Group &g = groups[gi];
    int pos = -1;
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == gRank)
        pos = int(i);
    if (pos < 0)
      continue;
    int64_t n = int64_t(g.size());
    for (size_t si = 0; si < shapes.size(); ++si) {
      const Shape &shape = shapes[si];
      int64_t nd = int64_t(shape.size());
      for (int64_t a = 0; a < nd; ++a) {
        if (shape[a] % n)
          continue;
        uint64_t id = ((gi * 16 + si) * 16 + uint64_t(a)) * 1000;
        for (int32_t dt : kDtypes) {
          testAllGather(g, pos, dt, shape, a, id + 1 + uint64_t(dt));
          ++calls;
        }
        testReduceScatter(g, pos, shape, a, id + 10);
        ++calls;
        for (int64_t c = 0; c < nd; ++c) {
          if (c == a || shape[c] % n)
            continue;
          for (int32_t dt : kDtypes) {
            testAllToAll(g, pos, dt, shape, a, c,
                         id + 100 + uint64_t(c) * 10 + uint64_t(dt));
            ++calls;
          }
        }
      }
    }
    pfrt_group_barrier(g.data(), n);
  }
  CHECK(calls > 0, "rank %d ran no group case", gRank);

  for (size_t si = 0; si < shapes.size(); ++si)
    for (int64_t a = 0; a < int64_t(shapes[si].size()); ++a)
      for (int64_t n = 1; n <= 4; ++n)
        if (shapes[si][a] % n == 0)
          for (int32_t dt : kDtypes)
            testSliceAndUnslice(dt, shapes[si], a, n,
                                5000000 + si * 100 + uint64_t(a * 10 + dt));
  uint64_t rng = gSeed ^ 0x5eed;
  testCopyBox(&rng);

  pfrt_barrier();
  const char *chunk = getenv("PFRT_MAX_MSG_ELEMS");
  return pt_finish(gRank,
                   "boxing ok: %zu groups, %lld group calls on rank 0, max "
                   "message %s elements\n",
                   groups.size(), (long long)calls, chunk ? chunk : "INT_MAX");
}
