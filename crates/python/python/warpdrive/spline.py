"""Photospline tables: ``warpdrive spline info|eval``."""

import os

import numpy as np

from . import _warpdrive


class Table:
    """A photospline FITS table, read and checked once.

    >>> t = Table(path)                      # doctest: +SKIP
    >>> t.ndim, t.extents                    # doctest: +SKIP
    >>> v = t.eval(np.zeros((10, t.ndim)))   # doctest: +SKIP
    """

    def __init__(self, path):
        self._t = _warpdrive.SplineTable(os.fspath(path))

    @property
    def ndim(self):
        return self._t.ndim

    @property
    def extents(self):
        """[(lo, hi)] per dimension."""
        return self._t.extents

    @property
    def order(self):
        return self._t.order

    @property
    def knots(self):
        return [np.asarray(k) for k in self._t.knots]

    @property
    def path(self):
        return self._t.path

    def __repr__(self):
        return f"warpdrive.spline.Table({str(self.path)!r}, ndim={self.ndim}, order={self.order})"

    def eval(self, points, gradient=False, device="auto", threads=None, precise=False, standard_layout=False):
        """Evaluate at ``points`` (N, ndim), as ``warpdrive spline eval``.

        Returns the (N,) values, or with ``gradient=True`` a pair (values (N,), gradients
        (N, ndim)), views of one array. C-contiguous float64 input is read without a copy.
        On a GPU the evaluation is in float32 (as the CLI's); ``device`` defaults to ``"cpu"``
        here because the CPU result is exact in float64.
        """
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim == 1 and self.ndim == 1:
            pts = pts.reshape(-1, 1)
        if pts.ndim != 2:
            raise ValueError(f"points must be an (N, {self.ndim}) array, got shape {pts.shape}")
        out = self._t.eval(pts, gradient, device, threads, precise, standard_layout)
        if gradient:
            return out[:, 0], out[:, 1:]
        return out


class Unfolding:
    """The result of :func:`unfold`: per-source energies with their 1σ and the fit's numbers.

    Attributes: ``energy``, ``sigma``, ``distance``, ``x``, ``y``, ``z``, ``time`` (arrays over
    sources), ``covariance`` (n, n), ``pe_per_gev`` (the photo-electrons each source puts in
    per GeV), ``blind`` (sources the detector barely sees), ``total_energy``,
    ``total_energy_sigma``, ``converged``, ``iterations``, ``log_likelihood``, ``chi2``, ``rows``
    and ``summary`` (the keys of the CLI's summary.json that describe the fit).
    """

    def __init__(self, result, meta):
        from . import _arrow

        self._table = _arrow.table(result.pop("columns"), meta)
        for name in self._table.column_names:
            if name != "source":
                setattr(self, name, self._table[name].to_numpy())
        self.covariance = result.pop("covariance")
        self.pe_per_gev = result.pop("pe_per_gev")
        self.blind = result.pop("blind")
        self.summary = result
        self.total_energy = result["total_energy_gev"]
        self.total_energy_sigma = result["total_energy_sigma_gev"]
        for k in ("converged", "iterations", "log_likelihood", "chi2", "rows"):
            setattr(self, k, result[k])

    def table(self):
        """The energies as a ``pyarrow.Table`` with the columns of the CLI's energies.parquet."""
        return self._table

    def __repr__(self):
        return (
            f"<warpdrive.spline.Unfolding {len(self.energy)} sources, total {self.total_energy:.1f} ± "
            f"{self.total_energy_sigma:.1f} GeV, {'converged' if self.converged else 'NOT converged'}>"
        )


def unfold(
    event,
    cascade=None,
    track=None,
    spacing=15.0,
    amplitude=None,
    timing=None,
    amplitude_only=False,
    geometry=None,
    noise_rate=500.0,
    solver="newton",
    regularization=0.0,
    photons_per_bin=5.0,
    tolerance=1e-9,
    max_iterations=20000,
    device="cpu",
    threads=None,
    precise=False,
):
    """Millipede energy unfolding, as ``warpdrive spline unfold`` (same code, same defaults).

    ``event``: a Parquet path (columns string, om, time, charge; window in the metadata), or a
    mapping/``pyarrow.Table`` with those columns (and optionally ``window=(start, end)`` in a
    mapping). Hypothesis: ``cascade=(x, y, z, zenith, azimuth, t)`` or
    ``track=(x, y, z, zenith, azimuth, t, length)`` with ``spacing`` [m, degrees, ns].
    ``amplitude``/``timing``/``geometry``: files (None: the defaults in ``WARPDRIVE_DATA``).
    Returns an :class:`Unfolding`.
    """
    path, pulses, window = None, None, None
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

    def floats(v):
        return [] if v is None else [float(x) for x in v]

    fspath = lambda p: None if p is None else os.fspath(p)  # noqa: E731
    result = _warpdrive.spline_unfold(
        path,
        pulses,
        window,
        floats(cascade),
        floats(track),
        float(spacing),
        fspath(amplitude),
        fspath(timing),
        bool(amplitude_only),
        fspath(geometry),
        float(noise_rate),
        solver,
        float(regularization),
        float(photons_per_bin),
        float(tolerance),
        int(max_iterations),
        device,
        threads,
        precise,
    )
    meta = {
        "warpdrive.version": _warpdrive.__version__,
        "warpdrive.command": f"python: warpdrive.spline.unfold(solver={solver!r}, device={device!r})",
    }
    return Unfolding(result, meta)
