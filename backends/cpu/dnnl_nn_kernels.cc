// float32 conv2d, pool2d and their gradients on the cpu through oneDNN
// primitives (convolution forward / backward data / backward weights,
// pooling forward / backward). Each kernel instance caches its primitives
// for the last input shapes it saw and rebuilds them when the shapes
// change. Tensors stay NCHW (filters [M, C/groups, KH, KW]) row-major;
// where oneDNN picks a blocked layout (convolutions), cached reorders
// convert on the way in and out. float64 runs the portable kernels
// (backends/common/nn_layer_kernels.h). Against the portable float32
// kernels (//backends/cpu:nn_layer_kernels_benchmark, one thread, a small
// CNN's layers): conv2d forward 1.3-5x, conv2d_grad 1.5-2.4x (the filter
// gradient of a 1-channel first layer 2.4x; only the input gradient of a
// 1-channel input, which no model needs, is slower), pool2d forward about
// 4x and its gradient 3x (max) to 8x (avg).
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/common/nn_layer_kernels.h"
#include "backends/cpu/cpu_policy.h"
#include "framework/kernel/kernel_registry.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "oneapi/dnnl/dnnl_debug.h"
#include "ops/math/prologues.h"
#include "ops/nn/prologues.h"

namespace tandem {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

const dnnl::engine& Engine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Runs `fn`, converting a oneDNN exception into an Internal error that
// names the op and what failed.
template <typename Fn>
absl::Status DnnlTry(const KernelContext& ctx, const char* what, Fn&& fn) {
  try {
    fn();
    return absl::OkStatus();
  } catch (const dnnl::error& e) {
    return absl::InternalError(absl::StrCat(__FILE__, ": op '", ctx.op().type, "': oneDNN ", what,
                                            " failed: ", e.what(), " (", dnnl_status2str(e.status),
                                            ")"));
  }
}

// A oneDNN primitive whose arguments are plain-layout user buffers: an
// argument for which the primitive chose another layout goes through a
// cached reorder and scratch buffer.
class PlainPrimitive {
 public:
  struct Arg {
    int id;                  // DNNL_ARG_*
    memory::desc user;       // the plain layout of the caller's buffer
    memory::desc primitive;  // the layout the primitive reads or writes
    bool output;
  };

  PlainPrimitive(dnnl::primitive primitive, const std::vector<Arg>& args)
      : primitive_(std::move(primitive)) {
    for (const Arg& a : args) {
      Bound b{a.id, a.output, memory(a.user, Engine(), DNNL_MEMORY_NONE), std::nullopt,
              std::nullopt};
      if (a.primitive != a.user) {
        b.inner = memory(a.primitive, Engine());
        b.reorder = a.output ? dnnl::reorder(*b.inner, b.user) : dnnl::reorder(b.user, *b.inner);
      }
      args_.push_back(std::move(b));
    }
  }

  // Runs the primitive on the caller's buffers (by argument id) and waits.
  void Execute(const std::map<int, void*>& data) {
    dnnl::stream stream(Engine());
    std::unordered_map<int, memory> bound;
    for (Bound& b : args_) {
      b.user.set_data_handle(data.at(b.id));
      if (b.reorder && !b.output) b.reorder->execute(stream, b.user, *b.inner);
      bound[b.id] = b.inner ? *b.inner : b.user;
    }
    primitive_.execute(stream, bound);
    for (Bound& b : args_) {
      if (b.reorder && b.output) b.reorder->execute(stream, *b.inner, b.user);
    }
    stream.wait();
  }

 private:
  struct Bound {
    int id;
    bool output;
    memory user;
    std::optional<memory> inner;
    std::optional<dnnl::reorder> reorder;
  };
  dnnl::primitive primitive_;
  std::vector<Bound> args_;
};

// Multiply-adds, times two, of one pass (forward, data or filter gradient)
// of a convolution: what sizes its oneDNN team.
int64_t ConvFlops(const Conv2DGeometry& g) {
  return 2 * g.n * g.m * g.oh * g.ow * (g.c / g.p.groups) * g.kh * g.kw;
}

// Elements a pooling pass reads (its windows), and how many of those make
// a thread's share (about 0.1 ms): what sizes its oneDNN team.
int64_t PoolReads(const Pool2DGeometry& g) { return g.n * g.c * g.oh * g.ow * g.p.kh * g.p.kw; }
constexpr int64_t kMinPoolReadsPerThread = int64_t{1} << 18;

// The memory descriptors and attrs of one conv2d geometry.
struct ConvDescs {
  memory::desc src, weights, dst;  // plain user layouts
  memory::desc src_any, weights_any, dst_any;
  memory::dims strides, dilations, padding;

  explicit ConvDescs(const Conv2DGeometry& g) {
    const auto f32 = memory::data_type::f32;
    const memory::dims src_dims = {g.n, g.c, g.h, g.w}, dst_dims = {g.n, g.m, g.oh, g.ow};
    const int64_t groups = g.p.groups;
    const memory::dims w_dims = groups == 1
                                    ? memory::dims{g.m, g.c, g.kh, g.kw}
                                    : memory::dims{groups, g.m / groups, g.c / groups, g.kh, g.kw};
    src = memory::desc(src_dims, f32, Tag::nchw);
    weights = memory::desc(w_dims, f32, groups == 1 ? Tag::oihw : Tag::goihw);
    dst = memory::desc(dst_dims, f32, Tag::nchw);
    src_any = memory::desc(src_dims, f32, Tag::any);
    weights_any = memory::desc(w_dims, f32, Tag::any);
    dst_any = memory::desc(dst_dims, f32, Tag::any);
    strides = {g.p.stride_h, g.p.stride_w};
    dilations = {g.p.dilation_h - 1, g.p.dilation_w - 1};  // oneDNN counts the gaps
    padding = {g.p.pad_h, g.p.pad_w};
  }

  dnnl::convolution_forward::primitive_desc Forward() const {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, src_any, weights_any,
                                        dst_any, strides, dilations, padding, padding),
        Engine());
  }
};

// The shapes a kernel's cached primitives were built for.
using ShapeKey = std::pair<Shape, Shape>;

// Output = conv2d(Input, Filter) for float32 (see the conv2d schema).
class DnnlConv2DKernel final : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Output", DataType::kFloat32, c.g.output));
    if (c.g.n == 0) return absl::OkStatus();
    const ShapeKey key{c.input->shape(), c.filter->shape()};
    const ScopedDnnlThreads threads(ConvFlops(c.g), kMinFlopsPerThread);
    return DnnlTry(*ctx, "convolution forward", [&] {
      if (!forward_ || key != key_) {
        const ConvDescs d(c.g);
        const auto pd = d.Forward();
        forward_.emplace(dnnl::convolution_forward(pd),
                         std::vector<PlainPrimitive::Arg>{
                             {DNNL_ARG_SRC, d.src, pd.src_desc(), false},
                             {DNNL_ARG_WEIGHTS, d.weights, pd.weights_desc(), false},
                             {DNNL_ARG_DST, d.dst, pd.dst_desc(), true}});
        key_ = key;
      }
      forward_->Execute({{DNNL_ARG_SRC, c.input->raw_data()},
                         {DNNL_ARG_WEIGHTS, c.filter->raw_data()},
                         {DNNL_ARG_DST, out->raw_data()}});
    });
  }

 private:
  Conv2DParams params_;
  ShapeKey key_;
  std::optional<PlainPrimitive> forward_;
};

// Input@GRAD and Filter@GRAD (each optional) of float32 conv2d.
class DnnlConv2DGradKernel final : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadConv2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Conv c, prologue::GetConv(*ctx, params_, true));
    Tensor* dx = nullptr;
    Tensor* dw = nullptr;
    if (ctx->OutputVar("Input@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dx, ctx->AllocateOutput("Input@GRAD", DataType::kFloat32, c.input->shape()));
    }
    if (ctx->OutputVar("Filter@GRAD") != nullptr) {
      ASSIGN_OR_RETURN(dw,
                       ctx->AllocateOutput("Filter@GRAD", DataType::kFloat32, c.filter->shape()));
    }
    if (c.g.n == 0) {  // no samples: the filter gradient is zero
      if (dw != nullptr) std::fill_n(dw->data<float>(), dw->NumElements(), 0.f);
      return absl::OkStatus();
    }
    const ShapeKey key{c.input->shape(), c.filter->shape()};
    const ScopedDnnlThreads threads(ConvFlops(c.g), kMinFlopsPerThread);
    return DnnlTry(*ctx, "convolution backward", [&] {
      if (key != key_) {
        data_.reset();
        weights_.reset();
        key_ = key;
      }
      const ConvDescs d(c.g);
      if (dx != nullptr) {
        if (!data_) {
          const auto hint = d.Forward();
          const dnnl::convolution_backward_data::primitive_desc pd(
              dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, d.src_any,
                                                    d.weights_any, d.dst_any, d.strides,
                                                    d.dilations, d.padding, d.padding),
              Engine(), hint);
          data_.emplace(dnnl::convolution_backward_data(pd),
                        std::vector<PlainPrimitive::Arg>{
                            {DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false},
                            {DNNL_ARG_WEIGHTS, d.weights, pd.weights_desc(), false},
                            {DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), true}});
        }
        data_->Execute({{DNNL_ARG_DIFF_DST, c.dout->raw_data()},
                        {DNNL_ARG_WEIGHTS, c.filter->raw_data()},
                        {DNNL_ARG_DIFF_SRC, dx->raw_data()}});
      }
      if (dw != nullptr) {
        if (!weights_) {
          const auto hint = d.Forward();
          const dnnl::convolution_backward_weights::primitive_desc pd(
              dnnl::convolution_backward_weights::desc(
                  dnnl::algorithm::convolution_direct, d.src_any, d.weights_any, d.dst_any,
                  d.strides, d.dilations, d.padding, d.padding),
              Engine(), hint);
          weights_.emplace(dnnl::convolution_backward_weights(pd),
                           std::vector<PlainPrimitive::Arg>{
                               {DNNL_ARG_SRC, d.src, pd.src_desc(), false},
                               {DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false},
                               {DNNL_ARG_DIFF_WEIGHTS, d.weights, pd.diff_weights_desc(), true}});
        }
        weights_->Execute({{DNNL_ARG_SRC, c.input->raw_data()},
                           {DNNL_ARG_DIFF_DST, c.dout->raw_data()},
                           {DNNL_ARG_DIFF_WEIGHTS, dw->raw_data()}});
      }
    });
  }

 private:
  Conv2DParams params_;
  ShapeKey key_;
  std::optional<PlainPrimitive> data_;
  std::optional<PlainPrimitive> weights_;
};

// The memory descriptors and attrs of one pool2d geometry (plain NCHW: the
// pooling primitives run on it directly, faster than with reorders).
struct PoolDescs {
  memory::desc src, dst;
  memory::dims strides, kernel, padding;
  dnnl::algorithm algorithm;

  explicit PoolDescs(const Pool2DGeometry& g) {
    const auto f32 = memory::data_type::f32;
    src = memory::desc({g.n, g.c, g.h, g.w}, f32, Tag::nchw);
    dst = memory::desc({g.n, g.c, g.oh, g.ow}, f32, Tag::nchw);
    strides = {g.p.stride_h, g.p.stride_w};
    kernel = {g.p.kh, g.p.kw};
    padding = {g.p.pad_h, g.p.pad_w};
    // Windows never reach past the padding, so "include padding" divides
    // by kh * kw, as non-exclusive pool2d does.
    algorithm = g.p.max         ? dnnl::algorithm::pooling_max
                : g.p.exclusive ? dnnl::algorithm::pooling_avg_exclude_padding
                                : dnnl::algorithm::pooling_avg_include_padding;
  }

  dnnl::pooling_forward::primitive_desc Forward(dnnl::prop_kind kind) const {
    return dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(kind, algorithm, src, dst, strides, kernel, padding, padding),
        Engine());
  }
};

// Out = pool2d(X) for float32 (see the pool2d schema).
class DnnlPool2DKernel final : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, false));
    ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput("Out", DataType::kFloat32, p.g.out));
    if (p.g.n == 0) return absl::OkStatus();
    const ScopedDnnlThreads threads(PoolReads(p.g), kMinPoolReadsPerThread);
    return DnnlTry(*ctx, "pooling forward", [&] {
      if (!forward_ || p.x->shape() != key_) {
        const PoolDescs d(p.g);
        const auto pd = d.Forward(dnnl::prop_kind::forward_inference);
        forward_.emplace(
            dnnl::pooling_forward(pd),
            std::vector<PlainPrimitive::Arg>{{DNNL_ARG_SRC, d.src, pd.src_desc(), false},
                                             {DNNL_ARG_DST, d.dst, pd.dst_desc(), true}});
        key_ = p.x->shape();
      }
      forward_->Execute({{DNNL_ARG_SRC, p.x->raw_data()}, {DNNL_ARG_DST, out->raw_data()}});
    });
  }

 private:
  Pool2DParams params_;
  Shape key_;
  std::optional<PlainPrimitive> forward_;
};

// X@GRAD of float32 pool2d. Max pooling reruns the forward pass in training
// mode for oneDNN's workspace (the position of each window's first maximum).
class DnnlPool2DGradKernel final : public OpKernel {
 public:
  absl::Status Init(const OpDesc& op) override {
    return prologue::Store(ReadPool2DParams(op), &params_);
  }

  absl::Status Compute(KernelContext* ctx) override {
    ASSIGN_OR_RETURN(const prologue::Pool p, prologue::GetPool(*ctx, params_, true));
    ASSIGN_OR_RETURN(Tensor * dx, ctx->AllocateOutput("X@GRAD", DataType::kFloat32, p.x->shape()));
    if (p.g.n == 0) return absl::OkStatus();
    const ScopedDnnlThreads threads(PoolReads(p.g), kMinPoolReadsPerThread);
    return DnnlTry(*ctx, "pooling backward", [&] {
      if (!backward_ || p.x->shape() != key_) {
        const PoolDescs d(p.g);
        const auto hint = d.Forward(dnnl::prop_kind::forward_training);
        const dnnl::pooling_backward::primitive_desc pd(
            dnnl::pooling_backward::desc(d.algorithm, d.src, d.dst, d.strides, d.kernel, d.padding,
                                         d.padding),
            Engine(), hint);
        std::vector<PlainPrimitive::Arg> args = {
            {DNNL_ARG_DIFF_DST, d.dst, pd.diff_dst_desc(), false},
            {DNNL_ARG_DIFF_SRC, d.src, pd.diff_src_desc(), true}};
        if (params_.max) {
          workspace_ = memory(hint.workspace_desc(), Engine());
          scratch_out_ = memory(hint.dst_desc(), Engine());
          forward_.emplace(
              dnnl::pooling_forward(hint),
              std::vector<PlainPrimitive::Arg>{
                  {DNNL_ARG_SRC, d.src, hint.src_desc(), false},
                  {DNNL_ARG_DST, d.dst, hint.dst_desc(), true},
                  {DNNL_ARG_WORKSPACE, hint.workspace_desc(), hint.workspace_desc(), true}});
          args.push_back({DNNL_ARG_WORKSPACE, hint.workspace_desc(), hint.workspace_desc(), false});
        }
        backward_.emplace(dnnl::pooling_backward(pd), args);
        key_ = p.x->shape();
      }
      std::map<int, void*> data = {{DNNL_ARG_DIFF_DST, p.dout->raw_data()},
                                   {DNNL_ARG_DIFF_SRC, dx->raw_data()}};
      if (params_.max) {
        forward_->Execute({{DNNL_ARG_SRC, p.x->raw_data()},
                           {DNNL_ARG_DST, scratch_out_.get_data_handle()},
                           {DNNL_ARG_WORKSPACE, workspace_.get_data_handle()}});
        data[DNNL_ARG_WORKSPACE] = workspace_.get_data_handle();
      }
      backward_->Execute(data);
    });
  }

 private:
  Pool2DParams params_;
  Shape key_;
  std::optional<PlainPrimitive> forward_;  // max only: produces the workspace
  std::optional<PlainPrimitive> backward_;
  memory workspace_, scratch_out_;  // max only
};

REGISTER_KERNEL(KernelDef("conv2d", "cpu").TypeConstraint("Input", {DataType::kFloat32}),
                DnnlConv2DKernel);
REGISTER_KERNEL(KernelDef("conv2d_grad", "cpu").TypeConstraint("Input", {DataType::kFloat32}),
                DnnlConv2DGradKernel);
REGISTER_KERNEL(KernelDef("pool2d", "cpu").TypeConstraint("X", {DataType::kFloat32}),
                DnnlPool2DKernel);
REGISTER_KERNEL(KernelDef("pool2d_grad", "cpu").TypeConstraint("X", {DataType::kFloat32}),
                DnnlPool2DGradKernel);

}  // namespace
}  // namespace tandem
