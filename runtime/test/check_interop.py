#!/usr/bin/python3
"""NumPy side of the pfrt-test-interop cross-check.

  check_interop.py gen DIR    random cases -> DIR/cases.txt + DIR/py_<id>.npy
  check_interop.py check DIR  DIR/c_<id>.npy (written by libpfrt) must equal
                              pfrt_philox.py's tensors exactly

A fresh seed per run; PFRT_TEST_SEED replays one.
"""

import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
import pfrt_philox as pp  # noqa: E402


def make_cases(rng):
    cases = []
    funcs = (["init:%d" % k for k in range(6)] * 2 + ["batch", "labels"] * 2
             + ["init:4", "batch", "init:3"])
    for i, func in enumerate(funcs):
        # Always scalars (zeros, normal) and a 1-D tensor; the rest random.
        nd = {0: 0, 4: 0, 1: 1}.get(i, rng.randint(0, 4))
        if i >= 16:  # ~100k elements, to make rare last-bit slips visible
            nd = 2
            shape = [rng.randint(250, 350), rng.randint(300, 400)]
        elif nd == 4:
            shape = [rng.randint(1, 9) for _ in range(nd)]
        else:
            shape = [rng.randint(1, 60 if nd <= 2 else 25) for _ in range(nd)]
        offset = [rng.randint(0, d - 1) for d in shape]
        sshape = [rng.randint(1, d - o) for d, o in zip(shape, offset)]
        a = b = 0.0
        dtype = "f4"
        step = rng.randint(0, 2**40)
        if func == "init:2":
            a = rng.uniform(-10, 10)  # rarely representable in float32
        elif func == "init:3":
            a = rng.uniform(-3, 1)
            b = a + rng.uniform(1e-3, 5)
        elif func == "init:4":
            a = rng.uniform(-1, 1)
            b = rng.uniform(1e-3, 3)
        elif func == "init:5":
            a = float(rng.randint(1, 5000))
        elif func == "labels":
            func = "labels:%d" % rng.choice([2, 3, 10, 1000, 2**31 - 1])
            dtype = rng.choice(["i8", "i4"])
        seed = rng.getrandbits(64)
        stream = (pp.stream_id("layer%d.weight" % rng.randint(0, 99))
                  if rng.random() < 0.5 else rng.getrandbits(64))
        cases.append(dict(id=str(i), func=func, a=a, b=b, seed=seed,
                          stream=stream, step=step, dtype=dtype,
                          shape=shape, offset=offset, sshape=sshape))
    return cases


def compute(c, offset=None, sshape=None):
    f = c["func"]
    if f == "batch":
        return pp.synthetic_batch(c["seed"], c["stream"], c["step"],
                                  c["shape"], offset, sshape)
    if f.startswith("init:"):
        return pp.init_param(int(f[5:]), c["a"], c["b"], c["seed"],
                             c["stream"], c["shape"], offset, sshape)
    lab = pp.synthetic_labels(int(f[7:]), c["seed"], c["stream"], c["step"],
                              c["shape"], offset, sshape)
    return lab if c["dtype"] == "i8" else lab.astype(np.int32)


def read_cases(d):
    cases = []
    with open(os.path.join(d, "cases.txt")) as f:
        for line in f:
            t = line.split()
            nd = int(t[8])
            dims = [int(x) for x in t[9:]]
            cases.append(dict(id=t[0], func=t[1], a=float(t[2]),
                              b=float(t[3]), seed=int(t[4]),
                              stream=int(t[5]), step=int(t[6]), dtype=t[7],
                              shape=dims[:nd], offset=dims[nd:2 * nd],
                              sshape=dims[2 * nd:]))
    return cases


def gen(d, rng):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cases.txt"), "w") as f:
        for c in make_cases(rng):
            full = compute(c)
            # The NumPy implementation is layout-independent by itself too.
            part = compute(c, c["offset"], c["sshape"])
            sl = tuple(slice(o, o + s) for o, s in zip(c["offset"],
                                                       c["sshape"]))
            assert np.array_equal(part, full[sl]), c
            with open(os.path.join(d, "py_%s.npy" % c["id"]), "wb") as g:
                np.lib.format.write_array(
                    g, full, version=rng.choice([(1, 0), (2, 0)]))
            f.write("%s %s %r %r %d %d %d %s %d %s\n" % (
                c["id"], c["func"], c["a"], c["b"], c["seed"], c["stream"],
                c["step"], c["dtype"], len(c["shape"]),
                " ".join(str(x) for x in
                         c["shape"] + c["offset"] + c["sshape"])))


def check(d):
    n = 0
    for c in read_cases(d):
        want = compute(c)
        got = np.load(os.path.join(d, "c_%s.npy" % c["id"]))
        assert got.dtype == want.dtype, (c["id"], got.dtype, want.dtype)
        assert got.shape == want.shape, (c["id"], got.shape, want.shape)
        # Compare bit patterns: catches -0.0 vs 0.0 and NaN payloads too.
        gv = got.reshape(-1).view(np.uint8)
        wv = want.reshape(-1).view(np.uint8)
        if not np.array_equal(gv, wv):
            bad = np.argwhere(got != want)[:5]
            raise AssertionError("case %s (%s): C and NumPy differ at %s: "
                                 "%s vs %s" % (c["id"], c["func"],
                                               bad.tolist(),
                                               got[tuple(bad.T)],
                                               want[tuple(bad.T)]))
        n += 1
    assert n >= 10, n
    print("interop NumPy side ok: %d cases bit-exact" % n)


def main():
    mode, d = sys.argv[1], sys.argv[2]
    seed = int(os.environ.get("PFRT_TEST_SEED") or
               int.from_bytes(os.urandom(8), "little"))
    if mode == "gen":
        print("check_interop: PFRT_TEST_SEED=%d" % seed)
        gen(d, random.Random(seed))
    else:
        check(d)


if __name__ == "__main__":
    main()
