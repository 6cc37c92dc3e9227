#!/usr/bin/env python3
"""Where NVRTC contracts a·b + c into FMAs, per source line, without a GPU (issue #29: the precise
twin's GPU side contracts, the CPU side does not, and the two drift apart in last bits).

NVRTC 13.0 (pip nvidia-cuda-nvrtc==13.0.88, as .ci/run installs it) compiles a CUDA source twice
in a precise build (--ftz=false --prec-div=true --prec-sqrt=true) with line tables, once with
--fmad=true and once with --fmad=false; nvdisasm (pip nvidia-cuda-nvdisasm==13.2.51: 13.0 is not
on PyPI, 13.2 reads sm_90 cubins) lists the SASS. The FFMAs a line has in the first build and not
in the second are the contractions at that line (summed over its inlined copies).

    LD_LIBRARY_PATH=.../nvidia/cu13/lib scripts/kernel-contraction.py crates/photon/kernels/propagate.cu \\
        [--include crates/core/kernels] [--arch sm_90] [-D NAME ...] [--fused-define WD_TWIN_FMA] [--top 40]

--fused-define adds that define to the --fmad=false build only (explicit fmaf switched on there):
the report then shows what the explicit FMAs leave uncontracted.
"""
import argparse, collections, glob, os, re, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_cubin import cubin, nvrtc, source_arguments  # noqa: E402

INSTR = re.compile(r'\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)')
LINE = re.compile(r'//## File "([^"]+)", line (\d+)')


def nvdisasm():
    try:
        import nvidia
        for p in nvidia.__path__:
            for c in glob.glob(os.path.join(p, 'cu13', 'bin', 'nvdisasm')):
                return c
    except ImportError:
        pass
    sys.exit('nvdisasm not found (pip install nvidia-cuda-nvdisasm==13.2.51 in the NVRTC venv)')


def compile_sass(lib, dis, path, opts):
    with tempfile.NamedTemporaryFile(suffix='.cubin', delete=False) as f:
        f.write(cubin(lib, path, opts))
    try:
        return subprocess.run([dis, '-c', '-g', f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)


def tally(sass):
    """(opcode counts, FFMA count per (file, line))."""
    ops, ffma, where = collections.Counter(), collections.Counter(), None
    for line in sass.splitlines():
        m = LINE.search(line)
        if m:
            where = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = INSTR.match(line)
        if m:
            op = m.group(1).split('.')[0]
            ops[op] += 1
            if op == 'FFMA':
                ffma[where] += 1
    return ops, ffma


def main():
    ap = argparse.ArgumentParser()
    source_arguments(ap)
    ap.add_argument('--fused-define', default=None)
    ap.add_argument('--top', type=int, default=40)
    a = ap.parse_args()
    lib, dis = nvrtc(), nvdisasm()
    base = ['--ftz=false', '--prec-sqrt=true', '--prec-div=true', '-std=c++17', f'-I{a.include}', '-lineinfo',
            f'--gpu-architecture={a.arch}'] + [f'-D{d}' for d in a.D]
    ops_f, ffma_f = tally(compile_sass(lib, dis, a.source, base + ['--fmad=true']))
    extra = [f'-D{a.fused_define}'] if a.fused_define else []
    plain_ops, plain_ffma = tally(compile_sass(lib, dis, a.source, base + ['--fmad=false'] + extra))
    for label, ops in [('--fmad=true', ops_f), ('--fmad=false' + (f' -D{a.fused_define}' if extra else ''), plain_ops)]:
        print(f'{label:<40} instructions {sum(ops.values()):6d}  FFMA {ops["FFMA"]:5d}  FMUL {ops["FMUL"]:5d}  '
              f'FADD {ops["FADD"]:5d}')
    diff = collections.Counter({k: ffma_f[k] - plain_ffma[k] for k in set(ffma_f) | set(plain_ffma)})
    diff = +diff  # lines with contractions only
    print(f'FFMAs that only contraction makes: {ops_f["FFMA"] - plain_ops["FFMA"]} (totals); per source line, '
          f'{sum(diff.values())} at {len(diff)} lines')
    if extra:
        print(f'(a line that -D{a.fused_define} replaces by an explicit form under #if shows here with its '
              f'contractions, the explicit form at its own line)')
    lines = {}
    for (f, n), d in diff.most_common(a.top):
        if f not in lines:
            p = a.source if os.path.basename(a.source) == f else os.path.join(a.include, f)
            lines[f] = open(p).read().splitlines() if os.path.exists(p) else []
        text = lines[f][n - 1].strip() if n - 1 < len(lines[f]) else ''
        print(f'{d:5d}  {f}:{n}  {text[:100]}')


if __name__ == '__main__':
    main()
