"""warpdrive: GPU-ready physics Monte Carlo and analysis from Python.

The same Rust library functions as the ``warpdrive`` command line, with NumPy arrays in and out
and ``pyarrow.Table`` for record outputs. Submodules: ``spline``, ``photon``, ``sky``, ``beam``,
``em`` (docs/python.md); ``distributed`` runs split into jobs over a Dask cluster (docs/cluster.md).

Every computing call takes ``device="auto"|"cpu"|"cuda"|"cuda:N"|"cuda:all"`` (default
``"auto"``: the GPUs when CUDA works, else the CPU) and ``threads=`` (CPU worker threads, default
all cores) as the CLI's ``--device``/``--threads``; the GIL is released while it computes, Ctrl-C
raises ``KeyboardInterrupt`` within about a second, and a ``progress`` callback that returns
``False`` raises :class:`Cancelled`. Results, tables and detectors pickle (``multiprocessing``,
dask, joblib). Optional extras: ``warpdrive[pandas]`` (``to_pandas()``), ``warpdrive[plot]``
(the example gallery), ``warpdrive[progress]`` (tqdm bars), ``warpdrive[dask]``
(``warpdrive.distributed``), ``warpdrive[test]``.
"""

import os as _os

from . import _warpdrive, beam, distributed, em, photon, sky, spline
from ._warpdrive import Cancelled

# Prebuilt GPU kernels shipped inside the wheel (`warpdrive doctor --prebuild <package>/kernels`
# before the wheel is built): runs take them instead of compiling on first use (docs/cluster.md).
if _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "kernels")):
    _warpdrive.set_prebuilt_kernels(_os.path.join(_os.path.dirname(__file__), "kernels"))

#: The package's version (the Rust workspace's; the same as ``warpdrive --version``).
__version__: str = _warpdrive.__version__

__all__ = ["Cancelled", "__version__", "beam", "distributed", "em", "photon", "sky", "spline"]


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
