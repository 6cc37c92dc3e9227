"""Two-point autocorrelation of event directions with RA-scrambled trials (``warpdrive sky autocorr``)
and signal injection (``warpdrive sky inject``)."""

from __future__ import annotations

import json
import os
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

import pyarrow as pa

from . import _arrow, _pickling, _progress, _warpdrive
from ._types import Float64Array, PathLike, Progress

__all__ = ["Autocorr", "autocorr", "merge", "Injection", "inject", "merge_injection", "DEFAULT_CUTS"]

#: The energy cuts of ``cuts=None``: the most energetic 10 %, 1 % and 0.1 % of the events (the
#: cut "all" is always analysed too).
DEFAULT_CUTS: tuple[str, ...] = ("top:0.1", "top:0.01", "top:0.001")

#: Unsigned counts, as the library counts them.
_Counts = npt.NDArray[np.uint64]


class Autocorr:
    """The result of :func:`autocorr`.

    ``counts`` and ``background`` are ``pyarrow.Table`` with the columns of the CLI's
    ``counts.parquet`` and ``background.parquet``; ``observed``, ``ts``, ``bg_mean``, ``bg_std``,
    ``p_trials``, ``p_gauss`` and ``p_gamma`` are (cuts, bins) arrays; ``edges_deg`` the bin
    edges, ``cut_labels`` the cuts, ``cut_events`` the events in each cut, ``trials`` the number
    of scrambled trials and ``device`` where they ran.

    Picklable (the run's counts, distributions and timings; the unpickled result gives the same
    tables and writes the same files).
    """

    ts: Float64Array
    bg_mean: Float64Array
    bg_std: Float64Array
    p_trials: Float64Array
    p_gauss: Float64Array
    p_gamma: Float64Array

    def __init__(self, run: _warpdrive.SkyRun) -> None:
        self._run = run
        counts, background = run.tables()
        meta = {"warpdrive.device": run.device}
        self.counts = _arrow.table(counts, meta)
        self.background = _arrow.table(background, meta)
        self.edges_deg: Float64Array = np.asarray(run.edges_deg, dtype=np.float64)
        self.cut_labels: list[str] = list(run.cut_labels)
        self.cut_events: list[int] = list(run.cut_events)
        self.trials: int = run.trials
        self.device: str = run.device
        shape = (len(self.cut_labels), len(self.edges_deg))
        self.observed: _Counts = run.observed.reshape(shape)
        for name in ("ts", "bg_mean", "bg_std", "p_trials", "p_gauss", "p_gamma"):
            setattr(self, name, self.counts[name].to_numpy().reshape(shape))

    def background_distribution(self, cut: Union[int, str], bin: int) -> tuple[_Counts, _Counts]:
        """(count values, number of trials with that count) of one (cut, bin).

        ``cut`` is an index into ``cut_labels`` or one of the labels (``"all"``, ``"top 10%"``…);
        an index or label that the run does not have raises ``ValueError``.
        """
        if isinstance(cut, str):
            if cut not in self.cut_labels:
                raise ValueError(f"cut {cut!r}: this run has the cuts {self.cut_labels}")
            cut = self.cut_labels.index(cut)
        return self._run.background_distribution(int(cut), int(bin))

    def to_parquet(self, dir: PathLike, force: bool = False, plot: bool = False) -> None:
        """Write the CLI's output directory: ``counts.parquet``, ``background.parquet``,
        ``summary.json``, ``run.json`` (and ``autocorr.png`` with ``plot=True``).

        The directory appears whole or not at all; an existing one raises ``FileExistsError``
        unless ``force=True`` (then it is replaced as a whole).
        """
        self._run.save(os.fspath(dir), force, plot)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the native run (its counts, distributions and timings)."""
        return (Autocorr, (self._run,))

    def __repr__(self) -> str:
        cuts = ", ".join(f"{label} ({n} events)" for label, n in zip(self.cut_labels, self.cut_events))
        return (f"warpdrive.sky.Autocorr({len(self.cut_labels)} cuts x {len(self.edges_deg)} bins up to "
                f"{self.edges_deg[-1]:g} deg, {self.trials} trials on {self.device}; cuts {cuts})")


def _floats(name: str, v: Optional[npt.ArrayLike]) -> Optional[Float64Array]:
    """A one-dimensional float64 array, contiguous (None stays None)."""
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {a.shape}")
    return np.ascontiguousarray(a)


def autocorr(ra: Optional[npt.ArrayLike] = None, dec: Optional[npt.ArrayLike] = None,
             energy: Optional[npt.ArrayLike] = None, *, files: Union[None, PathLike, Sequence[PathLike]] = None,
             ra_column: Optional[str] = None, dec_column: Optional[str] = None, energy_column: Optional[str] = None,
             synthetic_events: Optional[int] = None, bins: int = 20, bin_width: float = 0.25,
             edges: Optional[npt.ArrayLike] = None,
             trials: int = 1000, seed: int = 1, hemisphere: str = "all", dec_min: Optional[float] = None,
             dec_max: Optional[float] = None, cuts: Optional[Sequence[str]] = None, ra_grid: Union[str, float] = "auto",
             jobs: int = 1, job_index: int = 0, device: str = "auto", threads: Optional[int] = None,
             progress: Progress = None) -> Autocorr:
    """``warpdrive sky autocorr`` on arrays of right ascension and declination [deg] and an
    energy proxy (only its order matters; without it, pass ``cuts=[]``: only the cut "all"),
    on event ``files`` (IceCube text releases, CSV, Parquet; columns by name as the CLI's
    ``--ra-column`` …), or on a generated isotropic sky of ``synthetic_events`` events.

    Options as the CLI's: ``bins``/``bin_width`` or ``edges`` [deg], ``trials``, ``seed``,
    ``hemisphere`` (all, north, south), ``dec_min``/``dec_max``, ``cuts`` (default
    ``top:0.1,top:0.01,top:0.001``), ``ra_grid`` (auto, off or a step in degrees),
    ``jobs``/``job_index``. Ctrl-C stops the run within about a second (``KeyboardInterrupt``).
    """
    if energy is None and cuts is None and files is None and synthetic_events is None:
        cuts = []
    cut_list = [str(c) for c in (DEFAULT_CUTS if cuts is None else cuts)]
    file_list: Optional[list[str]] = None
    if isinstance(files, (str, os.PathLike)):
        file_list = [os.fspath(files)]
    elif files is not None:
        file_list = [os.fspath(f) for f in files]
    cb, close = _progress.callback(progress, trials, "trials")
    try:
        run = _warpdrive.sky_autocorr(_floats("ra", ra), _floats("dec", dec), _floats("energy", energy), file_list,
                                      (ra_column, dec_column, energy_column), synthetic_events, hemisphere, dec_min,
                                      dec_max, cut_list, bins, float(bin_width), None if edges is None else
                                      [float(e) for e in np.asarray(edges, dtype=np.float64).ravel()], trials, seed,
                                      jobs, job_index, str(ra_grid), device, threads, cb)
    finally:
        close()
    return Autocorr(run)


def _files(files: Union[None, PathLike, Sequence[PathLike]]) -> Optional[list[str]]:
    """One path or a sequence of paths as a list of strings (None stays None)."""
    if isinstance(files, (str, os.PathLike)):
        return [os.fspath(files)]
    return None if files is None else [os.fspath(f) for f in files]


class Injection:
    """The result of :func:`inject` (the CLI's ``sky inject``).

    ``counts``, ``background``, ``signal`` and ``sensitivity`` are ``pyarrow.Table`` with the
    columns of the CLI's ``counts.parquet``, ``background.parquet``, ``signal.parquet`` (the
    injected trials' count distributions: sources, cut, bin, count, trials) and
    ``sensitivity.parquet`` (one row per number of sources, cut and bin: background median,
    mean, standard deviation and 3σ/5σ thresholds, signal mean and the fractions of injected
    trials above the median and beyond the thresholds); ``summary`` is the CLI's
    ``summary.json`` as a dict (the best cells, the sensitivity and the 3σ/5σ discovery
    potentials with their uncertainties). ``sources`` is the scan in the number of sources,
    ``events_per_source`` K, ``trials`` the trials per strength, ``edges_deg`` the bin edges,
    ``cut_labels`` the cuts, ``description`` the injection in one line and ``device`` where
    the trials ran.

    Picklable: the pickle holds these values and the bytes of the output directory (plot
    included), so an unpickled result writes the same files.
    """

    _r: Union[_warpdrive.SkyInjection, _warpdrive.SavedOutput]
    trials: int
    events_per_source: int
    device: str
    description: str

    def __init__(self, r: _warpdrive.SkyInjection) -> None:
        self._r = r
        counts, background, signal, sensitivity = r.tables()
        meta = {"warpdrive.device": r.device}
        self.counts: pa.Table = _arrow.table(counts, meta)
        self.background: pa.Table = _arrow.table(background, meta)
        self.signal: pa.Table = _arrow.table(signal, meta)
        self.sensitivity: pa.Table = _arrow.table(sensitivity, meta)
        self.summary: dict[str, Any] = json.loads(r.summary_json())
        self.sources: list[int] = list(r.sources)
        self.edges_deg: Float64Array = np.asarray(r.edges_deg, dtype=np.float64)
        self.cut_labels: list[str] = list(r.cut_labels)
        for k in ("trials", "events_per_source", "device", "description"):
            setattr(self, k, getattr(r, k))

    def to_parquet(self, dir: PathLike, force: bool = False, plot: bool = False) -> None:
        """Write the CLI's output directory: ``counts.parquet``, ``background.parquet``,
        ``signal.parquet``, ``sensitivity.parquet``, ``summary.json``, ``run.json`` (and
        ``inject.png`` with ``plot=True``).

        The directory appears whole or not at all; an existing one raises ``FileExistsError``
        unless ``force=True`` (then it is replaced as a whole).
        """
        self._r.save(os.fspath(dir), force, plot)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the output directory's bytes in place of the native result."""
        return _pickling.state_with_saved_output(self, "_r")

    def __repr__(self) -> str:
        scan = ",".join(str(n) for n in self.sources)
        return (f"warpdrive.sky.Injection(sources {scan} x {self.events_per_source} events, {self.trials} trials "
                f"on {self.device}; {len(self.cut_labels)} cuts x {len(self.edges_deg)} bins up to "
                f"{self.edges_deg[-1]:g} deg)")


def inject(ra: Optional[npt.ArrayLike] = None, dec: Optional[npt.ArrayLike] = None,
           energy: Optional[npt.ArrayLike] = None, ang_err: Optional[npt.ArrayLike] = None, *,
           files: Union[None, PathLike, Sequence[PathLike]] = None, ra_column: Optional[str] = None,
           dec_column: Optional[str] = None, energy_column: Optional[str] = None,
           ang_err_column: Optional[str] = None, synthetic_events: Optional[int] = None,
           sources: Union[int, Sequence[int]] = 10, events_per_source: int = 5, spectrum: float = -2.0,
           declination: Union[None, str, tuple[float, float]] = None, energy_threshold: str = "top:0.5",
           bins: int = 20, bin_width: float = 0.25, edges: Optional[npt.ArrayLike] = None, trials: int = 100,
           seed: int = 1, hemisphere: str = "all", dec_min: Optional[float] = None,
           dec_max: Optional[float] = None, cuts: Optional[Sequence[str]] = None, ra_grid: Union[str, float] = "auto",
           jobs: int = 1, job_index: int = 0, device: str = "auto", threads: Optional[int] = None,
           progress: Progress = None) -> Injection:
    """``warpdrive sky inject``: scrambled trials with ``sources`` point sources (one number or
    an increasing scan) of ``events_per_source`` events each replacing background events, beside
    the background trials, for the TS distributions with signal, the sensitivity and the
    discovery potential.

    Events as for :func:`autocorr` — arrays of right ascension and declination [deg], an energy
    proxy and the angular error ``ang_err`` [deg] (needed: signal events are displaced from
    their sources by it), event ``files`` (the angular-error column by ``ang_err_column`` or
    its usual names), or a generated sky of ``synthetic_events`` events (angular error 1°).
    ``spectrum`` is the signal's spectral index, ``declination`` the sources' band (lo, hi) in
    degrees or ``"lo:hi"`` as the CLI's ``--declination`` (default: the selected events' range), ``energy_threshold`` the cut whose events
    give the signal its energy proxies and angular errors; the other options as
    :func:`autocorr`. Trial k gives the same counts on any device, in any job and for any
    thread count. Ctrl-C stops the run within about a second (``KeyboardInterrupt``).
    """
    cut_list = [str(c) for c in (DEFAULT_CUTS if cuts is None else cuts)]
    scan: list[int] = [int(sources)] if isinstance(sources, (int, np.integer)) else list(sources)
    band = declination if declination is None or isinstance(declination, str) else \
        f"{float(declination[0])!r}:{float(declination[1])!r}"
    cb, close = _progress.callback(progress, trials * (1 + len(scan)), "trials")
    try:
        run = _warpdrive.sky_inject(_floats("ra", ra), _floats("dec", dec), _floats("energy", energy),
                                    _floats("ang_err", ang_err), _files(files),
                                    (ra_column, dec_column, energy_column, ang_err_column), synthetic_events,
                                    hemisphere, dec_min, dec_max, cut_list, bins, float(bin_width),
                                    None if edges is None else
                                    [float(e) for e in np.asarray(edges, dtype=np.float64).ravel()], trials, seed,
                                    jobs, job_index, str(ra_grid), scan, events_per_source, float(spectrum), band,
                                    str(energy_threshold), device, threads, cb)
    finally:
        close()
    return Injection(run)


def merge(job_dirs: Sequence[PathLike], partial: bool = False) -> Autocorr:
    """``warpdrive merge``: the output directories of one run split into jobs (``jobs=``,
    ``job_index=``, each written with :meth:`Autocorr.to_parquet`, e.g. by batch jobs) as one
    result, equal to the unsplit run's. Jobs of different runs, repeated or missing jobs raise
    ``ValueError`` (missing ones are allowed with ``partial=True``).

    >>> parts = []
    >>> for i in range(4):                                   # doctest: +SKIP
    ...     sky.autocorr(ra, dec, energy, trials=1000, jobs=4, job_index=i).to_parquet(f"job{i}")
    ...     parts.append(f"job{i}")
    >>> r = sky.merge(parts)                                 # doctest: +SKIP
    """
    if isinstance(job_dirs, (str, os.PathLike)):
        raise TypeError("job_dirs is a list of job directories (one directory needs no merge)")
    return Autocorr(_warpdrive.sky_merge([os.fspath(d) for d in job_dirs], bool(partial)))


def merge_injection(job_dirs: Sequence[PathLike], partial: bool = False) -> Injection:
    """``warpdrive merge`` of an injection split into jobs (``jobs=``, ``job_index=``, each
    written with :meth:`Injection.to_parquet`): one result, equal to the unsplit run's. Jobs of
    different injections, repeated or missing jobs raise ``ValueError`` (missing ones are
    allowed with ``partial=True``)."""
    if isinstance(job_dirs, (str, os.PathLike)):
        raise TypeError("job_dirs is a list of job directories (one directory needs no merge)")
    return Injection(_warpdrive.sky_merge_injection([os.fspath(d) for d in job_dirs], bool(partial)))


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
