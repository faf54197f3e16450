"""Colossal-AI's pipeline-parallel ResNet-50 example in PipeFlow's API.

Colossal-AI splits torchvision's ResNet-50 along ``exec_seq`` into 2
pipeline stages and feeds 4 micro-batches of CIFAR-10 (batch 64) with the
1F1B schedule and Adam (lr 1e-3). Here the same split is two stage modules
on ranks 0 and 1, with synthetic CIFAR-shaped data (3x32x32, 10 classes).
From the repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/resnet50_pipeline.py --steps 10

Colossal-AI's ``LinearWarmupLR`` is replaced by ``CosineAnnealingLR``.
"""

import _common

import pipeflow as flow
from pipeflow import nn
from pipeflow.models import resnet50

parser = _common.parser(__doc__)
parser.add_argument("--steps", type=int, default=2 * 782, help="training steps (2 epochs of CIFAR-10)")
parser.add_argument("--seed", type=int, default=None, help="flow.manual_seed for the parameters and data")
parser.add_argument("--one-rank", action="store_true",
                    help="both stages on rank 0 (one process, micro-batches in order): the reference run")
parser.add_argument("--print-every", type=int, default=50, help="print the losses every this many steps")
args = parser.parse_args()
if args.seed is not None:
    flow.manual_seed(args.seed)

BATCH_SIZE = 64
NUM_MICRO_BATCHES = 4
B = [flow.sbp.broadcast]
P0 = flow.placement("cuda", ranks=[0])
P1 = flow.placement("cuda", ranks=[0] if args.one_rank else [1])


class PipelineResNet(nn.Module):
    """ResNet-50 cut after layer2 (exec_seq: conv1 .. layer2 | layer3 .. fc)."""

    def __init__(self, num_classes=10):
        super().__init__()
        seq = resnet50(num_classes=num_classes).exec_seq()
        self.stage0 = nn.Sequential(*seq[:6])
        self.stage1 = nn.Sequential(*seq[6:])
        self.stage0.to_global(placement=P0, sbp=B)
        self.stage1.to_global(placement=P1, sbp=B)

    def forward(self, x):
        x = self.stage0(x)
        return self.stage1(x.to_global(placement=P1, sbp=B))


model = PipelineResNet()
optimizer = flow.optim.Adam(model.parameters(), lr=1e-3)
lr_scheduler = flow.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)


class ResNetPipelineGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.model.stage0.config.set_stage(stage_id=0, placement=P0)
        self.model.stage1.config.set_stage(stage_id=1, placement=P1)
        self.criterion = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(NUM_MICRO_BATCHES)
        if not args.one_rank:
            self.config.set_pipeline_schedule("1f1b")
        self.add_optimizer(optimizer, lr_sch=lr_scheduler)

    def build(self, images, labels):
        loss = self.criterion(self.model(images), labels)
        loss.backward()
        return loss


graph = ResNetPipelineGraph()
images = flow.randn(BATCH_SIZE, 3, 32, 32).to_global(placement=P0, sbp=B)
labels = flow.randint(0, 10, (BATCH_SIZE,)).to_global(placement=P1, sbp=B)

if args.compile_only:
    _common.print_verified_ir(graph, images, labels)
else:
    for step in range(args.steps):
        loss = graph(images, labels)
        if step % args.print_every == 0:
            print(step, loss.to_local())
