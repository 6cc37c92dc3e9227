"""Type stubs of the native module ``warpdrive._warpdrive`` (crates/python/src, PyO3).

The public API is the Python modules (``warpdrive.spline``, ``.photon``, …); these are the
bindings they call. Checked against the built module by ``python -m mypy.stubtest
warpdrive._warpdrive`` (.ci/run); argument names and defaults are the Rust signatures'.
"""

import os
from typing import Any, Callable, Optional, TypeAlias, final

import numpy as np
import numpy.typing as npt

_Path: TypeAlias = str | os.PathLike[str]
_Progress: TypeAlias = Optional[Callable[[int, int], Any]]
_F64: TypeAlias = npt.NDArray[np.float64]
_U64: TypeAlias = npt.NDArray[np.uint64]
_Particle: TypeAlias = int | str

__all__ = [
    "__version__",
    "Cancelled",
    "SplineTable",
    "ArrowTable",
    "Detector",
    "SkyRun",
    "BeamLattice",
    "BeamParticles",
    "beam_gaussian",
    "beam_particles",
    "EmRun",
    "EmTally",
    "SavedOutput",
    "em_run",
    "ShowerResult",
    "em_shower",
    "beam_merge",
    "beam_run",
    "em_merge",
    "DetectorResult",
    "em_detector",
    "em_testem3_reference",
    "em_materials",
    "BEAM_DEFAULT_MIN_BLOCKS",
    "sky_autocorr",
    "sky_merge",
    "SkyInjection",
    "sky_inject",
    "sky_merge_injection",
    "spline_fit",
    "spline_unfold",
    "spline_unfold_events",
    "spline_merge_events",
    "UnfoldRun",
    "spline_simulate",
    "SimulatedEvent",
    "ppc_run",
    "ppc_hits",
    "photon_merge",
    "photon_tabulate",
    "PHOTON_PARTICLE_ALIASES",
    "set_prebuilt_kernels",
]

__version__: str
BEAM_DEFAULT_MIN_BLOCKS: int
PHOTON_PARTICLE_ALIASES: list[tuple[str, int, str]]

class Cancelled(Exception):
    """A run stopped before it finished because its progress callback returned False."""

@final
class ArrowTable:
    """A library table waiting to be imported by an Arrow consumer (exported once)."""
    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...

@final
class SavedOutput:
    """The files a result's ``save`` writes, captured for pickling."""
    def __new__(cls, dir: bool, files: list[tuple[str, bytes]], notes: list[str], inputs: list[_Path]) -> SavedOutput: ...
    def save(self, path: _Path, force: bool = False, plot: bool = False) -> list[str]: ...
    @property
    def names(self) -> list[str]: ...
    def __reduce__(self) -> tuple[type[SavedOutput], tuple[bool, list[tuple[str, bytes]], list[str], list[str]]]: ...

@final
class SplineTable:
    """A photospline table read once."""
    def __new__(cls, path: _Path) -> SplineTable: ...
    @staticmethod
    def from_fits(data: bytes, path: _Path | None = None) -> SplineTable: ...
    def to_fits(self) -> bytes: ...
    @property
    def ndim(self) -> int: ...
    @property
    def extents(self) -> list[tuple[float, float]]: ...
    @property
    def order(self) -> list[int]: ...
    @property
    def knots(self) -> list[list[float]]: ...
    @property
    def periods(self) -> list[float]: ...
    @property
    def naxes(self) -> list[int]: ...
    @property
    def coefficients(self) -> npt.NDArray[np.float32]: ...
    @property
    def aux(self) -> list[tuple[str, str]]: ...
    @property
    def path(self) -> str | None: ...
    def eval(
        self,
        points: _F64,
        gradient: bool = False,
        derivatives: int = 0,
        device: str = "auto",
        threads: int | None = None,
        precise: bool = False,
        standard_layout: bool = False,
        progress: _Progress = None,
    ) -> _F64: ...
    def eval_coordinates(
        self,
        coords: _F64,
        derivatives: int = 0,
        device: str = "auto",
        threads: int | None = None,
        precise: bool = False,
        standard_layout: bool = False,
        progress: _Progress = None,
    ) -> _F64: ...
    def grideval(self, axes: list[list[float]], threads: int | None = None, progress: _Progress = None) -> _F64: ...

@final
class SimulatedEvent:
    """A synthetic event (``warpdrive spline simulate``)."""
    def table(self) -> ArrowTable: ...
    def save(self, path: _Path, force: bool = False) -> None: ...
    def snapshot(self) -> SavedOutput: ...
    @property
    def window(self) -> tuple[float, float]: ...
    @property
    def true_energy(self) -> list[float]: ...
    @property
    def total_charge(self) -> float: ...
    @property
    def hit_doms(self) -> int: ...
    @property
    def pulses(self) -> int: ...

@final
class UnfoldRun:
    """An unfolded event (``warpdrive spline unfold``)."""
    def energies(self) -> ArrowTable: ...
    def covariance(self) -> _F64: ...
    def pe_per_gev(self) -> _F64: ...
    def blind(self) -> list[int]: ...
    def summary_json(self) -> str: ...
    def run_json(self) -> str: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = True) -> None: ...
    def snapshot(self) -> SavedOutput: ...

def spline_simulate(
    cascade: list[float] | None,
    track: list[float] | None,
    spacing: float,
    amplitude: _Path | None,
    timing: _Path | None,
    amplitude_only: bool,
    geometry: _Path | None,
    noise_rate: float,
    energy: list[float],
    window: list[float],
    seed: int,
    event: int,
    device: str,
    threads: int | None,
    progress: _Progress,
    source_axes: list[str] | None = None,
) -> SimulatedEvent: ...
def spline_fit(
    z: _F64,
    w: _F64,
    centers: list[list[float]],
    knots: list[list[float]],
    order: list[int],
    smooth: list[float],
    penalty_order: list[int],
    monodim: int | None,
    device: str,
    threads: int | None,
    progress: _Progress,
) -> SplineTable: ...
def spline_unfold(
    event: _Path | None,
    pulses: tuple[list[float], list[float], list[float], list[float]] | None,
    window: tuple[float, float] | None,
    cascade: list[float] | None,
    track: list[float] | None,
    spacing: float,
    amplitude: _Path | None,
    timing: _Path | None,
    amplitude_only: bool,
    geometry: _Path | None,
    noise_rate: float,
    solver: str,
    regularization: float,
    photons_per_bin: float,
    tolerance: float,
    max_iterations: int,
    device: str,
    threads: int | None,
    precise: bool,
    progress: _Progress,
    source_axes: list[str] | None = None,
) -> UnfoldRun: ...
def spline_unfold_events(
    list: _Path,
    output: _Path,
    force: bool,
    spacing: float,
    amplitude: _Path | None,
    timing: _Path | None,
    amplitude_only: bool,
    geometry: _Path | None,
    noise_rate: float,
    solver: str,
    regularization: float,
    photons_per_bin: float,
    tolerance: float,
    max_iterations: int,
    device: str,
    threads: int | None,
    precise: bool,
    progress: _Progress,
    jobs: int,
    job_index: int,
    source_axes: list[str] | None = None,
) -> int: ...
def spline_merge_events(dirs: list[_Path], output: _Path, force: bool) -> int: ...

@final
class Detector:
    """Ice, geometry and modules built and validated once."""
    def __new__(
        cls, ice: _Path | None = None, geometry: _Path | None = None, oversize: int | None = None, sensors: _Path | None = None
    ) -> Detector: ...
    @property
    def description(self) -> list[str]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def ice(self) -> str: ...
    @property
    def geometry_source(self) -> str: ...
    def geometry_table(self) -> ArrowTable: ...
    @property
    def doms(self) -> int: ...
    @property
    def strings(self) -> int: ...
    @property
    def tilt(self) -> str: ...
    @property
    def sensors(self) -> str | None: ...
    def propagate(
        self,
        input: _Path | None,
        f2k: str | None,
        steps: _Path | None,
        particle: list[_Particle] | None,
        position: _F64 | None,
        direction: _F64 | None,
        energy: _F64 | None,
        time: _F64 | None,
        length: _F64 | None,
        seed: int,
        max_photons: int | None,
        output: _Path | None,
        hit_lines: _Path | None,
        force: bool,
        device: str,
        threads: int | None,
        precise: bool,
        progress: _Progress,
        jobs: int,
        job_index: int,
    ) -> tuple[ArrowTable, list[tuple[str, str]], str, int, float]: ...

def photon_merge(paths: list[_Path], output: _Path | None, force: bool) -> tuple[ArrowTable, list[tuple[str, str]]]: ...
def photon_tabulate(
    output: _Path,
    ice: _Path | None,
    source: str,
    depth: list[float],
    zenith: list[float],
    azimuth: float,
    energy: float,
    length: float,
    photons: int,
    radial_bins: str,
    azimuth_bins: str,
    polar_bins: str | None,
    delay_bins: str | None,
    margin: float,
    seed: int,
    tilt: bool,
    anisotropy: bool,
    birefringence: bool,
    estimator: str | None,
    sample_step: str | None,
    force: bool,
    device: str,
    threads: int | None,
    progress: _Progress,
    invocation: str,
) -> tuple[str, int, int, int, int, int, float, int]: ...
def ppc_run(
    args: list[str],
    env: dict[str, str],
    stdin: bytes,
    stdin_path: _Path | None = None,
    threads: int | None = None,
    progress: _Progress = None,
) -> tuple[str, str]: ...
def ppc_hits(text: str) -> ArrowTable: ...

@final
class SkyRun:
    """The observed counts, the background distributions of the trials and the analysis of one run."""
    def tables(self) -> tuple[ArrowTable, ArrowTable]: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = False) -> None: ...
    def background_distribution(self, cut: int, bin: int) -> tuple[_U64, _U64]: ...
    @property
    def observed(self) -> _U64: ...
    @property
    def edges_deg(self) -> list[float]: ...
    @property
    def cut_labels(self) -> list[str]: ...
    @property
    def cut_events(self) -> list[int]: ...
    @property
    def trials(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def description(self) -> str: ...
    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], SkyRun], tuple[dict[str, Any]]]: ...
    @staticmethod
    def from_state(state: dict[str, Any]) -> SkyRun: ...

def sky_autocorr(
    ra: _F64 | None,
    dec: _F64 | None,
    energy: _F64 | None,
    files: list[str] | None,
    columns: tuple[str | None, str | None, str | None],
    synthetic_events: int | None,
    hemisphere: str,
    dec_min: float | None,
    dec_max: float | None,
    cuts: list[str],
    bins: int,
    bin_width: float,
    edges: list[float] | None,
    trials: int,
    seed: int,
    jobs: int,
    job_index: int,
    ra_grid: str,
    device: str,
    threads: int | None,
    progress: _Progress,
) -> SkyRun: ...

def sky_merge(job_dirs: list[str], partial: bool) -> SkyRun: ...

@final
class SkyInjection:
    """The background and injected count distributions of a signal-injection run, with the
    sensitivity analysis (`warpdrive sky inject`)."""
    def tables(self) -> tuple[ArrowTable, ArrowTable, ArrowTable, ArrowTable]: ...
    def summary_json(self) -> str: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = False) -> list[str]: ...
    def snapshot(self) -> SavedOutput: ...
    @property
    def sources(self) -> list[int]: ...
    @property
    def events_per_source(self) -> int: ...
    @property
    def trials(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def edges_deg(self) -> list[float]: ...
    @property
    def cut_labels(self) -> list[str]: ...
    @property
    def description(self) -> str: ...

def sky_inject(
    ra: _F64 | None,
    dec: _F64 | None,
    energy: _F64 | None,
    ang_err: _F64 | None,
    files: list[str] | None,
    columns: tuple[str | None, str | None, str | None, str | None],
    synthetic_events: int | None,
    hemisphere: str,
    dec_min: float | None,
    dec_max: float | None,
    cuts: list[str],
    bins: int,
    bin_width: float,
    edges: list[float] | None,
    trials: int,
    seed: int,
    jobs: int,
    job_index: int,
    ra_grid: str,
    sources: list[int],
    events_per_source: int,
    spectrum: float,
    declination: str | None,
    energy_threshold: str,
    device: str,
    threads: int | None,
    progress: _Progress,
) -> SkyInjection: ...

def sky_merge_injection(job_dirs: list[str], partial: bool) -> SkyInjection: ...

#: What ``BeamLattice.track`` returns: (final table, watch records as (element, name, pass, s,
#: table), moments table, device, lost by element, LSC peak currents, tracking seconds).
_TrackResult: TypeAlias = tuple[
    ArrowTable,
    list[tuple[int, str, int, float, ArrowTable]],
    ArrowTable,
    str,
    list[tuple[str, int]],
    list[float],
    float,
]

@final
class BeamParticles:
    """Particles with their species and reference momentum (checked)."""
    def coords(self, elegant: bool) -> _F64: ...
    def table(self) -> ArrowTable: ...
    def __len__(self) -> int: ...
    @property
    def particle(self) -> str: ...
    @property
    def mass(self) -> float: ...
    @property
    def particle_charge(self) -> float: ...
    @property
    def p_central(self) -> float: ...
    @property
    def description(self) -> str: ...
    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], BeamParticles], tuple[dict[str, Any]]]: ...
    @staticmethod
    def from_state(state: dict[str, Any]) -> BeamParticles: ...

@final
class BeamLattice:
    """A lattice read from an ``.lte`` file (or text) and compiled once."""
    def __new__(
        cls, path: _Path | None = None, line: str | None = None, text: str | None = None, name: str | None = None
    ) -> BeamLattice: ...
    @property
    def line(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str | None: ...
    @property
    def length(self) -> float: ...
    @property
    def n_elements(self) -> int: ...
    def track(
        self,
        beam: BeamParticles | None,
        coords: _F64 | None,
        elegant: bool,
        passes: int,
        particle: str | None,
        mass: float | None,
        particle_charge: float | None,
        p_central: float | None,
        momentum: float | None,
        aperture: float | None,
        charge: float,
        histogram: str,
        launch_per_element: bool,
        min_blocks: int,
        watch: str,
        watch_every: int,
        watch_passes: list[int] | None,
        watch_particles: list[int] | None,
        output: _Path | None,
        force: bool,
        plot: bool,
        device: str,
        threads: int | None,
        precise: bool,
        progress: _Progress,
        jobs: int | None = None,
        job_index: int | None = None,
        sdds: bool = False,
    ) -> _TrackResult: ...
    def twiss(
        self,
        betx: float | None,
        bety: float | None,
        alfx: float,
        alfy: float,
        dx: float,
        dpx: float,
        particle: str | None,
        p_central: float | None,
        momentum: float | None,
        output: _Path | None,
        force: bool,
        plot: bool,
        sdds: bool = False,
    ) -> tuple[ArrowTable, list[str], list[str], str]: ...

def beam_merge(dirs: list[_Path], output: _Path, force: bool) -> tuple[int, int, list[str]]: ...

def beam_run(
    ele: _Path,
    output: _Path | None,
    force: bool,
    sdds: bool,
    device: str,
    threads: int | None,
    precise: bool,
    progress: _Progress,
) -> tuple[
    str,
    list[str],
    list[tuple[int, int, str, int, int, str, float, float]],
    str | None,
    tuple[list[float], list[list[float]], list[list[float]]] | None,
]: ...

def beam_gaussian(
    particles: int,
    beta_x: float,
    alpha_x: float,
    emit_x: float | None,
    nemit_x: float | None,
    beta_y: float,
    alpha_y: float,
    emit_y: float | None,
    nemit_y: float | None,
    sigma_s: float,
    sigma_delta: float,
    seed: int,
    particle: str | None,
    mass: float | None,
    particle_charge: float | None,
    p_central: float | None,
    momentum: float | None,
) -> BeamParticles: ...
def beam_particles(
    coords: _F64 | None,
    elegant: bool,
    path: _Path | None,
    particle: str | None,
    mass: float | None,
    particle_charge: float | None,
    p_central: float | None,
    momentum: float | None,
) -> BeamParticles: ...

@final
class EmRun:
    """The result of one mini-app run (``warpdrive em``)."""
    def profile(self) -> ArrowTable: ...
    def energy_beyond(self, z: float) -> float: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = False) -> list[str]: ...
    def snapshot(self) -> SavedOutput: ...
    def tally(self) -> EmTally: ...
    @property
    def mean_depth(self) -> float: ...
    @property
    def checksum(self) -> str: ...
    @property
    def tracks(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def secondaries(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def material(self) -> str: ...
    @property
    def seconds(self) -> float: ...

@final
class EmTally:
    """The fixed-point depth tally of a mini-app run and its grid."""
    def energy_beyond(self, z: float) -> float: ...
    def __reduce__(self) -> tuple[Callable[[dict[str, Any]], EmTally], tuple[dict[str, Any]]]: ...
    @staticmethod
    def from_state(state: dict[str, Any]) -> EmTally: ...

@final
class ShowerResult:
    """The result of an EM shower run (``warpdrive em testem3`` / ``em calorimeter``)."""
    def profile(self) -> ArrowTable: ...
    def events(self) -> ArrowTable: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = False) -> list[str]: ...
    def snapshot(self) -> SavedOutput: ...
    def materials(self) -> list[tuple[str, float, float, float]]: ...
    def created(self) -> list[float]: ...
    def created_by(self) -> list[tuple[str, float]]: ...
    def steps(self) -> tuple[float, float]: ...
    def track_length(self) -> list[tuple[str, float]]: ...
    @property
    def escaped(self) -> float: ...
    @property
    def worst_balance(self) -> float: ...
    @property
    def checksum(self) -> str: ...
    @property
    def events_count(self) -> int: ...
    @property
    def calorimeter(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def tables_cached(self) -> bool: ...
    @property
    def tables_seconds(self) -> float: ...
    @property
    def transport_seconds(self) -> float: ...

def em_run(
    energy: float,
    tracks: int,
    seed: int,
    material: str,
    tally_front: float,
    tally_width: float,
    tally_bins: int,
    slots: int | None,
    stack_capacity: int | None,
    compare: _Path | None,
    device: str,
    threads: int | None,
    progress: _Progress,
) -> EmRun: ...
def em_shower(
    calorimeter: _Path | None,
    primary: str,
    energy: float,
    events: int,
    seed: int,
    cut_mm: float,
    device: str,
    threads: int | None,
    progress: _Progress,
    precise: bool = False,
    jobs: int | None = None,
    job_index: int | None = None,
) -> ShowerResult: ...
def em_merge(dirs: list[_Path]) -> ShowerResult: ...

@final
class DetectorResult:
    """The result of EM showers in a GDML detector (``warpdrive em run FILE.gdml``)."""
    def volumes(self) -> ArrowTable: ...
    def hits(self) -> ArrowTable: ...
    def summary_json(self) -> str: ...
    def save(self, dir: _Path, force: bool = False, plot: bool = False) -> list[str]: ...
    def snapshot(self) -> SavedOutput: ...
    def materials(self) -> list[tuple[str, bool, float, float, float]]: ...
    def hits_per_volume(self) -> list[tuple[str, int, float]]: ...
    @property
    def escaped(self) -> float: ...
    @property
    def worst_balance(self) -> float: ...
    @property
    def events_count(self) -> int: ...
    @property
    def device(self) -> str: ...
    @property
    def transport_seconds(self) -> float: ...

def em_detector(
    gdml: _Path,
    primary: str,
    energy: float,
    position: list[float],
    direction: list[float],
    events: int,
    seed: int,
    cut_mm: float,
    field: list[float],
    field_map: _Path | None,
    sensitive: list[str],
    device: str,
    threads: int | None,
    progress: _Progress,
    delta_chord: float | None = None,
    delta_intersection: float | None = None,
    field_epsilon: float | None = None,
) -> DetectorResult: ...
def em_testem3_reference() -> list[tuple[str, list[tuple[str, float, float]], list[float], list[float]]]: ...
def em_materials() -> list[str]: ...
def set_prebuilt_kernels(dir: _Path) -> None: ...
