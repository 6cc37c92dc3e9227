"""Progress reporting with Python conventions: a callable, tqdm when installed, else silence."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Optional

from ._types import Progress, ProgressCallback

__all__ = ["callback"]


def _silent() -> None:
    """The closer of a run without a bar."""


def callback(progress: Progress, total: Optional[int], desc: str) -> tuple[Optional[ProgressCallback], Callable[[], None]]:
    """Turn ``progress=`` into a ``(done, total)`` callable and a closer.

    ``progress`` may be ``None`` (a tqdm bar on a terminal when tqdm is installed, else
    silent), ``False`` (silent), ``True`` (tqdm, an ImportError when it is missing) or a callable
    ``f(done, total)``.
    """
    if progress is False:
        return None, _silent
    if callable(progress):
        return progress, _silent
    try:
        # Imported by name: tqdm is optional (the `progress` extra) and ships no type hints.
        tqdm: Any = importlib.import_module("tqdm.auto").tqdm
    except ImportError as e:
        if progress is True:
            raise ImportError('progress=True draws a tqdm bar: pip install "warpdrive[progress]" (or pass a callable)') from e
        return None, _silent
    # disable=None: tqdm draws only on a terminal, as the CLI's bar does.
    bar = tqdm(total=total, desc=desc, unit=("photons" if desc == "propagating" else desc),
               disable=None if progress is None else False)

    def update(done: int, total: int) -> None:
        if bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    close: Callable[[], None] = bar.close
    return update, close


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
