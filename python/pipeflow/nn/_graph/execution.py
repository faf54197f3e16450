"""Running a graph's steps on this rank's compiled program.

The first call of a graph compiles it for CPU ranks and makes a :class:`Run`:
this rank's ``librank<r>.so`` loaded (``pipeflow._runtime.Program``, one per
graph and process), its parameters initialised and its persistent state
registry (``pipeflow._state.ProgramState``). Every call then checks the
inputs against the first call's (and, in a job of several processes, against
the other processes', :meth:`Run.agree`) and the graph against what it was
compiled for (:class:`CallCheck`, which walks the modules again only after
a change), feeds this rank's inputs (for
placements of several ranks the micro-batch boxes of the logical inputs, see
``pipeflow._feed``) and every parameter group's current learning rate to the
compiled step, and packs the losses as OneFlow returns them: a global tensor
on the last stage's placement holding one loss per micro-batch (shape
``[m]``; a scalar when ``m == 1``), whose ``to_local()`` is empty on the ranks
outside that placement.

A graph whose placements use ranks ``0..n-1`` of a job of more processes
(a graph on ``[0, 1]`` in a job of 4; an evaluation graph on ``[0]`` beside
a training graph on all ranks) runs on those ranks alone: its programs
share a communicator of their own (``pfrt_init_program``), and the ranks
``n..`` load nothing, take part in no collective of it and wait for nothing;
calling the graph there returns its results empty (global tensors of the
logical shape whose ``to_local()`` is empty), and its state dict holds the
modules' values, which are not materialised there. The ranks below ``n``
outside the placements (a graph on ``[2, 3]``: ranks 0 and 1) run the empty
programs the compiler makes for them.
"""

import operator
import os
import sys

import numpy as np

from ... import _feed, _layout, _mpi, _registry, _runtime, _state, env
from ... import config as config_mod
from ... import dtypes as dt
from ... import sbp as sbp_mod
from ..._errors import BackendUnavailable, CompileError
from ...optim.optimizer import RUN_TIME_KEYS, ParamList
from ...placement import placement as Placement
from ...tensor import Tensor
from . import options, outputs, sharing, tracing

_MISSING = object()


def shifted(placement, by):
    """``placement`` with every rank moved up by ``by`` (same type and hierarchy)."""
    return Placement(placement.type, ranks=(np.array(placement.ranks, dtype=np.int64) + by).tolist())


def _show(value):
    return repr(value) if not isinstance(value, (list, str)) else str(value)


_ENVIRON = getattr(os.environ, "_data", None)  # os.environ's own dict (bytes keys on POSIX)
_CUDA_AS_CPU_KEY = os.environ.encodekey(config_mod.CUDA_AS_CPU_VARIABLE) if _ENVIRON is not None else None


def _cuda_as_cpu_setting():
    """What ``config.cuda_as_cpu_enabled()`` depends on: the ``cuda_as_cpu()``
    call and the variable's raw value (read from os.environ's dict: a call
    checks it without decoding the variable)."""
    if _ENVIRON is None:
        return config_mod.cuda_as_cpu_enabled()
    return config_mod._cuda_as_cpu, _ENVIRON.get(_CUDA_AS_CPU_KEY)


def _members(params):
    """What CallCheck compares a group's ``params`` by: nothing for a
    ParamList (its changes count), else its elements."""
    return None if type(params) is ParamList else tuple(params)


class CallCheck:
    """Whether a graph's :func:`tracing.fingerprint` still equals its first
    call's, recomputing it only when something it reads may have changed.

    The fingerprint walks every module, parameter and buffer, which costs
    far more than a small compiled step. Everything it reads besides the
    optimizers and the graph's config counts its changes in
    ``_registry.module_changes`` (module registries and modes, layouts,
    initializers, module settings, the graph's attributes). A call whose
    count, graph config, ``cuda_as_cpu`` and optimizers (the same groups
    holding the same parameters and the same settings, by identity) are
    those of the last check is unchanged; any other call recomputes the
    fingerprint and compares it, exactly as every call once did. (A group's
    ``params`` is an ``optim.ParamList``, whose changes count too; a plain
    list put in its place is compared element by element.)
    """

    def __init__(self, fingerprint):
        self.fingerprint = fingerprint
        self.count = None  # nothing checked yet
        self.config = None
        self.cuda_as_cpu = None
        self.optimizers = ()
        self.recomputed = 0

    def matches(self, graph):
        """Whether the graph's fingerprint is the first call's."""
        if (self.count == _registry.module_changes.count and graph.config.__dict__ == self.config
                and _cuda_as_cpu_setting() == self.cuda_as_cpu
                and self._same_optimizers(graph._optimizers)):
            return True
        count = _registry.module_changes.count
        self.recomputed += 1
        if tracing.fingerprint(graph) != self.fingerprint:
            return False
        self.count = count
        self.config = dict(graph.config.__dict__)
        self.cuda_as_cpu = _cuda_as_cpu_setting()
        self.optimizers = tuple(
            (optim, lr_sch, tuple((g, g["params"], _members(g["params"]), len(g),
                                   {k: v for k, v in g.items()
                                    if k != "params" and k not in RUN_TIME_KEYS})
                                  for g in optim.param_groups))
            for optim, lr_sch, _ in graph._optimizers)
        return True

    def _same_optimizers(self, entries):
        saved = self.optimizers
        if len(entries) != len(saved):
            return False
        for (optim, lr_sch, _), (optim0, lr_sch0, groups) in zip(entries, saved, strict=True):
            if optim is not optim0 or lr_sch is not lr_sch0 or len(optim.param_groups) != len(groups):
                return False
            for group, (group0, params0, members, size, settings) in zip(optim.param_groups, groups,
                                                                          strict=True):
                params = group.get("params")
                if group is not group0 or len(group) != size or params is not params0 or (
                        members is not None and (len(params) != len(members)
                                                 or not all(map(operator.is_, params, members)))):
                    return False
                for key, value in settings.items():
                    if group.get(key, _MISSING) is not value:
                        return False
        return True


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
        self.call_check = CallCheck(traced.signature[1])
        self.checked_inputs = None  # per input, what the last checked call passed (check_call)
        self.steps = 0
        self.shared_from = {}  # name -> the owner state and version last copied (sharing)
        self.owners_seen = self.taken_seen = None  # sharing's count of owner changes, when last looked at
        self.foreign = []  # the tensors another program owns, as sharing last found them
        self.extras = {}  # a training step's results besides the loss (outputs.collect_extras)
        self.m = graph.config.gradient_accumulation_steps
        self.grad_scaler = graph._grad_scaler if traced.loss is not None else None
        self.rank = env.get_rank()
        self.world = world = env.get_world_size()
        self.job_world = world
        # Automatic stages: the program runs on the user's placement P shifted
        # to every pipeline rank k (ranks k*W .. k*W+W-1, W = max rank of P + 1).
        self.auto_placement = options.auto_placement(traced)
        self.auto_width = None
        if self.auto_placement is not None:
            self.auto_width = max(self.auto_placement.flat_ranks) + 1
        if artifacts.world_size > world:
            raise self._wrong_world_size(graph, loc)
        # A program on ranks 0..n-1 of a job of more processes: the ranks
        # outside take no part (see execution's docstring); the collectives
        # between steps are over the program's ranks.
        self.world = world = artifacts.world_size
        self.outside = self.rank >= world
        self.entry = artifacts.rank(self.rank) or {}
        self.inference = traced.loss is None
        if self.inference:
            self.m = 1
        if not self.inference and self.entry.get("reports_loss") and int(self.entry.get("num_microbatches", self.m)) != self.m:
            raise BackendUnavailable(
                f"internal error: {artifacts.manifest_path} says rank {self.rank} runs "
                f"{self.entry['num_microbatches']} micro-batches per step, the graph asked for {self.m}")
        self.plans = [] if self.outside else self._input_plans(artifacts)
        self.loss_placement = self._loss_placement(graph, traced, artifacts)
        self.reports_loss = not self.inference and self.entry.get(
            "reports_loss", self.rank in self.loss_placement)
        self.loss_root = None if self.inference else self._loss_root(artifacts)
        # Collectives between steps (input agreement and gathers, the loss
        # broadcast) need a program on every rank of the job.
        self.collective = world > 1 and all(
            artifacts.shared_object(r) is not None for r in range(world))
        if self.job_world > 1:
            _mpi.join()  # every process of the job, with a program here or not
        so = None if self.outside else artifacts.shared_object(self.rank)
        self.program = None if so is None else _runtime.Program(so, self.rank, world, traced.seed,
                                                                job_size=self.job_world)
        self.version = 0  # changes with every step (see pipeflow._state)
        self.state = _state.ProgramState(self, self.program, traced.param_objects, world,
                                         self.collective)
        # Inputs laid out broadcast: every rank's local part is the logical value.
        self.whole = {plan.index: plan.member and all(isinstance(e, sbp_mod._Broadcast)
                                                      for e in plan.sbp or ())
                      for plan in self.plans}
        if not self.inference:
            placement = self.loss_placement
            self.loss_sbp = sbp_mod.normalize([sbp_mod.broadcast] * placement.ndim, placement.ndim)
        # Whether build returns more than the loss (outputs.collect_extras).
        self.has_extras = any(j != 0 for j in traced.leaf_results or ())
        for optimizer in self.optimizers:
            optimizer._bind_state(self.state)

    def _wrong_world_size(self, graph, loc):
        """The CompileError of a program compiled for another number of ranks
        than the job's processes: how to launch it."""
        n, world = self.artifacts.world_size, self.job_world
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
        if not self._same_inputs(args):
            self._check_inputs(args, loc)
        if not self.call_check.matches(graph):
            raise CompileError.at(
                loc, f"the modules, parameters or settings of {self.graph_name} changed after its "
                     "first call; a graph is compiled once, at its first call",
                [f"the first call is at {self.first_call}"])

    def _same_inputs(self, args):
        """Whether ``args`` are laid out as the last checked call's (equal
        placements, SBPs, dtypes and shapes; the same objects, usually), so
        their signature needs no new check."""
        last = self.checked_inputs
        if last is None or len(args) != len(last):
            return False
        for a, (shape, dtype, placement, sbp, device) in zip(args, last, strict=True):
            if not isinstance(a, Tensor) or a._node is not None or a._shape != shape:
                return False
            if placement is None:
                if a._placement is not None or a._device != device or a._dtype != dtype:
                    return False
            elif (a._placement is not placement and a._placement != placement) or (
                    a._sbp is not sbp and a._sbp != sbp) or a._dtype != dtype:
                return False
        return True

    def _check_inputs(self, args, loc):
        """The inputs' signature against the first call's (a CompileError at
        ``loc`` naming the first difference)."""
        signature = tracing.signature(args, loc)
        want = self.signature[0]
        if len(signature) != len(want):
            raise CompileError.at(loc, f"{self.graph_name} takes {len(want)} inputs, got {len(signature)}")
        for i, (got, exp) in enumerate(zip(signature, want, strict=True)):
            for what, g, e in (("shape", list(got[0]), list(exp[0])), ("dtype", got[1], exp[1]),
                               ("placement", got[2], exp[2]), ("sbp", got[3], exp[3])):
                if g != e:
                    raise CompileError.at(
                        loc, f"graph input {i} has {what} {_show(g)}, but {self.graph_name} was "
                             f"compiled for {what} {_show(e)} at its first call",
                        [f"the first call is at {self.first_call}; an nn.Graph is compiled once, "
                         "for the inputs of its first call (make another graph for other inputs)"])
        self.checked_inputs = [(a._shape, a._dtype, a._placement, a._sbp, a._device) for a in args]

    def step(self, args, loc, known=None):
        """Runs one step on ``args``; returns this rank's losses (one per
        micro-batch, shared within the loss's placement; empty elsewhere)."""
        if self.outside:
            return self._step_outside()
        scalars = {name: float(self.optimizers[i].param_groups[j]["lr"])
                   for name, i, j in self.traced.lr_scalars}
        if self.grad_scaler is not None:
            scalars.update(self.grad_scaler.scalars())
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
        if self.grad_scaler is not None:
            self.grad_scaler.update(self.state.found_inf())
        if self.inference:
            return outputs.collect(self, losses)
        if self.has_extras:
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

    def _step_outside(self):
        """A step on a rank outside the program's: nothing runs and nothing
        waits; the results are empty local parts of their logical shapes."""
        self.steps += 1
        self.version += 1
        empty = np.empty((0,), np.float32)
        if self.inference:
            return outputs.collect(self, empty)
        if self.has_extras:
            self.extras = outputs.collect_extras(self)
        return empty

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
            local = self._whole_value(plan, tensor)
            if local is None:
                local = tensor.to_local().numpy() if plan.mode == _feed.LOCAL else \
                    _feed.component(tensor, self.rank)
            if local.shape != plan.buffer_shape:
                raise CompileError.at(
                    loc, f"this rank's local part of graph input {plan.index} has shape "
                         f"{list(local.shape)}, but the compiled program expects "
                         f"{list(plan.buffer_shape)} on rank {self.rank}")
            return dt.payload(local, plan.dtype)
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
        data = _feed.cut_boxes(dt.payload(logical, plan.dtype), plan.boxes, plan.box_shape, plan.dtype, plan.zero)
        return data.reshape(plan.buffer_shape)

    def _whole_value(self, plan, tensor):
        """A broadcast global input's logical value, which is every member's
        local part (to_local() without its copy); ``None`` otherwise."""
        if not self.whole[plan.index] or tensor._placement is None or tensor._node is not None:
            return None
        if plan.mode == _feed.LOCAL:
            tensor._check_not_trained()
            tensor._expose()
        return tensor._logical

    def loss_tensor(self, losses):
        """The losses as OneFlow returns them (see the module docstring)."""
        placement = self.loss_placement
        sbp = self.loss_sbp
        shape = (self.m,) if self.m > 1 else ()
        shared = self.loss_root is not None and self.collective and self.rank in placement
        if (self.world == 1 and not self.outside) or self.reports_loss or shared:
            value = losses.reshape(shape)
            return Tensor._new(dt.float32, shape, local=value, logical=value, placement=placement, sbp=sbp)
        return Tensor._new(dt.float32, shape, local=np.empty((0,), np.float32), logical=None,
                           placement=placement, sbp=sbp)
