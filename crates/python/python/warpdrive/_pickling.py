"""Pickling of results backed by a native engine result (issue #28: results picklable).

Most of a result's data is read into Python objects when it is made (NumPy arrays, pyarrow
tables, numbers); what stays native is its ``save``. Pickling replaces the native result by
the files that ``save`` writes, captured once with the plot (``_warpdrive.SavedOutput``): the
unpickled result, in any process, writes the same bytes with the same output rules.
"""

from __future__ import annotations

from typing import Any

from . import _warpdrive

__all__ = ["state_with_saved_output"]


def state_with_saved_output(obj: object, native: str) -> dict[str, Any]:
    """``obj.__dict__`` for pickling, its native result (attribute ``native``) replaced by the
    output it writes."""
    state = dict(vars(obj))
    result = state[native]
    if not isinstance(result, _warpdrive.SavedOutput):
        state[native] = result.snapshot()
    return state


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
