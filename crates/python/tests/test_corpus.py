"""The CLI's bad-input corpus (``tests/bad-input/*.toml``) through the Python API (issue #28).

Every case of the corpus is a command line that must fail cleanly. Here each one is translated
into the public Python call that does the same (``--foo-bar V`` becomes ``foo_bar=V`` with the
value as Python takes it, ``-o`` the call's ``output=`` or the result's ``to_parquet``), run in a
fresh directory holding the case's files, and must raise the exception class its error kind maps
to (``ValueError``, ``FileNotFoundError``, ``FileExistsError``, ``MemoryError``, ``OSError``)
with the CLI's message, every ``--option-name`` spelled ``option_name`` (a flag such as
``--force`` as ``force=True``), and leave every file as it was. The engine is the one place of
validation (ARCHITECTURE.md, "one engine, thin skins"), so a difference is a bug in a binding or
a check that lives in one front end only.

Cases without a Python equivalent are listed in ``NO_PYTHON_EQUIVALENT`` with the reason; they
are reported as skipped (``pytest -rs``), counted by ``test_corpus_coverage``, and a listed name
that is no longer in the corpus fails that test, so the list stays current.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import pytest

from warpdrive import beam, em, photon, sky, spline

if sys.version_info >= (3, 11):
    import tomllib
else:  # the `test` extra installs tomli on Python 3.10
    import tomli as tomllib

CORPUS = pathlib.Path(__file__).resolve().parents[3] / "tests" / "bad-input"

#: Boolean options of the CLI (no value); in Python they are ``name=True``.
FLAGS = {"force", "precise", "sdds", "gradient", "standard-layout", "amplitude-only", "launch-per-element", "no-plot", "partial",
         "no-time", "no-tilt", "no-anisotropy", "no-birefringence"}

#: The least share of the corpus that must run through Python.
MIN_SHARE = 0.8

#: (file, case name) → why the case has no Python equivalent.
_CLAP = "a command-line syntax error of clap (exit 2): Python's call syntax has no such text"
_EVAL = ("spline eval reads its points from a file and writes a file; Python's Table.eval takes an array of "
         "points (read with pyarrow or NumPy) and returns the values: no points file, no output file")
_FIT = ("spline fit reads a histogram file (Parquet, CSV or .npz) and writes a FITS file; Python's spline.fit takes "
        "arrays (z, w, centers, knots) and returns a Table: no histogram file, no knots syntax, no output file "
        "(its own refusals are tested in test_spline.py)")
_BENCH = "bench is a CLI command (its --json report); Python times its calls with its own tools"
_SUBMIT = ("submit writes batch files for the CLI; Python's equivalent is warpdrive.distributed (its refusals: "
           "test_distributed.py)")
NO_PYTHON_EQUIVALENT: dict[tuple[str, str], str] = {
    ("submit", "slurm of a command that cannot be split"): _SUBMIT,
    ("submit", "slurm without --jobs"): _SUBMIT,
    ("submit", "slurm with --jobs 0"): _SUBMIT,
    ("submit", "slurm with a --job-index"): _SUBMIT,
    ("submit", "slurm without -o"): _SUBMIT,
    ("submit", "slurm of a command that does not parse"): _SUBMIT,
    ("submit", "slurm over an existing output"): _SUBMIT,
    ("submit", "slurm into a work directory that is not one"): _SUBMIT,
    ("submit", "slurm with an sbatch option that is not one"): _SUBMIT,
    ("submit", "htcondor with a submit line that is not one"): _SUBMIT,
    ("submit", "submit without a command"): _SUBMIT,
    ("cli", "merge -o job0 job0 job1"): "the output is written after the merge in Python (Autocorr.to_parquet), "
                                        "and the case's job directories are not results",
    ("cli", "merge without jobs"): _CLAP,
    ("cli", "bench photon --json over its ice directory"): _BENCH,
    ("cli", "bench beam with zero threads"): _BENCH,
    ("cli", "bench sky with zero threads"): _BENCH,
    ("cli", "bench em with more threads than a run may have"): _BENCH,
    ("cli", "bench em unknown problem"): _BENCH,
    ("cli", "bench em with zero tracks"): _BENCH,
    ("cli", "bench spline with zero CPU points"): _BENCH,
    ("cli", "bench spline with more CPU points than memory"): _BENCH,
    ("cli", "bench beam with zero passes"): _BENCH,
    ("cli", "bench beam with more particles than memory"): _BENCH,
    ("cli", "bench photon unknown workload"): _BENCH,
    ("cli", "bench photon configuration with a bad number"): _BENCH,
    ("cli", "bench photon --tabulate at a negative depth"): _BENCH,
    ("cli", "bench photon --tabulate at depth NaN"): _BENCH,
    ("cli", "bench photon --tabulate below the ice model"): _BENCH,
    ("cli", "bench report over an existing file"): _BENCH,
    ("em", "bench testem3 with 1e12 GPU events"): _BENCH,
    ("cli", "gpu-check unknown domain"): "gpu-check is a CLI command",
    ("cli", "unknown command"): "a command name: Python has no commands (an unknown attribute is Python's own error)",
    ("cli", "--threads not a number"): _CLAP + " (threads='many' is a TypeError, as for any int argument)",
    ("photon", "energy not a number"): _CLAP + " (energy='ten' is NumPy's 'could not convert string to float')",
    ("spline", "eval -o P --points P"): _EVAL,
    ("spline", "eval -o table.fits"): _EVAL,
    ("spline", "eval with a missing points file"): _EVAL,
    ("spline", "eval with too few columns"): _EVAL,
    ("spline", "eval with text values"): _EVAL,
    ("spline", "eval with an unknown column"): _EVAL,
    ("spline", "eval with an empty points file"): _EVAL,
    ("spline", "eval with a corrupt Parquet points file"): _EVAL,
    ("spline", "eval of a 1-D table with a NaN point (values are NaN, not a crash) into an existing output"): _EVAL,
    ("spline", "eval with points from /dev/zero"): _EVAL,
    ("spline", "eval of a directory"): _EVAL,
    ("spline", "eval with mismatched --columns"): _EVAL,
    # The CLI checks its output before reading any input; Python writes the output from the
    # result (Unfolding.to_dir), so the unfold runs first, and this case's event is a stand-in
    # ("x") that the CLI never reads.
    ("spline", "unfold output is the event"): "the output is written after the unfold in Python "
                                              "(Unfolding.to_dir), and the case's event file is not an event",
    ("spline", "fit: a negative weight"): _FIT,
    ("spline", "fit: a NaN value"): _FIT,
    ("spline", "fit: knots that do not cover the data"): _FIT,
    ("spline", "fit: order above 5"): _FIT,
    ("spline", "fit: a knot span without data and without smoothing (singular)"): _FIT,
    ("spline", "fit: penalty order above the degree"): _FIT,
    ("spline", "fit: negative smoothing"): _FIT,
    ("spline", "fit: knots for fewer axes than the histogram has"): _FIT,
    ("spline", "fit: a malformed knots option"): _FIT,
    ("spline", "fit: a monodim beyond the histogram's axes"): _FIT,
    ("spline", "fit: no weight column"): _FIT,
    ("spline", "fit: a bin given twice"): _FIT,
    ("spline", "fit: a truncated .npz"): _FIT,
    ("spline", "fit -o HIST"): _FIT,
}

#: (file, case name) → (class, message) where Python's own text is the right one (each says why).
PYTHON_MESSAGE: dict[tuple[str, str], tuple[type, str]] = {
    # The CLI's message comes from its argument parser (clap: "invalid value ... for '--trials
    # <TRIALS>'"). A Python int of any size is a valid int: its range is the library's to check
    # (issue #28: ValueError for out-of-range ints, never OverflowError).
    ("sky", "--trials beyond u64"): (ValueError, "trials 99999999999999999999: at most 18446744073709551615"),
    # Python takes positions as an (N, 3) array (one position flat) and the binding turns it into
    # the engine's flat list, naming the shape when a row is not x, y, z: a flat list of 6 numbers
    # would otherwise pass as two positions, a guess NumPy users do not expect. The CLI's comma
    # list has no shape, so the engine counts its numbers ("--position has 2 numbers").
    ("photon", "position with two numbers"): (ValueError, "position must be (N, 3) [m], got shape [1, 2]"),
    # `warpdrive merge` first asks the first path what kind of job wrote it (photon, em, spline and
    # sky jobs all merge there), so it names the missing path itself; `sky.merge` knows its jobs
    # are sky directories and names the file it reads in one.
    ("cli", "merge of missing directories"): (FileNotFoundError, "a/counts.parquet: cannot read: No such file or directory"),
}


@dataclass
class Case:
    file: str
    name: str
    args: list[str]
    exit: int
    stderr: str
    files: dict[str, str] = field(default_factory=dict)
    stdin: Optional[str] = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.file, self.name)


def corpus() -> list[Case]:
    cases = []
    for path in sorted(CORPUS.glob("*.toml")):
        with open(path, "rb") as f:
            for c in tomllib.load(f)["case"]:
                cases.append(Case(file=path.stem, **c))
    return cases


CASES = corpus()


# ---- the command line, taken apart ---------------------------------------------------------------

#: Subcommand paths, longest first.
COMMANDS = [("sky", "autocorr"), ("sky", "inject"), ("em", "testem3"), ("em", "calorimeter"), ("em", "run"),
            ("em", "detector"), ("spline", "info"),
            ("spline", "eval"),
            ("spline", "simulate"), ("spline", "unfold"), ("beam", "track"), ("beam", "twiss"), ("beam", "run"),
            ("photon", "tabulate"),
            ("photon",), ("ppc",), ("em",),
            ("merge",)]


class Options:
    """The options of one command line; every one must be taken by the translation (`take`), so
    an option the table does not know fails the case instead of being dropped."""

    def __init__(self, words: list[str]) -> None:
        self.values: dict[str, Any] = {}
        self.positional: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            if w == "-o":
                name, value, i = "output", words[i + 1], i + 2
            elif w.startswith("--"):
                name, eq, value = w[2:].partition("=")
                if eq:
                    i += 1
                elif name in FLAGS:
                    value, i = True, i + 1
                else:
                    value, i = words[i + 1], i + 2
            else:
                self.positional.append(w)
                i += 1
                continue
            self.values[name] = value
        self.taken: set[str] = set()

    def take(self, name: str, convert: Callable[[Any], Any] = str, default: Any = None) -> Any:
        self.taken.add(name)
        if name not in self.values:
            return default
        v = self.values[name]
        return v if v is True else convert(v)

    def untaken(self) -> list[str]:
        return sorted(set(self.values) - self.taken)


def number(s: str) -> Any:
    """A number as a Python user writes it: an int when it is one, else a float."""
    try:
        return int(s)
    except ValueError:
        return float(s)


def floats(s: str) -> list[float]:
    return [float(x) for x in s.split(",")]


def ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",")]


def scalar_or_list(s: str) -> Any:
    """One value for all sources (a number) or one per source (a list)."""
    v = floats(s)
    return v[0] if len(v) == 1 else v


def rows(width: int) -> Callable[[str], Any]:
    """Comma-separated numbers as rows of `width` (one row flat), as Python takes positions and
    directions; a count that is not a multiple of `width` stays the flat list the user typed."""

    def convert(s: str) -> Any:
        v = floats(s)
        if len(v) <= width or len(v) % width:
            return v
        return [v[k:k + width] for k in range(0, len(v), width)]

    return convert


def particles(s: str) -> Any:
    """Particle names and PDG codes (ints), one or a list."""
    v = [int(p) if re.fullmatch(r"-?\d+", p) else p for p in s.split(",")]
    return v[0] if len(v) == 1 else v


def common(o: Options, precise: bool = True) -> dict[str, Any]:
    kw = {"device": o.take("device", default="auto"), "threads": o.take("threads", int)}
    if precise:
        kw["precise"] = o.take("precise", default=False)
    return kw


# ---- per command: the CLI's options → the Python call ----------------------------------------------

def tabulate_call(o: Options) -> Callable[[], Any]:
    kw = dict(source=o.take("source", default="cascade"), depth=o.take("depth", floats, [2000.0]),
              zenith=o.take("zenith", floats, [0.0]), azimuth=o.take("azimuth", float, 0.0),
              energy=o.take("energy", float, 1000.0), length=o.take("length", float, 1.0),
              photons=o.take("photons", int, 100_000), radial_bins=o.take("radial-bins", default="0:300:30"),
              azimuth_bins=o.take("azimuth-bins", default="0:180:9"), polar_bins=o.take("polar-bins"),
              delay_bins=None if o.take("no-time") else o.take("delay-bins", default="-10:2000:40"),
              margin=o.take("margin", float, 0.0), tilt=not o.take("no-tilt"),
              anisotropy=not o.take("no-anisotropy"), birefringence=not o.take("no-birefringence"),
              estimator=o.take("estimator"), sample_step=o.take("sample-step"),
              seed=o.take("seed", int, 1), force=o.take("force", default=False), **common(o, precise=False))
    output, ice = o.take("output", default="photon-tables"), o.take("ice")
    return lambda: photon.tabulate(output, ice, **kw)


def photon_call(o: Options) -> Callable[[], Any]:
    detector = dict(ice=o.take("ice"), geometry=o.take("geometry"), oversize=o.take("oversize", int),
                    sensors=o.take("sensors"))
    kw = dict(input=o.take("input"), steps=o.take("steps"), particle=o.take("particle", particles),
              position=o.take("position", rows(3)), direction=o.take("direction", rows(2)),
              energy=o.take("energy", scalar_or_list), time=o.take("time", scalar_or_list),
              length=o.take("length", scalar_or_list), seed=o.take("seed", int, 1),
              max_photons=o.take("max-photons", int), output=o.take("output", default="photon-hits.parquet"),
              hit_lines=o.take("hit-lines"), force=o.take("force", default=False), **common(o))
    return lambda: photon.propagate(**detector, **kw)


def ppc_call(o: Options, case: Case) -> Callable[[], Any]:
    env = dict(os.environ, **expand_env(case))
    return lambda: photon.ppc(*o.positional, stdin=case.stdin or "", env=env)


def sky_sample(o: Options, trials: int) -> dict[str, Any]:
    """The options `sky autocorr` and `sky inject` share (`SampleArgs`, trials, jobs, device)."""
    files = o.positional or None
    return dict(files=files, synthetic_events=o.take("synthetic-events", int, None if files else 10_000),
                hemisphere=o.take("hemisphere", default="all"), dec_min=o.take("dec-min", float),
                dec_max=o.take("dec-max", float), cuts=o.take("cuts", lambda s: s.split(",")),
                bins=o.take("bins", int, 20), bin_width=o.take("bin-width", float, 0.25), edges=o.take("edges", floats),
                trials=o.take("trials", int, trials), seed=o.take("seed", int, 1), jobs=o.take("jobs", int, 1),
                job_index=o.take("job-index", int, 0), ra_column=o.take("ra-column"),
                dec_column=o.take("dec-column"), energy_column=o.take("energy-column"),
                ra_grid=o.take("ra-grid", ra_grid, "auto"), **common(o, False))


def sky_call(o: Options) -> Callable[[], Any]:
    kw = sky_sample(o, 1000)
    out, force, plot = o.take("output", default="autocorr"), o.take("force", default=False), not o.take("no-plot")
    return lambda: sky.autocorr(**kw).to_parquet(out, force=force, plot=plot)


def inject_call(o: Options) -> Callable[[], Any]:
    kw = sky_sample(o, 100)
    kw.update(sources=o.take("sources", ints, [10]), events_per_source=o.take("events-per-source", int, 5),
              spectrum=o.take("spectrum", float, -2.0), declination=o.take("declination"),
              energy_threshold=o.take("energy-threshold", default="top:0.5"), ang_err_column=o.take("ang-err-column"))
    out, force, plot = o.take("output", default="inject"), o.take("force", default=False), not o.take("no-plot")
    return lambda: sky.inject(**kw).to_parquet(out, force=force, plot=plot)


def merge_call(o: Options) -> Callable[[], Any]:
    jobs, partial = o.positional, o.take("partial", default=False)
    out, force, plot = o.take("output"), o.take("force", default=False), not o.take("no-plot")
    return lambda: sky.merge(jobs, partial=partial).to_parquet(out, force=force, plot=plot)


def ra_grid(s: str) -> Any:
    return s if s in ("auto", "off") else number(s)


def em_call(o: Options) -> Callable[[], Any]:
    kw = dict(energy=o.take("energy", float, 100.0), tracks=o.take("tracks", int, 1 << 20),
              seed=o.take("seed", int, 12345), material=o.take("material", default="G4_Al"),
              tally_front=o.take("tally-front", float, 0.0), tally_width=o.take("tally-width", float, 1.0),
              tally_bins=o.take("tally-bins", int, 2048), slots=o.take("slots", int),
              stack_capacity=o.take("stack-capacity", int), compare=o.take("compare"), **common(o, False))
    out, force = o.take("output", default="em-out"), o.take("force", default=False)
    return lambda: em.run(**kw).to_parquet(out, force=force, plot=True)


def shower_call(o: Options, calorimeter: bool) -> Callable[[], Any]:
    kw = dict(primary=o.take("primary", default="e-"), energy=o.take("energy", float, 1000.0),
              events=o.take("events", int, 1000), seed=o.take("seed", int, 12345), cut_mm=o.take("cut-mm", float, 1.0),
              **common(o))
    out, force = o.take("output", default="em-shower"), o.take("force", default=False)
    if calorimeter:
        (path,) = o.positional
        return lambda: em.calorimeter(path, **kw).to_parquet(out, force=force, plot=True)
    return lambda: em.testem3(**kw).to_parquet(out, force=force, plot=True)


def detector_call(o: Options) -> Callable[[], Any]:
    """`em run GDML` (alias `em detector`) → `em.run(gdml=…)`."""
    (path,) = o.positional
    kw = dict(primary=o.take("primary", default="e-"), energy_mev=o.take("energy", float, 1000.0),
              position=o.take("position", floats, [0.0, 0.0, 0.0]), direction=o.take("direction", floats, [0.0, 0.0, 1.0]),
              events=o.take("events", int, 1000), seed=o.take("seed", int, 12345), cut_mm=o.take("cut-mm", float, 1.0),
              field=o.take("field", floats, [0.0, 0.0, 0.0]), field_map=o.take("field-map"),
              sensitive=o.take("sensitive", lambda v: v.split(","), []), delta_chord=o.take("delta-chord", float),
              delta_intersection=o.take("delta-intersection", float), field_epsilon=o.take("field-epsilon", float),
              plot=o.take("plot", default=False), **common(o, False))
    out, force = o.take("output", default="em-detector"), o.take("force", default=False)
    plot = kw.pop("plot")
    if plot:
        return lambda: em.run(gdml=path, **kw).to_parquet(out, force=force, plot=True)
    return lambda: em.run(gdml=path, out_dir=out, force=force, **kw)


def model(o: Options) -> dict[str, Any]:
    return dict(cascade=o.take("cascade", floats), track=o.take("track", floats), spacing=o.take("spacing", float, 15.0),
                amplitude=o.take("amplitude"), timing=o.take("timing"),
                amplitude_only=o.take("amplitude-only", default=False), geometry=o.take("geometry"),
                noise_rate=o.take("noise-rate", float, 500.0))


def spline_info_call(o: Options) -> Callable[[], Any]:
    (path,) = o.positional
    return lambda: spline.Table(path)


def spline_simulate_call(o: Options) -> Callable[[], Any]:
    kw = dict(energy=o.take("energy", floats), window=o.take("window", floats, [-1000.0, 9000.0]),
              seed=o.take("seed", int, 1), event=o.take("event", int, 0), **model(o), **common(o, False))
    out, force = o.take("output", default="event.parquet"), o.take("force", default=False)
    return lambda: spline.simulate(**kw).to_parquet(out, force=force)


def spline_unfold_call(o: Options) -> Callable[[], Any]:
    event = o.take("event")
    kw = dict(solver=o.take("solver", default="newton"), regularization=o.take("regularization", float, 0.0),
              photons_per_bin=o.take("photons-per-bin", float, 5.0), tolerance=o.take("tolerance", float, 1e-9),
              max_iterations=o.take("max-iterations", int, 20000), **model(o), **common(o))
    out, force = o.take("output", default="unfold-out"), o.take("force", default=False)
    return lambda: spline.unfold(event, **kw).to_dir(out, force=force, plot=True)


def twiss_call(o: Options) -> Callable[[], Any]:
    (lattice,) = o.positional
    line = o.take("line")
    kw = dict(betx=o.take("betx", float), bety=o.take("bety", float), alfx=o.take("alfx", float, 0.0),
              alfy=o.take("alfy", float, 0.0), dx=o.take("dx", float, 0.0), dpx=o.take("dpx", float, 0.0),
              particle=o.take("particle"), p_central=o.take("p-central", float), momentum=o.take("momentum", float),
              output=o.take("output", default="twiss-out"), force=o.take("force", default=False),
              plot=not o.take("no-plot"))
    return lambda: beam.Lattice(lattice, line).twiss(**kw)


def run_call(o: Options) -> Callable[[], Any]:
    (ele,) = o.positional
    kw = dict(output=o.take("output"), force=o.take("force", default=False), sdds=o.take("sdds", default=False),
              device=o.take("device", default="auto"), threads=o.take("threads", int),
              precise=o.take("precise", default=False))
    return lambda: beam.run(ele, progress=False, **kw)


def beam_call(o: Options) -> Callable[[], Any]:
    (lattice,) = o.positional
    line = o.take("line")
    species = dict(particle=o.take("particle"), mass=o.take("mass", float), particle_charge=o.take("particle-charge", float),
                   p_central=o.take("p-central", float), momentum=o.take("momentum", float))
    path = o.take("beam")
    gaussian = dict(particles=o.take("particles", int, 100_000), beta_x=o.take("beta-x", float, 10.0),
                    alpha_x=o.take("alpha-x", float, 0.0), emit_x=o.take("emit-x", float),
                    nemit_x=o.take("nemit-x", float), beta_y=o.take("beta-y", float, 10.0),
                    alpha_y=o.take("alpha-y", float, 0.0), emit_y=o.take("emit-y", float),
                    nemit_y=o.take("nemit-y", float), sigma_s=o.take("sigma-s", float, 1e-3),
                    sigma_delta=o.take("sigma-delta", float, 1e-3), seed=o.take("seed", int, 1))
    kw = dict(passes=o.take("passes", int, 1), aperture=o.take("aperture", float), charge=o.take("charge", float, 1e-9),
              histogram=o.take("histogram", default="block-atomic"),
              launch_per_element=o.take("launch-per-element", default=False), min_blocks=o.take("min-blocks", int),
              watch=o.take("watch", default="files"), watch_every=o.take("watch-every", int, 1),
              watch_passes=o.take("watch-passes", ints), watch_particles=o.take("watch-particles", ints),
              output=o.take("output", default="beam-out"), force=o.take("force", default=False),
              plot=not o.take("no-plot"), **common(o))

    def call() -> Any:
        lat = beam.Lattice(lattice, line)
        bunch = (beam.Particles.from_file(path, **species) if path is not None
                 else beam.Particles.gaussian(**gaussian, **species))
        return lat.track(bunch, **kw)

    return call


#: Command → the translation of its options into the Python call.
TRANSLATIONS: dict[tuple[str, ...], Callable[[Options, Case], Callable[[], Any]]] = {
    ("photon",): lambda o, case: photon_call(o),
    ("photon", "tabulate"): lambda o, case: tabulate_call(o),
    ("ppc",): ppc_call,
    ("sky", "autocorr"): lambda o, case: sky_call(o),
    ("sky", "inject"): lambda o, case: inject_call(o),
    ("merge",): lambda o, case: merge_call(o),
    ("em",): lambda o, case: em_call(o),
    ("em", "testem3"): lambda o, case: shower_call(o, calorimeter=False),
    ("em", "calorimeter"): lambda o, case: shower_call(o, calorimeter=True),
    ("em", "run"): lambda o, case: detector_call(o),
    ("em", "detector"): lambda o, case: detector_call(o),
    ("spline", "info"): lambda o, case: spline_info_call(o),
    ("spline", "simulate"): lambda o, case: spline_simulate_call(o),
    ("spline", "unfold"): lambda o, case: spline_unfold_call(o),
    ("beam", "track"): lambda o, case: beam_call(o),
    ("beam", "twiss"): lambda o, case: twiss_call(o),
    ("beam", "run"): lambda o, case: run_call(o),
}


def translate(case: Case, data: pathlib.Path) -> Callable[[], Any]:
    """The Python call of a case's command line."""
    words = [a.replace("$DATA", str(data)) for a in case.args]
    command = next((c for c in COMMANDS if tuple(words[:len(c)]) == c), tuple(words[:1]))
    assert command in TRANSLATIONS, (
        f"no Python translation of `warpdrive {' '.join(command)}`: add one, or list the case in NO_PYTHON_EQUIVALENT")
    if command == ("ppc",):
        o = Options([])  # PPC's own arguments, positional
        o.positional = words[1:]
    else:
        o = Options(words[len(command):])
    call = TRANSLATIONS[command](o, case)
    assert not o.untaken(), f"no Python translation for {o.untaken()} of {' '.join(case.args)}"
    return call


# ---- what the case expects in Python ---------------------------------------------------------------

#: (file, case name) → class, where the message alone does not say what failed.
CLASS: dict[tuple[str, str], type] = {
    # The output's parent is a regular file: the output's location is at fault.
    ("photon", "geo and f2k both fine but output directory is a file"): OSError,
}


def expected_class(case: Case) -> type:
    """The exception class of the failure the case's message describes (errors.rs maps error
    kinds to these)."""
    m = case.stderr
    if case.key in CLASS:
        return CLASS[case.key]
    if "exists; pass --force" in m:
        return FileExistsError
    if "No such file or directory" in m or re.search(r"\bnot found\b", m):
        return FileNotFoundError
    if "would not fit in the memory available" in m or re.match(r"--[a-z-]+: \d+ × ", m):
        return MemoryError
    if "this file system allows" in m:
        return OSError
    return ValueError


def python_spelling(text: str) -> str:
    """The CLI's message as Python words it: `--tally-width` → `tally_width`, `--force` →
    `force=True`."""

    def word(m: re.Match) -> str:
        name = m.group(1)
        return f"{name.replace('-', '_')}=True" if name in FLAGS else name.replace("-", "_")

    return re.sub(r"--([a-z][a-z0-9-]*)", word, text)


def expand_env(case: Case) -> dict[str, str]:
    data = os.environ["WARPDRIVE_DATA"]
    return {k: v.replace("$DATA", data) for k, v in case.env.items()}


def snapshot(d: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): (b"" if p.is_dir() else p.read_bytes()) for p in sorted(d.rglob("*"))}


# ---- the tests -----------------------------------------------------------------------------------

def write_files(case: Case, d: pathlib.Path) -> None:
    for name, text in case.files.items():
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def cli_error(cli_path: str, case: Case, data: pathlib.Path, d: pathlib.Path) -> str:
    """The first `error:` line of the case's command line, run in `d` (the message in full: the
    corpus keeps only the part that matters to the CLI)."""
    write_files(case, d)
    env = dict(os.environ, WARPDRIVE_DATA=str(data), **expand_env(case))
    r = subprocess.run([cli_path, *(a.replace("$DATA", str(data)) for a in case.args)], cwd=d, env=env,
                       input=(case.stdin or "").encode(), capture_output=True, timeout=60)
    lines = r.stderr.decode(errors="replace").splitlines()
    return comparable(next((line for line in lines if line.startswith("error: ")), "")[len("error: "):], d)


def comparable(message: str, d: pathlib.Path) -> str:
    """A message without what differs between two runs of a case: the case directory's absolute
    path (a message may name it) becomes `<case>`, the memory available at the time `(…)`."""
    for path in {str(d.resolve()), str(d)}:
        message = message.replace(path, "<case>")
    return re.sub(r"the memory available \([^)]*\)", "the memory available (…)", message)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.file}: {c.name}" for c in CASES])
def test_bad_input_fails_cleanly_in_python(case: Case, data, cli_path, tmp_path_factory, tmp_path, monkeypatch):
    if case.key in NO_PYTHON_EQUIVALENT:
        pytest.skip(f"no Python equivalent for {case.file}: {case.name!r}: {NO_PYTHON_EQUIVALENT[case.key]}")
    monkeypatch.setenv("WARPDRIVE_DATA", str(data))
    for k, v in expand_env(case).items():
        monkeypatch.setenv(k, v)
    write_files(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    call = translate(case, data)
    before = snapshot(tmp_path)
    cls, text = PYTHON_MESSAGE.get(case.key) or (expected_class(case), python_spelling(case.stderr))
    try:
        call()
    except BaseException as e:  # noqa: B036 — a panic (pyo3's PanicException) is a BaseException
        got = e
    else:
        pytest.fail("no exception: the call succeeded")
    assert type(got) is cls and text in str(got), (
        f"expected {cls.__name__} containing {text!r}, got {type(got).__name__}: {got}")
    assert snapshot(tmp_path) == before, "files were created, changed or removed"
    if case.key not in PYTHON_MESSAGE:
        # The same message as the command line's, in full, parameters spelled as in Python.
        cli = python_spelling(cli_error(cli_path, case, data, tmp_path_factory.mktemp("cli")))
        mine = comparable(str(got).splitlines()[0], tmp_path)
        assert mine == cli, f"Python and the CLI word it differently:\n  python: {mine}\n  cli:    {cli}"


def test_corpus_coverage(capsys):
    names = {c.key for c in CASES}
    assert len(names) == len(CASES), "two cases of one corpus file share a name"
    stale = sorted(set(NO_PYTHON_EQUIVALENT) - names) + sorted(set(PYTHON_MESSAGE) - names) + sorted(set(CLASS) - names)
    assert not stale, f"listed cases that are no longer in the corpus: {stale}"
    run = len(CASES) - len(NO_PYTHON_EQUIVALENT)
    with capsys.disabled():
        print(f"\nbad-input corpus through Python: {run} of {len(CASES)} cases run "
              f"({run / len(CASES):.0%}), {len(NO_PYTHON_EQUIVALENT)} without a Python equivalent (pytest -rs lists them)")
    assert run >= MIN_SHARE * len(CASES), f"only {run} of {len(CASES)} cases run through Python"


# The corpus's `--trials 99999999999999999999` in every binding: an int argument of any size is
# checked by the library, never refused by the conversion with OverflowError (issue #28).
BIG = 10**20


@pytest.mark.parametrize("call, message", [
    (lambda: sky.autocorr(synthetic_events=100, device="cpu", threads=BIG), f"threads {BIG}: at most 18446744073709551615"),
    (lambda: photon.propagate(seed=BIG, device="cpu"), f"seed {BIG}: at most"),
    (lambda: photon.Detector(oversize=-BIG), f"oversize must be a non-negative integer, got {-BIG}"),
    (lambda: em.run(tracks=BIG, device="cpu"), f"tracks {BIG}: at most"),
    (lambda: em.testem3(events=BIG, device="cpu"), f"events {BIG}: at most"),
    (lambda: beam.Particles.gaussian(particles=BIG), f"particles {BIG}: at most"),
    (lambda: spline.simulate(100.0, cascade=(0,) * 6, event=BIG, device="cpu"), f"event {BIG}: at most"),
], ids=["threads", "photon seed", "oversize", "em tracks", "testem3 events", "beam particles", "spline event"])
def test_ints_beyond_64_bits_are_value_errors(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_seed_takes_every_64_bit_value():
    """`--seed 18446744073709551615` is a valid seed on the command line, and so in Python."""
    p = beam.Particles.gaussian(particles=4, seed=2**64 - 1)
    assert len(p) == 4
