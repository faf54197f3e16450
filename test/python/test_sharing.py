"""Graphs that share modules share parameters (issue 17): a training graph
and an evaluation graph over one module, local and global, against a
float64 NumPy reference; load_state_dict reaches both. The MLP has dropout:
the training graph runs it in train mode (the reference draws the program's
masks with the generator's twin, runtime/python/pfrt_philox.py) and the
evaluation graph in eval mode (no dropout)."""

import os
import sys

import mlp_reference as ref
import numpy as np
from graphs import Infer, Train
from test_run import fresh_seeds

import pipeflow as flow
from pipeflow import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "runtime", "python"))
import pfrt_philox as ph  # noqa: E402

P_DROP = 0.25
LR = 0.1
P0 = flow.placement("cpu", ranks=[0])


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Dropout(P_DROP), nn.Linear(16, 3))


def params_of(model):
    sd = model.state_dict()
    return [sd[k].numpy().astype(np.float64) for k in ("0.weight", "0.bias", "3.weight", "3.bias")]


def logits(params, a):
    w0, b0, w1, b1 = params
    return np.maximum(a @ w0.T + b0, 0) @ w1.T + b1


def mask(seed, step, shape):
    """The training program's dropout multiplier in ``step`` (one dropout,
    stream 1, one micro-batch)."""
    stream = ph.stream_for_step(ph.stream_for_step(1, step), 0)
    u = ph.init_param(ph.INIT_UNIFORM, 0.0, 1.0, seed, stream, shape)
    return np.where(u >= np.float32(P_DROP), np.float64(np.float32(1 / (1 - P_DROP))), 0.0)


def sgd_step(params, a, labels, keep):
    """One SGD step with mean cross-entropy and the dropout multiplier ``keep``."""
    loss, grads = ref.two_layer_grads(params, a, labels, keep=keep)
    return loss, [w - LR * g for w, g in zip(params, grads, strict=True)]


def run(backend, place):
    """Eval, three training steps, eval, two more steps, eval; checks each
    against the reference. ``place`` makes a tensor global (or leaves it)."""
    pseed, dseed = fresh_seeds()
    where = f"seeds {pseed} {dseed}"
    flow.manual_seed(pseed)
    model = mlp()
    place_module = place(None)
    if place_module is not None:
        model.to_global(*place_module)
    rng = np.random.default_rng(dseed)
    a = rng.standard_normal((8, 6)).astype(np.float32)
    batches = [(rng.standard_normal((8, 6)).astype(np.float32), rng.integers(0, 3, (8,)))
               for _ in range(5)]
    train, evaluate = Train(model, lr=LR), Infer(model)
    model.eval()
    out = evaluate(place(flow.tensor(a)))
    params = params_of(model)  # the compiled program's initial values (read back)
    np.testing.assert_allclose(out.numpy(), logits(params, a), rtol=1e-5, atol=1e-5, err_msg=where)
    step = 0
    for rounds in (3, 2):
        model.train()
        for _ in range(rounds):
            x, labels = batches[step]
            loss = train(place(flow.tensor(x)), place(flow.tensor(labels)))
            want, params = sgd_step(params, x.astype(np.float64), labels,
                                    mask(pseed, step, (8, 16)))
            np.testing.assert_allclose(float(np.asarray(loss.numpy()).reshape(-1)[0]), want,
                                       rtol=1e-5, err_msg=where)
            step += 1
        model.eval()
        # The evaluation graph computes with the trained values.
        out = evaluate(place(flow.tensor(a)))
        np.testing.assert_allclose(out.numpy(), logits(params, a), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{where}, after {step} steps")
    # Both see loaded values: load into the module, evaluate, train on.
    loaded = [rng.standard_normal(p.shape) for p in params]
    model.load_state_dict({k: flow.tensor(v.astype(np.float32)) for k, v in
                           zip(("0.weight", "0.bias", "3.weight", "3.bias"), loaded, strict=True)})
    params = [v.astype(np.float32).astype(np.float64) for v in loaded]
    out = evaluate(place(flow.tensor(a)))
    np.testing.assert_allclose(out.numpy(), logits(params, a), rtol=1e-5, atol=1e-5,
                               err_msg=f"{where}, after load_state_dict")
    model.train()
    x, labels = batches[0]
    loss = train(place(flow.tensor(x)), place(flow.tensor(labels)))
    want, params = sgd_step(params, x.astype(np.float64), labels, mask(pseed, step, (8, 16)))
    np.testing.assert_allclose(float(np.asarray(loss.numpy()).reshape(-1)[0]), want, rtol=1e-5,
                               err_msg=f"{where}, training after load_state_dict")
    # The dropout mattered: without it the first loss is off.
    assert not np.allclose(mask(pseed, 0, (8, 16)), 1.0)


def test_local_train_and_eval_graphs_share_one_module(backend):
    run(backend, lambda t: t)


def test_global_train_and_eval_graphs_share_one_module(backend):
    run(backend, lambda t: (P0, [flow.sbp.broadcast]) if t is None else t.to_global(P0, flow.sbp.broadcast))


def test_batch_norm_eval_graph_uses_the_trained_running_statistics(backend):
    """A training graph updates batch norm's running statistics; the
    evaluation graph over the same module normalises with them (eval mode)
    and leaves them as they are."""
    pseed, dseed = fresh_seeds()
    flow.manual_seed(pseed)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8, momentum=0.3), nn.ReLU(),
                          nn.Linear(8, 3))
    rng = np.random.default_rng(dseed)
    x = rng.normal(1.0, 2.0, (16, 6)).astype(np.float32)
    y = rng.integers(0, 3, 16)
    train, evaluate = Train(model, lr=LR), Infer(model)
    model.train()
    for _ in range(2):
        train(flow.tensor(x), flow.tensor(y))
    model.eval()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    assert not np.allclose(before["1.running_mean"], 0.0)  # training moved them
    out = evaluate(flow.tensor(x)).numpy()
    after = {k: v.numpy() for k, v in model.state_dict().items()}
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
    s = before
    h = x.astype(np.float64) @ s["0.weight"].T + s["0.bias"]
    h = (h - s["1.running_mean"]) / np.sqrt(s["1.running_var"] + 1e-5) * s["1.weight"] + s["1.bias"]
    want = np.maximum(h, 0) @ s["3.weight"].T + s["3.bias"]
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5, err_msg=f"seeds {pseed} {dseed}")
