"""Appending a benchmark's table to bench/RESULTS.md (the --write option)."""
import argparse
import datetime
import os
import platform

HERE = os.path.dirname(os.path.abspath(__file__))


def parser(doc, **ints):
    """An ArgumentParser described by the first line of DOC (the bench's
    docstring), with --write (append the table to RESULTS.md) and an integer
    option per keyword of INTS with its default (micro_batches=4:
    --micro-batches, default 4)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--write", action="store_true",
                    help="append the table to bench/RESULTS.md")
    for name, default in ints.items():
        ap.add_argument("--" + name.replace("_", "-"), type=int,
                        default=default)
    return ap


def use_threads(n):
    """PipeFlow's runtime and OpenBLAS on N threads (before importing
    pipeflow)."""
    os.environ["PIPEFLOW_NUM_THREADS"] = str(n)
    os.environ["OPENBLAS_NUM_THREADS"] = str(n)


def report(args, heading, setup, table):
    """Prints SETUP and TABLE; with --write, appends them to RESULTS.md
    under HEADING."""
    print(setup)
    print(table)
    if args.write:
        append(heading, setup, table)


def append(heading, setup, table):
    """Appends a section '## HEADING' to RESULTS.md: the UTC time, this
    machine's name and core count, then SETUP (what was measured, how), then
    TABLE."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
        f.write("\n## %s\n\n%s, %s, %d cores; %s\n\n%s\n" % (
            heading, stamp, platform.node() or "this machine",
            os.cpu_count(), setup, table))
