"""Compiler options for translation units that instantiate backends/common kernels."""

# GCC's -O2 only vectorizes loops whose trip count is a known multiple of the
# vector width; kernel loops have run-time lengths, so allow epilogues. Has no
# effect at -O0 (the dbg and asan configs). -fno-math-errno: std::sqrt never
# sets errno (Tandem never reads it), so loops calling it vectorize (adam's
# update was scalar); the results are the same, sqrt being exact either way.
KERNEL_COPTS = [
    "-fvect-cost-model=dynamic",
    "-fno-math-errno",
]
