"""streamline for PyTorch: a loader that runs a streamline data pipeline in the engine's own
threads and yields its batches as torch tensors (NumPy arrays when torch is absent).

    import streamline
    loader = streamline.Loader("pipelines/line_refine_data.json", set={"batch.size": 64})
    for epoch in range(10):
        loader.set_epoch(epoch)
        for batch in loader:      # {"context": [B,P,4], "noisy_line": [B,L,3], "target_offset": ...}
            ...

The pipeline is a streamline pipeline file that ends with its `batch` stage. Everything the
engine guarantees holds here: the same seed and epoch give the same batches in the same order at
any thread count; memory is bounded by the batch stage's slots (a batch's tensors are views of a
slot, which goes back to the pool when the last of them is released); a bad file ends the
iteration with streamline.Error naming it (or is skipped and recorded, with on_error "skip").
"""
import json
import os
import sys
import time
from collections import deque

_flags = sys.getdlopenflags()
sys.setdlopenflags(_flags | os.RTLD_GLOBAL)  # plugins resolve the engine's symbols against the module
try:
    from . import _streamline
finally:
    sys.setdlopenflags(_flags)

Error = _streamline.Error
__version__ = _streamline.__version__

try:
    import torch
except ImportError:  # NumPy arrays instead of tensors
    torch = None

__all__ = ["Loader", "Error", "__version__"]


def _override(key, value):
    """A --set override whose value keeps its Python type (a str stays a string, "1" included)."""
    return f"{key}={json.dumps(value)}"


def _default_shard(rank, world_size):
    if rank is not None or world_size is not None:
        if rank is None or world_size is None:
            raise ValueError("give both rank and world_size, or neither")
        return int(rank), int(world_size)
    if torch is not None and torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _resolve_device(device):
    if device in (None, "cpu"):
        return "cpu"
    if device == "auto":
        return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
    if not str(device).startswith("cuda"):
        raise ValueError(f"device {device!r}: expected 'cpu', 'cuda', 'cuda:N' or 'auto'")
    if torch is None or not torch.cuda.is_available():
        raise Error(f"device {device!r}: torch sees no CUDA device (torch.cuda.is_available() is False); "
                    "use device='cpu' or 'auto'")
    return str(torch.device(device))


def _with_consumer(report, wait_s):
    """The engine's report with the bottleneck seen from the loop that consumed the batches: the
    engine alone sees its sink idle and cannot tell a slow loop from a short run."""
    wall = report.get("wall_s", 0.0)
    report["consumer_wait_s"] = wait_s
    if not report.get("ok") or wall <= 0 or not report.get("bottleneck"):
        return report
    share = wait_s / wall
    if share < 0.1:
        line = (f"your loop sets the pace: it waited for batches {wait_s:.2f} s of the epoch's {wall:.2f} s "
                f"({100 * share:.0f}%); the data path keeps up.")
    else:
        line = (f"your loop waited for batches {100 * share:.0f}% of the epoch ({wait_s:.2f} s of {wall:.2f} s): "
                f"the data path is the limit. The engine: {report['bottleneck']}")
    report["table"] = report["table"].replace(report["bottleneck"], line)
    report["bottleneck"] = line
    return report


class Loader:
    """Iterates a streamline pipeline's batches, one epoch per iteration.

    pipeline    path of a pipeline file ending with its batch stage (pipelines/*_data.json)
    set         {"batch.size": 64, "scan.root": "data/x"}: like `streamline run --set`
    device      "cpu" (default), "cuda", "cuda:N" or "auto": where the yielded tensors live. On a
                GPU the batch slots are pinned, and each batch is copied on torch's current stream
                without blocking; its slot goes back once that copy is done.
    threads     worker threads of the engine (0: the pipeline's "threads")
    rank, world_size   this process's shard of every epoch (default: torch.distributed's when
                it is initialized, else 0 of 1). Each rank reads every world_size-th scene of the
                epoch's seeded order, as the C++ trainer's ranks do.
    tensors     "torch" (default when torch is installed) or "numpy"

    Iterating the loader runs one epoch: the one set_epoch() chose, or the one after the last
    epoch that ran to its end (0 first). len(loader) is the number of batches of that whole epoch
    for this rank, exact: crops that find too few points are skipped, so it is known only by
    preprocessing; an epoch that ran records it, and the first len() of one that has not runs a
    counting pass (one preprocessing pass, no Python work per batch). state_dict() /
    load_state_dict() resume exactly mid-epoch.
    """

    def __init__(self, pipeline, set=None, device="cpu", threads=0, rank=None, world_size=None,
                 tensors=None):
        self.device = _resolve_device(device)
        overrides = [_override(k, v) for k, v in (set or {}).items()]
        if self.device != "cpu":
            overrides.append(f"device={self.device}")  # pinned slots
        self.rank, self.world_size = _default_shard(rank, world_size)
        if tensors is None:
            tensors = "torch" if torch is not None else "numpy"
        if tensors not in ("torch", "numpy") or (tensors == "torch" and torch is None):
            raise ValueError(f"tensors={tensors!r}: expected 'numpy', or 'torch' with torch installed")
        self._torch = tensors == "torch"
        self._pipe = _streamline.Pipeline(os.fspath(pipeline), overrides, int(threads), self.rank,
                                          self.world_size)
        self.pipeline = os.fspath(pipeline)
        self._epoch = 0
        self._resume = None          # (epoch, index, skip) for the next iteration
        self._pos = (0, 0, 0)        # where the data continues after the last batch yielded
        self._lengths = {}           # epoch -> batches (this rank)
        self._run = None
        self._report = None
        self._stats = {"batches": 0, "python_s": 0.0, "wait_s": 0.0}

    # ---- PyTorch's loader protocol -----------------------------------------------------------
    @property
    def batch_size(self):
        return self._pipe.batch_size

    @property
    def epoch(self):
        """The epoch the next iteration runs."""
        return self._epoch

    def set_epoch(self, epoch):
        """Chooses the epoch of the next iteration (its order and random draws). A resume
        position loaded for the same epoch is kept; one for another epoch is dropped."""
        epoch = int(epoch)
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        if self._resume is not None and self._resume[0] != epoch:
            self._resume = None
        self._epoch = epoch

    def __len__(self):
        e = self._epoch
        if e not in self._lengths:
            run = self._pipe.start(e, 0, 0)
            n = 0
            while run.next() is not None:
                n += 1
            self._lengths[e] = n
        return self._lengths[e]

    def __iter__(self):
        self._stop()
        e = self._epoch
        start = self._resume if self._resume is not None and self._resume[0] == e else (e, 0, 0)
        from_start = start == (e, 0, 0)
        self._resume = None
        self._pos = start
        run = self._pipe.start(*start)
        self._run = run
        return self._epoch_iter(run, e, from_start)

    def _epoch_iter(self, run, e, from_start):
        count, completed = 0, False
        pending = deque()  # (host tensors, CUDA event) until their copy is done
        stats = self._stats
        try:
            while True:
                if pending:
                    self._release_copied(pending, run.slots)
                b = run.next()
                if b is None:
                    completed = not run.interrupted  # (stopped: a newer iteration, close(), a resume)
                    break
                t0 = time.perf_counter()
                self._pos = b.next
                out = self._wrap(b, pending)
                count += 1
                stats["batches"] += 1
                stats["python_s"] += time.perf_counter() - t0
                yield out
                b = out = None  # the previous batch's slot is not held by this frame while we wait
        finally:
            if not completed:
                run.stop()
            for _, ev in pending:
                ev.synchronize()
            pending.clear()
            stats["wait_s"] += run.wait_s
            if self._run is run:  # (not an abandoned iteration finalized after a newer one began)
                self._run = None
                self._report = _with_consumer(run.report(), run.wait_s)
                if completed:
                    if from_start:
                        self._lengths[e] = count
                    self._epoch = e + 1
                    self._pos = (e + 1, 0, 0)

    def _wrap(self, b, pending):
        arrays = b.arrays()
        if self._torch:
            out = {k: torch.from_numpy(v) for k, v in arrays.items()}
            out["scene_index"] = torch.from_numpy(b.scene_index)
            out["line_index"] = torch.from_numpy(b.line_index)
        else:
            out = dict(arrays)
            out["scene_index"] = b.scene_index
            out["line_index"] = b.line_index
        if self.device != "cpu":
            # The slot must outlive the asynchronous copy: keep the host tensors until the
            # copy's event (on the stream the copy ran on) completed, then let them go.
            stream = torch.cuda.current_stream(self.device)
            with torch.cuda.stream(stream):
                dev = {k: v.to(self.device, non_blocking=True) for k, v in out.items()}
            ev = torch.cuda.Event()
            ev.record(stream)
            pending.append((out, ev))
            out = dev
        return out

    @staticmethod
    def _release_copied(pending, slots):
        """Lets go of the host batches whose copy is done; waits for the oldest while the copies
        in flight hold all slots but the one the batch stage needs to go on."""
        while pending and (pending[0][1].query() or len(pending) >= max(slots - 1, 1)):
            pending[0][1].synchronize()
            pending.popleft()

    def _stop(self):
        if self._run is not None:
            self._run.stop()
            self._run = None

    def close(self):
        """Stops a running epoch (also done when an iteration is abandoned or a new one starts)."""
        self._stop()

    def __del__(self):
        try:
            self._stop()
        except Exception:
            pass

    # ---- resume ------------------------------------------------------------------------------
    def state_dict(self):
        """Where the data continues: after the last batch this loader yielded (or at the start of
        the next epoch after a complete one). Save it with the model; load_state_dict() resumes
        there, the remaining batches identical to an uninterrupted run's."""
        if self._resume is not None:
            e, i, s = self._resume
        elif self._pos[0] == self._epoch:
            e, i, s = self._pos  # mid-epoch: after the last batch yielded
        else:
            e, i, s = self._epoch, 0, 0
        return {"format": "streamline.Loader/1", "pipeline": self._pipe.name, "seed": self._pipe.seed,
                "rank": self.rank, "world_size": self.world_size, "epoch": e, "index": i, "skip": s}

    def load_state_dict(self, state):
        if state.get("format") != "streamline.Loader/1":
            raise Error(f"load_state_dict: not a streamline.Loader state (format {state.get('format')!r})")
        for key, mine in (("seed", self._pipe.seed), ("world_size", self.world_size), ("rank", self.rank)):
            if state[key] != mine:
                raise Error(f"load_state_dict: the state was saved with {key} {state[key]}, this loader has "
                            f"{mine}; a position is only meaningful for the same seed and shard")
        e, i, s = int(state["epoch"]), int(state["index"]), int(state["skip"])
        self._stop()
        self._epoch = e
        self._resume = (e, i, s) if (i, s) != (0, 0) else None
        self._pos = (e, i, s)

    # ---- where the time went -----------------------------------------------------------------
    def report(self):
        """The last finished (or stopped) epoch's report: per-stage items, busy/idle/held time,
        the bottleneck as your loop saw it (its time waiting for batches: "consumer_wait_s"),
        skipped items with their reasons ("skips"), the table as text ("table"), and this
        loader's own cost over all epochs: Python time per batch ("python_us_per_batch") and
        time spent waiting for the engine ("wait_s")."""
        r = dict(self._report) if self._report is not None else {}
        n = self._stats["batches"]
        r["batches"] = n
        r["python_us_per_batch"] = 1e6 * self._stats["python_s"] / n if n else 0.0
        r["wait_s"] = self._stats["wait_s"]
        return r
