"""Models and graphs several test files share (in this process and in the
scripts they launch): a two-layer MLP, a training graph (mean cross-entropy
of ``model(x)`` against ``y``) and an inference graph over one module."""

import pipeflow as flow
from pipeflow import nn


class MLP(nn.Module):
    """fc1, ReLU, fc2: ``inputs -> hidden -> classes``."""

    def __init__(self, inputs, hidden, classes):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class HybridMLP(nn.Module):
    """Seed 004's MLP: Flatten, ``hidden`` Linear(784, 64), ReLU, ``output``
    Linear(64, 10), the two layers on ``placement`` with ``hidden_sbp`` and
    ``output_sbp``; the hidden activations become ``gather_sbp`` before the
    output layer where it is given."""

    def __init__(self, placement, hidden_sbp, output_sbp, gather_sbp=None):
        super().__init__()
        self.flatten = nn.Flatten()
        self.hidden = nn.Linear(28 * 28, 64)
        self.relu = nn.ReLU()
        self.output = nn.Linear(64, 10)
        self.hidden.to_global(placement=placement, sbp=hidden_sbp)
        self.output.to_global(placement=placement, sbp=output_sbp)
        self.gather_sbp = gather_sbp

    def forward(self, x):
        h = self.relu(self.hidden(self.flatten(x)))
        if self.gather_sbp is not None:
            h = h.to_global(sbp=self.gather_sbp)
        return self.output(h)


class Train(nn.Graph):
    """Trains ``model`` with ``optimizer`` (plain SGD at ``lr`` when none is
    given) and ``lr_sch``; ``m`` micro-batches, ``stages`` automatic pipeline
    stages balanced by ``balance``, ``chunks`` virtual stages per rank
    (interleaved 1F1B) where given; gradient all-reduces in
    ``gradient_dtype`` where given."""

    def __init__(self, model, optimizer=None, lr=None, lr_sch=None, m=None, stages=None, balance="flops",
                 chunks=1, generated=False, gradient_dtype=None):
        super().__init__()
        self.config.enable_generated_kernels(generated)
        if gradient_dtype is not None:
            self.config.set_gradient_dtype(gradient_dtype)
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        if m is not None:
            self.config.set_gradient_accumulation_steps(m)
        if stages:
            self.config.set_pipeline_stages(stages, balance=balance)  # <-- set-pipeline-stages
        if chunks > 1:
            self.config.set_pipeline_schedule("interleaved-1f1b", num_chunks=chunks)
        if optimizer is None:
            optimizer = flow.optim.SGD(model.parameters(), lr=lr)
        self.add_optimizer(optimizer, lr_sch=lr_sch)

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
