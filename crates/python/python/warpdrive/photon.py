"""Optical photon propagation in ice (``warpdrive photon``) and the PPC mode (``warpdrive ppc``)."""

from __future__ import annotations

import json
import logging
import os
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from . import _arrow, _progress, _warpdrive
from ._types import Float64Array, PathLike, Progress

__all__ = ["Detector", "PARTICLE_ALIASES", "PpcRun", "merge", "ppc", "propagate", "sources_f2k", "tabulate"]

#: A particle of typed sources: an f2k or PDG name, or a PDG code.
_Particle = Union[str, int, np.integer[Any]]

#: PDG-style names and codes typed sources accept besides PPC's f2k names, and the f2k kind each
#: is simulated as: ``(name, PDG code, f2k kind)`` (docs/photon.md has the table).
PARTICLE_ALIASES: list[tuple[str, int, str]] = list(_warpdrive.PHOTON_PARTICLE_ALIASES)

_log = logging.getLogger("warpdrive")


def sources_f2k(type: Union[str, Sequence[str]], position: npt.ArrayLike, direction: npt.ArrayLike,
                time: Optional[npt.ArrayLike] = None, energy: Optional[npt.ArrayLike] = None,
                length: Optional[npt.ArrayLike] = None, event: int = 0) -> str:
    """f2k text (``TR`` lines) for arrays of sources, e.g. to write a file that PPC reads.
    (:meth:`Detector.propagate` takes the arrays themselves: ``particle=``, ``position=``, …)

    ``type``: f2k particle names (``e``, ``hadr``, ``amu``, ...), one per source or one for all;
    ``position``: (N, 3) [m]; ``direction``: (N, 2) f2k zenith and azimuth [degrees];
    ``time`` [ns], ``energy`` [GeV], ``length`` [m] (muon segments): (N,) or scalars.
    Numbers are written with Python's shortest round-trip ``repr``, so a reader gets the floats
    given.
    """
    pos = np.atleast_2d(np.asarray(position, dtype=np.float64))
    n = pos.shape[0]
    if pos.shape != (n, 3):
        raise ValueError(f"position must be (N, 3), got {pos.shape}")
    d = np.atleast_2d(np.asarray(direction, dtype=np.float64))
    if d.shape != (n, 2):
        raise ValueError(f"direction must be (N, 2) f2k zenith/azimuth in degrees, got {d.shape}")

    def col(v: Optional[npt.ArrayLike], name: str, default: Optional[float] = None) -> Float64Array:
        """One float64 per source (a scalar: one for all); None takes ``default`` or is an error."""
        if v is None:
            if default is None:
                raise ValueError(f"{name} is required")
            v = default
        return np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))

    t, e, ln = col(time, "time", 0.0), col(energy, "energy"), col(length, "length", 0.0)
    types = [type] * n if isinstance(type, str) else list(type)
    if len(types) != n:
        raise ValueError(f"{len(types)} types for {n} sources")
    lines = []
    for i in range(n):
        f = [float(x) for x in (*pos[i], *d[i], ln[i], e[i], t[i])]
        lines.append(f"TR 1 0 {types[i]} " + " ".join(repr(x) for x in f))
    if event:
        return f"EM {int(event)} 1 0 0 0 0\n" + "\n".join(lines) + "\nEE\n"
    return "\n".join(lines) + "\n"


def _rows(name: str, v: Optional[npt.ArrayLike], width: int) -> Optional[Float64Array]:
    """(N, width) float64 rows; one row may be given flat."""
    if v is None:
        return None
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise ValueError(f"{name} must be ({width},) or (N, {width}), got shape {a.shape}")
    return np.ascontiguousarray(a)


def _column(name: str, v: Optional[npt.ArrayLike]) -> Optional[Float64Array]:
    """One float64 per source (a scalar: one for all)."""
    if v is None:
        return None
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    if a.ndim != 1:
        raise ValueError(f"{name} must be a number or a one-dimensional array, got shape {a.shape}")
    return np.ascontiguousarray(a)


def _particles(v: Union[None, _Particle, Sequence[_Particle]]) -> Optional[list[Union[int, str]]]:
    """Names and PDG codes, one for all or one per source."""
    if v is None:
        return None
    if isinstance(v, (str, int, np.integer)):
        v = [v]
    return [int(p) if isinstance(p, (int, np.integer)) else str(p) for p in v]


def _is_path(s: object) -> bool:
    """A path-like, or a one-line string that is not f2k text."""
    return isinstance(s, os.PathLike) or (
        isinstance(s, str) and "\n" not in s and not s.lstrip().startswith(("TR ", "EM "))
    )


class Detector:
    """Ice, geometry and modules, built and validated once (``--ice``, ``--geometry``,
    ``--oversize``, ``--sensors``).

    ``ice``: a PPC ice directory (None: built-in homogeneous ice); ``geometry``: geo-f2k or
    Prometheus ``.geo`` (None: ``<ice>/geo-f2k`` if present, else a generated 86-string detector);
    ``sensors``: a directory with multi-PMT module files (``om.conf``, ``om.map``, ``om.dirs``,
    ``om.wv_*``; None: the ice directory's, if any). Hits then carry the PMT in the ``pmt`` column.

    Picklable: a detector is rebuilt from its construction arguments on unpickling (the ice,
    geometry and sensor files are read again where it is unpickled, so they must be there too).
    """

    def __init__(self, ice: Optional[PathLike] = None, geometry: Optional[PathLike] = None,
                 oversize: Optional[int] = None, sensors: Optional[PathLike] = None) -> None:
        self._args = (
            None if ice is None else os.fspath(ice),
            None if geometry is None else os.fspath(geometry),
            oversize,
            None if sensors is None else os.fspath(sensors),
        )
        self._d = _warpdrive.Detector(*self._args)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the construction arguments (the model is built again on unpickling)."""
        return (Detector, self._args)

    @property
    def description(self) -> list[str]:
        """The lines the CLI prints about the model (ice, tilt model, geometry, oversize, …)."""
        return self._d.description

    @property
    def warnings(self) -> list[str]:
        """Options of the model that are read but not applied (the CLI's ``warning:`` lines)."""
        return self._d.warnings

    @property
    def ice(self) -> str:
        """The ice directory, or ``"built-in"``."""
        return self._d.ice

    @property
    def geometry(self) -> pa.Table:
        """The modules as a ``pyarrow.Table``: ``string``, ``om`` (int32), ``x``, ``y``, ``z`` [m]."""
        return _arrow.table(self._d.geometry_table(), {"warpdrive.geometry": self._d.geometry_source})

    @property
    def geometry_source(self) -> str:
        """Where the geometry comes from: its file, or the generated detector."""
        return self._d.geometry_source

    @property
    def doms(self) -> int:
        """Number of optical modules."""
        return self._d.doms

    @property
    def strings(self) -> int:
        """Number of strings with at least one module."""
        return self._d.strings

    @property
    def tilt(self) -> str:
        """The tilt model in use: ``none``, ``1-D (tilt.par + tilt.dat …)`` or ``2-D (…)``."""
        return self._d.tilt

    @property
    def sensors(self) -> Optional[str]:
        """The multi-PMT module directory, or None."""
        return self._d.sensors

    def __repr__(self) -> str:
        return (f"warpdrive.photon.Detector(ice={self.ice!r}, {self.doms} DOMs on {self.strings} strings, "
                f"tilt {self.tilt}, sensors {self.sensors or 'none'})")

    def propagate(self, sources: Union[None, PathLike, str, Mapping[str, Any]] = None, *,
                  input: Optional[PathLike] = None, f2k: Optional[str] = None, steps: Optional[PathLike] = None,
                  particle: Union[None, _Particle, Sequence[_Particle]] = None,
                  position: Optional[npt.ArrayLike] = None, direction: Optional[npt.ArrayLike] = None,
                  energy: Optional[npt.ArrayLike] = None, time: Optional[npt.ArrayLike] = None,
                  length: Optional[npt.ArrayLike] = None, seed: int = 1, max_photons: Optional[int] = None,
                  output: Optional[PathLike] = None, hit_lines: Optional[PathLike] = None, force: bool = False,
                  device: str = "auto", threads: Optional[int] = None, precise: bool = False,
                  progress: Progress = None, jobs: int = 1, job_index: int = 0) -> pa.Table:
        """``warpdrive photon`` on this detector: the hits as a ``pyarrow.Table`` with the
        columns and key/value metadata of its Parquet file (docs/photon.md).

        The sources are one of (as the CLI's options of the same names):

        * ``input``: an f2k file; ``steps``: a step file; ``f2k``: f2k text;
        * typed sources: ``particle`` (f2k names, PDG names or codes, see
          :data:`PARTICLE_ALIASES`), ``position`` (N, 3) [m], ``direction`` (N, 2) f2k zenith and
          azimuth [deg], ``energy`` [GeV], ``time`` [ns], ``length`` [m]: each one value for all
          sources or one per source; one not given takes the default cascade's value (``e``,
          10⁵ GeV at the origin moving up, zenith 180°);
        * nothing: the default cascade.

        ``sources`` is a shorthand: a path (``input``), f2k text (``f2k``) or a dict of the typed
        keywords (``type`` is ``particle``). ``output``/``hit_lines`` write the Parquet file and
        PPC's ``HIT`` lines as the CLI does (an existing file raises ``FileExistsError`` unless
        ``force=True``). ``progress``: None (tqdm on a terminal if installed), False, True or
        ``f(done, total)`` (return False to stop: ``warpdrive.Cancelled``). Ctrl-C stops the run
        within about a second (``KeyboardInterrupt``); nothing is written then.

        ``jobs``/``job_index``: propagate only job ``job_index``'s share of the photons (batch
        jobs, ``warpdrive.distributed``); :func:`merge` combines the jobs' files into the unsplit
        run's table.
        """
        kw: dict[str, Any] = dict(input=input, f2k=f2k, steps=steps, particle=particle, position=position,
                                  direction=direction, energy=energy, time=time, length=length)
        if sources is not None:
            given: dict[str, Any]
            if isinstance(sources, Mapping):
                given = {("particle" if k == "type" else k): v for k, v in sources.items()}
                unknown = sorted(set(given) - {"particle", "position", "direction", "energy", "time", "length"})
                if unknown:
                    raise TypeError(f"sources: unknown keys {unknown} (particle or type, position, direction, energy, time, length)")
            elif _is_path(sources):
                given = {"input": sources}
            elif isinstance(sources, str):
                given = {"f2k": sources}
            else:
                raise TypeError("sources: an f2k path, f2k text or a dict of arrays")
            twice = sorted(k for k in given if kw[k] is not None)
            if twice:
                raise TypeError(f"propagate() got {twice[0]} twice: in sources and as {twice[0]}=")
            kw.update(given)
        cb, close = _progress.callback(progress, None, "propagating")
        try:
            cols, meta, device_used, photons, seconds = self._d.propagate(
                None if kw["input"] is None else os.fspath(kw["input"]), kw["f2k"],
                None if kw["steps"] is None else os.fspath(kw["steps"]), _particles(kw["particle"]),
                _rows("position", kw["position"], 3), _rows("direction", kw["direction"], 2),
                _column("energy", kw["energy"]), _column("time", kw["time"]), _column("length", kw["length"]),
                seed, max_photons, None if output is None else os.fspath(output),
                None if hit_lines is None else os.fspath(hit_lines), force, device, threads, precise, cb,
                jobs, job_index)
        finally:
            close()
        _log.info("propagated %d photons on %s in %.2f s", photons, device_used, seconds)
        return _arrow.table(cols, dict(meta))


def propagate(sources: Union[None, PathLike, str, Mapping[str, Any]] = None, ice: Optional[PathLike] = None,
              geometry: Optional[PathLike] = None, oversize: Optional[int] = None, sensors: Optional[PathLike] = None,
              *, input: Optional[PathLike] = None, f2k: Optional[str] = None, steps: Optional[PathLike] = None,
              particle: Union[None, _Particle, Sequence[_Particle]] = None, position: Optional[npt.ArrayLike] = None,
              direction: Optional[npt.ArrayLike] = None, energy: Optional[npt.ArrayLike] = None,
              time: Optional[npt.ArrayLike] = None, length: Optional[npt.ArrayLike] = None, seed: int = 1,
              max_photons: Optional[int] = None, output: Optional[PathLike] = None,
              hit_lines: Optional[PathLike] = None, force: bool = False, device: str = "auto",
              threads: Optional[int] = None, precise: bool = False, progress: Progress = None,
              jobs: int = 1, job_index: int = 0) -> pa.Table:
    """One-shot ``Detector(ice, geometry, oversize, sensors).propagate(sources, ...)``: the
    keywords after ``sensors`` as :meth:`Detector.propagate`'s."""
    return Detector(ice, geometry, oversize, sensors).propagate(
        sources, input=input, f2k=f2k, steps=steps, particle=particle, position=position, direction=direction,
        energy=energy, time=time, length=length, seed=seed, max_photons=max_photons, output=output,
        hit_lines=hit_lines, force=force, device=device, threads=threads, precise=precise, progress=progress,
        jobs=jobs, job_index=job_index)


def merge(paths: Sequence[PathLike], output: Optional[PathLike] = None, force: bool = False) -> pa.Table:
    """``warpdrive merge`` of photon jobs: the Parquet files of one run split with ``jobs=``/
    ``job_index=`` (each written with ``output=``) as the unsplit run's hit table, written to
    ``output`` when given. Missing, repeated or foreign jobs raise ``ValueError`` naming them.

    >>> for i in range(4):  # doctest: +SKIP
    ...     photon.propagate(energy=1e4, jobs=4, job_index=i, output=f"job{i}.parquet")
    >>> hits = photon.merge([f"job{i}.parquet" for i in range(4)])  # doctest: +SKIP
    """
    cols, meta = _warpdrive.photon_merge([os.fspath(p) for p in paths],
                                         None if output is None else os.fspath(output), force)
    return _arrow.table(cols, dict(meta))


class PpcRun:
    """What ``warpdrive ppc`` wrote: ``stdout`` (the f2k text with HIT lines, the ice table, …)
    and ``log`` (its stderr: tables, ppm, photon and hit counts). Picklable (two strings)."""

    def __init__(self, stdout: str, log: str) -> None:
        self.stdout = stdout
        self.log = log

    def hits(self) -> pa.Table:
        """The HIT lines as a ``pyarrow.Table``: ``block`` (ordinal of the ``EM … EE`` block from 0,
        -1 for flasher hits), ``string``, ``om``, ``time`` [ns], ``wavelength`` [nm],
        ``photon_theta``/``photon_phi`` and ``impact_theta``/``impact_phi`` [rad] as PPC prints them."""
        return _arrow.table(_warpdrive.ppc_hits(self.stdout), {"warpdrive.command": "python: warpdrive.photon.ppc"})

    def __repr__(self) -> str:
        lines = self.stdout.splitlines()
        hits = sum(1 for line in lines if line.startswith("HIT "))
        blocks = sum(1 for line in lines if line.startswith("EM "))
        return f"<warpdrive.photon.PpcRun {len(lines)} stdout lines: {blocks} EM blocks, {hits} HIT lines>"


def ppc(*args: Any, stdin: Union[str, bytes, PathLike] = "", env: Optional[Mapping[str, str]] = None,
        threads: Optional[int] = None, progress: Progress = None) -> PpcRun:
    """PPC's command line, as ``warpdrive ppc ARGS`` (docs/photon.md, "PPC mode").

    ``args``: PPC's arguments (``0`` to propagate the f2k events of ``stdin`` on GPU 0 or the
    CPU; ``str, om, num, gpu`` for a flasher; none to list the tables); ``stdin``: f2k text or
    a path-like naming an f2k file; ``env``: PPC's environment variables (``PPCTABLESDIR``,
    ``WFLA``, ``FLDR``, ``FWID``, ``WARPDRIVE_SEED``, ``WARPDRIVE_DEVICE``, …; None: this
    process's ``os.environ``); ``threads``: CPU worker threads (None: all cores); ``progress``
    as :meth:`Detector.propagate`'s. Ctrl-C stops a propagation within about a second
    (``KeyboardInterrupt``). Returns a :class:`PpcRun`.

    >>> r = ppc(0, stdin=open("event.f2k").read(), env={"PPCTABLESDIR": ice})   # doctest: +SKIP
    >>> r.hits().to_pandas().groupby(["string", "om"]).size()   # needs warpdrive[pandas]; doctest: +SKIP
    """
    path = os.fspath(stdin) if isinstance(stdin, os.PathLike) else None
    data = b"" if isinstance(stdin, os.PathLike) else stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    env = dict(os.environ if env is None else env)
    cb, close = _progress.callback(progress, None, "propagating")
    try:
        out, log = _warpdrive.ppc_run([str(a) for a in args], {str(k): str(v) for k, v in env.items()}, data, path,
                                      threads, cb)
    finally:
        close()
    return PpcRun(out, log)


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)


#: Bin edges as ``warpdrive photon tabulate`` takes them: ``"LO:HI:N"`` (N equal bins), a
#: comma-separated list, or a sequence of edges.
_Edges = Union[str, Sequence[float]]


def _edges(v: Optional[_Edges]) -> Optional[str]:
    if v is None or isinstance(v, str):
        return v
    return ",".join(repr(float(x)) for x in v)


def _list(v: Union[float, Sequence[float]]) -> list[float]:
    return [float(v)] if isinstance(v, (int, float)) else [float(x) for x in v]


def tabulate(output: PathLike, ice: Optional[PathLike] = None, *, source: str = "cascade",
             depth: Union[float, Sequence[float]] = 2000.0, zenith: Union[float, Sequence[float]] = 0.0,
             azimuth: float = 0.0, energy: float = 1000.0, length: float = 1.0, photons: int = 100_000,
             radial_bins: _Edges = "0:300:30", azimuth_bins: _Edges = "0:180:9",
             polar_bins: Optional[_Edges] = None, delay_bins: Optional[_Edges] = "-10:2000:40",
             margin: float = 0.0, tilt: bool = True, anisotropy: bool = True, birefringence: bool = True,
             estimator: Optional[str] = None, sample_step: Union[None, float, str] = None,
             seed: int = 1, force: bool = False, device: str = "auto", threads: Optional[int] = None,
             progress: Progress = None) -> dict[str, Any]:
    """``warpdrive photon tabulate`` (docs/spline.md, "Making tables"): photon tables of one
    source per depth and zenith through the ice ``ice`` (None: the built-in homogeneous ice),
    written into the directory ``output`` — ``amplitude.parquet``, ``time.parquet`` (unless
    ``delay_bins=None``), ``summary.json``, ``run.json``: the same bytes as the CLI's data files
    for the same options. The output is checked before the work (an existing one is refused
    unless ``force``) and appears whole or not at all.

    ``source``: ``"cascade"`` or ``"muon-segment"``; ``depth`` [m below the surface] and
    ``zenith`` [deg]: a value or an increasing sequence (stacked along ``depth``/``zenith``
    columns); ``azimuth`` [deg]; ``energy`` [GeV]; ``length`` [m, muon segment]; ``photons`` per
    source; the edges ``radial_bins``, ``azimuth_bins``, ``polar_bins`` (None: cos θ -1:1:20 or
    the muon's Δz default), ``delay_bins`` as ``"LO:HI:N"``, a comma-separated list or a
    sequence; ``margin`` [m]; ``tilt``, ``anisotropy``, ``birefringence``: switch those off;
    ``estimator``: ``"exact"`` or ``"sampled"`` (None: the device's default, exact on the CPU,
    sampled on GPUs), ``sample_step``: the sampled estimator's step, ``"auto"`` (the default:
    each segment's step as large as the cells it crosses allow in its direction, from 1 m up to
    a whole bin), ``"auto:MIN"`` (the same from MIN metres), a fixed step [m] or
    ``"segment"`` (docs/spline.md "Estimators"); ``seed``; ``device``/``threads``/``progress`` as elsewhere (``device="cuda"`` tabulates on the
    GPU: docs/spline.md "On the GPU"). Returns ``summary.json`` as a dict. Errors name the option with
    Python's spelling (``ValueError: radial_bins …``).

    >>> s = photon.tabulate("tables", ice, depth=[1900, 2050, 2300], photons=40_000,
    ...                     delay_bins=None)  # doctest: +SKIP
    >>> s["photons_propagated"]  # doctest: +SKIP
    120000
    """
    cb, close = _progress.callback(progress, None, "tabulating")
    try:
        summary, propagated, tabulated, absorbed, left, segments, seconds, used = _warpdrive.photon_tabulate(
            os.fspath(output), None if ice is None else os.fspath(ice), source, _list(depth), _list(zenith),
            float(azimuth), float(energy), float(length), photons, _edges(radial_bins) or "", _edges(azimuth_bins) or "",
            _edges(polar_bins), _edges(delay_bins), float(margin), seed, tilt,
            anisotropy, birefringence, estimator, None if sample_step is None else str(sample_step),
            force, device, threads, cb, "python: warpdrive.photon.tabulate")
    finally:
        close()
    _log.info("tabulated %d of %d photons (%d absorbed, %d left the table, %d segments) in %.2f s on %d threads",
              tabulated, propagated, absorbed, left, segments, seconds, used)
    result: dict[str, Any] = json.loads(summary)
    return result
