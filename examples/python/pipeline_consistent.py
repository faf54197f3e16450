"""Seed 000: the pipeline example in OneFlow's older API.

``flow.placement("cuda", {0: [1]})`` (node -> devices), ``to_consistent`` and
``config.stage_id = k``; otherwise the same program as ``pipeline.py`` (the
same stages, from _quickstart.py). From the repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/pipeline_consistent.py
"""

import _common
from _quickstart import Stage0Module, Stage1Module

import pipeflow as flow

parser = _common.parser(__doc__)
args = parser.parse_args()

BATCH_SIZE = 16
DEVICE = "cuda"
BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", {0: [0]})
P1 = flow.placement("cuda", {0: [1]})


class PipelineModule(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()

        self.m_stage0.to_consistent(placement=P0, sbp=BROADCAST)
        self.m_stage1.to_consistent(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_consistent(placement=P1, sbp=BROADCAST)
        out_stage1 = self.m_stage1(in_stage1)
        return out_stage1


module_pipeline = PipelineModule()
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)


class PipelineGraph(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.module_pipeline = module_pipeline
        self.module_pipeline.m_stage0.config.stage_id = 0
        self.module_pipeline.m_stage1.config.stage_id = 1
        self.loss_fn = flow.nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(2)
        self.add_optimizer(sgd)

    def build(self, x, y):
        out = self.module_pipeline(x)
        loss = self.loss_fn(out, y)
        loss.backward()
        return loss


graph_pipeline = PipelineGraph()

x = flow.randn(BATCH_SIZE, 1, 28, 28)
x = x.to_consistent(P0, BROADCAST)
y = flow.randint(0, 10, (BATCH_SIZE,))
y = y.to_consistent(P1, BROADCAST)

if args.compile_only:
    _common.print_verified_ir(graph_pipeline, x, y)
else:
    for _ in range(20):
        loss = graph_pipeline(x, y)
        print(loss.to_local())
