#!/usr/bin/env python3
"""SASS size per kernel of a CUDA source, without a GPU: NVRTC (the pip wheel nvidia-cuda-nvrtc,
as .ci/run installs it) compiles to a cubin for one architecture, readelf lists its .text
sections. Instruction-cache pressure is what this is for (the shower kernels stalled 66 % of their
cycles on instruction fetch, docs/performance/em.md).

    LD_LIBRARY_PATH=.../nvidia/cu13/lib scripts/kernel-sass-size.py crates/em/kernels/shower.cu \
        [--include crates/core/kernels] [--arch sm_90] [-D NAME ...] [--precise]
"""
import argparse, ctypes, ctypes.util, glob, os, subprocess, sys, tempfile


def nvrtc():
    for name in ['libnvrtc.so.13', 'libnvrtc.so']:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    for p in glob.glob(os.path.join(os.path.dirname(__file__), '..', '.ci', '.venv', 'lib', 'python3*', 'site-packages',
                                    'nvidia', 'cu13', 'lib', 'libnvrtc.so*')):
        return ctypes.CDLL(p)
    sys.exit('libnvrtc not found (pip install nvidia-cuda-nvrtc==13.0.88, set LD_LIBRARY_PATH)')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('source')
    ap.add_argument('--include', default='crates/core/kernels')
    ap.add_argument('--arch', default='sm_90')
    ap.add_argument('-D', action='append', default=[])
    ap.add_argument('--precise', action='store_true', help='--fmad=false (the em kernels build precise)')
    a = ap.parse_args()
    lib = nvrtc()
    src = open(a.source, 'rb').read()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, a.source.encode(), 0, None, None) == 0
    opts = [f'-arch={a.arch}', '-std=c++17', f'-I{a.include}', '-default-device'] + [f'-D{d}' for d in a.D]
    if a.precise:
        opts += ['--fmad=false', '-prec-div=true', '-prec-sqrt=true']
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit(log.value.decode())
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cubin = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, cubin)
    with tempfile.NamedTemporaryFile(suffix='.cubin', delete=False) as f:
        f.write(cubin.raw)
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
