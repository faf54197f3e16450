"""
The training loop of nanoGPT's ``train.py`` in PipeFlow's graph form, on one
process (nanoGPT's DDP, autocast and GradScaler are left out: the compiled
step is float32 and a layout of several ranks is a graph setting, see
../gpt.py). From the repository root::

    PYTHONPATH=python /usr/bin/python3 examples/python/nanogpt/train.py --max_iters=20

(``--compile-only``: trace, verify with pf-opt and print the IR.)

Settings are nanoGPT's globals below, overridden by ``--key=value``
arguments (its configurator.py). The data are nanoGPT's: ``train.bin`` and
``val.bin`` of uint16 tokens in ``data_dir``, read through ``np.memmap``,
and ``meta.pkl`` with the vocabulary size; when ``data_dir`` has none, the
characters of /usr/share/common-licenses/GPL-3 are encoded into it the way
nanoGPT's shakespeare_char/prepare.py encodes Shakespeare.

What changes for a graph-compiled framework is marked ``# PipeFlow:``: the
micro-steps of gradient accumulation and the backward pass, the clipping
and the update are one compiled step (``TrainGraph``; its input is the
micro-steps' batches, stacked), and the evaluation runs an inference graph
(``EvalGraph``) traced with the model in eval mode. The learning rate goes
into ``optimizer.param_groups`` every iteration, as in nanoGPT: it is a
run-time input of the compiled step, so nothing compiles again.
"""

import ast
import math
import os
import pickle
import sys
import tempfile
import time

import numpy as np

import pipeflow as flow
from pipeflow import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import GPT, GPTConfig  # noqa: E402

# -----------------------------------------------------------------------------
# default config values: a character-level model small enough for a CPU
# I/O
out_dir = ''  # PipeFlow: empty: no checkpoints (nanoGPT: 'out')
eval_interval = 10
log_interval = 1
eval_iters = 4
eval_only = False  # if True, script exits right after the first eval
always_save_checkpoint = False  # if True, always save a checkpoint after each eval
# data
data_dir = os.path.join(tempfile.gettempdir(), 'pipeflow-nanogpt-gpl3-char')
gradient_accumulation_steps = 2  # used to simulate larger batch sizes
batch_size = 4  # if gradient_accumulation_steps > 1, this is the micro-batch size
block_size = 32
# model
n_layer = 2
n_head = 2
n_embd = 64
dropout = 0.0  # for pretraining 0 is good, for finetuning try 0.1+
bias = False  # do we use bias inside LayerNorm and Linear layers?
# adamw optimizer
learning_rate = 1e-3  # max learning rate
max_iters = 40  # total number of training iterations
weight_decay = 1e-1
beta1 = 0.9
beta2 = 0.99
grad_clip = 1.0  # clip gradients at this value, or disable if == 0.0
# learning rate decay settings
decay_lr = True  # whether to decay the learning rate
warmup_iters = 5  # how many steps to warm up for
lr_decay_iters = 40  # should be ~= max_iters per Chinchilla
min_lr = 1e-4  # minimum learning rate, should be ~= learning_rate/10 per Chinchilla
seed = 1337
device_type = 'cpu'
compile_only = False  # PipeFlow: trace, verify with pf-opt and print the training step's IR
# -----------------------------------------------------------------------------
config_keys = [k for k, v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]


def configure(args=(), **overrides):
    """nanoGPT's configurator: ``--key=value`` arguments (and keyword
    arguments) replace the globals above, keeping their types."""
    for arg in args:
        if arg == '--compile-only':  # the spelling of the other examples
            arg = '--compile_only=True'
        assert arg.startswith('--') and '=' in arg, f"expected --key=value, got {arg!r}"
        key, val = arg[2:].split('=', 1)
        try:
            val = ast.literal_eval(val)
        except (SyntaxError, ValueError):
            pass  # a string
        overrides[key] = val
    for key, val in overrides.items():
        assert key in config_keys, f"unknown config key {key!r}"
        if type(globals()[key]) is float and type(val) is int:
            val = float(val)
        assert type(val) is type(globals()[key]), f"{key}: expected a {type(globals()[key]).__name__}"
        print(f"Overriding: {key} = {val!r}")
        globals()[key] = val


def prepare(directory):
    """shakespeare_char/prepare.py on the GPL-3 text: characters as uint16
    ids, the first 90% for training, ``meta.pkl`` with the vocabulary."""
    data = open('/usr/share/common-licenses/GPL-3', encoding='utf-8').read()
    chars = sorted(list(set(data)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    n = len(data)
    os.makedirs(directory, exist_ok=True)
    for name, part in (('train', data[:int(n * 0.9)]), ('val', data[int(n * 0.9):])):
        np.array([stoi[c] for c in part], dtype=np.uint16).tofile(os.path.join(directory, f'{name}.bin'))
    with open(os.path.join(directory, 'meta.pkl'), 'wb') as f:
        pickle.dump({'vocab_size': len(chars), 'itos': dict(enumerate(chars)), 'stoi': stoi}, f)


# poor man's data loader
def get_batch(split):
    # We recreate np.memmap every batch to avoid a memory leak, as per
    # https://stackoverflow.com/questions/45132940/numpy-memmap-memory-usage-want-to-iterate-once/61472122#61472122
    if split == 'train':
        data = np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')
    else:
        data = np.memmap(os.path.join(data_dir, 'val.bin'), dtype=np.uint16, mode='r')
    ix = flow.randint(len(data) - block_size, (batch_size,))
    x = flow.stack([flow.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
    y = flow.stack([flow.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64)) for i in ix])
    return x, y


# learning rate decay scheduler (cosine with warmup)
def get_lr(it):
    # 1) linear warmup for warmup_iters steps
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    # 2) if it > lr_decay_iters, return min learning rate
    if it > lr_decay_iters:
        return min_lr
    # 3) in between, use cosine decay down to min learning rate
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # coeff ranges 0..1
    return min_lr + coeff * (learning_rate - min_lr)


class TrainGraph(nn.Graph):
    """PipeFlow: nanoGPT's micro-steps, clipping and update as one compiled
    step. Its inputs hold the micro-steps' batches one after the other;
    the compiled step seeds each micro-step's loss gradient with
    1/gradient_accumulation_steps (nanoGPT's ``loss / gradient_accumulation_steps``)
    and returns every micro-step's loss."""

    def __init__(self, model, optimizer, gradient_accumulation_steps, grad_clip):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)
        self.config.set_gradient_accumulation_steps(gradient_accumulation_steps)
        self.grad_clip = grad_clip

    def build(self, X, Y):
        logits, loss = self.model(X, Y)
        loss.backward()
        # clip the gradient
        if self.grad_clip != 0.0:
            flow.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        return loss


class EvalGraph(nn.Graph):
    """PipeFlow: the loss of one batch in an inference graph (trace it,
    and call it, with the model in eval mode); it shares the model's
    parameters with TrainGraph and reads their trained values."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, X, Y):
        logits, loss = self.model(X, Y)
        return loss


# helps estimate an arbitrarily accurate loss over either split using many batches
@flow.no_grad()
def estimate_loss(model, eval_graph):
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = flow.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            loss = eval_graph(X, Y)  # PipeFlow: logits, loss = model(X, Y), compiled
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def main(argv):
    configure(argv)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    flow.manual_seed(seed)
    if not os.path.exists(os.path.join(data_dir, 'train.bin')):
        prepare(data_dir)
    tokens_per_iter = gradient_accumulation_steps * batch_size * block_size
    print(f"tokens per iteration will be: {tokens_per_iter:,}")

    # attempt to derive vocab_size from the dataset
    meta_path = os.path.join(data_dir, 'meta.pkl')
    meta_vocab_size = None
    if os.path.exists(meta_path):
        with open(meta_path, 'rb') as f:
            meta = pickle.load(f)
        meta_vocab_size = meta['vocab_size']
        print(f"found vocab_size = {meta_vocab_size} (inside {meta_path})")

    # model init
    model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                      bias=bias, vocab_size=None, dropout=dropout)
    print("Initializing a new model from scratch")
    model_args['vocab_size'] = meta_vocab_size if meta_vocab_size is not None else 50304
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)

    # optimizer
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
    # PipeFlow: the compiled training step and the evaluation graph
    train_graph = TrainGraph(model, optimizer, gradient_accumulation_steps, grad_clip)
    eval_graph = EvalGraph(model)

    # training loop
    iter_num = 0
    best_val_loss = 1e9
    X, Y = get_batch('train')  # fetch the very first batch
    if compile_only:
        X1, Y1 = flow.cat([X] * gradient_accumulation_steps), flow.cat([Y] * gradient_accumulation_steps)
        compiled = train_graph.compile(X1, Y1)
        print(compiled.verified_ir, end="")
        print(f"// verified by pf-opt; cached in {compiled.directory}")
        return model
    t0 = time.time()
    while True:

        # determine and set the learning rate for this iteration
        lr = get_lr(iter_num) if decay_lr else learning_rate
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

        # evaluate the loss on train/val sets and write checkpoints
        if iter_num % eval_interval == 0:
            losses = estimate_loss(model, eval_graph)
            print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
            if out_dir and (losses['val'] < best_val_loss or always_save_checkpoint):
                best_val_loss = float(losses['val'])
                if iter_num > 0:
                    checkpoint = {
                        'model': train_graph.state_dict()['model'],
                        'optimizer': optimizer.state_dict(),
                        'model_args': model_args,
                        'iter_num': iter_num,
                        'best_val_loss': best_val_loss,
                    }
                    print(f"saving checkpoint to {out_dir}")
                    flow.save(checkpoint, os.path.join(out_dir, 'ckpt'))
        if iter_num == 0 and eval_only:
            break

        # forward backward update, with optional gradient accumulation to simulate larger batch size
        # PipeFlow: the micro-steps' batches, fetched in nanoGPT's order (the
        # first one before this iteration, the next iteration's first after
        # the last micro-step), go into one compiled step
        micro_x, micro_y = [X], [Y]
        for _micro_step in range(1, gradient_accumulation_steps):
            X, Y = get_batch('train')
            micro_x.append(X)
            micro_y.append(Y)
        # immediately async prefetch next batch while model is doing the forward pass
        X, Y = get_batch('train')
        micro_losses = train_graph(flow.cat(micro_x), flow.cat(micro_y))

        # timing and logging
        t1 = time.time()
        dt = t1 - t0
        t0 = t1
        if iter_num % log_interval == 0:
            # nanoGPT prints the last micro-step's loss
            lossf = float(micro_losses.numpy().reshape(-1)[-1])
            print(f"iter {iter_num}: loss {lossf:.4f}, lr {lr:.3e}, time {dt * 1000:.2f}ms", flush=True)
        iter_num += 1

        # termination conditions
        if iter_num > max_iters:
            break
    return model


if __name__ == '__main__':
    main(sys.argv[1:])
