#!/usr/bin/env python3
"""Parameter groups and several optimizers through pf.optimizer.

The seed MLP trains with SGD (momentum 0.9, weight decay 1e-3, lr 0.01 from
--lr) as the pipeline's default, except: the biases of the body are a group
without weight decay, and the output layer is a second optimizer, Adam, with
its own run-time learning rate "lr.head" (pf-run --scalar lr.head=0.003).
Every loss equals a float64 NumPy reference that updates each parameter with
its own rule; fresh seed each run.
"""
import os
import re
import subprocess
import sys
import tempfile

import common

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "runtime", "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
import pfrt_philox as ph  # noqa: E402
import mlp_reference as ref  # noqa: E402

LAYERS = [("m_stage0.linear0", 784, 512), ("m_stage1.linear1", 512, 512),
          ("m_stage1.linear2", 512, 10)]
GROUPS = {
    "m_stage0.linear0.bias": '{weight_decay = 0.0 : f64}',
    "m_stage1.linear1.bias": '{weight_decay = 0.0 : f64}',
    "m_stage1.linear2.weight": '{kind = "adam", lr = "lr.head"}',
    "m_stage1.linear2.bias": '{kind = "adam", lr = "lr.head"}',
}


class PerParam:
    """ref.Optimizer per parameter key (layer, 0 weight / 1 bias)."""

    def __init__(self, lr_head):
        body = dict(momentum=0.9)
        self.rules = {}
        for j in range(3):
            for k in range(2):
                if j == 2:
                    # unset entries inherit the pipeline options (weight decay 1e-3)
                    self.rules[(j, k)] = (ref.Optimizer("adam", weight_decay=1e-3), lr_head)
                else:
                    self.rules[(j, k)] = (ref.Optimizer(
                        "sgd", weight_decay=1e-3 if k == 0 else 0.0, **body), None)

    def update(self, key, p, g, lr, t):
        opt, own = self.rules[key]
        return opt.update(key, p, g, float(ref.np.float32(own)) if own else lr, t)


def main():
    ap = common.tool_parser()
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--lr-head", type=float, default=0.003)
    ap.add_argument("--microbatches", type=int, default=2)
    args = ap.parse_args()
    seed = common.pick_seed()
    os.makedirs(args.workdir, exist_ok=True)
    text = open(args.mlir).read()
    for name, attrs in GROUPS.items():
        pattern = r"(pf\.param @%s : [^\n]*= #pf\.init<[^>]*>)" % re.escape(name)
        text, n = re.subn(pattern, r"\1 {pf.optimizer = %s}" % attrs, text)
        assert n == 1, name
    annotated = os.path.join(args.workdir, "groups.mlir")
    open(annotated, "w").write(text)
    lowered = os.path.join(args.workdir, "program.llvm.mlir")
    art = os.path.join(args.workdir, "art")
    common.compile_artifacts(
        args, annotated, ["-pf-compile-cpu-pipeline=optimizer=sgd momentum=0.9 "
                          "weight-decay=0.001 accumulation-steps=%d" %
                          args.microbatches], lowered, art)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "losses")
        subprocess.run([args.pf_run, "-n", str(args.ranks), art, "--steps", str(args.steps),
                        "--seed", str(seed), "--lr", repr(args.lr), "--scalar",
                        "lr.head=%r" % args.lr_head, "--loss-out", out, "--timeout", "120"],
                       check=True, stdout=subprocess.DEVNULL)
        got = common.read_losses(out)
    params = [ref.linear_init(seed, name, i, o) for name, i, o in LAYERS]
    x = ph.synthetic_batch(seed, ph.stream_id("input0"), 0, (16, 1, 28, 28))
    y = ph.synthetic_labels(10, seed, ph.stream_id("input1"), 0, (16,))
    want = ref.train(params, x, y, [args.lr] * args.steps, args.microbatches,
                     PerParam(args.lr_head))
    plain = ref.train(params, x, y, [args.lr] * args.steps, args.microbatches,
                      ref.Optimizer("sgd", momentum=0.9, weight_decay=1e-3))
    err = ref.max_relative_error(got, want)
    differs = ref.max_relative_error(got, plain)
    print("max relative error %.3e (against one SGD for all: %.3e)" % (err, differs))
    ok = err < 1e-5 and differs > 1e-4
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
