"""Seed 004's hybrid-parallel MLP in the global-tensor API, on ranks 0 and 1.

The hidden layer is data-parallel: its parameters are broadcast and the
batch is split, S(0). The output layer is model-parallel: its weight
[10, 512] is split S(0) (by output feature), so with the gathered hidden
activations as input, ``x @ W^T`` comes out split by columns, S(1). The
compiler infers the other layouts and inserts the collectives. From the
repository root::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 -m pipeflow.distributed.launch --nproc_per_node 2 examples/python/hybrid_mlp.py

trains 20 steps (SGD with momentum) on two CPU ranks; each rank prints
``loss.to_local()``: the loss is broadcast on both ranks, so both print it.
Each rank passes only its own share of the batch (the rows it would load);
``--micro-batches 2`` splits every step into two micro-batches, whose rows
the ranks then exchange. ``--seed`` seeds the data and the parameters (the
same on every rank), ``--lr`` sets the learning rate. ``--save DIR`` writes a
checkpoint after training (``graph.save_checkpoint``: one logical .npy per
parameter and momentum buffer, and the step), and ``--load DIR`` starts from
one (``graph.load_state_dict(flow.load(DIR))``), saved under any layout,
also by ``pf-run --save``. ``--compile-only`` traces and verifies the IR::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 examples/python/hybrid_mlp.py --compile-only
"""

import _common

import pipeflow as flow
from pipeflow import nn

parser = _common.parser(__doc__)
parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
parser.add_argument("--micro-batches", type=int, default=1, help="gradient accumulation steps (default 1)")
parser.add_argument("--seed", type=int, default=0, help="seed of the data and the parameters (default 0)")
parser.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
parser.add_argument("--load", metavar="DIR", help="start from the checkpoint in DIR")
parser.add_argument("--save", metavar="DIR", help="write a checkpoint to DIR after training")
args = parser.parse_args()
# The same seed on every rank: the compiled program initialises the parameters
# from it, and the broadcast labels below must be the same on both ranks.
flow.manual_seed(args.seed)

BATCH_SIZE = 16
P01 = flow.placement("cuda", ranks=[0, 1])
B = flow.sbp.broadcast
S0 = flow.sbp.split(0)


class HybridMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(28 * 28, 512)
        self.relu = nn.ReLU()
        self.output = nn.Linear(512, 10)
        self.hidden.to_global(placement=P01, sbp=B)   # data parallel: every rank holds the layer
        self.output.to_global(placement=P01, sbp=S0)  # model parallel: weight rows (outputs) split

    def forward(self, x):
        hidden = self.relu(self.hidden(self.flatten(x)))   # batch split, S(0)
        hidden = hidden.to_global(placement=P01, sbp=B)    # gather the batch for the split layer
        return self.output(hidden)                         # (B, S(0) weight) -> logits S(1)


model = HybridMLP()
sgd = flow.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)


class HybridGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.config.set_gradient_accumulation_steps(args.micro_batches)
        self.add_optimizer(sgd)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = HybridGraph()

# Each rank keeps only its share of the batch (drawn whole here; a data loader
# would read just this rank's rows); to_global(S(0)) joins the shares.
images = flow.randn(BATCH_SIZE, 1, 28, 28)
labels = flow.randint(0, 10, (BATCH_SIZE,))
share = BATCH_SIZE // P01.size
rank = flow.env.get_rank()
x = images[rank * share:(rank + 1) * share].to_global(placement=P01, sbp=S0)
y = labels.to_global(placement=P01, sbp=B)

if args.compile_only:
    _common.print_verified_ir(graph, x, y)
else:
    if args.load:
        graph.load_state_dict(flow.load(args.load))  # every process loads the whole values
    for _ in range(args.steps):
        loss = graph(x, y)
        print(loss.to_local())
    if args.save:
        graph.save_checkpoint(args.save)  # collective: rank 0 writes, every rank returns when done
        if rank == 0:
            print(f"saved to {args.save}")
