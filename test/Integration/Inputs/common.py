"""Helpers the check_*.py scripts share: the tool arguments, the run's seed,
compiling a program into per-rank artifacts and reading a loss file."""
import argparse
import random
import subprocess


def tool_parser(mlir=True, mlir_help=None, compare=False):
    """An ArgumentParser with the required --pf-opt, --pf-translate, --pf-run,
    --mlir (unless mlir is False) and --workdir; with compare, also --seed
    (default: a fresh one, see pick_seed) and --tolerance (1e-5) for the
    scripts that compare losses with a NumPy reference."""
    ap = argparse.ArgumentParser()
    for tool in ("pf-opt", "pf-translate", "pf-run"):
        ap.add_argument("--" + tool, required=True)
    if mlir:
        ap.add_argument("--mlir", required=True, help=mlir_help)
    ap.add_argument("--workdir", required=True)
    if compare:
        ap.add_argument("--seed", type=int, default=None)
        ap.add_argument("--tolerance", type=float, default=1e-5)
    return ap


def pick_seed(seed=None):
    """seed, or a fresh random one; printed so a failure can be replayed."""
    if seed is None:
        seed = random.randrange(2**31)
    print("seed", seed)
    return seed


def compile_artifacts(args, mlir, flags, lowered, artifacts):
    """pf-opt MLIR with FLAGS into LOWERED, then pf-translate LOWERED into
    per-rank artifacts under ARTIFACTS."""
    subprocess.run([args.pf_opt, mlir] + flags + ["-o", lowered], check=True)
    subprocess.run([args.pf_translate, "--pf-emit-rank-artifacts", lowered,
                    "--pf-artifact-dir=" + artifacts], check=True,
                   stdout=subprocess.DEVNULL)


def read_losses(path):
    """A loss file (pf-run --loss-out): one list of floats per step."""
    with open(path) as f:
        return [[float(v) for v in line.split()] for line in f
                if line.strip()]
