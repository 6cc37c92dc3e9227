#!/usr/bin/env bash
# session 31 call 1 (binary eeaf544): the twin's builds with and without contraction.
OUT=$OUT/tc bash scripts/photon-twin-contraction
