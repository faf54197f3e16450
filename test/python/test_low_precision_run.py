"""bf16/f16 storage with float32 arithmetic, run (issue 36, part A).

Hand-written pf IR compiled with pf-opt -pf-compile-cpu-pipeline and
pf-translate, loaded with the front end's runtime binding, fed f32, bf16
(raw bits as uint16) and f16 (numpy float16) inputs; its bf16/f16/f32
outputs are checked against NumPy: the casts bit for bit against a rounding
computed another way (float64, scaled to the quantum, numpy.round: ties to
even), and a bf16 layer (matmul, bias_add, relu, softmax, each stored in
bf16) against a float32 reference rounding to bf16 after every op.
"""

import json
import os
import subprocess

import numpy as np
import pytest

from pipeflow import _runtime, compiler

IR = """
#P = #pf.placement<"cpu", [0]>
#B = #pf.sbp<[B]>
!X = !pf.global<16x32xf32, #P, #B>
!W = !pf.global<32x24xf32, #P, #B>
!XB = !pf.global<16x32xbf16, #P, #B>
!WB = !pf.global<32x24xbf16, #P, #B>
!YB = !pf.global<16x24xbf16, #P, #B>
!BB = !pf.global<24xbf16, #P, #B>
!XH = !pf.global<16x32xf16, #P, #B>
func.func @step(%x: !X, %w: !W, %b: !BB, %hx: !XH) -> (!YB, !XB, !XH, !X, !pf.global<24xf32, #P, #B>) {
  %xb = pf.cast %x : !X -> !XB
  %wb = pf.cast %w : !W -> !WB
  %h = pf.matmul %xb, %wb : (!XB, !WB) -> !YB
  %hb = pf.bias_add %h, %b : (!YB, !BB) -> !YB
  %r = pf.relu %hb : (!YB) -> !YB
  %s = pf.softmax %r {axis = 1 : i64} : (!YB) -> !YB
  %xh = pf.cast %x : !X -> !XH
  %hf = pf.cast %hx : !XH -> !X
  %bf = pf.cast %b : !BB -> !pf.global<24xf32, #P, #B>
  return %s, %xb, %xh, %hf, %bf : !YB, !XB, !XH, !X, !pf.global<24xf32, #P, #B>
}
"""


def round_ref(x, mant_bits, min_exp, max_finite):
    """x (float32) rounded to a float of `mant_bits` stored mantissa bits,
    smallest normal 2**min_exp, to nearest even, in float64 (inf past the
    largest finite value)."""
    x = np.asarray(x, np.float64)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.abs(x)))
    e = np.where(np.isfinite(e), np.maximum(e, min_exp), min_exp)
    q = np.exp2(e - mant_bits)
    y = np.round(x / q) * q  # numpy rounds half to even
    return np.where(np.abs(y) > max_finite, np.copysign(np.inf, x), y)


def bf16_bits_ref(x):
    y = round_ref(x, 7, -126, (2 - 2.0**-7) * 2.0**127).astype(np.float32)
    bits = y.view(np.uint32)
    assert not np.any(bits & 0xFFFF)
    return (bits >> 16).astype(np.uint16)


def f16_ref(x):
    return round_ref(x, 10, -14, 65504.0).astype(np.float16)


def bf16_value(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


@pytest.fixture(scope="module")
def program(pf_opt, tmp_path_factory):
    work = tmp_path_factory.mktemp("low-precision")
    src, lowered, art = work / "step.mlir", work / "lowered.mlir", work / "art"
    src.write_text(IR)
    subprocess.run([pf_opt, str(src), "-pf-compile-cpu-pipeline=training=false", "-o", str(lowered)],
                   check=True, capture_output=True, text=True)
    subprocess.run([compiler.find_pf_translate(pf_opt), "--pf-emit-rank-artifacts", str(lowered),
                    "--pf-artifact-dir=" + str(art)], check=True, capture_output=True, text=True)
    manifest = json.loads((art / "manifest.json").read_text())
    rank = manifest["ranks"][0]
    return _runtime.Program(os.path.join(art, rank["shared_object"]), 0, 1, seed=0), rank


def run(program, x, w, b_bits, hx):
    prog, rank = program
    prog.step(0, 0.0, [(0, x), (1, w), (2, b_bits), (3, hx)])
    outs = prog.outputs()
    got = []
    for entry in sorted(rank["outputs"], key=lambda o: o["index"]):
        dtype = _runtime.DTYPES[entry["dtype"]]
        got.append(np.frombuffer(outs[entry["index"]].tobytes(), dtype).reshape(entry["local_shape"]))
    return got


def test_manifest_names_the_dtypes(program):
    _, rank = program
    assert [i["dtype"] for i in rank["inputs"]] == ["f32", "f32", "bf16", "f16"]
    assert [o["dtype"] for o in rank["outputs"]] == ["bf16", "bf16", "f16", "f32", "f32"]


def test_casts_and_a_bf16_layer_equal_numpy(program):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    # Ties and their neighbours, f16's overflow and subnormals, in the casts.
    x[0, :8] = [1 + 2.0**-8, 1 + 3 * 2.0**-8, np.nextafter(np.float32(1 + 2.0**-8), np.float32(2)),
                65520.0, 70000.0, 2.0**-25, 3 * 2.0**-25, -(1 + 2.0**-11)]
    w = (rng.standard_normal((32, 24)) * 0.3).astype(np.float32)
    b_bits = bf16_bits_ref(rng.standard_normal(24).astype(np.float32))
    hx = (rng.standard_normal((16, 32)) * 100).astype(np.float16)
    hx.flat[:4] = np.array([np.inf, -0.0, 6e-8, 65504], np.float16)
    s, xb, xh, hf, bf = run(program, x, w, b_bits, hx)

    np.testing.assert_array_equal(xb, bf16_bits_ref(x))
    assert xb[0, 0] == 0x3F80 and xb[0, 1] == 0x3F82 and xb[0, 2] == 0x3F81
    np.testing.assert_array_equal(xh.view(np.uint16), f16_ref(x).view(np.uint16))
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(xh.view(np.uint16), x.astype(np.float16).view(np.uint16))
    assert np.isinf(xh[0, 3]) and np.isinf(xh[0, 4]) and xh[0, 5] == 0 and xh[0, 6] == 2.0**-23
    np.testing.assert_array_equal(hf, hx.astype(np.float32))
    np.testing.assert_array_equal(bf, bf16_value(b_bits))

    # The layer: float32 arithmetic, every op's result stored in bf16.
    def rnd(v):
        return bf16_value(bf16_bits_ref(np.asarray(v, np.float32)))
    h = rnd(rnd(x) @ rnd(w))
    h = rnd(h + bf16_value(b_bits))
    h = rnd(np.maximum(h, 0))
    e = np.exp(h - h.max(axis=1, keepdims=True))
    want = rnd(e / e.sum(axis=1, keepdims=True))
    got = bf16_value(s)
    # Within one bf16 ulp (the float32 sums' order may tip a rounding), and
    # almost all equal; computing in float32 and rounding once at the end
    # would not be (the values between ops are stored in bf16).
    np.testing.assert_allclose(got, want, rtol=2.0**-7, atol=0)
    assert np.mean(got == want) > 0.97
    h = np.maximum(x @ w + bf16_value(b_bits), 0)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    rounded_once = rnd(e / e.sum(axis=1, keepdims=True))
    assert np.mean(got == rounded_once) < 0.9
    # Not float32 values: every result is a bf16 (its low 16 bits zero).
    assert not np.any(got.view(np.uint32) & 0xFFFF)
