"""Trained state read back from compiled graphs, loaded into them, and checkpoints.

``graph.state_dict()`` after training against a float64 NumPy reference;
``module.state_dict()``, ``param.numpy()`` and ``optimizer.state_dict()``
reading the trained values; ``load_state_dict`` before and after the first
call; ``flow.save``/``flow.load`` checkpoints resumed by a new graph (in
another layout, under the launcher) with the losses of the uninterrupted
run; checkpoints exchanged with ``pf-run --save/--load``; located errors.
Every test draws fresh seeds (printed on failure).
"""

import json
import os
import subprocess

import mlp_reference as ref
import numpy as np
import pytest
from conftest import line_of, mpiexec_available
from jobs import run_script
from test_run import (
    PipelineGraph,
    PipelineModule,
    data,
    fresh_seeds,
    initial_params,
    train,
)

import pipeflow as flow
from pipeflow import nn

HERE = os.path.abspath(__file__)
TOL = 1e-5
STEP = "System-Train-TrainStep"
needs_mpiexec = pytest.mark.skipif(not mpiexec_available(), reason="mpiexec (MPICH) is not installed")




def rel(got, want):
    """max |got - want| / max |want|: the error relative to the tensor's scale."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max() / np.abs(want).max())


def layer_keys():
    """(layer index, 0 weight | 1 bias, key under "module_pipeline", compiled name)."""
    for j, (name, _, _) in enumerate(ref.SEED_LAYERS):
        for i, what in enumerate(("weight", "bias")):
            yield j, i, f"{name.split('.', 1)[1]}.{what}", f"{name}.{what}"


def values(state):
    """A graph state dict as {compiled name: numpy array}."""
    out = {}
    for key, value in state.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v.numpy() for k, v in value.items()})
        else:
            out[key] = value.numpy()
    return out


# Reading trained values back (one process) -----------------------------------------

def test_state_dict_after_training_equals_numpy(backend):
    """SGD with momentum and weight decay, 6 steps of 2 micro-batches: every
    parameter and momentum buffer equals the float64 reference's."""
    kwargs = dict(momentum=0.9, weight_decay=0.01)
    for _ in range(3):
        losses, x, y, lrs, graph, seeds = train(lambda p: flow.optim.SGD(p, lr=0.05, **kwargs), steps=6)
        reference, final = ref.Optimizer("sgd", **kwargs), []
        want = ref.train(initial_params(seeds[1]), x, y, lrs, 2, reference, final=final)
        if ref.max_relative_error(losses, want) < TOL:
            break
    else:
        pytest.fail("3 problems in a row were ill-conditioned")
    state = graph.state_dict()
    assert list(state) == ["module_pipeline", "loss_fn"] + sorted(
        f"{name}.momentum_buffer" for _, _, _, name in layer_keys()) + [STEP]
    assert state[STEP].dtype == flow.int64 and state[STEP].numpy().tolist() == [6]
    assert state["loss_fn"] == {}
    for j, i, key, name in layer_keys():
        got = state["module_pipeline"][key]
        assert got.is_global and got.placement == flow.placement("cpu", ranks=[0])
        assert got.dtype == flow.float32
        err = rel(got.numpy(), final[j][i])
        assert err < TOL, f"seeds {seeds}: {key}: error {err:.2e}"
        assert rel(got.numpy(), initial_params(seeds[1])[j][i]) > 1e-3, f"{key} did not train"
        err = rel(state[f"{name}.momentum_buffer"].numpy(), reference.state[(j, i)])
        assert err < TOL, f"seeds {seeds}: {name}.momentum_buffer: error {err:.2e}"


class ResumedAdam(ref.Optimizer):
    """The reference's Adam going on from moments read back at step ``t0``."""

    def __init__(self, moments, t0, **kwargs):
        super().__init__("adam", **kwargs)
        self.state, self.t0 = dict(moments), t0

    def update(self, key, p, g, lr, t):
        return super().update(key, p, g, lr, self.t0 + t)


def test_adam_state_equals_numpy(backend):
    """Adam: the parameters and moments read back after step 3, advanced one
    step by the float64 reference, equal those read back after step 4 (and
    the step's losses). (Checked one step at a time: over several steps Adam
    scales each update to about the learning rate whatever the gradient's
    size, so float32 rounding of tiny gradients moves single elements by up
    to ~1e-4 of a tensor's scale, see mlp_reference.ill_conditioned.) A
    problem where a ReLU input lies within float32 rounding of 0 at step 4
    (the moments, linear in the gradient, move under float32-sized
    perturbations of the parameters and data) cannot be compared at TOL:
    the test draws another."""
    kwargs = dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.001)
    for _ in range(3):
        dseed, pseed = fresh_seeds()
        flow.manual_seed(pseed)
        module = PipelineModule()
        graph = PipelineGraph(module, flow.optim.Adam(module.parameters(), lr=1e-3, **kwargs))
        x, y, gx, gy = data(dseed)
        for _ in range(3):
            graph(gx, gy)
        before = values(graph.state_dict())
        assert before[STEP].tolist() == [3] and not any(k.endswith("momentum_buffer") for k in before)
        losses = graph(gx, gy).numpy()
        after = values(graph.state_dict())
        assert after[STEP].tolist() == [4]
        names = [name for _, _, _, name in layer_keys()]
        params = [(before[w], before[b]) for w, b in zip(names[::2], names[1::2], strict=True)]

        def resumed(before=before):
            return ResumedAdam({(j, i): (before[f"{name}.exp_avg"], before[f"{name}.exp_avg_sq"])
                                for j, i, _, name in layer_keys()}, 3, **kwargs)

        reference, final = resumed(), []
        want = ref.train(params, x, y, [1e-3], 2, reference, final=final)
        rng = np.random.default_rng(0)

        def bump(a, rng=rng):
            return np.asarray(a, np.float64) * (1 + 3e-7 * rng.standard_normal(np.shape(a)))

        perturbed = resumed()
        ref.train([(bump(w), bump(b)) for w, b in params], bump(x), y, [1e-3], 2, perturbed, final=[])
        if all(rel(perturbed.state[key][0], reference.state[key][0]) < TOL / 2 for key in reference.state):
            break
    else:
        pytest.fail("3 problems in a row were ill-conditioned")
    where = f"seeds {dseed} {pseed}"
    assert ref.max_relative_error([losses], want) < TOL, where
    for j, i, _, name in layer_keys():
        m, v = reference.state[(j, i)]
        for got, expected, what in ((after[name], final[j][i], name), (after[f"{name}.exp_avg"], m, "exp_avg"),
                                    (after[f"{name}.exp_avg_sq"], v, "exp_avg_sq")):
            err = rel(got, expected)
            assert err < TOL, f"{where}: {name} {what}: error {err:.2e}"
        assert rel(after[name], before[name]) > 1e-5, f"{name} did not change"


def reference_drifts(pseed, x, y, lrs):
    """Whether the float64 reference's final parameters (SGD with momentum)
    move by more than TOL / 2 under float32-sized perturbations of the
    initial values and data: a ReLU that rounding flips makes such a problem
    incomparable at TOL, so the test draws another."""
    final, moved = [], []
    ref.train(initial_params(pseed), x, y, lrs, 2, ref.Optimizer("sgd", momentum=0.9), final=final)
    rng = np.random.default_rng(0)

    def bump(a):
        return np.asarray(a, np.float64) * (1 + 3e-7 * rng.standard_normal(np.shape(a)))

    ref.train([(bump(w), bump(b)) for w, b in initial_params(pseed)], bump(x), y, lrs, 2,
              ref.Optimizer("sgd", momentum=0.9), final=moved)
    if any(rel(m, f) > TOL / 2 for fl, ml in zip(final, moved, strict=True) for f, m in zip(fl, ml, strict=True)):
        return True
    # A unit float32 may flip that the perturbation above missed
    # (PF_TEST_SEEDS="1688239824 2085195249": 2e-7 of its layer's largest).
    return ref.near_kink(initial_params(pseed), x, y, lrs, 2, ref.Optimizer("sgd", momentum=0.9))


def test_modules_parameters_and_optimizer_read_the_trained_values(backend):
    """After training, module.state_dict(), param.numpy()/to_local() and
    optimizer.state_dict() give the program's current values (read back on
    demand in a process of its own), and stay current step after step."""
    for _ in range(3):
        dseed, pseed = fresh_seeds()
        x, y, gx, gy = data(dseed)
        if not reference_drifts(pseed, x, y, [0.05] * 3):
            break
    flow.manual_seed(pseed)
    module = PipelineModule()
    opt = flow.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    graph = PipelineGraph(module, opt)
    lrs = []
    for steps in (1, 3):
        while len(lrs) < steps:
            graph(gx, gy)
            lrs.append(0.05)
        final = []
        ref.train(initial_params(pseed), x, y, lrs, 2, ref.Optimizer("sgd", momentum=0.9), final=final)
        weight = module.m_stage1.linear2.weight
        assert rel(weight.numpy(), final[2][0]) < TOL, (dseed, pseed, steps)
        assert "trained by" not in repr(weight)
        np.testing.assert_array_equal(weight.to_local().numpy(), weight.numpy())
        own = module.state_dict()
        assert list(own) == [n for n, _ in module.named_parameters()]
        assert rel(own["m_stage0.linear0.bias"].numpy(), final[0][1]) < TOL, (dseed, pseed, steps)
        graph_state = graph.state_dict()["module_pipeline"]
        for key, value in own.items():
            np.testing.assert_array_equal(value.numpy(), graph_state[key].numpy(), err_msg=key)
        saved = opt.state_dict()
        assert saved["param_groups"][0]["params"] == list(range(6)) and saved["param_groups"][0]["momentum"] == 0.9
        assert sorted(saved["state"]) == list(range(6)) and "step" not in saved["state"][0]
        buf = saved["state"][5]["momentum_buffer"]  # linear2.bias
        assert buf.shape == (10,) and np.abs(buf.numpy()).max() > 0
    # a snapshot does not change when training goes on
    snapshot = own["m_stage1.linear2.bias"].numpy().copy()
    graph(gx, gy)
    np.testing.assert_array_equal(own["m_stage1.linear2.bias"].numpy(), snapshot)
    assert not np.array_equal(module.m_stage1.linear2.bias.numpy(), snapshot)


def test_load_state_dict_after_running_goes_back(backend):
    """Loading the state of step 1 (parameters, momentum, step) into a graph at
    step 4 replays steps 2-4 exactly; module.load_state_dict() of the initial
    values after running restarts the training (the momentum kept)."""
    dseed, pseed = fresh_seeds()
    flow.manual_seed(pseed)
    module = PipelineModule()
    opt = flow.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    graph = PipelineGraph(module, opt)
    _, _, gx, gy = data(dseed)
    params = initial_params(pseed)  # the program's initial values
    initial = {key: params[j][i] for j, i, key, _ in layer_keys()}
    losses = [graph(gx, gy).numpy()]
    at1 = graph.state_dict()
    losses += [graph(gx, gy).numpy() for _ in range(3)]
    result = graph.load_state_dict(at1)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert graph.state_dict()[STEP].numpy().tolist() == [1]
    again = [graph(gx, gy).numpy() for _ in range(3)]
    np.testing.assert_array_equal(np.array(again), np.array(losses[1:]), err_msg=f"seeds {dseed} {pseed}")
    # back to the initial parameters through the module (SGD keeps its momentum)
    module.load_state_dict(initial)
    np.testing.assert_array_equal(module.m_stage0.linear0.weight.numpy(), initial["m_stage0.linear0.weight"])
    np.testing.assert_array_equal(graph.state_dict()["module_pipeline"]["m_stage1.linear2.bias"].numpy(),
                                  initial["m_stage1.linear2.bias"])
    graph.load_state_dict({f"{n}.momentum_buffer": np.zeros(tuple(t.shape), np.float32)
                           for n, t in zip((name for _, _, _, name in layer_keys()), module.parameters(), strict=True)},
                          strict=False)
    # parameters and momentum as at step 0: the first step again
    np.testing.assert_array_equal(graph(gx, gy).numpy(), losses[0])


def test_load_state_dict_before_the_first_call_sets_the_initial_values(backend):
    """A module's loaded values (here another module's eager initialisation)
    are the compiled program's initial values (OneFlow loads graphs this way)."""
    dseed, _ = fresh_seeds()
    source = PipelineModule()
    module = PipelineModule()
    module.load_state_dict(source.state_dict())
    graph = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.02))
    x, y, gx, gy = data(dseed)
    losses = np.array([graph(gx, gy).numpy() for _ in range(3)])
    params = [(getattr(getattr(source, s), n).weight.numpy(), getattr(getattr(source, s), n).bias.numpy())
              for s, n in (("m_stage0", "linear0"), ("m_stage1", "linear1"), ("m_stage1", "linear2"))]
    want = ref.train(params, x, y, [0.02] * 3, 2, ref.Optimizer("sgd"))
    assert ref.max_relative_error(losses, want) < TOL, f"seed {dseed}"
    # not the values the program would have drawn itself
    assert not np.array_equal(params[0][0], initial_params(flow.initial_seed())[0][0])


# Checkpoints (one process) -------------------------------------------------------------

def adam_graph(pseed, lr=1e-3):
    flow.manual_seed(pseed)
    module = PipelineModule()
    return PipelineGraph(module, flow.optim.Adam(module.parameters(), lr=lr)), module


def uninterrupted_and_three_steps(make_graph, dseed, pseed, steps):
    """The data, the losses of ``steps`` uninterrupted steps of
    ``make_graph(pseed)``, and another such graph (and module) after 3 steps."""
    _, _, gx, gy = data(dseed)
    graph, _ = make_graph(pseed)
    whole = np.array([graph(gx, gy).numpy() for _ in range(steps)])
    graph, module = make_graph(pseed)
    for _ in range(3):
        graph(gx, gy)
    return gx, gy, whole, graph, module


def test_checkpoint_resumes_the_uninterrupted_run(backend, tmp_path):
    """Adam (whose update depends on the step): 3 steps, flow.save, then a new
    graph with other initial parameters loads the checkpoint (before its first
    call, and another after one call) and trains 3 more: the losses equal the
    uninterrupted run's."""
    dseed, pseed = fresh_seeds()
    gx, gy, whole, graph, _ = uninterrupted_and_three_steps(adam_graph, dseed, pseed, 6)
    flow.save(graph.state_dict(), tmp_path / "ckpt")
    index = json.loads((tmp_path / "ckpt" / "index.json").read_text())
    assert index["format"] == "pipeflow-checkpoint" and index["version"] == 1 and index["step"] == 3
    assert {t["name"] for t in index["tensors"]} == {
        name + s for _, _, _, name in layer_keys() for s in ("", ".exp_avg", ".exp_avg_sq")}
    loaded = flow.load(tmp_path / "ckpt")
    assert list(loaded["module_pipeline"]) == [key for _, _, key, _ in layer_keys()]
    assert loaded[STEP].numpy().tolist() == [3] and loaded["loss_fn"] == {}

    fresh, _ = adam_graph(pseed + 1)
    fresh.load_state_dict(loaded)
    resumed = np.array([fresh(gx, gy).numpy() for _ in range(3)])
    assert ref.max_relative_error(resumed, whole[3:]) < TOL, f"seeds {dseed} {pseed}\n{resumed}\n{whole[3:]}"

    late, _ = adam_graph(pseed + 2)
    late(gx, gy)
    late.load_checkpoint(tmp_path / "ckpt")
    resumed = np.array([late(gx, gy).numpy() for _ in range(3)])
    assert ref.max_relative_error(resumed, whole[3:]) < TOL, f"seeds {dseed} {pseed}"
    # the checkpoint was needed: without it the runs differ
    other, _ = adam_graph(pseed + 1)
    assert ref.max_relative_error(other(gx, gy).numpy(), whole[3]) > 1e-3


def test_optimizer_state_dict_round_trip(backend, tmp_path):
    """optimizer.state_dict() saved with flow.save and loaded into the optimizer
    of a fresh graph (with the module's state) resumes Adam too."""
    dseed, pseed = fresh_seeds()
    _, _, gx, gy = data(dseed)
    graph, module = adam_graph(pseed)
    whole = np.array([graph(gx, gy).numpy() for _ in range(4)])
    graph, module = adam_graph(pseed)
    graph(gx, gy), graph(gx, gy)
    opt = graph._optimizers[0][0]
    flow.save({"model": module.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "ck")
    saved = flow.load(tmp_path / "ck")
    assert saved["optimizer"]["state"][0]["step"] == 2
    assert saved["optimizer"]["param_groups"][0]["betas"] == [0.9, 0.999]
    fresh, fresh_module = adam_graph(pseed + 1)
    fresh_module.load_state_dict(saved["model"])
    fresh._optimizers[0][0].load_state_dict(saved["optimizer"])
    resumed = np.array([fresh(gx, gy).numpy() for _ in range(2)])
    assert ref.max_relative_error(resumed, whole[2:]) < TOL, f"seeds {dseed} {pseed}"


def two_optimizer_graph(pseed):
    """SGD with momentum for the body, Adam for the head (two optimizers)."""
    flow.manual_seed(pseed)
    module = PipelineModule()
    body = list(module.m_stage0.parameters()) + list(module.m_stage1.linear1.parameters())
    graph = PipelineGraph(module, flow.optim.SGD(body, lr=0.05, momentum=0.9))
    graph.add_optimizer(flow.optim.Adam(module.m_stage1.linear2.parameters(), lr=3e-3))
    return graph, module


def test_checkpoints_of_two_optimizers_resume_the_uninterrupted_run(backend, tmp_path):
    """Two optimizers: graph.save_checkpoint() holds both kinds of state, and a
    new graph resumes from it (or from each optimizer's state_dict, which lists
    only that optimizer's parameters) with the uninterrupted run's losses."""
    dseed, pseed = fresh_seeds()
    gx, gy, whole, graph, module = uninterrupted_and_three_steps(two_optimizer_graph, dseed, pseed, 5)
    graph.save_checkpoint(tmp_path / "ckpt")
    index = json.loads((tmp_path / "ckpt" / "index.json").read_text())
    assert index["step"] == 3
    assert {t["name"] for t in index["tensors"]} == {
        name + s for j, _, _, name in layer_keys()
        for s in (("", ".exp_avg", ".exp_avg_sq") if j == 2 else ("", ".momentum_buffer"))}
    sgd, adam = (o for o, _, _ in graph._optimizers)
    flow.save({"model": module.state_dict(), "sgd": sgd.state_dict(), "adam": adam.state_dict()},
              tmp_path / "parts")
    saved = flow.load(tmp_path / "parts")
    assert sorted(saved["sgd"]["state"]) == [0, 1, 2, 3] and sorted(saved["adam"]["state"]) == [0, 1]
    assert saved["adam"]["state"][0]["step"] == 3
    resumed, _ = two_optimizer_graph(pseed + 1)
    resumed.load_checkpoint(tmp_path / "ckpt")
    got = np.array([resumed(gx, gy).numpy() for _ in range(2)])
    assert ref.max_relative_error(got, whole[3:]) < TOL, f"seeds {dseed} {pseed}"
    fresh, fresh_module = two_optimizer_graph(pseed + 2)
    fresh_module.load_state_dict(saved["model"])
    fresh._optimizers[0][0].load_state_dict(saved["sgd"])
    fresh._optimizers[1][0].load_state_dict(saved["adam"])
    got = np.array([fresh(gx, gy).numpy() for _ in range(2)])
    assert ref.max_relative_error(got, whole[3:]) < TOL, f"seeds {dseed} {pseed}"
    # without the optimizer states the run differs
    bare, bare_module = two_optimizer_graph(pseed + 3)
    bare_module.load_state_dict(saved["model"])
    got = np.array([bare(gx, gy).numpy() for _ in range(2)])
    assert ref.max_relative_error(got, whole[3:]) > 1e-4, f"seeds {dseed} {pseed}"


def test_save_and_load_state_dicts(tmp_path):
    """flow.save/flow.load of plain state dicts: nesting, dtypes, other values."""
    a = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    state = {"net": a.state_dict(), "labels": flow.tensor(np.arange(5)), "extra": {"epoch": 3, "name": "x",
                                                                                    "lrs": [0.1, 0.01]}}
    flow.save(state, tmp_path / "s")
    back = flow.load(tmp_path / "s")
    assert list(back["net"]) == list(a.state_dict())
    for k, v in a.state_dict().items():
        np.testing.assert_array_equal(back["net"][k].numpy(), v.numpy())
    assert back["labels"].dtype == flow.int64 and back["labels"].numpy().tolist() == [0, 1, 2, 3, 4]
    assert back["extra"] == {"epoch": 3, "name": "x", "lrs": [0.1, 0.01]} and STEP not in back
    index = json.loads((tmp_path / "s" / "index.json").read_text())
    assert index["step"] == 0 and {t["dtype"] for t in index["tensors"]} == {"f32", "i64"}
    with pytest.raises(FileNotFoundError, match="index.json does not exist"):
        flow.load(tmp_path)
    with pytest.raises(TypeError, match="a checkpoint holds tensors"):
        flow.save({"f": object()}, tmp_path / "bad")
    with pytest.raises(ValueError, match="both save as 'a.b.npy'"):
        flow.save({"a": {"b": np.zeros(1)}, "a.b": np.zeros(1)}, tmp_path / "bad")


# Errors ---------------------------------------------------------------------------------

def test_load_state_dict_errors_point_at_the_line(backend):
    flow.manual_seed(3)
    module = PipelineModule()
    graph = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.01))
    good = graph.state_dict()
    bad_shape = {"module_pipeline": dict(good["module_pipeline"],
                                         **{"m_stage1.linear2.bias": np.zeros(11, np.float32)})}
    with pytest.raises(flow.StateDictError, match=r"size mismatch for 'module_pipeline.m_stage1.linear2.bias': "
                                                  r"copying a value of shape \[11\], the parameter has shape \[10\]") as info:
        graph.load_state_dict(bad_shape)  # <-- shape-before
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "shape-before")
    _, _, gx, gy = data(4)
    first = graph(gx, gy).numpy()
    with pytest.raises(flow.StateDictError, match="size mismatch") as info:
        graph.load_state_dict(bad_shape)  # <-- shape-after
    assert info.value.lineno == line_of(HERE, "shape-after") and isinstance(info.value, RuntimeError)
    unknown = dict(good, **{"module_pipeline.m_stage1.linear3.weight": np.zeros((2, 2), np.float32)})
    with pytest.raises(flow.StateDictError, match="unexpected key 'module_pipeline.m_stage1.linear3.weight': "
                                                  "PipelineGraph has no parameter") as info:
        graph.load_state_dict(unknown)  # <-- unknown
    assert info.value.lineno == line_of(HERE, "unknown")
    assert "module_pipeline.m_stage0.linear0.weight" in str(info.value)  # the note shows the keys
    # plain SGD keeps no momentum: its buffer is an unknown key once the program runs
    with pytest.raises(flow.StateDictError, match="unexpected key 'module_pipeline.m_stage0.linear0.bias.momentum_buffer'"):
        graph.load_state_dict({"module_pipeline.m_stage0.linear0.bias.momentum_buffer": np.zeros(512)}, strict=False)
    with pytest.raises(flow.StateDictError, match="missing keys 'module_pipeline.m_stage0.linear0.bias'"):
        graph.load_state_dict({"module_pipeline": {"m_stage0.linear0.weight": good["module_pipeline"]["m_stage0.linear0.weight"]}})
    with pytest.raises(flow.StateDictError, match="size mismatch for m_stage0.linear0.bias") as info:
        module.load_state_dict(dict(module.state_dict(), **{"m_stage0.linear0.bias": np.zeros(3)}))  # <-- module
    assert info.value.lineno == line_of(HERE, "module")
    # nothing was loaded by the rejected calls: the program trains on from step 1
    flow.manual_seed(3)
    twin = PipelineModule()
    twin_graph = PipelineGraph(twin, flow.optim.SGD(twin.parameters(), lr=0.01))
    # Read before the first call like `good` above: both graphs then start
    # from the values read (a parameter is its value), not the initializers'.
    twin_graph.state_dict()
    np.testing.assert_array_equal(twin_graph(gx, gy).numpy(), first)
    np.testing.assert_array_equal(graph(gx, gy).numpy(), twin_graph(gx, gy).numpy())


def test_optimizer_state_the_program_lacks_is_an_error_at_the_load(backend):
    """Before the first call the graph cannot know its optimizer's states yet:
    a momentum buffer loaded into a graph whose SGD has no momentum is an
    error at the load line, raised by the first call."""
    module = PipelineModule()
    graph = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.01))
    state = graph.state_dict()
    state["module_pipeline.m_stage0.linear0.bias.momentum_buffer"] = np.zeros(512, np.float32)
    graph.load_state_dict(state)  # <-- no-momentum
    with pytest.raises(flow.StateDictError, match="keeps no such tensor") as info:
        graph(*data(1)[2:])
    assert info.value.lineno == line_of(HERE, "no-momentum")


def test_two_training_graphs_over_one_module_train_one_set_of_parameters(backend):
    """Graphs sharing a module share its parameters (pipeflow.nn._graph.sharing):
    two plain-SGD graphs taking turns (2 steps, 2 steps, 1 step) give the
    losses of one graph taking the 5 steps."""
    pseed, dseed = fresh_seeds()
    x, y, gx, gy = data(dseed)
    flow.manual_seed(pseed)
    single = PipelineModule()
    one = PipelineGraph(single, flow.optim.SGD(single.parameters(), lr=0.05))
    want = [float(one(gx, gy).numpy().reshape(-1)[0]) for _ in range(5)]
    flow.manual_seed(pseed)
    module = PipelineModule()
    a = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.05))
    b = PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.05))
    got = [float(g(gx, gy).numpy().reshape(-1)[0]) for g in (a, a, b, b, a)]
    assert rel(np.array(got), np.array(want)) < 1e-5, (pseed, dseed, got, want)
    assert got[-1] < got[0]
    assert set(nn.Linear(2, 2).state_dict()) == {"weight", "bias"}


# Checkpoints and pf-run ------------------------------------------------------------------

def pf_run(backend):
    path = os.path.join(os.path.dirname(backend), "pf-run")
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not built")
    return path


def run_pf_run(tool, artifacts, *args):
    proc = subprocess.run([tool, "-n", str(artifacts.world_size), artifacts.directory, *map(str, args)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@needs_mpiexec
def test_checkpoints_go_between_python_and_pf_run(backend, tmp_path):
    """A graph's checkpoint (flow.save of its state_dict) trains on in pf-run (--load,
    --data with the same batch): pf-run's losses and saved state equal the
    graph's own continuation. And pf-run's checkpoint of a run from the same
    seed loads into a new graph, which then trains on as the uninterrupted
    Python run does."""
    tool = pf_run(backend)
    dseed, pseed = fresh_seeds()
    x, y, gx, gy = data(dseed)
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "input0.npy", x)
    np.save(tmp_path / "data" / "input1.npy", y)

    def make(seed):
        flow.manual_seed(seed)
        module = PipelineModule()
        return PipelineGraph(module, flow.optim.SGD(module.parameters(), lr=0.05, momentum=0.9))

    graph = make(pseed)
    losses = [graph(gx, gy).numpy() for _ in range(2)]
    flow.save(graph.state_dict(), tmp_path / "py")
    losses += [graph(gx, gy).numpy() for _ in range(3)]
    run_pf_run(tool, graph.artifacts, "--load", tmp_path / "py", "--data", tmp_path / "data", "--steps", 3,
               "--lr", 0.05, "--save", tmp_path / "pf", "--loss-out", tmp_path / "pf.losses")
    pf_losses = np.loadtxt(tmp_path / "pf.losses", ndmin=2)
    assert ref.max_relative_error(pf_losses, np.array(losses[2:])) < TOL, f"seeds {dseed} {pseed}"
    pf_state, py_state = flow.load(tmp_path / "pf"), values(graph.state_dict())
    assert pf_state[STEP].numpy().tolist() == [5]
    assert sorted(pf_state) == sorted(k for k in py_state if k != "loss_fn")
    for name, value in pf_state.items():
        assert rel(value.numpy(), py_state[name]) < TOL, name

    # pf-run from the seed for 2 steps, then Python for 3: the uninterrupted run's losses
    run_pf_run(tool, graph.artifacts, "--seed", pseed, "--data", tmp_path / "data", "--steps", 2,
               "--lr", 0.05, "--save", tmp_path / "pf2")
    fresh = make(pseed + 1)
    fresh.load_checkpoint(tmp_path / "pf2")
    resumed = np.array([fresh(gx, gy).numpy() for _ in range(3)])
    assert ref.max_relative_error(resumed, np.array(losses[2:])) < TOL, f"seeds {dseed} {pseed}"


# Several processes ---------------------------------------------------------------------

STATE_JOB = r"""
import json, sys
import numpy as np
import pipeflow as flow
from graphs import HybridMLP, Train

layout, optim, pseed, dseed, steps, mode, out = (sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:6]),
                                                 sys.argv[6], sys.argv[7])
ckpt = sys.argv[8] if len(sys.argv) > 8 else None
rank = flow.env.get_rank()
B, S0 = flow.sbp.broadcast, flow.sbp.split(0)
PL = flow.placement("cpu", ranks=[0] if layout == "single" else [0, 1])
# tp: the hidden layer's rows (weight and bias) split over the ranks (Megatron's
# column-parallel layer); hybrid: seed 004's output layer split; single: one rank.
HIDDEN, OUTPUT = {"single": (B, B), "tp": (S0, B), "hybrid": (B, S0)}[layout]
flow.manual_seed(pseed)
model = HybridMLP(PL, HIDDEN, OUTPUT, gather_sbp=B)
params = model.parameters()
graph = Train(model, flow.optim.Adam(params, lr=1e-3) if optim == "adam" else
              flow.optim.SGD(params, lr=0.05, momentum=0.9), m=2)
rng = np.random.default_rng(dseed)
X = rng.standard_normal((16, 1, 28, 28)).astype(np.float32)
Y = rng.integers(0, 10, 16).astype(np.int64)
x, y = flow.tensor(X, placement=PL, sbp=B), flow.tensor(Y, placement=PL, sbp=B)
if mode == "resume":
    graph.load_state_dict(flow.load(ckpt))
losses = [graph(x, y).to_local().numpy().reshape(-1).tolist() for _ in range(steps)]
record = {"losses": losses}
try:
    model.state_dict()
    record["before"] = "read"
except flow.BackendUnavailable as err:
    record["before"] = str(err)
state = graph.state_dict()
flat = {f"model.{k}": v.numpy() for k, v in state["model"].items()}
flat.update({k: v.numpy() for k, v in state.items() if k not in ("model", "loss_fn")})
record["module_equal"] = all(np.array_equal(v.numpy(), flat[f"model.{k}"]) for k, v in model.state_dict().items())
record["local_shape"] = list(state["model"]["hidden.weight"].to_local().shape)
np.savez(f"{out}/{layout}.{mode}.rank{rank}.npz", **flat)
with open(f"{out}/{layout}.{mode}.rank{rank}.json", "w") as f:
    json.dump(record, f)
if mode == "save":
    graph.save_checkpoint(ckpt)
"""


def run_state_job(tmp_path, backend, layout, optim, pseed, dseed, steps, mode, ckpt=None):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    ranks = 1 if layout == "single" else 2
    args = [layout, optim, pseed, dseed, steps, mode, out] + ([] if ckpt is None else [ckpt])
    run_script(tmp_path, "state_job.py", STATE_JOB, args, ranks, backend)
    return [(json.loads((out / f"{layout}.{mode}.rank{r}.json").read_text()),
             dict(np.load(out / f"{layout}.{mode}.rank{r}.npz"))) for r in range(ranks)]


@needs_mpiexec
@pytest.mark.parametrize("layout", ["tp", "hybrid"])
def test_state_dict_of_sharded_parameters_on_every_rank_equals_one_rank(backend, tmp_path, layout):
    """Two ranks holding shards of the parameters (and of their momentum):
    graph.state_dict() gives every rank the whole logical values, equal to
    the same training on one rank. Before it, module.state_dict() says to
    call it (reading back is a collective); after it, it reads the values."""
    pseed, dseed = fresh_seeds()
    [(want_record, want)] = run_state_job(tmp_path, backend, "single", "sgd", pseed, dseed, 4, "train")
    where = f"{layout}, seeds {pseed} {dseed}"
    assert want_record["before"] == "read" and want_record["module_equal"]
    for rank, (record, got) in enumerate(run_state_job(tmp_path, backend, layout, "sgd", pseed, dseed, 4, "train")):
        assert "call Train.state_dict() on every process first" in record["before"], (where, record["before"])
        assert record["module_equal"], where
        assert sorted(got) == sorted(want) and len(want) == 4 + 4 + 1, sorted(want)
        assert got[STEP].tolist() == [4]
        for name in want:
            assert rel(got[name], want[name]) < TOL, (where, rank, name, rel(got[name], want[name]))
        assert ref.max_relative_error(record["losses"], want_record["losses"]) < TOL, where
        # a global tensor's local part is this rank's shard of the whole value
        assert record["local_shape"] == ([32, 784] if layout == "tp" else [64, 784]), where


@needs_mpiexec
def test_checkpoint_of_one_layout_resumes_in_others(backend, tmp_path):
    """Adam on two ranks with the hidden layer split (tp) for 3 steps,
    save_checkpoint; the checkpoint resumes on two ranks with another layout
    (hybrid) and in one process, 3 more steps each: their losses and final
    state equal the uninterrupted single-rank run of 6 steps."""
    pseed, dseed = fresh_seeds()
    where = f"seeds {pseed} {dseed}"
    [(whole, whole_state)] = run_state_job(tmp_path, backend, "single", "adam", pseed, dseed, 6, "train")
    ckpt = tmp_path / "ckpt"
    saved = run_state_job(tmp_path, backend, "tp", "adam", pseed, dseed, 3, "save", ckpt)
    assert ref.max_relative_error(saved[0][0]["losses"], whole["losses"][:3]) < TOL, where
    assert json.loads((ckpt / "index.json").read_text())["step"] == 3
    for layout in ("hybrid", "single"):
        for rank, (record, state) in enumerate(run_state_job(tmp_path, backend, layout, "adam", pseed, dseed,
                                                             3, "resume", ckpt)):
            err = ref.max_relative_error(record["losses"], whole["losses"][3:])
            assert err < TOL, f"{layout} rank {rank}, {where}: {err:.2e}\n{record['losses']}\n{whole['losses'][3:]}"
            assert state[STEP].tolist() == [6]
            for name in whole_state:
                assert rel(state[name], whole_state[name]) < 1e-4, (layout, rank, name, where)
