"""Two-point autocorrelation of event directions with RA-scrambled trials (``warpdrive sky autocorr``)."""

import os

import numpy as np

from . import _arrow, _progress, _warpdrive

DEFAULT_CUTS = ("top:0.1", "top:0.01", "top:0.001")


class Autocorr:
    """The result of :func:`autocorr`.

    ``counts`` and ``background`` are ``pyarrow.Table`` with the columns of the CLI's
    ``counts.parquet`` and ``background.parquet``; ``observed``, ``ts``, ``bg_mean``, ``bg_std``,
    ``p_trials``, ``p_gauss`` and ``p_gamma`` are (cuts, bins) arrays; ``edges_deg`` the bin
    edges, ``cut_labels`` the cuts.
    """

    def __init__(self, run):
        self._run = run
        counts, background = run.tables()
        meta = {"warpdrive.device": run.device}
        self.counts = _arrow.table(counts, meta)
        self.background = _arrow.table(background, meta)
        self.edges_deg = np.asarray(run.edges_deg)
        self.cut_labels = list(run.cut_labels)
        self.cut_events = list(run.cut_events)
        self.trials = run.trials
        self.device = run.device
        shape = (len(self.cut_labels), len(self.edges_deg))
        self.observed = run.observed.reshape(shape)
        for name in ("ts", "bg_mean", "bg_std", "p_trials", "p_gauss", "p_gamma"):
            setattr(self, name, self.counts[name].to_numpy().reshape(shape))

    def background_distribution(self, cut, bin):
        """(count values, number of trials with that count) of one (cut, bin)."""
        b = self.background
        c, k = b["cut"].to_numpy(), b["bin"].to_numpy()
        sel = (c == cut) & (k == bin)
        return b["count"].to_numpy()[sel], b["trials"].to_numpy()[sel]

    def to_parquet(self, dir):
        """Write ``counts.parquet`` and ``background.parquet`` into ``dir`` (created), as the CLI."""
        self._run.to_parquet(os.fspath(dir))

    def __repr__(self):
        return f"warpdrive.sky.Autocorr({len(self.cut_labels)} cuts x {len(self.edges_deg)} bins, {self.trials} trials on {self.device})"


def autocorr(ra, dec, energy=None, bins=20, bin_width=0.25, edges=None, trials=1000, seed=1, hemisphere="all",
             dec_min=None, dec_max=None, cuts=None, ra_grid="auto", device="auto", threads=None, progress=None):
    """``warpdrive sky autocorr`` on arrays of right ascension and declination [deg] and an
    energy proxy (only its order matters; without it, only the cut "all" is possible).

    Options as the CLI's: ``bins``/``bin_width`` or ``edges`` [deg], ``trials``, ``seed``,
    ``hemisphere`` (all, north, south), ``dec_min``/``dec_max``, ``cuts`` (default
    ``top:0.1,top:0.01,top:0.001``), ``ra_grid`` (auto, off or a step in degrees).
    """
    ra = np.ascontiguousarray(ra, dtype=np.float64).ravel()
    dec = np.ascontiguousarray(dec, dtype=np.float64).ravel()
    if energy is None:
        if cuts:
            raise ValueError("energy cuts need energy=")
        energy, cuts = np.zeros_like(ra), []
    else:
        energy = np.ascontiguousarray(energy, dtype=np.float64).ravel()
        cuts = list(DEFAULT_CUTS if cuts is None else cuts)
    cb, close = _progress.callback(progress, trials, "trials")
    try:
        run = _warpdrive.sky_autocorr(ra, dec, energy, hemisphere, dec_min, dec_max, [str(c) for c in cuts], int(bins),
                                      float(bin_width), [float(e) for e in (edges or [])], int(trials), int(seed),
                                      str(ra_grid), device, threads, cb)
    finally:
        close()
    return Autocorr(run)
