//===- test_state.cpp - persistent tensors: gather, save, load ------------===//
//
// Every rank registers tensors laid out in different ways over the world:
// rows split, columns split (i64), replicated, held by rank 0 only, and a
// 2-D block split when the world has 4 ranks. Values are a pure function of
// the logical index, so each rank knows the whole tensor. Checks:
// pfrt_state_gather gives every rank the logical value; pfrt_state_save
// writes it (index.json lists every tensor, with the step); after the
// buffers are wiped and re-registered under OTHER layouts (the split axis
// turned, replicas split, rank 0's tensor replicated), pfrt_state_load
// fills every rank's box with the right logical elements. argv: DIR [gap]
// ("gap": a tensor whose boxes leave elements uncovered, which must be a
// fatal error naming it). A grouped split (three parts per rank, one per
// block) gathers, saves, loads and sets like the others.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <string>
#include <vector>

namespace {

uint64_t gSeed;
int gRank, gSize;

struct Layout {
  std::vector<int64_t> logical, offset, shape;
};

/// A tensor registered by this rank: its name, dtype, layout and storage.
struct Held {
  std::string name;
  int32_t dtype;
  Layout layout;
  std::vector<float> f32;
  std::vector<int64_t> i64;
  void *data() {
    return dtype == PFRT_DTYPE_F32 ? (void *)f32.data() : (void *)i64.data();
  }
};

int64_t numel(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

float fval(const std::string &name, int64_t i) {
  return pt_value(gSeed, std::hash<std::string>()(name), 7, uint64_t(i));
}
int64_t ival(const std::string &name, int64_t i) {
  return int64_t(pt_mix(gSeed ^ std::hash<std::string>()(name) ^ uint64_t(i)) %
                 1000003);
}

/// Logical row-major index of the k-th element of a box.
int64_t logicalIndex(const Layout &l, int64_t k) {
  int64_t idx = 0;
  for (size_t d = 0; d < l.logical.size(); ++d) {
    int64_t inner = 1;
    for (size_t e = d + 1; e < l.shape.size(); ++e)
      inner *= l.shape[e];
    int64_t c = (k / inner) % l.shape[d];
    idx = idx * l.logical[d] + l.offset[d] + c;
  }
  return idx;
}

Held make(const std::string &name, int32_t dtype, Layout l, bool fill) {
  Held h{name, dtype, std::move(l), {}, {}};
  int64_t n = numel(h.layout.shape);
  if (dtype == PFRT_DTYPE_F32)
    h.f32.assign(size_t(n), -99.0f);
  else
    h.i64.assign(size_t(n), -99);
  if (fill)
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = logicalIndex(h.layout, k);
      if (dtype == PFRT_DTYPE_F32)
        h.f32[k] = fval(name, i);
      else
        h.i64[k] = ival(name, i);
    }
  pfrt_state_register(name.c_str(), dtype, int64_t(h.layout.logical.size()),
                      h.layout.logical.data(), h.layout.offset.data(),
                      h.layout.shape.data(), h.data());
  return h;
}

void checkBox(Held &h, const char *when) {
  for (int64_t k = 0; k < numel(h.layout.shape); ++k) {
    int64_t i = logicalIndex(h.layout, k);
    if (h.dtype == PFRT_DTYPE_F32)
      CHECK(h.f32[k] == fval(h.name, i), "%s: %s element %lld (logical %lld)",
            when, h.name.c_str(), (long long)k, (long long)i);
    else
      CHECK(h.i64[k] == ival(h.name, i), "%s: %s element %lld", when,
            h.name.c_str(), (long long)k);
  }
}

Layout rows(int64_t r, int64_t c) { // rows split over the world
  return {{r * gSize, c}, {r * gRank, 0}, {r, c}};
}
Layout cols(int64_t r, int64_t c) { // columns split over the world
  return {{r, c * gSize}, {0, c * gRank}, {r, c}};
}
Layout whole(std::vector<int64_t> s) {
  return {s, std::vector<int64_t>(s.size(), 0), s};
}

/// A grouped split S(0, 3): `name`'s [3 * 2n, 4] rows are 3 blocks, each
/// split over the n ranks of the world; this rank's part of block k has its
/// own storage (the first registered, the others pfrt_state_add_part).
std::vector<Held> grouped(const std::string &name, bool fill) {
  int64_t block = 2 * gSize;
  std::vector<Held> parts;
  for (int64_t k = 0; k < 3; ++k) {
    Layout l{{3 * block, 4}, {k * block + 2 * gRank, 0}, {2, 4}};
    if (k == 0) {
      parts.push_back(make(name, PFRT_DTYPE_F32, l, fill));
      continue;
    }
    Held h{name, PFRT_DTYPE_F32, l, std::vector<float>(8, -99.0f), {}};
    for (int64_t e = 0; fill && e < 8; ++e)
      h.f32[e] = fval(name, logicalIndex(l, e));
    pfrt_state_add_part(name.c_str(), l.offset.data(), h.data());
    parts.push_back(std::move(h));
  }
  return parts;
}

} // namespace

int main(int argc, char **argv) {
  gSeed = pt_start(&argc, &argv, "state", &gRank, &gSize);
  CHECK(argc >= 2, "usage: pfrt-test-state DIR [gap]");
  std::string dir = std::string(argv[1]) + "/ckpt";

  if (argc > 2) { // every rank claims the first row only
    Layout l{{4, 3}, {0, 0}, {1, 3}};
    Held h = make("gappy", PFRT_DTYPE_F32, l, true);
    std::vector<float> out(12);
    pfrt_state_gather("gappy", out.data(), 48);
    CHECK(false, "gathering an uncovered tensor must be fatal");
  }

  std::vector<Held> held;
  held.push_back(make("w.rows", PFRT_DTYPE_F32, rows(3, 5), true));
  held.push_back(make("w.cols", PFRT_DTYPE_I64, cols(2, 3), true));
  held.push_back(make("bias", PFRT_DTYPE_F32, whole({7}), true));
  if (gRank == 0)
    held.push_back(make("only0.state", PFRT_DTYPE_F32, whole({2, 2, 3}), true));
  if (gSize == 4) { // 2x2 blocks of an [4, 6] tensor
    int64_t br = gRank / 2, bc = gRank % 2;
    held.push_back(make("grid", PFRT_DTYPE_F32,
                        Layout{{4, 6}, {2 * br, 3 * bc}, {2, 3}}, true));
  }
  CHECK(pfrt_state_count() == int64_t(held.size()), "count %lld",
        (long long)pfrt_state_count());
  std::vector<Held> qkv = grouped("qkv", true);
  CHECK(pfrt_state_count() == int64_t(held.size()) + 1, "parts are one tensor");
  {
    int32_t dt = -1;
    int64_t nd = -1, lg[32], off[32], bs[32];
    CHECK(pfrt_state_info("w.cols", &dt, &nd, lg, off, bs) == 0 &&
              dt == PFRT_DTYPE_I64 && nd == 2 && lg[0] == 2 &&
              lg[1] == 3 * gSize && off[1] == 3 * gRank && bs[1] == 3,
          "pfrt_state_info(w.cols)");
    CHECK(pfrt_state_info("nothing", &dt, &nd, lg, off, bs) == -1,
          "info of an unknown name");
  }

  // Gather: every rank gets every tensor's logical value.
  struct Want {
    std::string name;
    int32_t dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Want> all = {{"bias", PFRT_DTYPE_F32, {7}},
                           {"only0.state", PFRT_DTYPE_F32, {2, 2, 3}},
                           {"w.cols", PFRT_DTYPE_I64, {2, 3 * gSize}},
                           {"w.rows", PFRT_DTYPE_F32, {3 * gSize, 5}},
                           {"qkv", PFRT_DTYPE_F32, {6 * gSize, 4}}};
  if (gSize == 4)
    all.push_back({"grid", PFRT_DTYPE_F32, {4, 6}});
  for (Want &w : all) {
    Held full = Held{w.name, w.dtype, whole(w.shape), {}, {}};
    int64_t n = numel(w.shape);
    if (w.dtype == PFRT_DTYPE_F32)
      full.f32.assign(size_t(n), -1.0f);
    else
      full.i64.assign(size_t(n), -1);
    pfrt_state_gather(w.name.c_str(), full.data(),
                      n * (w.dtype == PFRT_DTYPE_F32 ? 4 : 8));
    checkBox(full, "gather");
  }

  pfrt_state_save(dir.c_str(), 42);
  if (gRank == 0) {
    std::string text = pt::readFile(dir + "/index.json");
    const char *buf = text.c_str();
    CHECK(text.find("\"step\": 42") != std::string::npos, "step: %s", buf);
    for (Want &w : all)
      CHECK(text.find("\"name\": \"" + w.name + "\"") != std::string::npos,
            "%s missing: %s", w.name.c_str(), buf);
    CHECK(text.find("\"dtype\": \"i64\", \"shape\": [2, " +
                    std::to_string(3 * gSize) + "]") != std::string::npos,
          "w.cols entry: %s", buf);
  }

  // Another tool may rewrite index.json compactly: it still loads.
  if (gRank == 0) {
    std::string compact;
    for (char c : pt::readFile(dir + "/index.json"))
      if (c != ' ' && c != '\n')
        compact += c;
    FILE *f = fopen((dir + "/index.json").c_str(), "wb");
    fwrite(compact.data(), 1, compact.size(), f);
    fclose(f);
  }
  {
    std::vector<int64_t> world(gSize);
    for (int r = 0; r < gSize; ++r)
      world[r] = r;
    pfrt_group_barrier(world.data(), gSize);
  }

  // Reload under other layouts into wiped buffers.
  pfrt_state_clear();
  CHECK(pfrt_state_count() == 0, "clear");
  held.clear();
  Layout r2 =
      gSize > 1 ? Layout{{3 * gSize, 5}, {0, 0}, {3 * gSize, 5}} : rows(3, 5);
  held.push_back(make("w.rows", PFRT_DTYPE_F32, r2, false)); // replicated
  held.push_back(make("w.cols", PFRT_DTYPE_I64,
                      Layout{{2, 3 * gSize}, {0, 0}, {2, 3 * gSize}}, false));
  held.push_back(make("bias", PFRT_DTYPE_F32,
                      Layout{{7}, {gRank % 2 ? 3 : 0}, {gRank % 2 ? 4 : 3}},
                      false));
  held.push_back(make("only0.state", PFRT_DTYPE_F32, whole({2, 2, 3}),
                      false)); // now everywhere
  qkv = grouped("qkv", false);
  int64_t step = -1;
  pfrt_state_load(dir.c_str(), &step);
  CHECK(step == 42, "step %lld", (long long)step);
  for (Held &h : held)
    checkBox(h, "load");
  for (Held &h : qkv)
    checkBox(h, "load of a grouped split");

  // pfrt_state_set: every rank copies its box out of the logical value.
  {
    Layout l = rows(3, 5);
    Held h = make("fresh", PFRT_DTYPE_F32, l, false);
    std::vector<float> full(size_t(3 * gSize * 5));
    for (size_t i = 0; i < full.size(); ++i)
      full[i] = fval("fresh", int64_t(i));
    pfrt_state_set("fresh", full.data(), int64_t(full.size() * 4));
    checkBox(h, "set");
    std::vector<Held> parts = grouped("fresh.grouped", false);
    std::vector<float> logical(size_t(6 * gSize * 4));
    for (size_t i = 0; i < logical.size(); ++i)
      logical[i] = fval("fresh.grouped", int64_t(i));
    pfrt_state_set("fresh.grouped", logical.data(),
                   int64_t(logical.size() * 4));
    for (Held &p : parts)
      checkBox(p, "set of a grouped split");
  }
  if (gRank == 0)
    printf("state: %d ranks OK\n", gSize);
  pfrt_finalize();
  return 0;
}
