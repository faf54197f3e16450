"""Optimizers (hyper-parameters and validation) and learning-rate schedules."""

import math

import pytest

import pipeflow as flow
from pipeflow import nn


def params():
    return list(nn.Linear(4, 3).parameters())


def test_sgd_records_hyperparameters():
    opt = flow.optim.SGD(params(), lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    (group,) = opt.hyperparameters()
    assert group["lr"] == 0.1 and group["momentum"] == 0.9 and group["weight_decay"] == 1e-4
    assert group["nesterov"] is True and group["dampening"] == 0.0
    assert len(opt.param_groups[0]["params"]) == 2


@pytest.mark.parametrize("kwargs,match", [
    (dict(lr=-0.1), "learning rate"),
    (dict(lr=0.1, momentum=-0.5), "momentum"),
    (dict(lr=0.1, weight_decay=-1), "weight_decay"),
    (dict(lr=0.1, nesterov=True), "Nesterov"),
    (dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov"),
    (dict(lr="fast"), "learning rate"),
])
def test_sgd_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        flow.optim.SGD(params(), **kwargs)


@pytest.mark.parametrize("cls", [flow.optim.Adam, flow.optim.AdamW])
@pytest.mark.parametrize("kwargs,match", [
    (dict(lr=-1e-3), "learning rate"),
    (dict(betas=(1.0, 0.999)), "beta1"),
    (dict(betas=(0.9, -0.1)), "beta2"),
    (dict(betas=(0.9,)), "pair"),
    (dict(eps=-1e-8), "epsilon"),
    (dict(weight_decay=-0.1), "weight_decay"),
])
def test_adam_validation(cls, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cls(params(), **kwargs)


def test_adam_and_adamw_defaults():
    adam = flow.optim.Adam(params())
    adamw = flow.optim.AdamW(params())
    assert adam.param_groups[0]["betas"] == (0.9, 0.999) and adam.param_groups[0]["weight_decay"] == 0.0
    assert adamw.param_groups[0]["weight_decay"] == 0.01 and adamw.param_groups[0]["eps"] == 1e-8


def test_parameter_groups():
    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    opt = flow.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.5}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    with pytest.raises(ValueError, match="more than one"):
        flow.optim.SGD([{"params": a.parameters()}, {"params": a.parameters()}], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        flow.optim.SGD([], lr=0.1)
    with pytest.raises(flow.BackendUnavailable):
        opt.step()


def test_step_lr_matches_closed_form():
    opt = flow.optim.SGD([{"params": nn.Linear(2, 2).parameters(), "lr": 0.1},
                          {"params": nn.Linear(2, 2).parameters(), "lr": 0.4}], lr=0.1)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    for step in range(20):
        expected = [0.1 * 0.5 ** (step // 3), 0.4 * 0.5 ** (step // 3)]
        assert sched.get_last_lr() == pytest.approx(expected)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx(expected)
        sched.step()
    with pytest.raises(ValueError):
        flow.optim.lr_scheduler.StepLR(opt, step_size=0)


def test_cosine_annealing_matches_closed_form():
    opt = flow.optim.Adam(params(), lr=0.01)
    sched = flow.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    seen = []
    for step in range(25):
        expected = 0.001 + (0.01 - 0.001) * (1 + math.cos(math.pi * step / 10)) / 2
        assert opt.param_groups[0]["lr"] == pytest.approx(expected)
        seen.append(opt.param_groups[0]["lr"])
        sched.step()
    assert seen[0] == pytest.approx(0.01) and seen[10] == pytest.approx(0.001)
    assert seen[20] == pytest.approx(0.01)  # the cosine continues past T_max
    assert all(a >= b for a, b in zip(seen[:10], seen[1:11], strict=True))


def test_scheduler_description_is_stable():
    opt = flow.optim.SGD(params(), lr=0.1)
    sched = flow.optim.lr_scheduler.StepLR(opt, step_size=2)
    first = opt.describe(lambda p: "p", sched)
    sched.step()
    sched.step()
    # lr is a run-time input of the step: the description (part of the cache key) keeps the base rate
    assert opt.describe(lambda p: "p", sched) == first
    assert first["param_groups"][0]["lr"] == 0.1 and first["lr_scheduler"]["type"] == "StepLR"
