"""Optical photon propagation in ice (``warpdrive photon``) and the PPC mode (``warpdrive ppc``)."""

import os

import numpy as np

from . import _arrow, _progress, _warpdrive


def sources_f2k(type, position, direction, time=None, energy=None, length=None, event=0):
    """f2k text (``TR`` lines) for arrays of sources, parsed by propagate exactly as the CLI
    parses an f2k file.

    ``type``: particle names of f2k (``e``, ``hadr``, ``amu``, ...), one per source or one for all;
    ``position``: (N, 3) [m]; ``direction``: (N, 2) f2k zenith and azimuth [degrees];
    ``time`` [ns], ``energy`` [GeV], ``length`` [m] (muon segments): (N,) or scalars.
    Numbers are written with Python's shortest round-trip ``repr``, so the values the library
    reads are the floats given.
    """
    pos = np.atleast_2d(np.asarray(position, dtype=np.float64))
    n = pos.shape[0]
    if pos.shape != (n, 3):
        raise ValueError(f"position must be (N, 3), got {pos.shape}")
    d = np.atleast_2d(np.asarray(direction, dtype=np.float64))
    if d.shape != (n, 2):
        raise ValueError(f"direction must be (N, 2) f2k zenith/azimuth in degrees, got {d.shape}")

    def col(v, name, default=None):
        if v is None:
            if default is None:
                raise ValueError(f"{name} is required")
            v = default
        a = np.broadcast_to(np.asarray(v, dtype=np.float64), (n,))
        return a

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


class Detector:
    """Ice and geometry, built and validated once (``--ice``, ``--geometry``, ``--oversize``,
    ``--sensors``).

    ``ice``: a PPC ice directory (None: built-in homogeneous ice); ``geometry``: geo-f2k or
    Prometheus ``.geo`` (None: ``<ice>/geo-f2k`` if present, else a generated 86-string detector);
    ``sensors``: a directory with multi-PMT module files (``om.conf``, ``om.map``, ``om.dirs``,
    ``om.wv_*``; None: the ice directory's, if any). Hits then carry the PMT in the ``pmt`` column.
    """

    def __init__(self, ice=None, geometry=None, oversize=None, sensors=None):
        self._d = _warpdrive.Detector(
            None if ice is None else os.fspath(ice),
            None if geometry is None else os.fspath(geometry),
            oversize,
            None if sensors is None else os.fspath(sensors),
        )

    @property
    def description(self):
        """The lines the CLI prints about the model."""
        return self._d.description

    @property
    def warnings(self):
        """Options of the model that are read but not applied (the CLI's ``warning:`` lines)."""
        return self._d.warnings

    def propagate(self, sources, seed=1, device="auto", threads=None, precise=False, max_photons=None, progress=None):
        """Propagate ``sources`` and return the hits as a ``pyarrow.Table`` with the columns of
        ``warpdrive photon``'s Parquet file (docs/photon.md) and its run metadata.

        ``sources``: a path to an f2k file (``os.PathLike``, or a ``str`` naming an existing file),
        f2k text (a ``str`` with ``TR`` lines), or a dict of arrays for :func:`sources_f2k`.
        ``progress``: None (tqdm on a terminal if installed), False, True or ``f(done, total)``.
        """
        if isinstance(sources, dict):
            text, label = sources_f2k(**sources), "<arrays>"
        elif isinstance(sources, os.PathLike) or (
            isinstance(sources, str) and "\n" not in sources and not sources.lstrip().startswith(("TR ", "EM "))
        ):
            text, label = None, os.fspath(sources)
        elif isinstance(sources, str):
            text, label = sources, "<f2k text>"
        else:
            raise TypeError("sources: an f2k path, f2k text or a dict of arrays")
        cb, close = _progress.callback(progress, None, "propagating")
        try:
            cols, photons, how = self._d.propagate_f2k(text, label, seed, device, threads, precise, max_photons, cb)
        finally:
            close()
        meta = {
            "warpdrive.version": _warpdrive.__version__,
            "warpdrive.command": f"python: warpdrive.photon.Detector.propagate(seed={seed}, device={device!r})",
            "warpdrive.seed": seed,
            "warpdrive.device": how,
            "warpdrive.ice": self._d.ice,
            "warpdrive.geometry": self._d.geometry,
            "warpdrive.input": label,
            "warpdrive.photons": photons,
        }
        return _arrow.table(cols, meta)


def propagate(sources, ice=None, geometry=None, oversize=None, sensors=None, **kw):
    """One-shot ``Detector(ice, geometry, oversize, sensors).propagate(sources, **kw)``."""
    return Detector(ice, geometry, oversize, sensors).propagate(sources, **kw)


class PpcRun:
    """What ``warpdrive ppc`` wrote: ``stdout`` (the f2k text with HIT lines, the ice table, …)
    and ``log`` (its stderr: tables, ppm, photon and hit counts)."""

    def __init__(self, stdout, log):
        self.stdout = stdout
        self.log = log

    def hits(self):
        """The HIT lines as a ``pyarrow.Table``: ``block`` (ordinal of the ``EM … EE`` block from 0,
        -1 for flasher hits), ``string``, ``om``, ``time`` [ns], ``wavelength`` [nm],
        ``photon_theta``/``photon_phi`` and ``impact_theta``/``impact_phi`` [rad] as PPC prints them."""
        return _arrow.table(_warpdrive.ppc_hits(self.stdout), {"warpdrive.command": "python: warpdrive.photon.ppc"})

    def __repr__(self):
        return f"<warpdrive.photon.PpcRun {self.stdout.count(chr(10))} stdout lines>"


def ppc(*args, stdin="", env=None, threads=None):
    """PPC's command line, as ``warpdrive ppc ARGS`` (docs/photon.md, "PPC mode").

    ``args``: PPC's arguments (``0`` to propagate the f2k events of ``stdin`` on GPU 0 or the
    CPU; ``str, om, num, gpu`` for a flasher; none to list the tables); ``stdin``: f2k text or
    a path-like naming an f2k file; ``env``: PPC's environment variables (``PPCTABLESDIR``,
    ``WFLA``, ``FLDR``, ``FWID``, ``WARPDRIVE_SEED``, ``WARPDRIVE_DEVICE``, …; None: this
    process's ``os.environ``). Returns a :class:`PpcRun`.

    >>> r = ppc(0, stdin=open("event.f2k").read(), env={"PPCTABLESDIR": ice})   # doctest: +SKIP
    >>> r.hits().to_pandas().groupby(["string", "om"]).size()                    # doctest: +SKIP
    """
    if isinstance(stdin, os.PathLike):
        with open(stdin, "rb") as f:
            data = f.read()
    else:
        data = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    env = dict(os.environ if env is None else env)
    out, log = _warpdrive.ppc_run([str(a) for a in args], {str(k): str(v) for k, v in env.items()}, data, threads)
    return PpcRun(out, log)
