//===- test_npy.cpp - .npy and checkpoint round trips ---------------------===//
//
// pfrt-test-npy DIR: random tensors of every dtype and rank 0..4 are written
// and read back whole and as random shards; checkpoints go through
// save/load and the index; no temporary file may be left behind. Each rank
// works in its own subdirectory so the test also runs under mpiexec.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using pt::numel;
using pt::Shape;

/// Bytes of the slice [off, off+shp) of a row-major tensor of shape full.
std::vector<char> slice(const std::vector<char> &t, int64_t elem,
                        const Shape &full, const Shape &off, const Shape &shp) {
  std::vector<char> out(numel(shp) * elem);
  size_t nd = full.size();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t k = 0; k < numel(shp); ++k) {
    int64_t lin = 0;
    for (size_t d = 0; d < nd; ++d)
      lin = lin * full[d] + off[d] + idx[d];
    memcpy(out.data() + k * elem, t.data() + lin * elem, elem);
    for (int64_t d = int64_t(nd) - 1; d >= 0; --d) {
      if (++idx[d] < shp[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  DIR *d = opendir(dir.c_str());
  CHECK(d, "cannot list %s", dir.c_str());
  while (dirent *e = readdir(d))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      names.push_back(e->d_name);
  closedir(d);
  return names;
}

} // namespace

int main(int argc, char **argv) {
  pfrt_init(&argc, &argv);
  CHECK(argc == 2, "usage: pfrt-test-npy DIR");
  uint64_t seed = pt_seed("npy");
  int rank = pfrt_rank();
  std::string dir = std::string(argv[1]) + "/rank" + std::to_string(rank);
  uint64_t rs = seed ^ (uint64_t(rank) << 32);

  const int32_t dtypes[] = {PFRT_DTYPE_F32, PFRT_DTYPE_I64, PFRT_DTYPE_I32};
  const int64_t sizes[] = {4, 8, 4};
  int shardsChecked = 0;
  for (int trial = 0; trial < 12; ++trial) {
    int di = trial % 3;
    int64_t elem = sizes[di];
    int nd = trial < 3 ? trial : int(pt_randint(&rs, 0, 4));
    Shape full(nd);
    for (int d = 0; d < nd; ++d)
      full[d] = pt_randint(&rs, 1, nd >= 3 ? 9 : 40);
    int64_t n = numel(full);
    std::vector<char> data(n * elem);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t h = pt_mix(rs + uint64_t(i) * 0x9e37);
      if (dtypes[di] == PFRT_DTYPE_F32) {
        float v = pt_value(seed, trial, rank, i) * 1000.0f;
        memcpy(&data[i * elem], &v, 4);
      } else {
        memcpy(&data[i * elem], &h, elem); // full-range integers
      }
    }
    std::string path = dir + "/t" + std::to_string(trial) + ".npy";
    std::string name = "t" + std::to_string(trial);
    pfrt_checkpoint_save(dir.c_str(), name.c_str(), dtypes[di], nd, full.data(),
                         data.data());

    std::vector<char> back(n * elem + 1, 0x5a);
    pfrt_npy_read_shard(path.c_str(), dtypes[di], nd, full.data(), nullptr,
                        nullptr, back.data());
    CHECK(memcmp(back.data(), data.data(), n * elem) == 0,
          "trial %d: whole-tensor round trip differs", trial);

    for (int s = 0; s < 6; ++s) {
      Shape off(nd), shp(nd);
      for (int d = 0; d < nd; ++d) {
        // Half the time take full trailing dims (one contiguous run).
        bool fullDim = s % 2 == 0 && d > 0;
        off[d] = fullDim ? 0 : pt_randint(&rs, 0, full[d] - 1);
        shp[d] = fullDim ? full[d] : pt_randint(&rs, 1, full[d] - off[d]);
      }
      std::vector<char> part(numel(shp) * elem + 1, 0x5a);
      pfrt_checkpoint_load(dir.c_str(), name.c_str(), dtypes[di], nd,
                           full.data(), off.data(), shp.data(), part.data());
      std::vector<char> want = slice(data, elem, full, off, shp);
      CHECK(memcmp(part.data(), want.data(), want.size()) == 0,
            "trial %d shard %d differs", trial, s);
      CHECK(part[want.size()] == 0x5a, "trial %d shard %d wrote past the end",
            trial, s);
      ++shardsChecked;
    }
  }

  const char *index = "{\"format\": \"pfrt-checkpoint\", \"step\": 7}";
  pfrt_checkpoint_write_index(dir.c_str(), index);
  std::ifstream in(dir + "/index.json");
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == index, "index.json content '%s'", ss.str().c_str());

  // Atomic writes leave nothing but the final files.
  std::vector<std::string> names = listDir(dir);
  CHECK(names.size() == 13, "%zu files in %s", names.size(), dir.c_str());
  for (const std::string &nm : names)
    CHECK(nm.find(".tmp") == std::string::npos, "leftover temporary %s",
          nm.c_str());

  pfrt_barrier();
  pfrt_finalize();
  if (rank == 0)
    printf("npy ok: %d shards per rank\n", shardsChecked);
  return 0;
}
