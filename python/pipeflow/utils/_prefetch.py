"""Batches prepared ahead on a background thread (``DataLoader(prefetch=N)``).

One daemon thread runs the loader's batch generator (sampling, reading the
dataset, collating) and puts up to ``depth`` finished batches into a
bounded queue; the consuming thread takes them in order. Reading a
``np.memmap`` and ``np.stack`` release the GIL for their copies, and the
compiled step releases it while it runs (ctypes), so the next batches are
made while the step computes.

- The end of the pass is a sentinel in the queue.
- An exception raised while making a batch (the dataset, the sampler, the
  collate function) is put in the queue in its place and raised again, the
  same exception object with its traceback, by the consumer's ``next()``
  after the batches made before it; the thread then ends.
- ``close()`` (also run when the iterator is exhausted, fails, or is
  garbage-collected: ``del it``, or leaving a ``for`` loop early) sets a
  stop flag, empties the queue so a blocked ``put`` returns, and joins the
  thread, which stops after at most the batch it is making. The thread
  never holds a reference to the iterator object, so dropping the last
  reference to it runs ``__del__``. Being a daemon thread, it cannot keep
  the interpreter from exiting either.
"""

import queue
import sys
import threading

_DONE = object()
_POLL_S = 0.05


class _Failure:
    """An exception raised while making a batch, carried to the consumer."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


def _put(out, stop, item):
    """Puts ``item`` into ``out`` unless ``stop`` is set first; True if put."""
    while not stop.is_set():
        try:
            out.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _work(batches, out, stop):
    """The thread's body: every batch of ``batches``, then the sentinel."""
    try:
        for batch in batches:
            if not _put(out, stop, batch):
                return
    except BaseException as error:  # noqa: BLE001 - raised again by the consumer
        _put(out, stop, _Failure(error))
        return
    finally:
        close = getattr(batches, "close", None)
        if close is not None and stop.is_set():
            close()
    _put(out, stop, _DONE)


class PrefetchIterator:
    """Iterates over ``batches`` (an iterator) made on a background thread,
    at most ``depth`` batches ahead of the consumer."""

    def __init__(self, batches, depth):
        if depth < 1:
            raise ValueError(f"prefetch depth must be at least 1, got {depth}")
        self._queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=_work, args=(batches, self._queue, self._stop),
                                        name="pipeflow-prefetch", daemon=True)
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            raise StopIteration
        item = self._queue.get()
        if item is _DONE:
            self.close()
            raise StopIteration
        if isinstance(item, _Failure):
            self.close()
            raise item.error
        return item

    @property
    def thread(self):
        """The background thread (for tests: ``it.thread.is_alive()``)."""
        return self._thread

    def close(self):
        """Stops the thread and waits for it (idempotent)."""
        self._closed = True
        self._stop.set()
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not threading.current_thread() and not sys.is_finalizing():
            self._thread.join()

    def __del__(self):
        if getattr(self, "_thread", None) is not None:
            self.close()
