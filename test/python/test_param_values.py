"""A parameter is its value (issue 35, item 1).

Every spelling that gives a parameter a value (``load_state_dict`` then
``nn.Parameter(m.fc.weight)``, ``nn.Parameter(flow.tensor(array))``,
``nn.Parameter(flow.ones(n))``, ``register_parameter``,
``nn.Parameter(w.to_global(placement, sbp))``, a local shard made global,
tied weights, a module's own initialisation read before the first call)
must be compiled with exactly that value: the losses and the trained
parameters of two SGD steps equal a float64 NumPy reference started from
the value the script reports, on a local graph, one rank, tensor
parallelism (TP2) and a two-stage pipeline (PP2). In the two-process jobs
each process first draws its own default initialisation (unseeded, as a
user's processes would): the program starts from the placement's first
rank's value, as OneFlow's broadcast ``to_global`` does.

Before the fix, ``nn.Parameter(m.fc.weight)`` after ``load_state_dict``
silently trained the module's default initialisation, and parameters made
from values did not compile.
"""

import json
import os

import mlp_reference as ref
import numpy as np
import pytest
from conftest import mpiexec_available
from graphs import Train
from jobs import run_script
from test_run import fresh_seeds

HERE = os.path.abspath(__file__)
needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="needs mpiexec (MPICH)")
LR, STEPS = 0.3, 2
KEYS = ("l0.weight", "l0.bias", "l1.weight", "l1.bias")
SHAPES = {"l0.weight": (16, 8), "l0.bias": (16,), "l1.weight": (4, 16), "l1.bias": (4,)}

SCRIPT = r"""
import json
import sys

import numpy as np

import pipeflow as flow
from graphs import Train
from pipeflow import nn

layout, spelling, pseed, dseed, out = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                       int(sys.argv[4]), sys.argv[5])
LR, STEPS = 0.3, 2
rank, world = flow.env.get_rank(), flow.env.get_world_size()
B, S0, S1 = flow.sbp.broadcast, flow.sbp.split(0), flow.sbp.split(1)
PL = flow.placement("cpu", ranks=list(range(world)))
P0, P1 = flow.placement("cpu", ranks=[0]), flow.placement("cpu", ranks=[1 if world > 1 else 0])
# Each process draws its own default initialisation (as unseeded processes would).
flow.manual_seed(pseed + 7919 * rank)
# The values the spellings give (the same on every process).
rng = np.random.default_rng(pseed)
V = {"l0.weight": rng.standard_normal((16, 8)).astype(np.float32) * 0.4,
     "l0.bias": rng.standard_normal(16).astype(np.float32) * 0.1,
     "l1.weight": rng.standard_normal((4, 16)).astype(np.float32) * 0.4,
     "l1.bias": rng.standard_normal(4).astype(np.float32) * 0.1}
# TP: l0 split by output rows, l1's weight by input columns (partial sums).
TP_SBP = {"l0.weight": S0, "l0.bias": S0, "l1.weight": S1, "l1.bias": B}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0, self.relu, self.l1 = nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)

    def forward(self, x):
        h = self.relu(self.l0(x))
        if layout == "pp":
            h = h.to_global(placement=P1, sbp=[B])
        return self.l1(h)


def owner(model, key):
    mod, name = key.split(".")
    return getattr(model, mod), name


def place(model):
    # The module's layout, in place (keeps the values).
    if layout == "pp":
        model.l0.to_global(P0, [B])
        model.l1.to_global(P1, [B])
    elif layout in ("single", "tp"):
        model.to_global(P0 if layout == "single" else PL, [B])


def relayout(model):
    # TP: each parameter re-laid out as nn.Parameter(p.to_global(sbp=...)).
    if layout != "tp":
        return
    for key in KEYS:
        mod, name = owner(model, key)
        setattr(mod, name, nn.Parameter(getattr(mod, name).to_global(sbp=[TP_SBP[key]])))


KEYS = ("l0.weight", "l0.bias", "l1.weight", "l1.bias")
model = MLP()
want = None  # the values the program must start from (None: rank 0's, read below)
if spelling == "reassign":
    # The reported bug: load, then re-wrap every parameter (its value is the loaded one).
    place(model)
    model.load_state_dict({k: flow.tensor(v) for k, v in V.items()})
    for key in KEYS:
        mod, name = owner(model, key)
        setattr(mod, name, nn.Parameter(getattr(mod, name)))
    relayout(model)
    want = V
elif spelling == "from_value":
    model.l0.weight = nn.Parameter(flow.tensor(V["l0.weight"]))
    model.l0.bias = nn.Parameter(flow.from_numpy(V["l0.bias"].copy()))
    model.l1.weight = nn.Parameter(flow.tensor(V["l1.weight"].tolist()))
    model.l1.bias = nn.Parameter(flow.ones(4))
    place(model)
    relayout(model)
    want = dict(V, **{"l1.bias": np.ones(4, np.float32)})
elif spelling == "register":
    model.l0.register_parameter("bias", nn.Parameter(flow.tensor(V["l0.bias"])))
    model.l1.register_parameter("weight", nn.Parameter(flow.tensor(V["l1.weight"])))
    place(model)
    relayout(model)
    want = None
elif spelling == "to_global":
    # nn.Parameter(w.to_global(...)) on each process's own default initialisation.
    place(model)
    relayout(model)
    if layout not in ("tp",):
        for key in KEYS:
            mod, name = owner(model, key)
            p = getattr(mod, name)
            setattr(mod, name, nn.Parameter(p.to_global(p.placement, p.sbp) if p.is_global else p))
elif spelling == "shards":
    # Every rank passes its own shard of V: the logical value is spread over processes.
    assert layout == "tp"
    place(model)
    for key in KEYS:
        mod, name = owner(model, key)
        sbp = TP_SBP[key]
        value = V[key]
        if sbp is not B:
            value = np.split(value, world, axis=sbp.axis)[rank].copy()
        setattr(mod, name, nn.Parameter(flow.tensor(value).to_global(PL, [sbp])))
    want = V
elif spelling == "observed":
    # A module's own initialisation, read before the first call.
    place(model)
    relayout(model)
else:
    raise SystemExit(f"unknown spelling {spelling}")

if want is None:
    want = {k: v.numpy().copy() for k, v in model.state_dict().items()}

optimizer = flow.optim.SGD(model.parameters(), lr=LR)
drng = np.random.default_rng(dseed)
X = drng.standard_normal((8, 8)).astype(np.float32)
Y = drng.integers(0, 4, 8).astype(np.int64)
if layout == "local":
    x, y = flow.tensor(X), flow.tensor(Y)
elif layout == "pp":
    x, y = flow.tensor(X, placement=P0, sbp=[B]), flow.tensor(Y, placement=P1, sbp=[B])
else:
    where = P0 if layout == "single" else PL
    x, y = flow.tensor(X, placement=where, sbp=[B]), flow.tensor(Y, placement=where, sbp=[B])

graph = Train(model, optimizer)
losses = []
for _ in range(STEPS):
    loss = graph(x, y)
    local = loss.numpy() if layout == "local" else loss.to_local().numpy()
    losses.append(local.reshape(-1).tolist())
state = graph.state_dict()["model"]
# The rank whose value a parameter starts from: its placement's first.
roots = {k: (getattr(*owner(model, k)).placement.flat_ranks[0] if layout != "local" else 0)
         for k in KEYS}
record = {"losses": losses, "want": {k: np.asarray(v).tolist() for k, v in want.items()},
          "roots": roots,
          "final": {k: state[k].numpy().tolist() for k in KEYS},
          "after": {k: getattr(*owner(model, k)).numpy().tolist() for k in KEYS}}
with open(f"{out}/{layout}.{spelling}.{rank}.json", "w") as f:
    json.dump(record, f)
"""


def run(tmp_path, backend, layout, spelling, pseed, dseed):
    ranks = 2 if layout in ("tp", "pp") else 1
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    run_script(tmp_path, "values.py", SCRIPT, [layout, spelling, pseed, dseed, out], ranks, backend, 300)
    return [json.loads((out / f"{layout}.{spelling}.{r}.json").read_text()) for r in range(ranks)]


def numpy_run(params, dseed):
    """Per step the loss, and the parameters after STEPS SGD steps (float64)."""
    drng = np.random.default_rng(dseed)
    x = drng.standard_normal((8, 8)).astype(np.float64)
    y = drng.integers(0, 4, 8).astype(np.int64)
    params = [np.asarray(p, np.float64) for p in params]
    losses = []
    for _ in range(STEPS):
        loss, grads = ref.two_layer_grads(params, x, y)
        losses.append(loss)
        params = [p - np.float32(LR) * g for p, g in zip(params, grads, strict=True)]
    return losses, params


CASES = [("local", s) for s in ("reassign", "from_value", "register", "observed")] + \
        [("single", s) for s in ("reassign", "from_value", "to_global", "observed")] + \
        [("tp", s) for s in ("reassign", "from_value", "register", "to_global", "shards")] + \
        [("pp", s) for s in ("reassign", "from_value", "to_global")]


@pytest.mark.parametrize("layout,spelling", CASES)
def test_parameter_is_its_value(backend, tmp_path, layout, spelling):
    if layout in ("tp", "pp") and not mpiexec_available():
        pytest.skip("needs mpiexec (MPICH)")
    pseed, dseed = fresh_seeds()
    records = run(tmp_path, backend, layout, spelling, pseed, dseed)
    first = records[0]
    want = [np.array(records[first["roots"][k]]["want"][k], np.float64) for k in KEYS]
    for k, w in zip(KEYS, want, strict=True):
        assert w.shape == SHAPES[k]
    losses, final = numpy_run(want, dseed)
    got = [r["losses"] for r in records if r["losses"][0]]
    assert got, "no process reported the losses"
    what = f"{layout} {spelling}, seeds {pseed} {dseed}"
    for g in got:
        np.testing.assert_allclose(np.array(g).reshape(-1), losses, rtol=2e-6, err_msg=what)
    for k, f in zip(KEYS, final, strict=True):
        np.testing.assert_allclose(np.array(first["final"][k]), f, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{k}: {what}")
        np.testing.assert_allclose(np.array(first["after"][k]), f, rtol=1e-5, atol=1e-6,
                                   err_msg=f"param.numpy() of {k}: {what}")
    if layout in ("tp", "pp") and spelling in ("to_global", "register"):
        # Each process drew its own initialisation: the program used the root's.
        other = [np.array(records[1 - first["roots"][k]]["want"][k]) for k in KEYS]
        assert any(not np.array_equal(a, b) for a, b in zip(want, other, strict=True)), what


def test_tied_weights_train_as_one(backend, tmp_path):
    """Two layers sharing one weight (``l1.weight = l0.weight``, as a GPT ties
    its embedding and head), given from values: one parameter, whose gradient
    is the sum of both uses."""
    import pipeflow as flow
    from pipeflow import nn
    pseed, dseed = fresh_seeds()
    rng = np.random.default_rng(pseed)
    w = rng.standard_normal((8, 8)).astype(np.float32) * 0.4
    b0, b1 = (rng.standard_normal(8).astype(np.float32) * 0.1 for _ in range(2))
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
    model[0].weight = nn.Parameter(flow.tensor(w))
    model[2].weight = model[0].weight
    model[0].bias, model[2].bias = nn.Parameter(flow.tensor(b0)), nn.Parameter(flow.tensor(b1))
    assert len(list(model.parameters())) == 3
    opt = flow.optim.SGD(model.parameters(), lr=LR)
    drng = np.random.default_rng(dseed)
    x = drng.standard_normal((8, 8)).astype(np.float32)
    y = drng.integers(0, 8, 8).astype(np.int64)
    graph = Train(model, opt)
    got = [float(graph(flow.tensor(x), flow.tensor(y)).numpy()) for _ in range(STEPS)]
    p = [w.astype(np.float64), b0.astype(np.float64), b1.astype(np.float64)]
    want = []
    for _ in range(STEPS):
        loss, (dw0, db0, dw1, db1) = ref.two_layer_grads([p[0], p[1], p[0], p[2]], x.astype(np.float64), y)
        want.append(loss)
        p = [p[0] - np.float32(LR) * (dw0 + dw1), p[1] - np.float32(LR) * db0, p[2] - np.float32(LR) * db1]
    what = f"seeds {pseed} {dseed}"
    np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=what)
    np.testing.assert_allclose(model[2].weight.numpy(), p[0], rtol=1e-5, atol=1e-6, err_msg=what)
    assert model[2].weight is model[0].weight


def test_untouched_initialisation_keeps_its_recipe():
    """The optimisation stays for parameters nobody has set: a fresh module's
    parameters are compiled with their initializer, and once read, shared
    or loaded a parameter is compiled with its value."""
    import pipeflow as flow
    from pipeflow import nn
    from pipeflow._trained import uses_recipe
    m = nn.Linear(4, 3)
    assert uses_recipe(m.weight) and uses_recipe(m.bias)
    m.weight.numpy()
    assert not uses_recipe(m.weight) and uses_recipe(m.bias)
    m.bias.detach()
    assert not uses_recipe(m.bias)
    n = nn.Linear(4, 3)
    n.load_state_dict({"weight": flow.zeros(3, 4), "bias": flow.zeros(3)})
    assert not uses_recipe(n.weight)
    # Re-wrapping an untouched parameter moves its initializer to the new
    # one (the old one's value is shared, so it is the user's from now on);
    # re-wrapping a loaded one gives the value.
    k = nn.Linear(4, 3)
    w = k.weight
    k.weight = nn.Parameter(w)
    assert not uses_recipe(w) and uses_recipe(k.weight)
    t = k.weight.to_global(flow.placement("cpu", [0]), flow.sbp.broadcast)
    assert uses_recipe(t) and not uses_recipe(k.weight)
    n.weight = nn.Parameter(n.weight)
    assert not uses_recipe(n.weight)
    nn.init.normal_(n.weight, 0.0, 0.02)
    assert uses_recipe(n.weight)
