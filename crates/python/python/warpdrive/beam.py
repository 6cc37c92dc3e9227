"""ELEGANT-style beam tracking of ``.lte`` lattices (``warpdrive beam track``)."""

import os

import numpy as np

from . import _arrow, _progress, _warpdrive

COLUMNS = ("x", "xp", "y", "yp", "t", "p")


class Tracked:
    """The result of :meth:`Lattice.track`.

    ``particles``: (N, 6) final coordinates in the input's convention (ELEGANT's x, xp, y, yp,
    t [s], p = βγ by default); ``lost_at`` (element index + 1 where a particle was lost, 0 if it
    survived), ``lost_pass``; ``table``: the CLI's ``final.parquet`` as a pyarrow.Table (x, xp, y,
    yp, s, delta, t, p, lost_at, lost_pass); ``watch``: one dict per watch-point record
    (element, name, pass, s, particles (N, 6), table).
    """

    def __init__(self, cols, watches, device, coords):
        self.device = device
        self.table = _arrow.table(cols, {"warpdrive.device": device})
        self.particles = self._coords(self.table, coords)
        self.lost_at = self.table["lost_at"].to_numpy()
        self.lost_pass = self.table["lost_pass"].to_numpy()
        self.alive = self.lost_at == 0
        self.watch = []
        for element, name, pas, s, wcols in watches:
            t = _arrow.table(wcols, {"element": name, "pass": pas, "s": s})
            self.watch.append(dict(element=element, name=name, pass_=pas, s=s, particles=self._coords(t, coords), table=t))

    @staticmethod
    def _coords(t, coords):
        names = COLUMNS if coords == "elegant" else ("x", "xp", "y", "yp", "s", "delta")
        return np.column_stack([t[n].to_numpy() for n in names])

    def __repr__(self):
        return f"warpdrive.beam.Tracked({len(self.particles)} particles, {int(self.alive.sum())} alive, {len(self.watch)} watch records, {self.device})"


class Lattice:
    """An ELEGANT ``.lte`` lattice, parsed, checked and compiled once."""

    def __init__(self, native):
        self._l = native

    @classmethod
    def from_lte(cls, path, line=None):
        """Read ``path`` and use ``line`` (default: the file's USE, else its last line)."""
        return cls(_warpdrive.BeamLattice.from_lte(os.fspath(path), line))

    @property
    def line(self):
        return self._l.line

    @property
    def length(self):
        """Length of the line [m]."""
        return self._l.length

    def __repr__(self):
        return f"warpdrive.beam.Lattice(line={self.line!r}, {self._l.n_elements} elements, {self.length:.4f} m)"

    def track(self, particles, passes=1, coords="elegant", particle="electron", p_central=1956.951, momentum=None,
              aperture=None, charge=1e-9, histogram="block-atomic", device="auto", threads=None, precise=False,
              launch_per_element=False, min_blocks=None, progress=None):
        """Track ``particles`` (N, 6) float64 through ``passes`` passes, as ``warpdrive beam track``.

        ``coords="elegant"``: columns x, xp, y, yp, t [s], p (βγ) — ELEGANT's; ``"warpdrive"``:
        x, xp, y, yp, s [m], δ. Options as the CLI's: ``particle`` (electron, proton),
        ``p_central`` (βγ) or ``momentum`` [MeV/c], ``aperture`` [m], ``charge`` [C],
        ``histogram``, ``launch_per_element``, ``min_blocks``.
        """
        if coords not in ("elegant", "warpdrive"):
            raise ValueError(f"coords={coords!r}: expected 'elegant' or 'warpdrive'")
        z = np.asarray(particles, dtype=np.float64)
        if z.ndim != 2 or z.shape[1] != 6:
            raise ValueError(f"particles must be an (N, 6) array, got shape {z.shape}")
        if min_blocks is None:
            min_blocks = _warpdrive.BEAM_DEFAULT_MIN_BLOCKS
        cb, close = _progress.callback(progress, passes, "passes")
        try:
            cols, watches, dev = self._l.track(z, coords == "elegant", int(passes), particle, float(p_central),
                                               momentum, aperture, float(charge), histogram, device, threads, precise,
                                               launch_per_element, int(min_blocks), cb)
        finally:
            close()
        return Tracked(cols, watches, dev, coords)
