"""Two-point autocorrelation of event directions with RA-scrambled trials (``warpdrive sky autocorr``)."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _arrow, _progress, _warpdrive

__all__ = ["Autocorr", "autocorr", "DEFAULT_CUTS"]

DEFAULT_CUTS = ("top:0.1", "top:0.01", "top:0.001")

PathLike = Union[str, "os.PathLike[str]"]


class Autocorr:
    """The result of :func:`autocorr`.

    ``counts`` and ``background`` are ``pyarrow.Table`` with the columns of the CLI's
    ``counts.parquet`` and ``background.parquet``; ``observed``, ``ts``, ``bg_mean``, ``bg_std``,
    ``p_trials``, ``p_gauss`` and ``p_gamma`` are (cuts, bins) arrays; ``edges_deg`` the bin
    edges, ``cut_labels`` the cuts.
    """

    def __init__(self, run: Any) -> None:
        self._run = run
        counts, background = run.tables()
        meta = {"warpdrive.device": run.device}
        self.counts = _arrow.table(counts, meta)
        self.background = _arrow.table(background, meta)
        self.edges_deg = np.asarray(run.edges_deg)
        self.cut_labels: list[str] = list(run.cut_labels)
        self.cut_events: list[int] = list(run.cut_events)
        self.trials: int = run.trials
        self.device: str = run.device
        shape = (len(self.cut_labels), len(self.edges_deg))
        self.observed = run.observed.reshape(shape)
        for name in ("ts", "bg_mean", "bg_std", "p_trials", "p_gauss", "p_gamma"):
            setattr(self, name, self.counts[name].to_numpy().reshape(shape))

    def background_distribution(self, cut: Union[int, str], bin: int) -> tuple[np.ndarray, np.ndarray]:
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

    def __repr__(self) -> str:
        return f"warpdrive.sky.Autocorr({len(self.cut_labels)} cuts x {len(self.edges_deg)} bins, {self.trials} trials on {self.device})"


def _floats(name: str, v: Any) -> Optional[np.ndarray]:
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {a.shape}")
    return np.ascontiguousarray(a)


def autocorr(ra: Any = None, dec: Any = None, energy: Any = None, *, files: Optional[Sequence[PathLike]] = None,
             ra_column: Optional[str] = None, dec_column: Optional[str] = None, energy_column: Optional[str] = None,
             synthetic_events: Optional[int] = None, bins: int = 20, bin_width: float = 0.25, edges: Any = None,
             trials: int = 1000, seed: int = 1, hemisphere: str = "all", dec_min: Optional[float] = None,
             dec_max: Optional[float] = None, cuts: Optional[Sequence[str]] = None, ra_grid: Union[str, float] = "auto",
             jobs: int = 1, job_index: int = 0, device: str = "auto", threads: Optional[int] = None,
             progress: Union[None, bool, Callable[[int, int], Any]] = None) -> Autocorr:
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
    file_list = None if files is None else [os.fspath(f) for f in ([files] if isinstance(files, (str, os.PathLike)) else files)]
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
