"""CyclicLR and ReduceLROnPlateau (issue 35, item 6's remaining two
schedules): torch.optim.lr_scheduler's semantics (PyTorch 1.13, Debian's
python3-torch), and graphs that follow them without recompiling.

- Random argument draws (seed printed; ``PF_LR_SEED=N`` replays one): every
  step's rates, momenta, ``last_epoch`` (and ReduceLROnPlateau's counters)
  equal torch's exactly; the state dicts hold torch's keys and resume as
  torch's do.
- End to end: a graph given CyclicLR as ``lr_sch``, and one whose
  ReduceLROnPlateau is stepped with the loss the graph returned, train equal
  to a float64 NumPy reference fed the same rates, compiled once.
- Cycling the momentum a compiled step holds fixed, and a plateau schedule
  given to ``add_optimizer`` (the graph has no metric to step it with), are
  CompileErrors at the user's line.
"""

import math
import os
import random

import mlp_reference as ref
import numpy as np
import pytest
import torch
from conftest import line_of
from test_lr_schedules import (
    PerStepRates,
    Train,
    assert_compiled_once,
    compiles,
    optimizers,
    problem,
    resume,
    trace_both,
    train_and_check,
)

import pipeflow as flow

HERE = os.path.abspath(__file__)
STEPS = 40
assert compiles  # a fixture, used by name


def seed():
    return int(os.environ.get("PF_LR_SEED") or random.randrange(2**31))


# CyclicLR ------------------------------------------------------------------------------

def cyclic_draw(rng, n_groups, kind):
    mode = rng.choice(["triangular", "triangular2", "exp_range", "custom"])
    per_group = rng.random() < 0.5
    base = [rng.uniform(1e-4, 0.01) for _ in range(n_groups)] if per_group else rng.uniform(1e-4, 0.01)
    top = [rng.uniform(0.05, 1.0) for _ in range(n_groups)] if per_group else rng.uniform(0.05, 1.0)
    kwargs = dict(step_size_up=rng.randint(1, 9), gamma=rng.uniform(0.9, 0.999),
                  cycle_momentum=kind == "sgd" and rng.random() < 0.7)
    if rng.random() < 0.6:
        kwargs["step_size_down"] = rng.randint(1, 9)
    if mode == "custom":
        k = rng.uniform(0.3, 0.9)
        kwargs.update(scale_fn=lambda x: k ** x, scale_mode=rng.choice(["cycle", "iterations"]))
    else:
        kwargs["mode"] = mode
    if kwargs["cycle_momentum"]:
        kwargs.update(base_momentum=rng.uniform(0.6, 0.85), max_momentum=rng.uniform(0.86, 0.99))
    return lambda L, o: L.CyclicLR(o, base, top, **kwargs)


def test_cyclic_equals_torch():
    """Ten random draws: every mode, custom scale functions by cycle and by
    step, per-group bounds, SGD cycling its momentum or Adam not."""
    for _ in range(10):
        s = seed()
        rng = random.Random(s)
        kind = rng.choice(["sgd", "adam"])
        topt, fopt = optimizers(rng, kind)
        make = cyclic_draw(rng, len(topt.param_groups), kind)
        tsched, fsched = make(torch.optim.lr_scheduler, topt), make(flow.optim.lr_scheduler, fopt)
        trace_both(tsched, fsched, topt, fopt, STEPS, f"CyclicLR, PF_LR_SEED={s} ({kind})")
        assert fsched.last_epoch == STEPS


def test_cyclic_state_dict_is_torchs_and_resumes():
    s = seed()
    rng = random.Random(s)
    topt, fopt = optimizers(rng, "sgd")
    tops = [0.5, 0.2, 0.3][:len(fopt.param_groups)]
    make = lambda L, o: L.CyclicLR(o, 0.001, tops, step_size_up=3, step_size_down=5,  # noqa: E731
                                   mode="triangular2", base_momentum=0.8, max_momentum=0.95)
    tsched, fsched = make(torch.optim.lr_scheduler, topt), make(flow.optim.lr_scheduler, fopt)
    k = rng.randint(2, 12)
    trace_both(tsched, fsched, topt, fopt, k, f"PF_LR_SEED={s}")
    # torch 1.13 keeps a weak reference to its bound scale method, which
    # neither pickles nor means anything outside the object.
    assert set(fsched.state_dict()) == set(tsched.state_dict()) - {"_scale_fn_ref"}
    resumed, fresh = resume(make, fsched, fopt, s)
    trace_both(tsched, resumed, topt, fresh, STEPS - k, f"resumed, PF_LR_SEED={s}")


def test_cyclic_errors_are_torchs():
    topt, fopt = optimizers(random.Random(1), "adam")
    n = len(fopt.param_groups)
    L = flow.optim.lr_scheduler
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        L.CyclicLR(fopt, 0.01, 0.1)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        L.CyclicLR(fopt, 0.01, 0.1, mode="sawtooth", cycle_momentum=False)
    with pytest.raises(ValueError, match=f"expected {n} values for max_lr, got {n + 1}"):
        L.CyclicLR(fopt, 0.01, [0.1] * (n + 1), cycle_momentum=False)
    with pytest.raises(TypeError, match="CyclicLR needs a pipeflow optimizer"):
        L.CyclicLR(topt, 0.01, 0.1)


# ReduceLROnPlateau ----------------------------------------------------------------------

def metrics(rng, n):
    """A loss-like series: drifting down with noise, plateaus and jumps."""
    value, out = rng.uniform(1.0, 5.0), []
    for _ in range(n):
        r = rng.random()
        value = value * (1 - rng.uniform(0, 0.05)) if r < 0.4 else value if r < 0.7 else \
            value * (1 + rng.uniform(0, 0.03)) if r < 0.9 else value * (1 - 1e-6)
        out.append(value)
    return out


PLATEAU_STATE = ("best", "num_bad_epochs", "cooldown_counter", "last_epoch", "mode_worse")


def test_plateau_equals_torch():
    """Ten random draws of every argument; the metric a plain number, a
    numpy scalar or a one-element tensor."""
    reduced = 0
    for _ in range(10):
        s = seed()
        rng = random.Random(s)
        kind = rng.choice(["sgd", "adam"])
        topt, fopt = optimizers(rng, kind)
        n = len(topt.param_groups)
        kwargs = dict(mode=rng.choice(["min", "max"]), factor=rng.uniform(0.1, 0.9),
                      patience=rng.randint(0, 5), threshold=rng.choice([1e-4, 0.01, 0.1]),
                      threshold_mode=rng.choice(["rel", "abs"]), cooldown=rng.randint(0, 4),
                      min_lr=[rng.uniform(0, 0.05) for _ in range(n)] if rng.random() < 0.5 else 0.001,
                      eps=rng.choice([1e-8, 1e-3]))
        tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
        fsched = flow.optim.lr_scheduler.ReduceLROnPlateau(fopt, **kwargs)
        start = [g["lr"] for g in fopt.param_groups]
        series = metrics(rng, STEPS)
        if kwargs["mode"] == "max":
            series = [-v for v in series]
        for i, value in enumerate(series):
            given = rng.choice([value, np.float64(value), flow.tensor(np.array([value], np.float32))])
            tsched.step(float(np.float32(value)) if isinstance(given, flow.Tensor) else value)
            fsched.step(given)
            at = f"PF_LR_SEED={s}, step {i} ({kwargs})"
            assert [g["lr"] for g in fopt.param_groups] == [g["lr"] for g in topt.param_groups], at
            assert fsched.get_last_lr() == tsched._last_lr, at
            for key in PLATEAU_STATE:
                assert getattr(fsched, key) == getattr(tsched, key), (key, at)
        reduced += [g["lr"] for g in fopt.param_groups] != start
    assert reduced >= 3, "too few draws reduced a rate to test anything"


def test_plateau_reduces_and_resumes_as_torch():
    """A flat metric reduces the rate every patience + 1 + cooldown steps
    down to min_lr; a state dict (torch's keys) resumes the counters."""
    topt, fopt = optimizers(random.Random(3), "sgd")
    lows = [0.0, 0.05, 0.02][:len(fopt.param_groups)]
    kwargs = dict(factor=0.5, patience=2, cooldown=1, min_lr=lows)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **kwargs)
    fsched = flow.optim.lr_scheduler.ReduceLROnPlateau(fopt, **kwargs)
    start = [g["lr"] for g in fopt.param_groups]
    for _ in range(8):
        tsched.step(1.0)
        fsched.step(1.0)
    assert set(fsched.state_dict()) == set(tsched.state_dict())
    # Reduced at steps 4 (3 bad after the first) and 8 (1 in the cooldown + 3 bad).
    def reduced(lr, low, times):
        for _ in range(times):  # torch's rule: down by the factor, not below low
            lr = max(lr * 0.5, low) if lr - max(lr * 0.5, low) > 1e-8 else lr
        return lr
    assert [g["lr"] for g in fopt.param_groups] == [reduced(lr, low, 2) for lr, low in zip(start, lows, strict=True)]
    assert [g["lr"] for g in fopt.param_groups] != start
    state = fsched.state_dict()
    _, fresh = optimizers(random.Random(3), "sgd")
    for g, old in zip(fresh.param_groups, fopt.param_groups, strict=True):
        g["lr"] = old["lr"]
    resumed = flow.optim.lr_scheduler.ReduceLROnPlateau(fresh)
    resumed.load_state_dict(state)
    for value in [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]:
        tsched.step(value)
        resumed.step(value)
        assert [g["lr"] for g in fresh.param_groups] == [g["lr"] for g in topt.param_groups]
        assert (resumed.best, resumed.num_bad_epochs) == (tsched.best, tsched.num_bad_epochs)


def test_plateau_errors_are_torchs():
    _, fopt = optimizers(random.Random(1), "sgd")
    n = len(fopt.param_groups)
    L = flow.optim.lr_scheduler
    for kwargs, error, match in ((dict(factor=1.0), ValueError, "Factor should be < 1.0"),
                                 (dict(mode="lowest"), ValueError, "mode lowest is unknown"),
                                 (dict(threshold_mode="pct"), ValueError, "threshold mode pct is unknown"),
                                 (dict(min_lr=[0.1] * (n - 1)), ValueError, f"expected {n} min_lrs, got {n - 1}")):
        with pytest.raises(error, match=match):
            L.ReduceLROnPlateau(fopt, **kwargs)
    with pytest.raises(TypeError, match="one-element tensor"):
        L.ReduceLROnPlateau(fopt).step("low")


# End to end ------------------------------------------------------------------------------

def test_cyclic_given_to_the_graph_trains_as_numpy(backend, compiles):
    def setup(model):
        opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = flow.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.2, step_size_up=3, mode="triangular2",
                                                 cycle_momentum=False)
        return Train(model, opt, lr_sch=sched), opt

    graph, lrs = train_and_check(setup, lambda rates: PerStepRates(rates, [ref.Optimizer("sgd", momentum=0.9)]),
                                 10)
    assert [r[0] for r in lrs][:4] == pytest.approx([0.01, 0.01 + 0.19 / 3, 0.01 + 0.38 / 3, 0.2])
    assert_compiled_once(graph, compiles)


def test_plateau_stepped_with_the_graphs_loss_trains_as_numpy(backend, compiles):
    """The program steps the schedule with the loss each call returns; a
    high threshold makes the rate fall within the run."""
    def setup(model):
        opt = flow.optim.Adam(model.parameters(), lr=0.02)
        setup.sched = flow.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=0.5)
        return Train(model, opt), opt

    def after(it, opt):
        setup.sched.step(setup.last_loss)

    original = Train.__call__

    def remembering(self, *args):
        setup.last_loss = original(self, *args)
        return setup.last_loss

    Train.__call__ = remembering
    try:
        graph, lrs = train_and_check(setup, lambda rates: PerStepRates(rates, [ref.Optimizer("adam")]), 8,
                                     after_step=after)
    finally:
        Train.__call__ = original
    rates = [r[0] for r in lrs]
    assert rates[0] == 0.02 and all(b in (a, a * 0.5) for a, b in zip(rates, rates[1:], strict=False))
    assert_compiled_once(graph, compiles)


def test_momentum_cycling_and_plateau_as_lr_sch_are_errors_at_their_lines(backend):
    model, _, _, gx, gy, _ = problem(1, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = flow.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1)  # <-- cycling
    with pytest.raises(flow.CompileError, match=r"CyclicLR\(cycle_momentum=True\) changes the momentum "
                                                r"of SGD's parameter groups") as info:
        Train(model, opt, lr_sch=sched)(gx, gy)
    assert info.value.lineno == line_of(HERE, "cycling") and "cycle_momentum=False" in str(info.value)

    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    plateau = flow.optim.lr_scheduler.ReduceLROnPlateau(opt)
    with pytest.raises(flow.CompileError, match="ReduceLROnPlateau steps with a metric") as info:
        flow.nn.Graph().add_optimizer(opt, lr_sch=plateau)  # <-- plateau
    assert info.value.lineno == line_of(HERE, "plateau") and "scheduler.step(loss)" in str(info.value)
    assert not math.isfinite(plateau.best)  # never stepped
