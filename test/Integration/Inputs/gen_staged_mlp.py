#!/usr/bin/env python3
"""Writes a pf program: an MLP of len(widths)-1 Linear+ReLU layers named
l0, l1, ... split evenly into `stages` pipeline stages, stage s on CPU rank
s % ranks (so ranks < stages gives interleaved virtual chunks), with a
cross-entropy loss on the last stage. With --unstaged, the whole program is
on rank 0 without pf.stage (the input of pf-auto-stages) and --stages only
needs to be 1."""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--widths", required=True, help="in,h1,...,out")
ap.add_argument("--stages", type=int, required=True)
ap.add_argument("--ranks", type=int, required=True)
ap.add_argument("--batch", type=int, required=True)
ap.add_argument("--unstaged", action="store_true")
ap.add_argument("--dp", type=int, default=1,
                help="data parallel: every stage on this many ranks, the "
                     "batch split S(0)")
ap.add_argument("--dropout", type=float, default=0.0,
                help="pf.dropout with this p after every hidden layer's relu "
                     "(stream = layer index + 1)")
args = ap.parse_args()
if args.unstaged:
    args.stages = args.ranks = 1
w = [int(x) for x in args.widths.split(",")]
layers = len(w) - 1
assert layers % args.stages == 0
per = layers // args.stages
B = args.batch


def pl(stage):
    r = stage % args.ranks
    return '#pf.placement<"cpu", [%s]>' % ", ".join(
        str(r * args.dp + i) for i in range(args.dp))


def g(shape, stage, sbp=True, elem="f32"):
    dims = "".join("%dx" % d for d in shape) + elem
    return "!pf.global<%s, %s%s>" % (dims, pl(stage),
                                     ", #pf.sbp<[B]>" if sbp else "")


out = []
for i in range(layers):
    s = i // per
    out.append("pf.param @l%d.weight : %s = #pf.init<kaiming_uniform(%d)>" %
               (i, g([w[i + 1], w[i]], s), w[i]))
    out.append("pf.param @l%d.bias : %s = #pf.init<kaiming_uniform(%d)>" %
               (i, g([w[i + 1]], s), w[i]))
last = args.stages - 1
split = (lambda t: t.replace("#pf.sbp<[B]>", "#pf.sbp<[S(0)]>")) if args.dp > 1 else (lambda t: t)
out.append("func.func @train_step(%%x: %s, %%y: %s) -> %s {" % (
    split(g([B, w[0]], 0)), split(g([B], last, elem="i64")),
    "!pf.global<f32, %s>" % pl(last)))
cur, cur_t = "%x", split(g([B, w[0]], 0))
n = 0
for i in range(layers):
    s = i // per
    if i > 0 and i % per == 0:
        t = g([B, w[i]], s)
        out.append("  %%m%d = pf.to_global %s : %s -> %s" % (i, cur, cur_t, t))
        cur, cur_t = "%%m%d" % i, t
    wt, bt = g([w[i + 1], w[i]], s), g([w[i + 1]], s)
    h = g([B, w[i + 1]], s, sbp=False)
    st = "" if args.unstaged else " {pf.stage = %d}" % s
    tb = "{transpose_b}" if args.unstaged else "{transpose_b, pf.stage = %d}" % s
    out.append("  %%w%d = pf.read_param @l%d.weight%s : %s" % (i, i, st, wt))
    out.append("  %%b%d = pf.read_param @l%d.bias%s : %s" % (i, i, st, bt))
    out.append("  %%h%d = pf.matmul %s, %%w%d %s : (%s, %s) -> %s"
               % (i, cur, i, tb, cur_t, wt, h))
    out.append("  %%hb%d = pf.bias_add %%h%d, %%b%d%s : (%s, %s) -> %s" %
               (i, i, i, st, h, bt, h))
    out.append("  %%a%d = pf.relu %%hb%d%s : (%s) -> %s" % (i, i, st, h, h))
    cur, cur_t = "%%a%d" % i, h
    if args.dropout > 0 and i + 1 < layers:
        attrs = "{p = %r : f64, stream = %d : i64%s}" % (
            args.dropout, i + 1, "" if args.unstaged else ", pf.stage = %d" % s)
        out.append("  %%d%d = pf.dropout %%a%d %s : (%s) -> %s" % (i, i, attrs, h, h))
        cur = "%%d%d" % i
loss_t = "!pf.global<f32, %s>" % pl(last)
out.append("  %%loss = pf.softmax_cross_entropy %s, %%y%s : (%s, %s) -> %s"
           % (cur, "" if args.unstaged else " {pf.stage = %d}" % last, cur_t,
              split(g([B], last, elem="i64")), loss_t))
out.append("  return %%loss : %s" % loss_t)
out.append("}")
print("\n".join(out))
