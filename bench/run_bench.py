#!/usr/bin/env python3
"""PipeFlow vs PyTorch (Debian's python3-torch), one thread each.

  /usr/bin/python3 bench/run_bench.py [--only NAME] [--steps-scale X]
        [--no-trace] [--wait-quiet SEC] [--workdir DIR] [--json FILE]

For each configuration (seed MLP 784-512-512-10 at batch 16 and 256; an
8-layer 4096-wide MLP at batch 64) this

  1. writes the pf program with bench/gen_mlp.py, checks it with pf-opt and
     compiles it once (pf-opt -pf-compile-cpu-pipeline, pf-translate
     --pf-emit-rank-artifacts) into a scratch directory;
  2. runs `pf-run -n 1 --threads 1` for WARMUP + STEPS steps and takes the
     median of the per-step `time_ms` after dropping the first WARMUP steps;
  3. times the same PyTorch training step (torch.set_num_threads(1),
     nn.Linear/nn.ReLU, nn.CrossEntropyLoss, SGD lr 0.001,
     zero_grad() + forward + backward + step()) for the same WARMUP + STEPS
     steps, median of the same STEPS;
  4. repeats 2 and 3 with GLIBC_TUNABLES set so that glibc's malloc keeps
     freed memory (see MALLOC_KEEP: on this VM a page fault is expensive
     and PyTorch maps fresh 64 MiB buffers every step of the wide model);
  5. times OpenBLAS sgemm (numpy float32 matmul, OPENBLAS_NUM_THREADS=1 set
     before numpy is imported) on every GEMM shape of the step, with the
     same transposes as the step's GEMMs;
  6. unless --no-trace, reruns pf-run with a Chrome trace (--trace) and
     summarises the steady-state time per op.

Before each measured run it waits (up to --wait-quiet seconds) for other
processes to go quiet, and it reports how much CPU they used meanwhile.

FLOPs of a step (element-wise ops ignored), summed over Linear layers l with
fan-in i_l and fan-out o_l at batch B:
    forward      2*B*i_l*o_l     (every layer)
    weight grad  2*B*i_l*o_l     (every layer)
    input grad   2*B*i_l*o_l     (every layer but the first: the data needs
                                  no gradient, and neither side computes it)
PipeFlow GFLOP/s = FLOPs / PipeFlow median step time.
sgemm GFLOP/s    = FLOPs / (sum over the step's GEMMs of sgemm's median
                   time on that GEMM's shape), i.e. OpenBLAS's rate on this
                   step's exact GEMM mix.

All three sides (pf-run's ranks, PyTorch, numpy) load the same
libopenblas.so.0 and run with the same environment: OPENBLAS_NUM_THREADS=1,
OMP_NUM_THREADS=1, MKL_NUM_THREADS=1 and OPENBLAS_CORETYPE as found in this
process's environment (unset stays unset).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.path.join(ROOT, "build", "bin")
sys.path.insert(0, HERE)

WARMUP = 3
LR = 0.001
SEED_WIDTHS = [784, 512, 512, 10]
WIDE = [4096] * 9  # 8 Linear layers 4096 -> 4096, loss over 4096 classes

CONFIGS = [
    # name, widths, batch, ReLU after the last layer, measured steps,
    # time-ratio target (PipeFlow / PyTorch)
    # time-ratio target (PipeFlow / PyTorch), whether the sgemm-rate target
    # applies (the two larger sizes; batch 16 is latency-bound: M=16 GEMMs)
    dict(name="seed-b16", widths=SEED_WIDTHS, batch=16, final_relu=True,
         steps=200, target_ratio=0.5, gemm_bound=False),
    dict(name="seed-b256", widths=SEED_WIDTHS, batch=256, final_relu=True,
         steps=100, target_ratio=0.9, gemm_bound=True),
    dict(name="wide8x4096-b64", widths=WIDE, batch=64, final_relu=False,
         steps=10, target_ratio=0.9, gemm_bound=True),
]
SGEMM_TARGET = 0.85
# Second environment, for both sides: glibc malloc never gives memory back
# to the kernel (no mmap for large blocks, no trimming), so buffers freed in
# one step are reused without fresh page faults in the next.
MALLOC_KEEP = ("glibc.malloc.mmap_max=0:"
               "glibc.malloc.trim_threshold=1099511627776")


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------

def bench_env():
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    env["MKL_NUM_THREADS"] = "1"
    env.pop("PF_TRACE", None)
    return env


def gemms(widths, batch):
    """The step's GEMMs: (kind, M, N, K, trans_a, trans_b), row-major,
    C[M,N] = op(A) op(B), as PipeFlow's lowering calls them."""
    out = []
    for l in range(len(widths) - 1):
        i, o = widths[l], widths[l + 1]
        out.append(("fwd", batch, o, i, False, True))    # X W^T
        if l > 0:
            out.append(("dgrad", batch, i, o, False, False))  # dY W
        out.append(("wgrad", o, i, batch, True, False))  # dY^T X
    return out


def step_flops(widths, batch):
    return sum(2 * m * n * k for _, m, n, k, _, _ in gemms(widths, batch))


def cpu_busy():
    """(busy, total) jiffies over all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def children_cpu_s():
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class LoadMeter:
    """CPU time used on the machine by everything but this benchmark (the
    children it has waited for), in cores, over a with-block."""

    def __enter__(self):
        self.b0, _ = cpu_busy()
        self.c0 = children_cpu_s()
        self.w0 = time.time()
        return self

    def __exit__(self, *exc):
        b1, _ = cpu_busy()
        hz = os.sysconf("SC_CLK_TCK")
        wall = max(1e-3, time.time() - self.w0)
        mine = children_cpu_s() - self.c0
        self.other = max(0.0, ((b1 - self.b0) / hz - mine) / wall)


def wait_quiet(limit_s, threshold=0.15):
    """Waits (up to limit_s) for 1 s in which other processes use less than
    threshold cores; returns the last measured load."""
    t_end = time.time() + limit_s
    while True:
        with LoadMeter() as m:
            time.sleep(1.0)
        if m.other < threshold or time.time() >= t_end:
            return m.other


def median(xs):
    return statistics.median(xs)


def run_worker(mode, payload, env):
    """Runs this script in a fresh interpreter (so the BLAS environment is
    in place before numpy/torch load) and returns its JSON answer."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__),
                        "--worker", mode, json.dumps(payload)],
                       env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("%s worker failed (exit %d)" % (mode, p.returncode))
    return json.loads(p.stdout.strip().splitlines()[-1])


def openblas_info():
    import ctypes
    lib = ctypes.CDLL("libopenblas.so.0")
    lib.openblas_get_corename.restype = ctypes.c_char_p
    lib.openblas_get_config.restype = ctypes.c_char_p
    return dict(corename=lib.openblas_get_corename().decode(),
                config=lib.openblas_get_config().decode(),
                threads=lib.openblas_get_num_threads())


# --------------------------------------------------------------------------
# Workers (run in subprocesses)
# --------------------------------------------------------------------------

def worker_torch(cfg):
    import torch
    import torch.nn as nn
    torch.set_num_threads(1)
    torch.manual_seed(0)
    widths, batch = cfg["widths"], cfg["batch"]
    nl = len(widths) - 1
    layers = []
    for l in range(nl):
        layers.append(nn.Linear(widths[l], widths[l + 1]))
        if l < nl - 1 or cfg["final_relu"]:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x = torch.randn(batch, widths[0])
    y = torch.randint(0, widths[-1], (batch,))

    times, losses = [], []
    for _ in range(cfg["warmup"] + cfg["steps"]):
        t0 = time.perf_counter()
        opt.zero_grad()  # 1.13's default: set_to_none=False
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(loss.item()))
    return dict(times_ms=times, losses=losses,
                torch_version=torch.__version__,
                torch_threads=torch.get_num_threads(),
                torch_interop_threads=torch.get_num_interop_threads(),
                openblas=openblas_info())


def worker_sgemm(cfg):
    import numpy as np
    rng = np.random.default_rng(0)
    res = []
    seen = {}
    for kind, m, n, k, ta, tb in gemms(cfg["widths"], cfg["batch"]):
        key = (m, n, k, ta, tb)
        if key not in seen:
            # Stored layouts as in the step: op(A) is [M,K], op(B) is [K,N].
            a = rng.standard_normal((k, m) if ta else (m, k), np.float32)
            b = rng.standard_normal((n, k) if tb else (k, n), np.float32)
            c = np.empty((m, n), np.float32)
            av = a.T if ta else a
            bv = b.T if tb else b
            for _ in range(2):
                np.matmul(av, bv, out=c)
            ts, total = [], 0.0
            while len(ts) < 5 or (total < 0.3 and len(ts) < 500):
                t0 = time.perf_counter()
                np.matmul(av, bv, out=c)
                dt = time.perf_counter() - t0
                ts.append(dt)
                total += dt
            seen[key] = (median(ts), len(ts))
        t, reps = seen[key]
        res.append(dict(kind=kind, m=m, n=n, k=k, trans_a=ta, trans_b=tb,
                        ms=t * 1e3, reps=reps,
                        gflops=2 * m * n * k / t / 1e9))
    return dict(gemms=res, numpy_version=np.__version__,
                openblas=openblas_info())


def worker_env_probe(_):
    return dict(openblas=openblas_info(),
                OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE"))


# --------------------------------------------------------------------------
# PipeFlow side
# --------------------------------------------------------------------------

STEP_RE = re.compile(r"^step (\d+) loss (\S+) time_ms (\S+)$")


def compile_pf(cfg, work):
    import gen_mlp
    src = os.path.join(work, cfg["name"] + ".mlir")
    with open(src, "w") as f:
        f.write(gen_mlp.mlp_program(cfg["widths"], cfg["batch"],
                                    cfg["final_relu"]))
    subprocess.run([os.path.join(BIN, "pf-opt"), src, "-o", os.devnull],
                   check=True)
    llvm = os.path.join(work, cfg["name"] + ".llvm.mlir")
    subprocess.run([os.path.join(BIN, "pf-opt"), src,
                    "-pf-compile-cpu-pipeline=optimizer=sgd "
                    "accumulation-steps=1", "-o", llvm], check=True)
    art = os.path.join(work, cfg["name"])
    shutil.rmtree(art, ignore_errors=True)
    subprocess.run([os.path.join(BIN, "pf-translate"),
                    "--pf-emit-rank-artifacts", llvm, "--pf-artifact-dir=" + art], check=True,
                   stdout=subprocess.DEVNULL)
    return art


def run_pf(art, steps, env, trace=None):
    cmd = [os.path.join(BIN, "pf-run"), "-n", "1", art, "--steps", str(steps),
           "--lr", str(LR), "--threads", "1"]
    if trace:
        cmd += ["--trace", trace]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("pf-run failed (exit %d)" % p.returncode)
    times, losses = [], []
    for line in p.stdout.splitlines():
        m = STEP_RE.match(line.strip())
        if m:
            losses.append(float(m.group(2)))
            times.append(float(m.group(3)))
    if len(times) != steps:
        raise SystemExit("pf-run printed %d step lines, expected %d:\n%s"
                         % (len(times), steps, p.stdout))
    return times, losses


def summarise_trace(path, steps, warmup):
    with open(path) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    if len(ev) % steps:
        return None
    per = len(ev) // steps
    agg = {}
    for s in range(warmup, steps):
        for e in ev[s * per:(s + 1) * per]:
            key = (e["name"], e.get("cat", ""))
            n, d = agg.get(key, (0, 0.0))
            agg[key] = (n + 1, d + e["dur"] / 1e3)
    ns = steps - warmup
    rows = sorted(((k[0], k[1], n // ns, d / ns) for k, (n, d) in agg.items()),
                  key=lambda r: -r[3])
    return rows


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="run only configs whose name contains this")
    ap.add_argument("--steps-scale", type=float, default=1.0,
                    help="scale every config's measured step count")
    ap.add_argument("--no-trace", action="store_true",
                    help="skip the traced pf-run (per-op summary)")
    ap.add_argument("--workdir", help="scratch directory (default: a temp dir)")
    ap.add_argument("--json", help="also write all raw results here")
    ap.add_argument("--wait-quiet", type=float, default=10.0,
                    help="before each measured run, wait up to this many "
                    "seconds for other processes to use < 0.15 cores")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.worker:
        fn = dict(torch=worker_torch, sgemm=worker_sgemm,
                  probe=worker_env_probe)[a.worker[0]]
        print(json.dumps(fn(json.loads(a.worker[1]))))
        return

    for tool in ("pf-opt", "pf-translate", "pf-run"):
        if not os.access(os.path.join(BIN, tool), os.X_OK):
            raise SystemExit("missing %s (build PipeFlow first)" % tool)
    work = a.workdir or tempfile.mkdtemp(prefix="pf-bench-")
    os.makedirs(work, exist_ok=True)
    env = bench_env()
    t_start = time.time()

    # What OpenBLAS core the ranks get: probe through mpiexec with the same
    # environment (pf-run passes its environment to mpiexec unchanged).
    probe = run_worker("probe", {}, env)
    mpi_probe = None
    mpiexec = shutil.which("mpiexec")
    if mpiexec:
        p = subprocess.run([mpiexec, "-n", "1", sys.executable,
                            os.path.abspath(__file__), "--worker", "probe",
                            "{}"], env=env, capture_output=True, text=True)
        if p.returncode == 0:
            mpi_probe = json.loads(p.stdout.strip().splitlines()[-1])

    meta = dict(
        date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        cpu=lscpu_model(), nproc=os.cpu_count(), kernel=platform.release(),
        OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE"),
        bench_env={k: env.get(k) for k in ("OPENBLAS_NUM_THREADS",
                                           "OMP_NUM_THREADS",
                                           "MKL_NUM_THREADS",
                                           "OPENBLAS_CORETYPE")},
        openblas_in_python=probe["openblas"],
        openblas_under_mpiexec=mpi_probe and mpi_probe["openblas"],
        python=sys.version.split()[0], warmup=WARMUP, lr=LR,
        pf_run_threads=1, workdir=work)
    print("# PipeFlow vs PyTorch, 1 thread each")
    for k in ("date", "cpu", "nproc", "kernel", "OPENBLAS_CORETYPE"):
        print("%-22s %s" % (k, meta[k]))
    print("%-22s %s" % ("benchmark env", meta["bench_env"]))
    print("%-22s %s" % ("OpenBLAS (python)", probe["openblas"]["config"]))
    if mpi_probe:
        print("%-22s %s" % ("OpenBLAS (mpiexec)",
                            mpi_probe["openblas"]["config"]))
    print("%-22s %s" % ("warm-up steps dropped", WARMUP))
    print("%-22s %s" % ("scratch dir", work))
    print(flush=True)

    results = []
    for cfg in CONFIGS:
        if a.only and a.only not in cfg["name"]:
            continue
        cfg = dict(cfg)
        cfg["steps"] = max(5, int(round(cfg["steps"] * a.steps_scale)))
        cfg["warmup"] = WARMUP
        total = WARMUP + cfg["steps"]
        flops = step_flops(cfg["widths"], cfg["batch"])
        print("== %s: MLP %s, batch %d, %d GEMMs, %.4f GFLOP/step, "
              "%d warm-up + %d measured steps"
              % (cfg["name"], "-".join(map(str, cfg["widths"])),
                 cfg["batch"], len(gemms(cfg["widths"], cfg["batch"])),
                 flops / 1e9, WARMUP, cfg["steps"]), flush=True)

        t0 = time.time()
        art = compile_pf(cfg, work)
        compile_s = time.time() - t0
        print("  compiled in %.2f s" % compile_s)

        # Each side in each environment: waits for a quiet machine first,
        # then measures what else ran meanwhile.
        runs = {}
        for variant in ("default", "malloc-keep"):
            venv = dict(env)
            if variant == "malloc-keep":
                venv["GLIBC_TUNABLES"] = MALLOC_KEEP
            for side in ("pf", "torch"):
                pre = wait_quiet(a.wait_quiet)
                with LoadMeter() as lm:
                    if side == "pf":
                        times, losses = run_pf(art, total, venv)
                        extra = {}
                    else:
                        extra = run_worker("torch", cfg, venv)
                        times, losses = extra.pop("times_ms"), \
                            extra.pop("losses")
                m = times[WARMUP:]
                runs[(variant, side)] = dict(
                    times_ms=times, losses=losses, median_ms=median(m),
                    min_ms=min(m), max_ms=max(m), other_load_before=pre,
                    other_load=lm.other, **extra)
                print("  %-8s %-11s median %10.3f ms (min %.3f, max %.3f, "
                      "n=%d); warm-up %s ms; loss %.5f -> %.5f; other load "
                      "%.2f cores"
                      % ("PipeFlow" if side == "pf" else "PyTorch", variant,
                         median(m), min(m), max(m), len(m),
                         "/".join("%.1f" % t for t in times[:WARMUP]),
                         losses[0], losses[-1], lm.other), flush=True)
        pt_info = runs[("default", "torch")]

        sg = run_worker("sgemm", cfg, env)
        sgemm_ms = sum(g["ms"] for g in sg["gemms"])
        sgemm_gflops = flops / (sgemm_ms / 1e3) / 1e9
        print("  sgemm (numpy float32 matmul -> cblas_sgemm, OpenBLAS %s, "
              "1 thread), median per shape:" % sg["openblas"]["corename"])
        shown = set()
        for g in sg["gemms"]:
            key = (g["m"], g["n"], g["k"], g["trans_a"], g["trans_b"])
            if key in shown:
                continue
            shown.add(key)
            cnt = sum(1 for h in sg["gemms"]
                      if (h["m"], h["n"], h["k"], h["trans_a"],
                          h["trans_b"]) == key)
            print("    %-5s M=%-5d N=%-5d K=%-5d %s%s x%-2d %9.3f ms "
                  "%6.1f GFLOP/s (%d reps)"
                  % (g["kind"], g["m"], g["n"], g["k"],
                     "A^T " if g["trans_a"] else "A   ",
                     "B^T" if g["trans_b"] else "B  ", cnt, g["ms"],
                     g["gflops"], g["reps"]))
        print("    the step's %d GEMMs at sgemm speed: %.3f ms -> %.1f GFLOP/s"
              % (len(sg["gemms"]), sgemm_ms, sgemm_gflops))

        trace = None
        if not a.no_trace:
            tsteps = WARMUP + (3 if cfg["steps"] < 50 else 20)
            tdir = os.path.join(work, cfg["name"] + "-trace")
            shutil.rmtree(tdir, ignore_errors=True)
            wait_quiet(a.wait_quiet)
            tt, _ = run_pf(art, tsteps, env, trace=tdir)
            rows = summarise_trace(os.path.join(tdir, "trace_rank0.json"),
                                   tsteps, WARMUP)
            if rows:
                tms = median(tt[WARMUP:])
                ops = sum(r_[3] for r_ in rows)
                gemm_ms = sum(r_[3] for r_ in rows if r_[0] == "pf.matmul")
                trace = dict(steps=tsteps - WARMUP, median_ms=tms, ops_ms=ops,
                             gemm_ms=gemm_ms, rows=rows, dir=tdir)
                print("  trace (%s/trace_rank0.json, %d warm-up + %d steps): "
                      "median step %.3f ms, in traced ops %.3f ms (mean), "
                      "outside them %.3f ms"
                      % (tdir, WARMUP, tsteps - WARMUP, tms, ops, tms - ops))
                print("    pf.matmul calls %.3f ms/step -> %.1f GFLOP/s"
                      % (gemm_ms, flops / (gemm_ms / 1e3) / 1e9))
                for name, cat, n, d in rows[:10]:
                    print("    %-30s %-16s x%-3d %9.3f ms/step %5.1f%%"
                          % (name, cat, n, d, 100 * d / tms))

        r = dict(cfg=cfg, flops=flops, compile_s=compile_s,
                 runs={"%s/%s" % k: v for k, v in runs.items()},
                 sgemm=sg, sgemm_ms=sgemm_ms, sgemm_gflops=sgemm_gflops,
                 trace=trace, torch_version=pt_info.get("torch_version"),
                 torch_threads=pt_info.get("torch_threads"),
                 torch_openblas=pt_info.get("openblas"))
        for variant in ("default", "malloc-keep"):
            pf_ms = runs[(variant, "pf")]["median_ms"]
            pt_ms = runs[(variant, "torch")]["median_ms"]
            pf_gf = flops / (pf_ms / 1e3) / 1e9
            r[variant] = dict(
                pf_ms=pf_ms, torch_ms=pt_ms, ratio=pf_ms / pt_ms,
                pf_gflops=pf_gf, torch_gflops=flops / (pt_ms / 1e3) / 1e9,
                fraction=pf_gf / sgemm_gflops,
                ratio_met=pf_ms / pt_ms <= cfg["target_ratio"],
                rate_met=(pf_gf / sgemm_gflops >= SGEMM_TARGET
                          if cfg["gemm_bound"] else None),
                other_load=max(runs[(variant, "pf")]["other_load"],
                               runs[(variant, "torch")]["other_load"]))
        results.append(r)
        print(flush=True)

    def yn(v):
        return "n/a" if v is None else ("yes" if v else "**no**")

    for variant, title in (
            ("default", "default environment (headline)"),
            ("malloc-keep", "GLIBC_TUNABLES=%s, both sides" % MALLOC_KEEP)):
        print("## Summary, %s" % title)
        print()
        print("| config | steps | PipeFlow ms | PyTorch ms | ratio | target "
              "| PipeFlow GFLOP/s | PyTorch GFLOP/s | sgemm GFLOP/s | "
              "fraction | time target met | rate target (>= 0.85) met | "
              "other load (cores) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in results:
            c, v = r["cfg"], r[variant]
            print("| %s | %d | %.3f | %.3f | %.2f | <= %.1f | %.1f | %.1f | "
                  "%.1f | %.2f | %s | %s | %.2f |"
                  % (c["name"], c["steps"], v["pf_ms"], v["torch_ms"],
                     v["ratio"], c["target_ratio"], v["pf_gflops"],
                     v["torch_gflops"], r["sgemm_gflops"], v["fraction"],
                     yn(v["ratio_met"]), yn(v["rate_met"]),
                     v["other_load"]))
        print()
    print("ratio = PipeFlow / PyTorch median step time; fraction = PipeFlow "
          "GFLOP/s / sgemm GFLOP/s on the step's GEMM mix; rate target "
          "applies to the GEMM-bound configs (the two larger ones). "
          "Other load: CPU used by other processes during the runs "
          "(max of the two sides; the machine has %d cores)."
          % os.cpu_count())
    print("total wall time %.1f s" % (time.time() - t_start))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(meta=meta, results=results), f, indent=1)


if __name__ == "__main__":
    main()
