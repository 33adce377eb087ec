"""Whether this machine runs the instruction set proxc's own code was built
for: a wheel built with -march=x86-64-v3 (AVX2) would die of SIGILL on an
older processor, somewhere inside its first solve, instead of saying why."""
import platform

# The CPU flags (as /proc/cpuinfo names them) that each x86-64 level adds
# (the x86-64 psABI's micro-architecture levels; lzcnt is 'abm' there).
_LEVELS = {
    "x86-64-v2": ["cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"],
    "x86-64-v3": ["avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"],
    "x86-64-v4": ["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"],
}


def needed_flags(march):
    """The CPU flags the instruction set `march` needs beyond baseline x86-64."""
    if march not in _LEVELS:
        return []
    order = list(_LEVELS)
    return [f for level in order[:order.index(march) + 1] for f in _LEVELS[level]]


def missing_flags(march, cpuinfo="/proc/cpuinfo"):
    """The flags `march` needs that this machine's processor lacks ([] when
    it has them all, or when it cannot be told)."""
    needed = needed_flags(march)
    if not needed or platform.machine() not in ("x86_64", "AMD64"):
        return []
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [flag for flag in needed if flag not in have]
    except OSError:
        pass
    return []


def require(march):
    """Raises ImportError naming what this processor lacks for `march` (a
    level of the table above; any other -march is not checked)."""
    missing = missing_flags(march)
    if missing:
        raise ImportError(
            f"this proxc was built for {march}, and this processor lacks {', '.join(missing)}: build it here "
            f"from its source distribution or a checkout instead (pip install proxc-VERSION.tar.gz, or pip "
            f"install . in a checkout; docs/python.md, 'Install')")
