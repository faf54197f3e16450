"""What the examples in this folder share around their programs (not an
example itself): the command line's ``--compile-only`` and what it prints.
Each example keeps its model, placements, SBP and graph in its own file."""

import argparse


def parser(doc):
    """An ArgumentParser described by the first line of ``doc`` (the
    example's docstring), with ``--compile-only``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--compile-only", action="store_true", help="trace and verify, print the IR, do not train")
    return ap


def print_verified_ir(graph, *inputs, notes=None):
    """``--compile-only``: compiles ``graph``'s step for ``inputs`` and prints
    the IR that pf-opt verified, what ``notes()`` then returns as comments,
    and where it is cached."""
    compiled = graph.compile(*inputs)
    print(compiled.verified_ir, end="")
    if notes is not None:
        print("// " + notes().rstrip().replace("\n", "\n// "))
    print(f"// verified by pf-opt; cached in {compiled.directory}")


def train_or_print_ir(args, graph, *inputs, steps=20):
    """The end of the seeds' pipelines: with ``--compile-only``
    ``print_verified_ir``, else ``steps`` steps on the one batch ``inputs``,
    each printing ``loss.to_local()``."""
    if args.compile_only:
        print_verified_ir(graph, *inputs)
        return
    for _ in range(steps):
        loss = graph(*inputs)
        print(loss.to_local())
