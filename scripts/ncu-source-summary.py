#!/usr/bin/env python3
"""Summarise an ncu source-page export (`ncu -i REP --page source --csv --print-source cuda,sass`,
as written by scripts/photon-profile) per source line and per device function: share of issued
warp instructions, average active lanes, share of stall samples.

NVRTC compiles the kernel with its headers pasted in (warpdrive_core::cuda::expand_includes), so
line numbers refer to that expanded text; this script rebuilds it from the kernel and header files.

    scripts/ncu-source-summary.py ncu-src-cuda-sass.csv crates/photon/kernels/propagate.cu \
        --headers crates/core/kernels [--lines 30]
"""
import argparse, collections, csv, os, re


def expand(path, header_dir):
    out = []
    for line in open(path).read().splitlines():
        m = re.match(r'\s*#include\s+"([^"]+)"', line)
        h = os.path.join(header_dir, m.group(1)) if m else None
        if h and os.path.exists(h):
            out.extend(open(h).read().splitlines())
            out.append('')
        else:
            out.append(line)
    return out


def number(x):
    try:
        return float(x.replace(',', ''))
    except ValueError:
        return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('csv')
    ap.add_argument('kernel')
    ap.add_argument('--headers', default='crates/core/kernels')
    ap.add_argument('--lines', type=int, default=30)
    a = ap.parse_args()
    src = expand(a.kernel, a.headers)
    func, cur = {}, 'top'
    for i, l in enumerate(src, 1):
        # Definitions: __device__/__global__ ones, and the EM kernel's macros for them
        # (WD_FN, PM_FN, WD_PHILOX_FN); __launch_bounds__(...) is not a name.
        l = re.sub(r'__launch_bounds__\s*\([^)]*\)', '', l)
        m = re.search(r'^\s*(?:extern\s+"C"\s+)?(?:static\s+)?(?:__device__|__global__|WD_FN|PM_FN|WD_PHILOX_FN)\b[^(=;]*?\b(\w+)\s*\(', l)
        if m and not l.strip().startswith('//'):
            cur = m.group(1)
        func[i] = cur
    per_line = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    head = None
    for r in csv.reader(open(a.csv)):
        if r and r[0] == 'Line No':
            head = r
            ie, it, isamp = (head.index(k) for k in ('Instructions Executed', 'Thread Instructions Executed', 'Warp Stall Sampling (All Samples)'))
            continue
        if not head or len(r) != len(head):
            continue
        # A source line's row carries the sums of the SASS rows under it: count those rows once.
        ln = r[0]
        if ln.isdigit():
            v = per_line[int(ln)]
            v[0] += number(r[ie]); v[1] += number(r[it]); v[2] += number(r[isamp])
    tot_i = sum(v[0] for v in per_line.values())
    tot_s = sum(v[2] for v in per_line.values()) or 1.0
    tot_t = sum(v[1] for v in per_line.values())
    print(f'{tot_i:.3e} warp instructions, {tot_t / tot_i:.2f} active lanes per instruction')
    print('\nper function: share of warp instructions, active lanes, share of stall samples')
    per_func = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for ln, v in per_line.items():
        f = per_func[func.get(ln, '?')]
        for k in range(3):
            f[k] += v[k]
    for name, v in sorted(per_func.items(), key=lambda kv: -kv[1][0]):
        if v[0] / tot_i >= 0.003:
            print(f'  {name:<22} {100 * v[0] / tot_i:5.1f} %  {v[1] / max(v[0], 1):4.1f} lanes  {100 * v[2] / tot_s:5.1f} %')
    print(f'\ntop {a.lines} lines')
    for ln, v in sorted(per_line.items(), key=lambda kv: -kv[1][0])[:a.lines]:
        text = src[ln - 1].strip() if 0 < ln <= len(src) else '?'
        print(f'  {ln:4d} {100 * v[0] / tot_i:5.2f} %  {v[1] / max(v[0], 1):4.1f} lanes  {100 * v[2] / tot_s:5.2f} %  {text[:90]}')


if __name__ == '__main__':
    main()
