"""EM transport: the Klein–Nishina mini-app (``warpdrive em``). Shower and calorimeter problems
will get their own functions here as the library grows them."""

from . import _arrow, _progress, _warpdrive


class EmResult:
    """The result of :func:`run`: ``profile`` (pyarrow.Table, the CLI's ``edep.parquet``:
    bin, z_low_cm, z_high_cm, edep_mev, edep_mev_per_cm), ``edep_mev_per_cm`` (NumPy), integrals
    (``tracks``, ``steps``, ``secondaries``, ``retries``, ``mean_depth`` [cm]), ``checksum`` (the
    one the CLI prints) and ``energy_beyond(z_cm)`` [MeV per primary]."""

    def __init__(self, r):
        self._r = r
        self.profile = _arrow.table(r.profile(), {"warpdrive.device": r.device, "em.material": r.material})
        self.edep_mev_per_cm = self.profile["edep_mev_per_cm"].to_numpy()
        for k in ("tracks", "steps", "secondaries", "retries", "mean_depth", "checksum", "device", "material"):
            setattr(self, k, getattr(r, k))

    def energy_beyond(self, z_cm):
        return self._r.energy_beyond(float(z_cm))

    def __repr__(self):
        return f"warpdrive.em.EmResult({self.tracks} tracks in {self.material}, mean depth {self.mean_depth:.2f} cm, {self.device})"


def run(energy=100.0, tracks=1 << 20, seed=12345, material="aluminium", tally_front=0.0, tally_width=1.0,
        tally_bins=2048, device="auto", threads=None, progress=None):
    """``warpdrive em``: ``tracks`` photons of ``energy`` MeV along +z in ``material`` (a built-in
    name or a TOML file), Compton scattering, deposits tallied in ``tally_bins`` bins of
    ``tally_width`` cm from ``tally_front`` cm. Defaults are the CLI's."""
    cb, close = _progress.callback(progress, tracks, "tracks")
    try:
        r = _warpdrive.em_run(float(energy), int(tracks), int(seed), str(material), float(tally_front),
                              float(tally_width), int(tally_bins), device, threads, cb)
    finally:
        close()
    return EmResult(r)
