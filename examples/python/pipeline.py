"""Pipeline-parallel training of the quick-start MLP (OneFlow seeds 001 and 003).

Stage 0 (Flatten, Linear(784, 512), ReLU) runs on rank 0, stage 1 (the
rest and the loss) on rank 1, with 2 micro-batches per step. From the
repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/pipeline.py

trains 20 steps on two CPU ranks; each rank prints ``loss.to_local()``: the 2
micro-batch losses on rank 1, an empty tensor on rank 0. ``--compile-only``
stops after tracing and verifying the step with pf-opt and prints the IR.
``--graph-module`` uses seed 003's ``.to(nn.graph.GraphModule).set_stage``.
The program is the seed's apart from the imports (the seed's two stage
modules are in _quickstart.py, which pipeline_consistent.py shares) and the
device mapping (``PIPEFLOW_CUDA_AS_CPU=1`` runs the "cuda" placements on CPUs).
"""

import _common
from _quickstart import Stage0Module, Stage1Module

import pipeflow as flow
from pipeflow import nn

parser = _common.parser(__doc__)
parser.add_argument("--graph-module", action="store_true", help="seed 003's GraphModule spelling of set_stage")
args = parser.parse_args()

BATCH_SIZE = 16
BROADCAST = [flow.sbp.broadcast]
P0 = flow.placement("cuda", ranks=[0])
P1 = flow.placement("cuda", ranks=[1])


class PipelineModule(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()

        self.m_stage0.to_global(placement=P0, sbp=BROADCAST)
        self.m_stage1.to_global(placement=P1, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_global(placement=P1, sbp=BROADCAST)
        out_stage1 = self.m_stage1(in_stage1)
        return out_stage1


module_pipeline = PipelineModule()
sgd = flow.optim.SGD(module_pipeline.parameters(), lr=0.001)


class PipelineGraph(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.module_pipeline = module_pipeline
        if args.graph_module:
            self.module_pipeline.m_stage0.to(nn.graph.GraphModule).set_stage(stage_id=0, placement=P0)
            self.module_pipeline.m_stage1.to(nn.graph.GraphModule).set_stage(stage_id=1, placement=P1)
        else:
            self.module_pipeline.m_stage0.config.set_stage(stage_id=0, placement=P0)
            self.module_pipeline.m_stage1.config.set_stage(stage_id=1, placement=P1)
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
x = x.to_global(P0, BROADCAST)
y = flow.randint(0, 10, (BATCH_SIZE,))
y = y.to_global(P1, BROADCAST)

if args.compile_only:
    _common.print_verified_ir(graph_pipeline, x, y)
else:
    for _ in range(20):
        loss = graph_pipeline(x, y)
        print(loss.to_local())
