#!/usr/bin/env python3
"""ci-slurm-dask.py DIR: warpdrive.distributed on Dask workers that are Slurm jobs (dask-jobqueue's
SLURMCluster), on the Slurm that scripts/ci-slurm starts; the merged result must have the single
run's data files, byte for byte. Run by scripts/ci-slurm when CI_SLURM_PYTHON names a Python with
warpdrive, dask[distributed] and dask-jobqueue (issue #33)."""

import os
import pathlib
import sys

from dask.distributed import Client
from dask_jobqueue import SLURMCluster

from warpdrive import distributed, sky

KWARGS = {"synthetic_events": 3000, "trials": 30, "bins": 6, "bin_width": 0.5, "seed": 3, "device": "cpu",
          "threads": 1}


def data_files(d: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.suffix == ".parquet"}


def main() -> int:
    out = pathlib.Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # Two workers, each one Slurm job of one core, running this Python.
    with SLURMCluster(cores=1, processes=1, memory="1GB", walltime="00:10:00", python=sys.executable,
                      log_directory=str(out / "logs"), scheduler_options={"dashboard_address": ":0"}) as cluster:
        cluster.scale(jobs=2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=180)
            slurm_jobs = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
            print(f"workers: {len(slurm_jobs)}, Slurm jobs {sorted(map(str, slurm_jobs.values()))}")
            if not all(slurm_jobs.values()):
                print("a worker does not run inside a Slurm job", file=sys.stderr)
                return 1
            merged = distributed.run(distributed.Request(sky.autocorr, KWARGS, output=out / "merged"), client,
                                     jobs=3)
    single = sky.autocorr(**KWARGS)
    single.to_parquet(out / "single")
    a, b = data_files(out / "single"), data_files(out / "merged")
    if not a or a != b:
        print(f"the merged output differs from the single run: {sorted(a)} vs {sorted(b)}", file=sys.stderr)
        return 1
    print(f"Dask on Slurm: 3 jobs on {len(slurm_jobs)} SLURMCluster workers, merged ({merged.trials} trials) = "
          f"the single run: {', '.join(a)} identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
