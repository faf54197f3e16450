"""The quick-start MLP of OneFlow's pipeline seeds (000, 001 and 003) in the
seeds' two stages: Flatten, Linear(784, 512), ReLU, then Linear(512, 512),
ReLU, Linear(512, 10), ReLU. pipeline.py and pipeline_consistent.py place
them on ranks 0 and 1, each in its API's spelling (not an example itself)."""

import pipeflow as flow


class Stage0Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = flow.nn.Flatten()
        self.linear0 = flow.nn.Linear(28 * 28, 512)
        self.relu0 = flow.nn.ReLU()

    def forward(self, x):
        out = self.flatten(x)
        out = self.linear0(out)
        out = self.relu0(out)
        return out


class Stage1Module(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = flow.nn.Linear(512, 512)
        self.relu1 = flow.nn.ReLU()
        self.linear2 = flow.nn.Linear(512, 10)
        self.relu2 = flow.nn.ReLU()

    def forward(self, x):
        out = self.linear1(x)
        out = self.relu1(out)
        out = self.linear2(out)
        out = self.relu2(out)
        return out
