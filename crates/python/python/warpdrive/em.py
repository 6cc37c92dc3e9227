"""EM transport: the Klein–Nishina mini-app (:func:`run`, ``warpdrive em``), EM showers in a
layered calorimeter (:func:`testem3`, :func:`calorimeter`; ``warpdrive em testem3|calorimeter``) and
in a GDML detector with a magnetic field and sensitive volumes (:func:`run` with ``gdml=``, or
:func:`detector`; ``warpdrive em run FILE.gdml``), and Geant4's TestEm3 numbers to compare with
(:func:`testem3_reference`).

Materials are named as in Geant4 (:data:`MATERIALS`: ``"G4_Pb"``, ``"G4_lAr"``, ``"G4_WATER"``, …)
or given as TOML files (docs/em.md). Every long call stops on Ctrl-C within about a second
(``KeyboardInterrupt``) or when its ``progress`` callback returns ``False`` (``warpdrive.Cancelled``);
nothing is written then. The shower tables are built once per process and set-up (calorimeter and
cut): a second call with the same set-up starts at once (``ShowerResult.tables_cached``).
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Optional, Sequence, Union, overload

import pyarrow as pa

from . import _arrow, _pickling, _progress, _warpdrive
from ._types import Float64Array, PathLike, Progress

__all__ = ["MATERIALS", "EmResult", "ShowerResult", "DetectorResult", "run", "detector", "testem3", "calorimeter", "merge",
           "testem3_reference"]

#: The built-in materials (Geant4's NIST names), usable as ``material=`` of :func:`run` and in
#: calorimeter files; ``"aluminium"`` is ``"G4_Al"``.
MATERIALS: tuple[str, ...] = tuple(_warpdrive.em_materials())


def _warn(notes: list[str]) -> None:
    """Notes of a ``save`` (a plot skipped) as ``UserWarning``s at the caller's line."""
    for n in notes:
        warnings.warn(n, stacklevel=3)


class EmResult:
    """The result of :func:`run`: ``profile`` (pyarrow.Table, the CLI's ``edep.parquet``:
    bin, z_low_cm, z_high_cm, edep_mev, edep_mev_per_cm), ``edep_mev_per_cm`` (NumPy), integrals
    (``tracks``, ``steps``, ``secondaries``, ``retries``, ``mean_depth`` [cm]), ``checksum`` (the
    one the CLI prints), ``material``, ``device``, ``seconds`` (transport time) and
    ``energy_beyond(z_cm)`` [MeV per primary].

    Picklable: the pickle holds these values, the fixed-point tally and the bytes of the output
    directory (plot included), so an unpickled result gives the same numbers and writes the same
    files."""

    _r: Union[_warpdrive.EmRun, _warpdrive.SavedOutput]
    tracks: int
    steps: int
    secondaries: int
    retries: int
    mean_depth: float
    checksum: str
    device: str
    material: str
    seconds: float

    def __init__(self, r: _warpdrive.EmRun) -> None:
        self._r = r
        self._tally = r.tally()
        self.profile: pa.Table = _arrow.table(r.profile(), {"warpdrive.device": r.device})
        self.edep_mev_per_cm: Float64Array = self.profile["edep_mev_per_cm"].to_numpy()
        for k in ("tracks", "steps", "secondaries", "retries", "mean_depth", "checksum", "device", "material", "seconds"):
            setattr(self, k, getattr(r, k))

    def energy_beyond(self, z_cm: float) -> float:
        """Energy deposited in the tally bins at or beyond depth ``z_cm`` [cm], MeV per primary."""
        return self._tally.energy_beyond(float(z_cm))

    def to_parquet(self, dir: PathLike, force: bool = False, plot: bool = False) -> None:
        """Write the CLI's output directory: ``edep.parquet``, ``summary.json``, ``run.json`` (and
        ``edep.png`` with ``plot=True``; a plot whose axes would not be finite is skipped with a
        warning). The directory appears whole or not at all; an existing one raises
        ``FileExistsError`` unless ``force=True``."""
        _warn(self._r.save(os.fspath(dir), force, plot))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the output directory's bytes in place of the native result."""
        return _pickling.state_with_saved_output(self, "_r")

    def __repr__(self) -> str:
        return (f"warpdrive.em.EmResult({self.tracks} tracks in {self.material}, {len(self.edep_mev_per_cm)} depth bins, "
                f"mean depth {self.mean_depth:.2f} cm, checksum {self.checksum}, {self.device})")


#: The defaults of :func:`run`'s mini-app keywords and of its detector keywords (they do not mix).
_KN_DEFAULTS = (100.0, 1 << 20, "G4_Al", 0.0, 1.0, 2048, None, None, None)
_DETECTOR_DEFAULTS = ("e-", 1000.0, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), 1000, 1.0, (0.0, 0.0, 0.0), None, (), None, False,
                      None, None, None)


@overload
def run(energy: float = 100.0, tracks: int = 1 << 20, seed: int = 12345, material: PathLike = "G4_Al",
        tally_front: float = 0.0, tally_width: float = 1.0, tally_bins: int = 2048, device: str = "auto",
        threads: Optional[int] = None, progress: Progress = None, *, slots: Optional[int] = None,
        stack_capacity: Optional[int] = None, compare: Optional[PathLike] = None, gdml: None = None) -> EmResult: ...


@overload
def run(*, gdml: PathLike, primary: str = "e-", energy_mev: float = 1000.0,
        position: Sequence[float] = (0.0, 0.0, 0.0), direction: Sequence[float] = (0.0, 0.0, 1.0),
        events: int = 1000, seed: int = 12345, cut_mm: float = 1.0, field: Sequence[float] = (0.0, 0.0, 0.0),
        field_map: Optional[PathLike] = None, sensitive: Sequence[str] = (), out_dir: Optional[PathLike] = None,
        force: bool = False, device: str = "auto", threads: Optional[int] = None,
        progress: Progress = None, delta_chord: Optional[float] = None, delta_intersection: Optional[float] = None,
        field_epsilon: Optional[float] = None) -> DetectorResult: ...


def run(energy: float = 100.0, tracks: int = 1 << 20, seed: int = 12345, material: PathLike = "G4_Al",
        tally_front: float = 0.0, tally_width: float = 1.0, tally_bins: int = 2048, device: str = "auto",
        threads: Optional[int] = None, progress: Progress = None, *, slots: Optional[int] = None,
        stack_capacity: Optional[int] = None, compare: Optional[PathLike] = None, gdml: Optional[PathLike] = None,
        primary: str = "e-", energy_mev: float = 1000.0, position: Sequence[float] = (0.0, 0.0, 0.0),
        direction: Sequence[float] = (0.0, 0.0, 1.0), events: int = 1000, cut_mm: float = 1.0,
        field: Sequence[float] = (0.0, 0.0, 0.0), field_map: Optional[PathLike] = None, sensitive: Sequence[str] = (),
        out_dir: Optional[PathLike] = None, force: bool = False, delta_chord: Optional[float] = None,
        delta_intersection: Optional[float] = None, field_epsilon: Optional[float] = None
        ) -> Union[EmResult, DetectorResult]:
    """``warpdrive em``: ``tracks`` photons of ``energy`` MeV along +z in ``material`` (a name of
    :data:`MATERIALS` or a TOML file), Compton scattering, deposits tallied in ``tally_bins`` bins of
    ``tally_width`` cm from ``tally_front`` cm. ``slots``, ``stack_capacity`` and ``compare`` (a
    reference profile for the plot of :meth:`EmResult.to_parquet`) as the CLI's options; defaults are
    the CLI's.

    With ``gdml=``: ``warpdrive em run FILE.gdml``, showers in a GDML detector (:func:`detector`, the
    same call: ``primary``, ``energy_mev``, ``position``, ``direction``, ``events``, ``seed``,
    ``cut_mm``, ``field``, ``field_map``, ``sensitive``, ``out_dir``, ``force``, ``device``,
    ``threads``, ``progress``, ``delta_chord``, ``delta_intersection``, ``field_epsilon``) and a
    :class:`DetectorResult`. The mini-app's keywords and the
    detector's do not mix (``TypeError``)."""
    mini_app = (energy, tracks, material, tally_front, tally_width, tally_bins, slots, stack_capacity, compare)
    shower = (primary, energy_mev, tuple(position), tuple(direction), events, cut_mm, tuple(field), field_map,
              tuple(sensitive), out_dir, force, delta_chord, delta_intersection, field_epsilon)
    if gdml is not None:
        if mini_app != _KN_DEFAULTS:
            raise TypeError("run(gdml=...) takes the keywords of em.detector (energy_mev=, events=, ...), "
                            "not those of the Klein–Nishina mini-app (energy, tracks, material, tally_*, ...)")
        return detector(gdml, primary=primary, energy_mev=energy_mev, position=position, direction=direction,
                        events=events, seed=seed, cut_mm=cut_mm, field=field, field_map=field_map, sensitive=sensitive,
                        out_dir=out_dir, force=force, device=device, threads=threads, progress=progress,
                        delta_chord=delta_chord, delta_intersection=delta_intersection, field_epsilon=field_epsilon)
    if shower != _DETECTOR_DEFAULTS:
        raise TypeError("run(): primary, energy_mev, position, direction, events, cut_mm, field, field_map, "
                        "sensitive, out_dir, force, delta_chord, delta_intersection and field_epsilon need gdml= "
                        "(showers in a GDML detector)")
    return _kn_run(energy, tracks, seed, material, tally_front, tally_width, tally_bins, device, threads, progress,
                   slots, stack_capacity, compare)


def _kn_run(energy: float, tracks: int, seed: int, material: PathLike, tally_front: float, tally_width: float,
            tally_bins: int, device: str, threads: Optional[int], progress: Progress, slots: Optional[int],
            stack_capacity: Optional[int], compare: Optional[PathLike]) -> EmResult:
    """The Klein–Nishina mini-app of :func:`run`."""
    cb, close = _progress.callback(progress, tracks, "tracks")
    try:
        r = _warpdrive.em_run(float(energy), int(tracks), int(seed), os.fspath(material), float(tally_front),
                              float(tally_width), int(tally_bins), None if slots is None else int(slots),
                              None if stack_capacity is None else int(stack_capacity),
                              None if compare is None else os.fspath(compare), device,
                              None if threads is None else int(threads), cb)
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
      ``escaped`` [MeV per event], ``worst_balance``, ``checksum`` (as the CLI prints), ``device``;
    * ``calorimeter`` (its name), ``n_events``, ``tables_cached`` (the tables came from an earlier
      call), ``tables_seconds``, ``transport_seconds``.

    Picklable: the pickle holds these values and the bytes of the output directory (plot
    included), so an unpickled result writes the same files.
    """

    _r: Union[_warpdrive.ShowerResult, _warpdrive.SavedOutput]
    escaped: float
    worst_balance: float
    checksum: str
    device: str
    calorimeter: str
    tables_cached: bool
    tables_seconds: float
    transport_seconds: float

    def __init__(self, r: _warpdrive.ShowerResult) -> None:
        self._r = r
        meta = {"warpdrive.device": r.device}
        self.profile: pa.Table = _arrow.table(r.profile(), meta)
        self.events: pa.Table = _arrow.table(r.events(), meta)
        self.materials: dict[str, dict[str, float]] = {
            n: {"edep_mean_mev": m, "edep_mean_error_mev": e, "edep_rms_mev": s} for n, m, e, s in r.materials()}
        self.created: dict[str, float] = dict(zip(("gamma", "e-", "e+"), r.created()))
        self.created_by: dict[str, float] = dict(r.created_by())
        self.steps: dict[str, float] = dict(zip(("charged", "neutral"), r.steps()))
        self.track_length: dict[str, float] = dict(r.track_length())
        for k in ("escaped", "worst_balance", "checksum", "device", "calorimeter", "tables_cached", "tables_seconds",
                  "transport_seconds"):
            setattr(self, k, getattr(r, k))
        self.n_events: int = r.events_count

    def to_parquet(self, dir: PathLike, force: bool = False, plot: bool = False) -> None:
        """Write the CLI's output directory: ``profile.parquet``, ``events.parquet``,
        ``summary.json``, ``run.json`` (and ``profile.png`` with ``plot=True``). The directory appears
        whole or not at all; an existing one raises ``FileExistsError`` unless ``force=True``."""
        _warn(self._r.save(os.fspath(dir), force, plot))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the output directory's bytes in place of the native result."""
        return _pickling.state_with_saved_output(self, "_r")

    def __repr__(self) -> str:
        m = ", ".join(f"{n} {v['edep_mean_mev']:.2f} MeV" for n, v in self.materials.items())
        return f"warpdrive.em.ShowerResult({self.n_events} events in {self.calorimeter}: {m}; {self.device})"


def _shower(calorimeter: Optional[PathLike], primary: str, energy: float, events: int, seed: int, cut_mm: float,
            device: str, threads: Optional[int], progress: Progress, precise: bool, jobs: int,
            job_index: int) -> ShowerResult:
    """The shower run of :func:`testem3` (``calorimeter`` None) and :func:`calorimeter`."""
    cb, close = _progress.callback(progress, events, "events")
    try:
        r = _warpdrive.em_shower(None if calorimeter is None else os.fspath(calorimeter), str(primary), float(energy),
                                 int(events), int(seed), float(cut_mm), device,
                                 None if threads is None else int(threads), cb, bool(precise), jobs, job_index)
    finally:
        close()
    return ShowerResult(r)


class DetectorResult:
    """The result of showers in a GDML detector (:func:`detector`, ``run(gdml=…)``; the CLI's
    ``em run FILE.gdml``):

    * ``volumes`` (pyarrow.Table, ``volumes.parquet``: one row per volume instance, Σ deposit over
      the events ``edep_mev``, ``edep2``, ``edep_error_mev``; paths in its metadata) and ``hits``
      (pyarrow.Table, ``hits.parquet``: one row per deposit in a sensitive volume — ``event``,
      ``volume``, ``copy``, ``edep_mev``, ``time_ns``, ``x_mm``, ``y_mm``, ``z_mm``);
    * ``summary`` (dict, ``summary.json``), ``materials`` (dict name → ``vacuum``, ``edep_sum_mev``,
      ``edep_mean_mev``, ``edep_mean_error_mev``), ``hits_per_volume`` (dict sensitive logical
      volume → ``hits``, ``edep_sum_mev``);
    * ``escaped`` [MeV per event], ``worst_balance``, ``n_events``, ``device``, ``transport_seconds``.

    Picklable as :class:`ShowerResult`.
    """

    _r: Union[_warpdrive.DetectorResult, _warpdrive.SavedOutput]
    escaped: float
    worst_balance: float
    device: str
    transport_seconds: float

    def __init__(self, r: _warpdrive.DetectorResult) -> None:
        self._r = r
        meta = {"warpdrive.device": r.device}
        self.volumes: pa.Table = _arrow.table(r.volumes(), meta)
        self.hits: pa.Table = _arrow.table(r.hits(), meta)
        self.summary: dict[str, Any] = json.loads(r.summary_json())
        self.materials: dict[str, dict[str, Any]] = {
            n: {"vacuum": v, "edep_sum_mev": s, "edep_mean_mev": m, "edep_mean_error_mev": e}
            for n, v, s, m, e in r.materials()}
        self.hits_per_volume: dict[str, dict[str, float]] = {
            n: {"hits": k, "edep_sum_mev": e} for n, k, e in r.hits_per_volume()}
        for k in ("escaped", "worst_balance", "device", "transport_seconds"):
            setattr(self, k, getattr(r, k))
        self.n_events: int = r.events_count

    def to_parquet(self, dir: PathLike, force: bool = False, plot: bool = False) -> None:
        """Write the CLI's output directory: ``volumes.parquet``, ``hits.parquet`` (with sensitive
        volumes), ``summary.json``, ``run.json`` (and ``volumes.png``, the mean deposit per event
        per volume, with ``plot=True``: the CLI's ``--plot``). The directory appears whole or not
        at all; an existing one raises ``FileExistsError`` unless ``force=True``."""
        _warn(self._r.save(os.fspath(dir), force, plot))

    def __getstate__(self) -> dict[str, Any]:
        """Pickle with the output directory's bytes in place of the native result."""
        return _pickling.state_with_saved_output(self, "_r")

    def __repr__(self) -> str:
        m = ", ".join(f"{n} {v['edep_mean_mev']:.2f} MeV" for n, v in self.materials.items() if not v["vacuum"])
        return f"warpdrive.em.DetectorResult({self.n_events} events: {m}; {len(self.hits)} hits; {self.device})"


def _opt_float(x: Optional[float]) -> Optional[float]:
    return None if x is None else float(x)


def detector(gdml: PathLike, primary: str = "e-", energy_mev: float = 1000.0,
             position: Sequence[float] = (0.0, 0.0, 0.0), direction: Sequence[float] = (0.0, 0.0, 1.0),
             events: int = 1000, seed: int = 12345, cut_mm: float = 1.0, field: Sequence[float] = (0.0, 0.0, 0.0),
             field_map: Optional[PathLike] = None, sensitive: Sequence[str] = (), out_dir: Optional[PathLike] = None,
             force: bool = False, device: str = "auto", threads: Optional[int] = None,
             progress: Progress = None, delta_chord: Optional[float] = None,
             delta_intersection: Optional[float] = None, field_epsilon: Optional[float] = None) -> DetectorResult:
    """``warpdrive em run GDML``: ``events`` showers of a ``primary`` ("e-", "e+", "gamma") of kinetic
    ``energy_mev`` MeV from ``position`` [mm, the world's frame] along ``direction`` in the detector of a
    GDML file, production cut ``cut_mm`` mm, a uniform magnetic ``field`` (Bx, By, Bz) [T] (charged
    particles on helices, docs/em-geometry.md) or a ``field_map`` file (CSV or Parquet: ``r_mm``, ``z_mm``,
    ``br_T``, ``bz_T``; it must cover the world), step-level hits in the ``sensitive`` logical volumes
    (and those with a GDML ``SensDet`` auxiliary). ``device`` "cuda" runs the showers on a GPU (the GDML
    build of the shower kernel; a uniform field and a field map too) when nothing asks for the CPU —
    sensitive volumes have no GPU twin yet, and "cuda" refuses such a run naming why; "auto" takes a GPU when there is one
    and the run can use it, else the CPU with a note. The curved path's accuracy (the CLI's ``--delta-chord``, ``--delta-intersection``,
    ``--field-epsilon``): ``delta_chord`` [mm], largest sagitta of a chord checked for boundaries;
    ``delta_intersection`` [mm], how far past a boundary a crossing may be found; ``field_epsilon``,
    the Dormand–Prince error per unit length in field maps (``None``: the defaults, 0.25 mm, 1e-6 mm,
    1e-9; bad values raise ``ValueError``). With
    ``out_dir`` the CLI's output directory is written too (``force`` to replace one). Defaults are
    the CLI's."""
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    cb, close = _progress.callback(progress, events, "events")
    try:
        r = _warpdrive.em_detector(os.fspath(gdml), str(primary), float(energy_mev),
                                   [float(x) for x in position], [float(x) for x in direction],
                                   int(events), int(seed), float(cut_mm), [float(x) for x in field],
                                   None if field_map is None else os.fspath(field_map), [str(s) for s in sensitive], device, None if threads is None else int(threads), cb,
                                   _opt_float(delta_chord), _opt_float(delta_intersection), _opt_float(field_epsilon))
    finally:
        close()
    result = DetectorResult(r)
    if out_dir is not None:
        result.to_parquet(out_dir, force)
    return result


def testem3(primary: str = "e-", energy: float = 1000.0, events: int = 1000, seed: int = 12345, cut_mm: float = 1.0,
            device: str = "auto", threads: Optional[int] = None, progress: Progress = None,
            precise: bool = False, jobs: int = 1, job_index: int = 0) -> ShowerResult:
    """``warpdrive em testem3``: ``events`` showers of a ``primary`` ("e-", "e+", "gamma") of kinetic
    ``energy`` MeV in Geant4's TestEm3 (50 × [2.3 mm Pb + 5.7 mm liquid Ar]), one production cut of
    ``cut_mm`` mm. ``device``: "auto" (the GPUs when CUDA works, else the CPU), "cpu", "cuda", "cuda:N"
    or "cuda:all" (the GPU twin). On a GPU, ``precise=True`` makes every event bit-identical to the
    CPU's (the CLI's ``--precise``); the default fast mode uses CUDA's libm (statistically
    equivalent). Defaults are the CLI's. ``jobs``/``job_index``: run only job ``job_index``'s share of
    the events (batch jobs); :func:`merge` combines the saved jobs into the unsplit run's result."""
    return _shower(None, primary, energy, events, seed, cut_mm, device, threads, progress, precise, jobs, job_index)


def calorimeter(path: PathLike, primary: str = "e-", energy: float = 1000.0, events: int = 1000, seed: int = 12345,
                cut_mm: float = 1.0, device: str = "auto", threads: Optional[int] = None, progress: Progress = None,
                precise: bool = False, jobs: int = 1, job_index: int = 0) -> ShowerResult:
    """``warpdrive em calorimeter PATH``: as :func:`testem3` for the layered calorimeter of a TOML
    file (layers name materials of :data:`MATERIALS`, TestEm3's ``Lead``/``liquidArgon``, or material
    files)."""
    return _shower(path, primary, energy, events, seed, cut_mm, device, threads, progress, precise, jobs, job_index)


def merge(dirs: Sequence[PathLike]) -> ShowerResult:
    """``warpdrive merge`` of shower jobs: the output directories of one run split with ``jobs=``/
    ``job_index=`` (each written with :meth:`ShowerResult.to_parquet`) as the unsplit run's result,
    whose files equal the unsplit run's. Missing, repeated or foreign jobs raise ``ValueError``.

    >>> for i in range(3):  # doctest: +SKIP
    ...     em.testem3(events=300, jobs=3, job_index=i).to_parquet(f"job{i}")
    >>> em.merge([f"job{i}" for i in range(3)]).to_parquet("testem3")  # doctest: +SKIP
    """
    if isinstance(dirs, (str, os.PathLike)):
        raise TypeError("merge() takes a list of job directories")
    return ShowerResult(_warpdrive.em_merge([os.fspath(d) for d in dirs]))


def testem3_reference() -> dict[str, dict[str, Any]]:
    """Geant4 10.3's TestEm3 (1 GeV e⁻, 1 mm cuts, ``emstandard_opt0``, 100 events per run), as
    ``{"analogue": run, "secondary_biased": run}``; each run has ``label``, ``edep`` (per material
    ``{"mean_mev", "rms_mev"}`` per event), ``created`` (``gamma``, ``e-``, ``e+`` per event) and
    ``steps`` (``charged``, ``neutral``). TestEm3.out holds both runs; compare RMS values and created
    counts with the analogue one (the biased run discards soft secondaries; docs/validation/em.md)."""
    out: dict[str, dict[str, Any]] = {}
    for key, (label, edep, created, steps) in zip(("analogue", "secondary_biased"), _warpdrive.em_testem3_reference()):
        out[key] = {
            "label": label,
            "edep": {n: {"mean_mev": m, "rms_mev": r} for n, m, r in edep},
            "created": dict(zip(("gamma", "e-", "e+"), created)),
            "steps": dict(zip(("charged", "neutral"), steps)),
        }
    return out


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
