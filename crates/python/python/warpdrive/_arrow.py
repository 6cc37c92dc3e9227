"""Library tables as pyarrow Tables, through the Arrow C data interface.

The native module hands out each record output as an object with ``__arrow_c_array__`` (the
PyCapsule protocol): one struct array of the columns, whose buffers are the library's own
vectors. ``pa.record_batch`` imports it without copying; the buffers are freed when the last
pyarrow object using them goes.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

__all__ = ["table"]


def table(exported: Any, metadata: Mapping[str, object]) -> pa.Table:
    """A ``pyarrow.Table`` of an exported library table, with ``metadata`` added to its own."""
    batch = pa.record_batch(exported)
    meta = dict(batch.schema.metadata or {})
    meta.update({str(k).encode(): str(v).encode() for k, v in metadata.items()})
    return pa.Table.from_batches([batch]).replace_schema_metadata(meta)


def __dir__() -> list[str]:
    """The public names (``__all__``): what completion offers."""
    return list(__all__)
