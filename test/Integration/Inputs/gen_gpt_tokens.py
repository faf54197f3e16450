"""Writes input0.npy (tokens) and input1.npy (targets) for STEPS steps of
Conversion/PFToGPU/Inputs/cuda-gpt.mlir into DIR: int64 [STEPS, 2, 8] in
[0, 32), about a quarter of the targets -1 (ignore_index). Fresh random
data unless --seed is given; the seed is printed so a run can be replayed."""

import argparse
import os

import numpy as np


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    os.makedirs(args.dir, exist_ok=True)
    tokens = rng.integers(0, 32, size=(args.steps, 2, 8), dtype=np.int64)
    targets = rng.integers(0, 32, size=(args.steps, 2, 8), dtype=np.int64)
    targets[rng.random(targets.shape) < 0.25] = -1
    targets[:, 0, 0] = rng.integers(0, 32, size=args.steps)  # a kept row every step
    np.save(os.path.join(args.dir, "input0.npy"), tokens)
    np.save(os.path.join(args.dir, "input1.npy"), targets)
    print(f"gen_gpt_tokens: seed {seed}")


if __name__ == "__main__":
    main()
