"""Parameters shared between compiled graphs (OneFlow's train and eval graphs
over one module).

Each compiled program keeps its own copy of the parameters and buffers it
uses; one set of values is kept by ownership. The graph that trains a tensor
last owns it (``pipeflow._trained``: its ``ProgramState``); before a step,
a graph whose tensors another program owns takes their current values from
that program, program to program through the runtime's state entry points
(``pfrt_state_gather`` then ``pfrt_state_set``: a collective over the job
when it runs on several processes, which every process reaches at the same
step), and only when the owner has stepped or been written since the last
copy. A training graph then owns them; an inference graph leaves them with
their trainer, so alternating a training graph and an evaluation graph
copies the parameters once per switch and never back. ``load_state_dict``
writes into the owner's program, and the next step of any other graph picks
the loaded values up the same way.
"""

from ..._registry import Changes
from ..._trained import mark_trained

# Counts the changes of owner: tensors change owner only through take()
# (mark_trained), so a graph whose owners were all settled when it last
# looked has nothing to pull or take until the count moves.
_owners = Changes()


def pull(run):
    """Before ``run``'s step: the current values of the tensors another
    program owns, copied into ``run``'s program."""
    if run.owners_seen != _owners.count:
        run.foreign = _foreign(run)
        run.owners_seen = _owners.count
    for name, owner, other in run.foreign:
        key = (id(owner), owner.version, owner.writes)
        if run.shared_from.get(name) == key:
            continue
        what = f"{run.graph_name}: taking the values of parameters shared with another graph"
        run.state.set(name, owner.shared_value(other, what), what)
        run.shared_from[name] = key


def _foreign(run):
    """The tensors of ``run`` that another program owns: ``(name, owner,
    the owner's name for it)``; the same until an owner changes."""
    out = []
    for name, obj in run.traced.param_objects.items():
        owner = obj.__dict__.get("_state_owner")
        if owner is None or owner is run.state or name not in run.state.info:
            continue
        other = owner.symbol.get(id(obj))
        if other is None or other not in owner.info:
            continue
        out.append((name, owner, other))
    return out


def take(run, start):
    """After ``run``'s step: the tensors it now owns (every one on a training
    graph's steps; on an inference graph's first step, those nobody owns).
    Nothing to do when no owner changed since the last time."""
    if run.taken_seen == _owners.count:
        return
    for name, obj in run.traced.param_objects.items():
        owner = obj.__dict__.get("_state_owner")
        if owner is run.state:
            continue
        if run.inference and owner is not None:
            continue
        _owners.bump()
        mark_trained(obj, name, f"graph {run.graph_name}", run.state, start)
        run.shared_from.pop(name, None)
    run.taken_seen = _owners.count
