"""Appending a benchmark's table to bench/RESULTS.md (the --write option)."""
import argparse
import datetime
import os
import platform

HERE = os.path.dirname(os.path.abspath(__file__))


def parser(doc):
    """An ArgumentParser described by the first line of DOC (the bench's
    docstring), with --write (append the table to RESULTS.md)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--write", action="store_true",
                    help="append the table to bench/RESULTS.md")
    return ap


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
