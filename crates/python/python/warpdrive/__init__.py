"""warpdrive: GPU-ready physics Monte Carlo and analysis from Python.

The same Rust library functions as the ``warpdrive`` command line, with NumPy arrays in and out
and ``pyarrow.Table`` for record outputs. Submodules: ``spline``, ``photon``, ``sky``, ``beam``, ``em`` (more domains follow
the command line's as they are bound; see docs/python.md).

Every computing call takes ``device="auto"|"cpu"|"cuda"|"cuda:N"|"cuda:all"`` and
``threads=`` (CPU worker threads, default all cores) as the CLI's ``--device``/``--threads``;
the GIL is released while it computes.
"""

from ._warpdrive import Cancelled, __version__
from . import beam, em, photon, sky, spline

__all__ = ["Cancelled", "__version__", "beam", "em", "photon", "sky", "spline"]
