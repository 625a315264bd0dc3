"""OpenBLAS's kernels for the CPU the references run on.

Debian's PyTorch 1.13 does its matmuls (Linear, and so MLPs) in OpenBLAS 0.3.21, which picks its
kernels by the CPU's family and model. On a VM that reports a generic model ("Intel Xeon
Processor") it falls back to its Prescott kernels (SSE3): `OPENBLAS_VERBOSE=2` prints
"Core: Prescott" here, and a 784-256-128-10 MLP at batch 1 took 118 us against 22 us with the
SkylakeX kernels. A reference must run at its best, so the benchmarks name the kernels the CPU's
features allow (OPENBLAS_CORETYPE), unless the caller already has.
"""


def coretype(cpuinfo="/proc/cpuinfo"):
    """The OPENBLAS_CORETYPE this CPU's flags allow: SkylakeX (AVX-512), Haswell (AVX2), or None."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(flags):
        return "SkylakeX"
    if {"avx2", "fma"} <= set(flags):
        return "Haswell"
    return None


def with_coretype(env):
    """env with OPENBLAS_CORETYPE set from this CPU's flags where it is not set already."""
    env = dict(env)
    core = None if "OPENBLAS_CORETYPE" in env else coretype()
    if core:
        env["OPENBLAS_CORETYPE"] = core
    return env
