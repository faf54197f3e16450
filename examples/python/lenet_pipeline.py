"""LeNet-5 in a 2-stage pipeline: convolutions on rank 0, classifier on rank 1.

4 micro-batches per step, SGD with momentum and weight decay, and a StepLR
schedule (the schedule's learning rate feeds the compiled step every step).
From the repository root::

    PYTHONPATH=python /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/lenet_pipeline.py

Each rank runs its micro-batches in the 1F1B order that
``set_pipeline_schedule("1f1b")`` asks for.
"""

import _common

import pipeflow as flow
from pipeflow import nn
from pipeflow.models import LeNet

parser = _common.parser(__doc__)
parser.add_argument("--seed", type=int, default=None, help="flow.manual_seed for the parameters and data")
parser.add_argument("--one-rank", action="store_true",
                    help="both stages on rank 0 (one process, micro-batches in order): the reference run")
args = parser.parse_args()
if args.seed is not None:
    flow.manual_seed(args.seed)

BATCH_SIZE = 32
B = [flow.sbp.broadcast]
P0 = flow.placement("cpu", ranks=[0])
P1 = flow.placement("cpu", ranks=[0] if args.one_rank else [1])


class LeNetPipeline(nn.Module):
    def __init__(self):
        super().__init__()
        lenet = LeNet(num_classes=10)
        self.stage0 = lenet.features
        self.stage1 = lenet.classifier
        self.stage0.to_global(placement=P0, sbp=B)
        self.stage1.to_global(placement=P1, sbp=B)

    def forward(self, x):
        features = self.stage0(x)
        return self.stage1(features.to_global(placement=P1, sbp=B))


model = LeNetPipeline()
sgd = flow.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
schedule = flow.optim.lr_scheduler.StepLR(sgd, step_size=10, gamma=0.5)


class LeNetGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.model.stage0.config.set_stage(stage_id=0, placement=P0)
        self.model.stage1.config.set_stage(stage_id=1, placement=P1)
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(4)
        if not args.one_rank:
            self.config.set_pipeline_schedule("1f1b")
        self.add_optimizer(sgd, lr_sch=schedule)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = LeNetGraph()
x = flow.randn(BATCH_SIZE, 1, 28, 28).to_global(placement=P0, sbp=B)
y = flow.randint(0, 10, (BATCH_SIZE,)).to_global(placement=P1, sbp=B)

if args.compile_only:
    _common.print_verified_ir(graph, x, y)
else:
    for step in range(20):
        loss = graph(x, y)
        print(step, loss.to_local())
