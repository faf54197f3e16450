//===- Npy.cpp - .npy reading (by shard), writing and checkpoints ---------===//
//
// The .npy format (NumPy NEP 1): magic "\x93NUMPY", major and minor version
// bytes, a little-endian header length (uint16 in 1.0, uint32 in 2.0), then
// an ASCII Python dict literal with exactly the keys 'descr',
// 'fortran_order' and 'shape', padded with spaces and ending in '\n'. Data
// follows, row-major when fortran_order is False.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"
#include "pfrt/pfrt.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace pfrt;

namespace {

struct DType {
  const char *descr;
  int64_t size;
};

DType dtypeInfo(int32_t dtype, const char *fn) {
  switch (dtype) {
  case PFRT_DTYPE_F32:
    return {"<f4", 4};
  case PFRT_DTYPE_I64:
    return {"<i8", 8};
  case PFRT_DTYPE_I32:
    return {"<i4", 4};
  case PFRT_DTYPE_BOOL:
    return {"|b1", 1};
  case PFRT_DTYPE_BF16: // NumPy has no bfloat16: its bits
    return {"<u2", 2};
  case PFRT_DTYPE_F16:
    return {"<f2", 2};
  default:
    fatal("%s: unknown dtype code %d", fn, (int)dtype);
  }
}

bool hostIsLittleEndian() {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

/// Reports problems with one file, always naming it.
struct FileError {
  const char *fn;
  const char *path;
  template <typename... Args>
  [[noreturn]] void operator()(const char *fmt, Args... args) const {
    char buf[1024];
    snprintf(buf, sizeof(buf), fmt, args...);
    fatal("%s: npy file '%s': %s", fn, path, buf);
  }
  [[noreturn]] void operator()(const char *msg) const {
    fatal("%s: npy file '%s': %s", fn, path, msg);
  }
};

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  int64_t dataOffset = 0;
};

/// Minimal parser for the dict literal NumPy writes.
class HeaderParser {
public:
  HeaderParser(const std::string &text, const FileError &err)
      : s(text), err(err) {}

  Header parse() {
    Header h;
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skip();
    expect('{');
    for (;;) {
      skip();
      if (peek() == '}')
        break;
      std::string key = quoted();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          err("unsupported dtype (structured or non-string descr)");
        h.descr = quoted();
        haveDescr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        haveFortran = true;
      } else if (key == "shape") {
        h.shape = tuple();
        haveShape = true;
      } else {
        err("header has unexpected key '%s'", key.c_str());
      }
      skip();
      if (peek() == ',') {
        ++i;
        continue;
      }
      skip();
      if (peek() != '}')
        err("malformed header near offset %zu", i);
    }
    if (!haveDescr || !haveFortran || !haveShape)
      err("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

private:
  const std::string &s;
  const FileError &err;
  size_t i = 0;

  char peek() const { return i < s.size() ? s[i] : '\0'; }
  void skip() {
    while (i < s.size() && isspace((unsigned char)s[i]))
      ++i;
  }
  void expect(char c) {
    if (peek() != c)
      err("malformed header: expected '%c' at offset %zu", c, i);
    ++i;
  }
  std::string quoted() {
    char q = peek();
    if (q != '\'' && q != '"')
      err("malformed header: expected a string at offset %zu", i);
    size_t end = s.find(q, i + 1);
    if (end == std::string::npos)
      err("malformed header: unterminated string");
    std::string r = s.substr(i + 1, end - i - 1);
    i = end + 1;
    return r;
  }
  bool boolean() {
    if (s.compare(i, 4, "True") == 0) {
      i += 4;
      return true;
    }
    if (s.compare(i, 5, "False") == 0) {
      i += 5;
      return false;
    }
    err("malformed header: fortran_order is not True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> r;
    expect('(');
    for (;;) {
      skip();
      if (peek() == ')') {
        ++i;
        return r;
      }
      if (!isdigit((unsigned char)peek()))
        err("malformed header: bad shape at offset %zu", i);
      int64_t v = 0;
      while (isdigit((unsigned char)peek())) {
        if (__builtin_mul_overflow(v, int64_t(10), &v) ||
            __builtin_add_overflow(v, int64_t(s[i] - '0'), &v))
          err("shape dimension overflows int64");
        ++i;
      }
      if (peek() == 'L') // Python 2 long suffix in old files.
        ++i;
      r.push_back(v);
      if (r.size() > size_t(kMaxRank))
        err("shape has more than %lld dimensions", (long long)kMaxRank);
      skip();
      if (peek() == ',')
        ++i;
      else if (peek() != ')')
        err("malformed header: bad shape at offset %zu", i);
    }
  }
};

/// Closes a FILE* opened for reading on every exit path.
struct File {
  FILE *f = nullptr;
  ~File() {
    if (f)
      fclose(f);
  }
};

Header readHeader(FILE *f, const FileError &err) {
  unsigned char pre[10];
  size_t got = fread(pre, 1, sizeof(pre), f);
  if (got < 8 || memcmp(pre, "\x93NUMPY", 6) != 0)
    err("bad magic (not a .npy file)");
  int major = pre[6], minor = pre[7];
  if ((major != 1 && major != 2) || minor != 0)
    err("unsupported format version %d.%d (expected 1.0 or 2.0)", major, minor);
  int64_t headerLen, prefix;
  if (major == 1) {
    if (got < 10)
      err("truncated before the header length");
    headerLen = pre[8] | (pre[9] << 8);
    prefix = 10;
  } else {
    unsigned char ext[2];
    if (got < 10 || fread(ext, 1, 2, f) != 2)
      err("truncated before the header length");
    headerLen = int64_t(pre[8]) | (int64_t(pre[9]) << 8) |
                (int64_t(ext[0]) << 16) | (int64_t(ext[1]) << 24);
    prefix = 12;
  }
  std::string text(size_t(headerLen), '\0');
  if (headerLen > 0 &&
      fread(&text[0], 1, size_t(headerLen), f) != size_t(headerLen))
    err("truncated inside the %lld-byte header", (long long)headerLen);
  Header h = HeaderParser(text, err).parse();
  h.dataOffset = prefix + headerLen;
  return h;
}

std::string joinPath(const char *dir, const char *name, const char *suffix) {
  std::string p = dir;
  if (!p.empty() && p.back() != '/')
    p += '/';
  return p + name + suffix;
}

void checkName(const char *name, const char *fn) {
  if (!name || !*name || strchr(name, '/'))
    fatal("%s: tensor name '%s' must be non-empty and contain no '/'", fn,
          name ? name : "(null)");
}

/// Writes bytes to path via a temporary file and rename().
void writeAtomically(const std::string &path, const std::string &head,
                     const void *data, int64_t nbytes, const char *fn) {
  FileError err{fn, path.c_str()};
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE *f = fopen(tmp.c_str(), "wb");
  if (!f)
    err("cannot create '%s': %s", tmp.c_str(), strerror(errno));
  bool ok = fwrite(head.data(), 1, head.size(), f) == head.size();
  // fwrite takes size_t; write in bounded pieces to stay portable.
  const char *p = static_cast<const char *>(data);
  for (int64_t done = 0; ok && done < nbytes;) {
    size_t piece = size_t(std::min<int64_t>(nbytes - done, int64_t(1) << 30));
    ok = fwrite(p + done, 1, piece, f) == piece;
    done += int64_t(piece);
  }
  int savedErrno = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    savedErrno = errno;
  }
  if (!ok) {
    unlink(tmp.c_str());
    err("write failed: %s", strerror(savedErrno));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    savedErrno = errno;
    unlink(tmp.c_str());
    err("cannot rename '%s' into place: %s", tmp.c_str(), strerror(savedErrno));
  }
}

} // namespace

std::vector<int64_t> pfrt::npyShape(const char *path, const char *fn) {
  FileError err{fn, path};
  File file;
  file.f = fopen(path, "rb");
  if (!file.f)
    err("cannot open: %s", strerror(errno));
  return readHeader(file.f, err).shape;
}

extern "C" {

int pfrt_npy_read_shard(const char *path, int32_t dtype, int64_t rank_ndim,
                        const int64_t *logical_shape,
                        const int64_t *shard_offset, const int64_t *shard_shape,
                        void *out) {
  const char *fn = "pfrt_npy_read_shard";
  if (!path)
    fatal("%s: path is NULL", fn);
  DType dt = dtypeInfo(dtype, fn);
  ShardSpec s =
      makeShard(fn, rank_ndim, logical_shape, shard_offset, shard_shape);
  if (!out && s.shardElems > 0)
    fatal("%s: output buffer is NULL", fn);
  if (!hostIsLittleEndian())
    fatal("%s: big-endian hosts are not supported", fn);
  FileError err{fn, path};

  File file;
  file.f = fopen(path, "rb");
  if (!file.f)
    err("cannot open: %s", strerror(errno));
  Header h = readHeader(file.f, err);
  if (h.descr != dt.descr)
    err("dtype '%s' does not match the expected '%s'", h.descr.c_str(),
        dt.descr);
  if (h.fortran)
    err("fortran_order is True; only C-order arrays are supported");
  std::string want = shapeToString(rank_ndim, logical_shape);
  std::string have = shapeToString(int64_t(h.shape.size()), h.shape.data());
  if (have != want)
    err("shape %s does not match the expected logical shape %s", have.c_str(),
        want.c_str());

  struct stat sb;
  if (fstat(fileno(file.f), &sb) != 0)
    err("cannot stat: %s", strerror(errno));
  int64_t dataBytes;
  if (__builtin_mul_overflow(s.logicalElems, dt.size, &dataBytes))
    err("data size overflows");
  int64_t expected = h.dataOffset + dataBytes;
  if (int64_t(sb.st_size) != expected)
    err("file size is %lld bytes, expected %lld (%lld header + %lld "
        "elements x %lld bytes)%s",
        (long long)sb.st_size, (long long)expected, (long long)h.dataOffset,
        (long long)s.logicalElems, (long long)dt.size,
        int64_t(sb.st_size) < expected ? ": truncated" : ": trailing bytes");

  char *dst = static_cast<char *>(out);
  forEachRun(s, [&](int64_t start, int64_t local, int64_t len) {
    if (fseeko(file.f, off_t(h.dataOffset + start * dt.size), SEEK_SET) != 0)
      err("seek failed: %s", strerror(errno));
    size_t n = size_t(len * dt.size);
    if (fread(dst + local * dt.size, 1, n, file.f) != n)
      err("read failed at element %lld: %s", (long long)start,
          ferror(file.f) ? strerror(errno) : "unexpected end of file");
  });
  return 0;
}

int pfrt_npy_write(const char *path, int32_t dtype, int64_t rank_ndim,
                   const int64_t *shape, const void *data) {
  const char *fn = "pfrt_npy_write";
  if (!path || !*path)
    fatal("%s: path is empty", fn);
  DType dt = dtypeInfo(dtype, fn);
  ShardSpec s = makeShard(fn, rank_ndim, shape, nullptr, nullptr);
  if (!data && s.logicalElems > 0)
    fatal("%s: data is NULL for '%s'", fn, path);
  if (!hostIsLittleEndian())
    fatal("%s: big-endian hosts are not supported", fn);
  int64_t nbytes;
  if (__builtin_mul_overflow(s.logicalElems, dt.size, &nbytes))
    fatal("%s: data size of '%s' overflows", fn, path);

  std::string dict =
      std::string("{'descr': '") + dt.descr +
      "', 'fortran_order': False, 'shape': " + shapeToString(rank_ndim, shape) +
      ", }";
  // Pad with spaces so the data starts on a 64-byte boundary, like NumPy.
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  size_t hlen = dict.size();
  std::string head("\x93NUMPY", 6);
  head += char(v2 ? 2 : 1);
  head += char(0);
  head += char(hlen & 0xff);
  head += char((hlen >> 8) & 0xff);
  if (v2) {
    head += char((hlen >> 16) & 0xff);
    head += char((hlen >> 24) & 0xff);
  }
  head += dict;
  writeAtomically(path, head, data, nbytes, fn);
  return 0;
}

int pfrt_checkpoint_save(const char *dir, const char *name, int32_t dtype,
                         int64_t rank_ndim, const int64_t *shape,
                         const void *data) {
  const char *fn = "pfrt_checkpoint_save";
  if (!dir)
    fatal("%s: dir is NULL", fn);
  checkName(name, fn);
  makeDirs(dir, fn);
  return pfrt_npy_write(joinPath(dir, name, ".npy").c_str(), dtype, rank_ndim,
                        shape, data);
}

int pfrt_checkpoint_load(const char *dir, const char *name, int32_t dtype,
                         int64_t rank_ndim, const int64_t *logical_shape,
                         const int64_t *shard_offset,
                         const int64_t *shard_shape, void *out) {
  const char *fn = "pfrt_checkpoint_load";
  if (!dir)
    fatal("%s: dir is NULL", fn);
  checkName(name, fn);
  return pfrt_npy_read_shard(joinPath(dir, name, ".npy").c_str(), dtype,
                             rank_ndim, logical_shape, shard_offset,
                             shard_shape, out);
}

int pfrt_checkpoint_write_index(const char *dir, const char *json_text) {
  const char *fn = "pfrt_checkpoint_write_index";
  if (!dir || !json_text)
    fatal("%s: NULL argument", fn);
  makeDirs(dir, fn);
  writeAtomically(joinPath(dir, "index", ".json"), std::string(), json_text,
                  int64_t(strlen(json_text)), fn);
  return 0;
}

} // extern "C"
