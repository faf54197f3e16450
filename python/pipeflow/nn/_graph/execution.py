"""Running a graph's steps on this rank's compiled program.

The first call of a graph compiles it for CPU ranks and makes a :class:`Run`:
this rank's ``librank<r>.so`` loaded (``pipeflow._runtime.Program``, one per
graph and process), its parameters initialised and its persistent state
registry (``pipeflow._state.ProgramState``). Every call then checks the
inputs against the first call's (and, in a job of several processes, against
the other processes', :meth:`Run.agree`), feeds this rank's inputs (for
placements of several ranks the micro-batch boxes of the logical inputs, see
``pipeflow._feed``) and every parameter group's current learning rate to the
compiled step, and packs the losses as OneFlow returns them: a global tensor
on the last stage's placement holding one loss per micro-batch (shape
``[m]``; a scalar when ``m == 1``), whose ``to_local()`` is empty on the ranks
outside that placement.
"""

import os
import sys

import numpy as np

from ... import _feed, _layout, _runtime, _state, env
from ... import dtypes as dt
from ... import sbp as sbp_mod
from ..._errors import BackendUnavailable, CompileError
from ...placement import placement as Placement
from ...tensor import Tensor
from . import options, outputs, sharing, tracing


def shifted(placement, by):
    """``placement`` with every rank moved up by ``by`` (same type and hierarchy)."""
    return Placement(placement.type, ranks=(np.array(placement.ranks, dtype=np.int64) + by).tolist())


def _show(value):
    return repr(value) if not isinstance(value, (list, str)) else str(value)


class Run:
    """A graph that runs: its compiled program on this rank and the call checks."""

    def __init__(self, graph, traced, artifacts, optimizers, loc):
        self.graph_name = graph.name
        self.traced = traced
        self.signature = traced.signature
        self.artifacts = artifacts
        self.optimizers = [o for o, _, _ in optimizers]
        self.lr_schedulers = [s for _, s, _ in optimizers]
        self.first_call = loc
        self.steps = 0
        self.shared_from = {}  # name -> the owner state and version last copied (sharing)
        self.extras = {}  # a training step's results besides the loss (outputs.collect_extras)
        self.m = graph.config.gradient_accumulation_steps
        self.rank = env.get_rank()
        self.world = world = env.get_world_size()
        # Automatic stages: the program runs on the user's placement P shifted
        # to every pipeline rank k (ranks k*W .. k*W+W-1, W = max rank of P + 1).
        self.auto_placement = options.auto_placement(traced)
        self.auto_width = None
        if self.auto_placement is not None:
            self.auto_width = max(self.auto_placement.flat_ranks) + 1
        if artifacts.world_size != world:
            raise self._wrong_world_size(graph, loc)
        self.entry = artifacts.rank(self.rank) or {}
        self.inference = traced.loss is None
        if self.inference:
            self.m = 1
        if not self.inference and self.entry.get("reports_loss") and int(self.entry.get("num_microbatches", self.m)) != self.m:
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path} says rank {self.rank} runs "
                f"{self.entry['num_microbatches']} micro-batches per step, the graph asked for {self.m}")
        self.plans = self._input_plans(artifacts)
        self.loss_placement = self._loss_placement(graph, traced, artifacts)
        self.reports_loss = not self.inference and self.entry.get(
            "reports_loss", self.rank in self.loss_placement)
        self.loss_root = None if self.inference else self._loss_root(artifacts)
        # Collectives between steps (input agreement and gathers, the loss
        # broadcast) need a program on every rank of the job.
        self.collective = world > 1 and all(
            artifacts.shared_object(r) is not None for r in range(world))
        so = artifacts.shared_object(self.rank)
        self.program = None if so is None else _runtime.Program(so, self.rank, world, traced.seed)
        self.version = 0  # changes with every step (see pipeflow._state)
        self.state = _state.ProgramState(self, self.program, traced.param_objects, world,
                                         self.collective)
        for optimizer in self.optimizers:
            optimizer._bind_state(self.state)

    def _wrong_world_size(self, graph, loc):
        """The CompileError of a program compiled for another number of ranks
        than the job's processes: how to launch it."""
        n, world = self.artifacts.world_size, self.world
        script = os.path.relpath(sys.argv[0]) if sys.argv and sys.argv[0] else "SCRIPT.py"
        alone = "this process runs alone (world size 1)" if world == 1 else \
            f"this job has {world} processes"
        if self.auto_placement is not None:
            k = graph.config.pipeline_stages
            homes = [str(shifted(self.auto_placement, s * self.auto_width).ranks)
                     for s in range(min(k, 4))]
            homes = ", ".join(homes[:-1]) + (" and " if k <= 4 else ", ") + homes[-1] \
                if k > 1 else homes[0]
            uses = (f"set_pipeline_stages({k}) runs its {k} pipeline stage{'s' if k > 1 else ''} "
                    f"on ranks {homes}{', ...' if k > 4 else ''}: the graph's placement "
                    f"{self.auto_placement.ranks} shifted")
        else:
            uses = f"its placements use ranks 0..{n - 1}"
        return CompileError.at(
            loc, f"{graph.name}'s compiled program runs on {n} rank{'s' if n > 1 else ''} "
                 f"({uses}), but {alone}",
            [f"launch one process per rank: python3 -m pipeflow.distributed.launch "
             f"--nproc_per_node {n} {script}"])

    def _input_plans(self, artifacts):
        """How this rank feeds every graph input (see pipeflow._feed)."""
        if all("inputs" in entry for entry in artifacts.ranks.values()) and artifacts.ranks:
            return _feed.plan(artifacts.ranks, self.signature[0], self.rank, _runtime.DTYPES,
                              artifacts.manifest_path, self.auto_width)
        # Manifests without "inputs": the inputs whose placement holds this rank.
        plans = []
        for i, (shape, dtype, placement, sbp) in enumerate(self.signature[0]):
            entry = None
            if self.rank in placement:
                entry = {"index": i, "shape": list(_layout.local_shape(shape, placement, sbp))}
            plans.append(_feed.InputPlan(i, shape, placement, sbp, dt.as_dtype(dtype).numpy,
                                         _feed.LOCAL, entry, self.rank))
        return plans

    def _loss_placement(self, graph, traced, artifacts):
        """The placement of the returned loss: the last stage's. With automatic
        stages that is the user's placement shifted to the last pipeline rank
        (the manifest's loss reporters must lie in it), else the traced loss's."""
        if self.inference:
            return None
        if self.auto_placement is None:
            return traced.loss.placement
        last = graph.config.pipeline_stages - 1
        placement = shifted(self.auto_placement, last * self.auto_width)
        reporters = sorted(r for r, e in artifacts.ranks.items() if e.get("reports_loss"))
        if not reporters or any(r not in placement for r in reporters):
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path}: the ranks reporting the loss "
                f"{reporters} are not on the last stage's placement {placement.ranks}")
        return placement

    def _loss_root(self, artifacts):
        """The rank that reports the losses when it is the only one of the loss's
        placement that does: after each step it broadcasts them to the others
        of the placement, which hold the (broadcast) loss too."""
        placement = self.loss_placement
        if placement.size < 2 or not all(r in artifacts.ranks for r in placement.flat_ranks):
            return None
        reporters = [r for r in placement.flat_ranks if artifacts.rank(r).get("reports_loss")]
        return reporters[0] if len(reporters) == 1 else None

    # Every call ---------------------------------------------------------------------

    def agree(self, args, loc):
        """Before a call's first collective: every process checks that all make the
        same call with the same kind of inputs (see _feed.agreement). Returns,
        per input, the ranks that know its logical value (``None`` in a process
        running alone)."""
        if self.world == 1:
            return None
        if not self.collective or self.program is None:
            return [set() for _ in args]  # no agreement: gather whatever needs gathering
        return _feed.agreement(self.program, self.world, self.graph_name, self.steps, args,
                               self.rank, loc)

    def check_call(self, graph, args, loc):
        """A later call's inputs and the graph's settings are the first call's."""
        signature = tracing.signature(args, loc)
        want = self.signature[0]
        if len(signature) != len(want):
            raise CompileError.at(loc, f"{self.graph_name} takes {len(want)} inputs, got {len(signature)}")
        for i, (got, exp) in enumerate(zip(signature, want)):
            for what, g, e in (("shape", list(got[0]), list(exp[0])), ("dtype", got[1], exp[1]),
                               ("placement", got[2], exp[2]), ("sbp", got[3], exp[3])):
                if g != e:
                    raise CompileError.at(
                        loc, f"graph input {i} has {what} {_show(g)}, but {self.graph_name} was "
                             f"compiled for {what} {_show(e)} at its first call",
                        [f"the first call is at {self.first_call}; an nn.Graph is compiled once, "
                         "for the inputs of its first call (make another graph for other inputs)"])
        if tracing.fingerprint(graph) != self.signature[1]:
            raise CompileError.at(
                loc, f"the modules, parameters or settings of {self.graph_name} changed after its "
                     "first call; a graph is compiled once, at its first call",
                [f"the first call is at {self.first_call}"])

    def step(self, args, loc, known=None):
        """Runs one step on ``args``; returns this rank's losses (one per
        micro-batch, shared within the loss's placement; empty elsewhere)."""
        scalars = {name: float(self.optimizers[i].param_groups[j]["lr"])
                   for name, i, j in self.traced.lr_scalars}
        sharing.pull(self)
        feeds = []
        for plan in self.plans:
            data = self._feed(plan, args[plan.index], loc, None if known is None else known[plan.index])
            if data is not None:
                feeds.append((plan.index, data))
        if self.program is None:
            losses = np.empty((0,), np.float32)
        else:
            losses = self.program.step(self.steps, scalars, feeds)
        start = self.version
        self.steps += 1
        self.version += 1
        sharing.take(self, start)
        if self.inference:
            return outputs.collect(self, losses)
        self.extras = outputs.collect_extras(self)
        if self.reports_loss and len(losses) != self.m:
            raise BackendUnavailable(
                f"internal error: rank {self.rank} reported {len(losses)} losses in a step of "
                f"{self.m} micro-batches")
        if self.loss_root is not None and self.collective and self.rank in self.loss_placement:
            losses = self.program.broadcast(
                losses if self.rank == self.loss_root else np.zeros((self.m,), np.float32),
                self.loss_root, self.loss_placement.flat_ranks)
        return losses

    def _feed(self, plan, tensor, loc, known):
        """The C-contiguous buffer this rank feeds for one input (``None``: none).

        Every member of the input's placement reaches the same collectives
        here (see pipeflow._feed), and so do the readers outside it
        (automatic stages): participation depends on the placement, the
        manifest and the agreed ``known`` only, never on what this rank holds.
        """
        if plan.mode == _feed.LOCAL or plan.mode == _feed.DIRECT:
            if plan.entry is None:
                return None
            if plan.mode == _feed.LOCAL:
                local = tensor.to_local().numpy()
            else:
                local = _feed.component(tensor, self.rank)
            if tuple(local.shape) != plan.buffer_shape:
                raise CompileError.at(
                    loc, f"this rank's local part of graph input {plan.index} has shape "
                         f"{list(local.shape)}, but the compiled program expects "
                         f"{list(plan.buffer_shape)} on rank {self.rank}")
            return np.ascontiguousarray(local, dtype=plan.dtype)
        logical = None
        if plan.member:
            logical = _feed.logical_value(self.program, tensor, plan, known, self.rank, loc)
        if plan.outside:
            logical = _feed.forward(self.program, tensor, logical, plan, known, self.rank)
        if plan.entry is None:
            return None
        if logical is None:
            raise BackendUnavailable(f"internal error: rank {self.rank} reads graph input "
                                     f"{plan.index} but has not got its value")
        if tuple(logical.shape) != plan.shape:
            raise CompileError.at(
                loc, f"graph input {plan.index} has logical shape {list(logical.shape)}, but the "
                     f"compiled program expects {list(plan.shape)}")
        data = _feed.cut_boxes(logical, plan.boxes, plan.box_shape, plan.dtype, plan.zero)
        return data.reshape(plan.buffer_shape)

    def loss_tensor(self, losses):
        """The losses as OneFlow returns them (see the module docstring)."""
        placement = self.loss_placement
        sbp = sbp_mod.normalize([sbp_mod.broadcast] * placement.ndim, placement.ndim)
        shape = (self.m,) if self.m > 1 else ()
        shared = self.loss_root is not None and self.collective and self.rank in placement
        if env.get_world_size() == 1 or self.reports_loss or shared:
            value = losses.reshape(shape)
            return Tensor._new(dt.float32, shape, local=value, logical=value, placement=placement, sbp=sbp)
        return Tensor._new(dt.float32, shape, local=np.empty((0,), np.float32), logical=None,
                           placement=placement, sbp=sbp)
