"""Photospline tables and Millipede unfolding: ``warpdrive spline info|eval|simulate|unfold``.

:class:`Table` reads a photospline FITS table and evaluates it on the CPU (float64) or a GPU
(float32): ``eval`` takes rows of points, ``(N, ndim)``; the photospline-compatible surface —
``evaluate_simple``, calling the table, ``grideval``, ``coefficients``, ``knots``, ``order``,
``extents`` — takes one array per coordinate. :func:`simulate` draws a synthetic event from the
tables, :func:`unfold` unfolds the energy losses of a hypothesis from an event (Millipede).
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from . import _arrow, _progress, _warpdrive

__all__ = ["Table", "Event", "Unfolding", "simulate", "unfold"]

PathLike = Union[str, "os.PathLike[str]"]
Progress = Union[None, bool, Callable[[int, int], Any]]


def _table_from_fits(data: bytes, path: Optional[str]) -> "Table":
    """Rebuild a pickled :class:`Table` from its FITS bytes."""
    t = Table.__new__(Table)
    t._t = _warpdrive.SplineTable.from_fits(data, path)
    return t


class Table:
    """A photospline FITS table, read and checked once.

    >>> t = Table(path)                          # doctest: +SKIP
    >>> t.ndim, t.extents, t.order               # doctest: +SKIP
    >>> v = t.eval(np.zeros((10, t.ndim)))       # rows (N, ndim), as ``warpdrive spline eval``
    >>> v = t(xs, ys)                            # one array per coordinate, as photospline

    Device: ``device="auto"`` (default) evaluates on a GPU when CUDA works, else on the CPU. A
    GPU evaluates in **float32** (about 1e-5 relative to the size of the summed terms; see
    docs/validation/spline.md), the CPU in **float64** sums of the float32 coefficients: pass
    ``device="cpu"`` for results that do not depend on the machine.

    Pickling stores the table's FITS bytes (photospline's own pickling does the same): an
    unpickled table needs no access to the file; ``path`` keeps the original name as a label.
    """

    _t: Any

    def __init__(self, path: PathLike) -> None:
        self._t = _warpdrive.SplineTable(os.fspath(path))

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self._t.ndim

    @property
    def extents(self) -> list[tuple[float, float]]:
        """[(lo, hi)] per dimension: where the table is meant to be evaluated."""
        return self._t.extents

    @property
    def order(self) -> list[int]:
        """B-spline degree per dimension (photospline's "order": 2 = quadratic)."""
        return self._t.order

    @property
    def knots(self) -> list[np.ndarray]:
        """The knot vector of each dimension."""
        return [np.asarray(k) for k in self._t.knots]

    @property
    def coefficients(self) -> np.ndarray:
        """The float32 coefficients in the table's shape (dimension 0 slowest); a copy."""
        return self._t.coefficients

    @property
    def periods(self) -> list[float]:
        """PERIODi of each dimension (0: not periodic)."""
        return self._t.periods

    @property
    def aux(self) -> dict[str, str]:
        """Auxiliary header keys (NGROUP, GEOMETRY, …) and their values as text."""
        return dict(self._t.aux)

    @property
    def path(self) -> Optional[str]:
        """The file the table was read from (None for a table made from bytes)."""
        p = self._t.path
        return None if p is None else os.fspath(p)

    def __repr__(self) -> str:
        return f"warpdrive.spline.Table({self.path!r}, ndim={self.ndim}, order={self.order})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_table_from_fits, (self._t.to_fits(), self.path))

    def to_fits(self) -> bytes:
        """The table as FITS bytes, in photospline's layout."""
        return self._t.to_fits()

    def eval(self, points: Any, gradient: bool = False, device: str = "auto", threads: Optional[int] = None,
             precise: bool = False, standard_layout: bool = False, progress: Progress = False) -> Any:
        """Evaluate at ``points``: **rows** of shape (N, ndim), as ``warpdrive spline eval --points``.

        Returns the (N,) values, or with ``gradient=True`` a pair (values (N,), gradients
        (N, ndim)), views of one array. A C-contiguous float64 array is read without a copy.
        ``device="auto"`` (default): a GPU when CUDA works (float32), else the CPU (float64);
        ``device="cpu"``, ``"cuda"``, ``"cuda:N"`` choose. ``standard_layout`` is the CLI's
        ``--standard-layout`` (GPU only). ``progress`` as everywhere in warpdrive (default: silent).

        A square array (ndim × ndim) is refused as ambiguous — it could be rows or one array
        per coordinate (photospline's habit, ``[xs, ys]``); for one array per coordinate call
        the table (``t(xs, ys)``) or :meth:`evaluate_simple`.
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim == 1 and self.ndim == 1:
            pts = pts.reshape(-1, 1)
        if pts.ndim != 2:
            raise ValueError(f"points must be rows of shape (N, {self.ndim}), got shape {pts.shape}")
        cb, close = _progress.callback(progress, pts.shape[0], "points")
        try:
            out = self._t.eval(pts, gradient, 0, device, threads, precise, standard_layout, cb)
        finally:
            close()
        if gradient:
            return out[:, 0], out[:, 1:]
        return out

    def evaluate_simple(self, coords: Sequence[Any], derivatives: int = 0, device: str = "auto",
                        threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
                        progress: Progress = False) -> Any:
        """photospline's ``evaluate_simple``: one array (or number) per coordinate, broadcast
        together with NumPy's rules; returns the values in the broadcast shape (a float for
        scalars).

        ``derivatives`` is photospline's bitmask: 0 the value, bit d set (``1 << d``) the first
        derivative along dimension d. Mixed and higher derivatives (several bits) are not
        supported and raise ``ValueError``. Device and precision as :meth:`eval`.
        """
        arrays = np.broadcast_arrays(*[np.asarray(c, dtype=np.float64) for c in coords])
        shape = arrays[0].shape if arrays else ()
        stacked = np.stack([a.ravel() for a in arrays]) if arrays else np.zeros((0, 0))
        cb, close = _progress.callback(progress, stacked.shape[1], "points")
        try:
            v = self._t.eval_coordinates(stacked, int(derivatives), device, threads, precise, standard_layout, cb)
        finally:
            close()
        v = v.reshape(shape)
        return float(v) if v.ndim == 0 else v

    def __call__(self, *coords: Any, derivatives: int = 0, **kwargs: Any) -> Any:
        """``t(x0, x1, …)`` or ``t([x0, x1, …])``: :meth:`evaluate_simple` of one array per
        coordinate (broadcast)."""
        if len(coords) == 1 and self.ndim > 1:
            coords = tuple(coords[0])
        return self.evaluate_simple(coords, derivatives, **kwargs)

    def grideval(self, coords: Sequence[Any], threads: Optional[int] = None, progress: Progress = False) -> np.ndarray:
        """photospline's ``grideval``: values on the outer-product grid of ``coords`` (one 1-D
        array per dimension), shape ``(len(coords[0]), len(coords[1]), …)``; on the CPU."""
        axes = []
        for d, c in enumerate(coords):
            a = np.asarray(c, dtype=np.float64)
            if a.ndim != 1:
                raise ValueError(f"coords[{d}] must be a one-dimensional array, got shape {a.shape}")
            axes.append(a.tolist())
        cb, close = _progress.callback(progress, 0, "grid rows")
        try:
            return self._t.grideval(axes, threads, cb)
        finally:
            close()


def _floats(v: Any) -> Optional[list[float]]:
    return None if v is None else [float(x) for x in np.asarray(v, dtype=np.float64).ravel()]


def _fspath(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


class Event:
    """A synthetic event (:func:`simulate`): ``table()`` is the CLI's event file as a
    ``pyarrow.Table`` (string, om, time, charge; window, true energies and the request in its
    metadata), ``to_parquet`` writes it; ``window``, ``true_energy``, ``total_charge``,
    ``hit_doms``, ``pulses``. Pass it (or its table) to :func:`unfold`."""

    def __init__(self, native: Any) -> None:
        self._e = native
        self.window: tuple[float, float] = native.window
        self.true_energy: list[float] = native.true_energy
        self.total_charge: float = native.total_charge
        self.hit_doms: int = native.hit_doms
        self.pulses: int = native.pulses

    def table(self) -> Any:
        """The event as a ``pyarrow.Table`` (the CLI's ``event.parquet``)."""
        return _arrow.table(self._e.table(), {})

    def to_parquet(self, path: PathLike, force: bool = False) -> None:
        """Write the CLI's event file; an existing file raises ``FileExistsError`` unless ``force=True``."""
        self._e.save(os.fspath(path), force)

    def __repr__(self) -> str:
        return (f"<warpdrive.spline.Event {self.pulses} pulses, {self.total_charge:.0f} PE on {self.hit_doms} DOMs, "
                f"true energy {sum(self.true_energy):.1f} GeV>")


def simulate(energy: Union[float, Sequence[float]], cascade: Optional[Sequence[float]] = None,
             track: Optional[Sequence[float]] = None, spacing: float = 15.0, amplitude: Optional[PathLike] = None,
             timing: Optional[PathLike] = None, amplitude_only: bool = False, geometry: Optional[PathLike] = None,
             noise_rate: float = 500.0, window: Sequence[float] = (-1000.0, 9000.0), seed: int = 1, event: int = 0,
             device: str = "auto", threads: Optional[int] = None, progress: Progress = None) -> Event:
    """``warpdrive spline simulate``: a synthetic event (Poisson photo-electrons at every DOM,
    arrival times from the timing table, dark noise) of ``energy`` GeV per source (one value
    for every source, or one per source) for the hypothesis ``cascade=(x, y, z, zenith,
    azimuth, t)`` or ``track=(x, y, z, zenith, azimuth, t, length)`` with ``spacing``
    [m, degrees, ns]. ``window=(start, end)`` [ns], ``seed`` and ``event`` (the random stream).
    Drawn on the CPU (a GPU ``device`` is noted and not used). Same defaults as the CLI.
    """
    cb, close = _progress.callback(progress, 0, "DOMs")
    try:
        native = _warpdrive.spline_simulate(_floats(cascade), _floats(track), float(spacing), _fspath(amplitude),
                                            _fspath(timing), bool(amplitude_only), _fspath(geometry), float(noise_rate),
                                            _floats(energy), _floats(window), seed, event, device, threads, cb)
    finally:
        close()
    return Event(native)


class Unfolding:
    """The result of :func:`unfold`: per-source energies with their 1σ and the fit's numbers.

    Attributes: ``energy``, ``sigma``, ``distance``, ``x``, ``y``, ``z``, ``time`` (arrays over
    sources), ``covariance`` (n, n), ``pe_per_gev`` (the photo-electrons each source puts in
    per GeV), ``blind`` (sources the detector barely sees), ``total_energy``,
    ``total_energy_sigma``, ``converged``, ``iterations``, ``log_likelihood``, ``chi2``,
    ``rows``, ``summary`` (the CLI's summary.json: the request's and the fit's numbers) and
    ``run`` (run.json: device, timings).
    """

    def __init__(self, native: Any) -> None:
        self._u = native
        self._table = _arrow.table(native.energies(), {})
        for name in self._table.column_names:
            if name != "source":
                setattr(self, name, self._table[name].to_numpy())
        self.covariance: np.ndarray = native.covariance()
        self.pe_per_gev: np.ndarray = native.pe_per_gev()
        self.blind: list[int] = native.blind()
        self.summary: dict[str, Any] = json.loads(native.summary_json())
        self.run: dict[str, Any] = json.loads(native.run_json())
        self.total_energy: float = self.summary["total_energy_gev"]
        # None when every source is at E = 0: the covariance then says nothing about the total.
        self.total_energy_sigma: Optional[float] = self.summary["total_energy_sigma_gev"]
        for k in ("converged", "iterations", "log_likelihood", "chi2", "rows"):
            setattr(self, k, self.summary[k])

    def table(self) -> Any:
        """The energies as a ``pyarrow.Table`` with the columns of the CLI's energies.parquet."""
        return self._table

    def to_dir(self, dir: PathLike, force: bool = False, plot: bool = True) -> None:
        """Write the CLI's output directory: ``energies.parquet``, ``summary.json``, ``run.json``
        and (``plot``) ``energies.png``. It appears whole or not at all; an existing one raises
        ``FileExistsError`` unless ``force=True``."""
        self._u.save(os.fspath(dir), force, plot)

    def __repr__(self) -> str:
        n = len(self.energy)  # type: ignore[attr-defined]
        total = (f"{self.total_energy:.1f} GeV (every source at E = 0)" if self.total_energy_sigma is None
                 else f"{self.total_energy:.1f} ± {self.total_energy_sigma:.1f} GeV")
        return f"<warpdrive.spline.Unfolding {n} sources, total {total}, {'converged' if self.converged else 'NOT converged'}>"  # type: ignore[attr-defined]


def unfold(event: Any, cascade: Optional[Sequence[float]] = None, track: Optional[Sequence[float]] = None,
           spacing: float = 15.0, amplitude: Optional[PathLike] = None, timing: Optional[PathLike] = None,
           amplitude_only: bool = False, geometry: Optional[PathLike] = None, noise_rate: float = 500.0,
           solver: str = "newton", regularization: float = 0.0, photons_per_bin: float = 5.0,
           tolerance: float = 1e-9, max_iterations: int = 20000, device: str = "auto", threads: Optional[int] = None,
           precise: bool = False, progress: Progress = None) -> Unfolding:
    """Millipede energy unfolding, as ``warpdrive spline unfold`` (same code, same defaults).

    ``event``: a Parquet path (columns string, om, time, charge; window in the metadata), an
    :class:`Event` from :func:`simulate`, a ``pyarrow.Table`` with those columns (window from its
    metadata), or a dict of them with an optional ``window=(start, end)``. Hypothesis:
    ``cascade=(x, y, z, zenith, azimuth, t)`` or ``track=(x, y, z, zenith, azimuth, t, length)``
    with ``spacing`` [m, degrees, ns]. ``amplitude``/``timing``/``geometry``: files (None: the
    defaults in ``WARPDRIVE_DATA``). ``device="auto"`` builds the response matrix on a GPU when
    CUDA works (float32 table evaluations), else on the CPU. Everything the solve allocates is
    checked first (``MemoryError`` with advice); Ctrl-C stops it within about a second.
    Returns an :class:`Unfolding`.
    """
    path, pulses, window = None, None, None
    if isinstance(event, Event):
        event = event.table()
    if isinstance(event, (str, os.PathLike)):
        path = os.fspath(event)
    else:
        get = event.column if hasattr(event, "column") and not isinstance(event, dict) else event.__getitem__
        pulses = tuple(np.asarray(get(k), dtype=np.float64).tolist() for k in ("string", "om", "time", "charge"))
        if isinstance(event, dict) and event.get("window") is not None:
            window = tuple(float(w) for w in event["window"])
        elif hasattr(event, "schema") and event.schema.metadata:
            m = event.schema.metadata
            if b"window_start" in m and b"window_end" in m:
                window = (float(m[b"window_start"]), float(m[b"window_end"]))
    cb, close = _progress.callback(progress, 0, "unfolding")
    try:
        native = _warpdrive.spline_unfold(path, pulses, window, _floats(cascade), _floats(track), float(spacing),
                                          _fspath(amplitude), _fspath(timing), bool(amplitude_only), _fspath(geometry),
                                          float(noise_rate), solver, float(regularization), float(photons_per_bin),
                                          float(tolerance), max_iterations, device, threads, precise, cb)
    finally:
        close()
    return Unfolding(native)
