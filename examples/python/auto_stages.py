"""An 8-layer MLP written on one rank, cut into pipeline stages by the compiler.

The model and its inputs live on one placement (rank 0) and no module has a
stage: ``config.set_pipeline_stages(n)`` asks the compiler (pf-auto-stages)
to cut the step into ``n`` contiguous stages of balanced cost
(``--balance flops|params|memory``) and to run stage ``k`` on rank ``k``;
the labels are read on the last stage and the loss comes back on its rank.
From the repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/auto_stages.py

trains 20 steps (SGD with momentum, 4 micro-batches, 1F1B); rank 0 prints
the compiler's cut (``graph.stage_report()``), and each rank prints
``loss.to_local()``: the 4 micro-batch losses on rank 1, an empty tensor on
rank 0. ``--stages 4`` needs 4 processes; ``--chunks 2`` runs interleaved
1F1B with 2 virtual chunks per rank. ``--compile-only`` traces, verifies and
prints the (unstaged) IR and the cut::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 examples/python/auto_stages.py --compile-only
"""

import _common

import pipeflow as flow
from pipeflow import nn

parser = _common.parser(__doc__)
parser.add_argument("--stages", type=int, default=2, help="pipeline stages (processes; default 2)")
parser.add_argument("--chunks", type=int, default=1, help="virtual chunks per stage (interleaved 1F1B)")
parser.add_argument("--balance", default="flops", choices=("flops", "params", "memory"))
parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
parser.add_argument("--seed", type=int, default=0, help="seed of the data and the parameters (default 0)")
args = parser.parse_args()
flow.manual_seed(args.seed)

P = flow.placement("cuda", ranks=[0])
B = flow.sbp.broadcast
WIDTHS = (64, 256, 128, 128, 96, 64, 64, 32, 10)

model = nn.Sequential(*[layer for i, (a, b) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:], strict=True))
                        for layer in ([nn.Linear(a, b)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else []))])
model.to_global(placement=P, sbp=B)
sgd = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


class AutoStagesGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(4)
        self.config.set_pipeline_stages(args.stages, balance=args.balance)
        if args.chunks > 1:
            self.config.set_pipeline_schedule("interleaved-1f1b", num_chunks=args.chunks)
        self.add_optimizer(sgd)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = AutoStagesGraph()
x = flow.randn(32, WIDTHS[0]).to_global(placement=P, sbp=B)
y = flow.randint(0, WIDTHS[-1], (32,)).to_global(placement=P, sbp=B)

if args.compile_only:
    _common.print_verified_ir(graph, x, y, notes=graph.stage_report)
else:
    for i in range(args.steps):
        loss = graph(x, y)
        if i == 0 and flow.env.get_rank() == 0:
            print(graph.stage_report(), end="", flush=True)
        print(loss.to_local())
