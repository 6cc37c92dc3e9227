"""ELEGANT-style beam tracking of ``.lte`` lattices (``warpdrive beam track``).

``Lattice`` reads and compiles a lattice once; ``Particles`` is a checked beam with its species
and reference momentum (a matched Gaussian bunch from Twiss parameters, an array or a file);
``Lattice.track`` tracks it and returns a ``Tracked``. Keyword names are the command line's
long options with ``-`` replaced by ``_``.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import _arrow, _progress, _warpdrive
from ._types import Float64Array, Int64Array, PathLike, Progress

__all__ = ["COLUMNS", "WARPDRIVE_COLUMNS", "Lattice", "Particles", "Tracked", "SPECIES", "merge", "run"]

#: ELEGANT's coordinate columns (``coords="elegant"``): x, xp, y, yp, t [s], p (βγ).
COLUMNS: tuple[str, ...] = ("x", "xp", "y", "yp", "t", "p")
#: warpdrive's (``coords="warpdrive"``): x, xp, y, yp, s [m], δ.
WARPDRIVE_COLUMNS: tuple[str, ...] = ("x", "xp", "y", "yp", "s", "delta")
#: Species known by name (``particle=``); others by ``mass=`` [MeV/c²] and ``particle_charge=``.
SPECIES: tuple[str, ...] = ("electron", "positron", "proton", "antiproton", "muon", "antimuon", "pi+", "pi-",
                            "deuteron")


def _convention(coords: str) -> bool:
    """True for ELEGANT's coordinates, False for warpdrive's; anything else raises ``ValueError``."""
    if coords not in ("elegant", "warpdrive"):
        raise ValueError(f"coords={coords!r}: expected 'elegant' or 'warpdrive'")
    return coords == "elegant"


def _array(particles: npt.ArrayLike) -> Float64Array:
    """An (N, 6) C-contiguous float64 array of coordinates."""
    z = np.ascontiguousarray(np.asarray(particles, dtype=np.float64))
    if z.ndim != 2 or z.shape[1] != 6:
        raise ValueError(f"particles must be an (N, 6) array, got shape {z.shape}")
    return z


class Particles:
    """A beam: coordinates of N particles, their species and the reference momentum.

    ``Particles(coords, coords="elegant", particle="electron", p_central=1956.951)`` checks an
    (N, 6) array (ELEGANT's x, xp, y, yp, t [s], p = βγ, or with ``coords="warpdrive"`` x, xp,
    y, yp, s [m], δ): a row with NaN or ∞, or with a momentum p ≤ 0 (an unfilled column), raises
    ``ValueError`` naming it. The species is ``particle=`` (one of ``SPECIES``) or ``mass=``
    [MeV/c²] with ``particle_charge=`` [e]; the reference ``p_central=`` (β0γ0) or
    ``momentum=`` [MeV/c]. See :meth:`gaussian` and :meth:`from_file` for the other sources.

    Picklable: the pickle holds the coordinates bit for bit, the species, the reference and how
    the beam was made.
    """

    _p: _warpdrive.BeamParticles

    def __init__(self, coords: Optional[npt.ArrayLike] = None, *, convention: str = "elegant",
                 particle: Optional[str] = None, mass: Optional[float] = None,
                 particle_charge: Optional[float] = None, p_central: Optional[float] = None,
                 momentum: Optional[float] = None, _native: Optional[_warpdrive.BeamParticles] = None) -> None:
        if _native is None:
            if coords is None:
                raise ValueError("give the coordinates as an (N, 6) array (or use Particles.gaussian / Particles.from_file)")
            _native = _warpdrive.beam_particles(_array(coords), _convention(convention), None, particle, mass,
                                                particle_charge, p_central, momentum)
        self._p = _native

    @classmethod
    def gaussian(cls, particles: int = 100_000, *, beta_x: float = 10.0, alpha_x: float = 0.0,
                 emit_x: Optional[float] = None, nemit_x: Optional[float] = None, beta_y: float = 10.0,
                 alpha_y: float = 0.0, emit_y: Optional[float] = None, nemit_y: Optional[float] = None,
                 sigma_s: float = 1e-3, sigma_delta: float = 1e-3, seed: int = 1, particle: Optional[str] = None,
                 mass: Optional[float] = None, particle_charge: Optional[float] = None,
                 p_central: Optional[float] = None, momentum: Optional[float] = None) -> Particles:
        """A Gaussian bunch matched to Twiss parameters, the CLI's ``--particles`` beam.

        Per plane β [m], α and the geometric RMS emittance ``emit_`` [m rad] (default 1e-9) or
        the normalised one ``nemit_`` (β0γ0 ε, xtrack's ``nemitt``); ``sigma_s`` [m] is the RMS
        bunch length (xtrack's σ_z), ``sigma_delta`` the RMS momentum spread. Particle i draws
        from Philox stream (seed, i): the same particles as ``warpdrive beam track --seed`` on
        any device and thread count.
        """
        return cls(_native=_warpdrive.beam_gaussian(particles, float(beta_x), float(alpha_x), emit_x, nemit_x,
                                                    float(beta_y), float(alpha_y), emit_y, nemit_y, float(sigma_s),
                                                    float(sigma_delta), seed, particle, mass, particle_charge,
                                                    p_central, momentum))

    @classmethod
    def from_file(cls, path: PathLike, *, particle: Optional[str] = None, mass: Optional[float] = None,
                  particle_charge: Optional[float] = None, p_central: Optional[float] = None,
                  momentum: Optional[float] = None) -> Particles:
        """Particles from Parquet or CSV (columns x, xp, y, yp, s or t, delta or p), the CLI's
        ``--beam``: text columns, nulls, empty files and bad rows raise ``ValueError`` naming
        the file, column and row; a missing file ``FileNotFoundError``."""
        return cls(_native=_warpdrive.beam_particles(None, True, os.fspath(path), particle, mass, particle_charge,
                                                     p_central, momentum))

    def coords(self, convention: str = "elegant") -> Float64Array:
        """(N, 6) coordinates in ``convention`` (``"elegant"`` or ``"warpdrive"``)."""
        return self._p.coords(_convention(convention))

    def to_arrow(self) -> pa.Table:
        """The particles as a ``pyarrow.Table`` (x, xp, y, yp, s, delta, t, p, lost_at, lost_pass)."""
        return _arrow.table(self._p.table(), {})

    def __len__(self) -> int:
        """Number of particles."""
        return len(self._p)

    @property
    def particle(self) -> str:
        """Species name (``custom`` for a given mass and charge)."""
        return self._p.particle

    @property
    def mass(self) -> float:
        """Rest mass [MeV/c²]."""
        return self._p.mass

    @property
    def particle_charge(self) -> float:
        """Charge number [e]."""
        return self._p.particle_charge

    @property
    def p_central(self) -> float:
        """Reference β0γ0."""
        return self._p.p_central

    @property
    def description(self) -> str:
        """How the particles were made (a Gaussian beam and its seed, a file, arrays)."""
        return self._p.description

    def __repr__(self) -> str:
        return (f"warpdrive.beam.Particles({len(self)} {self.particle}s, m = {self.mass:.6g} MeV/c², "
                f"q = {self.particle_charge:+g} e, p_central = {self.p_central:.6g}; {self._p.description})")


class Tracked:
    """The result of :meth:`Lattice.track`.

    ``particles``: (N, 6) final coordinates in the input's convention; ``lost_at`` (element index
    + 1 where a particle was lost, 0 if it survived), ``lost_pass``, ``alive``; ``table``: the
    CLI's ``final.parquet`` as a ``pyarrow.Table``; ``moments``: ``moments.parquet`` (one row per
    watch event); ``watch``: the records kept with ``watch="memory"``, one dict per watch point
    and pass (element, name, pass_, s, particles (rows, 6), ids, table); ``lost_by_element``;
    ``lsc_peak_current`` [A] of each LSCDRIFT in the last pass; ``tracking_seconds``; ``device``.

    Picklable (NumPy arrays and pyarrow tables only).
    """

    def __init__(self, result: _warpdrive._TrackResult, coords: str) -> None:
        cols, watches, moments, device, lost, lsc, seconds = result
        self.device: str = device
        self.table: pa.Table = _arrow.table(cols, {"warpdrive.device": device})
        self.moments: pa.Table = _arrow.table(moments, {})
        self.particles: Float64Array = self._coords(self.table, coords)
        self.lost_at: Int64Array = self.table["lost_at"].to_numpy()
        self.lost_pass: Int64Array = self.table["lost_pass"].to_numpy()
        self.alive: npt.NDArray[np.bool_] = self.lost_at == 0
        self.lost_by_element: list[tuple[str, int]] = list(lost)
        self.lsc_peak_current: list[float] = list(lsc)
        self.tracking_seconds: float = seconds
        self.watch: list[dict[str, Any]] = []
        for element, name, pas, s, wcols in watches:
            t = _arrow.table(wcols, {"element": name, "pass": pas, "s": s})
            self.watch.append(dict(element=element, name=name, pass_=pas, s=s, particles=self._coords(t, coords),
                                   ids=t["particle"].to_numpy(), table=t))

    @staticmethod
    def _coords(t: pa.Table, coords: str) -> Float64Array:
        """The (N, 6) coordinates of a final or watch table in ``coords``' convention."""
        names = COLUMNS if coords == "elegant" else WARPDRIVE_COLUMNS
        return np.column_stack([t[n].to_numpy() for n in names])

    def __repr__(self) -> str:
        lost = ", ".join(f"{n} at {e}" for e, n in self.lost_by_element[:3])
        more = ", …" if len(self.lost_by_element) > 3 else ""
        return (f"warpdrive.beam.Tracked({len(self.particles)} particles, {int(self.alive.sum())} alive"
                f"{f' (lost: {lost}{more})' if lost else ''}, {self.moments.num_rows} moment rows, "
                f"{len(self.watch)} watch records in memory, {self.device})")


class Lattice:
    """An ELEGANT ``.lte`` lattice, parsed, checked and compiled once.

    ``Lattice("fodo.lte", line=None)`` reads a file (a missing one raises
    ``FileNotFoundError``, a bad one ``ValueError`` naming the file, line and parameter);
    ``Lattice(text="...")`` parses text. ``line`` picks the beamline (default: the file's USE,
    else its last line).

    Picklable: it is rebuilt from its construction arguments on unpickling (a lattice file is
    read again where it is unpickled; a lattice of ``text=`` carries its text).
    """

    def __init__(self, path: Optional[PathLike] = None, line: Optional[str] = None, *, text: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        if (path is None) == (text is None):
            raise TypeError("Lattice() takes a lattice file path or text= (one of them)")
        self._args = (None if path is None else os.fspath(path), line, text, name)
        self._l = _warpdrive.BeamLattice(*self._args)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the construction arguments (the file is read again on unpickling)."""
        return (_lattice, self._args)

    @classmethod
    def from_lte(cls, path: PathLike, line: Optional[str] = None) -> Lattice:
        """Read ``path`` and use ``line`` (default: the file's USE, else its last line)."""
        return cls(path, line)

    @property
    def line(self) -> str:
        """The name of the beamline used."""
        return self._l.line

    @property
    def length(self) -> float:
        """Length of the line [m]."""
        return self._l.length

    @property
    def n_elements(self) -> int:
        """Elements of the expanded line."""
        return self._l.n_elements

    @property
    def path(self) -> Optional[str]:
        """The lattice file (None for a lattice of ``text=``)."""
        return self._args[0]

    def __repr__(self) -> str:
        source = repr(self.path) if self.path is not None else f"text={self._l.name!r}"
        return f"warpdrive.beam.Lattice({source}, line={self.line!r}, {self.n_elements} elements, {self.length:.4f} m)"

    def track(self, particles: Union[Particles, npt.ArrayLike], passes: int = 1, *, coords: str = "elegant", particle: Optional[str] = None,
              mass: Optional[float] = None, particle_charge: Optional[float] = None,
              p_central: Optional[float] = None, momentum: Optional[float] = None, aperture: Optional[float] = None,
              charge: float = 1e-9, histogram: str = "block-atomic", launch_per_element: bool = False,
              min_blocks: Optional[int] = None, watch: Optional[str] = None, watch_every: int = 1,
              watch_passes: Optional[Sequence[int]] = None, watch_particles: Optional[Sequence[int]] = None,
              output: Optional[PathLike] = None, force: bool = False, plot: bool = False, device: str = "auto",
              threads: Optional[int] = None, precise: bool = False, progress: Progress = None,
              jobs: int = 1, job_index: int = 0, sdds: bool = False) -> Tracked:
        """Track ``particles`` through ``passes`` passes, as ``warpdrive beam track``.

        ``particles`` is a :class:`Particles` (its species and momentum are used) or an (N, 6)
        float64 array in ``coords`` (``"elegant"``: x, xp, y, yp, t [s], p = βγ; ``"warpdrive"``:
        x, xp, y, yp, s [m], δ) with ``particle``/``mass``/``particle_charge`` and
        ``p_central``/``momentum`` as :class:`Particles` takes them. Options as the CLI's:
        ``aperture`` [m], ``charge`` [C], ``histogram``, ``launch_per_element``, ``min_blocks``.

        Watch points: ``watch="memory"`` (default without ``output``) keeps the records in
        ``Tracked.watch``, budgeted before the run (too many raise ``MemoryError`` saying how to
        keep fewer); ``"files"`` (default with ``output``) and ``"stream"`` write them to Parquet
        in ``output`` (one file per record, or one per watch point with a row group per record);
        ``"off"`` records nothing. ``watch_every=k`` or ``watch_passes=[...]`` choose the passes,
        ``watch_particles=[...]`` the particles (rows of the beam).

        ``output=DIR`` writes the CLI's directory (``final.parquet``, ``moments.parquet``, watch
        files, ``run.json``, and ``sizes.png`` with ``plot=True``), whole or not at all; an
        existing one raises ``FileExistsError`` unless ``force=True``. Ctrl-C stops the run within
        about a second (``KeyboardInterrupt``), as does a ``progress(done, total)`` callback that
        returns ``False`` (``warpdrive.Cancelled``); nothing is written then.

        ``jobs=N, job_index=I`` track batch job I of N: its share of the bunch (whole blocks of
        particles, at most 256 jobs; not with space charge) into ``output``; combine the jobs'
        directories with :func:`merge` (or ``warpdrive merge``) into the unsplit run's files.

        ``sdds=True`` (with ``output``) also writes ``final.sdds``, ``lost.sdds`` and the watch
        points as SDDS, as ``beam track --sdds``.
        """
        elegant = _convention(coords)
        beam: Optional[_warpdrive.BeamParticles] = None
        arr: Optional[Float64Array] = None
        if isinstance(particles, Particles):
            beam = particles._p
        else:
            arr = _array(particles)
        if watch is None:
            watch = "memory" if output is None else "files"
        if min_blocks is None:
            min_blocks = _warpdrive.BEAM_DEFAULT_MIN_BLOCKS
        cb, close = _progress.callback(progress, passes, "passes")
        try:
            result = self._l.track(beam, arr, elegant, passes, particle, mass, particle_charge, p_central, momentum,
                                   aperture, float(charge), histogram, launch_per_element, min_blocks, watch,
                                   watch_every, None if watch_passes is None else [int(p) for p in watch_passes],
                                   None if watch_particles is None else [int(i) for i in watch_particles],
                                   None if output is None else os.fspath(output), force, plot, device, threads,
                                   precise, cb, jobs, job_index, sdds)
        finally:
            close()
        return Tracked(result, coords)

    def twiss(self, *, betx: Optional[float] = None, bety: Optional[float] = None, alfx: float = 0.0,
              alfy: float = 0.0, dx: float = 0.0, dpx: float = 0.0, particle: Optional[str] = None,
              p_central: Optional[float] = None, momentum: Optional[float] = None,
              output: Optional[PathLike] = None, force: bool = False, plot: bool = True,
              sdds: bool = False) -> dict[str, Any]:
        """Linear optics, as ``warpdrive beam twiss``: the periodic solution of a ring, or a line
        started from ``betx``, ``bety`` (both), ``alfx``, ``alfy``, ``dx``, ``dpx``.

        Returns ``summary.json``'s content as a dict — ``tunes`` [Qx, Qy], ``chromaticity``
        [dQx/dδ, dQy/dδ], ``momentum_compaction`` (ring), ``circumference``,
        ``synchrotron_tune`` (ring with RFCA, else None), ``periodic``, ``coupled`` (x–y coupled
        ring: tunes of the eigenmodes, betx/alfx/mux of mode I in x, bety/alfy/muy of mode II in
        y) — with ``table``: a
        ``pyarrow.Table`` of ``twiss.parquet`` (s, name, type, betx, bety, alfx, alfy, dx, dpx,
        mux, muy at the start and every element end). ``particle`` and ``p_central``/``momentum``
        give the reference (RF cavities only). An unstable ring raises ``ValueError`` naming the
        plane. ``output=DIR`` writes the CLI's directory (``twiss.png`` with ``plot=True``;
        ``twiss.sdds`` with ``sdds=True``).
        """
        cols, names, types, summary = self._l.twiss(
            None if betx is None else float(betx), None if bety is None else float(bety), float(alfx), float(alfy),
            float(dx), float(dpx), particle, p_central, momentum, None if output is None else os.fspath(output),
            force, plot, sdds)
        table = _arrow.table(cols, {})
        table = table.add_column(1, "name", pa.array(names, pa.string()))
        table = table.add_column(2, "type", pa.array(types, pa.string()))
        result: dict[str, Any] = json.loads(summary)
        result["table"] = table
        return result


def run(ele: PathLike, output: Optional[PathLike] = None, *, force: bool = False, sdds: bool = False,
        device: str = "auto", threads: Optional[int] = None, precise: bool = False,
        progress: Progress = None) -> dict[str, Any]:
    """Run an ELEGANT run file, as ``warpdrive beam run FILE.ele``: its lattice and input files
    relative to it, every file it names and each tracking's Parquet files into ``output``
    (default ``NAME-out`` for ``NAME.ele``), whole or not at all; an existing directory raises
    ``FileExistsError`` unless ``force=True``. ``sdds=True`` also writes each tracking's
    ``final.sdds``, ``lost.sdds`` and watch points as SDDS. Errors in the file raise
    ``ValueError`` naming the file, line and parameter.

    Returns ``{"output": path, "written": [files named by the run file], "steps": [{"track",
    "step", "dir", "particles", "lost", "device", "sigma_x", "sigma_y"}, ...] (one per step of
    each track; ``dir`` is the subdirectory of its Parquet files), "twiss": the last
    twiss_output's summary (as :meth:`Lattice.twiss`, without the table) or None, "matrix":
    the last matrix_output's map of the whole line ``{"C": [6], "R": [6][6], "T": [6][21]}``
    (T_ijk for j <= k in the order 11, 12, ..., 16, 22, ..., 66) or None}``. A
    ``progress(done, total)`` callback that returns ``False`` cancels (``warpdrive.Cancelled``).
    """
    cb, close = _progress.callback(progress, None, "passes")
    try:
        out, written, steps, twiss, matrix = _warpdrive.beam_run(
            os.fspath(ele), None if output is None else os.fspath(output), force, sdds, device, threads, precise, cb)
    finally:
        close()
    keys = ("track", "step", "dir", "particles", "lost", "device", "sigma_x", "sigma_y")
    return {
        "output": out,
        "written": written,
        "steps": [dict(zip(keys, s)) for s in steps],
        "twiss": None if twiss is None else json.loads(twiss),
        "matrix": None if matrix is None else {"C": matrix[0], "R": matrix[1], "T": matrix[2]},
    }


def merge(dirs: Sequence[PathLike], output: PathLike, force: bool = False) -> dict[str, Any]:
    """Combine the output directories of a split :meth:`Lattice.track` (``jobs=``/``job_index=``)
    into ``output``, as ``warpdrive merge`` does: the unsplit run's ``final.parquet``,
    ``moments.parquet`` and watch files. Refuses missing, repeated or foreign jobs, naming them.
    Returns ``{"particles", "watch_events", "watch_files"}``."""
    n, events, files = _warpdrive.beam_merge([os.fspath(d) for d in dirs], os.fspath(output), force)
    return {"particles": n, "watch_events": events, "watch_files": files}


def _lattice(path: Optional[str], line: Optional[str], text: Optional[str], name: Optional[str]) -> Lattice:
    """Rebuild a pickled :class:`Lattice` from its construction arguments."""
    return Lattice(path, line, text=text, name=name)


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
