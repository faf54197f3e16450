"""What the benches share: their command line, appending a table to
bench/RESULTS.md (the --write option) and the training graph they time."""
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


def train_graph(flow, model, optimizer, loss_of=None, clip=None):
    """An nn.Graph whose step trains ``model`` with ``optimizer`` on the loss
    ``loss_of(model, x, y)`` (default ``model(x, y)``), its gradients
    clipped to norm ``clip`` where given, and returns the loss."""
    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)

        def build(self, x, y):
            loss = self.model(x, y) if loss_of is None else loss_of(self.model, x, y)
            loss.backward()
            if clip is not None:
                flow.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
            return loss

    return TrainGraph()


def nanogpt_loss(model, x, y):
    """The loss of nanoGPT's GPT, which returns (logits, loss)."""
    return model(x, y)[1]


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
