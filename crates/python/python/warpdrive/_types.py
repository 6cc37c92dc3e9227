"""Type aliases the modules' annotations share (not part of the public API)."""

from __future__ import annotations

import os
from typing import Any, Callable, TypeAlias, Union

import numpy as np
import numpy.typing as npt

__all__ = ["Float64Array", "Int64Array", "PathLike", "Progress", "ProgressCallback"]

#: A file or directory name: ``str`` or any ``os.PathLike`` (``pathlib.Path``).
PathLike: TypeAlias = Union[str, "os.PathLike[str]"]
#: ``f(done, total)``, called about ten times a second; returning ``False`` stops the run.
ProgressCallback: TypeAlias = Callable[[int, int], Any]
#: ``progress=``: None (tqdm on a terminal when installed), False (silent), True (tqdm) or a callback.
Progress: TypeAlias = Union[None, bool, ProgressCallback]
#: A NumPy array of float64.
Float64Array: TypeAlias = npt.NDArray[np.float64]
#: A NumPy array of int64.
Int64Array: TypeAlias = npt.NDArray[np.int64]


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
