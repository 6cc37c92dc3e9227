#!/usr/bin/env python3
"""Compile-check every CUDA kernel of the workspace with NVRTC (no GPU needed).

Loads libnvrtc from the `nvidia-cuda-nvrtc` wheel (pinned to 13.0.88 in .ci/run: driver 580 rejects
PTX from newer NVRTC), prints its version, compiles a sanity kernel to prove the tool chain works,
then compiles every `crates/*/kernels/*.cu` for sm_90 with `crates/core/kernels` on the include
path. Exit code 1 on any compile error, with NVRTC's log.

Until the CUDA back end lands (issue #3) there are no kernels; the script says so and still
checks NVRTC itself. `warpdrive doctor --compile-only` will take over this job.
"""
import ctypes
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_nvrtc():
    import nvidia  # the wheel's namespace package

    for base in nvidia.__path__:
        for lib in sorted(glob.glob(os.path.join(base, "cu*", "lib", "libnvrtc.so.*"))):
            if "alt" not in os.path.basename(lib) and "builtins" not in lib:
                # NVRTC dlopens its builtins library by soname: load it first, globally.
                for b in glob.glob(os.path.join(os.path.dirname(lib), "libnvrtc-builtins.so.*")):
                    if "alt" not in os.path.basename(b):
                        ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
                return ctypes.CDLL(lib), lib
    sys.exit("nvrtc-check: libnvrtc not found in the nvidia-cuda-nvrtc wheel")


def compile_source(nvrtc, name, src, include_dirs):
    prog = ctypes.c_void_p()
    rc = nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), 0, None, None)
    if rc != 0:
        return False, f"nvrtcCreateProgram failed ({rc})"
    opts = [b"--gpu-architecture=compute_90", b"--std=c++17"] + [f"--include-path={d}".encode() for d in include_dirs]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, log.value.decode(errors="replace")


def main():
    nvrtc, path = load_nvrtc()
    major, minor = ctypes.c_int(), ctypes.c_int()
    nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    print(f"nvrtc-check: NVRTC {major.value}.{minor.value} from {path}", flush=True)
    if (major.value, minor.value) != (13, 0):
        sys.exit(f"nvrtc-check: need NVRTC 13.0 (the device driver rejects newer PTX), found {major.value}.{minor.value}")
    ok, log = compile_source(nvrtc, "sanity.cu", 'extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }', [])
    if not ok:
        sys.exit(f"nvrtc-check: sanity kernel failed:\n{log}")
    includes = [os.path.join(ROOT, "crates", "core", "kernels")]
    kernels = sorted(glob.glob(os.path.join(ROOT, "crates", "*", "kernels", "*.cu")))
    failed = 0
    for k in kernels:
        with open(k) as f:
            ok, log = compile_source(nvrtc, os.path.basename(k), f.read(), includes + [os.path.dirname(k)])
        print(f"nvrtc-check: {'ok  ' if ok else 'FAIL'} {os.path.relpath(k, ROOT)}")
        if not ok:
            print(log)
            failed += 1
    print(f"nvrtc-check: {len(kernels)} kernel file(s), {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
