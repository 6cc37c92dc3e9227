"""Ctrl-C and progress callbacks stop long calls (issue #28): a real SIGINT sent to a Python
process in a long call must end it with KeyboardInterrupt within 2 s, leaving no output."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

import warpdrive
from conftest import ROOT
from warpdrive import sky

DATA = pathlib.Path(os.environ.get("WARPDRIVE_DATA", ROOT.parent / "shared" / "data"))
EMS = DATA / "splines" / "icetray_photospline_ems"

# Each snippet prints "started" right before its long call (minutes of work without a stop).
LONG_CALLS = {
    # A map-only line (passes in batches) writing an output directory: nothing may be left. A
    # FODO cell (stable: the particles stay, so every pass costs the same; a line that loses
    # them all is done in a second on a GPU, whose threads stop at their particle's loss).
    "beam.Lattice.track": "from warpdrive import beam\n"
                          "lat = beam.Lattice(text='QF: QUAD, L=0.2, K1=1.5\\nQD: QUAD, L=0.2, K1=-1.5\\n"
                          "D: DRIF, L=0.8\\nA: LINE=(QF, D, QD, D)\\n')\n"
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
    "sky.inject": "from warpdrive import sky\n"
                  "print('started', flush=True)\n"
                  "sky.inject(synthetic_events=20000, sources=[10, 20], trials=10**7, device='cpu', threads=1)\n",
    "em.run": "from warpdrive import em\n"
              "print('started', flush=True)\n"
              "em.run(tracks=10**9, energy=10.0, device='cpu', threads=1)\n",
    # Stopped while the shower tables are built (the first seconds of a process's first call) …
    "em.testem3 (tables)": "from warpdrive import em\n"
                           "print('started', flush=True)\n"
                           "em.testem3(events=10**5, device='cpu', threads=1)\n",
    # … and in the events, the tables found in the cache.
    "em.testem3 (events)": "from warpdrive import em\n"
                           "em.testem3(events=1, energy=10, device='cpu')\n"
                           "print('started', flush=True)\n"
                           "em.testem3(events=10**5, device='cpu', threads=1)\n",
    # Stopped inside a 100 GeV event (minutes each): the loop polls every 1 024 tracks.
    "em.calorimeter": "import pathlib, tempfile\n"
                      "from warpdrive import em\n"
                      "f = pathlib.Path(tempfile.mkdtemp()) / 'cal.toml'\n"
                      "f.write_text('repeat = 20\\ntransverse = 20.0\\n[[layers]]\\nmaterial = \"G4_Fe\"\\nthickness = 1.0\\n')\n"
                      "em.calorimeter(f, energy=10, events=1, device='cpu')\n"
                      "print('started', flush=True)\n"
                      "em.calorimeter(f, energy=1e5, events=10**4, device='cpu', threads=1)\n",
    # Showers in a GDML detector with a field: 10^4 events of 100 TeV, hours on one thread.
    "em.run (gdml)": "from warpdrive import em\n"
                     f"g = {str(ROOT / 'crates' / 'em' / 'tests' / 'data' / 'testem3.gdml')!r}\n"
                     "print('started', flush=True)\n"
                     "em.run(gdml=g, energy_mev=1e5, events=10**4, position=(0, 0, -10), field=(0, 2, 0), "
                     "device='cpu', threads=1)\n",
    # A 10^8 GeV cascade in the built-in ice: 5e10 photons, days on one thread.
    "photon.propagate": "from warpdrive import photon\n"
                        "print('started', flush=True)\n"
                        "photon.propagate(energy=1e8, device='cpu', threads=1, output='hits.parquet')\n",
    # PPC mode, the same cascade on stdin, in SPICE 3.2.1.
    "photon.ppc": "from warpdrive import photon\n"
                  f"env = {{'PPCTABLESDIR': {str(DATA / 'ice' / 'spice_3.2.1')!r}, 'WARPDRIVE_DEVICE': 'cpu'}}\n"
                  "print('started', flush=True)\n"
                  "photon.ppc(0, stdin='TR 1 0 e 0 0 -400 180 0 0 1e8 0\\n', env=env, threads=1)\n",
    # 2·10⁷ points of the 4-D timing table with gradients on one thread: about 5 s on a 2-core CI
    # machine (2026-12). Plain values of 10⁷ points took 1.0 s there, no longer than the test's
    # settle time, and the call sometimes ended before the signal came (stop 58's CI run).
    "spline.eval": "import numpy as np\nfrom warpdrive import spline\n"
                   f"t = spline.Table({str(EMS / 'ems_z0_a0.pt.prob.fits')!r})\n"
                   "p = np.empty((2 * 10**7, 4)); p[:] = (100.0, 90.0, 0.5, 100.0)\n"
                   "print('started', flush=True)\n"
                   "t.eval(p, gradient=True, device='cpu', threads=1)\n",
    # A 1 km track in 1 m segments on one thread: the response matrix alone takes seconds, the
    # solve minutes.
    "spline.unfold": "from warpdrive import spline\n"
                     "pulses = {'string': [36], 'om': [30], 'time': [100.0], 'charge': [1.0], 'window': (-1000.0, 9000.0)}\n"
                     "print('started', flush=True)\n"
                     f"spline.unfold(pulses, track=(-500, 0, -250, 90, 180, 0, 1000), spacing=1.0, device='cpu', threads=1, "
                     f"amplitude={str(EMS / 'ems_z0_a0.pt.abs.fits')!r}, timing={str(EMS / 'ems_z0_a0.pt.prob.fits')!r}, "
                     f"geometry={str(DATA / 'geometry' / 'icecube_geo-f2k')!r})\n",
}
NEEDS_DATA = {"spline.eval", "spline.unfold"}

# The device of the long calls: the CPU here; scripts/gpu-check-python runs them on "cuda".
DEVICE = os.environ.get("WARPDRIVE_TEST_DEVICE", "cpu")
LONG_CALLS = {name: code.replace("device='cpu'", f"device={DEVICE!r}").replace("'WARPDRIVE_DEVICE': 'cpu'",
                                                                               f"'WARPDRIVE_DEVICE': {DEVICE!r}")
              for name, code in LONG_CALLS.items()}
# Calls a GPU finishes before a signal can matter (10⁷ spline points: about 0.1 s on an H100).
TOO_SHORT_ON_GPU = {"spline.eval": "a GPU evaluates 2·10^7 points with gradients in well under a second"}


def interrupt(code, cwd, settle=1.0):
    # The child starts with SIGINT at its default: a shell ignores SIGINT in commands it starts in
    # the background (`cmd &` without job control), and a Python started with SIGINT ignored
    # installs no KeyboardInterrupt handler, so a CI launched that way would test nothing here.
    p = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, WARPDRIVE_PROGRESS="0"),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
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
    if name in NEEDS_DATA and not DATA.is_dir():
        if os.environ.get("WARPDRIVE_REQUIRE_DATA") == "1":
            raise AssertionError(f"WARPDRIVE_DATA={DATA} is not a directory")
        pytest.skip(f"no data directory {DATA}")
    if DEVICE != "cpu" and name in TOO_SHORT_ON_GPU:
        pytest.skip(f"{name} on {DEVICE}: {TOO_SHORT_ON_GPU[name]}")
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
