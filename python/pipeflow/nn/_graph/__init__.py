"""The machinery behind ``nn.Graph``, in layers (``nn/graph.py`` keeps the
user's API and calls into them):

- ``blocks``: the modules as ``build`` sees them (proxies) and their settings;
- ``tracing``: ``build`` traced into pf IR (``TracedGraph``), with ``checks``
  (the pipeline settings against the trace) and ``options`` (what the
  compiler is told: cache options, update rules, the pipeline's options);
- ``execution``: steps run on this rank's compiled program;
- ``state``: state dicts and the values loaded before the first call.

Each module imports only the ones listed before it (and the layers of
``pipeflow`` below ``nn``); this package's ``__init__`` imports nothing.
"""
