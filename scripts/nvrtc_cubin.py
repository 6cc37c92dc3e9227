"""NVRTC from Python without a GPU (pip nvidia-cuda-nvrtc==13.0.88, as .ci/run installs it): load
the library and compile a CUDA source to a cubin. Shared by scripts/kernel-sass-size.py and
scripts/kernel-contraction.py."""
import ctypes, glob, os, sys


def nvrtc():
    """libnvrtc: from LD_LIBRARY_PATH, else the CI's NVRTC venv (.ci/.venv)."""
    for name in ['libnvrtc.so.13', 'libnvrtc.so']:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    for p in glob.glob(os.path.join(os.path.dirname(__file__), '..', '.ci', '.venv', 'lib', 'python3*', 'site-packages',
                                    'nvidia', 'cu13', 'lib', 'libnvrtc.so*')):
        return ctypes.CDLL(p)
    sys.exit('libnvrtc not found (pip install nvidia-cuda-nvrtc==13.0.88, set LD_LIBRARY_PATH)')


def source_arguments(ap):
    """The arguments naming a build: the source, its include directory, the architecture, -D
    switches."""
    ap.add_argument('source')
    ap.add_argument('--include', default='crates/core/kernels')
    ap.add_argument('--arch', default='sm_90')
    ap.add_argument('-D', action='append', default=[])


def cubin(lib, path, opts):
    """The cubin bytes of CUDA source file `path` compiled with NVRTC options `opts` (exits with
    NVRTC's log on an error)."""
    src = open(path, 'rb').read()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, os.path.basename(path).encode(), 0, None, None) == 0
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit(log.value.decode())
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    out = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, out)
    return out.raw
