"""One instance of every public class of the package, and what a user sees of each.

Used by test_api.py (reprs, documented attributes) and test_pickle.py (the same view of an
object before pickling, in a fresh interpreter after unpickling, and back again). `probe` runs
in the spawned worker too, so this module is importable on its own (no fixtures).
"""

import os
import pathlib
import struct

import numpy as np
import pyarrow as pa

# A FODO line with a watch point (records kept in memory) and an aperture loss.
LATTICE = """! FODO with a watch point
Q1: QUAD, L=0.2, K1=1.5
Q2: Q1, K1=-1.5
D: DRIF, L=0.8
W1: WATCH, FILENAME="%s-w1.sdds"
CELL: LINE=(Q1, D, Q2, D)
ALL: LINE=(2*CELL, W1)
"""
TESTEM3_GDML = pathlib.Path(__file__).resolve().parents[3] / "crates" / "em" / "tests" / "data" / "testem3.gdml"
CASCADE = (10.0, 20.0, -300.0, 60.0, 30.0, 0.0)
PPC_STDOUT = "EM 1 1 0 0 0 0\nHIT 36 30 1234.5 400.0 0.1 0.2 0.3 0.4\nHIT 36 31 1300.0 410.0 0.1 0.2 0.3 0.4\nEE\n"


def build(data):
    """name -> one instance of each public class (small runs on the CPU, one thread)."""
    from warpdrive import beam, distributed, em, photon, sky, spline

    cpu = dict(device="cpu", threads=1)
    lattice = beam.Lattice(text=LATTICE, name="fodo")
    particles = beam.Particles.gaussian(500, particle="proton", momentum=2000.0, seed=2)
    event = spline.simulate(5000, cascade=CASCADE, seed=3, **cpu)
    return {
        "sky.Autocorr": sky.autocorr(synthetic_events=2000, trials=16, bins=4, bin_width=0.5, **cpu),
        "sky.Injection": sky.inject(synthetic_events=2000, sources=[2, 4], events_per_source=3, trials=8, bins=4,
                                    bin_width=0.5, **cpu),
        "spline.Table": spline.Table(data / "splines" / "nuflux" / "H3a_SIBYLL23C_conv_numu.fits"),
        "spline.Event": event,
        "spline.Unfolding": spline.unfold(event, cascade=CASCADE, **cpu),
        "em.EmResult": em.run(tracks=2000, tally_bins=64, **cpu),
        "em.ShowerResult": em.testem3(events=2, **cpu),
        "em.DetectorResult": em.detector(TESTEM3_GDML, energy_mev=50, events=2, position=(0, 0, -10),
                                         sensitive=["ArgonV"], **cpu),
        "beam.Lattice": lattice,
        "beam.Particles": particles,
        "beam.Tracked": lattice.track(particles, passes=3, aperture=2e-3, **cpu),
        "photon.Detector": photon.Detector(),
        "photon.PpcRun": photon.PpcRun(PPC_STDOUT, "ppc log"),
        "distributed.Request": distributed.Request(sky.autocorr, dict(synthetic_events=2000, trials=16, **cpu),
                                                   output="autocorr-merged"),
    }


def fingerprint(v):
    """A comparable view of a value: arrays and tables by their bytes, floats by their bits."""
    if isinstance(v, np.ndarray):
        return ("ndarray", v.dtype.str, v.shape, np.ascontiguousarray(v).tobytes())
    if isinstance(v, pa.Table):
        cols = [(n, fingerprint(v[n].to_numpy())) for n in v.column_names]
        return ("table", v.schema.to_string(show_schema_metadata=False), v.schema.metadata, cols)
    if isinstance(v, float):
        return ("float", struct.pack("<d", v))
    if isinstance(v, dict):
        return {k: fingerprint(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [fingerprint(x) for x in v])
    return v


def files_under(d):
    """{relative path: bytes} of every file below `d`."""
    d = pathlib.Path(d)
    if d.is_file():
        return {d.name: d.read_bytes()}
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _autocorr(r, out):
    r.to_parquet(out / "autocorr", plot=True)
    last = len(r.edges_deg) - 1
    return {"distribution": r.background_distribution("all", last), "distribution 1": r.background_distribution(1, 0)}


def _injection(r, out):
    r.to_parquet(out / "inject", plot=True)
    return {}


def _table(t, out):
    pts = np.column_stack([np.linspace(0, 10, 7), np.full(7, 0.5)])
    return {"eval": t.eval(pts, device="cpu"), "fits": t.to_fits(), "knots": t.knots, "coefficients": t.coefficients,
            "extents": t.extents, "order": t.order, "path": t.path}


def _event(e, out):
    e.to_parquet(out / "event.parquet")
    return {"table": e.table()}


def _unfolding(u, out):
    u.to_dir(out / "unfold", plot=True)
    return {"table": u.table()}


def _em(r, out):
    r.to_parquet(out / "em", plot=True)
    return {"beyond": [r.energy_beyond(z) for z in (0.0, 1.5, 10.0)]}


def _shower(r, out):
    r.to_parquet(out / "shower", plot=True)
    return {}


def _detector_result(r, out):
    r.to_parquet(out / "detector")
    return {}


def _track_with(lattice, particles):
    """The final table of a short run (what a worker would compute with what it received)."""
    return lattice.track(particles, passes=2, device="cpu", threads=1).table


def _lattice(lat, out):
    from warpdrive import beam

    p = beam.Particles.gaussian(200, seed=5)
    return {"line": lat.line, "length": lat.length, "n_elements": lat.n_elements, "path": lat.path,
            "tracked": _track_with(lat, p)}


def _particles(p, out):
    from warpdrive import beam

    return {"elegant": p.coords("elegant"), "warpdrive": p.coords("warpdrive"), "arrow": p.to_arrow(), "len": len(p),
            "species": (p.particle, p.mass, p.particle_charge, p.p_central, p.description),
            "tracked": _track_with(beam.Lattice(text=LATTICE), p)}


def _detector(d, out):
    hits = d.propagate(energy=1.0, position=[0, 0, -400], seed=4, device="cpu", threads=1)
    return {"description": d.description, "doms": d.doms, "strings": d.strings, "tilt": d.tilt, "ice": d.ice,
            "geometry": d.geometry, "hits": hits}


def _ppc(r, out):
    return {"hits": r.hits()}


PROBES = {"Autocorr": _autocorr, "Injection": _injection, "Table": _table, "Event": _event, "Unfolding": _unfolding, "EmResult": _em,
          "ShowerResult": _shower, "Lattice": _lattice, "Particles": _particles, "Detector": _detector,
          "PpcRun": _ppc, "DetectorResult": _detector_result}


def probe(obj, out):
    """What a user sees of `obj`: its repr, its public attributes, what its methods return and
    the bytes of the files it writes (below `out`)."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    seen = {"type": type(obj).__qualname__, "repr": repr(obj)}
    seen.update({k: fingerprint(v) for k, v in sorted(vars(obj).items()) if not k.startswith("_")})
    extra = PROBES.get(type(obj).__name__)
    if extra is not None:
        seen.update({k: fingerprint(v) for k, v in extra(obj, out).items()})
    seen["files"] = files_under(out)
    return seen


def probe_in_worker(obj, out):
    """In a spawned interpreter: the probe of what arrived, and the object to send back."""
    return os.getpid(), probe(obj, out), obj
