"""Compiler options for translation units that instantiate backends/common kernels."""

# GCC's -O2 only vectorizes loops whose trip count is a known multiple of the
# vector width; kernel loops have run-time lengths, so allow epilogues. Has no
# effect at -O0 (the dbg and asan configs). -fno-math-errno: std::sqrt never
# sets errno (Tandem never reads it), so loops calling it vectorize (adam's
# update was scalar); the results are the same, sqrt being exact either way.
# clang (the sanitizer build, .bazelrc's config fuzz) has no cost-model option.
KERNEL_COPTS = select({
    "//backends/common:clang": [],
    "//conditions:default": ["-fvect-cost-model=dynamic"],
}) + ["-fno-math-errno"]

# OpenMP for the cpu kernels. Under clang, -fopenmp=libgomp links gcc's
# runtime (the one Debian's oneDNN uses: one runtime in the process) and
# leaves the pragmas unexpanded, so the sanitizer build runs the kernels'
# parallel loops on the calling thread.
OPENMP_COPTS = select({
    "//backends/common:clang": ["-fopenmp=libgomp"],
    "//conditions:default": ["-fopenmp"],
})
