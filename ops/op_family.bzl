"""tandem_op_family: the Bazel targets of one op family under ops/<family>/."""

def tandem_op_family(name, srcs, deps = [], test_deps = [], prologue_deps = None):
    """The schemas of one op family and the shape functions they share with kernels.

    Makes, in the family's package:
      :shape_fns       shape_fns.h / shape_fns.cc, the shape functions the
                       schemas and the kernels share (on //ops/math:shape_fns);
      :<name>          the schemas, `srcs` (REGISTER_OP: registration is a
                       side effect, so alwayslink);
      :shape_fns_test  shape_fns_test.cc;
      :prologues       prologues.h / prologues.cc when `prologue_deps` is given:
                       the argument checks every place's kernels run first.
    The libraries are visible to //ops:users.

    Args:
      name: the family, also its package's last path component ("nn").
      srcs: the family's *_op.cc files.
      deps: what the schemas need beyond the shape functions, status, op and Abseil.
      test_deps: what shape_fns_test.cc needs beyond both libraries and the matchers.
      prologue_deps: what prologues.cc needs beyond the shape functions, the
        kernel context, tensors, status and Abseil (None: no prologues).
    """
    native.cc_library(
        name = "shape_fns",
        srcs = ["shape_fns.cc"],
        hdrs = ["shape_fns.h"],
        visibility = ["//ops:users"],
        deps = [
            "//framework/base:status",
            "//framework/op",
            "//framework/types",
            "//ops/math:shape_fns",
            "//third_party/absl",
        ],
    )
    native.cc_library(
        name = name,
        srcs = srcs,
        visibility = ["//ops:users"],
        deps = [
            ":shape_fns",
            "//framework/base:status",
            "//framework/op",
            "//ops/math:shape_fns",
            "//third_party/absl",
        ] + deps,
        alwayslink = True,
    )
    if prologue_deps != None:
        native.cc_library(
            name = "prologues",
            srcs = ["prologues.cc"],
            hdrs = ["prologues.h"],
            visibility = ["//ops:users"],
            deps = [
                ":shape_fns",
                "//framework/base:status",
                "//framework/kernel",
                "//framework/op",
                "//framework/tensor",
                "//framework/types",
                "//ops/math:shape_fns",
                "//third_party/absl",
            ] + prologue_deps,
        )
    native.cc_test(
        name = "shape_fns_test",
        size = "small",
        srcs = ["shape_fns_test.cc"],
        deps = [
            ":" + name,
            ":shape_fns",
            "//framework/base:status",
            "//framework/testing:status_matchers",
            "//third_party/gtest:gtest_main",
        ] + test_deps,
    )
