#!/usr/bin/env python3
"""PipeFlow on one GPU against PyTorch eager on the same GPU (issue 14).

  /usr/bin/python3 bench/gpu_bench.py [--only NAME] [--direct] [--write]
        [--steps-scale X] [--workdir DIR]

Needs a CUDA GPU, PyTorch with CUDA (the baseline and cuBLAS's rate) and a
build with the CUDA runtime layer. For each configuration (the seed MLP
784-512-512-10 at batch 256; an 8-layer 4096-wide MLP at batch 1024, loss
over 4096 classes) this

  1. writes the program with bench/gen_mlp.py placed on "cuda", compiles it
     with `pf-opt -pf-compile-gpu-pipeline` and `pf-translate
     --pf-emit-rank-artifacts`;
  2. runs the rank for WARMUP + STEPS steps (`pf-run -n 1`, or the rank's
     executable alone as an MPI singleton with --direct, for a machine
     without mpiexec) and takes the median `time_ms` after WARMUP steps:
     the driver synchronises the device after each step, so a step's time
     is its whole GPU time, CUDA graph replay included (and again with
     PFRT_NO_CUDA_GRAPH=1, uncaptured; and with the GEMMs' algorithms
     chosen by timing, PFRT_CUDA_GEMM_TUNE = a file that a first run fills,
     the candidates' times printed, and the measured run reads; and with
     PFRT_CUDA_GEMM_PRECISION=3xtf32, each GEMM as three TF32 tensor-core
     GEMMs on split operands: float32's accuracy, a column of its own, not
     the float32 comparison the targets are about);
  3. times the same PyTorch step on the same GPU (nn.Linear/ReLU,
     CrossEntropyLoss, SGD lr 0.001, zero_grad + forward + backward + step,
     torch.cuda.synchronize() before each clock read), float32 with TF32 off
     (torch.backends.cuda.matmul.allow_tf32 = False, cudnn.allow_tf32 =
     False), the median of the same steps;
  4. times cuBLAS (torch.matmul, TF32 off) on every GEMM of the step, with
     the step's transposes, and reports the step's FLOPs over PipeFlow's
     step time against the same FLOPs over the GEMMs' summed cuBLAS times.

Targets (issue 14): PipeFlow / PyTorch step time <= 0.4 on the seed MLP
(launch-bound: what a captured, fused step is for), <= 0.9 on the wide MLP,
and PipeFlow's GEMM-bound rate >= 90% of cuBLAS's on the wide MLP.

Mixed precision (issue 36 item 5; --no-bf16 skips it): each configuration
also compiled with autocast=bf16, whose GPU ranks run their GEMMs as typed
cuBLASLt bf16 GEMMs on tensor cores (float32 compute); its step's FLOPs
over its step time against the same FLOPs over cuBLAS's own bf16 GEMMs
(torch.matmul on bf16 tensors, the same shapes and transposes): target
>= 90% on the wide MLP (the seed MLP's 10-class layer stays float32: its
rows are not 16-byte multiples).
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import gen_mlp  # noqa: E402
import results  # noqa: E402

BUILD = os.environ.get("PF_BUILD_DIR", os.path.join(ROOT, "build"))
BIN = os.path.join(BUILD, "bin")
WARMUP = 5
LR = 0.001
CONFIGS = [
    dict(name="seed-b256", widths=[784, 512, 512, 10], batch=256,
         final_relu=True, steps=200, target=0.4),
    dict(name="wide8x4096-b1024", widths=[4096] * 9, batch=1024,
         final_relu=False, steps=50, target=0.9),
]
STEP_RE = re.compile(r"^step (\d+) loss (\S+).* time_ms ([0-9.]+)")


def gemms(widths, batch):
    """(M, N, K, trans_a, trans_b) of the step's GEMMs, row-major."""
    out = []
    for l in range(len(widths) - 1):
        i, o = widths[l], widths[l + 1]
        out.append((batch, o, i, False, True))       # forward X W^T
        if l > 0:
            out.append((batch, i, o, False, False))  # input gradient dY W
        out.append((o, i, batch, True, False))       # weight gradient dY^T X
    return out


def step_flops(widths, batch):
    return sum(2 * m * n * k for m, n, k, _, _ in gemms(widths, batch))


def compile_pf(cfg, work, autocast=None):
    name = cfg["name"] + ("-" + autocast if autocast else "")
    src = os.path.join(work, name + ".mlir")
    text = gen_mlp.mlp_program(cfg["widths"], cfg["batch"], cfg["final_relu"])
    with open(src, "w") as f:
        f.write(text.replace('#pf.placement<"cpu"', '#pf.placement<"cuda"'))
    lowered = os.path.join(work, name + ".llvm.mlir")
    options = "optimizer=sgd accumulation-steps=1" + (
        " autocast=" + autocast if autocast else "")
    subprocess.run([os.path.join(BIN, "pf-opt"), src,
                    "-pf-compile-gpu-pipeline=" + options,
                    "-o", lowered], check=True)
    art = os.path.join(work, name)
    shutil.rmtree(art, ignore_errors=True)
    subprocess.run([os.path.join(BIN, "pf-translate"), "--pf-emit-rank-artifacts",
                    lowered, "--pf-artifact-dir=" + art], check=True,
                   stdout=subprocess.DEVNULL)
    return art


def run_pf(art, steps, direct, graphs=True, tune=None, precision=None):
    env = dict(os.environ)
    env.pop("PF_TRACE", None)
    env.pop("PFRT_CUDA_GEMM_TUNE", None)
    env.pop("PFRT_CUDA_GEMM_PRECISION", None)
    if precision:
        env["PFRT_CUDA_GEMM_PRECISION"] = precision
    if not graphs:
        env["PFRT_NO_CUDA_GRAPH"] = "1"
    if tune:
        env["PFRT_CUDA_GEMM_TUNE"] = tune
        env["PFRT_CUDA_VERBOSE"] = "1"
    args = ["--steps", str(steps), "--lr", str(LR)]
    cmd = ([os.path.join(art, "rank0")] + args if direct else
           [os.path.join(BIN, "pf-run"), "-n", "1", art] + args)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("the PipeFlow run failed (exit %d)" % p.returncode)
    times = [float(m.group(3)) for m in map(STEP_RE.match, p.stdout.splitlines()) if m]
    if len(times) != steps:
        raise SystemExit("%d step lines, expected %d:\n%s" % (len(times), steps, p.stdout))
    if tune:
        for line in p.stderr.splitlines():
            if "gemm tune" in line:
                print(line, flush=True)
    return statistics.median(times[WARMUP:])


def torch_step_ms(cfg, steps):
    import time
    import torch
    import torch.nn as nn
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    widths, nl = cfg["widths"], len(cfg["widths"]) - 1
    layers = []
    for l in range(nl):
        layers.append(nn.Linear(widths[l], widths[l + 1]))
        if l < nl - 1 or cfg["final_relu"]:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to(dev)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x = torch.randn(cfg["batch"], widths[0], device=dev)
    y = torch.randint(0, widths[-1], (cfg["batch"],), device=dev)
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[WARMUP:]), torch.cuda.get_device_name(0), torch.__version__


def cublas_ms(cfg, repeat=20, bf16=False):
    """Summed median cuBLAS time of the step's GEMMs (torch.matmul, TF32 off;
    bf16 operands and result with `bf16`)."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    dtype = torch.bfloat16 if bf16 else torch.float32
    total = 0.0
    for m, n, k, ta, tb in gemms(cfg["widths"], cfg["batch"]):
        a = torch.randn(*((k, m) if ta else (m, k)), device="cuda", dtype=dtype)
        b = torch.randn(*((n, k) if tb else (k, n)), device="cuda", dtype=dtype)
        aa, bb = (a.t() if ta else a), (b.t() if tb else b)
        for _ in range(3):
            torch.matmul(aa, bb)
        times = []
        for _ in range(repeat):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(aa, bb)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        total += statistics.median(times)
    return total


def bf16_row(cfg, art16, steps, direct, flops):
    """The autocast=bf16 step's rate against cuBLAS's bf16 GEMMs."""
    pf16_ms = run_pf(art16, steps, direct)
    rate16 = flops / pf16_ms / 1e9
    cublas16 = flops / cublas_ms(cfg, bf16=True) / 1e9
    frac = rate16 / cublas16
    return "| %s | %d | %.3f | %.1f | %.1f | %.2f%s |" % (
        cfg["name"], steps, pf16_ms, rate16, cublas16, frac,
        "" if cfg["target"] != 0.9 else (" (>= 0.9: %s)" % ("yes" if frac >= 0.9 else "**no**")))


def main():
    ap = results.parser(__doc__)
    ap.add_argument("--only", default=None)
    ap.add_argument("--direct", action="store_true",
                    help="run the rank executable alone (MPI singleton), not pf-run")
    ap.add_argument("--steps-scale", type=float, default=1.0)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--no-bf16", action="store_true",
                    help="skip the mixed-precision (autocast=bf16) runs")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile the configurations into --workdir and stop (on a "
                    "machine with the CUDA toolkit; the GPU machine then runs them "
                    "with --prebuilt)")
    ap.add_argument("--prebuilt", action="store_true",
                    help="run the artifacts --compile-only left in --workdir (a GPU "
                    "machine without ptxas or pf-opt)")
    args = ap.parse_args()
    if (args.compile_only or args.prebuilt) and not args.workdir:
        ap.error("--compile-only and --prebuilt need --workdir")
    work = args.workdir or tempfile.mkdtemp(prefix="pf-gpu-bench-")
    os.makedirs(work, exist_ok=True)
    rows, bf16_rows, device, torch_version = [], [], "?", "?"
    for cfg in CONFIGS:
        if args.only and cfg["name"] != args.only:
            continue
        steps = max(WARMUP + 5, int(cfg["steps"] * args.steps_scale))
        if args.prebuilt:
            art = os.path.join(work, cfg["name"])
            art16 = art + "-bf16"
            for a in [art] + ([] if args.no_bf16 else [art16]):
                if not os.path.isdir(a):
                    sys.exit(f"gpu_bench: no artifacts {a} (run --compile-only first)")
        else:
            art = compile_pf(cfg, work)
            art16 = None if args.no_bf16 else compile_pf(cfg, work, "bf16")
        if args.compile_only:
            print(f"compiled {cfg['name']} into {art}")
            continue
        pf_ms = run_pf(art, steps, args.direct)
        pf_nograph_ms = run_pf(art, steps, args.direct, graphs=False)
        # GEMM algorithms timed (PFRT_CUDA_GEMM_TUNE): a first run chooses
        # them into a file (its candidates' times printed), the measured
        # run takes them from it.
        choices = os.path.join(work, cfg["name"] + "-gemm-choices.txt")
        if os.path.exists(choices):
            os.remove(choices)
        run_pf(art, WARMUP + 1, args.direct, tune=choices)
        pf_tuned_ms = run_pf(art, steps, args.direct, tune=choices)
        # The 3xTF32 GEMMs (float32's accuracy on TF32 tensor cores): not
        # the target's float32 comparison, a column of its own.
        pf_3x_ms = run_pf(art, steps, args.direct, precision="3xtf32")
        pt_ms, device, torch_version = torch_step_ms(cfg, steps)
        gemm_ms = cublas_ms(cfg)
        flops = step_flops(cfg["widths"], cfg["batch"])
        ratio, tuned_ratio = pf_ms / pt_ms, pf_tuned_ms / pt_ms
        rate, cublas_rate = flops / pf_ms / 1e9, flops / gemm_ms / 1e9
        tuned_rate = flops / pf_tuned_ms / 1e9
        rows.append("| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f (<= %.1f: %s) | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f |" % (
            cfg["name"], steps, pf_ms, pf_nograph_ms, pf_tuned_ms, pf_3x_ms, pt_ms, ratio,
            cfg["target"], "yes" if ratio <= cfg["target"] else "**no**",
            tuned_ratio, pf_3x_ms / pt_ms, rate, tuned_rate, cublas_rate,
            rate / cublas_rate))
        print(rows[-1], flush=True)
        if not args.no_bf16:
            bf16_rows.append(bf16_row(cfg, art16, steps, args.direct, flops))
            print(bf16_rows[-1], flush=True)
    if args.compile_only:
        return
    table = ("| config | steps | PipeFlow ms (graph) | PipeFlow ms (no graph) | "
             "PipeFlow ms (graph, --gemm-tune) | PipeFlow ms (3xTF32) | PyTorch ms | "
             "ratio (target) | ratio tuned | ratio 3xTF32 | PipeFlow TFLOP/s | "
             "tuned TFLOP/s | cuBLAS TFLOP/s | fraction (target 0.9) |\n"
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    setup = ("GPU %s; PyTorch %s eager, float32, TF32 off on both sides; SGD lr %g; "
             "median after %d warm-up steps" % (device, torch_version, LR, WARMUP))
    print(setup)
    if args.write:
        results.append("GPU step time (bench/gpu_bench.py)", setup, table)
    if bf16_rows:
        table16 = ("| config | steps | PipeFlow bf16 ms (graph) | PipeFlow bf16 TFLOP/s | "
                   "cuBLAS bf16 TFLOP/s | fraction (target 0.9) |\n"
                   "|---|---|---|---|---|---|\n" + "\n".join(bf16_rows))
        setup16 = ("GPU %s; autocast=bf16: typed cuBLASLt bf16 GEMMs (float32 compute) "
                   "against torch.matmul on bf16 tensors, the step's GEMM shapes; SGD lr %g; "
                   "median after %d warm-up steps" % (device, LR, WARMUP))
        print(table16)
        print(setup16)
        if args.write:
            results.append("GPU bf16 GEMM rate (bench/gpu_bench.py)", setup16, table16)


if __name__ == "__main__":
    main()
