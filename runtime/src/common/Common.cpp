//===- Common.cpp - Clocks, directories and shard validation --------------===//

#include "Internal.h"
#include "pfrt/pfrt.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <sys/stat.h>

namespace pfrt {

double monotonicUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

void makeDirs(const std::string &dir, const char *what) {
  if (dir.empty())
    fatal("%s: empty directory name", what);
  // Create each prefix in turn; EEXIST on a directory is fine.
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/')
      continue;
    std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0777) == 0 || errno == EEXIST) {
      struct stat sb;
      if (stat(prefix.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode))
        continue;
      fatal("%s: cannot create directory '%s': a file is in the way", what,
            prefix.c_str());
    }
    fatal("%s: cannot create directory '%s': %s", what, prefix.c_str(),
          strerror(errno));
  }
}

std::string shapeToString(int64_t ndim, const int64_t *shape) {
  std::string s = "(";
  for (int64_t d = 0; d < ndim; ++d) {
    if (d)
      s += ", ";
    s += std::to_string(shape[d]);
  }
  if (ndim == 1)
    s += ",";
  return s + ")";
}

ShardSpec makeShard(const char *fn, int64_t ndim, const int64_t *logical,
                    const int64_t *offset, const int64_t *shape) {
  if (ndim < 0 || ndim > kMaxRank)
    fatal("%s: tensor rank %lld is outside [0, %lld]", fn, (long long)ndim,
          (long long)kMaxRank);
  if (ndim > 0 && !logical)
    fatal("%s: logical_shape is NULL for a rank-%lld tensor", fn,
          (long long)ndim);
  ShardSpec s;
  s.ndim = ndim;
  s.logical = logical;
  s.offset = offset;
  s.shape = shape;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t len = logical[d];
    int64_t o = offset ? offset[d] : 0;
    int64_t n = shape ? shape[d] : len;
    if (len < 0)
      fatal("%s: logical shape %s has a negative dimension", fn,
            shapeToString(ndim, logical).c_str());
    if (o < 0 || n < 0 || o > len - n)
      fatal("%s: shard at offset %s with shape %s does not fit in logical "
            "shape %s (dimension %lld)",
            fn, offset ? shapeToString(ndim, offset).c_str() : "(0, ...)",
            shape ? shapeToString(ndim, shape).c_str() : "(full)",
            shapeToString(ndim, logical).c_str(), (long long)d);
    if (__builtin_mul_overflow(s.logicalElems, len, &s.logicalElems) ||
        __builtin_mul_overflow(s.shardElems, n, &s.shardElems))
      fatal("%s: element count of shape %s overflows int64", fn,
            shapeToString(ndim, logical).c_str());
  }
  return s;
}

} // namespace pfrt

extern "C" double pfrt_now_us(void) {
  return pfrt::monotonicUs() - pfrt::state().epochUs;
}
