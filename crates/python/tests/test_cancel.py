"""Ctrl-C and progress callbacks stop long calls (issue #28): a real SIGINT sent to a Python
process in a long call must end it with KeyboardInterrupt within 2 s, leaving no output."""

import os
import signal
import subprocess
import sys
import time

import pytest

import warpdrive
from warpdrive import sky

# Each snippet prints "started" right before its long call (minutes of work without a stop).
LONG_CALLS = {
    # A map-only line (passes in batches) writing an output directory: nothing may be left.
    "beam.Lattice.track": "from warpdrive import beam\n"
                          "lat = beam.Lattice(text='Q: QUAD, L=0.2, K1=1.5\\nD: DRIF, L=0.8\\nA: LINE=(Q, D, Q, D)\\n')\n"
                          "p = beam.Particles.gaussian(100_000)\n"
                          "print('started', flush=True)\n"
                          "lat.track(p, passes=10**9, watch='off', output='out', device='cpu', threads=1)\n",
    # Watch points and space charge: a pass of several steps.
    "beam.Lattice.track (LSC, watch)": "from warpdrive import beam\n"
                                       "lat = beam.Lattice(text='C: CHARGE, TOTAL=1e-9\\nW: WATCH, FILENAME=\"w\"\\n"
                                       "L: LSCDRIFT, L=0.5, BINS=256\\nA: LINE=(C, L, W)\\n')\n"
                                       "p = beam.Particles.gaussian(200_000)\n"
                                       "print('started', flush=True)\n"
                                       "lat.track(p, passes=10**6, watch_every=10**5, watch_particles=[0], device='cpu', threads=1)\n",
    "sky.autocorr": "from warpdrive import sky\n"
                    "print('started', flush=True)\n"
                    "sky.autocorr(synthetic_events=20000, trials=10**7, device='cpu', threads=1)\n",
}


def interrupt(code, cwd, settle=1.0):
    p = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, WARPDRIVE_PROGRESS="0"))
    assert p.stdout.readline().strip() == "started", p.stderr.read()
    time.sleep(settle)
    assert p.poll() is None, f"the call ended by itself: {p.stderr.read()}"
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=10)
    finally:
        p.kill()
    return time.monotonic() - t0, p.returncode, err


@pytest.mark.parametrize("name", sorted(LONG_CALLS))
def test_sigint_raises_keyboard_interrupt_quickly(name, tmp_path):
    secs, rc, err = interrupt(LONG_CALLS[name], tmp_path)
    assert "KeyboardInterrupt" in err, err
    assert rc != 0
    assert secs < 2.0, f"{name}: {secs:.2f} s from SIGINT to exit"
    assert list(tmp_path.iterdir()) == [], "the interrupted call left files"


def test_progress_callback_false_stops_with_cancelled():
    seen = []

    def stop_early(done, total):
        seen.append((done, total))
        return False

    t0 = time.monotonic()
    with pytest.raises(warpdrive.Cancelled, match="returned False"):
        sky.autocorr(synthetic_events=20000, trials=10**7, device="cpu", threads=1, progress=stop_early)
    assert time.monotonic() - t0 < 2.0
    assert len(seen) == 1


def test_progress_callback_exception_stops_the_run():
    class Stop(Exception):
        pass

    def boom(done, total):
        raise Stop()

    t0 = time.monotonic()
    with pytest.raises(Stop):
        sky.autocorr(synthetic_events=20000, trials=10**7, device="cpu", threads=1, progress=boom)
    assert time.monotonic() - t0 < 2.0
