"""tandem_fuzzer: a libFuzzer target and the test that replays its inputs.

    tandem_fuzzer(name = "place_fuzzer", srcs = ["place_fuzzer.cc"], deps = [":place"])

makes, from a source that defines LLVMFuzzerTestOneInput:
  <name>_lib               the entry point, as a library;
  <name>                   the fuzzer binary: build with --config=fuzz (clang,
                           libFuzzer, ASan+UBSan); tools/fuzz.sh runs it;
  <name>_regression_test   a normal-build test feeding every file of
                           <name>_corpus/ (the seeds) and <name>_regressions/
                           (inputs that once crashed) through the entry point,
                           so CI checks them without clang.
"""

def tandem_fuzzer(name, srcs, deps = [], visibility = None):
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = srcs,
        deps = deps,
        alwayslink = True,
    )
    native.cc_binary(
        name = name,
        testonly = True,
        deps = [":" + name + "_lib"],
        linkopts = ["-fsanitize=fuzzer"],  # libFuzzer's main, in the fuzzer binaries only
        tags = ["manual"],  # links only under --config=fuzz (clang)
        visibility = visibility,
    )
    corpus = native.glob([name + "_corpus/**", name + "_regressions/**"])
    native.cc_test(
        name = name + "_regression_test",
        size = "small",
        data = corpus,
        args = [native.package_name() + "/" + name + "_corpus",
                native.package_name() + "/" + name + "_regressions"],
        deps = [
            ":" + name + "_lib",
            "//framework/testing:fuzz_replay_main",
        ],
    )
