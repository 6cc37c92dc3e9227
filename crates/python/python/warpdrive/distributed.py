"""Runs split into jobs over a Dask cluster (``warpdrive submit`` for Python, issue #33).

A splittable call — one that takes ``jobs=`` and ``job_index=`` and whose job results a merge
combines into the single run's result — is described by a :class:`Request`; :func:`run` maps the
job indices over a ``dask.distributed.Client`` (one task per job: it runs the job in the
worker's process and writes its output directory), then merges the job outputs on the client.
The merged result equals the unsplit run's (same tables, same files).

Needs ``pip install "warpdrive[dask]"`` (dask.distributed); for Slurm or HTCondor clusters,
dask-jobqueue's ``SLURMCluster``/``HTCondorCluster`` give the client (docs/cluster.md).

>>> from dask.distributed import Client, LocalCluster                     # doctest: +SKIP
>>> from warpdrive import distributed, sky
>>> req = distributed.Request(sky.autocorr, {"synthetic_events": 10000, "trials": 1000},
...                           output="autocorr")                          # doctest: +SKIP
>>> with Client(LocalCluster(n_workers=4, threads_per_worker=1)) as client:  # doctest: +SKIP
...     result = distributed.run(req, client, jobs=20)
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional

from . import em, photon, sky
from ._types import PathLike

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["Request", "run"]


class _Splittable(NamedTuple):
    """How a splittable call's jobs are written and merged."""

    name: str
    #: Combines the job outputs (paths, in any order) into the unsplit run's result.
    merge: Callable[..., Any]
    #: The call writes its own file (``output=``, ``force=``; the merge too), instead of a
    #: result with ``to_parquet(dir, force=)``.
    writes_file: bool = False


# The splittable calls: a call joins with one line here once it takes jobs=/job_index=.
_MERGES: dict[Callable[..., Any], _Splittable] = {
    sky.autocorr: _Splittable("sky.autocorr", sky.merge),
    sky.inject: _Splittable("sky.inject", sky.merge_injection),
    em.testem3: _Splittable("em.testem3", em.merge),
    em.calorimeter: _Splittable("em.calorimeter", em.merge),
    photon.propagate: _Splittable("photon.propagate", photon.merge, writes_file=True),
}

# Keywords that run() sets for each job.
_SET_BY_RUN = ("jobs", "job_index", "progress", "output", "force")


class Request:
    """One splittable run: ``function`` (``warpdrive.sky.autocorr`` or ``warpdrive.sky.inject``)
    called with the keyword arguments ``kwargs`` (all of the run's, except ``jobs``,
    ``job_index`` and ``progress``, which :func:`run` sets); ``output``, if given, is the
    directory the merged result is written to (``force`` replaces an existing one).

    ``device`` in ``kwargs`` is each job's (default ``"auto"``); on workers that declare GPUs
    (the Dask resource ``GPU``) each job takes one of them (see :func:`run`). Picklable.

    >>> Request(sky.autocorr, {"synthetic_events": 10000, "trials": 1000}, output="autocorr")
    warpdrive.distributed.Request(sky.autocorr(synthetic_events=10000, trials=1000), output='autocorr')
    """

    def __init__(self, function: Callable[..., Any], kwargs: Optional[Mapping[str, Any]] = None,
                 output: Optional[PathLike] = None, force: bool = False) -> None:
        """Check that ``function`` can be split and that ``kwargs`` sets nothing run() sets."""
        if function not in _MERGES:
            names = ", ".join(f"warpdrive.{s.name}" for s in _MERGES.values())
            raise ValueError(f"{getattr(function, '__qualname__', function)!r} cannot be split into jobs; "
                             f"these can: {names}")
        kwargs = dict(kwargs or {})
        taken = [k for k in _SET_BY_RUN if k in kwargs]
        if taken:
            raise ValueError(f"kwargs sets {', '.join(taken)}: warpdrive.distributed.run sets them for each job; "
                             "remove them (the number of jobs is run()'s jobs=)")
        self.function: Callable[..., Any] = function
        self.kwargs: dict[str, Any] = kwargs
        self.output: Optional[PathLike] = output
        self.force: bool = bool(force)

    @property
    def name(self) -> str:
        """The function's name in the package (``"sky.autocorr"``)."""
        return _MERGES[self.function].name

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        out = "" if self.output is None else f", output={os.fspath(self.output)!r}"
        return f"warpdrive.distributed.Request({self.name}({args}){out}{', force=True' if self.force else ''})"


# GPUs of this worker process that a running job holds (the worker's Dask resource GPU=k
# lets k jobs run at once: each takes a free ordinal of the GPUs the process sees).
_busy_gpus: set[int] = set()
_gpu_lock = threading.Lock()


def _take_gpu(count: int) -> int:
    with _gpu_lock:
        free = next(i for i in range(count) if i not in _busy_gpus)
        _busy_gpus.add(free)
        return free


def _give_gpu(i: int) -> None:
    with _gpu_lock:
        _busy_gpus.discard(i)


def _job_device(requested: str, gpus: int, slot: int) -> str:
    """The device of one job on a worker with ``gpus`` GPU resources, holding GPU ``slot``:
    an explicit ``cpu`` or ``cuda:N`` stays; otherwise the job's own GPU (``cuda:slot``); on a
    worker without GPUs, what was asked."""
    if gpus == 0 or requested == "cpu" or (requested.startswith("cuda:") and requested != "cuda:all"):
        return requested
    return f"cuda:{slot}"


def _run_job(function: Callable[..., Any], kwargs: Mapping[str, Any], jobs: int, index: int, path: str,
             gpu: bool) -> str:
    """One job, in a worker: the call with jobs/job_index, its output written to ``path`` (a job
    run again replaces its own output)."""
    args = dict(kwargs)
    slot = -1
    gpus = 0
    if gpu:
        from distributed import get_worker

        gpus = int(get_worker().state.total_resources.get("GPU", 0))
        slot = _take_gpu(max(gpus, 1))
    try:
        args["device"] = _job_device(str(args.get("device", "auto")), gpus, slot)
        if _MERGES[function].writes_file:
            function(**args, jobs=jobs, job_index=index, progress=False, output=path, force=True)
        else:
            function(**args, jobs=jobs, job_index=index, progress=False).to_parquet(path, force=True)
    finally:
        if slot >= 0:
            _give_gpu(slot)
    return path


def _workers_have_gpus(client: Client) -> bool:
    workers = client.scheduler_info().get("workers", {})
    return any(float(w.get("resources", {}).get("GPU", 0)) > 0 for w in workers.values())


def run(request: Request, client: Client, jobs: int, work_dir: Optional[PathLike] = None) -> Any:
    """Run ``request`` as ``jobs`` jobs on ``client``'s workers and merge them: the result of the
    unsplit call (``warpdrive.sky.Autocorr`` for ``sky.autocorr``, …), also written to
    ``request.output`` when it names a directory.

    Job I runs ``request.function(**request.kwargs, jobs=jobs, job_index=I)`` in a worker and
    writes its output directory ``job-I`` into ``work_dir`` (default: ``OUTPUT.jobs`` beside the
    output, or a temporary directory removed afterwards); ``work_dir`` must be a file system the
    workers and this process share (one machine, or a cluster's shared disk). When workers
    declare GPUs (``dask worker --resources GPU=1``, dask-cuda's clusters), each job asks for one
    (``resources={"GPU": 1}``) and runs on it; otherwise jobs run where ``device`` says (CPU on
    machines without CUDA). The merge runs here, with the package's merge function.

    A job that fails raises its error here; since every job writes only its own ``job-I``, calling
    :func:`run` again redoes the work without mixing in old outputs.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs={jobs!r}: the number of jobs is a whole number of at least 1")
    how = _MERGES[request.function]
    if request.output is not None and os.path.lexists(request.output) and not request.force:
        raise FileExistsError(f"{os.fspath(request.output)}: exists; pass force=True in the Request to replace it "
                              "(no job was run)")
    temporary = work_dir is None and request.output is None
    if work_dir is not None:
        base = os.path.abspath(os.fspath(work_dir))
    elif request.output is not None:
        base = os.path.abspath(os.fspath(request.output)) + ".jobs"
    else:
        base = tempfile.mkdtemp(prefix="warpdrive-dask-")
    os.makedirs(base, exist_ok=True)
    try:
        gpu = _workers_have_gpus(client)
        suffix = ".parquet" if how.writes_file else ""
        paths = [os.path.join(base, f"job-{i}{suffix}") for i in range(jobs)]
        futures = client.map(_run_job, [request.function] * jobs, [request.kwargs] * jobs, [jobs] * jobs,
                             list(range(jobs)), paths, [gpu] * jobs, pure=False,
                             resources={"GPU": 1} if gpu else None)
        done = [f.result() for f in futures]  # in job order; a failed job raises its error here
        if how.writes_file:
            return how.merge(list(done), output=request.output, force=request.force)
        result = how.merge(list(done))
        if request.output is not None:
            result.to_parquet(request.output, force=request.force)
        return result
    finally:
        if temporary:
            shutil.rmtree(base, ignore_errors=True)


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
