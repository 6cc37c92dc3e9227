#!/usr/bin/env bash
# session 31 call 2 (binary eeaf544 + WD_TWIN_NOINLINE, since removed): launch shapes of the twin
# without contraction in spice_ftp-v3m, and ncu source profiles of fast mode and that twin.
# scripts/photon-twin-profile at that commit, since folded into scripts/photon-profile:
# ICE=spice_ftp-v3m PROFILE_CONFIGS="default default,twin" bash scripts/photon-profile CONFIG... does the same.
OUT=$OUT/pr bash scripts/photon-twin-profile
