"""The quick-start MLP of OneFlow's pipeline seeds (000, 001 and 003) in the
seeds' two stages: Flatten, Linear(784, 512), ReLU, then Linear(512, 512),
ReLU, Linear(512, 10), ReLU; and the seeds' pipeline of them (not an example
itself). pipeline.py and pipeline_consistent.py place the stages on ranks 0
and 1, each in its API's spelling; the front-end tests trace and train the
same program (test/python/seed_pipeline.py). The lines marked ``# <-- name``
are where test/python/test_graph.py expects the traced ops' locations."""

import pipeflow as flow
from pipeflow import nn
from pipeflow.nn.graph import GraphModule

BROADCAST = [flow.sbp.broadcast]


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
    """Stage 0 on ``p0``, stage 1 (and the hand-over to it) on ``p1``, both
    broadcast; ``consistent``: moved with seed 000's ``to_consistent``
    rather than ``to_global``."""

    def __init__(self, p0, p1, consistent=False):
        super().__init__()
        self.p0 = p0
        self.p1 = p1
        self.consistent = consistent
        self.m_stage0 = Stage0Module()
        self.m_stage1 = Stage1Module()
        for stage, placement in ((self.m_stage0, p0), (self.m_stage1, p1)):
            move = stage.to_consistent if consistent else stage.to_global
            move(placement=placement, sbp=BROADCAST)

    def forward(self, x):
        out_stage0 = self.m_stage0(x)
        move = out_stage0.to_consistent if self.consistent else out_stage0.to_global
        in_stage1 = move(placement=self.p1, sbp=BROADCAST)  # <-- stage-hand-over
        return self.m_stage1(in_stage1)


class PipelineGraph(nn.Graph):
    """The seed's graph: the stages set in one of the seeds' spellings
    (``style``: ``set_stage``, seed 000's ``stage_id`` or seed 003's
    GraphModule, at ``p0`` and ``p1``: the module's placements unless
    given), ``m`` micro-batches, ``optimizer`` (SGD at 0.001 when none is
    given) with ``lr_sch``, the pipeline ``schedule`` where given."""

    def __init__(self, module, optimizer=None, m=2, lr_sch=None, p0=None, p1=None, style="set_stage",
                 schedule=None):
        super().__init__()
        p0 = module.p0 if p0 is None else p0
        p1 = module.p1 if p1 is None else p1
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

