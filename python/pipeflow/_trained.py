"""Parameters and buffers whose value a compiled program owns.

After a graph's first step the trained values live on the ranks that run
it. The graph marks each parameter and buffer it trains (:func:`mark_trained`)
with its compiled name and the ``pipeflow._state.ProgramState`` that reads
values back; reading the tensor's value then syncs it first (:func:`sync`).
The marks live in the tensor's ``__dict__``, so this module needs nothing
above ``_errors``: ``tensor``, ``nn.parameter`` and the graph all use it.
"""

from ._errors import BackendUnavailable


def stale_message(name, graph):
    what = f"'{name}'" if name else "this parameter"
    return (f"{what} is trained by the compiled {graph}, which keeps its value on the ranks that "
            "run it, and it cannot be read back here")


def mark_trained(tensor, name, graph, owner=None, version=0):
    """After a graph's first step: the compiled program owns the value. ``owner``
    (a ``pipeflow._state.ProgramState``) reads it back; the Python value is
    the program's as of its ``version`` (its initial or loaded value)."""
    d = tensor.__dict__
    d["_symbol"] = name
    d["_trained_by"] = graph
    d["_state_owner"] = owner
    d["_synced_step"] = version


def sync(tensor, what=None):
    """Makes the Python value of a tensor that a compiled graph trains current,
    reading it back from the program if needed; raises BackendUnavailable
    when that is not possible here (see ``pipeflow._state``)."""
    d = tensor.__dict__
    graph = d.get("_trained_by")
    if graph is None:
        return
    owner = d.get("_state_owner")
    if owner is None:
        raise BackendUnavailable(stale_message(d.get("_symbol"), graph))
    owner.sync(tensor, what or f"reading '{d.get('_symbol')}'")


def is_current(tensor):
    """Whether the Python value of ``tensor`` is its trained value now."""
    d = tensor.__dict__
    owner = d.get("_state_owner")
    return d.get("_trained_by") is None or (owner is not None and d.get("_synced_step") == owner.version)


def state_owner(tensor):
    """The ``ProgramState`` of the graph that trains ``tensor`` (``None`` if none has run)."""
    return tensor.__dict__.get("_state_owner")


def trained_by(tensor):
    """The graph that trains ``tensor`` (``None`` if none has run)."""
    return tensor.__dict__.get("_trained_by")


def uses_recipe(tensor):
    """Whether a compiled graph may compute ``tensor``'s initial value from its
    ``#pf.init<...>`` initializer (``set_runtime_init``) instead of taking
    the value it holds: only while that value came from ``pipeflow.nn.init``
    and nobody has read, shared, converted or loaded it since (a module's
    own initialisation, untouched). Every other parameter or buffer is
    compiled with exactly its value (``nn._graph.state.load_initial``)."""
    d = tensor.__dict__
    return (d.get("_init") is not None and d.get("_recipe_fresh", False)
            and not d.get("_loaded", False))
