"""Shared fixtures: the CLI binary (same checkout) and the data directory.

Nothing here skips silently: the CLI comparisons need the `warpdrive` binary of this checkout,
which is taken from `WARPDRIVE_BIN`, else `target/release/warpdrive`, else built with
`cargo build --release -p warpdrive-cli` when cargo is there. Only when none of that works is a
test skipped — and under CI (`CI` or `WARPDRIVE_REQUIRE_DATA=1` set) that is a failure instead.
"""

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _strict():
    return os.environ.get("WARPDRIVE_REQUIRE_DATA") == "1" or bool(os.environ.get("CI"))


def _missing(reason):
    if _strict():
        pytest.fail(f"{reason} (CI must not skip: see crates/python/tests/conftest.py)")
    pytest.skip(reason)


def _cli():
    p = os.environ.get("WARPDRIVE_BIN")
    if p:
        return p if os.path.exists(p) else None
    built = ROOT / "target" / "release" / "warpdrive"
    if built.exists():
        return str(built)
    if shutil.which("cargo") is None:
        return None
    r = subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "warpdrive-cli"], cwd=ROOT)
    return str(built) if r.returncode == 0 and built.exists() else None


@pytest.fixture(scope="session")
def cli_path():
    """The CLI binary of this checkout (found or built)."""
    exe = _cli()
    if exe is None:
        _missing("no warpdrive binary: set WARPDRIVE_BIN, or build it with cargo build --release -p warpdrive-cli")
    return exe


@pytest.fixture(scope="session")
def cli(cli_path):
    """Run the warpdrive CLI; a failing command fails the test with its stderr."""

    def run(*args):
        env = dict(os.environ, WARPDRIVE_PROGRESS="0")
        r = subprocess.run([cli_path, *map(str, args)], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise AssertionError(f"warpdrive {' '.join(map(str, args))} failed:\n{r.stderr}")
        return r

    return run


@pytest.fixture(scope="session")
def data():
    d = pathlib.Path(os.environ.get("WARPDRIVE_DATA", ROOT.parent / "shared" / "data"))
    if not d.is_dir():
        _missing(f"no data directory {d} (set WARPDRIVE_DATA)")
    return d


def same_bits(a, b):
    """Arrays equal byte for byte (NaN payloads and signed zeros included)."""
    import numpy as np

    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.fixture(scope="session")
def public_objects(data):
    """One instance of every public class (public_objects.py): reprs, docs and pickling tests."""
    import public_objects

    return public_objects.build(data)


def require(module):
    """Import an optional test dependency (dask, htcondor); missing, it skips — and fails under CI,
    whose venv installs it (.ci/run)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        _missing(f"{module} is not installed (pip install it; .ci/run does)")
