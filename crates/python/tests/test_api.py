"""The public API feels native (issue #28): every module says what it exports (``__all__``, and
``dir()`` offers only that), every public name has a docstring, every computing call defaults to
``device="auto"``, every class has a repr that shows what it holds, and optional features name
the extra that installs what they need."""

import ast
import importlib
import inspect
import pathlib
import re
import sys

import pytest

from warpdrive import _warpdrive

ROOT = pathlib.Path(__file__).resolve().parents[3]
PUBLIC = ["warpdrive", "warpdrive.spline", "warpdrive.photon", "warpdrive.sky", "warpdrive.beam", "warpdrive.em",
          "warpdrive.distributed"]
PRIVATE = ["warpdrive._arrow", "warpdrive._progress", "warpdrive._types", "warpdrive._pickling"]


def modules(names):
    return [importlib.import_module(n) for n in names]


@pytest.mark.parametrize("name", PUBLIC + PRIVATE)
def test_modules_export_and_complete_only_their_public_names(name):
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list) and module.__all__
    for name in module.__all__:
        assert hasattr(module, name), f"{module.__name__}.__all__ names {name}, which it does not have"
    # What completion offers (dir) is __all__: no `spline.np`, `spline.os`, no helpers.
    assert sorted(dir(module)) == sorted(module.__all__)
    # Everything public that the module defines is exported.
    for name, obj in vars(module).items():
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if getattr(obj, "__module__", module.__name__) == module.__name__ and (inspect.isclass(obj) or inspect.isfunction(obj)):
            assert name in module.__all__, f"{module.__name__}.{name} is public but not in __all__"


def test_imported_modules_are_not_offered():
    from warpdrive import spline

    assert "np" not in dir(spline) and "os" not in dir(spline) and "json" not in dir(spline)


def public_api():
    """(qualified name, object) of every public name: modules, their exports, and the public
    members (methods, properties, class- and static methods) of their classes."""
    for module in modules(PUBLIC):
        yield module.__name__, module
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj) and obj.__module__.startswith("warpdrive."):
                for member, value in vars(obj).items():
                    if member.startswith("_") and member not in ("__call__", "__len__"):
                        continue
                    yield f"{module.__name__}.{name}.{member}", value


def documented(obj):
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        obj = obj.fget
    return bool((getattr(obj, "__doc__", None) or "").strip())


def test_every_public_name_has_a_docstring():
    missing = []
    for name, obj in public_api():
        if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj) or isinstance(obj, (property, staticmethod, classmethod)):
            if not documented(obj):
                missing.append(name)
        else:
            # Data (constants): documented by a `#:` comment above the assignment, as Sphinx reads it.
            module = sys.modules[name.rsplit(".", 1)[0]]
            source = inspect.getsource(module).splitlines()
            short = name.rsplit(".", 1)[1]
            at = next((i for i, line in enumerate(source) if re.match(rf"{re.escape(short)}\s*[:=]", line)), None)
            if at is None or not source[at - 1].lstrip().startswith("#:"):
                missing.append(name)
    assert not missing, f"public names without a docstring: {missing}"


def test_instance_attributes_are_documented_in_the_class_docstring(public_objects):
    """Attributes a result sets in __init__ have no docstrings of their own: the class's names them."""
    missing = []
    for name, obj in public_objects.items():
        doc = type(obj).__doc__ or ""
        for attr in vars(obj):
            if not attr.startswith("_") and f"``{attr}``" not in doc:
                missing.append(f"{name}.{attr}")
    assert not missing, f"attributes not named in their class's docstring: {missing}"


def callables():
    """(name, callable) of every public function, method and constructor, and of the native module's."""
    for name, obj in public_api():
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if inspect.isclass(obj):
            if "__init__" in vars(obj):  # not an exception's inherited constructor
                yield name, obj.__init__
        elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
            yield name, obj
    for name in _warpdrive.__all__:
        obj = getattr(_warpdrive, name)
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if callable(value) and not member.startswith("__"):
                    yield f"_warpdrive.{name}.{member}", getattr(obj, member)
        elif callable(obj):
            yield f"_warpdrive.{name}", obj


def test_every_device_parameter_defaults_to_auto():
    seen = []
    for name, fn in callables():
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        kinds = {p.kind for p in sig.parameters.values()}
        if not name.startswith("_warpdrive."):
            # No **kwargs: every keyword (device among them) is visible to inspect and to completion.
            assert inspect.Parameter.VAR_KEYWORD not in kinds, f"{name} hides its keywords behind **kwargs"
        p = sig.parameters.get("device")
        if p is None:
            continue
        seen.append(name)
        if p.default is not inspect.Parameter.empty or not name.startswith("_warpdrive."):
            assert p.default == "auto", f"{name}: device defaults to {p.default!r}"
    # The computing calls of every domain are among them.
    for expected in ("warpdrive.spline.Table.eval", "warpdrive.spline.unfold", "warpdrive.photon.propagate",
                     "warpdrive.photon.Detector.propagate", "warpdrive.sky.autocorr", "warpdrive.beam.Lattice.track",
                     "warpdrive.em.run", "warpdrive.em.testem3", "warpdrive.em.calorimeter", "warpdrive.em.detector"):
        assert expected in seen


def test_no_docstring_names_another_default_device():
    wrong = re.compile(r'device="(cpu|cuda[^"]*)"[^.;]{0,40}\bdefault\b|\bdefault[^.;]{0,20}device="(cpu|cuda[^"]*)"')
    for name, obj in public_api():
        doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""
        assert not wrong.search(doc), f"{name}: {wrong.search(doc).group(0)}"


# What each repr must show: values read from the object itself.
REPR_SHOWS = {
    "sky.Autocorr": lambda r: [f"{len(r.cut_labels)} cuts x {len(r.edges_deg)} bins", f"{r.trials} trials", r.device,
                               *r.cut_labels],
    "sky.Injection": lambda r: ["sources 2,4 x 3 events", f"{r.trials} trials", r.device,
                                f"{len(r.cut_labels)} cuts x {len(r.edges_deg)} bins"],
    "spline.Table": lambda t: [repr(t.path), f"ndim={t.ndim}", f"order={t.order}", "coefficients 121x13", "extents"],
    "spline.Event": lambda e: [f"{e.pulses} pulses", f"{e.hit_doms} DOMs", f"{sum(e.true_energy):.1f} GeV"],
    "spline.Unfolding": lambda u: [f"{len(u.energy)} sources", f"{u.total_energy:.1f}", "converged",
                                   f"{u.iterations} iterations"],
    "em.EmResult": lambda r: [f"{r.tracks} tracks", r.material, r.checksum, r.device, f"{len(r.edep_mev_per_cm)} depth bins"],
    "em.ShowerResult": lambda r: [f"{r.n_events} events", r.calorimeter, *r.materials, r.device],
    "em.DetectorResult": lambda r: [f"{r.n_events} events", "Lead", "liquidArgon", f"{len(r.hits)} hits", r.device],
    "beam.Lattice": lambda l: [f"line={l.line!r}", f"{l.n_elements} elements", f"{l.length:.4f} m"],
    "beam.Particles": lambda p: [f"{len(p)} {p.particle}s", f"p_central = {p.p_central:.6g}", p.description],
    "beam.Tracked": lambda t: [f"{len(t.particles)} particles", f"{int(t.alive.sum())} alive",
                               f"{len(t.watch)} watch records", t.device],
    "photon.Detector": lambda d: [f"ice={d.ice!r}", f"{d.doms} DOMs on {d.strings} strings", f"tilt {d.tilt}"],
    "photon.PpcRun": lambda r: ["4 stdout lines", "1 EM blocks", "2 HIT lines"],
    "distributed.Request": lambda r: ["sky.autocorr(", "trials=16", f"output={r.output!r}"],
}


def test_every_public_class_is_in_the_repr_table(public_objects):
    classes = {f"{m.__name__.split('.')[1]}.{n}" for m in modules(PUBLIC[1:]) for n in m.__all__
               if inspect.isclass(getattr(m, n))}
    assert classes == set(REPR_SHOWS) == set(public_objects)


@pytest.mark.parametrize("name", sorted(REPR_SHOWS))
def test_reprs_show_what_an_object_holds(name, public_objects):
    obj = public_objects[name]
    r = repr(obj)
    assert " object at 0x" not in r
    assert r.lstrip("<").startswith(f"warpdrive.{name}"), r
    for part in REPR_SHOWS[name](obj):
        assert str(part) in r, f"repr of {name} does not show {part!r}: {r}"


# ---- extras: optional features name what they need --------------------------------------------

def pyproject():
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "crates" / "python" / "pyproject.toml").read_text())


# The import name of each optional dependency, and the extra that installs it.
EXTRA_OF = {"pandas": "pandas", "matplotlib": "plot", "tqdm": "progress", "dask": "dask"}


def test_extras_are_declared():
    extras = pyproject()["project"]["optional-dependencies"]
    for imported, extra in EXTRA_OF.items():
        assert any(d.startswith(imported) for d in extras[extra]), (extra, extras[extra])
        assert any(d.startswith(imported) for d in extras["all"]), extras["all"]
    for needed in ("pytest", "pandas", "matplotlib", "mypy"):
        assert any(d.startswith(needed) for d in extras["test"]), extras["test"]


def test_docs_name_the_extra_of_every_to_pandas():
    """Every code block of docs/python.md and every docstring that calls to_pandas() says that it
    needs warpdrive[pandas] (pyarrow's to_pandas imports pandas, which numpy/pyarrow do not bring)."""
    doc = (ROOT / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, flags=re.S)
    using = [b for b in blocks if "to_pandas(" in b]
    assert using, "docs/python.md shows no to_pandas() (the test would prove nothing)"
    for b in using:
        assert "warpdrive[pandas]" in b, f"a code block calls to_pandas() without naming warpdrive[pandas]:\n{b}"
    for name, obj in public_api():
        text = inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""
        if "to_pandas(" in text:
            assert "warpdrive[pandas]" in text, f"{name}: its docstring calls to_pandas() without warpdrive[pandas]"
    # The extras section lists each extra with what it is for.
    section = doc.split("## Extras", 1)[1].split("\n## ", 1)[0]
    for extra in ("pandas", "plot", "progress", "test", "all"):
        assert f"`{extra}`" in section, f"docs/python.md's Extras section does not list {extra}"


@pytest.mark.parametrize("example", sorted((ROOT / "examples" / "python").glob("*.py")), ids=lambda p: p.name)
def test_gallery_examples_name_the_extras_they_need(example):
    deps = pyproject()["project"]["dependencies"]
    base = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0] for d in deps}
    tree = ast.parse(example.read_text())
    doc = ast.get_docstring(tree) or ""
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "warpdrive"}
    named = set(re.findall(r'pip install "warpdrive\[([a-z,]+)\]"', doc))
    named = {e for group in named for e in group.split(",")}
    for m in sorted(third_party - base):
        assert m in EXTRA_OF, f"{example.name} imports {m}, which no extra installs"
        assert EXTRA_OF[m] in named, f'{example.name} needs {m}: its docstring must say pip install "warpdrive[{EXTRA_OF[m]}]"'


def test_a_bar_without_tqdm_names_the_extra(monkeypatch):
    from warpdrive import sky

    # As if not installed (tqdm.auto too: an earlier test may have imported it).
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=r'pip install "warpdrive\[progress\]"'):
        sky.autocorr(synthetic_events=100, trials=1, bins=2, device="cpu", progress=True)
    # progress=None stays silent without it.
    assert sky.autocorr(synthetic_events=100, trials=1, bins=2, device="cpu").trials == 1
