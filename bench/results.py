"""Appending a benchmark's table to bench/RESULTS.md (the --write option)."""
import datetime
import os
import platform

HERE = os.path.dirname(os.path.abspath(__file__))


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
