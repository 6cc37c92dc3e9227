"""Typing (issue #28): the installed package carries its type information, passes
`mypy --strict` together with the example gallery and the guide's typed example, and the stub of
the native module matches the built module (`mypy.stubtest`). .ci/run installs the pinned mypy;
without it these tests skip locally with the reason, and fail under CI."""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

import warpdrive
from conftest import _missing

ROOT = pathlib.Path(__file__).resolve().parents[3]
CONFIG = ROOT / "crates" / "python" / "pyproject.toml"
PACKAGE = ROOT / "crates" / "python" / "python" / "warpdrive"


def test_the_installed_package_ships_its_types():
    installed = pathlib.Path(warpdrive.__file__).parent
    assert (installed / "py.typed").is_file()
    assert (installed / "_warpdrive.pyi").is_file(), "the wheel lacks the native module's stub"


def run_module(module, *args):
    """`python -m module args` from the repository root; its output, or the failure with it."""
    if importlib.util.find_spec("mypy") is None:
        _missing("mypy is not installed (pip install mypy; .ci/run pins it)")
    r = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, f"python -m {module} {' '.join(args)}:\n{r.stdout}{r.stderr}"
    return r.stdout


def typed_guide_example(tmp_path):
    """The Python block of docs/python.md's "Typing" section, as a file."""
    doc = (ROOT / "docs" / "python.md").read_text()
    section = doc.split("\n## Typing\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)
    path = tmp_path / "typing_example.py"
    path.write_text(block)
    return path


def test_mypy_strict_on_the_package_the_gallery_and_the_guide(tmp_path):
    examples = sorted((ROOT / "examples" / "python").glob("*.py"))
    assert examples
    cache = ROOT / "target" / "mypy-cache"
    out = run_module("mypy", "--config-file", str(CONFIG), "--cache-dir", str(cache), str(PACKAGE), *map(str, examples),
                     str(typed_guide_example(tmp_path)))
    assert "Success" in out


def test_the_native_stub_matches_the_built_module():
    # stubtest finds no stub at all "successfully": make sure it compares the installed one.
    assert (pathlib.Path(warpdrive.__file__).parent / "_warpdrive.pyi").is_file()
    out = run_module("mypy.stubtest", "warpdrive._warpdrive", "--mypy-config-file", str(CONFIG))
    assert "Success" in out
