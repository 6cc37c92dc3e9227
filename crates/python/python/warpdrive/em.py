"""EM transport: the Klein–Nishina mini-app (:func:`run`, ``warpdrive em``) and EM showers in a
layered calorimeter (:func:`testem3`, :func:`calorimeter`; ``warpdrive em testem3|calorimeter``), and
Geant4's TestEm3 numbers to compare with (:func:`testem3_reference`)."""

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


class ShowerResult:
    """The result of :func:`testem3` / :func:`calorimeter` (the CLI's ``em testem3`` / ``em calorimeter``):

    * ``materials``: dict name → dict(``edep_mean_mev``, ``edep_mean_error_mev``, ``edep_rms_mev``)
      per event;
    * ``profile`` (pyarrow.Table, the CLI's ``profile.parquet``: one row per slab) and ``events``
      (pyarrow.Table, ``events.parquet``: one row per event);
    * ``created`` (dict γ/e⁻/e⁺ per event), ``created_by`` (dict process → number per event),
      ``steps`` (charged, neutral per event), ``track_length`` (dict material → cm per event),
      ``escaped`` [MeV per event], ``worst_balance``, ``checksum`` (as the CLI prints), ``device``.
    """

    def __init__(self, r):
        meta = {"warpdrive.device": r.device, "em.calorimeter": r.calorimeter}
        self.profile = _arrow.table(r.profile(), meta)
        self.events = _arrow.table(r.events(), meta)
        self.materials = {n: {"edep_mean_mev": m, "edep_mean_error_mev": e, "edep_rms_mev": s}
                          for n, m, e, s in r.materials()}
        self.created = dict(zip(("gamma", "e-", "e+"), r.created()))
        self.created_by = dict(r.created_by())
        self.steps = dict(zip(("charged", "neutral"), r.steps()))
        self.track_length = dict(r.track_length())
        for k in ("escaped", "worst_balance", "checksum", "device", "calorimeter"):
            setattr(self, k, getattr(r, k))
        self.n_events = r.events_count

    def __repr__(self):
        m = ", ".join(f"{n} {v['edep_mean_mev']:.2f} MeV" for n, v in self.materials.items())
        return f"warpdrive.em.ShowerResult({self.n_events} events in {self.calorimeter}: {m}; {self.device})"


def _shower(calorimeter, primary, energy, events, seed, cut_mm, device, threads, progress, precise):
    cb, close = _progress.callback(progress, events, "events")
    try:
        r = _warpdrive.em_shower(calorimeter, str(primary), float(energy), int(events), int(seed), float(cut_mm),
                                 device, threads, cb, bool(precise))
    finally:
        close()
    return ShowerResult(r)


def testem3(primary="e-", energy=1000.0, events=1000, seed=12345, cut_mm=1.0, device="cpu", threads=None,
            progress=None, precise=False):
    """``warpdrive em testem3``: ``events`` showers of a ``primary`` ("e-", "e+", "gamma") of kinetic
    ``energy`` MeV in Geant4's TestEm3 (50 × [2.3 mm Pb + 5.7 mm liquid Ar]), one production cut of
    ``cut_mm`` mm. ``device``: "cpu", "auto", "cuda", "cuda:N" or "cuda:all" (the GPU twin). On a GPU,
    ``precise=True`` makes every event bit-identical to the CPU's (the CLI's ``--precise``); the default fast
    mode uses CUDA's libm (statistically equivalent). Defaults are the CLI's, except ``device`` ("cpu")."""
    return _shower(None, primary, energy, events, seed, cut_mm, device, threads, progress, precise)


def calorimeter(path, primary="e-", energy=1000.0, events=1000, seed=12345, cut_mm=1.0, device="cpu", threads=None,
                progress=None, precise=False):
    """``warpdrive em calorimeter PATH``: as :func:`testem3` for the layered calorimeter of a TOML file."""
    return _shower(str(path), primary, energy, events, seed, cut_mm, device, threads, progress, precise)


def testem3_reference():
    """Geant4 10.3's TestEm3 (1 GeV e⁻, 1 mm cuts, ``emstandard_opt0``, 100 events per run), as
    ``{"analogue": run, "secondary_biased": run}``; each run has ``label``, ``edep`` (per material
    ``{"mean_mev", "rms_mev"}`` per event), ``created`` (``gamma``, ``e-``, ``e+`` per event) and
    ``steps`` (``charged``, ``neutral``). TestEm3.out holds both runs; compare RMS values and created
    counts with the analogue one (the biased run discards soft secondaries; docs/validation/em.md)."""
    out = {}
    for key, (label, edep, created, steps) in zip(("analogue", "secondary_biased"), _warpdrive.em_testem3_reference()):
        out[key] = {
            "label": label,
            "edep": {n: {"mean_mev": m, "rms_mev": r} for n, m, r in edep},
            "created": dict(zip(("gamma", "e-", "e+"), created)),
            "steps": dict(zip(("charged", "neutral"), steps)),
        }
    return out
