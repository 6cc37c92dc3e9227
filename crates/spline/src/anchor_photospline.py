# The photospline side of `warpdrive bench spline --against photospline` (issue #34), run by the
# interpreter given with --python. Reads from stdin one line of JSON ({"table", "ndim", "points"})
# and then points*ndim little-endian float64 coordinates (row-major), opens the table and answers
# one line of JSON (photospline's version). Then it serves commands, one per line on stdin, so that
# the benchmark can time photospline's calls alternately with its own (pairs adjacent in time):
#   v  time one value call: answers its seconds
#   g  time one gradient: answers its seconds
#   d  answers "values N" and then the N values as little-endian float64
#   q  (or the end of stdin) exit
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

stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
head = json.loads(stdin.readline())
n, nd = head["points"], head["ndim"]
x = np.frombuffer(stdin.read(8 * n * nd), dtype="<f8").reshape(n, nd)
coords = [np.ascontiguousarray(x[:, d]) for d in range(nd)]
table = photospline.SplineTable(head["table"])


def answer(text):
    stdout.write(text.encode() + b"\n")
    stdout.flush()


def value():
    return table.evaluate_simple(coords)


def gradient():
    return [table.evaluate_simple(coords)] + [table.evaluate_simple(coords, 1 << d) for d in range(nd)]


def seconds(f):
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


answer(json.dumps({"version": getattr(photospline, "__version__", "unknown"), "module": getattr(photospline, "__file__", "?")}))
for line in iter(stdin.readline, b""):
    cmd = line.strip()
    if cmd == b"v":
        answer(repr(seconds(value)))
    elif cmd == b"g":
        answer(repr(seconds(gradient)))
    elif cmd == b"d":
        v = np.ascontiguousarray(value(), dtype="<f8")
        answer(f"values {v.size}")
        stdout.write(v.tobytes())
        stdout.flush()
    elif cmd == b"q":
        break
    else:
        answer(json.dumps({"error": f"unknown command {cmd!r}"}))
