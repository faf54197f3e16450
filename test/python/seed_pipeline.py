"""The seeds' pipeline model (OneFlow seeds 001 and 003, as
examples/python/pipeline.py writes it), which the tests trace
(test_graph.py), train in this process against the NumPy reference
(test_run.py, test_state.py) and launch on two ranks (test_run_launch.py).

Stage 0 (Flatten, Linear(784, 512), ReLU) on ``p0``, stage 1 (Linear(512,
512), ReLU, Linear(512, 10), ReLU and the loss) on ``p1``. The lines marked
``# <-- name`` are where test_graph.py expects the traced ops' locations.
"""

import pipeflow as flow
from pipeflow import nn
from pipeflow.nn.graph import GraphModule

B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[1])


class Stage0Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear0 = nn.Linear(28 * 28, 512)
        self.relu0 = nn.ReLU()

    def forward(self, x):
        out = self.flatten(x)
        out = self.linear0(out)  # <-- linear0-call
        out = self.relu0(out)
        return out


class Stage1Module(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(512, 512)
        self.relu1 = nn.ReLU()
        self.linear2 = nn.Linear(512, 10)
        self.relu2 = nn.ReLU()

    def forward(self, x):
        out = self.linear1(x)
        out = self.relu1(out)
        out = self.linear2(out)
        out = self.relu2(out)
        return out


class PipelineModule(nn.Module):
    def __init__(self, p0=P0, p1=P1):
        super().__init__()
        self.p1 = p1
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()
        self.m_stage0.to_global(placement=p0, sbp=B)
        self.m_stage1.to_global(placement=p1, sbp=B)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        in_stage1 = out_stage0.to_global(placement=self.p1, sbp=B)  # <-- stage-hand-over
        return self.m_stage1(in_stage1)


class PipelineGraph(nn.Graph):
    """The seed's graph: the stages set in one of the seeds' spellings
    (``style``: ``set_stage``, seed 000's ``stage_id`` or seed 003's
    GraphModule), ``m`` micro-batches, ``optimizer`` (SGD at 0.001 when none
    is given) with ``lr_sch``, the pipeline ``schedule`` where given."""

    def __init__(self, module, optimizer=None, m=2, lr_sch=None, p0=P0, p1=P1, style="set_stage",
                 schedule=None):
        super().__init__()
        self.module_pipeline = module
        if style == "set_stage":
            self.module_pipeline.m_stage0.config.set_stage(stage_id=0, placement=p0)
            self.module_pipeline.m_stage1.config.set_stage(stage_id=1, placement=p1)
        elif style == "stage_id":
            self.module_pipeline.m_stage0.config.stage_id = 0
            self.module_pipeline.m_stage1.config.stage_id = 1
        else:
            # both spellings of the class: imported, and by its path
            self.module_pipeline.m_stage0.to(GraphModule).set_stage(stage_id=0, placement=p0)
            self.module_pipeline.m_stage1.to(nn.graph.GraphModule).set_stage(stage_id=1, placement=p1)
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(m)  # <-- accumulation
        if schedule is not None:
            self.config.set_pipeline_schedule(schedule)
        if optimizer is None:
            optimizer = flow.optim.SGD(module.parameters(), lr=0.001)
        self.add_optimizer(optimizer, lr_sch=lr_sch)

    def build(self, x, y):
        out = self.module_pipeline(x)
        loss = self.loss_fn(out, y)  # <-- loss-call
        loss.backward()
        return loss
