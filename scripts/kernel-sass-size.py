#!/usr/bin/env python3
"""SASS size per kernel of a CUDA source, without a GPU: NVRTC (the pip wheel nvidia-cuda-nvrtc,
as .ci/run installs it) compiles to a cubin for one architecture, readelf lists its .text
sections. Instruction-cache pressure is what this is for (the shower kernels stalled 66 % of their
cycles on instruction fetch, docs/performance/em.md).

    LD_LIBRARY_PATH=.../nvidia/cu13/lib scripts/kernel-sass-size.py crates/em/kernels/shower.cu \
        [--include crates/core/kernels] [--arch sm_90] [-D NAME ...] [--precise]
"""
import argparse, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_cubin import cubin, nvrtc, source_arguments  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    source_arguments(ap)
    ap.add_argument('--precise', action='store_true', help='--fmad=false (the em kernels build precise)')
    a = ap.parse_args()
    opts = [f'-arch={a.arch}', '-std=c++17', f'-I{a.include}', '-default-device'] + [f'-D{d}' for d in a.D]
    if a.precise:
        opts += ['--fmad=false', '-prec-div=true', '-prec-sqrt=true']
    image = cubin(nvrtc(), a.source, opts)
    with tempfile.NamedTemporaryFile(suffix='.cubin', delete=False) as f:
        f.write(image)
    out = subprocess.run(['readelf', '-SW', f.name], capture_output=True, text=True).stdout
    if os.environ.get('SASS_SIZE_RAW'):
        print(out)
    total = 0
    for line in out.splitlines():
        parts = line.replace('[ ', '[').split()
        if len(parts) > 5 and parts[1].startswith('.text.'):
            size = int(parts[5], 16)
            total += size
            print(f'{parts[1][6:]:<24} {size:>10} bytes  {size // 16:>8} instructions')
    print(f'{"all .text":<24} {total:>10} bytes')
    os.unlink(f.name)


if __name__ == '__main__':
    main()
