"""The graph's pipeline settings checked against its trace, at the user's lines.

These checks relate Python settings (``set_stage``, ``set_pipeline_stages``,
``set_gradient_accumulation_steps``, ``set_pipeline_schedule``,
``enable_sequence_parallel``) to the traced
program and name the line of the setting: the compiler would find some of
the same problems, but only when the graph first runs and without the
setting's line. Checks of single ops are the pf verifier's (``pf-opt``
reports them at the op's line when the graph compiles).
"""

from ... import _layout, ir
from ... import config as config_mod
from ..._errors import CompileError

# Ops that pf-auto-stages does not cut: they follow their users' stage.
FOLLOWS_USERS = ("pf.read_param", "pf.constant", "pf.to_global")


def _ranks_text(placement):
    """An IR placement in words: ``"cpu" ranks [0, 1]``."""
    return f'"{placement.device}" ranks {placement.nested()}'


def _stage_config_loc(graph, stage):
    for _, cfg in graph._configs.values():
        if cfg.stage_id == stage and cfg._stage_loc is not None:
            return cfg._stage_loc
    return None


def check_pipeline(graph, tracer, args, loc):
    """Stage ids, automatic stages, micro-batches and the schedule."""
    cfg = graph.config
    stages = sorted(tracer.stage_locs)
    if stages and stages != list(range(len(stages))):
        missing = sorted(set(range(stages[-1] + 1)) - set(stages))
        bad = stages[-1]
        raise CompileError.at(
            _stage_config_loc(graph, bad) or tracer.stage_locs[bad],
            f"pipeline stage ids must be 0, 1, ..., p-1 without gaps; the ops use stages {stages} "
            f"(no op is in stage {', '.join(map(str, missing))})")
    if stages and cfg.pipeline_stages is not None and cfg.pipeline_stages * cfg.num_chunks != len(stages):
        raise CompileError.at(
            cfg._stages_loc,
            f"set_pipeline_stages({cfg.pipeline_stages}) disagrees with the {len(stages)} stages the "
            "modules' set_stage() assigns", ["use either explicit stages or automatic balancing"])
    if not stages and cfg.pipeline_stages is not None:
        check_auto_stages(graph, tracer, loc)
    _check_micro_batches(cfg, args, loc)
    if cfg.pipeline_schedule == "interleaved-1f1b":
        _check_interleaved(cfg, stages)
    _check_sequence_parallel(graph, tracer)


def _check_sequence_parallel(graph, tracer):
    """Sequence parallelism splits what tensor parallelism replicates: a
    graph none of whose parameters is split has nothing to split it over
    (the compiler finds the finer cases: no row-parallel layer, a sequence
    that does not divide, at the model's line)."""
    cfg = graph.config
    if not cfg.sequence_parallel:
        return
    for param in tracer.module.params.values():
        if not param.buffer and any(e.startswith("S(") for e in param.type.sbp or ()):
            return
    raise CompileError.at(
        cfg._sequence_parallel_loc,
        f"sequence parallelism needs tensor parallelism, but no parameter of {graph.name} is "
        "split over its ranks",
        ["lay the weights out as Megatron does (column-parallel S(0), row-parallel S(1) on "
         "the tensor-parallel axis), or leave enable_sequence_parallel unset"])


def _check_micro_batches(cfg, args, loc):
    """Every input's batch splits into the micro-batches, each shared evenly
    by the ranks that split axis 0."""
    m = cfg.gradient_accumulation_steps
    if m == 1:
        return
    where = cfg._accumulation_loc or loc
    for i, a in enumerate(args):
        if a.ndim == 0:
            raise CompileError.at(where, f"graph input {i} is a scalar and cannot be split into {m} micro-batches")
        batch = a.shape[0]
        if batch % m:
            raise CompileError.at(
                where, f"{m} micro-batches (gradient accumulation steps) do not divide the batch "
                       f"size {batch} of graph input {i} (shape {list(a.shape)})",
                ["choose a number of micro-batches that divides the batch size"])
        factor = _layout.split_factors(a.shape, a.placement, a.sbp)[0]
        if (batch // m) % factor:
            raise CompileError.at(
                where, f"a micro-batch of graph input {i} has {batch // m} rows, which the "
                       f"{factor} ranks that split axis 0 cannot share evenly")


def _check_interleaved(cfg, stages):
    """Interleaved 1F1B: stages that form the chunks, micro-batches a multiple
    of the pipeline's stages."""
    v, m = cfg.num_chunks, cfg.gradient_accumulation_steps
    if stages:
        if len(stages) % v:
            raise CompileError.at(
                cfg._schedule_loc, f"interleaved-1f1b with num_chunks={v} needs the number of "
                                   f"stages (model chunks) to be a multiple of {v}, got {len(stages)}")
        p = len(stages) // v
    elif cfg.pipeline_stages is not None:
        p = cfg.pipeline_stages
    else:
        raise CompileError.at(cfg._schedule_loc, "interleaved-1f1b needs pipeline stages: "
                                                 "set_stage() on modules or set_pipeline_stages(n)")
    if m % p:
        raise CompileError.at(
            cfg._schedule_loc,
            f"the interleaved 1F1B schedule needs the number of micro-batches to be a multiple "
            f"of the number of pipeline stages: {m} micro-batches, {p} stages",
            [f"set_gradient_accumulation_steps() to a multiple of {p}"])


def check_auto_stages(graph, tracer, loc):
    """``set_pipeline_stages(n)`` without explicit stages: the compiler
    (pf-auto-stages) cuts the program, which must be on one placement, into
    ``n * num_chunks`` stages of at least one compute op each."""
    cfg = graph.config
    n, v = cfg.pipeline_stages, cfg.num_chunks
    call = f"set_pipeline_stages({n})"
    func = tracer.func
    where = [f"{call} is at {cfg._stages_loc}" if cfg._stages_loc else None,
             "keep every module, parameter and input of the graph on one placement (no "
             "to_global() onto another placement): the compiler chooses each stage's ranks; "
             "or place the stages yourself with set_stage() and leave set_pipeline_stages out"]
    where = [w for w in where if w]
    base = first = None
    for i, value in enumerate(func.args):
        placement = value.type.placement if isinstance(value.type, ir.GlobalType) else None
        if placement is None:
            continue
        if base is None:
            base, first = placement, f"graph input {i}"
        elif placement != base:
            raise CompileError.at(
                loc, f"{call} needs the whole graph on one placement, but graph input {i} is on "
                     f"{_ranks_text(placement)} and {first} on {_ranks_text(base)}", where)
    compute = 0
    for op in func.ops:
        if op.name not in FOLLOWS_USERS:
            compute += 1
        for result in op.results:
            if not isinstance(result.type, ir.GlobalType):
                continue
            placement = result.type.placement
            if base is None:
                base, first = placement, f"the {op.name} at {op.loc}"
            elif placement != base:
                what = "moves a value to" if op.name == "pf.to_global" else "computes a value on"
                raise CompileError.at(
                    op.loc, f"{call} needs the whole graph on one placement, but this "
                            f"{op.name} {what} {_ranks_text(placement)} while {first} is on "
                            f"{_ranks_text(base)}", where)
    if compute < n * v:
        chunks = f" ({n} stages x {v} chunks)" if v > 1 else ""
        raise CompileError.at(
            cfg._stages_loc or loc,
            f"{call} cannot cut {graph.name}'s {compute} compute op{'s' if compute != 1 else ''} "
            f"into {n * v} stages{chunks}: every stage needs at least one op",
            ["ask for fewer stages"])


def _size(nbytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} bytes"


def check_device_memory(graph, plans, loc, backend="cpu"):
    """A CompileError when a rank's memory plan (``plans``: ``{rank: the
    plan's bytes by category}``) exceeds ``config.set_device_memory``, or,
    where that is unset and the program is for GPU ranks (``backend``
    ``"cuda"``), the GPUs' own memory (``config.gpu_memory``): the first
    such rank, its plan by category."""
    limit, own = graph.config.device_memory, False
    if not graph.config._device_memory_set and backend == "cuda":
        limit, own = config_mod.gpu_memory(), True
    if limit is None:
        return
    for rank, memory in sorted(plans.items()):
        if memory["arena_bytes"] <= limit:
            continue
        parts = ", ".join(f"{what} {_size(memory[key])}" for what, key in (
            ("parameters", "parameter_bytes"), ("gradients", "gradient_bytes"),
            ("optimizer states", "state_bytes"), ("inputs", "input_bytes"),
            ("activations at their peak", "activation_peak_bytes"),
            ("the step's buffers at their peak", "step_peak_bytes")))
        device = "the GPU has" if own else "the device has"
        notes = ["graph.config.enable_zero(True, stage=...) splits optimizer states, gradients and "
                 "parameters over the data-parallel ranks; activation checkpointing and more "
                 "pipeline stages lower the rest"]
        if own:
            notes.append("the limit is the GPU's own memory: graph.config.set_device_memory(bytes) "
                         "sets another (None: no check)")
        raise CompileError.at(
            (None if own else graph.config._device_memory_loc) or loc,
            f"{graph.name} does not fit: rank {rank}'s memory plan needs {memory['arena_bytes']} bytes "
            f"({_size(memory['arena_bytes'])}) but {device} {limit} ({_size(limit)})",
            [f"rank {rank}'s plan: {parts}"] + notes)
