"""Deferred initialisation (``nn.init.deferred()``): a model of any size is
built and laid out without drawing its values (issue 39: GPT-2 XL's plan is
compiled in CI without 1.5 billion draws in Python).

Inside ``deferred()`` the random initializers record their recipe and draw
nothing: the generator does not move and the arrays stay untouched. A
compiled graph computes untouched parameters from their recipe, as it does
for an eager model's, so the two train alike to the bit; a value read first
in Python is drawn then, from the initializer's distribution, and the graph
then starts from exactly that value.
"""

import mlp_reference as ref
import numpy as np
from graphs import Train
from test_run import fresh_seeds

import pipeflow as flow
from pipeflow import _deferred, nn
from pipeflow._random import default_generator
from pipeflow._trained import uses_recipe


def state():
    return default_generator().bit_generator.state


def pending(p):
    return _deferred.is_pending(p._storage_raw())


def test_deferred_modules_draw_nothing_until_read():
    flow.manual_seed(1)
    before = state()
    with nn.init.deferred():
        big = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024))
        nn.init.normal_(big[2].weight, 0.0, 0.02)  # replaces the pending default
        nn.init.zeros_(big[2].bias)                # constants are written at once
    big.to_global(placement=flow.placement("cpu", ranks=[0, 1]), sbp=flow.sbp.broadcast)
    big[0].weight = nn.Parameter(big[0].weight.to_global(sbp=flow.sbp.split(0)))
    assert state() == before, "deferred() drew values"
    assert all(uses_recipe(p) for p in big.parameters())
    assert [pending(p) for p in big.parameters()] == [True, True, True, False]
    assert not np.any(big[2].bias.numpy())
    # Out of deferred(), initializers draw at once again.
    eager = nn.Linear(8, 8)
    assert not pending(eager.weight) and state() != before
    # The first read draws: the default U(-1/32, 1/32), the replaced N(0, 0.02).
    w0 = big[0].weight.numpy()
    assert not pending(big[0].weight) and not uses_recipe(big[0].weight)
    assert np.abs(w0).max() <= 1 / 32 and abs(w0.std() - (1 / 32) / np.sqrt(3)) < 1e-3
    assert np.array_equal(big[0].weight.numpy(), w0), "a second read drew again"
    w2 = big[2].state_dict()["weight"].numpy()
    assert abs(w2.std() - 0.02) < 2e-4 and abs(w2.mean()) < 2e-4
    assert pending(big[0].bias)  # never read: still no value


def train(deferred, read):
    """Two SGD steps of an MLP made with or without deferred() from SEED;
    with ``read``, every parameter is read first (and returned)."""
    flow.manual_seed(SEED[0])
    if deferred:
        with nn.init.deferred():
            model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    else:
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    start = [p.numpy().copy() for p in model.parameters()] if read else None
    graph = Train(model, flow.optim.SGD(model.parameters(), lr=0.3))
    rng = np.random.default_rng(SEED[1])
    x = rng.standard_normal((8, 8)).astype(np.float32)
    y = rng.integers(0, 4, 8).astype(np.int64)
    losses = [float(graph(flow.tensor(x), flow.tensor(y)).numpy()) for _ in range(2)]
    return model, losses, start, (x, y)


SEED = [0, 0]


def test_a_deferred_model_trains_as_the_eager_one(backend):
    SEED[:] = fresh_seeds()
    eager, eager_losses, _, _ = train(False, False)
    late, late_losses, _, _ = train(True, False)
    assert late_losses == eager_losses, SEED
    for a, b in zip(eager.parameters(), late.parameters(), strict=True):
        assert np.array_equal(a.numpy(), b.numpy()), SEED


def test_deferred_values_read_first_are_the_ones_trained(backend):
    """Values read before the call were drawn then (from the initializers'
    distributions); the program starts from exactly them."""
    SEED[:] = fresh_seeds()
    model, losses, start, (x, y) = train(True, True)
    bounds = [1 / np.sqrt(8)] * 2 + [1 / 4] * 2
    for value, bound in zip(start, bounds, strict=True):
        assert np.abs(value).max() <= bound and value.std() > bound / 4, SEED
    params = [np.asarray(p, np.float64) for p in start]
    want = []
    for _ in range(2):
        loss, grads = ref.two_layer_grads(params, x.astype(np.float64), y)
        want.append(loss)
        params = [p - np.float32(0.3) * g for p, g in zip(params, grads, strict=True)]
    np.testing.assert_allclose(losses, want, rtol=2e-6, err_msg=str(SEED))
    for p, w in zip(model.parameters(), params, strict=True):
        np.testing.assert_allclose(p.numpy(), w, rtol=1e-5, atol=1e-6, err_msg=str(SEED))
