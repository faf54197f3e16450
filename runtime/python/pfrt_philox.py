"""NumPy twin of libpfrt's counter-based initialisers (see pfrt/pfrt.h).

Produces, bit for bit, what pfrt_init_param / pfrt_synthetic_batch /
pfrt_synthetic_labels write for a whole logical tensor or any shard of it,
so reference computations in tests can start from exactly the parameters
and data the compiled program sees.

Pure NumPy plus the standard library; runs under /usr/bin/python3.

Bit-exactness notes:
  * Philox runs on uint64 arrays holding 32-bit words; products of two
    32-bit words fit in 64 bits exactly.
  * log and cos come from Python's math module, which calls the same C
    library (libm) that libpfrt calls. NumPy's own np.log / np.cos may be
    SIMD implementations that differ in the last bit on some CPUs.
  * Every other step is a single IEEE float64 operation, evaluated in the
    same order as the C code, then rounded to float32.
"""

import math

import numpy as np

# Initialiser kinds (must match the enum in pfrt.h).
INIT_ZEROS = 0
INIT_ONES = 1
INIT_CONSTANT = 2
INIT_UNIFORM = 3
INIT_NORMAL = 4
INIT_KAIMING_UNIFORM = 5

_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_TWO_PI = 2.0 * math.pi  # == 6.283185307179586, the constant in pfrt.h

_log = np.frompyfunc(math.log, 1, 1)
_cos = np.frompyfunc(math.cos, 1, 1)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on arrays of counters (any shape) and a scalar key.

    Counter words may be NumPy arrays or ints (broadcast together); the key
    words are Python ints. Returns four uint32 arrays.
    """
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in (c0, c1, c2, c3))
    c0, c1, c2, c3 = np.broadcast_arrays(c0, c1, c2, c3)
    m0, m1, mask = np.uint64(_M0), np.uint64(_M1), np.uint64(_MASK32)
    shift = np.uint64(32)
    k0 &= _MASK32
    k1 &= _MASK32
    for r in range(10):
        if r:
            k0 = (k0 + _W0) & _MASK32
            k1 = (k1 + _W1) & _MASK32
        p0 = m0 * c0
        p1 = m1 * c2
        n0 = (p1 >> shift) ^ c1 ^ np.uint64(k0)
        n2 = (p0 >> shift) ^ c3 ^ np.uint64(k1)
        c1 = p1 & mask
        c3 = p0 & mask
        c0, c2 = n0, n2
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def stream_id(name):
    """64-bit FNV-1a of the UTF-8 bytes of name (pfrt_stream_id)."""
    h = _FNV_OFFSET
    for b in name.encode("utf-8"):
        h = ((h ^ b) * _FNV_PRIME) & _MASK64
    return h


def stream_for_step(stream, step):
    """FNV-1a continued over the 8 little-endian bytes of step."""
    h = stream & _MASK64
    for j in range(8):
        h = ((h ^ ((step >> (8 * j)) & 0xFF)) * _FNV_PRIME) & _MASK64
    return h


def _logical_indices(logical_shape, offset, shard_shape):
    """Row-major logical linear index of every element of the shard."""
    logical_shape = tuple(int(d) for d in logical_shape)
    nd = len(logical_shape)
    offset = (0,) * nd if offset is None else tuple(int(o) for o in offset)
    shard_shape = logical_shape if shard_shape is None else tuple(
        int(s) for s in shard_shape)
    if len(offset) != nd or len(shard_shape) != nd:
        raise ValueError("offset/shard_shape rank differs from logical shape")
    for o, s, n in zip(offset, shard_shape, logical_shape):
        if o < 0 or s < 0 or o + s > n:
            raise ValueError("shard %s at %s does not fit in %s" %
                             (shard_shape, offset, logical_shape))
    idx = np.zeros(shard_shape, dtype=np.uint64)
    stride = 1
    for d in reversed(range(nd)):
        coord = np.arange(offset[d], offset[d] + shard_shape[d],
                          dtype=np.uint64) * np.uint64(stride)
        view = [1] * nd
        view[d] = shard_shape[d]
        idx = idx + coord.reshape(view)
        stride *= logical_shape[d]
    return idx


def _blocks(seed, stream, idx):
    lo = idx & np.uint64(_MASK32)
    hi = idx >> np.uint64(32)
    s = stream & _MASK64
    return philox4x32_10(lo, hi, s & _MASK32, s >> 32,
                         seed & _MASK32, (seed >> 32) & _MASK32)


def _unit_open(x):
    # Exact: x + 0.5 needs 33 bits, and the scaling is by a power of two.
    return (x.astype(np.float64) + 0.5) * 2.0**-32


def _uniform(x0, low, high):
    span = high - low
    return (low + span * _unit_open(x0)).astype(np.float32)


def _normal(x0, x1, mean, std):
    u0 = _unit_open(x0)
    u1 = _unit_open(x1)
    # frompyfunc returns object arrays (or a bare float for 0-d input).
    r = np.sqrt(-2.0 * np.asarray(_log(u0), dtype=np.float64))
    z = r * np.asarray(_cos(_TWO_PI * u1), dtype=np.float64)
    return (mean + std * z).astype(np.float32)


def init_param(kind, a, b, seed, stream, logical_shape, offset=None,
               shard_shape=None):
    """pfrt_init_param: the shard (default: the whole tensor) as float32."""
    a = float(a)
    b = float(b)
    idx = _logical_indices(logical_shape, offset, shard_shape)
    if kind in (INIT_ZEROS, INIT_ONES, INIT_CONSTANT):
        v = {INIT_ZEROS: 0.0, INIT_ONES: 1.0, INIT_CONSTANT: a}[kind]
        return np.full(idx.shape, v, dtype=np.float32)
    x0, x1, _, _ = _blocks(seed, stream, idx)
    if kind == INIT_UNIFORM:
        return _uniform(x0, a, b)
    if kind == INIT_NORMAL:
        return _normal(x0, x1, a, b)
    if kind == INIT_KAIMING_UNIFORM:
        bound = 1.0 / math.sqrt(a)
        return _uniform(x0, -bound, bound)
    raise ValueError("unknown init kind %r" % (kind,))


def synthetic_batch(seed, stream, step, logical_shape, offset=None,
                    shard_shape=None):
    """pfrt_synthetic_batch: standard normal float32."""
    return init_param(INIT_NORMAL, 0.0, 1.0, seed,
                      stream_for_step(stream, step), logical_shape, offset,
                      shard_shape)


def synthetic_labels(num_classes, seed, stream, step, logical_shape,
                     offset=None, shard_shape=None):
    """pfrt_synthetic_labels: int64 labels in [0, num_classes)."""
    if not 1 <= num_classes < 2**31:
        raise ValueError("num_classes out of range")
    idx = _logical_indices(logical_shape, offset, shard_shape)
    x0, _, _, _ = _blocks(seed, stream_for_step(stream, step), idx)
    lab = (x0.astype(np.uint64) * np.uint64(num_classes)) >> np.uint64(32)
    return lab.astype(np.int64)


# Known answers from the Philox authors' test vectors (Random123 kat_vectors).
KAT = [
    ((0, 0, 0, 0), (0, 0),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2,
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
     (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _self_test():
    for ctr, key, want in KAT:
        got = tuple(int(w) for w in philox4x32_10(*ctr, *key))
        assert got == want, (ctr, key, [hex(g) for g in got])
    assert stream_id("") == _FNV_OFFSET
    assert stream_id("a") == 0xAF63DC4C8601EC8C
    assert stream_id("foobar") == 0x85944171F73967E8
    print("pfrt_philox self-test ok")


if __name__ == "__main__":
    _self_test()
