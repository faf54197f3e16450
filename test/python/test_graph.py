"""nn.Graph: tracing the seeds' programs to pf IR, verifying it, and located errors."""

import hashlib
import json
import os
import re

import numpy as np
import pytest
import seed_pipeline
from conftest import line_of
from seed_pipeline import P0, P1, B, PipelineGraph, PipelineModule

import pipeflow as flow
from pipeflow import compiler, config, nn

HERE = os.path.abspath(__file__)
# where the seed's model and graph are written (the examples' _quickstart.py)
SEED = seed_pipeline.QUICKSTART


def seed_inputs(batch=16, p0=P0, p1=P1):
    x = flow.randn(batch, 1, 28, 28).to_global(p0, B)
    y = flow.randint(0, 10, (batch,)).to_global(p1, B)
    return x, y


def type_text(value):
    return value.type.text()


# The seed pipeline -----------------------------------------------------------------

def test_seed_pipeline_trace():
    graph = PipelineGraph(PipelineModule())
    traced = graph.trace(*seed_inputs())
    ops = traced.ops
    assert [op.name for op in ops] == [
        "pf.flatten", "pf.read_param", "pf.matmul", "pf.read_param", "pf.bias_add", "pf.relu",
        "pf.to_global",
        "pf.read_param", "pf.matmul", "pf.read_param", "pf.bias_add", "pf.relu",
        "pf.read_param", "pf.matmul", "pf.read_param", "pf.bias_add", "pf.relu",
        "pf.softmax_cross_entropy"]
    stages = [op.stage for op in ops]
    hand_over = stages.index(None)
    assert stages[:hand_over] == [0] * 6 and stages[hand_over + 1:] == [1] * 11
    to_global = ops[hand_over]
    assert to_global.operands[0] is ops[hand_over - 1].result
    assert type_text(to_global.operands[0]) == '!pf.global<16x512xf32, #pf.placement<"cpu", [0]>>'
    assert type_text(to_global.result) == '!pf.global<16x512xf32, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>'
    assert to_global.loc.filename == SEED and to_global.loc.line == line_of(SEED, "stage-hand-over")
    matmul = ops[2]
    assert "transpose_b" in matmul.attrs and matmul.operands[1] is ops[1].result
    assert matmul.loc.line == line_of(SEED, "linear0-call") and matmul.loc.col == 0
    # compute results carry no SBP; inputs and parameters carry the user's
    assert all(op.result.type.sbp is None for op in ops
               if op.name not in ("pf.read_param", "pf.to_global"))
    assert [type_text(a) for a in traced.function.args] == [
        '!pf.global<16x1x28x28xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>',
        '!pf.global<16xi64, #pf.placement<"cpu", [1]>, #pf.sbp<[B]>>']
    assert traced.function.name == "train_step"
    assert traced.function.results == [ops[-1].result]
    assert type_text(ops[-1].result) == '!pf.global<f32, #pf.placement<"cpu", [1]>>'
    assert ops[-1].loc.line == line_of(SEED, "loss-call")


def test_seed_pipeline_params():
    module = PipelineModule()
    traced = PipelineGraph(module).trace(*seed_inputs())
    params = traced.params
    assert list(params) == [
        "module_pipeline.m_stage0.linear0.weight", "module_pipeline.m_stage0.linear0.bias",
        "module_pipeline.m_stage1.linear1.weight", "module_pipeline.m_stage1.linear1.bias",
        "module_pipeline.m_stage1.linear2.weight", "module_pipeline.m_stage1.linear2.bias"]
    w = params["module_pipeline.m_stage0.linear0.weight"]
    assert w.type.text() == '!pf.global<512x784xf32, #pf.placement<"cpu", [0]>, #pf.sbp<[B]>>'
    assert w.init == "#pf.init<kaiming_uniform(784)>" and not w.buffer
    assert params["module_pipeline.m_stage1.linear2.bias"].type.shape == (10,)
    assert params["module_pipeline.m_stage1.linear2.bias"].init == "#pf.init<kaiming_uniform(512)>"
    reads = [op.symbol for op in traced.ops if op.name == "pf.read_param"]
    assert reads == list(params)


def test_seed_pipeline_ir_text_verifies(verify):
    graph = PipelineGraph(PipelineModule())
    text = graph.ir(*seed_inputs())
    assert text.count("pf.param @module_pipeline.") == 6
    assert re.search(r'%\d+ = pf.to_global %\d+ : !pf.global<16x512xf32, #cpu_0> -> '
                     r'!pf.global<16x512xf32, #cpu_1, #pf.sbp<\[B\]>> loc\(', text)
    assert f'loc("{SEED}":{line_of(SEED, "linear0-call")}:0)' in text
    assert "func.func @train_step(" in text and "return %" in text
    out = verify(text)
    assert "pf.softmax_cross_entropy" in out


@pytest.mark.parametrize("style", ["stage_id", "graph_module"])
def test_stage_config_spellings_agree(style):
    reference = PipelineGraph(PipelineModule()).trace(*seed_inputs())
    traced = PipelineGraph(PipelineModule(), style=style).trace(*seed_inputs())
    assert [op.stage for op in traced.ops] == [op.stage for op in reference.ops]
    assert [op.name for op in traced.ops] == [op.name for op in reference.ops]


def test_printing_is_deterministic():
    flow.manual_seed(1)
    a = PipelineGraph(PipelineModule()).ir(*seed_inputs())
    flow.manual_seed(2)
    b = PipelineGraph(PipelineModule()).ir(*seed_inputs())
    assert a == b


def test_parameter_rules_are_in_the_ir_and_the_cache_key(pf_opt):
    """Parameter groups put pf.optimizer on their parameters (pf-opt verifies
    them); changing a group's hyper-parameter changes the IR and so the
    compile cache entry."""
    module = PipelineModule()
    graph = PipelineGraph(module)
    sgd = flow.optim.SGD([{"params": module.m_stage0.parameters()},
                          {"params": module.m_stage1.parameters(), "momentum": 0.5}], lr=0.1)
    graph._optimizers.clear()
    graph.add_optimizer(sgd)
    x, y = seed_inputs()
    first = graph.compile(x, y)
    text = graph.ir(x, y)
    assert text.count('{pf.optimizer = {lr = "lr.o0.g1", momentum = 0.5 : f64}}') == 4
    sgd.param_groups[1]["momentum"] = 0.25
    second = graph.compile(x, y)
    assert 'momentum = 0.25 : f64' in graph.ir(x, y) and second.key != first.key


def test_options_and_compile_cache(pf_opt):
    graph = PipelineGraph(PipelineModule(), m=4)
    graph.config.set_pipeline_schedule("gpipe")
    x, y = seed_inputs()
    compiled = graph.compile(x, y)
    with open(compiled.ir_path) as f:
        text = f.read()
    assert text == graph.ir(x, y)
    with open(compiled.options_path) as f:
        options = json.load(f)
    assert options["gradient_accumulation_steps"] == 4 and options["pipeline"]["schedule"] == "gpipe"
    assert [s["id"] for s in options["pipeline"]["stages"]] == [0, 1]
    assert options["pipeline"]["stages"][1]["modules"] == ["module_pipeline.m_stage1"]
    assert options["optimizers"][0]["type"] == "SGD"
    assert options["optimizers"][0]["param_groups"][0]["params"][0] == "module_pipeline.m_stage0.linear0.weight"
    key = hashlib.sha256(text.encode() + b"\0" + json.dumps(options, sort_keys=True).encode()).hexdigest()
    assert compiled.key == key and os.path.basename(compiled.directory) == key[:32]
    assert compiled.directory.startswith(config.cache_dir())
    assert "pf.matmul" in compiled.verified_ir
    assert graph.compile(x, y).directory == compiled.directory


def test_gradient_bucket_size_reaches_the_compiler():
    graph = PipelineGraph(PipelineModule())
    x, y = seed_inputs()
    _, _, pipeline = graph._pipeline(graph.trace(x, y), None)
    assert "bucket-bytes" not in pipeline  # the compiler's default (25 MiB)
    graph.config.set_gradient_bucket_mbytes(0.5)
    _, _, pipeline = graph._pipeline(graph.trace(x, y), None)
    assert "bucket-bytes=524288" in pipeline.split()
    graph.config.set_gradient_bucket_mbytes(0)
    _, _, pipeline = graph._pipeline(graph.trace(x, y), None)
    assert "bucket-bytes=0" in pipeline.split()
    for bad in (-1, True, "25"):
        with pytest.raises(ValueError, match="bucket size"):
            graph.config.set_gradient_bucket_mbytes(bad)



@pytest.mark.parametrize("setter, bad, message", [
    ("set_gradient_accumulation_steps", 0, "gradient accumulation steps must be a positive integer, got 0"),
    ("set_gradient_accumulation_steps", True, "gradient accumulation steps must be a positive integer, got True"),
    ("set_gradient_accumulation_steps", 2.0, "gradient accumulation steps must be a positive integer, got 2.0"),
    ("set_pipeline_stages", -1, "the number of pipeline stages must be a positive integer, got -1"),
    ("set_pipeline_stages", "2", "the number of pipeline stages must be a positive integer, got '2'"),
])
def test_graph_config_rejects_bad_numbers(setter, bad, message):
    graph = PipelineGraph(PipelineModule())
    before = (graph.config.gradient_accumulation_steps, graph.config.pipeline_stages)
    with pytest.raises(ValueError, match=re.escape(message)):
        getattr(graph.config, setter)(bad)
    assert (graph.config.gradient_accumulation_steps, graph.config.pipeline_stages) == before
    with pytest.raises(ValueError, match="num_chunks must be a positive integer, got 0"):
        graph.config.set_pipeline_schedule("interleaved-1f1b", num_chunks=0)
    assert graph.config.num_chunks == 1

# Devices ---------------------------------------------------------------------------

def test_cuda_needs_an_explicit_opt_in(monkeypatch, verify):
    monkeypatch.setattr(config, "gpu_available", lambda: False)
    c0 = flow.placement("cuda", [0])  # <-- cuda-placement
    c1 = flow.placement("cuda", [1])

    def build():
        return PipelineGraph(PipelineModule(c0, c1), p0=c0, p1=c1)

    with pytest.raises(flow.CompileError, match="no GPU") as info:
        build().ir(*seed_inputs(p0=c0, p1=c1))
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "cuda-placement")
    assert "PIPEFLOW_CUDA_AS_CPU=1" in str(info.value)
    flow.config.cuda_as_cpu(True)
    text = build().ir(*seed_inputs(p0=c0, p1=c1))
    assert '"cuda"' not in text and '#pf.placement<"cpu", [1]>' in text
    verify(text)
    flow.config.cuda_as_cpu(False)
    monkeypatch.setenv("PIPEFLOW_CUDA_AS_CPU", "1")
    with pytest.raises(flow.CompileError):
        build().ir(*seed_inputs(p0=c0, p1=c1))
    monkeypatch.setattr(config, "_cuda_as_cpu", None)
    assert '"cuda"' not in build().ir(*seed_inputs(p0=c0, p1=c1))


def test_cuda_compiles_for_the_gpu_where_there_is_one(monkeypatch):
    # A machine with GPUs (as the front end sees it): "cuda" stays "cuda" and
    # the graph compiles with pf-compile-gpu-pipeline, one GPU a rank.
    monkeypatch.setattr(config, "gpu_available", lambda: True)
    c0 = flow.placement("cuda", [0])
    graph = PipelineGraph(PipelineModule(c0, c0), p0=c0, p1=c0)
    x, y = seed_inputs(p0=c0, p1=c0)
    compiled = graph.compile(x, y)
    assert compiler.backend_of(compiled.ir_path) == "cuda"
    _, _, pipeline = graph._pipeline(graph.trace(x, y), None)
    artifacts = compiler.build_cpu_artifacts(compiled, pipeline)
    assert artifacts.rank(0)["backend"] == "cuda"
    assert os.path.basename(artifacts.directory) == "cuda"
    # On CPUs the same program is "cpu" throughout.
    monkeypatch.setattr(config, "gpu_available", lambda: False)
    flow.config.cuda_as_cpu(True)
    graph = PipelineGraph(PipelineModule(c0, c0), p0=c0, p1=c0)
    compiled = graph.compile(*seed_inputs(p0=c0, p1=c0))
    assert compiler.backend_of(compiled.ir_path) == "cpu"


def _train_losses_and_state(c0, batches):
    flow.manual_seed(7)
    graph = PipelineGraph(PipelineModule(c0, c0), p0=c0, p1=c0)
    losses = [graph(x, y).numpy() for x, y in batches]
    state = {}

    def flatten(prefix, d):
        for k, v in d.items():
            if isinstance(v, dict):
                flatten(prefix + k + ".", v)
            else:
                state[prefix + k] = v.numpy()

    flatten("", graph.state_dict())
    return graph, np.stack(losses), state


def test_cuda_graph_trains_on_the_emulated_gpu(monkeypatch):
    # The GPU path of the front end end to end on libpfrt's host emulation
    # of the driver and cuBLASLt (PFRT_CUDA_FAKE=1): the program compiled for
    # the GPU runs in this process through pfrt_cuda_run_step (captured at
    # the second call, replayed after, with fresh inputs every call) and
    # trains like the same program on a CPU rank; its device-resident state
    # reads back through the host.
    c0 = flow.placement("cuda", [0])
    flow.manual_seed(1)
    batches = [seed_inputs(p0=c0, p1=c0) for _ in range(4)]
    monkeypatch.setattr(config, "gpu_available", lambda: True)
    monkeypatch.setenv("PFRT_CUDA_FAKE", "1")
    gpu, gpu_losses, gpu_state = _train_losses_and_state(c0, batches)
    assert gpu.artifacts.rank(0)["backend"] == "cuda"
    monkeypatch.setattr(config, "gpu_available", lambda: False)
    flow.config.cuda_as_cpu(True)
    cpu, cpu_losses, cpu_state = _train_losses_and_state(c0, batches)
    assert cpu.artifacts.rank(0)["backend"] == "cpu"
    assert gpu_losses.shape == (4, 2) and len(set(gpu_losses[:, 0].tolist())) == 4
    np.testing.assert_allclose(gpu_losses, cpu_losses, rtol=1e-5)
    assert gpu_state.keys() == cpu_state.keys()
    assert sum(k.endswith("weight") for k in cpu_state) == 3
    for key in cpu_state:
        np.testing.assert_allclose(gpu_state[key], cpu_state[key], rtol=1e-4, atol=1e-6)


def test_cuda_pipeline_stages_compile_for_two_gpus(monkeypatch):
    # Two stages on two GPUs hand activations over with the host-staged
    # transport's send/recv twins (where ranks share a GPU; NCCL's after a
    # first step that checks the message order): both ranks compile
    # for the GPU, and the program's staged calls are the device twins.
    monkeypatch.setattr(config, "gpu_available", lambda: True)
    c0, c1 = flow.placement("cuda", [0]), flow.placement("cuda", [1])
    graph = PipelineGraph(PipelineModule(c0, c1), p0=c0, p1=c1)
    x, y = seed_inputs(p0=c0, p1=c1)
    compiled = graph.compile(x, y)
    _, _, pipeline = graph._pipeline(graph.trace(x, y), None)
    artifacts = compiler.build_cpu_artifacts(compiled, pipeline)
    assert [artifacts.rank(r)["backend"] for r in (0, 1)] == ["cuda", "cuda"]
    with open(os.path.join(compiled.directory, "lowered.mlir")) as f:
        lowered = f.read()
    assert "@pfrt_cuda_isend_tracked" in lowered and "@pfrt_cuda_recv" in lowered
    assert "@pfrt_isend_tracked" not in lowered and "@pfrt_recv(" not in lowered


# Other models and layouts ----------------------------------------------------------

class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AvgPool2d(2, stride=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(self.bn(self.conv(x)).relu())
        x = self.gap(self.avg(x))
        return self.fc(x.flatten(1))


class SimpleGraph(nn.Graph):
    def __init__(self, model, optimizer=True):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        if optimizer:
            self.add_optimizer(flow.optim.Adam(model.parameters(), lr=1e-3))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def test_conv_batchnorm_graph(verify):
    model = ConvBlock().to_global(P0, B)
    x = flow.randn(4, 3, 16, 16).to_global(P0, B)
    y = flow.randint(0, 10, (4,)).to_global(P0, B)
    traced = SimpleGraph(model).trace(x, y)
    names = [op.name for op in traced.ops]
    assert names.count("pf.conv2d") == 1 and names.count("pf.batch_norm") == 1
    conv = traced.ops[names.index("pf.conv2d")]
    assert tuple(conv.attrs["stride"]) == (2, 2) and tuple(conv.attrs["padding"]) == (1, 1)
    assert conv.result.type.shape == (4, 8, 8, 8)
    assert traced.ops[names.index("pf.conv2d") + 2].name == "pf.bias_add"  # after the bias read
    bn = traced.ops[names.index("pf.batch_norm")]
    assert len(bn.results) == 3
    writes = [op for op in traced.ops if op.name == "pf.write_param"]
    assert [w.symbol for w in writes] == ["model.bn.running_mean", "model.bn.running_var"]
    assert writes[0].operands[0] is bn.results[1] and writes[1].operands[0] is bn.results[2]
    assert traced.params["model.bn.running_var"].buffer
    assert traced.params["model.bn.running_var"].init == "#pf.init<ones>"
    assert traced.params["model.bn.weight"].init == "#pf.init<ones>"
    avg = traced.ops[names.index("pf.avg_pool2d")]
    assert tuple(avg.attrs["stride"]) == (1, 1) and avg.result.type.shape == (4, 8, 3, 3)
    assert traced.ops[names.index("pf.global_avg_pool")].result.type.shape == (4, 8, 1, 1)
    text = traced.text()
    assert re.search(r"%\d+:3 = pf.batch_norm", text)
    assert "= #pf.init<zeros> buffer" in text
    verify(text)


def test_activation_checkpointing_marks_module_ops(verify):
    model = PipelineModule()
    graph = PipelineGraph(model)
    graph.module_pipeline.m_stage1.config.activation_checkpointing = True
    traced = graph.trace(*seed_inputs())
    marked = {op.stage for op in traced.ops if "pf.checkpoint" in op.attrs}
    assert marked == {1}
    assert all("pf.checkpoint" in op.attrs for op in traced.ops
               if op.stage == 1 and op.name not in ("pf.read_param", "pf.softmax_cross_entropy"))
    assert traced.options["activation_checkpointing"] == ["module_pipeline.m_stage1"]
    verify(traced.text())


def test_resnet50_two_stage_pipeline(verify):
    resnet = flow.models.resnet50(num_classes=10)
    seq = resnet.exec_seq()

    class TwoStages(nn.Module):
        def __init__(self):
            super().__init__()
            self.stage0 = nn.Sequential(*seq[:6]).to_global(P0, B)
            self.stage1 = nn.Sequential(*seq[6:]).to_global(P1, B)

        def forward(self, x):
            return self.stage1(self.stage0(x).to_global(P1, B))

    graph = SimpleGraph(TwoStages())
    graph.model.stage0.config.set_stage(0, P0)
    graph.model.stage1.config.set_stage(1, P1)
    graph.config.set_gradient_accumulation_steps(4)
    x = flow.randn(64, 3, 32, 32).to_global(P0, B)
    y = flow.randint(0, 10, (64,)).to_global(P1, B)
    traced = graph.trace(x, y)
    names = [op.name for op in traced.ops]
    assert names.count("pf.conv2d") == 53 and names.count("pf.batch_norm") == 53
    assert names.count("pf.write_param") == 106 and names.count("pf.add") == 16
    assert names.count("pf.to_global") == 1
    assert {op.stage for op in traced.ops if op.name != "pf.to_global"} == {0, 1}
    assert len(traced.params) == 161 + 106
    verify(traced.text())


def test_hybrid_parallel_layouts(verify):
    p01 = flow.placement("cpu", [0, 1])
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU())
    head = nn.Linear(512, 10)
    model.to_global(p01, flow.sbp.broadcast)
    head.to_global(p01, flow.sbp.split(0))

    class Hybrid(nn.Graph):
        def __init__(self):
            super().__init__()
            self.body, self.head = model, head
            self.loss_fn = nn.CrossEntropyLoss()

        def build(self, x, y):
            h = self.body(x).to_global(p01, flow.sbp.broadcast)
            loss = self.loss_fn(self.head(h), y)
            loss.backward()
            return loss

    x = flow.randn(8, 1, 28, 28).to_global(p01, flow.sbp.split(0))
    y = flow.randint(0, 10, (16,)).to_global(p01, flow.sbp.broadcast)
    traced = Hybrid().trace(x, y)
    assert traced.params["head.weight"].type.sbp == ("S(0)",)
    assert traced.params["body.1.weight"].type.sbp == ("B",)
    assert traced.function.args[0].type.shape == (16, 1, 28, 28)
    assert traced.function.args[0].type.sbp == ("S(0)",)
    verify(traced.text())


def test_relaid_out_parameter_keeps_its_initializer(verify):
    """A row-parallel layer re-lays out its weight as Megatron's layers do,
    ``nn.Parameter(w.to_global(placement, S(1)))``: the new parameter keeps
    the initializer (nobody read or set the weight, so the compiler
    reproduces it, as for the module left alone) and takes the new SBP; the
    bias keeps its own layout."""
    from pipeflow._trained import uses_recipe
    p01 = flow.placement("cpu", [0, 1])
    proj = nn.Linear(8, 4).to_global(p01, flow.sbp.broadcast)
    proj.weight = nn.Parameter(proj.weight.to_global(p01, flow.sbp.split(1)))
    graph = SimpleGraph(proj, optimizer=False)
    x = flow.randn(2, 8).to_global(p01, flow.sbp.broadcast)
    y = flow.randint(0, 4, (2,)).to_global(p01, flow.sbp.broadcast)
    traced = graph.trace(x, y)
    weight = traced.params["model.weight"]
    assert weight.init == "#pf.init<kaiming_uniform(8)>" and weight.type.sbp == ("S(1)",)
    assert uses_recipe(proj.weight) and uses_recipe(proj.bias) and traced.given == []
    assert traced.params["model.bias"].type.sbp == ("B",)
    verify(traced.text())


def test_nd_placement_graph(verify):
    mesh = flow.placement("cpu", [[0, 1], [2, 3]])
    model = nn.Linear(8, 4).to_global(mesh, [flow.sbp.broadcast, flow.sbp.split(0)])
    graph = SimpleGraph(model, optimizer=False)
    x = flow.randn(4, 8).to_global(mesh, [flow.sbp.split(0), flow.sbp.broadcast])
    y = flow.randint(0, 4, (8,)).to_global(mesh, [flow.sbp.broadcast, flow.sbp.broadcast])
    text = graph.ir(x, y)
    assert "#cpu_2x2_0_1_2_3 = #pf.placement<\"cpu\", [[0, 1], [2, 3]]>" in text
    assert "!pf.global<4x8xf32, #cpu_2x2_0_1_2_3, #pf.sbp<[B, S(0)]>>" in text
    verify(text)


def test_inference_graph_without_backward(verify):
    class Infer(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = flow.models.mlp().to_global(P0, B)

        def build(self, x):
            return self.model(x)

    traced = Infer().trace(flow.randn(2, 1, 28, 28).to_global(P0, B))
    assert traced.function.name == "forward" and traced.options["training"] is False
    verify(traced.text())


# Errors at the user's line -------------------------------------------------------

class WrongWidth(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(784, 10)

    def forward(self, x):
        return self.linear(x)  # <-- wrong-width


def test_error_linear_in_features():
    graph = SimpleGraph(WrongWidth().to_global(P0, B))
    x = flow.randn(16, 1, 28, 28).to_global(P0, B)
    y = flow.randint(0, 10, (16,)).to_global(P0, B)
    with pytest.raises(flow.CompileError, match="in_features=784") as info:
        graph.ir(x, y)
    err = info.value
    assert err.filename == HERE and err.lineno == line_of(HERE, "wrong-width")
    assert str(err).startswith(f"{HERE}:{err.lineno}: error:")


class CyclicModule(PipelineModule):
    def forward(self, x):
        out0 = self.m_stage0(x)
        out1 = self.m_stage1(out0.to_global(placement=self.p1, sbp=B))
        back = out1.to_global(placement=P0, sbp=B)
        return self.m_stage0.relu0(back)  # <-- cycle


def test_error_stage_cycle():
    graph = PipelineGraph(CyclicModule())
    graph.module_pipeline.m_stage0.relu0.config.set_stage(0)
    with pytest.raises(flow.CompileError, match="stage cycle") as info:
        graph.ir(*seed_inputs())
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "cycle")
    assert "later stage 1" in info.value.message


def test_error_micro_batches_do_not_divide_batch():
    graph = PipelineGraph(PipelineModule(), m=3)
    with pytest.raises(flow.CompileError, match="3 micro-batches.*batch size 16") as info:
        graph.ir(*seed_inputs())
    assert info.value.filename == SEED and info.value.lineno == line_of(SEED, "accumulation")


def test_error_micro_batch_split_over_ranks():
    p01 = flow.placement("cpu", [0, 1])
    graph = SimpleGraph(nn.Linear(4, 3).to_global(p01, B), optimizer=False)
    graph.config.set_gradient_accumulation_steps(4)  # <-- accumulation-split
    x = flow.randn(3, 4).to_global(p01, flow.sbp.split(0))
    y = flow.randint(0, 3, (6,)).to_global(p01, B)
    with pytest.raises(flow.CompileError, match="cannot share evenly|do not divide") as info:
        graph.ir(x, y)
    assert info.value.lineno == line_of(HERE, "accumulation-split")


def test_error_interleaved_needs_multiple_of_stages(verify):
    graph = PipelineGraph(PipelineModule(), m=3)
    graph.config.set_pipeline_schedule("interleaved-1f1b", num_chunks=1)  # <-- interleaved
    with pytest.raises(flow.CompileError, match="multiple of the number of pipeline stages") as info:
        graph.ir(*seed_inputs(batch=12))
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, "interleaved")
    ok = PipelineGraph(PipelineModule(), m=4)
    ok.config.set_pipeline_schedule("interleaved-1f1b")
    verify(ok.ir(*seed_inputs()))
    with pytest.raises(ValueError, match="interleaved"):
        ok.config.set_pipeline_schedule("1f1b", num_chunks=2)
    with pytest.raises(ValueError, match="unknown pipeline schedule"):
        ok.config.set_pipeline_schedule("pipedream")


class NoHandOver(PipelineModule):
    def forward(self, x):
        return self.m_stage1(self.m_stage0(x))  # <-- no-hand-over


def test_stage_inputs_move_to_the_stage_placement(verify):
    """As OneFlow's set_stage(stage_id, placement): an input of a staged
    module that lives on another placement moves there (one pf.to_global,
    like the explicit hand-over), so a model needs no to_global between its
    stages."""
    auto = PipelineGraph(NoHandOver()).ir(*seed_inputs())
    explicit = PipelineGraph(PipelineModule()).ir(*seed_inputs())
    verify(auto)
    moves = [line for line in auto.splitlines() if "pf.to_global" in line]
    assert moves and len(moves) == len([line for line in explicit.splitlines() if "pf.to_global" in line])


def test_error_local_inputs_and_parameters():
    graph = PipelineGraph(PipelineModule())
    x, y = seed_inputs()
    with pytest.raises(flow.CompileError, match="local tensor") as info:
        graph.ir(flow.randn(16, 1, 28, 28), y)  # <-- local-input
    assert info.value.lineno == line_of(HERE, "local-input")
    local_model = flow.models.mlp()
    with pytest.raises(flow.CompileError, match="parameter 'model.linear0.weight' is a local tensor"):
        SimpleGraph(local_model).ir(x, y.to_global(P0, B))


class DropoutModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(self.drop(x))  # <-- dropout


def test_dropout_is_traced_with_its_own_stream(verify):
    model = DropoutModel().to_global(P0, B)
    model.drop2 = nn.Dropout(0.25)
    x = flow.randn(2, 4).to_global(P0, B)
    y = flow.randint(0, 2, (2,)).to_global(P0, B)
    text = verify(SimpleGraph(model).ir(x, y))
    assert "pf.dropout" in text and "p = 1.000000e-01 : f64, stream = 1 : i64" in text, text
    ir_text = SimpleGraph(model).ir(x, y)
    line = next(t for t in ir_text.splitlines() if "pf.dropout" in t)
    assert f":{line_of(HERE, 'dropout')}:" in ir_text.split("pf.dropout", 1)[1].split("\n", 1)[0] or \
        f"{line_of(HERE, 'dropout')}" in line, line
    model.drop.eval()
    assert "pf.dropout" not in verify(SimpleGraph(model).ir(x, y))
    with pytest.raises(NotImplementedError, match="runs only inside nn.Graph"):
        nn.Dropout(0.5)(flow.randn(2, 4))


def test_error_backward_on_a_non_scalar():
    class Bad(nn.Graph):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2).to_global(P0, B)

        def build(self, x):
            out = self.fc(x)
            out.backward()  # <-- non-scalar
            return out

    with pytest.raises(flow.CompileError, match="scalar loss") as info:
        Bad().ir(flow.randn(2, 4).to_global(P0, B))
    assert info.value.lineno == line_of(HERE, "non-scalar")


def test_pf_opt_diagnostics_map_to_user_lines(pf_opt, tmp_path):
    user_file = str(tmp_path / "my model: v1.py")
    text = (
        'func.func @f(%a: !pf.global<4x8xf32, #pf.placement<"cpu", [0]>>, '
        '%b: !pf.global<3x5xf32, #pf.placement<"cpu", [0]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>> {\n'
        '  %0 = pf.matmul %a, %b {transpose_b} : (!pf.global<4x8xf32, #pf.placement<"cpu", [0]>>, '
        '!pf.global<3x5xf32, #pf.placement<"cpu", [0]>>) -> !pf.global<4x3xf32, #pf.placement<"cpu", [0]>> '
        f'loc("{user_file}":42:0)\n'
        '  return %0 : !pf.global<4x3xf32, #pf.placement<"cpu", [0]>>\n}\n')
    with pytest.raises(flow.CompileError, match="contraction sizes differ") as info:
        compiler.compile_ir(text, {"test": True})
    assert info.value.filename == user_file and info.value.lineno == 42
    with pytest.raises(flow.CompileError, match="internal error") as info:
        compiler.compile_ir("func.func @f( {\n", {"test": True})
    assert info.value.filename.endswith("graph.mlir") and info.value.lineno == 1


class TracedOpErrors(nn.Graph):
    """Traced ops whose operands pf's verifier rejects."""

    def __init__(self, case):
        super().__init__()
        self.case = case
        self.fc = nn.Linear(4, 3).to_global(P0, B)

    def build(self, x, y):
        if self.case == "matmul":
            return flow.matmul(x, self.fc.weight)  # <-- traced-matmul
        if self.case == "concat":  # (x + y promotes y to float32, as torch)
            return flow.cat([x, y.view(2, 1)], dim=1)  # <-- traced-concat
        return flow.relu(y)  # <-- traced-relu


@pytest.mark.parametrize("case, match", [
    ("matmul", r"'pf\.matmul' op contraction sizes differ: 4 \(lhs \[2, 4\]\) vs 3 \(rhs \[3, 4\]\)"),
    ("concat", r"'pf\.concat' op input element types differ: 'f32' vs 'i64'"),
    ("relu", r"'pf\.relu' op input must have a float element type, got 'i64'"),
])
def test_traced_op_checks_are_the_verifiers(pf_opt, case, match):
    """An op on traced tensors checks only what its result type needs: the
    rest is pf-opt's, whose error names the user's line when the graph
    compiles. Eager ops, which no compiler sees, still check in Python."""
    graph = TracedOpErrors(case)
    x, y = flow.randn(2, 4).to_global(P0, B), flow.randint(0, 3, (2,)).to_global(P0, B)
    assert f"pf.{case}" in graph.ir(x, y)
    with pytest.raises(flow.CompileError, match=match + r" \(reported by pf-opt\)") as info:
        graph.compile(x, y)
    assert info.value.filename == HERE and info.value.lineno == line_of(HERE, f"traced-{case}")
    assert str(info.value).startswith(f"{HERE}:{info.value.lineno}: error: ")
    with pytest.raises(ValueError, match="relu needs a floating-point input"):
        flow.relu(flow.tensor([1, 2]))


def test_find_pf_opt_honours_environment(monkeypatch, pf_opt, tmp_path):
    monkeypatch.setenv("PF_OPT", pf_opt)
    assert compiler.find_pf_opt() == os.path.abspath(pf_opt)
    monkeypatch.setenv("PF_OPT", str(tmp_path / "missing"))
    with pytest.raises(flow.CompilerNotFound, match="PF_OPT"):
        compiler.find_pf_opt()


def test_optimizer_must_belong_to_the_graph():
    stray = nn.Linear(2, 2)
    graph = PipelineGraph(PipelineModule())
    graph.add_optimizer(flow.optim.SGD(stray.parameters(), lr=0.1))  # <-- stray-optimizer
    with pytest.raises(flow.CompileError, match="belongs to no module") as info:
        graph.ir(*seed_inputs())
    assert info.value.lineno == line_of(HERE, "stray-optimizer")


def test_changed_settings_trace_again():
    graph = PipelineGraph(PipelineModule())
    x, y = seed_inputs()
    first = graph.trace(x, y)
    assert graph.trace(x, y) is first  # same inputs and settings: cached
    graph.module_pipeline.m_stage1.config.activation_checkpointing = True
    second = graph.trace(x, y)
    assert second is not first and any("pf.checkpoint" in op.attrs for op in second.ops)
    graph.config.set_gradient_accumulation_steps(3)
    with pytest.raises(flow.CompileError, match="do not divide"):
        graph.trace(x, y)
    graph.config.set_gradient_accumulation_steps(4)
    assert graph.trace(x, y).options["gradient_accumulation_steps"] == 4
    assert graph.trace() is graph.trace(x, y)


def test_error_placement_beyond_the_job(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    p3 = flow.placement("cpu", [3])  # <-- rank-beyond
    model = nn.Linear(4, 2).to_global(p3, B)
    x = flow.randn(2, 4).to_global(p3, B)
    y = flow.randint(0, 2, (2,)).to_global(p3, B)
    with pytest.raises(flow.CompileError, match="uses rank 3 but the job has only 2 processes") as info:
        SimpleGraph(model).ir(x, y)
    assert info.value.lineno == line_of(HERE, "rank-beyond")


def test_sequential_proxies_index_and_iterate():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)).to_global(P0, B)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    graph = G()
    assert len(graph.model) == 3
    graph.model[2].config.set_stage(1, P0)
    graph.model[0].config.set_stage(0, P0)
    assert [p.to(nn.Module) for p in graph.model] == list(model)
    assert graph.model[2].config.stage_id == 1 and graph.model[0]._name == "model.0"
    traced = graph.trace(flow.randn(3, 4).to_global(P0, B))
    assert [op.stage for op in traced.ops if op.name == "pf.matmul"] == [0, 1]
