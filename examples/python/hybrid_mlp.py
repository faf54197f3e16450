"""Seed 004's hybrid-parallel MLP in the global-tensor API, on ranks 0 and 1.

The hidden layer is data-parallel: its parameters are broadcast and the
batch is split, S(0). The output layer is model-parallel: its weight
[10, 512] is split S(0) (by output feature), so with the gathered hidden
activations as input, ``x @ W^T`` comes out split by columns, S(1).

It does not run yet: placements of several ranks need SBP lowering (the
compiler's boxing into collectives), which is not implemented, so training
stops with the compiler's ``pipeflow.CompileError`` at the line that creates
the first such layer. ``--compile-only`` traces and verifies the IR::

    PYTHONPATH=python PIPEFLOW_CUDA_AS_CPU=1 /usr/bin/python3 examples/python/hybrid_mlp.py --compile-only
"""

import argparse

import pipeflow as flow
from pipeflow import nn

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--compile-only", action="store_true", help="trace and verify, print the IR, do not train")
args = parser.parse_args()

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
sgd = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


class HybridGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(sgd)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


graph = HybridGraph()

# Each rank loads its share of the batch; to_global(S(0)) joins the shares.
x = flow.randn(BATCH_SIZE // P01.size, 1, 28, 28).to_global(placement=P01, sbp=S0)
y = flow.randint(0, 10, (BATCH_SIZE,)).to_global(placement=P01, sbp=B)

if args.compile_only:
    compiled = graph.compile(x, y)
    print(compiled.verified_ir, end="")
    print(f"// verified by pf-opt; cached in {compiled.directory}")
else:
    for i in range(20):
        loss = graph(x, y)
        print(loss.to_local())
