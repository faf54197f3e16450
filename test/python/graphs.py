"""Graphs several test files share: a training graph (mean cross-entropy of
``model(x)`` against ``y``, plain SGD) and an inference graph over one
module."""

import pipeflow as flow
from pipeflow import nn


class Train(nn.Graph):
    def __init__(self, model, lr, generated=False):
        super().__init__()
        self.config.enable_generated_kernels(generated)
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=lr))

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


class Infer(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)
