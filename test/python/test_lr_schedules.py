"""Learning-rate schedules (issue 35, item 6): torch.optim.lr_scheduler's
semantics, and graphs that follow them without recompiling.

- Against PyTorch 1.13 (Debian's python3-torch): for every scheduler, random
  argument draws (seed printed; ``PF_LR_SEED=N`` replays one) over two or
  three parameter groups, ``get_last_lr()``, the groups' rates,
  ``last_epoch`` (and OneCycleLR's momentum) after each of 30 steps equal
  torch's exactly; ``state_dict()`` holds torch's keys and a scheduler
  rebuilt from it carries on as torch's does; resuming with ``last_epoch``
  and ``step(epoch)`` (closed forms) agree too.
- End to end, per family: a small graph trains several steps with the
  schedule (given as ``lr_sch``, stepped by hand, or nanoGPT's warm-up
  then cosine written into ``param_groups`` every iteration) and its losses
  equal a float64 NumPy reference fed the same rates; the graph is traced,
  compiled and loaded exactly once.
- OneCycleLR cycling the momentum, which the compiled step holds fixed, is a
  CompileError at the scheduler's line.
"""

import math
import os
import random
import warnings

import mlp_reference as ref
import numpy as np
import pytest
import torch
from conftest import line_of
from graphs import MLP, Train

import pipeflow as flow
from pipeflow import _runtime, compiler, nn
from pipeflow.nn._graph import tracing

HERE = os.path.abspath(__file__)
P0 = flow.placement("cpu", ranks=[0])
B = [flow.sbp.broadcast]
TOL = 1e-5
STEPS = 30


def seed():
    return int(os.environ.get("PF_LR_SEED") or random.randrange(2**31))


# Against torch.optim.lr_scheduler ----------------------------------------------------

def optimizers(rng, kind):
    """A torch optimizer and a pipeflow one with the same groups and rates."""
    lrs = [rng.choice([0.1, 0.05, 1.0, 0.003]) * rng.uniform(0.5, 2.0) for _ in range(rng.randint(2, 3))]
    tparams = [torch.nn.Parameter(torch.zeros(2)) for _ in lrs]
    fparams = [nn.Linear(2, 2).weight for _ in lrs]
    cls = {"sgd": (torch.optim.SGD, flow.optim.SGD), "adam": (torch.optim.Adam, flow.optim.Adam)}[kind]
    extra = {"momentum": 0.9} if kind == "sgd" else {}
    topt = cls[0]([{"params": [p], "lr": lr} for p, lr in zip(tparams, lrs, strict=True)], lr=lrs[0], **extra)
    fopt = cls[1]([{"params": [p], "lr": lr} for p, lr in zip(fparams, lrs, strict=True)], lr=lrs[0], **extra)
    return topt, fopt


def _lambda_table(rng):
    a, b = rng.uniform(0.8, 0.99), rng.randint(2, 6)
    return [lambda e: a ** e, lambda e: 1.0 / (1 + e // b), lambda e: min(1.0, (e + 1) / b)]


def _one_cycle(rng, n_groups):
    cycle = rng.random() < 0.5
    kwargs = dict(pct_start=rng.choice([0.1, 0.25, 0.3, 0.5]), anneal_strategy=rng.choice(["cos", "linear"]),
                  cycle_momentum=cycle, div_factor=rng.choice([10.0, 25.0, 4.0]),
                  final_div_factor=rng.choice([1e4, 100.0]), three_phase=rng.random() < 0.5)
    if cycle:
        kwargs.update(base_momentum=rng.uniform(0.7, 0.85), max_momentum=rng.uniform(0.9, 0.99))
    max_lr = [rng.uniform(0.1, 1.0) for _ in range(n_groups)] if rng.random() < 0.5 else rng.uniform(0.1, 1.0)
    if rng.random() < 0.5:
        kwargs["total_steps"] = STEPS + rng.randint(0, 5)
    else:
        kwargs.update(epochs=3, steps_per_epoch=10 + rng.randint(0, 3))
    return lambda L, o: L.OneCycleLR(o, max_lr, **kwargs)


def draw(name, rng, n_groups):
    """``make(lr_scheduler_module, optimizer)`` for one random argument draw."""
    pick = rng.choice
    if name == "LambdaLR":
        fns = _lambda_table(rng)
        fn = [pick(fns) for _ in range(n_groups)] if rng.random() < 0.5 else pick(fns)
        return lambda L, o: L.LambdaLR(o, fn)
    if name == "MultiplicativeLR":
        factor = rng.uniform(0.8, 1.0)
        return lambda L, o: L.MultiplicativeLR(o, lambda e: factor)
    if name == "StepLR":
        step_size, gamma = rng.randint(1, 7), rng.uniform(0.1, 0.9)
        return lambda L, o: L.StepLR(o, step_size, gamma)
    if name == "MultiStepLR":
        milestones, gamma = [rng.randint(1, STEPS) for _ in range(rng.randint(1, 4))], rng.uniform(0.1, 0.9)
        return lambda L, o: L.MultiStepLR(o, milestones, gamma)
    if name == "ConstantLR":
        factor, total = rng.uniform(0.05, 1.0), rng.randint(1, 10)
        return lambda L, o: L.ConstantLR(o, factor, total)
    if name == "LinearLR":
        start, end, total = rng.uniform(0.01, 1.0), rng.uniform(0.01, 1.0), rng.randint(1, 20)
        return lambda L, o: L.LinearLR(o, start_factor=start, end_factor=end, total_iters=total)
    if name == "ExponentialLR":
        gamma = rng.uniform(0.8, 0.99)
        return lambda L, o: L.ExponentialLR(o, gamma)
    if name == "PolynomialLR":
        total, power = rng.randint(1, 25), rng.uniform(0.5, 3.0)
        return lambda L, o: L.PolynomialLR(o, total_iters=total, power=power)
    if name == "CosineAnnealingLR":
        t_max, eta_min = rng.randint(1, 12), pick([0, 0.0, 1e-4 * rng.random()])
        return lambda L, o: L.CosineAnnealingLR(o, T_max=t_max, eta_min=eta_min)
    if name == "CosineAnnealingWarmRestarts":
        t0, mult, eta_min = rng.randint(1, 8), rng.randint(1, 3), pick([0, 1e-3 * rng.random()])
        return lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=t0, T_mult=mult, eta_min=eta_min)
    if name == "OneCycleLR":
        return _one_cycle(rng, n_groups)
    if name == "SequentialLR":
        warm, factor = rng.randint(1, 8), rng.uniform(0.01, 0.5)
        t_max, gamma, second = rng.randint(2, 20), rng.uniform(0.5, 0.95), rng.randint(9, 20)
        three = rng.random() < 0.5

        def make(L, o):
            parts = [L.LinearLR(o, start_factor=factor, total_iters=warm),
                     L.CosineAnnealingLR(o, T_max=t_max, eta_min=1e-5)]
            if three:
                parts.append(L.ExponentialLR(o, gamma))
            return L.SequentialLR(o, parts, [warm, second][:len(parts) - 1])
        return make
    if name == "ChainedScheduler":
        factor, total, gamma = rng.uniform(0.1, 0.9), rng.randint(1, 8), rng.uniform(0.8, 0.99)
        return lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor, total), L.ExponentialLR(o, gamma)])
    raise AssertionError(name)


SCHEDULERS = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
              "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
              "OneCycleLR", "SequentialLR", "ChainedScheduler"]


def groups(opt):
    """Every group's rate, momentum and betas."""
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def trace_both(tsched, fsched, topt, fopt, steps, where):
    """Steps both schedulers ``steps`` times, comparing everything visible."""
    for step in range(steps + 1):
        if step:
            topt.step()
            tsched.step()
            fsched.step()
        at = f"{where}, after {step} steps"
        assert fsched.get_last_lr() == tsched.get_last_lr(), at
        # torch's betas may be a list; ours are a tuple
        assert groups(fopt) == [(lr, m, tuple(b) if b else b) for lr, m, b in groups(topt)], at
        if hasattr(tsched, "last_epoch"):
            assert fsched.last_epoch == tsched.last_epoch, at


@pytest.mark.parametrize("name", SCHEDULERS)
def test_schedule_equals_torch(name):
    """Five random argument draws per scheduler; SGD (momentum) or Adam groups."""
    for _ in range(5):
        s = seed()
        rng = random.Random(s)
        kind = rng.choice(["sgd", "adam"])
        topt, fopt = optimizers(rng, kind)
        make = draw(name, rng, len(topt.param_groups))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's SequentialLR warns at its milestones
            tsched = make(torch.optim.lr_scheduler, topt)
            fsched = make(flow.optim.lr_scheduler, fopt)
            trace_both(tsched, fsched, topt, fopt, STEPS, f"{name}, PF_LR_SEED={s} ({kind})")


def resume(make, fsched, fopt, s):
    """``(scheduler, optimizer)``: a scheduler ``make`` makes afresh on a
    fresh SGD optimizer (drawn from seed ``s``), given ``fopt``'s groups (but
    their parameters) and ``fsched``'s state dict."""
    state = fsched.state_dict()
    saved = [{k: v for k, v in g.items() if k != "params"} for g in fopt.param_groups]
    _, fresh = optimizers(random.Random(s), "sgd")
    resumed = make(flow.optim.lr_scheduler, fresh)
    for g, kept in zip(fresh.param_groups, saved, strict=True):
        g.update(kept)
    resumed.load_state_dict(state)
    return resumed, fresh


@pytest.mark.parametrize("name", SCHEDULERS)
def test_state_dict_is_torchs_and_resumes(name):
    """The state dict has torch's keys (OneCycleLR keeps its anneal_strategy,
    not a bound method); loaded into a scheduler made afresh on a fresh
    optimizer (whose groups are loaded too) it carries on as torch's."""
    s = seed()
    rng = random.Random(s)
    topt, fopt = optimizers(rng, "sgd")
    make = draw(name, rng, len(topt.param_groups))
    k = rng.randint(1, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tsched = make(torch.optim.lr_scheduler, topt)
        fsched = make(flow.optim.lr_scheduler, fopt)
        trace_both(tsched, fsched, topt, fopt, k, f"{name}, PF_LR_SEED={s}")
        tkeys, fkeys = set(tsched.state_dict()), set(fsched.state_dict())
        if name == "OneCycleLR":
            tkeys = tkeys - {"anneal_func"} | {"anneal_strategy"}
        assert fkeys == tkeys
        resumed, fresh = resume(make, fsched, fopt, s)
        trace_both(tsched, resumed, topt, fresh, STEPS - k, f"{name} resumed, PF_LR_SEED={s}")


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
                                  "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts"])
def test_step_with_an_epoch_uses_the_closed_form(name):
    s = seed()
    rng = random.Random(s)
    topt, fopt = optimizers(rng, "adam")
    make = draw(name, rng, len(topt.param_groups))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tsched, fsched = make(torch.optim.lr_scheduler, topt), make(flow.optim.lr_scheduler, fopt)
        for epoch in [rng.randint(0, 40) for _ in range(8)] + [2.5, 7.25]:
            if name != "CosineAnnealingWarmRestarts" and isinstance(epoch, float):
                continue
            tsched.step(epoch)
            fsched.step(epoch)
            assert fsched.get_last_lr() == tsched.get_last_lr(), f"PF_LR_SEED={s} epoch {epoch}"
    if name != "CosineAnnealingWarmRestarts":  # whose step(epoch) is not deprecated
        with pytest.warns(UserWarning, match="epoch parameter"):
            fsched.step(3)


def test_resuming_with_last_epoch_and_oneflow_names():
    """``last_epoch=k`` (needs ``initial_lr``) starts at step k + 1, as torch's;
    ``last_step`` is OneFlow's name for it (argument and attribute)."""
    topt, fopt = optimizers(random.Random(1), "sgd")
    for g in topt.param_groups + fopt.param_groups:
        g["initial_lr"] = g["lr"] * 2
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10, last_epoch=4)
    fsched = flow.optim.lr_scheduler.CosineAnnealingLR(fopt, T_max=10, last_step=4)
    assert fsched.last_step == fsched.last_epoch == 5
    trace_both(tsched, fsched, topt, fopt, 10, "resumed at 4")
    fresh = flow.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(KeyError, match="initial_lr"):
        flow.optim.lr_scheduler.StepLR(fresh, 2, last_epoch=3)
    with pytest.warns(UserWarning, match="get_last_lr"):
        fsched.get_lr()
    assert flow.optim.lr_scheduler._LRScheduler is flow.optim.lr_scheduler.LRScheduler


def test_lambda_state_saves_callable_objects_only():
    class Decay:
        def __init__(self):
            self.rate = 0.5

        def __call__(self, epoch):
            return self.rate ** epoch

    decay = Decay()
    opt = flow.optim.SGD([{"params": nn.Linear(2, 2).parameters()}, {"params": nn.Linear(2, 2).parameters()}],
                         lr=1.0)
    sched = flow.optim.lr_scheduler.LambdaLR(opt, [decay, lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None] and "optimizer" not in state
    decay.rate = 0.9
    sched.load_state_dict(state)
    assert decay.rate == 0.5 and "lr_lambdas" in state


def test_one_cycle_momentum_against_torch_and_its_errors():
    """cycle_momentum needs an optimizer with momentum or betas; the momentum
    it writes (SGD's momentum, Adam's beta1) equals torch's (checked in
    trace_both); OneCycleLR's own argument checks are torch's."""
    for name in ("sgd", "adam"):
        topt, fopt = optimizers(random.Random(2), name)
        make = lambda L, o: L.OneCycleLR(o, 1.0, total_steps=20, base_momentum=0.8)  # noqa: E731
        trace_both(make(torch.optim.lr_scheduler, topt), make(flow.optim.lr_scheduler, fopt),
                   topt, fopt, 20, name)
    _, fopt = optimizers(random.Random(2), "sgd")
    L = flow.optim.lr_scheduler
    for kwargs, match in ((dict(), "total_steps OR"), (dict(total_steps=0), "positive integer total_steps"),
                          (dict(total_steps=5, pct_start=1), "pct_start"),
                          (dict(total_steps=5, anneal_strategy="exp"), "anneal_strategy")):
        with pytest.raises(ValueError, match=match):
            L.OneCycleLR(fopt, 1.0, **kwargs)
    sched = L.OneCycleLR(fopt, 1.0, total_steps=2, cycle_momentum=False)
    sched.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


# End to end: graphs follow the schedule without recompiling --------------------------

@pytest.fixture
def compiles(monkeypatch):
    """Counts traces, compiles, artifact builds and program loads."""
    counts = {"trace": 0, "compile": 0, "build": 0, "load": 0}

    def counting(key, fn):
        def wrapped(*args, **kwargs):
            counts[key] += 1
            return fn(*args, **kwargs)
        return wrapped

    monkeypatch.setattr(tracing, "trace", counting("trace", tracing.trace))
    monkeypatch.setattr(compiler, "compile_ir", counting("compile", compiler.compile_ir))
    monkeypatch.setattr(compiler, "build_cpu_artifacts", counting("build", compiler.build_cpu_artifacts))
    init = _runtime.Program.__init__
    monkeypatch.setattr(_runtime.Program, "__init__", counting("load", init))
    return counts


def problem(pseed, dseed):
    """The model (parameters from their initializers, untouched), data as
    numpy and as global tensors, and the float32 initial values."""
    flow.manual_seed(pseed)
    model = MLP(16, 32, 10).to_global(P0, B)
    rng = np.random.default_rng(dseed)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    y = rng.integers(0, 10, 16).astype(np.int64)
    params = [ref.linear_init(pseed, "model.fc1", 16, 32), ref.linear_init(pseed, "model.fc2", 32, 10)]
    return model, x, y, flow.tensor(x).to_global(P0, B), flow.tensor(y).to_global(P0, B), params


def train_and_check(setup, make_reference, steps, before_step=None, after_step=None, attempts=6):
    """Trains ``steps`` calls of a graph made by ``setup(model) -> (graph,
    optimizer)``; ``before_step(it, optimizer)`` / ``after_step`` run around
    each call (hand-written schedules). The losses equal the float64
    reference fed the rates each call saw (every group's, which
    ``make_reference(lrs_of_group)`` gets), and the graph compiled once."""
    for _ in range(attempts):
        pseed, dseed = seed(), seed()
        model, x, y, gx, gy, params = problem(pseed, dseed)
        graph, optimizer = setup(model)
        lrs, losses = [], []
        for it in range(steps):
            if before_step is not None:
                before_step(it, optimizer)
            lrs.append([g["lr"] for g in optimizer.param_groups])
            losses.append([float(graph(gx, gy).numpy())])
            if after_step is not None:
                after_step(it, optimizer)
        group_lrs = [list(col) for col in zip(*lrs, strict=True)]
        want = ref.train(params, x, y, group_lrs[0], 1, make_reference(group_lrs), relu_last=False)
        err = ref.max_relative_error(losses, want)
        def reference(rates=group_lrs):
            return make_reference(rates)

        if err >= TOL and ref.ill_conditioned(params, x, y, group_lrs[0], 1, reference, want, TOL,
                                              relu_last=False):
            print(f"seeds {pseed} {dseed}: error {err:.1e}, ill-conditioned; drawing another problem")
            continue
        assert err < TOL, f"seeds {pseed} {dseed}: error {err:.2e}\n{losses}\n{want}\nlrs {lrs}"
        assert len({tuple(r) for r in lrs}) > 2, f"the schedule did not change the rate: {lrs}"
        return graph, lrs
    pytest.fail(f"{attempts} problems in a row were ill-conditioned")


class PerStepRates:
    """A reference optimizer whose rate at step t is ``lrs[t - 1]`` per group
    (group 0 holds the weights, group 1 the biases when there are two)."""

    def __init__(self, group_lrs, rules):
        self.group_lrs = group_lrs
        self.rules = rules

    def update(self, key, p, g, lr, t):
        group = key[1] if len(self.group_lrs) > 1 else 0
        lr = float(np.float32(self.group_lrs[group][t - 1]))
        return self.rules[group].update(key, p, g, lr, t)


def assert_compiled_once(graph, counts):
    assert counts == {"trace": 1, "compile": 1, "build": 1, "load": 1}, counts
    assert graph._run.steps > 1


@pytest.mark.parametrize("family", ["LambdaLR", "LinearLR", "SequentialLR", "OneCycleLR",
                                    "OneCycleLR-three-phase"])
def test_scheduler_given_to_the_graph_trains_as_numpy(backend, compiles, family):
    """``add_optimizer(optimizer, lr_sch=scheduler)``: the graph steps the
    scheduler after every call and the next step reads the new rate."""
    steps = 8

    def setup(model):
        if family == "LambdaLR":
            opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            sched = flow.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.7 ** e)
        elif family == "LinearLR":
            opt = flow.optim.Adam(model.parameters(), lr=0.01)
            sched = flow.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5)
        elif family == "SequentialLR":
            opt = flow.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
            L = flow.optim.lr_scheduler
            sched = L.SequentialLR(opt, [L.LinearLR(opt, 0.2, total_iters=3),
                                         L.CosineAnnealingLR(opt, T_max=4, eta_min=1e-3)], milestones=[3])
        else:
            opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            sched = flow.optim.lr_scheduler.OneCycleLR(
                opt, max_lr=0.2, total_steps=steps, cycle_momentum=False,
                three_phase=family.endswith("three-phase"), anneal_strategy="linear")
        return Train(model, opt, lr_sch=sched), opt

    rules = {"LambdaLR": lambda: ref.Optimizer("sgd", momentum=0.9),
             "LinearLR": lambda: ref.Optimizer("adam"),
             "SequentialLR": lambda: ref.Optimizer("adamw", weight_decay=0.1)}.get(
        family, lambda: ref.Optimizer("sgd", momentum=0.9))
    graph, _ = train_and_check(setup, lambda lrs: PerStepRates(lrs, [rules()]), steps)
    assert_compiled_once(graph, compiles)


def test_warm_restarts_stepped_by_hand_trains_as_numpy(backend, compiles):
    """A scheduler the program steps itself (not given to the graph), with
    fractional epochs as torch's documentation steps it within an epoch."""
    iters = 3

    def setup(model):
        opt = flow.optim.SGD(model.parameters(), lr=0.1)
        setup.sched = flow.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
        return Train(model, opt), opt

    def after(it, opt):
        setup.sched.step((it + 1) // iters + ((it + 1) % iters) / iters)

    graph, _ = train_and_check(setup, lambda lrs: PerStepRates(lrs, [ref.Optimizer("sgd")]), 10,
                               after_step=after)
    assert_compiled_once(graph, compiles)


def nanogpt_lr(it, learning_rate=6e-3, warmup_iters=3, lr_decay_iters=8, min_lr=6e-4):
    """nanoGPT's get_lr: linear warm-up, then cosine decay to min_lr."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def test_hand_written_warmup_cosine_into_param_groups(backend, compiles):
    """nanoGPT's loop: ``lr = get_lr(it); for g in optimizer.param_groups:
    g["lr"] = lr`` before every step, AdamW with weight decay on the weights
    only (two groups, so two run-time scalars), and no recompilation."""
    def setup(model):
        weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
        biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
        opt = flow.optim.AdamW([{"params": weights, "weight_decay": 0.1},
                                {"params": biases, "weight_decay": 0.0}], lr=6e-3, betas=(0.9, 0.95))
        return Train(model, opt), opt

    def before(it, opt):
        lr = nanogpt_lr(it)
        for group in opt.param_groups:
            group["lr"] = lr

    def reference(lrs):
        return PerStepRates(lrs, [ref.Optimizer("adamw", weight_decay=0.1, betas=(0.9, 0.95)),
                                  ref.Optimizer("adamw", weight_decay=0.0, betas=(0.9, 0.95))])

    graph, lrs = train_and_check(setup, reference, 11, before_step=before)
    assert [r[0] for r in lrs] == [nanogpt_lr(it) for it in range(11)]
    assert_compiled_once(graph, compiles)
    assert graph._run.call_check.recomputed == 1  # the rates are not in the fingerprint


def test_one_cycle_cycling_the_momentum_is_an_error_at_its_line(backend):
    """The momentum is compiled into the step: a OneCycleLR that cycles it is
    a CompileError at its line when the graph first runs; one whose momentum
    stays (base_momentum == max_momentum) trains, and one made after the
    first call that would change the compiled momentum fails where it is made."""
    model, _, _, gx, gy, _ = problem(1, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = flow.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)  # <-- cycling
    with pytest.raises(flow.CompileError, match=r"OneCycleLR\(cycle_momentum=True\) changes the momentum "
                                                r"of SGD's parameter groups.*only the learning rate is a "
                                                r"run-time scalar") as info:
        Train(model, opt, lr_sch=sched)(gx, gy)
    assert info.value.lineno == line_of(HERE, "cycling") and "cycle_momentum=False" in str(info.value)

    model, _, _, gx, gy, _ = problem(1, 2)
    opt = flow.optim.Adam(model.parameters(), lr=0.01)
    steady = flow.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=10, base_momentum=0.9,
                                                max_momentum=0.9)
    graph = Train(model, opt, lr_sch=steady)
    for _ in range(3):
        graph(gx, gy)
    assert opt.param_groups[0]["betas"][0] == 0.9 and steady.last_epoch == 3
    with pytest.raises(flow.CompileError, match=r"changes the betas\[0\] of Adam") as info:
        flow.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=10)  # <-- late
    assert info.value.lineno == line_of(HERE, "late")
