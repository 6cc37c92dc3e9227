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
