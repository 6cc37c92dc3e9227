"""Photospline tables and Millipede unfolding: ``warpdrive spline info|eval|simulate|unfold``.

:class:`Table` reads a photospline FITS table and evaluates it on the CPU (float64) or a GPU
(float32): ``eval`` takes rows of points, ``(N, ndim)``; the photospline-compatible surface —
``evaluate_simple``, calling the table, ``grideval``, ``coefficients``, ``knots``, ``order``,
``extents`` — takes one array per coordinate. :func:`fit` makes a table from a histogram
(photospline's ``glam_fit``). :func:`simulate` draws a synthetic event from the
tables, :func:`unfold` unfolds the energy losses of a hypothesis from an event (Millipede).
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal, Mapping, Optional, Sequence, Union, overload

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import _arrow, _pickling, _progress, _warpdrive
from ._types import Float64Array, PathLike, Progress

__all__ = ["Table", "Event", "Unfolding", "fit", "merge_events", "simulate", "unfold", "unfold_events"]


def _table_from_fits(data: bytes, path: Optional[str]) -> Table:
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

    _t: _warpdrive.SplineTable

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
    def knots(self) -> list[Float64Array]:
        """The knot vector of each dimension."""
        return [np.asarray(k, dtype=np.float64) for k in self._t.knots]

    @property
    def coefficients(self) -> npt.NDArray[np.float32]:
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
        extents = ", ".join(f"[{lo:g}, {hi:g}]" for lo, hi in self.extents)
        return (f"warpdrive.spline.Table({self.path!r}, ndim={self.ndim}, order={self.order}, "
                f"coefficients {'x'.join(map(str, self._t.naxes))}, extents {extents})")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the table's FITS bytes (and its path as a label)."""
        return (_table_from_fits, (self._t.to_fits(), self.path))

    def to_fits(self) -> bytes:
        """The table as FITS bytes, in photospline's layout."""
        return self._t.to_fits()

    @overload
    def eval(self, points: npt.ArrayLike, gradient: Literal[False] = False, device: str = "auto",
             threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
             progress: Progress = False) -> Float64Array: ...

    @overload
    def eval(self, points: npt.ArrayLike, gradient: Literal[True], device: str = "auto",
             threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
             progress: Progress = False) -> tuple[Float64Array, Float64Array]: ...

    @overload
    def eval(self, points: npt.ArrayLike, gradient: bool = False, device: str = "auto",
             threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
             progress: Progress = False) -> Union[Float64Array, tuple[Float64Array, Float64Array]]: ...

    def eval(self, points: npt.ArrayLike, gradient: bool = False, device: str = "auto", threads: Optional[int] = None,
             precise: bool = False, standard_layout: bool = False,
             progress: Progress = False) -> Union[Float64Array, tuple[Float64Array, Float64Array]]:
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

    def evaluate_simple(self, coords: Sequence[npt.ArrayLike], derivatives: int = 0, device: str = "auto",
                        threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
                        progress: Progress = False) -> Union[float, Float64Array]:
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

    def __call__(self, *coords: npt.ArrayLike, derivatives: int = 0, device: str = "auto",
                 threads: Optional[int] = None, precise: bool = False, standard_layout: bool = False,
                 progress: Progress = False) -> Union[float, Float64Array]:
        """``t(x0, x1, …)`` or ``t([x0, x1, …])``: :meth:`evaluate_simple` of one array per
        coordinate (broadcast); the keywords as :meth:`evaluate_simple`'s."""
        if len(coords) == 1 and self.ndim > 1:
            coords = tuple(coords[0])  # type: ignore[arg-type]  # one sequence of per-coordinate arrays
        return self.evaluate_simple(coords, derivatives, device=device, threads=threads, precise=precise,
                                    standard_layout=standard_layout, progress=progress)

    def grideval(self, coords: Sequence[npt.ArrayLike], threads: Optional[int] = None,
                 progress: Progress = False) -> Float64Array:
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


def _float_list(v: npt.ArrayLike) -> list[float]:
    """A number or numbers as a list of floats."""
    return [float(x) for x in np.asarray(v, dtype=np.float64).ravel()]


def _floats(v: Optional[npt.ArrayLike]) -> Optional[list[float]]:
    """A number or numbers as a list of floats (None stays None)."""
    return None if v is None else _float_list(v)


def _fspath(p: Optional[PathLike]) -> Optional[str]:
    """A path-like as ``str`` (None stays None)."""
    return None if p is None else os.fspath(p)


class Event:
    """A synthetic event (:func:`simulate`): ``table()`` is the CLI's event file as a
    ``pyarrow.Table`` (string, om, time, charge; window, true energies and the request in its
    metadata), ``to_parquet`` writes it; ``window``, ``true_energy``, ``total_charge``,
    ``hit_doms``, ``pulses``. Pass it (or its table) to :func:`unfold`.

    Picklable: the pickle holds the table and the event file's bytes, so an unpickled event
    writes the same file."""

    _e: Union[_warpdrive.SimulatedEvent, _warpdrive.SavedOutput]

    def __init__(self, native: _warpdrive.SimulatedEvent) -> None:
        self._e = native
        self._table: pa.Table = _arrow.table(native.table(), {})
        self.window: tuple[float, float] = native.window
        self.true_energy: list[float] = native.true_energy
        self.total_charge: float = native.total_charge
        self.hit_doms: int = native.hit_doms
        self.pulses: int = native.pulses

    def table(self) -> pa.Table:
        """The event as a ``pyarrow.Table`` (the CLI's ``event.parquet``)."""
        return self._table

    def to_parquet(self, path: PathLike, force: bool = False) -> None:
        """Write the CLI's event file; an existing file raises ``FileExistsError`` unless ``force=True``."""
        self._e.save(os.fspath(path), force)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the event file's bytes in place of the native event."""
        return _pickling.state_with_saved_output(self, "_e")

    def __repr__(self) -> str:
        return (f"<warpdrive.spline.Event {self.pulses} pulses, {self.total_charge:.0f} PE on {self.hit_doms} DOMs, "
                f"true energy {sum(self.true_energy):.1f} GeV>")


def _axes(v: Optional[Sequence[str]]) -> Optional[list[str]]:
    if v is None:
        return None
    return [v] if isinstance(v, str) else [str(a) for a in v]


def simulate(energy: Union[float, Sequence[float]], cascade: Optional[Sequence[float]] = None,
             track: Optional[Sequence[float]] = None, spacing: float = 15.0, amplitude: Optional[PathLike] = None,
             timing: Optional[PathLike] = None, amplitude_only: bool = False, geometry: Optional[PathLike] = None,
             noise_rate: float = 500.0, window: Sequence[float] = (-1000.0, 9000.0), seed: int = 1, event: int = 0,
             device: str = "auto", threads: Optional[int] = None, progress: Progress = None,
             source_axes: Optional[Sequence[str]] = None) -> Event:
    """``warpdrive spline simulate``: a synthetic event (Poisson photo-electrons at every DOM,
    arrival times from the timing table, dark noise) of ``energy`` GeV per source (one value
    for every source, or one per source) for the hypothesis ``cascade=(x, y, z, zenith,
    azimuth, t)`` or ``track=(x, y, z, zenith, azimuth, t, length)`` with ``spacing``
    [m, degrees, ns]. ``window=(start, end)`` [ns], ``seed`` and ``event`` (the random stream).
    Drawn on the CPU (a GPU ``device`` is noted and not used). Same defaults as the CLI.
    ``source_axes`` as :func:`unfold`'s.
    """
    cb, close = _progress.callback(progress, 0, "DOMs")
    try:
        native = _warpdrive.spline_simulate(_floats(cascade), _floats(track), float(spacing), _fspath(amplitude),
                                            _fspath(timing), bool(amplitude_only), _fspath(geometry), float(noise_rate),
                                            _float_list(energy), _float_list(window), seed, event, device, threads, cb,
                                            _axes(source_axes))
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

    Picklable: the pickle holds these values and the bytes of the output directory (plot
    included), so an unpickled result's :meth:`to_dir` writes the same files.
    """

    _u: Union[_warpdrive.UnfoldRun, _warpdrive.SavedOutput]
    energy: Float64Array
    sigma: Float64Array
    distance: Float64Array
    x: Float64Array
    y: Float64Array
    z: Float64Array
    time: Float64Array
    converged: bool
    iterations: int
    log_likelihood: float
    chi2: float
    rows: int

    def __init__(self, native: _warpdrive.UnfoldRun) -> None:
        self._u = native
        self._table: pa.Table = _arrow.table(native.energies(), {})
        for name in self._table.column_names:
            if name != "source":
                setattr(self, name, self._table[name].to_numpy())
        self.covariance: Float64Array = native.covariance()
        self.pe_per_gev: Float64Array = native.pe_per_gev()
        self.blind: list[int] = native.blind()
        self.summary: dict[str, Any] = json.loads(native.summary_json())
        self.run: dict[str, Any] = json.loads(native.run_json())
        self.total_energy: float = self.summary["total_energy_gev"]
        # None when every source is at E = 0: the covariance then says nothing about the total.
        self.total_energy_sigma: Optional[float] = self.summary["total_energy_sigma_gev"]
        for k in ("converged", "iterations", "log_likelihood", "chi2", "rows"):
            setattr(self, k, self.summary[k])

    def table(self) -> pa.Table:
        """The energies as a ``pyarrow.Table`` with the columns of the CLI's energies.parquet."""
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the output directory's bytes in place of the native result."""
        return _pickling.state_with_saved_output(self, "_u")

    def to_dir(self, dir: PathLike, force: bool = False, plot: bool = True) -> None:
        """Write the CLI's output directory: ``energies.parquet``, ``summary.json``, ``run.json``
        and (``plot``) ``energies.png``. It appears whole or not at all; an existing one raises
        ``FileExistsError`` unless ``force=True``."""
        self._u.save(os.fspath(dir), force, plot)

    def __repr__(self) -> str:
        n = len(self.energy)
        total = (f"{self.total_energy:.1f} GeV (every source at E = 0)" if self.total_energy_sigma is None
                 else f"{self.total_energy:.1f} ± {self.total_energy_sigma:.1f} GeV")
        state = "converged" if self.converged else "NOT converged"
        return (f"<warpdrive.spline.Unfolding {n} sources, total {total}, {state} after {self.iterations} "
                f"iterations, {len(self.blind)} blind>")


#: An event's (string, om, time, charge) columns.
_PulseColumns = tuple[list[float], list[float], list[float], list[float]]


def unfold(event: Union[PathLike, Event, pa.Table, Mapping[str, Any]], cascade: Optional[Sequence[float]] = None,
           track: Optional[Sequence[float]] = None, spacing: float = 15.0, amplitude: Optional[PathLike] = None, timing: Optional[PathLike] = None,
           amplitude_only: bool = False, geometry: Optional[PathLike] = None, noise_rate: float = 500.0,
           solver: str = "newton", regularization: float = 0.0, photons_per_bin: float = 5.0,
           tolerance: float = 1e-9, max_iterations: int = 20000, device: str = "auto", threads: Optional[int] = None,
           precise: bool = False, progress: Progress = None, source_axes: Optional[Sequence[str]] = None) -> Unfolding:
    """Millipede energy unfolding, as ``warpdrive spline unfold`` (same code, same defaults).

    ``event``: a Parquet path (columns string, om, time, charge; window in the metadata), an
    :class:`Event` from :func:`simulate`, a ``pyarrow.Table`` with those columns (window from its
    metadata), or a dict of them with an optional ``window=(start, end)``. Hypothesis:
    ``cascade=(x, y, z, zenith, azimuth, t)`` or ``track=(x, y, z, zenith, azimuth, t, length)``
    with ``spacing`` [m, degrees, ns]. ``amplitude``/``timing``/``geometry``: files (None: the
    defaults in ``WARPDRIVE_DATA``). ``device="auto"`` builds the response matrix on a GPU when
    CUDA works (float32 table evaluations), else on the CPU. Everything the solve allocates is
    checked first (``MemoryError`` with advice); Ctrl-C stops it within about a second.
    Tables indexed by the source's depth and/or zenith (``photon.tabulate`` + ``spline fit``:
    their header names the axes) are evaluated at each source's depth and zenith;
    ``source_axes=["zenith", "depth"]`` names those axes for tables whose header does not (the
    CLI's ``--source-axes``). Returns an :class:`Unfolding`.
    """
    path: Optional[str] = None
    pulses: Optional[_PulseColumns] = None
    window: Optional[tuple[float, float]] = None
    if isinstance(event, Event):
        event = event.table()
    if isinstance(event, (str, os.PathLike)):
        path = os.fspath(event)
    else:
        get = event.column if hasattr(event, "column") and not isinstance(event, dict) else event.__getitem__
        string, om, time, charge = (np.asarray(get(k), dtype=np.float64).tolist() for k in ("string", "om", "time", "charge"))
        pulses = (string, om, time, charge)
        if isinstance(event, dict) and event.get("window") is not None:
            start, end = (float(w) for w in event["window"])
            window = (start, end)
        elif hasattr(event, "schema") and event.schema.metadata:
            m = event.schema.metadata
            if b"window_start" in m and b"window_end" in m:
                window = (float(m[b"window_start"]), float(m[b"window_end"]))
    cb, close = _progress.callback(progress, 0, "unfolding")
    try:
        native = _warpdrive.spline_unfold(path, pulses, window, _floats(cascade), _floats(track), float(spacing),
                                          _fspath(amplitude), _fspath(timing), bool(amplitude_only), _fspath(geometry),
                                          float(noise_rate), solver, float(regularization), float(photons_per_bin),
                                          float(tolerance), max_iterations, device, threads, precise, cb,
                                          _axes(source_axes))
    finally:
        close()
    return Unfolding(native)


def unfold_events(events: PathLike, output: PathLike, *, spacing: float = 15.0, amplitude: Optional[PathLike] = None,
                  timing: Optional[PathLike] = None, amplitude_only: bool = False, geometry: Optional[PathLike] = None,
                  noise_rate: float = 500.0, solver: str = "newton", regularization: float = 0.0,
                  photons_per_bin: float = 5.0, tolerance: float = 1e-9, max_iterations: int = 20000,
                  force: bool = False, device: str = "auto", threads: Optional[int] = None, precise: bool = False,
                  progress: Progress = None, jobs: int = 1, job_index: int = 0,
                  source_axes: Optional[Sequence[str]] = None) -> int:
    """Millipede over a list of events, as ``warpdrive spline unfold --events LIST -o OUTPUT``: the
    list is CSV with the header ``event,kind,x,y,z,zenith,azimuth,t,length`` (each event's Parquet
    file and its own cascade or track hypothesis; docs/spline.md). Writes ``output``
    (``energies.parquet``, ``events.parquet``, ``summary.json``, ``run.json``) whole or not at all.
    ``jobs=N, job_index=I`` unfold batch job I's share of the events; combine the job directories
    with :func:`merge_events` (or ``warpdrive merge``). ``source_axes`` as :func:`unfold`'s.
    Returns the number of events unfolded.
    """
    cb, close = _progress.callback(progress, 0, "unfolding")
    try:
        return _warpdrive.spline_unfold_events(os.fspath(events), os.fspath(output), force, float(spacing),
                                               _fspath(amplitude), _fspath(timing), bool(amplitude_only),
                                               _fspath(geometry), float(noise_rate), solver, float(regularization),
                                               float(photons_per_bin), float(tolerance), max_iterations, device,
                                               threads, precise, cb, jobs, job_index, _axes(source_axes))
    finally:
        close()


def merge_events(dirs: Sequence[PathLike], output: PathLike, force: bool = False) -> int:
    """Combine the output directories of :func:`unfold_events` jobs into ``output``: the unsplit
    run's files. Refuses missing, repeated or foreign jobs, naming them. Returns the events merged."""
    return _warpdrive.spline_merge_events([os.fspath(d) for d in dirs], os.fspath(output), force)


def _per_axis(v: Union[float, Sequence[float], npt.ArrayLike], kind: type) -> list[Any]:
    """One value (for every axis) or one per axis, as a list."""
    a = np.atleast_1d(np.asarray(v))
    return [kind(x) for x in a.ravel()]


def fit(z: npt.ArrayLike, w: npt.ArrayLike, centers: Sequence[npt.ArrayLike], knots: Sequence[npt.ArrayLike],
        order: Union[int, Sequence[int]], smooth: Union[float, Sequence[float]],
        penalty_order: Union[int, Sequence[int]] = 2, monodim: Optional[int] = None,
        device: str = "auto", threads: Optional[int] = None, progress: Progress = None) -> Table:
    """Fit a table to a histogram, as ``warpdrive spline fit`` (photospline's ``glam_fit``, same
    argument meanings): penalized tensor-product B-splines by the GLAM algorithm, on one GPU
    (``device="cuda"``, ``"cuda:N"``; ``"auto"`` when there is one) or on the CPU (``"cpu"``,
    ``threads``), with the same coefficients bit for bit.

    ``z``: the values, an N-D array (N ≤ 6) over the grid of ``centers`` (one 1-D array of bin
    centres per axis); ``w``: the weights, same shape (inverse variances; 0 for empty bins).
    ``knots``: one knot vector per axis as the table stores it (n + order + 1 knots for n
    coefficients; they must cover the centres). ``order`` (B-spline degree, ≤ 5), ``smooth``
    (λ ≥ 0) and ``penalty_order`` (order of the penalized derivative, ≤ the degree): one value
    for every axis or one per axis. ``monodim``: the axis along which the fit does not
    decrease (photospline's T-spline basis with non-negative increments, so it is also ≥ 0;
    monotonic fits run on the CPU). Returns a :class:`Table` (its header holds SMOOTHi, PENORDi, FITBINS, FITCHI2);
    ``open(path, "wb").write(t.to_fits())`` writes it.
    """
    zz = np.asarray(z, dtype=np.float64)
    ww = np.asarray(w, dtype=np.float64)
    cs = [np.asarray(c, dtype=np.float64).ravel().tolist() for c in centers]
    ks = [np.asarray(k, dtype=np.float64).ravel().tolist() for k in knots]
    cb, close = _progress.callback(progress, 0, "fitting")
    try:
        native = _warpdrive.spline_fit(zz, ww, cs, ks, _per_axis(order, int), _per_axis(smooth, float),
                                       _per_axis(penalty_order, int), None if monodim is None else int(monodim),
                                       device, threads, cb)
    finally:
        close()
    t = Table.__new__(Table)
    t._t = native
    return t


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
