# The photospline side of `warpdrive bench spline --against photospline` (issue #34), run by the
# interpreter given with --python. Reads from stdin one line of JSON ({"table", "ndim", "points",
# "repeats"}) and then points*ndim little-endian float64 coordinates (row-major); writes one line
# of JSON (rates, photospline's version) and then the photospline values as float64.
#
# Timed exactly as a user calls photospline on arrays: SplineTable.evaluate_simple with one array
# per coordinate (values), and the gradient as that call plus one call per dimension with the
# derivative bitmask 1 << d (photospline's Python module has no vectorised gradient call).
import faulthandler
import json
import sys
import time

# A crash inside photospline's C++ (a segfault) then leaves a traceback on stderr, which the
# benchmark's error message quotes.
faulthandler.enable()

try:
    # photospline first: on the GPU machine's host (Python 3.12, numpy 2.5.2 wheels, photospline
    # 4296d49 with cfitsio 4.6.4 built from source) every SplineTable(path) segfaulted when numpy
    # had been imported before photospline, and worked in this order (docs/performance/spline.md).
    import photospline
    import numpy as np
except ImportError as e:
    json.dump({"error": f"{e}"}, sys.stdout)
    sys.stdout.write("\n")
    sys.exit(0)

head = json.loads(sys.stdin.buffer.readline())
n, nd, repeats = head["points"], head["ndim"], head["repeats"]
x = np.frombuffer(sys.stdin.buffer.read(8 * n * nd), dtype="<f8").reshape(n, nd)
coords = [np.ascontiguousarray(x[:, d]) for d in range(nd)]
table = photospline.SplineTable(head["table"])


def best_of(f):
    # One untimed call first, as warpdrive's side (bench::fastest): page faults of fresh
    # output arrays and cold caches stay out of both sides' numbers.
    out = f()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t0)
    return best, out


value_s, values = best_of(lambda: table.evaluate_simple(coords))
gradient_s, _ = best_of(lambda: [table.evaluate_simple(coords)] + [table.evaluate_simple(coords, 1 << d) for d in range(nd)])
meta = {
    "value_s": value_s,
    "gradient_s": gradient_s,
    "version": getattr(photospline, "__version__", "unknown"),
    "module": getattr(photospline, "__file__", "?"),
}
sys.stdout.write(json.dumps(meta) + "\n")
sys.stdout.flush()
sys.stdout.buffer.write(np.ascontiguousarray(values, dtype="<f8").tobytes())
