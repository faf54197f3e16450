//===- State.cpp - persistent tensors: read back, save, load --------------===//
//
// The generated pf_init_params registers every parameter and optimizer state
// of the rank with its logical shape and the box this rank holds. From that
// registry the runtime can, without any compiler help:
//   - assemble a tensor's logical value (pfrt_state_gather), which is how a
//     host program reads trained parameters back;
//   - save a checkpoint in logical form, one .npy per tensor, written by
//     world rank 0 after gathering the distinct boxes one tensor at a time
//     (so rank 0 holds at most one logical tensor at once);
//   - load a checkpoint into any layout: every rank reads just its boxes.
// A tensor registered by pfrt_cuda_state_register lives on the GPU: its
// data is only ever touched through a host copy (pfrt_cuda_d2h / _h2d).
//
// All collective functions here run over the runtime's WORLD communicator,
// and every rank must call them in the same order with the same arguments.
//
//===----------------------------------------------------------------------===//

#include "pfrt/pfrt.h"
#include "pfrt/pfrt_cuda.h"

#include "../common/Internal.h"
#include "MpiInternal.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace pfrt;

namespace {

/// A tensor this rank keeps: one box of its logical shape, or several equal
/// boxes (the parts of a grouped split), each with its own storage.
struct StateEntry {
  int32_t dtype = PFRT_DTYPE_F32;
  std::vector<int64_t> logical, shape;
  struct Part {
    std::vector<int64_t> offset;
    void *data = nullptr;
  };
  std::vector<Part> parts;
  /// The parts' data are device addresses (pfrt_cuda_state_register).
  bool device = false;
  int64_t elems() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// By name; std::map keeps a deterministic order on every rank.
std::map<std::string, StateEntry> &registry() {
  static std::map<std::string, StateEntry> m;
  return m;
}

int64_t widthOf(int32_t dtype, const char *fn) {
  if (dtype == PFRT_DTYPE_F32)
    return 4;
  if (dtype == PFRT_DTYPE_I64)
    return 8;
  fatal("%s: unsupported dtype %d", fn, dtype);
}

const char *dtypeName(int32_t dtype) {
  return dtype == PFRT_DTYPE_F32 ? "f32" : "i64";
}

/// One rank's description of its boxes of a tensor, exchanged as int64s:
/// [has, dtype, ndim, parts, logical[kMaxRank], shape[kMaxRank],
///  offset[kMaxParts][kMaxRank]].
constexpr int64_t kMaxParts = 16;
constexpr int64_t kRecord = 4 + (2 + kMaxParts) * kMaxRank;

struct Box {
  bool has = false;
  int32_t dtype = 0;
  int64_t ndim = 0;
  std::vector<int64_t> logical, shape;
  std::vector<std::vector<int64_t>> offsets; // one per part
  int64_t elems() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

std::vector<Box> exchangeBoxes(const std::string &name, const char *fn) {
  std::vector<int64_t> mine(kRecord, 0);
  auto it = registry().find(name);
  if (it != registry().end()) {
    const StateEntry &e = it->second;
    mine[0] = 1;
    mine[1] = e.dtype;
    mine[2] = int64_t(e.logical.size());
    mine[3] = int64_t(e.parts.size());
    for (size_t i = 0; i < e.logical.size(); ++i) {
      mine[4 + i] = e.logical[i];
      mine[4 + kMaxRank + i] = e.shape[i];
      for (size_t k = 0; k < e.parts.size(); ++k)
        mine[4 + (2 + k) * kMaxRank + i] = e.parts[k].offset[i];
    }
  }
  int size = state().size;
  std::vector<int64_t> all(size_t(size) * kRecord);
  PFRT_MPI_AS(fn, MPI_Allgather,
              (mine.data(), int(kRecord), MPI_INT64_T, all.data(), int(kRecord),
               MPI_INT64_T, worldComm()));
  std::vector<Box> boxes(size);
  for (int r = 0; r < size; ++r) {
    const int64_t *rec = all.data() + size_t(r) * kRecord;
    Box &b = boxes[r];
    b.has = rec[0] != 0;
    if (!b.has)
      continue;
    b.dtype = int32_t(rec[1]);
    b.ndim = rec[2];
    b.logical.assign(rec + 4, rec + 4 + b.ndim);
    b.shape.assign(rec + 4 + kMaxRank, rec + 4 + kMaxRank + b.ndim);
    for (int64_t k = 0; k < rec[3]; ++k) {
      const int64_t *off = rec + 4 + (2 + k) * kMaxRank;
      b.offsets.emplace_back(off, off + b.ndim);
    }
  }
  return boxes;
}

/// Gathers the logical value of `name` on world rank `root` (out: logical
/// elements, only written there). Replicated boxes are sent once (by the
/// lowest rank holding them). Returns the description of the tensor.
Box gatherToRoot(const std::string &name, int root, std::vector<char> &out,
                 const char *fn) {
  std::vector<Box> boxes = exchangeBoxes(name, fn);
  int size = state().size, me = state().rank;
  int first = -1;
  for (int r = 0; r < size; ++r)
    if (boxes[r].has) {
      first = r;
      break;
    }
  if (first < 0)
    fatal("%s: no rank holds a tensor named '%s'", fn, name.c_str());
  const Box &ref = boxes[first];
  for (int r = first + 1; r < size; ++r)
    if (boxes[r].has &&
        (boxes[r].dtype != ref.dtype || boxes[r].logical != ref.logical))
      fatal("%s: ranks %d and %d disagree on the dtype or logical shape of "
            "'%s' (%s%s vs %s%s)",
            fn, first, r, name.c_str(), dtypeName(ref.dtype),
            shapeToString(ref.ndim, ref.logical.data()).c_str(),
            dtypeName(boxes[r].dtype),
            shapeToString(boxes[r].ndim, boxes[r].logical.data()).c_str());
  int64_t width = widthOf(ref.dtype, fn);
  // Distinct boxes: a rank sends only if no lower rank holds the same box.
  std::vector<bool> sends(size, false);
  int64_t covered = 0, logicalElems = 1;
  for (int64_t d : ref.logical)
    logicalElems *= d;
  for (int r = 0; r < size; ++r) {
    if (!boxes[r].has)
      continue;
    bool dup = false;
    for (int q = 0; q < r && !dup; ++q)
      dup = boxes[q].has && boxes[q].offsets == boxes[r].offsets &&
            boxes[q].shape == boxes[r].shape;
    if (dup)
      continue;
    sends[r] = true;
    int64_t held = boxes[r].elems() * int64_t(boxes[r].offsets.size());
    covered += held;
    if (held * width > INT_MAX)
      fatal("%s: rank %d's boxes of '%s' have %lld bytes, more than one MPI "
            "message carries",
            fn, r, name.c_str(), (long long)(held * width));
  }
  if (covered != logicalElems)
    fatal("%s: the ranks' distinct boxes of '%s' hold %lld of its %lld "
          "elements (a tensor must be laid out in disjoint or identical "
          "boxes that cover it)",
          fn, name.c_str(), (long long)covered, (long long)logicalElems);

  std::vector<int> counts(size, 0), displs(size, 0);
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    counts[r] =
        sends[r]
            ? int(boxes[r].elems() * int64_t(boxes[r].offsets.size()) * width)
            : 0;
    displs[r] = int(std::min<int64_t>(total, INT_MAX));
    total += counts[r];
  }
  if (total > INT_MAX)
    fatal("%s: '%s' has %lld bytes, more than one MPI gather carries", fn,
          name.c_str(), (long long)total);
  std::vector<char> packed(me == root ? size_t(total) : 0);
  const void *send = nullptr;
  std::vector<char> mine;
  if (sends[me]) {
    const StateEntry &e = registry().find(name)->second;
    if (e.parts.size() == 1 && !e.device) {
      send = e.parts[0].data;
    } else {
      size_t partBytes = size_t(e.elems() * width);
      mine.resize(partBytes * e.parts.size());
      for (size_t k = 0; k < e.parts.size() && partBytes > 0; ++k) {
        if (e.device)
          pfrt_cuda_d2h(mine.data() + k * partBytes, e.parts[k].data,
                        int64_t(partBytes));
        else
          std::memcpy(mine.data() + k * partBytes, e.parts[k].data, partBytes);
      }
      send = mine.data();
    }
  }
  PFRT_MPI_AS(fn, MPI_Gatherv,
              (send, counts[me], MPI_BYTE, packed.data(), counts.data(),
               displs.data(), MPI_BYTE, root, worldComm()));
  if (me != root)
    return ref;
  out.assign(size_t(logicalElems * width), 0);
  for (int r = 0; r < size; ++r) {
    if (!sends[r])
      continue;
    const Box &b = boxes[r];
    for (size_t k = 0; k < b.offsets.size(); ++k) {
      ShardSpec s = makeShard(fn, b.ndim, b.logical.data(), b.offsets[k].data(),
                              b.shape.data());
      const char *src = packed.data() + displs[r] + k * b.elems() * width;
      forEachRun(s, [&](int64_t start, int64_t local, int64_t len) {
        std::memcpy(out.data() + start * width, src + local * width,
                    size_t(len * width));
      });
    }
  }
  return ref;
}

/// Every name registered on any rank, in the same (sorted) order everywhere.
std::vector<std::string> allNames(const char *fn) {
  std::string mine;
  for (auto &kv : registry()) {
    mine += kv.first;
    mine += '\0';
  }
  int size = state().size;
  int len = int(mine.size());
  std::vector<int> lens(size), displs(size);
  PFRT_MPI_AS(fn, MPI_Allgather,
              (&len, 1, MPI_INT, lens.data(), 1, MPI_INT, worldComm()));
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[r] = int(total);
    total += lens[r];
  }
  if (total > INT_MAX)
    fatal("%s: the tensor names take more than 2 GiB", fn);
  std::string all(size_t(total), '\0');
  PFRT_MPI_AS(fn, MPI_Allgatherv,
              (mine.data(), len, MPI_CHAR, &all[0], lens.data(), displs.data(),
               MPI_CHAR, worldComm()));
  std::set<std::string> names;
  for (size_t i = 0; i < all.size();) {
    size_t end = all.find('\0', i);
    names.insert(all.substr(i, end - i));
    i = end + 1;
  }
  return {names.begin(), names.end()};
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// Position just after `"key"` and the colon that follows it (any JSON
/// whitespace around), or npos.
size_t afterKey(const std::string &text, const char *key) {
  std::string quoted = std::string("\"") + key + "\"";
  for (size_t at = text.find(quoted); at != std::string::npos;
       at = text.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < text.size() && strchr(" \t\r\n", text[i]))
      ++i;
    if (i < text.size() && text[i] == ':') {
      ++i;
      while (i < text.size() && strchr(" \t\r\n", text[i]))
        ++i;
      return i;
    }
  }
  return std::string::npos;
}

/// The "step" of a checkpoint's index.json (after checking its "format");
/// fatal if the file is missing or not a PipeFlow checkpoint index.
int64_t readIndexStep(const std::string &dir, const char *fn) {
  std::string path = dir + "/index.json";
  FILE *f = fopen(path.c_str(), "rb");
  if (!f)
    fatal("%s: cannot open checkpoint index '%s': %s (not a PipeFlow "
          "checkpoint directory?)",
          fn, path.c_str(), strerror(errno));
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
    text.append(buf, n);
  fclose(f);
  size_t format = afterKey(text, "format");
  if (format == std::string::npos ||
      text.compare(format, 21, "\"pipeflow-checkpoint\"") != 0)
    fatal("%s: '%s' is not a PipeFlow checkpoint index (no \"format\": "
          "\"pipeflow-checkpoint\")",
          fn, path.c_str());
  size_t at = afterKey(text, "step");
  long long step = -1;
  if (at == std::string::npos ||
      sscanf(text.c_str() + at, "%lld", &step) != 1 || step < 0)
    fatal("%s: '%s' has no valid \"step\"", fn, path.c_str());
  return step;
}

} // namespace

extern "C" {

int pfrt_state_register(const char *name, int32_t dtype, int64_t ndim,
                        const int64_t *logical_shape, const int64_t *offset,
                        const int64_t *box_shape, void *data) {
  const char *fn = "pfrt_state_register";
  if (!name || !*name || strchr(name, '/'))
    fatal("%s: name '%s' must be non-empty and contain no '/'", fn,
          name ? name : "(null)");
  widthOf(dtype, fn);
  ShardSpec s = makeShard(fn, ndim, logical_shape, offset, box_shape);
  if (!data && s.shardElems > 0)
    fatal("%s: '%s': data is NULL", fn, name);
  StateEntry e;
  e.dtype = dtype;
  e.logical.assign(logical_shape, logical_shape + ndim);
  StateEntry::Part part;
  if (offset)
    part.offset.assign(offset, offset + ndim);
  else
    part.offset.assign(size_t(ndim), 0);
  if (box_shape)
    e.shape.assign(box_shape, box_shape + ndim);
  else
    e.shape = e.logical;
  part.data = data;
  e.parts.push_back(std::move(part));
  registry()[name] = std::move(e);
  return 0;
}

int pfrt_state_add_part(const char *name, const int64_t *offset, void *data) {
  const char *fn = "pfrt_state_add_part";
  auto it = name ? registry().find(name) : registry().end();
  if (it == registry().end())
    fatal("%s: no tensor named '%s' is registered on this rank", fn,
          name ? name : "(null)");
  StateEntry &e = it->second;
  int64_t ndim = int64_t(e.logical.size());
  if (!offset)
    fatal("%s: '%s': offset is NULL", fn, name);
  if (int64_t(e.parts.size()) >= kMaxParts)
    fatal("%s: '%s' has more than %lld parts", fn, name, (long long)kMaxParts);
  ShardSpec s = makeShard(fn, ndim, e.logical.data(), offset, e.shape.data());
  if (!data && s.shardElems > 0)
    fatal("%s: '%s': data is NULL", fn, name);
  StateEntry::Part part;
  part.offset.assign(offset, offset + ndim);
  part.data = data;
  for (const StateEntry::Part &p : e.parts)
    if (p.offset == part.offset)
      fatal("%s: '%s' already has a part at this offset", fn, name);
  e.parts.push_back(std::move(part));
  return 0;
}

void pfrt_state_clear(void) { registry().clear(); }

} // extern "C"

void pfrt::markStateOnDevice(const char *name) {
  auto it = name ? registry().find(name) : registry().end();
  if (it == registry().end())
    fatal("pfrt_cuda_state_register: no tensor named '%s' is registered",
          name ? name : "(null)");
  it->second.device = true;
}

extern "C" {

int pfrt_state_info(const char *name, int32_t *dtype, int64_t *rank_ndim,
                    int64_t *logical_shape, int64_t *offset,
                    int64_t *box_shape) {
  auto it = name ? registry().find(name) : registry().end();
  if (it == registry().end())
    return -1;
  const StateEntry &e = it->second;
  if (dtype)
    *dtype = e.dtype;
  if (rank_ndim)
    *rank_ndim = int64_t(e.logical.size());
  for (size_t d = 0; d < e.logical.size(); ++d) {
    if (logical_shape)
      logical_shape[d] = e.logical[d];
    if (offset)
      offset[d] = e.parts[0].offset[d];
    if (box_shape)
      box_shape[d] = e.shape[d];
  }
  return 0;
}

int64_t pfrt_state_count(void) { return int64_t(registry().size()); }

const char *pfrt_state_name(int64_t k) {
  if (k < 0 || k >= int64_t(registry().size()))
    fatal("pfrt_state_name: index %lld of %lld", (long long)k,
          (long long)registry().size());
  auto it = registry().begin();
  std::advance(it, k);
  return it->first.c_str();
}

int pfrt_state_gather(const char *name, void *out, int64_t bytes) {
  const char *fn = "pfrt_state_gather";
  requireInit(fn);
  if (!name)
    fatal("%s: name is NULL", fn);
  std::vector<char> value;
  Box ref = gatherToRoot(name, 0, value, fn);
  int64_t logicalElems = 1;
  for (int64_t d : ref.logical)
    logicalElems *= d;
  int64_t need = logicalElems * widthOf(ref.dtype, fn);
  if (bytes != need || (need > 0 && !out))
    fatal("%s: '%s' has %lld bytes (%s%s), the buffer %lld", fn, name,
          (long long)need, dtypeName(ref.dtype),
          shapeToString(ref.ndim, ref.logical.data()).c_str(),
          (long long)bytes);
  if (state().rank == 0)
    std::memcpy(out, value.data(), size_t(need));
  if (need > INT_MAX)
    fatal("%s: '%s' has more bytes than one broadcast carries", fn, name);
  PFRT_MPI_AS(fn, MPI_Bcast, (out, int(need), MPI_BYTE, 0, worldComm()));
  return 0;
}

int pfrt_state_set(const char *name, const void *logical, int64_t bytes) {
  const char *fn = "pfrt_state_set";
  if (!name)
    fatal("%s: name is NULL", fn);
  auto it = registry().find(name);
  if (it == registry().end())
    fatal("%s: this rank holds no tensor named '%s'", fn, name);
  StateEntry &e = it->second;
  int64_t width = widthOf(e.dtype, fn);
  int64_t logicalElems = 1;
  for (int64_t d : e.logical)
    logicalElems *= d;
  if (bytes != logicalElems * width || (bytes > 0 && !logical))
    fatal("%s: '%s' has %lld bytes (%s%s), the buffer %lld", fn, name,
          (long long)(logicalElems * width), dtypeName(e.dtype),
          shapeToString(int64_t(e.logical.size()), e.logical.data()).c_str(),
          (long long)bytes);
  const char *src = static_cast<const char *>(logical);
  std::vector<char> staged;
  for (const StateEntry::Part &part : e.parts) {
    ShardSpec s = makeShard(fn, int64_t(e.logical.size()), e.logical.data(),
                            part.offset.data(), e.shape.data());
    char *dst = static_cast<char *>(part.data);
    if (e.device) { // the box on the host, then copied over whole
      staged.resize(size_t(s.shardElems * width));
      dst = staged.data();
    }
    forEachRun(s, [&](int64_t start, int64_t local, int64_t len) {
      std::memcpy(dst + local * width, src + start * width,
                  size_t(len * width));
    });
    if (e.device && s.shardElems > 0) {
      pfrt_cuda_h2d(part.data, staged.data(), s.shardElems * width);
      pfrt_cuda_synchronize(); // before `staged` is reused
    }
  }
  return 0;
}

int pfrt_state_save(const char *dir, int64_t step) {
  const char *fn = "pfrt_state_save";
  requireInit(fn);
  if (!dir || !*dir)
    fatal("%s: the checkpoint directory is empty", fn);
  if (step < 0)
    fatal("%s: step %lld is negative", fn, (long long)step);
  std::vector<std::string> names = allNames(fn);
  bool root = state().rank == 0;
  std::string index = "{\n  \"format\": \"pipeflow-checkpoint\",\n"
                      "  \"version\": 1,\n  \"step\": " +
                      std::to_string(step) + ",\n  \"tensors\": [";
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<char> value;
    Box ref = gatherToRoot(names[i], 0, value, fn);
    if (!root)
      continue;
    pfrt_checkpoint_save(dir, names[i].c_str(), ref.dtype, ref.ndim,
                         ref.logical.data(), value.data());
    index += std::string(i ? ",\n" : "\n") +
             "    {\"name\": " + jsonString(names[i]) + ", \"dtype\": \"" +
             dtypeName(ref.dtype) + "\", \"shape\": [";
    for (int64_t d = 0; d < ref.ndim; ++d)
      index += (d ? ", " : "") + std::to_string(ref.logical[d]);
    index += "]}";
  }
  index += "\n  ]\n}\n";
  // The index last: a checkpoint without index.json is incomplete.
  if (root)
    pfrt_checkpoint_write_index(dir, index.c_str());
  PFRT_MPI_AS(fn, MPI_Barrier, (worldComm()));
  return 0;
}

int pfrt_state_load(const char *dir, int64_t *step) {
  const char *fn = "pfrt_state_load";
  requireInit(fn);
  if (!dir || !*dir)
    fatal("%s: the checkpoint directory is empty", fn);
  int64_t saved = readIndexStep(dir, fn);
  std::vector<char> staged;
  for (auto &kv : registry()) {
    StateEntry &e = kv.second;
    int64_t bytes = e.elems() * widthOf(e.dtype, fn);
    for (StateEntry::Part &part : e.parts) {
      void *dst = part.data;
      if (e.device) { // read on the host, then copied over
        staged.resize(size_t(bytes > 0 ? bytes : 1));
        dst = staged.data();
      }
      pfrt_checkpoint_load(dir, kv.first.c_str(), e.dtype,
                           int64_t(e.logical.size()), e.logical.data(),
                           part.offset.data(), e.shape.data(), dst);
      if (e.device && bytes > 0) {
        pfrt_cuda_h2d(part.data, staged.data(), bytes);
        pfrt_cuda_synchronize(); // before `staged` is reused
      }
    }
  }
  if (step)
    *step = saved;
  PFRT_MPI_AS(fn, MPI_Barrier, (worldComm()));
  return 0;
}

} // extern "C"
