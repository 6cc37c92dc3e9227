"""Library tables (lists of (name, NumPy array)) as pyarrow Tables."""

import pyarrow as pa


def table(columns, metadata):
    # pa.array on a 1-D numeric NumPy array without nulls wraps its buffer: no copy.
    names = [n for n, _ in columns]
    arrays = [pa.array(a) for _, a in columns]
    return pa.Table.from_arrays(arrays, names=names, metadata={str(k): str(v) for k, v in metadata.items()})
