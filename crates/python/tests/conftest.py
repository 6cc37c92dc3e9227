"""Shared fixtures: the CLI binary (same checkout) and the data directory."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _cli():
    p = os.environ.get("WARPDRIVE_BIN") or str(ROOT / "target" / "release" / "warpdrive")
    return p if os.path.exists(p) else None


@pytest.fixture(scope="session")
def cli():
    """Run the warpdrive CLI; tests comparing with it skip when no binary was built."""
    exe = _cli()
    if exe is None:
        pytest.skip("no warpdrive binary (cargo build --release -p warpdrive-cli, or set WARPDRIVE_BIN)")

    def run(*args):
        env = dict(os.environ, WARPDRIVE_PROGRESS="0")
        r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env)
        if r.returncode != 0:
            raise AssertionError(f"warpdrive {' '.join(map(str, args))} failed:\n{r.stderr}")
        return r

    return run


@pytest.fixture(scope="session")
def data():
    d = pathlib.Path(os.environ.get("WARPDRIVE_DATA", ROOT.parent / "shared" / "data"))
    if not d.is_dir():
        if os.environ.get("WARPDRIVE_REQUIRE_DATA") == "1":
            raise AssertionError(f"WARPDRIVE_DATA={d} is not a directory")
        pytest.skip(f"no data directory {d}")
    return d


def same_bits(a, b):
    """Arrays equal byte for byte (NaN payloads and signed zeros included)."""
    import numpy as np

    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
