"""What every call of a compiled graph checks, and what it costs (issue 35,
item 8).

A call checks that the graph's modules, parameters and settings are those
it was compiled for (``tracing.fingerprint``) and that the inputs are laid
out as the first call's. Walking the module tree for that costs more than a
small step, so a call recomputes the fingerprint only after something it
reads may have changed (``nn._graph.execution.CallCheck``): these tests
count the recomputations of unchanged calls, and make every kind of change
after the first call to see it noticed exactly as the fingerprint notices
it. bench/call_overhead.py measures the time.
"""

import pytest
from graphs import MLP, Train

import pipeflow as flow
from pipeflow import config, nn
from pipeflow.nn._graph import tracing

P0 = flow.placement("cpu", ranks=[0])
B = [flow.sbp.broadcast]


def setup():
    model = MLP(8, 16, 4).to_global(P0, B)
    opt = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x = flow.randn(4, 8).to_global(P0, B)
    y = flow.randint(0, 4, (4,)).to_global(P0, B)
    return model, opt, Train(model, opt), x, y


@pytest.fixture
def counted(monkeypatch):
    """Counts the calls of tracing.fingerprint and tracing.signature."""
    counts = {"fingerprint": 0, "signature": 0}
    for name in counts:
        original = getattr(tracing, name)

        def counting(*args, _name=name, _original=original):
            counts[_name] += 1
            return _original(*args)

        monkeypatch.setattr(tracing, name, counting)
    return counts


def test_unchanged_calls_do_not_recompute_the_fingerprint(backend, counted):
    """The second call computes the fingerprint once (and the inputs'
    signature); later calls, with new learning rates and new input values
    of the same layout, compute neither."""
    _, opt, graph, x, y = setup()
    graph(x, y)
    graph(x, y)
    after_second = dict(counted)
    for step in range(10):
        opt.param_groups[0]["lr"] = 0.05 / (step + 1)  # run-time: not in the fingerprint
        graph(flow.randn(4, 8).to_global(P0, B), y)
    assert counted == after_second
    assert graph._run.call_check.recomputed == 1


def _replace_parameter(model, graph, opt):
    model.fc1.bias = nn.Parameter(flow.zeros(16).to_global(P0, B))


def _append_to_plain_params(model, graph, opt):
    """A plain list put in place of an optimizer's ParamList is compared
    element by element: an in-place change is noticed although it counts
    nothing."""
    group = opt.param_groups[0]
    group["params"] = list(group["params"])
    graph(*graph._test_inputs)  # the same parameters: still the compiled graph
    group["params"].pop()


CHANGES = {
    "replace-parameter": _replace_parameter,
    "register-parameter": lambda m, g, o: m.fc1.register_parameter("extra", nn.Parameter(flow.ones(2).to_global(P0, B))),
    "register-buffer": lambda m, g, o: m.fc2.register_buffer("scale", flow.ones(4).to_global(P0, B)),
    "add-module": lambda m, g, o: setattr(m, "head", nn.Linear(4, 4).to_global(P0, B)),
    "delete-module": lambda m, g, o: delattr(m, "relu"),
    "registry-pop": lambda m, g, o: m._modules.pop("relu"),
    "eval": lambda m, g, o: m.eval(),
    "training-attribute": lambda m, g, o: setattr(m.fc2, "training", False),
    "to-global": lambda m, g, o: m.fc2.to_global(P0, [flow.sbp.split(0)]),
    "init": lambda m, g, o: nn.init.normal_(m.fc1.weight, std=0.1),
    "stage": lambda m, g, o: g.model.fc1.config.set_stage(0, P0),
    "checkpointing": lambda m, g, o: setattr(g.model.config, "activation_checkpointing", True),
    "graph-module-checkpointing": lambda m, g, o: setattr(g.model.fc2.to(nn.graph.GraphModule),
                                                          "activation_checkpointing", True),
    "graph-module-stage": lambda m, g, o: setattr(g.model.fc2.to(nn.graph.GraphModule), "stage_id", 0),
    "graph-module": lambda m, g, o: setattr(g, "other", nn.Linear(2, 2)),
    "micro-batches": lambda m, g, o: g.config.set_gradient_accumulation_steps(2),
    "cuda-as-cpu": lambda m, g, o: config.cuda_as_cpu(True),
    "momentum": lambda m, g, o: o.param_groups[0].__setitem__("momentum", 0.5),
    "new-group-setting": lambda m, g, o: o.param_groups[0].__setitem__("foo", 1),
    "params-pop": lambda m, g, o: o.param_groups[0]["params"].pop(),
    "params-replaced": lambda m, g, o: o.param_groups[0]["params"].__setitem__(0, m.fc1.bias),
    "plain-params-changed": _append_to_plain_params,
    "param-group": lambda m, g, o: o.add_param_group({"params": [nn.Parameter(flow.ones(2).to_global(P0, B))]}),
    "optimizer": lambda m, g, o: g.add_optimizer(flow.optim.SGD([nn.Parameter(flow.ones(2).to_global(P0, B))])),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_changes_after_the_first_call_are_noticed(backend, change):
    """Each change of something the fingerprint reads, made after the calls
    that skip recomputing it, is the same CompileError as before."""
    model, opt, graph, x, y = setup()
    object.__setattr__(graph, "_test_inputs", (x, y))
    for _ in range(3):
        graph(x, y)
    CHANGES[change](model, graph, opt)
    assert tracing.fingerprint(graph) != graph._run.signature[1]  # what every call once computed
    with pytest.raises(flow.CompileError, match="changed after its first call"):
        graph(x, y)


def test_changes_undone_before_the_next_call_are_fine(backend):
    """The fingerprint is recomputed after a change and, equal again, the graph
    runs on (as when every call computed it)."""
    model, opt, graph, x, y = setup()
    for _ in range(2):
        graph(x, y)
    model.eval()
    model.train()
    opt.param_groups[0]["momentum"] = 0.9  # the same value, another object
    graph(x, y)
    graph(x, y)
    assert graph._run.call_check.recomputed == 2


@pytest.mark.parametrize("kind", ["shape", "dtype", "sbp", "local"])
def test_changed_inputs_are_still_noticed(backend, kind):
    _, _, graph, x, y = setup()
    for _ in range(3):
        graph(x, y)
    if kind == "shape":
        x, match = flow.randn(2, 8).to_global(P0, B), r"graph input 0 has shape \[2, 8\]"
    elif kind == "dtype":
        y, match = y.to(flow.int32), "graph input 1 has dtype int32"
    elif kind == "sbp":
        x, match = flow.randn(4, 8).to_global(P0, [flow.sbp.split(0)]), "graph input 0 has sbp"
    else:
        x, match = flow.randn(4, 8), "local tensor but other inputs are global"
    with pytest.raises(flow.CompileError, match=match):
        graph(x, y)
