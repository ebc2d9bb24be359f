// The CUDA backend end to end: registration (runs anywhere), then the device,
// its allocators, copies, streams and events, and every kernel against a
// host computation through RunOpEager (skipped without a GPU).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/nn_launchers.h"
#include "framework/device/device_registry.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/runtime/eager.h"
#include "framework/tensor/selected_rows.h"
#include "framework/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "ops/array/shape_fns.h"
#include "ops/math/shape_fns.h"

namespace tandem {
namespace cuda {
namespace {

using ::testing::AllOf;
using ::testing::MatchesRegex;

int GpuCount() { return DeviceRegistry::Global().DeviceCount(DeviceType::GPU()); }

// ---------------------------------------------------------------------------
// Anywhere, GPU or not.

TEST(CudaBackend, KernelsAreRegisteredOnGpu) {
  for (const char* op : {"fill_constant",
                         "elementwise_add",
                         "elementwise_add_grad",
                         "matmul",
                         "matmul_grad",
                         "scale",
                         "cast",
                         "lookup_table",
                         "lookup_table_grad",
                         "l2_normalize",
                         "l2_normalize_grad",
                         "square_error_cost",
                         "square_error_cost_grad",
                         "mean",
                         "mean_grad",
                         "sgd",
                         "shape",
                         "slice",
                         "slice_grad",
                         "crop_tensor",
                         "crop_tensor_grad",
                         "uniform_random",
                         "momentum",
                         "adam",
                         "gaussian_random",
                         "elementwise_sub",
                         "elementwise_sub_grad",
                         "elementwise_mul",
                         "elementwise_mul_grad",
                         "elementwise_div",
                         "elementwise_div_grad",
                         "relu",
                         "relu_grad",
                         "sigmoid",
                         "sigmoid_grad",
                         "tanh",
                         "tanh_grad",
                         "reduce_sum",
                         "reduce_sum_grad",
                         "reduce_mean",
                         "reduce_mean_grad",
                         "mul",
                         "mul_grad",
                         "fc",
                         "fc_grad",
                         "softmax",
                         "softmax_grad",
                         "softmax_with_cross_entropy",
                         "softmax_with_cross_entropy_grad",
                         "accuracy",
                         "reshape",
                         "reshape_grad",
                         "transpose",
                         "transpose_grad",
                         "concat",
                         "concat_grad",
                         "split",
                         "split_grad",
                         "dropout",
                         "dropout_grad",
                         "conv2d",
                         "conv2d_grad",
                         "pool2d",
                         "pool2d_grad",
                         "layer_norm",
                         "layer_norm_grad"}) {
    EXPECT_TRUE(KernelRegistry::Global().HasKernel(op, DeviceType::GPU())) << op;
  }
}

// The gpu kernel of `op`; null when there is none.
const KernelDef* GpuKernelDef(const std::string& op) {
  for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(op)) {
    if (k->def.device_type() == DeviceType::GPU()) return &k->def;
  }
  return nullptr;
}

// The host-memory arguments of a gpu kernel that the cpu kernel does not
// declare (it reads them in host memory anyway): lookup_table_grad's Ids,
// the row list of its sparse gradient (nn_kernels.cc).
std::set<std::string> HostArgsAsOnCpu(const KernelDef& gpu) {
  std::set<std::string> args = gpu.host_memory_args();
  if (gpu.op() == "lookup_table_grad") args.erase("Ids");
  return args;
}

// The registration lines of the new kernels: the same dtypes and host-memory
// arguments as the cpu and sim kernels (backends/common).
TEST(CudaBackend, NewKernelsDeclareTheirDtypesAndHostMemory) {
  struct Want {
    const char* op;
    const char* typed_arg;
    std::set<DataType> types;
    std::set<std::string> host_args;
  };
  const std::set<DataType> floats(kFloatTypes.begin(), kFloatTypes.end());
  const std::set<DataType> numeric(kNumericTypes.begin(), kNumericTypes.end());
  const std::set<DataType> all(AllDataTypes().begin(), AllDataTypes().end());
  const std::vector<Want> wants = {
      {"lookup_table", "W", floats, {}},
      {"lookup_table_grad", "W", floats, {"Ids"}},
      {"l2_normalize", "X", floats, {}},
      {"l2_normalize_grad", "X", floats, {}},
      {"square_error_cost", "X", floats, {}},
      {"square_error_cost_grad", "X", floats, {}},
      {"mean", "X", floats, {}},
      {"mean_grad", "X", floats, {}},
      {"sgd", "Param", floats, {"LearningRate"}},
      {"shape", "Input", all, {"Out"}},
      {"slice", "Input", numeric, {}},
      {"slice_grad", "Input", numeric, {}},
      {"crop_tensor", "X", numeric, {"Shape"}},
      {"crop_tensor_grad", "X", numeric, {"Shape"}},
      {"uniform_random", "dtype", floats, {}},
      {"momentum", "Param", floats, {"LearningRate"}},
      {"adam",
       "Param",
       floats,
       {"LearningRate", "Beta1Pow", "Beta2Pow", "Beta1PowOut", "Beta2PowOut"}},
      {"gaussian_random", "dtype", floats, {}},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(w.op);
    const KernelDef* def = GpuKernelDef(w.op);
    ASSERT_NE(def, nullptr);
    ASSERT_EQ(def->type_constraints().size(), 1u);
    EXPECT_EQ(def->type_constraints().count(w.typed_arg), 1u);
    EXPECT_EQ(def->type_constraints().begin()->second, w.types);
    EXPECT_EQ(def->host_memory_args(), w.host_args);
    // And exactly what the cpu kernel declares (but see HostArgsAsOnCpu).
    const KernelDef* cpu = nullptr;
    for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(w.op)) {
      if (k->def.device_type() == DeviceType::CPU()) cpu = &k->def;
    }
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(def->type_constraints(), cpu->type_constraints());
    EXPECT_EQ(HostArgsAsOnCpu(*def), cpu->host_memory_args());
  }
}

// Every gpu kernel's registration line declares exactly the dtypes and
// host-memory arguments of the op's cpu kernels (the union of their dtypes
// where the cpu splits them, e.g. oneDNN's float32 conv2d and the portable
// float64 one).
TEST(CudaBackend, EveryGpuKernelDeclaresWhatTheCpuKernelDeclares) {
  int checked = 0;
  for (const KernelRegistration* gpu : KernelRegistry::Global().AllKernels()) {
    if (gpu->def.device_type() != DeviceType::GPU()) continue;
    SCOPED_TRACE(gpu->def.DebugString());
    std::map<std::string, std::set<DataType>> cpu_types;
    int cpu_kernels = 0;
    for (const KernelRegistration* k : KernelRegistry::Global().KernelsFor(gpu->def.op())) {
      if (k->def.device_type() != DeviceType::CPU()) continue;
      ++cpu_kernels;
      for (const auto& [arg, types] : k->def.type_constraints()) {
        cpu_types[arg].insert(types.begin(), types.end());
      }
      EXPECT_EQ(HostArgsAsOnCpu(gpu->def), k->def.host_memory_args());
    }
    ASSERT_GT(cpu_kernels, 0);
    EXPECT_EQ(gpu->def.type_constraints(), cpu_types);
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

TEST(CudaBackend, GpuFactoryIsLinkedAndCountsWithoutCrashing) {
  ASSERT_NE(DeviceRegistry::Global().FactoryFor(DeviceType::GPU()), nullptr);
  EXPECT_EQ(GPUPlace(0).LogName(), "CUDAPlace(0)");
  int n = 0;
  const cudaError_t error = cudaGetDeviceCount(&n);
  cudaGetLastError();
  EXPECT_EQ(GpuCount(), error == cudaSuccess ? n : 0);
}

TEST(CudaBackend, WithoutGpuEverythingIsAStatus) {
  if (GpuCount() > 0) GTEST_SKIP() << "a GPU is present";
  EXPECT_THAT(DeviceRegistry::Global().GetDevice(GPUPlace(0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 gpu device(s)")));
  OpDesc op;
  op.type = "fill_constant";
  op.attrs["shape"] = std::vector<int64_t>{2};
  EXPECT_THAT(RunOpEager(op, GPUPlace(0), {}), StatusIs(absl::StatusCode::kInvalidArgument));
  { DeviceGuard guard(GPUPlace(0)); }  // a no-op, not a crash
}

// ---------------------------------------------------------------------------
// On a GPU.

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (GpuCount() == 0) GTEST_SKIP() << "no GPU";
    absl::StatusOr<Device*> d = DeviceRegistry::Global().GetDevice(GPUPlace(0));
    ASSERT_OK(d.status());
    device_ = CudaDeviceOf(*d);
  }

  CudaDevice* device_ = nullptr;
};

TEST_F(GpuTest, DescriptionNamesModelMemoryAndArch) {
  EXPECT_THAT(device_->Description(), MatchesRegex(".+ \\([0-9]+\\.[0-9] GiB, sm_[0-9]+\\)"));
  EXPECT_EQ(device_->place(), GPUPlace(0));
}

TEST_F(GpuTest, AllocatorCachesAndReuses) {
  CachingAllocator* a = device_->allocator();
  EXPECT_EQ(a->place(), GPUPlace(0));
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(1000));
  a->Deallocate(p, 1000);
  ASSERT_OK_AND_ASSIGN(void* q, a->Allocate(900));
  EXPECT_EQ(q, p);
  ASSERT_OK_AND_ASSIGN(void* z, a->Allocate(0));
  EXPECT_NE(z, nullptr);
  EXPECT_NE(z, q);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, q), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  a->Deallocate(q, 900);
  a->Deallocate(z, 0);
}

TEST_F(GpuTest, PeakAndReservedStats) {
  CachingAllocator* a = device_->allocator();
  const AllocatorStats before = a->GetStats();
  ASSERT_OK_AND_ASSIGN(void* p, a->Allocate(3 << 20));
  const AllocatorStats during = a->GetStats();
  EXPECT_EQ(during.bytes_in_use, before.bytes_in_use + (3 << 20));
  EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
  EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
  a->Deallocate(p, 3 << 20);
  EXPECT_EQ(a->GetStats().bytes_in_use, before.bytes_in_use);
  EXPECT_GE(a->GetStats().peak_bytes_in_use, before.bytes_in_use + (3 << 20));
}

TEST_F(GpuTest, LimitGivesResourceExhaustedWithNumbers) {
  CachingAllocator* a = device_->allocator();
  const int64_t in_use = a->GetStats().bytes_in_use;
  a->SetBytesLimit(in_use + (1 << 20));
  EXPECT_THAT(a->Allocate(2 << 20), StatusIs(absl::StatusCode::kResourceExhausted,
                                             AllOf(HasSubstr("out of memory on gpu:0"),
                                                   HasSubstr("requested 2097152 bytes (2.0 MiB)"),
                                                   HasSubstr("in use"), HasSubstr("limit"))));
  a->SetBytesLimit(0);
}

TEST_F(GpuTest, DeviceOutOfMemoryIsResourceExhaustedAndGpuStaysUsable) {
  EXPECT_THAT(device_->allocator()->Allocate(size_t{1} << 50),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("requested"), HasSubstr("cudaErrorMemoryAllocation"))));
  OpDesc op;
  op.type = "fill_constant";
  op.attrs["shape"] = std::vector<int64_t>{4};
  op.attrs["value"] = 1.0;
  EXPECT_OK(RunOpEager(op, GPUPlace(0), {}).status());
}

TEST_F(GpuTest, PinnedHostMemory) {
  CachingAllocator* h = device_->host_allocator();
  EXPECT_EQ(h->place(), CPUPlace());
  ASSERT_OK_AND_ASSIGN(void* p, h->Allocate(4096));
  std::memset(p, 7, 4096);
  cudaPointerAttributes attr;
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  h->Deallocate(p, 4096);
  ASSERT_OK_AND_ASSIGN(void* q, h->Allocate(4000));
  EXPECT_EQ(q, p);
  h->Deallocate(q, 4000);
}

std::vector<float> Ramp(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.5f - 3;
  return v;
}

TEST_F(GpuTest, SyncCopiesRoundTrip) {
  const size_t n = 1023, bytes = n * sizeof(float);
  const std::vector<float> src = Ramp(n);
  std::vector<float> back(n, 0);
  CachingAllocator* a = device_->allocator();
  ASSERT_OK_AND_ASSIGN(void* d1, a->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d2, a->Allocate(bytes));
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, d1, src.data(), bytes));
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToDevice, d2, d1, bytes));
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToHost, back.data(), d2, bytes));
  EXPECT_EQ(back, src);
  EXPECT_OK(device_->Copy(CopyKind::kHostToDevice, d1, src.data(), 0));
  a->Deallocate(d1, bytes);
  a->Deallocate(d2, bytes);
}

TEST_F(GpuTest, SyncCopyWaitsForComputeStream) {
  const int64_t n = 1 << 24;
  ASSERT_OK_AND_ASSIGN(Tensor t,
                       Tensor::Allocate(device_->allocator(), DataType::kFloat32, Shape({n})));
  ASSERT_EQ(LaunchFill<float>(t.data<float>(), n, 2.5f, CudaStreamOf(device_->compute_stream())),
            cudaSuccess);
  std::vector<float> back(n);
  ASSERT_OK(device_->Copy(CopyKind::kDeviceToHost, back.data(), t.raw_data(), n * sizeof(float)));
  EXPECT_EQ(back.front(), 2.5f);
  EXPECT_EQ(back.back(), 2.5f);
}

TEST_F(GpuTest, AsyncCopiesStreamsAndEventsOrderWork) {
  const size_t n = 1 << 22, bytes = n * sizeof(float);
  CachingAllocator* h = device_->host_allocator();
  CachingAllocator* a = device_->allocator();
  ASSERT_OK_AND_ASSIGN(void* pinned_in, h->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* pinned_out, h->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d1, a->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* d2, a->Allocate(bytes));
  const std::vector<float> src = Ramp(n);
  std::memcpy(pinned_in, src.data(), bytes);
  std::memset(pinned_out, 0, bytes);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s1, device_->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s2, device_->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> uploaded, device_->CreateEvent());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> done, device_->CreateEvent());
  ASSERT_OK(device_->CopyAsync(CopyKind::kHostToDevice, d1, pinned_in, bytes, s1.get()));
  ASSERT_OK(device_->RecordEvent(uploaded.get(), s1.get()));
  ASSERT_OK(device_->StreamWaitEvent(s2.get(), uploaded.get()));
  ASSERT_OK(device_->CopyAsync(CopyKind::kDeviceToDevice, d2, d1, bytes, s2.get()));
  ASSERT_OK(device_->CopyAsync(CopyKind::kDeviceToHost, pinned_out, d2, bytes, s2.get()));
  ASSERT_OK(device_->RecordEvent(done.get(), s2.get()));
  ASSERT_OK(device_->SynchronizeEvent(done.get()));
  EXPECT_EQ(std::memcmp(pinned_out, src.data(), bytes), 0);

  std::memset(pinned_out, 0, bytes);
  ASSERT_OK(
      device_->CopyAsync(CopyKind::kDeviceToHost, pinned_out, d1, bytes, device_->copy_stream()));
  ASSERT_OK(device_->SynchronizeStream(device_->copy_stream()));
  EXPECT_EQ(std::memcmp(pinned_out, src.data(), bytes), 0);
  EXPECT_OK(device_->Synchronize());

  h->Deallocate(pinned_in, bytes);
  h->Deallocate(pinned_out, bytes);
  a->Deallocate(d1, bytes);
  a->Deallocate(d2, bytes);
}

TEST_F(GpuTest, DeviceGuardSwitchesAndRestores) {
  int current = -1;
  {
    DeviceGuard guard(GPUPlace(0));
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, 0);
    if (GpuCount() > 1) {
      {
        DeviceGuard inner(GPUPlace(1));
        ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
        EXPECT_EQ(current, 1);
        ASSERT_OK_AND_ASSIGN(Device * d1, DeviceRegistry::Global().GetDevice(GPUPlace(1)));
        ASSERT_OK_AND_ASSIGN(void* p, d1->allocator()->Allocate(64));
        cudaPointerAttributes attr;
        ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
        EXPECT_EQ(attr.device, 1);
        d1->allocator()->Deallocate(p, 64);
      }
      ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
      EXPECT_EQ(current, 0);
    }
  }
}

TEST_F(GpuTest, SecondGpuWorksWhileFirstIsCurrent) {
  if (GpuCount() < 2) GTEST_SKIP() << "needs two GPUs";
  DeviceGuard guard(GPUPlace(0));
  ASSERT_OK_AND_ASSIGN(Device * d1, DeviceRegistry::Global().GetDevice(GPUPlace(1)));
  const size_t n = 4096, bytes = n * sizeof(float);
  const std::vector<float> src = Ramp(n);
  ASSERT_OK_AND_ASSIGN(void* p, d1->allocator()->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(void* pinned, d1->host_allocator()->Allocate(bytes));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> s, d1->CreateStream());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Event> e, d1->CreateEvent());
  ASSERT_OK(d1->Copy(CopyKind::kHostToDevice, p, src.data(), bytes));
  ASSERT_OK(d1->CopyAsync(CopyKind::kDeviceToHost, pinned, p, bytes, s.get()));
  ASSERT_OK(d1->RecordEvent(e.get(), s.get()));
  ASSERT_OK(d1->SynchronizeEvent(e.get()));
  EXPECT_EQ(std::memcmp(pinned, src.data(), bytes), 0);
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, 0);
  d1->allocator()->Deallocate(p, bytes);
  d1->host_allocator()->Deallocate(pinned, bytes);

  // Kernels (cuBLAS included) give the same results on both GPUs.
  OpDesc op;
  op.type = "matmul_grad";
  const EagerInputs in = {
      {"X", {Variable(Tensor::FromVector<float>(Shape({3, 5}), Ramp(15)))}},
      {"Y", {Variable(Tensor::FromVector<float>(Shape({2, 5, 4}), Ramp(40)))}},
      {"Out@GRAD", {Variable(Tensor::FromVector<float>(Shape({2, 3, 4}), Ramp(24)))}}};
  std::vector<std::vector<float>> results;
  for (int gpu : {0, 1}) {
    ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(op, GPUPlace(gpu), in));
    for (const char* arg : {"X@GRAD", "Y@GRAD"}) {
      const Tensor& t = out.at(arg)[0].tensor();
      EXPECT_EQ(t.place(), GPUPlace(gpu));
      ASSERT_OK_AND_ASSIGN(Tensor host, CopyTensorTo(t, CPUPlace()));
      results.push_back(host.ToVector<float>());
    }
  }
  EXPECT_EQ(results[0], results[2]);
  EXPECT_EQ(results[1], results[3]);
}

// ---------------------------------------------------------------------------
// Kernels against host computations.

// Deterministic small values, exact in every dtype (multiples of 1/4).
template <typename T>
std::vector<T> Values(int64_t n, int salt = 0) {
  std::vector<T> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = (i * 37 + salt * 11) % 23 - 11;
    if constexpr (std::is_floating_point_v<T>) {
      v[i] = static_cast<T>(k) / 4;
    } else {
      v[i] = static_cast<T>(k);
    }
  }
  return v;
}

template <typename T>
Variable HostVar(const Shape& s, const std::vector<T>& v) {
  return Variable(Tensor::FromVector<T>(s, v));
}

// Runs `op` on gpu:0; returns each output copied to the host.
absl::StatusOr<std::map<std::string, Tensor>> RunOnGpu(OpDesc op, const EagerInputs& inputs) {
  absl::StatusOr<EagerOutputs> out = RunOpEager(std::move(op), GPUPlace(0), inputs);
  if (!out.ok()) return out.status();
  std::map<std::string, Tensor> host;
  for (const auto& [arg, vars] : *out) {
    if (vars.empty()) continue;
    if (vars[0].tensor().place() != GPUPlace(0)) {
      return absl::InternalError(arg + " is not on gpu:0");
    }
    absl::StatusOr<Tensor> t = CopyTensorTo(vars[0].tensor(), CPUPlace());
    if (!t.ok()) return t.status();
    host[arg] = *std::move(t);
  }
  return host;
}

OpDesc Op(const std::string& type, AttrMap attrs = {}) {
  OpDesc op;
  op.type = type;
  op.attrs = std::move(attrs);
  return op;
}

TEST_F(GpuTest, FillConstantEveryDtype) {
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{2, 3}, {}, {0}, {1023}, {3, 0, 2}}) {
    for (const double value : {2.7, -2.7, 0.0}) {
      for (DataType dtype : AllDataTypes()) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " ", value, " ", dims.size()));
        ASSERT_OK_AND_ASSIGN(
            auto out,
            RunOnGpu(Op("fill_constant", {{"shape", dims}, {"value", value}, {"dtype", dtype}}),
                     {}));
        const Tensor& t = out.at("Out");
        EXPECT_EQ(t.dtype(), dtype);
        EXPECT_EQ(t.shape(), Shape(dims));
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          T want;
          if constexpr (std::is_same_v<T, bool>) {
            want = value != 0;
          } else {
            want = static_cast<T>(value);
          }
          for (int64_t i = 0; i < t.NumElements(); ++i) ASSERT_EQ(t.data<T>()[i], want) << i;
        });
      }
    }
  }
  EXPECT_THAT(RunOnGpu(Op("fill_constant", {{"shape", std::vector<int64_t>{2, -1}}}), {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
}

// numpy-style reference: element of `s` (right-aligned, size-1 dims
// broadcast) at output coordinates `coord`.
int64_t BroadcastIndex(const Shape& s, const Shape& out, const std::vector<int64_t>& coord) {
  int64_t offset = 0, stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    if (s.dim(i) != 1) offset += coord[i + out.rank() - s.rank()] * stride;
    stride *= s.dim(i);
  }
  return offset;
}

std::vector<int64_t> Coord(const Shape& out, int64_t i) {
  std::vector<int64_t> c(out.rank());
  for (int d = out.rank() - 1; d >= 0; --d) {
    c[d] = i % out.dim(d);
    i /= out.dim(d);
  }
  return c;
}

struct AddCase {
  Shape x, y;
  int64_t axis;
};

const std::vector<AddCase>& AddCases() {
  static const auto* cases = new std::vector<AddCase>{
      {Shape({1023}), Shape({1023}), -1},     // same shape, odd size
      {Shape({4, 1023}), Shape({1023}), -1},  // row
      {Shape({3}), Shape({5, 3}), -1},        // X is the row
      {Shape({2, 3, 4}), Shape(), -1},        // scalar Y
      {Shape(), Shape(), -1},                 // 0-d
      {Shape({2, 3, 4}), Shape({3}), 1},      // axis
      {Shape({2, 3, 4}), Shape({2, 3}), 0},   // axis 0
      {Shape({4, 1, 5}), Shape({3, 1}), -1},  // both broadcast
      {Shape({2, 1, 3, 1, 2}), Shape({4, 1, 2, 1}), -1},
      {Shape({0, 3}), Shape({3}), -1},         // empty
      {Shape({600, 3}), Shape({600, 1}), -1},  // long column sums in the grad
      {Shape({300, 2}), Shape({2}), -1},       // long row sums in the grad
  };
  return *cases;
}

template <typename T>
void CheckAdd(const AddCase& c) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), " ", c.x.ToString(), " + ",
                            c.y.ToString(), " axis ", c.axis));
  const std::vector<T> xv = Values<T>(c.x.num_elements(), 1);
  const std::vector<T> yv = Values<T>(c.y.num_elements(), 2);
  ASSERT_OK_AND_ASSIGN(Shape out_shape, BroadcastShapes("t", c.x, c.y, c.axis));
  ASSERT_OK_AND_ASSIGN(Shape y_aligned, AlignForBroadcast("t", c.x, c.y, c.axis));
  const EagerInputs in = {{"X", {HostVar(c.x, xv)}}, {"Y", {HostVar(c.y, yv)}}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnGpu(Op("elementwise_add", {{"axis", c.axis}}), in));
  const Tensor& o = out.at("Out");
  ASSERT_EQ(o.shape(), out_shape);
  for (int64_t i = 0; i < o.NumElements(); ++i) {
    const std::vector<int64_t> coord = Coord(out_shape, i);
    ASSERT_EQ(o.data<T>()[i], xv[BroadcastIndex(c.x, out_shape, coord)] +
                                  yv[BroadcastIndex(y_aligned, out_shape, coord)])
        << i;
  }

  // Gradient: Out@GRAD summed to each input's shape.
  const std::vector<T> g = Values<T>(out_shape.num_elements(), 3);
  EagerInputs gin = in;
  gin["Out@GRAD"] = {HostVar(out_shape, g)};
  ASSERT_OK_AND_ASSIGN(auto grads, RunOnGpu(Op("elementwise_add_grad", {{"axis", c.axis}}), gin));
  std::vector<T> dx(c.x.num_elements(), 0), dy(c.y.num_elements(), 0);
  for (int64_t i = 0; i < out_shape.num_elements(); ++i) {
    const std::vector<int64_t> coord = Coord(out_shape, i);
    dx[BroadcastIndex(c.x, out_shape, coord)] += g[i];
    dy[BroadcastIndex(y_aligned, out_shape, coord)] += g[i];
  }
  EXPECT_EQ(grads.at("X@GRAD").shape(), c.x);
  EXPECT_EQ(grads.at("Y@GRAD").shape(), c.y);
  EXPECT_EQ(grads.at("X@GRAD").ToVector<T>(), dx);
  EXPECT_EQ(grads.at("Y@GRAD").ToVector<T>(), dy);
}

TEST_F(GpuTest, ElementwiseAddAndGradMatchHost) {
  for (const AddCase& c : AddCases()) {
    CheckAdd<float>(c);
    CheckAdd<double>(c);
    CheckAdd<int32_t>(c);
    CheckAdd<int64_t>(c);
  }
}

TEST_F(GpuTest, ElementwiseAddGradComputesOnlyBoundOutputs) {
  OpDesc op = Op("elementwise_add_grad");
  op.outputs["X@GRAD"] = {"dx"};
  op.outputs["Y@GRAD"] = {};
  const EagerInputs in = {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                          {"Y", {HostVar<float>(Shape({3}), Values<float>(3))}},
                          {"Out@GRAD", {HostVar<float>(Shape({2, 3}), Values<float>(6))}}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnGpu(op, in));
  EXPECT_EQ(out.count("Y@GRAD"), 0u);
  EXPECT_EQ(out.at("X@GRAD").ToVector<float>(), Values<float>(6));
}

TEST_F(GpuTest, ElementwiseAddBadInputsAreInvalidArgument) {
  EXPECT_THAT(
      RunOnGpu(Op("elementwise_add"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                       {"Y", {HostVar<float>(Shape({4}), Values<float>(4))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot be broadcast")));
  EXPECT_THAT(
      RunOnGpu(Op("elementwise_add"), {{"X", {HostVar<float>(Shape({2}), Values<float>(2))}},
                                       {"Y", {HostVar<double>(Shape({2}), Values<double>(2))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("X is float32[2] but Y is float64[2]; cast one of them")));
  EXPECT_THAT(RunOnGpu(Op("elementwise_add_grad"),
                       {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                        {"Y", {HostVar<float>(Shape({3}), Values<float>(3))}},
                        {"Out@GRAD", {HostVar<float>(Shape({3}), Values<float>(3))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Out@GRAD is float32[3], expected float32[2, 3]")));
}

// Host matmul in double, following MatmulShape: element (b, i, j).
struct MatmulCase {
  Shape x, y;
  bool tx, ty;
  double alpha;
};

template <typename T>
void CheckMatmul(const MatmulCase& c) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), " ", c.x.ToString(), c.tx ? "^T" : "",
                            " * ", c.y.ToString(), c.ty ? "^T" : "", " alpha ", c.alpha));
  ASSERT_OK_AND_ASSIGN(MatmulDims d, MatmulShape("t", c.x, c.y, c.tx, c.ty));
  const std::vector<T> xv = Values<T>(c.x.num_elements(), 1);
  const std::vector<T> yv = Values<T>(c.y.num_elements(), 2);
  const int64_t m = d.m, n = d.n, k = d.k;
  auto X = [&](int64_t b, int64_t i, int64_t kk) -> double {  // op(X)[b](i, kk)
    const int64_t base = d.x_batched ? b * m * k : 0;
    return c.tx ? xv[base + kk * m + i] : xv[base + i * k + kk];
  };
  auto Y = [&](int64_t b, int64_t kk, int64_t j) -> double {  // op(Y)[b](kk, j)
    const int64_t base = d.y_batched ? b * k * n : 0;
    return c.ty ? yv[base + j * k + kk] : yv[base + kk * n + j];
  };
  const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
  AttrMap attrs = {{"transpose_X", c.tx}, {"transpose_Y", c.ty}, {"alpha", c.alpha}};
  const EagerInputs in = {{"X", {HostVar(c.x, xv)}}, {"Y", {HostVar(c.y, yv)}}};
  ASSERT_OK_AND_ASSIGN(auto out, RunOnGpu(Op("matmul", attrs), in));
  const Tensor& o = out.at("Out");
  ASSERT_EQ(o.shape(), d.out);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t kk = 0; kk < k; ++kk) want += X(b, i, kk) * Y(b, kk, j);
        want *= c.alpha;
        ASSERT_NEAR(o.data<T>()[(b * m + i) * n + j], want, tol * (1 + std::abs(want)))
            << b << "," << i << "," << j;
      }
    }
  }

  // Gradients: d op(X) = alpha G op(Y)^T, d op(Y) = alpha op(X)^T G, stored
  // back through the transposes and summed over the batch when shared.
  const std::vector<T> g = Values<T>(d.out.num_elements(), 3);
  EagerInputs gin = in;
  gin["Out@GRAD"] = {HostVar(d.out, g)};
  ASSERT_OK_AND_ASSIGN(auto grads, RunOnGpu(Op("matmul_grad", attrs), gin));
  std::vector<double> dx(c.x.num_elements(), 0), dy(c.y.num_elements(), 0);
  for (int64_t b = 0; b < d.batch; ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t kk = 0; kk < k; ++kk) {
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += g[(b * m + i) * n + j] * Y(b, kk, j);
        const int64_t base = d.x_batched ? b * m * k : 0;
        dx[base + (c.tx ? kk * m + i : i * k + kk)] += c.alpha * s;
      }
    }
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t i = 0; i < m; ++i) s += X(b, i, kk) * g[(b * m + i) * n + j];
        const int64_t base = d.y_batched ? b * k * n : 0;
        dy[base + (c.ty ? j * k + kk : kk * n + j)] += c.alpha * s;
      }
    }
  }
  const Tensor& gx = grads.at("X@GRAD");
  const Tensor& gy = grads.at("Y@GRAD");
  ASSERT_EQ(gx.shape(), c.x);
  ASSERT_EQ(gy.shape(), c.y);
  for (size_t i = 0; i < dx.size(); ++i) {
    ASSERT_NEAR(gx.data<T>()[i], dx[i], tol * (1 + std::abs(dx[i]))) << "dX " << i;
  }
  for (size_t i = 0; i < dy.size(); ++i) {
    ASSERT_NEAR(gy.data<T>()[i], dy[i], tol * (1 + std::abs(dy[i]))) << "dY " << i;
  }
}

TEST_F(GpuTest, MatmulAndGradMatchHost) {
  std::vector<MatmulCase> cases;
  for (const bool tx : {false, true}) {
    for (const bool ty : {false, true}) {
      // m = 3, k = 5, n = 4; X stored m x k (k x m when tx), Y k x n (n x k).
      const Shape x2 = tx ? Shape({5, 3}) : Shape({3, 5});
      const Shape y2 = ty ? Shape({4, 5}) : Shape({5, 4});
      const Shape x3 = tx ? Shape({2, 5, 3}) : Shape({2, 3, 5});
      const Shape y3 = ty ? Shape({2, 4, 5}) : Shape({2, 5, 4});
      cases.push_back({x2, y2, tx, ty, 1.0});
      cases.push_back({x3, y3, tx, ty, 0.5});  // both batched
      cases.push_back({x3, y2, tx, ty, 1.0});  // Y shared by the batch
      cases.push_back({x2, y3, tx, ty, 2.0});  // X shared by the batch
    }
  }
  cases.push_back({Shape({2, 3, 1, 5}), Shape({5, 7}), false, false, 1.0});  // 2 batch dims
  cases.push_back({Shape({3, 0}), Shape({0, 4}), false, false, 1.0});        // k == 0
  cases.push_back({Shape({2, 3, 0}), Shape({0, 4}), false, false, 1.0});     // k == 0, batched
  cases.push_back({Shape({0, 5}), Shape({5, 4}), false, false, 1.0});        // m == 0
  cases.push_back({Shape({0, 3, 5}), Shape({5, 4}), false, false, 1.0});     // empty batch
  cases.push_back({Shape({3, 5}), Shape({0, 5, 4}), false, false, 1.0});     // shared X, no batch
  cases.push_back({Shape({33, 65}), Shape({65, 17}), false, false, 1.0});    // odd sizes
  for (const MatmulCase& c : cases) {
    CheckMatmul<float>(c);
    CheckMatmul<double>(c);
  }
}

TEST_F(GpuTest, MatmulBadInputsAreInvalidArgument) {
  EXPECT_THAT(RunOnGpu(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                      {"Y", {HostVar<float>(Shape({4, 2}), Values<float>(8))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("inner dims differ")));
  EXPECT_THAT(
      RunOnGpu(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 2, 3}), Values<float>(12))}},
                              {"Y", {HostVar<float>(Shape({3, 3, 2}), Values<float>(18))}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch dims")));
  EXPECT_THAT(RunOnGpu(Op("matmul"), {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                                      {"Y", {HostVar<double>(Shape({3, 2}), Values<double>(6))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("X is float32[2, 3] but Y is float64[3, 2]")));
  EXPECT_THAT(RunOnGpu(Op("matmul_grad"),
                       {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                        {"Y", {HostVar<float>(Shape({3, 2}), Values<float>(6))}},
                        {"Out@GRAD", {HostVar<float>(Shape({2, 3}), Values<float>(6))}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Out@GRAD is float32[2, 3], expected float32[2, 2]")));
}

template <typename T>
void CheckScale(const Shape& s, double scale, double bias, bool after) {
  SCOPED_TRACE(
      absl::StrCat(DataTypeName(DataTypeOf<T>()), s.ToString(), " ", scale, " ", bias, " ", after));
  const std::vector<T> xv = Values<T>(s.num_elements());
  ASSERT_OK_AND_ASSIGN(
      auto out,
      RunOnGpu(Op("scale", {{"scale", scale}, {"bias", bias}, {"bias_after_scale", after}}),
               {{"X", {HostVar(s, xv)}}}));
  const Tensor& o = out.at("Out");
  ASSERT_EQ(o.shape(), s);
  for (int64_t i = 0; i < s.num_elements(); ++i) {
    // scale * x + bias is rounded once (see LaunchScale).
    T want;
    if constexpr (std::is_floating_point_v<T>) {
      const T sc = static_cast<T>(scale), b = static_cast<T>(bias);
      const T sum = xv[i] + b;
      want = after ? std::fma(sc, xv[i], b) : sc * sum;
    } else {
      const double v = static_cast<double>(xv[i]), sum = v + bias;
      want = static_cast<T>(after ? std::fma(scale, v, bias) : scale * sum);
    }
    ASSERT_EQ(o.data<T>()[i], want) << i;
  }
}

TEST_F(GpuTest, ScaleMatchesHost) {
  for (const Shape& s : {Shape({1023}), Shape(), Shape({0}), Shape({3, 4})}) {
    for (const bool after : {true, false}) {
      CheckScale<float>(s, 0.3, 1.7, after);
      CheckScale<double>(s, 0.3, 1.7, after);
      CheckScale<int32_t>(s, 0.5, 0.3, after);
      CheckScale<int64_t>(s, -2.5, 0.25, after);
    }
  }
}

TEST_F(GpuTest, CastEveryPairMatchesHost) {
  const std::vector<double> values = {-2.75, -1, 0, 0.5, 3.25, 7, 0, 1};
  for (DataType from : AllDataTypes()) {
    for (DataType to : AllDataTypes()) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(from), " -> ", DataTypeName(to)));
      DispatchDataType(from, [&](auto from_tag) {
        using From = typename decltype(from_tag)::type;
        std::vector<From> xv;
        for (double v : values) {
          if constexpr (std::is_same_v<From, bool>) {
            xv.push_back(v != 0);
          } else {
            xv.push_back(static_cast<From>(v));
          }
        }
        const Shape s({static_cast<int64_t>(xv.size())});
        absl::StatusOr<std::map<std::string, Tensor>> out =
            RunOnGpu(Op("cast", {{"out_dtype", to}}), {{"X", {HostVar(s, xv)}}});
        ASSERT_OK(out.status());
        const Tensor& o = out->at("Out");
        ASSERT_EQ(o.dtype(), to);
        DispatchDataType(to, [&](auto to_tag) {
          using To = typename decltype(to_tag)::type;
          for (size_t i = 0; i < xv.size(); ++i) {
            To want;
            if constexpr (std::is_same_v<To, bool>) {
              want = xv[i] != From(0);
            } else {
              want = static_cast<To>(xv[i]);
            }
            ASSERT_EQ(o.data<To>()[i], want) << i;
          }
        });
      });
    }
  }
  ASSERT_OK_AND_ASSIGN(auto empty, RunOnGpu(Op("cast", {{"out_dtype", DataType::kInt64}}),
                                            {{"X", {HostVar<float>(Shape({0, 2}), {})}}}));
  EXPECT_EQ(empty.at("Out").shape(), Shape({0, 2}));
}

// ---------------------------------------------------------------------------
// The nn, loss, optimizer, array and random kernels against the cpu backend's
// (backends/common): the same op through RunOpEager on cpu and on gpu:0.

// Outputs copied to the host, keyed "Out" (first variable), "Out[1]", ...:
// dense tensors, or SelectedRows whose value is on the host.
using HostOutputs = std::map<std::string, Variable>;

absl::StatusOr<HostOutputs> RunToHost(OpDesc op, const Place& place, const EagerInputs& inputs,
                                      EagerStats* stats = nullptr) {
  absl::StatusOr<EagerOutputs> out = RunOpEager(std::move(op), place, inputs, stats);
  if (!out.ok()) return out.status();
  HostOutputs host;
  for (const auto& [arg, vars] : *out) {
    for (size_t i = 0; i < vars.size(); ++i) {  // "Out", then "Out[1]", ...
      const Variable& v = vars[i];
      if (v.empty()) continue;
      const std::string key = i == 0 ? arg : absl::StrCat(arg, "[", i, "]");
      absl::StatusOr<Tensor> t = CopyTensorTo(*v.data_tensor(), CPUPlace());
      if (!t.ok()) return t.status();
      if (v.is_selected_rows()) {
        const SelectedRows& r = v.selected_rows();
        host[key] = Variable(SelectedRows(r.height(), r.rows(), *std::move(t)));
      } else {
        host[key] = Variable(*std::move(t));
      }
    }
  }
  return host;
}

std::vector<double> ToDoubles(const Tensor& t) {
  std::vector<double> v(t.NumElements());
  DispatchDataType(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = static_cast<double>(t.data<T>()[i]);
  });
  return v;
}

// Every output alike: kind, rows, dtype, shape, and values within
// rtol * (1 + |cpu|), or bit for bit when rtol is 0.
void ExpectSameOutputs(const HostOutputs& cpu, const HostOutputs& gpu, double rtol) {
  ASSERT_EQ(cpu.size(), gpu.size());
  for (const auto& [arg, c] : cpu) {
    SCOPED_TRACE(arg);
    ASSERT_EQ(gpu.count(arg), 1u);
    const Variable& g = gpu.at(arg);
    ASSERT_EQ(g.is_selected_rows(), c.is_selected_rows());
    if (c.is_selected_rows()) {
      EXPECT_EQ(g.selected_rows().height(), c.selected_rows().height());
      EXPECT_EQ(g.selected_rows().rows(), c.selected_rows().rows());
    }
    const Tensor& ct = *c.data_tensor();
    const Tensor& gt = *g.data_tensor();
    ASSERT_EQ(gt.dtype(), ct.dtype());
    ASSERT_EQ(gt.shape(), ct.shape());
    if (rtol == 0) {
      EXPECT_EQ(std::memcmp(gt.raw_data(), ct.raw_data(), ct.NumBytes()), 0);
    }
    const std::vector<double> cv = ToDoubles(ct), gv = ToDoubles(gt);
    for (size_t i = 0; i < cv.size(); ++i) {
      ASSERT_NEAR(gv[i], cv[i], rtol * (1 + std::abs(cv[i]))) << "element " << i;
    }
  }
}

// Runs `op` on cpu and gpu:0 with inputs made by `make_inputs` (fresh host
// tensors for each run, as sgd updates its Param in place) and compares.
template <typename MakeInputs>
void ExpectGpuMatchesCpu(const OpDesc& op, MakeInputs&& make_inputs, double rtol) {
  ASSERT_OK_AND_ASSIGN(HostOutputs cpu, RunToHost(op, CPUPlace(), make_inputs()));
  ASSERT_OK_AND_ASSIGN(HostOutputs gpu, RunToHost(op, GPUPlace(0), make_inputs()));
  ExpectSameOutputs(cpu, gpu, rtol);
}

// Both places fail alike: same code, same message.
void ExpectSameError(const OpDesc& op, const EagerInputs& in, absl::StatusCode code,
                     const std::string& message) {
  EXPECT_THAT(RunToHost(op, CPUPlace(), in), StatusIs(code, message));
  EXPECT_THAT(RunToHost(op, GPUPlace(0), in), StatusIs(code, message));
}

// Calls fn(TypeTag<T>{}) for the four numeric dtypes.
template <typename Fn>
void DispatchNumericForTest(DataType t, Fn&& fn) {
  switch (t) {
    case DataType::kFloat32:
      return fn(TypeTag<float>{});
    case DataType::kFloat64:
      return fn(TypeTag<double>{});
    case DataType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DataType::kInt64:
      return fn(TypeTag<int64_t>{});
    default:
      FAIL() << "not numeric: " << DataTypeName(t);
  }
}

template <typename T>
double Tol() {
  return std::is_same_v<T, float> ? 2e-6 : 1e-13;
}

Variable Ids(const Shape& s, const std::vector<int64_t>& v) {
  return Variable(Tensor::FromVector<int64_t>(s, v));
}

TEST_F(GpuTest, LookupTableBadIdIsInvalidArgumentAndTheGpuStaysUsable) {
  const Shape w_shape({10, 3});
  const Variable w = HostVar<float>(w_shape, Values<float>(30));
  OpDesc op = Op("lookup_table");
  ExpectSameError(op, {{"Ids", {Ids(Shape({4}), {1, 2, 10, 3})}}, {"W", {w}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 10 at position 2 is out of range [0, 10) of table 'W_0'");
  // The first bad position is reported, whichever thread saw it first.
  std::vector<int64_t> many(5000, 4);
  many[4321] = -7;
  many[1234] = 12;
  many[4999] = 10;
  ExpectSameError(op, {{"Ids", {Ids(Shape({50, 100}), many)}}, {"W", {w}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 12 at position 1234 is out of range [0, 10) of table "
                  "'W_0'");
  // Named variables appear in the message.
  OpDesc named = Op("lookup_table");
  named.inputs["W"] = {"emb_w"};
  EXPECT_THAT(RunOnGpu(named, {{"Ids", {Ids(Shape({1}), {-1})}}, {"W", {w}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "op 'lookup_table': id -1 at position 0 is out of range [0, 10) of table "
                       "'emb_w'"));
  // A table without columns still checks its ids.
  ExpectSameError(op,
                  {{"Ids", {Ids(Shape({2}), {0, 5})}}, {"W", {HostVar<float>(Shape({5, 0}), {})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'lookup_table': id 5 at position 1 is out of range [0, 5) of table 'W_0'");
  // The gradients check their ids too, before anything else (as on the cpu).
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    ExpectSameError(Op("lookup_table_grad", {{"is_sparse", sparse}}),
                    {{"Ids", {Ids(Shape({3}), {0, 9, 11})}},
                     {"W", {w}},
                     {"Out@GRAD", {HostVar<float>(Shape({2}), Values<float>(2))}}},
                    absl::StatusCode::kInvalidArgument,
                    "op 'lookup_table_grad': id 11 at position 2 is out of range [0, 10) of table "
                    "'W_0'");
  }

  // The GPU is fine afterwards: a good lookup gives the table's rows.
  ASSERT_OK_AND_ASSIGN(auto out,
                       RunOnGpu(op, {{"Ids", {Ids(Shape({4}), {1, 2, 9, 3})}}, {"W", {w}}}));
  const std::vector<float> table = Values<float>(30);
  std::vector<float> want;
  for (int64_t id : {1, 2, 9, 3}) {
    want.insert(want.end(), table.begin() + id * 3, table.begin() + id * 3 + 3);
  }
  EXPECT_EQ(out.at("Out").shape(), Shape({4, 3}));
  EXPECT_EQ(out.at("Out").ToVector<float>(), want);
  EXPECT_OK(device_->Synchronize());
}

// The deferred id check (deferred_checks.h) through the launcher that
// lookup_table uses: launches return at once; the stream's next
// synchronisation reports the first bad position of the first failing
// launch, once; slots are reused; another stream's checks wait for that
// stream.
TEST_F(GpuTest, DeferredIdChecksReportAtTheNextSynchronisationOnce) {
  std::vector<int64_t> ids(3000, 1);  // 12 blocks: the last-block report
  ids[2500] = 10;
  ids[1700] = -3;
  ids[2900] = 11;
  const size_t bytes = ids.size() * sizeof(int64_t);
  ASSERT_OK_AND_ASSIGN(void* raw, device_->allocator()->Allocate(bytes));
  ASSERT_OK(device_->Copy(CopyKind::kHostToDevice, raw, ids.data(), bytes));
  const int64_t* d_ids = static_cast<const int64_t*>(raw);
  Stream* stream = device_->compute_stream();
  const cudaStream_t s = CudaStreamOf(stream);
  DeferredChecks* checks = device_->deferred_checks();
  auto describe = [](const std::string& launch) {
    return [launch](int64_t id, int64_t position) {
      return absl::InvalidArgumentError(absl::StrCat(launch, ": id ", id, " at ", position));
    };
  };
  for (int round = 0; round < 3; ++round) {  // the same slots again
    SCOPED_TRACE(round);
    ASSERT_OK_AND_ASSIGN(CheckSlot good, checks->Arm(s, describe("good")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 1000, 10, good, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot tail, checks->Arm(s, describe("tail")));
    ASSERT_EQ(LaunchCheckIds(d_ids + 2000, 1000, 10, tail, s), cudaSuccess);
    ASSERT_OK_AND_ASSIGN(CheckSlot all, checks->Arm(s, describe("all")));
    ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, all, s), cudaSuccess);
    EXPECT_THAT(device_->SynchronizeStream(stream),
                StatusIs(absl::StatusCode::kInvalidArgument, "tail: id 10 at 500"));
    EXPECT_OK(device_->SynchronizeStream(stream));  // reported once, all resolved
  }
  ASSERT_OK_AND_ASSIGN(CheckSlot last, checks->Arm(s, describe("all")));
  ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, last, s), cudaSuccess);
  EXPECT_THAT(device_->Synchronize(),
              StatusIs(absl::StatusCode::kInvalidArgument, "all: id -3 at 1700"));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Stream> other, device_->CreateStream());
  const cudaStream_t o = CudaStreamOf(other.get());
  ASSERT_OK_AND_ASSIGN(CheckSlot on_other, checks->Arm(o, describe("other")));
  ASSERT_EQ(LaunchCheckIds(d_ids, 3000, 10, on_other, o), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(o), cudaSuccess);
  EXPECT_OK(device_->SynchronizeStream(stream));
  EXPECT_THAT(device_->SynchronizeStream(other.get()),
              StatusIs(absl::StatusCode::kInvalidArgument, "other: id -3 at 1700"));
  device_->allocator()->Deallocate(raw, bytes);
}

template <typename T>
void CheckLookup(const Shape& ids_shape, const std::vector<int64_t>& ids, const Shape& w_shape,
                 int64_t padding_idx) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), " ids ", ids_shape.ToString(), " W ",
                            w_shape.ToString(), " padding_idx ", padding_idx));
  std::vector<int64_t> out_dims = ids_shape.ToVector();
  out_dims.push_back(w_shape.dim(1));
  const Shape out_shape(out_dims);
  for (const bool sparse : {false, true}) {
    const AttrMap attrs = {{"is_sparse", sparse}, {"padding_idx", padding_idx}};
    auto inputs = [&] {
      return EagerInputs{
          {"Ids", {Ids(ids_shape, ids)}},
          {"W", {HostVar<T>(w_shape, Values<T>(w_shape.num_elements(), 1))}},
          {"Out@GRAD", {HostVar<T>(out_shape, Values<T>(out_shape.num_elements(), 2))}}};
    };
    ExpectGpuMatchesCpu(
        Op("lookup_table", attrs),
        [&] {
          EagerInputs in = inputs();
          in.erase("Out@GRAD");
          return in;
        },
        0);
    // Dense: repeated ids add up in an unspecified order (atomicAdd).
    ExpectGpuMatchesCpu(Op("lookup_table_grad", attrs), inputs, sparse ? 0 : Tol<T>());
    // The gradient reads Ids in host memory: only W and Out@GRAD are copied.
    EagerStats stats;
    ASSERT_OK(RunOpEager(Op("lookup_table_grad", attrs), GPUPlace(0), inputs(), &stats).status());
    EXPECT_EQ(stats.copies_h2d, 2);
  }
}

TEST_F(GpuTest, LookupTableAndGradMatchCpu) {
  const std::vector<int64_t> ids = {3, 0, 3, 7, 2, 3};
  for (const int64_t padding_idx : {int64_t{-1}, int64_t{3}, int64_t{-5}}) {
    CheckLookup<float>(Shape({2, 3}), ids, Shape({8, 5}), padding_idx);
    CheckLookup<double>(Shape({6}), ids, Shape({8, 5}), padding_idx);
  }
  CheckLookup<float>(Shape({6}), ids, Shape({8, 5}), 6);         // padding row not hit
  CheckLookup<float>(Shape(), {4}, Shape({8, 5}), -1);           // 0-d ids
  CheckLookup<float>(Shape({0}), {}, Shape({8, 5}), -1);         // no ids
  CheckLookup<double>(Shape({0, 2}), {}, Shape({0, 3}), -1);     // empty table
  CheckLookup<float>(Shape({3}), {1, 1, 0}, Shape({4, 0}), -1);  // no columns
  std::vector<int64_t> many(3000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 7919) % 37;  // many repeats
  CheckLookup<float>(Shape({30, 100}), many, Shape({37, 129}), 5);
  CheckLookup<double>(Shape({3000}), many, Shape({37, 33}), -1);
}

template <typename T>
void CheckL2(const Shape& s, int64_t axis, double epsilon) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), s.ToString(), " axis ", axis));
  const AttrMap attrs = {{"axis", axis}, {"epsilon", epsilon}};
  const int64_t n = s.num_elements();
  ExpectGpuMatchesCpu(
      Op("l2_normalize", attrs),
      [&] {
        return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}}};
      },
      Tol<T>());
  // Out from the cpu kernel, so both gradients read the same values.
  ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("l2_normalize", attrs), CPUPlace(),
                                                  {{"X", {HostVar<T>(s, Values<T>(n, 1))}}}));
  ExpectGpuMatchesCpu(
      Op("l2_normalize_grad", attrs),
      [&] {
        return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}},
                           {"Out", {fwd.at("Out")}},
                           {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 2))}}};
      },
      Tol<T>() * 10);
}

TEST_F(GpuTest, L2NormalizeAndGradMatchCpu) {
  for (const int64_t axis : {int64_t{-1}, int64_t{0}}) {
    CheckL2<float>(Shape({4, 5}), axis, 1e-10);
    CheckL2<double>(Shape({4, 5}), axis, 1e-10);
  }
  CheckL2<float>(Shape({3, 4, 5}), 1, 1e-10);   // warp per line, strided
  CheckL2<double>(Shape({2, 3000}), 1, 1e-10);  // block per line
  CheckL2<float>(Shape({2, 3000}), -1, 1e-10);
  CheckL2<float>(Shape({3, 40, 64}), 1, 1e-10);    // thread per line (inner 64)
  CheckL2<double>(Shape({2, 2500, 33}), 1, 1e-6);  // long and strided
  CheckL2<float>(Shape({1, 150}), -1, 1e-10);      // the embedding workload's
  CheckL2<float>(Shape({7}), 0, 1e-3);
  CheckL2<float>(Shape({0, 3}), 1, 1e-10);
  CheckL2<double>(Shape({3, 0}), 1, 1e-10);
  CheckL2<float>(Shape({4, 3}), 1, 0);
}

TEST_F(GpuTest, SquareErrorCostAndGradMatchCpuBitwise) {
  for (const Shape& s :
       {Shape({1, 150}), Shape({1023}), Shape(), Shape({0, 4}), Shape({3, 5, 7})}) {
    SCOPED_TRACE(s.ToString());
    const int64_t n = s.num_elements();
    auto inputs = [&](auto tag) {
      using T = typename decltype(tag)::type;
      return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}},
                         {"Y", {HostVar<T>(s, Values<T>(n, 2))}},
                         {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 3))}}};
    };
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        auto fwd_inputs = [&] {
          EagerInputs in = inputs(tag);
          in.erase("Out@GRAD");
          return in;
        };
        ExpectGpuMatchesCpu(Op("square_error_cost"), fwd_inputs, 0);
        ExpectGpuMatchesCpu(
            Op("square_error_cost_grad"), [&] { return inputs(tag); }, 0);
        OpDesc only_y = Op("square_error_cost_grad");
        only_y.outputs["Y@GRAD"] = {"dy"};
        ExpectGpuMatchesCpu(
            only_y, [&] { return inputs(tag); }, 0);
      });
    }
  }
  ExpectSameError(Op("square_error_cost"),
                  {{"X", {HostVar<float>(Shape({2, 3}), Values<float>(6))}},
                   {"Y", {HostVar<float>(Shape({3, 2}), Values<float>(6))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'square_error_cost': X is float32[2, 3] but Y is float32[3, 2]; they must "
                  "have the same dtype and shape");
}

TEST_F(GpuTest, MeanAndGradMatchCpu) {
  for (const Shape& s : {Shape({1}), Shape(), Shape({1, 150}), Shape({1023}), Shape({300, 1001}),
                         Shape({(1 << 22) + 7})}) {
    SCOPED_TRACE(s.ToString());
    const int64_t n = s.num_elements();
    ExpectGpuMatchesCpu(
        Op("mean"),
        [&] {
          return EagerInputs{{"X", {HostVar<float>(s, Values<float>(n, 1))}}};
        },
        1e-6);
    ExpectGpuMatchesCpu(
        Op("mean"),
        [&] {
          return EagerInputs{{"X", {HostVar<double>(s, Values<double>(n, 1))}}};
        },
        1e-14);
    ExpectGpuMatchesCpu(
        Op("mean_grad"),
        [&] {
          return EagerInputs{{"X", {HostVar<float>(s, Values<float>(n, 1))}},
                             {"Out@GRAD", {HostVar<float>(Shape({1}), {0.7f})}}};
        },
        0);
  }
  ExpectSameError(Op("mean"), {{"X", {HostVar<float>(Shape({3, 0}), {})}}},
                  absl::StatusCode::kInvalidArgument, "op 'mean': X is empty");
}

// Param for sgd tests: fresh host values each call (sgd updates in place).
template <typename T>
Variable Param(const Shape& s) {
  return HostVar<T>(s, Values<T>(s.num_elements(), 5));
}

Variable LearningRate(float lr) { return Variable(Tensor::FromVector<float>(Shape({1}), {lr})); }

template <typename T>
void CheckSgd(const Shape& param_shape, const std::vector<int64_t>& rows) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), param_shape.ToString(), " ", rows.size(),
                            " rows"));
  const float lr = 0.37f;
  // Dense.
  ExpectGpuMatchesCpu(
      Op("sgd"),
      [&] {
        return EagerInputs{
            {"Param", {Param<T>(param_shape)}},
            {"Grad", {HostVar<T>(param_shape, Values<T>(param_shape.num_elements(), 6))}},
            {"LearningRate", {LearningRate(lr)}}};
      },
      0);
  // Sparse: repeated rows apply in order, as on the cpu: bit for bit.
  std::vector<int64_t> value_dims = param_shape.ToVector();
  value_dims[0] = static_cast<int64_t>(rows.size());
  const Shape value_shape(value_dims);
  auto sparse_inputs = [&] {
    return EagerInputs{
        {"Param", {Param<T>(param_shape)}},
        {"Grad",
         {Variable(SelectedRows(
             param_shape.dim(0), rows,
             Tensor::FromVector<T>(value_shape, Values<T>(value_shape.num_elements(), 7))))}},
        {"LearningRate", {LearningRate(lr)}}};
  };
  ExpectGpuMatchesCpu(Op("sgd"), sparse_inputs, 0);
  // ParamOut is Param's (device) tensor; the learning rate is not copied.
  EagerStats stats;
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("sgd"), GPUPlace(0), sparse_inputs(), &stats));
  EXPECT_EQ(out.at("ParamOut")[0].tensor().place(), GPUPlace(0));
  EXPECT_EQ(stats.copies_h2d, 2);  // Param and Grad's value
}

TEST_F(GpuTest, SgdDenseAndSparseWithRepeatedRowsMatchCpuBitwise) {
  CheckSgd<float>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckSgd<double>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckSgd<float>(Shape({8, 2, 3}), {7});
  CheckSgd<float>(Shape({8, 5}), {});
  CheckSgd<float>(Shape({0, 5}), {});
  CheckSgd<float>(Shape({8, 0}), {1, 1});
  // Many updates to few rows (one launch whatever their number), one row
  // throughout, and long rows.
  std::vector<int64_t> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 31) % 7;
  CheckSgd<float>(Shape({7, 300}), many);
  CheckSgd<double>(Shape({9, 3}), many);
  std::vector<int64_t> one_row(500, 4);
  CheckSgd<float>(Shape({5, 1000}), one_row);
  // The embedding-offload workload's shape: 4096 rows of 150 from a larger table, some repeated,
  // and rows that collide in the host's hash table (multiples of 2^12).
  std::vector<int64_t> batch(4096);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i] = i % 5 == 0 ? static_cast<int64_t>(i % 7) << 12 : (i * 7919) % 30011;
  }
  CheckSgd<float>(Shape({30011, 150}), batch);
}

TEST_F(GpuTest, SgdBadSparseGradientsAreInvalidArgument) {
  const Shape param_shape({4, 2});
  auto inputs = [&](std::vector<int64_t> rows, const Shape& value_shape) {
    return EagerInputs{
        {"Param", {Param<float>(param_shape)}},
        {"Grad",
         {Variable(SelectedRows(
             4, std::move(rows),
             Tensor::FromVector<float>(value_shape, Values<float>(value_shape.num_elements()))))}},
        {"LearningRate", {LearningRate(0.1f)}}};
  };
  ExpectSameError(Op("sgd"), inputs({0, 4, 1}, Shape({3, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': row 4 at position 1 of Grad 'Grad_0' is out of range [0, 4) of Param "
                  "'Param_0'");
  ExpectSameError(Op("sgd"), inputs({0, 1}, Shape({3, 2})), absl::StatusCode::kInvalidArgument,
                  "op 'sgd': Grad 'Grad_0' has 2 rows but a value of shape [3, 2]");
}

// Momentum and adam on dense and sparse gradients: the same updates as on the
// cpu, up to how each compiler contracts multiply-adds.
template <typename T>
void CheckMomentumAndAdam(const Shape& param_shape, const std::vector<int64_t>& rows) {
  SCOPED_TRACE(absl::StrCat(DataTypeName(DataTypeOf<T>()), param_shape.ToString(), " ", rows.size(),
                            " rows"));
  const int64_t n = param_shape.num_elements();
  std::vector<int64_t> value_dims = param_shape.ToVector();
  value_dims[0] = static_cast<int64_t>(rows.size());
  const Shape value_shape(value_dims);
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    auto grad = [&] {
      if (!sparse) return HostVar<T>(param_shape, Values<T>(n, 6));
      return Variable(SelectedRows(
          param_shape.dim(0), rows,
          Tensor::FromVector<T>(value_shape, Values<T>(value_shape.num_elements(), 7))));
    };
    for (const bool nesterov : {false, true}) {
      ExpectGpuMatchesCpu(
          Op("momentum", {{"mu", 0.875}, {"use_nesterov", nesterov}}),
          [&] {
            return EagerInputs{{"Param", {Param<T>(param_shape)}},
                               {"Grad", {grad()}},
                               {"Velocity", {HostVar<T>(param_shape, Values<T>(n, 8))}},
                               {"LearningRate", {LearningRate(0.37f)}}};
          },
          Tol<T>());
    }
    for (const bool decoupled : {false, true}) {
      auto inputs = [&] {
        std::vector<T> m2 = Values<T>(n, 9);
        for (T& v : m2) v = std::abs(v);
        return EagerInputs{{"Param", {Param<T>(param_shape)}},
                           {"Grad", {grad()}},
                           {"LearningRate", {LearningRate(0.37f)}},
                           {"Moment1", {HostVar<T>(param_shape, Values<T>(n, 8))}},
                           {"Moment2", {HostVar<T>(param_shape, m2)}},
                           {"Beta1Pow", {HostVar<T>(Shape({1}), {T(0.729)})}},
                           {"Beta2Pow", {HostVar<T>(Shape({1}), {T(0.997)})}}};
      };
      const OpDesc adam =
          Op("adam", {{"weight_decay", 0.25}, {"decoupled_weight_decay", decoupled}});
      ExpectGpuMatchesCpu(adam, inputs, Tol<T>() * 4);
      // The beta powers stay in host memory and advance there.
      ASSERT_OK_AND_ASSIGN(EagerOutputs out, RunOpEager(adam, GPUPlace(0), inputs()));
      const Tensor& b1p = out.at("Beta1PowOut")[0].tensor();
      EXPECT_EQ(b1p.place(), CPUPlace());
      EXPECT_EQ(b1p.data<T>()[0], T(0.729) * T(0.9));
      EXPECT_EQ(out.at("ParamOut")[0].tensor().place(), GPUPlace(0));
    }
  }
}

TEST_F(GpuTest, MomentumAndAdamMatchCpu) {
  CheckMomentumAndAdam<float>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckMomentumAndAdam<double>(Shape({8, 5}), {3, 1, 3, 3, 0});
  CheckMomentumAndAdam<float>(Shape({8, 0}), {1, 1});
  CheckMomentumAndAdam<float>(Shape({6, 3}), {});
  CheckMomentumAndAdam<double>(Shape({1023}), {5});
  // Rows whose value rows span several launches (kSgdEntriesPerLaunch).
  std::vector<int64_t> many(1000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = i < 500 ? 4 : (i * 31) % 7;
  CheckMomentumAndAdam<float>(Shape({7, 130}), many);
  CheckMomentumAndAdam<double>(Shape({9, 3}), many);
}

TEST_F(GpuTest, AdamBadBetaPowIsInvalidArgument) {
  const Shape s({2, 3});
  ExpectSameError(Op("adam"),
                  {{"Param", {Param<float>(s)}},
                   {"Grad", {HostVar<float>(s, Values<float>(6))}},
                   {"LearningRate", {LearningRate(0.1f)}},
                   {"Moment1", {HostVar<float>(s, Values<float>(6))}},
                   {"Moment2", {HostVar<float>(s, std::vector<float>(6, 1))}},
                   {"Beta1Pow", {HostVar<float>(Shape({1}), {1.0f})}},
                   {"Beta2Pow", {HostVar<float>(Shape({1}), {0.5f})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'adam': Beta1Pow 'Beta1Pow_0' is 1; it must be in [0, 1) (beta^step)");
}

TEST_F(GpuTest, GaussianRandomMatchesCpu) {
  for (const int64_t seed : {int64_t{0}, int64_t{42}, std::numeric_limits<int64_t>::min()}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{300, 257}, {1023}, {}, {3, 0}}) {
      for (DataType dtype : kFloatTypes) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " seed ", seed, " ", shape.size()));
        const AttrMap attrs = {
            {"shape", shape}, {"dtype", dtype}, {"mean", 0.5}, {"std", 2.0}, {"seed", seed}};
        // float32 bit for bit; float64 up to CUDA's log and cos.
        ExpectGpuMatchesCpu(
            Op("gaussian_random", attrs), [] { return EagerInputs{}; },
            dtype == DataType::kFloat32 ? 0 : 1e-14);
      }
    }
  }
}

// Values without zeros (divisors).
template <typename T>
std::vector<T> NonZero(int64_t n, int salt) {
  std::vector<T> v = Values<T>(n, salt);
  for (T& x : v) {
    if (x == T(0)) x = T(3);
  }
  return v;
}

// Sums of the gradients add in another order than on the cpu.
template <typename T>
double GradTol() {
  return std::is_floating_point_v<T> ? Tol<T>() * 16 : 0;
}

template <typename T>
void CheckBinary(const std::string& op, const AddCase& c) {
  SCOPED_TRACE(absl::StrCat(op, " ", DataTypeName(DataTypeOf<T>()), " ", c.x.ToString(), " ",
                            c.y.ToString(), " axis ", c.axis));
  ASSERT_OK_AND_ASSIGN(Shape out_shape, BroadcastShapes("t", c.x, c.y, c.axis));
  auto inputs = [&] {
    return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}},
                       {"Y", {HostVar<T>(c.y, NonZero<T>(c.y.num_elements(), 2))}}};
  };
  const AttrMap attrs = {{"axis", c.axis}};
  ExpectGpuMatchesCpu(Op(op, attrs), inputs, 0);  // one rounding per element, as on the cpu
  if (op == "elementwise_div" && !std::is_floating_point_v<T>) return;  // no integer gradient
  ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op(op, attrs), CPUPlace(), inputs()));
  ExpectGpuMatchesCpu(
      Op(op + "_grad", attrs),
      [&] {
        EagerInputs in = inputs();
        in["Out@GRAD"] = {HostVar<T>(out_shape, Values<T>(out_shape.num_elements(), 3))};
        if (op == "elementwise_div") in["Out"] = {fwd.at("Out")};
        return in;
      },
      GradTol<T>());
}

TEST_F(GpuTest, ElementwiseSubMulDivAndGradsMatchCpu) {
  for (const std::string op : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    for (const AddCase& c : AddCases()) {
      CheckBinary<float>(op, c);
      CheckBinary<double>(op, c);
      CheckBinary<int32_t>(op, c);
      CheckBinary<int64_t>(op, c);
    }
  }
  // Integer wrap-around and INT_MIN / -1, as on the cpu.
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  for (const std::string op : {"elementwise_sub", "elementwise_mul", "elementwise_div"}) {
    ExpectGpuMatchesCpu(
        Op(op),
        [&] {
          return EagerInputs{
              {"X", {HostVar<int32_t>(Shape({3}), {kMin, std::numeric_limits<int32_t>::max(), 7})}},
              {"Y", {HostVar<int32_t>(Shape({3}), {-1, 2, -2})}}};
        },
        0);
  }
}

TEST_F(GpuTest, IntegerDivisionByZeroIsInvalidArgumentAndTheGpuStaysUsable) {
  ExpectSameError(Op("elementwise_div"),
                  {{"X", {HostVar<int64_t>(Shape({2, 3}), Values<int64_t>(6))}},
                   {"Y", {HostVar<int64_t>(Shape({3}), {4, 0, 0})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'elementwise_div': integer division by zero: Y 'Y_0' [3] is 0 at position 1");
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnGpu(Op("elementwise_div"), {{"X", {HostVar<int32_t>(Shape({2}), {7, -7})}},
                                                 {"Y", {HostVar<int32_t>(Shape({2}), {2, 2})}}}));
  EXPECT_EQ(out.at("Out").ToVector<int32_t>(), (std::vector<int32_t>{3, -3}));
}

TEST_F(GpuTest, ActivationsAndGradsMatchCpu) {
  for (const std::string op : {"relu", "sigmoid", "tanh"}) {
    for (const Shape& s : {Shape({1023}), Shape(), Shape({0}), Shape({3, 4})}) {
      SCOPED_TRACE(absl::StrCat(op, s.ToString()));
      for (DataType dtype : kFloatTypes) {
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const int64_t n = s.num_elements();
          auto x = [&] { return EagerInputs{{"X", {HostVar<T>(s, Values<T>(n, 1))}}}; };
          ExpectGpuMatchesCpu(Op(op), x, Tol<T>() * 4);
          ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op(op), CPUPlace(), x()));
          ExpectGpuMatchesCpu(
              Op(op + "_grad"),
              [&] {
                return EagerInputs{{"Out", {fwd.at("Out")}},
                                   {"Out@GRAD", {HostVar<T>(s, Values<T>(n, 2))}}};
              },
              Tol<T>() * 4);
        });
      }
    }
  }
}

TEST_F(GpuTest, ReduceSumAndMeanAndGradsMatchCpu) {
  struct Case {
    Shape x;
    std::vector<int64_t> dims;
    bool keep_dim, reduce_all;
  };
  const std::vector<Case> cases = {
      {Shape({2, 3, 4}), {1}, false, false},  {Shape({2, 3, 4}), {0, 2}, true, false},
      {Shape({2, 3, 4}), {-1}, false, false}, {Shape({2, 3, 4}), {}, false, true},
      {Shape({3, 1}), {1}, false, false},     {Shape({300, 1001}), {0}, false, false},
      {Shape({300, 1001}), {1}, true, false}, {Shape({5000}), {0}, false, false},
      {Shape({0, 3}), {1}, false, false},     {Shape({7}), {}, true, true},
  };
  for (const Case& c : cases) {
    for (const std::string op : {"reduce_sum", "reduce_mean"}) {
      SCOPED_TRACE(absl::StrCat(op, c.x.ToString(), " dims ", c.dims.size()));
      const AttrMap attrs = {
          {"dim", c.dims}, {"keep_dim", c.keep_dim}, {"reduce_all", c.reduce_all}};
      ASSERT_OK_AND_ASSIGN(ReduceDims r, ReduceShape(op, c.x, c.dims, c.keep_dim, c.reduce_all));
      const int64_t n = c.x.num_elements();
      for (DataType dtype : kFloatTypes) {
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          ExpectGpuMatchesCpu(
              Op(op, attrs),
              [&] {
                return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}};
              },
              GradTol<T>());
          ExpectGpuMatchesCpu(
              Op(op + "_grad", attrs),
              [&] {
                return EagerInputs{
                    {"X", {HostVar<T>(c.x, Values<T>(n, 1))}},
                    {"Out@GRAD", {HostVar<T>(r.out, Values<T>(r.out.num_elements(), 2))}}};
              },
              0);
        });
      }
    }
  }
  ExpectSameError(Op("reduce_mean", {{"dim", std::vector<int64_t>{1}}}),
                  {{"X", {HostVar<float>(Shape({3, 0}), {})}}}, absl::StatusCode::kInvalidArgument,
                  "op 'reduce_mean': X [3, 0] has no elements to average over dim");
}

TEST_F(GpuTest, MulAndFcAndGradsMatchCpu) {
  const struct {
    Shape x, y;
    int64_t xn, yn;
  } muls[] = {{Shape({2, 3, 4}), Shape({12, 5}), 1, 1},
              {Shape({2, 3, 4}), Shape({4, 5}), 2, 1},
              {Shape({3, 0}), Shape({0, 4}), 1, 1},
              {Shape({33, 65}), Shape({65, 17}), 1, 1}};
  for (const auto& c : muls) {
    SCOPED_TRACE(absl::StrCat("mul ", c.x.ToString(), " ", c.y.ToString()));
    const AttrMap attrs = {{"x_num_col_dims", c.xn}, {"y_num_col_dims", c.yn}};
    ASSERT_OK_AND_ASSIGN(
        HostOutputs fwd,
        RunToHost(Op("mul", attrs), CPUPlace(),
                  {{"X", {HostVar<float>(c.x, Values<float>(c.x.num_elements()))}},
                   {"Y", {HostVar<float>(c.y, Values<float>(c.y.num_elements()))}}}));
    const Shape out = fwd.at("Out").tensor().shape();
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}},
                             {"Y", {HostVar<T>(c.y, Values<T>(c.y.num_elements(), 2))}},
                             {"Out@GRAD", {HostVar<T>(out, Values<T>(out.num_elements(), 3))}}};
        };
        ExpectGpuMatchesCpu(
            Op("mul", attrs),
            [&] {
              EagerInputs in = inputs();
              in.erase("Out@GRAD");
              return in;
            },
            GradTol<T>());
        ExpectGpuMatchesCpu(Op("mul_grad", attrs), inputs, GradTol<T>());
      });
    }
  }
  const struct {
    Shape input, w;
    int64_t in_num_col_dims;
    bool bias;
  } fcs[] = {{Shape({4, 6}), Shape({6, 3}), 1, true},
             {Shape({4, 6}), Shape({6, 3}), 1, false},
             {Shape({2, 3, 6}), Shape({6, 5}), 2, true},
             {Shape({4, 0}), Shape({0, 3}), 1, true},
             {Shape({300, 7}), Shape({7, 9}), 1, true}};
  for (const auto& c : fcs) {
    SCOPED_TRACE(absl::StrCat("fc ", c.input.ToString(), " bias ", c.bias));
    const AttrMap attrs = {{"in_num_col_dims", c.in_num_col_dims}};
    std::vector<int64_t> out_dims(c.input.dims().begin(),
                                  c.input.dims().begin() + c.in_num_col_dims);
    out_dims.push_back(c.w.dim(1));
    const Shape out(out_dims);
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&](bool grad) {
          EagerInputs in = {{"Input", {HostVar<T>(c.input, Values<T>(c.input.num_elements(), 1))}},
                            {"W", {HostVar<T>(c.w, Values<T>(c.w.num_elements(), 2))}}};
          if (c.bias && !grad)
            in["Bias"] = {HostVar<T>(Shape({c.w.dim(1)}), Values<T>(c.w.dim(1), 4))};
          if (grad) in["Out@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 3))};
          return in;
        };
        ExpectGpuMatchesCpu(
            Op("fc", attrs), [&] { return inputs(false); }, GradTol<T>());
        OpDesc grad = Op("fc_grad", attrs);
        grad.outputs = {{"Input@GRAD", {"di"}}, {"W@GRAD", {"dw"}}};
        if (c.bias) grad.outputs["Bias@GRAD"] = {"db"};
        ExpectGpuMatchesCpu(
            grad, [&] { return inputs(true); }, GradTol<T>());
      });
    }
  }
}

TEST_F(GpuTest, SoftmaxAndGradMatchCpu) {
  const struct {
    Shape x;
    int64_t axis;
  } cases[] = {{Shape({4, 5}), -1},       {Shape({3, 4, 5}), 1}, {Shape({2, 3000}), 1},
               {Shape({3, 40, 64}), 1},   {Shape({0, 3}), 1},    {Shape({7}), 0},
               {Shape({2, 2500, 33}), 1}, {Shape({128, 10}), -1}};
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axis ", c.axis));
    const AttrMap attrs = {{"axis", c.axis}};
    const int64_t n = c.x.num_elements();
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto x = [&] { return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}}; };
        ExpectGpuMatchesCpu(Op("softmax", attrs), x, Tol<T>());
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("softmax", attrs), CPUPlace(), x()));
        ExpectGpuMatchesCpu(
            Op("softmax_grad", attrs),
            [&] {
              return EagerInputs{{"Out", {fwd.at("Out")}},
                                 {"Out@GRAD", {HostVar<T>(c.x, Values<T>(n, 2))}}};
            },
            Tol<T>() * 4);
      });
    }
  }
}

TEST_F(GpuTest, SoftmaxWithCrossEntropyAndGradMatchCpu) {
  const struct {
    Shape logits, label;
    std::vector<int64_t> labels;
  } cases[] = {{Shape({6, 5}), Shape({6, 1}), {0, 4, -100, 2, 2, 1}},
               {Shape({2, 3, 5}), Shape({2, 3}), {1, -100, -100, 0, 3, 4}},
               {Shape({3, 3000}), Shape({3, 1}), {2999, 0, 1500}},
               {Shape({0, 5}), Shape({0, 1}), {}},
               {Shape({2, 0}), Shape({2, 1}), {-100, -100}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.logits.ToString());
    const int64_t rows = static_cast<int64_t>(c.labels.size());
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{
              {"Logits", {HostVar<T>(c.logits, Values<T>(c.logits.num_elements(), 1))}},
              {"Label", {Ids(c.label, c.labels)}}};
        };
        ExpectGpuMatchesCpu(Op("softmax_with_cross_entropy"), inputs, Tol<T>() * 4);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd,
                             RunToHost(Op("softmax_with_cross_entropy"), CPUPlace(), inputs()));
        ExpectGpuMatchesCpu(
            Op("softmax_with_cross_entropy_grad"),
            [&] {
              return EagerInputs{
                  {"Softmax", {fwd.at("Softmax")}},
                  {"Label", {Ids(c.label, c.labels)}},
                  {"Loss@GRAD", {HostVar<T>(fwd.at("Loss").tensor().shape(), Values<T>(rows, 2))}}};
            },
            Tol<T>());
      });
    }
  }
}

TEST_F(GpuTest, BadLabelsAreInvalidArgumentAndTheGpuStaysUsable) {
  const Variable logits = HostVar<float>(Shape({4, 5}), Values<float>(20));
  ExpectSameError(Op("softmax_with_cross_entropy"),
                  {{"Logits", {logits}}, {"Label", {Ids(Shape({4, 1}), {0, 7, -100, -1})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'softmax_with_cross_entropy': label 7 at position 1 is out of range [0, 5) "
                  "(ignore_index -100)");
  ExpectSameError(Op("softmax_with_cross_entropy_grad"),
                  {{"Softmax", {logits}},
                   {"Label", {Ids(Shape({4}), {0, 1, 2, 5})}},
                   {"Loss@GRAD", {HostVar<float>(Shape({3}), Values<float>(3))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'softmax_with_cross_entropy_grad': label 5 at position 3 is out of range "
                  "[0, 5) (ignore_index -100)");
  ExpectSameError(Op("accuracy"),
                  {{"Out", {logits}}, {"Label", {Ids(Shape({4}), {0, 1, -100, 2})}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'accuracy': label -100 at position 2 is out of range [0, 5)");
  ASSERT_OK_AND_ASSIGN(
      auto out,
      RunOnGpu(Op("accuracy"), {{"Out", {logits}}, {"Label", {Ids(Shape({4}), {0, 1, 4, 2})}}}));
  EXPECT_EQ(out.at("Total").ToVector<int64_t>(), (std::vector<int64_t>{4}));
  EXPECT_OK(device_->Synchronize());
}

TEST_F(GpuTest, AccuracyMatchesCpu) {
  // Ties rank by class index; k counts the classes above the label.
  std::vector<float> scores = Values<float>(8 * 5, 1);
  scores[3] = scores[0];
  std::vector<int64_t> labels = {0, 1, 2, 3, 4, 0, 1, 3};
  for (const int64_t k : {int64_t{1}, int64_t{2}, int64_t{5}}) {
    SCOPED_TRACE(k);
    ExpectGpuMatchesCpu(
        Op("accuracy", {{"k", k}}),
        [&] {
          return EagerInputs{{"Out", {HostVar<float>(Shape({8, 5}), scores)}},
                             {"Label", {Ids(Shape({8, 1}), labels)}}};
        },
        0);
  }
  std::vector<int64_t> many(3000);
  for (size_t i = 0; i < many.size(); ++i) many[i] = (i * 7) % 2500;
  ExpectGpuMatchesCpu(
      Op("accuracy", {{"k", int64_t{3}}}),
      [&] {
        return EagerInputs{
            {"Out", {HostVar<double>(Shape({3000, 2500}), Values<double>(7500000, 3))}},
            {"Label", {Ids(Shape({3000}), many)}}};
      },
      0);
  ExpectGpuMatchesCpu(
      Op("accuracy"),
      [&] {
        return EagerInputs{{"Out", {HostVar<float>(Shape({0, 5}), {})}},
                           {"Label", {Ids(Shape({0}), {})}}};
      },
      0);
}

TEST_F(GpuTest, ReshapeSharesTheInputsBufferOnTheGpu) {
  ASSERT_OK_AND_ASSIGN(
      Tensor x, Tensor::Allocate(device_->allocator(), DataType::kFloat32, Shape({2, 3, 4})));
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("reshape", {{"shape", std::vector<int64_t>{4, -1}}}),
                                  GPUPlace(0), {{"X", {Variable(x)}}}));
  const Tensor& o = out.at("Out")[0].tensor();
  EXPECT_EQ(o.shape(), Shape({4, 6}));
  EXPECT_EQ(o.place(), GPUPlace(0));
  EXPECT_EQ(o.raw_data(), x.raw_data());
}

TEST_F(GpuTest, TransposeConcatSplitAndGradsMatchCpuBitwise) {
  for (DataType dtype : kNumericTypes) {
    SCOPED_TRACE(DataTypeName(dtype));
    DispatchNumericForTest(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto var = [](const Shape& s, int salt) {
        return HostVar<T>(s, Values<T>(s.num_elements(), salt));
      };
      const struct {
        Shape x;
        std::vector<int64_t> axis;
      } transposes[] = {{Shape({2, 3}), {1, 0}},
                        {Shape({2, 3, 4}), {2, 0, 1}},
                        {Shape({2, 3, 4, 5}), {0, 2, 3, 1}},
                        {Shape({1, 7, 1, 3}), {3, 2, 1, 0}},
                        {Shape({0, 3}), {1, 0}},
                        {Shape({33, 65}), {1, 0}}};
      for (const auto& c : transposes) {
        SCOPED_TRACE(c.x.ToString());
        const AttrMap attrs = {{"axis", c.axis}};
        ExpectGpuMatchesCpu(
            Op("transpose", attrs),
            [&] {
              return EagerInputs{{"X", {var(c.x, 1)}}};
            },
            0);
        ASSERT_OK_AND_ASSIGN(Shape out, TransposeShape("t", c.x, c.axis));
        ExpectGpuMatchesCpu(
            Op("transpose_grad", attrs),
            [&] {
              return EagerInputs{{"Out@GRAD", {var(out, 2)}}};
            },
            0);
      }
      // concat of three pieces (one empty) along axis 1, and back.
      const std::vector<Shape> pieces = {Shape({2, 1, 3}), Shape({2, 4, 3}), Shape({2, 0, 3})};
      auto xs = [&] {
        std::vector<Variable> v;
        for (size_t i = 0; i < pieces.size(); ++i) v.push_back(var(pieces[i], 3 + i));
        return v;
      };
      ExpectGpuMatchesCpu(
          Op("concat", {{"axis", int64_t{-2}}}),
          [&] {
            return EagerInputs{{"X", xs()}};
          },
          0);
      OpDesc concat_grad =
          Op("concat_grad", {{"axis", int64_t{1}}, {"grad_positions", std::vector<int64_t>{0, 1}}});
      concat_grad.outputs["X@GRAD"] = {"d0", "d1"};
      ExpectGpuMatchesCpu(
          concat_grad,
          [&] {
            return EagerInputs{{"X", xs()}, {"Out@GRAD", {var(Shape({2, 5, 3}), 6)}}};
          },
          0);
      // split into sections along axis 0, and back with one gradient missing.
      const AttrMap split_attrs = {{"axis", int64_t{0}},
                                   {"sections", std::vector<int64_t>{1, -1, 2}}};
      OpDesc split = Op("split", split_attrs);
      split.outputs["Out"] = {"a", "b", "c"};
      ExpectGpuMatchesCpu(
          split,
          [&] {
            return EagerInputs{{"X", {var(Shape({6, 5}), 7)}}};
          },
          0);
      AttrMap grad_attrs = split_attrs;
      grad_attrs["grad_positions"] = std::vector<int64_t>{0, 2};
      ExpectGpuMatchesCpu(
          Op("split_grad", grad_attrs),
          [&] {
            return EagerInputs{{"X", {var(Shape({6, 5}), 7)}},
                               {"Out@GRAD", {var(Shape({1, 5}), 8), var(Shape({2, 5}), 9)}}};
          },
          0);
      OpDesc equal = Op("split", {{"axis", int64_t{1}}, {"num", int64_t{2}}});
      equal.outputs["Out"] = {"a", "b"};
      ExpectGpuMatchesCpu(
          equal,
          [&] {
            return EagerInputs{{"X", {var(Shape({3, 4, 2}), 10)}}};
          },
          0);
    });
  }
}

TEST_F(GpuTest, DropoutMaskAndGradMatchCpuBitwise) {
  for (const double prob : {0.0, 0.3, 1.0}) {
    for (const bool is_test : {false, true}) {
      for (DataType dtype : kFloatTypes) {
        SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " prob ", prob, " is_test ", is_test));
        DispatchDataType(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const AttrMap attrs = {
              {"dropout_prob", prob}, {"is_test", is_test}, {"seed", int64_t{-42}}};
          const Shape s({300, 257});
          auto x = [&] { return EagerInputs{{"X", {HostVar<T>(s, Values<T>(s.num_elements()))}}}; };
          ExpectGpuMatchesCpu(Op("dropout", attrs), x, 0);
          ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("dropout", attrs), CPUPlace(), x()));
          ExpectGpuMatchesCpu(
              Op("dropout_grad", {{"dropout_prob", prob}, {"is_test", is_test}}),
              [&] {
                return EagerInputs{{"Mask", {fwd.at("Mask")}},
                                   {"Out@GRAD", {HostVar<T>(s, Values<T>(s.num_elements(), 2))}}};
              },
              0);
        });
      }
    }
  }
}

TEST_F(GpuTest, Conv2DAndGradsMatchCpu) {
  const struct {
    Shape input, filter;
    std::vector<int64_t> strides, paddings, dilations;
    int64_t groups;
  } cases[] = {
      {Shape({2, 3, 7, 7}), Shape({4, 3, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape({2, 3, 9, 8}), Shape({4, 3, 3, 2}), {2, 1}, {0, 1}, {2, 1}, 1},
      {Shape({2, 4, 6, 6}), Shape({6, 2, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 2},
      {Shape({2, 3, 5, 5}), Shape({4, 3, 1, 1}), {1, 1}, {0, 0}, {1, 1}, 1},  // direct
      {Shape({0, 3, 5, 5}), Shape({4, 3, 3, 3}), {1, 1}, {1, 1}, {1, 1}, 1},
      {Shape({5, 1, 28, 28}), Shape({8, 1, 5, 5}), {1, 1}, {2, 2}, {1, 1}, 1},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.input.ToString(), " * ", c.filter.ToString()));
    const AttrMap attrs = {{"strides", c.strides},
                           {"paddings", c.paddings},
                           {"dilations", c.dilations},
                           {"groups", c.groups}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto inputs = [&] {
          return EagerInputs{
              {"Input", {HostVar<T>(c.input, Values<T>(c.input.num_elements(), 1))}},
              {"Filter", {HostVar<T>(c.filter, Values<T>(c.filter.num_elements(), 2))}}};
        };
        const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
        ExpectGpuMatchesCpu(Op("conv2d", attrs), inputs, tol);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("conv2d", attrs), CPUPlace(), inputs()));
        const Shape out = fwd.at("Output").tensor().shape();
        ExpectGpuMatchesCpu(
            Op("conv2d_grad", attrs),
            [&] {
              EagerInputs in = inputs();
              in["Output@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 3))};
              return in;
            },
            tol);
      });
    }
  }
}

TEST_F(GpuTest, Pool2DAndGradMatchCpuBitwise) {
  const struct {
    Shape x;
    std::string type;
    std::vector<int64_t> ksize, strides, paddings;
    bool global, exclusive;
  } cases[] = {
      {Shape({2, 3, 8, 8}), "max", {2, 2}, {2, 2}, {0, 0}, false, true},
      {Shape({2, 3, 7, 9}), "max", {3, 3}, {1, 2}, {1, 1}, false, true},  // overlapping, ties
      {Shape({2, 3, 7, 9}), "avg", {3, 3}, {1, 2}, {1, 1}, false, true},
      {Shape({2, 3, 7, 9}), "avg", {3, 2}, {2, 1}, {1, 1}, false, false},
      {Shape({2, 3, 5, 6}), "avg", {}, {1, 1}, {0, 0}, true, true},
      {Shape({2, 3, 5, 6}), "max", {}, {1, 1}, {0, 0}, true, true},
      {Shape({0, 3, 4, 4}), "max", {2, 2}, {2, 2}, {0, 0}, false, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.type, c.x.ToString(), " global ", c.global));
    const AttrMap attrs = {{"pooling_type", c.type},     {"ksize", c.ksize},
                           {"strides", c.strides},       {"paddings", c.paddings},
                           {"global_pooling", c.global}, {"exclusive", c.exclusive}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto x = [&] {
          return EagerInputs{{"X", {HostVar<T>(c.x, Values<T>(c.x.num_elements(), 1))}}};
        };
        ExpectGpuMatchesCpu(Op("pool2d", attrs), x, 0);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd, RunToHost(Op("pool2d", attrs), CPUPlace(), x()));
        const Shape out = fwd.at("Out").tensor().shape();
        ExpectGpuMatchesCpu(
            Op("pool2d_grad", attrs),
            [&] {
              EagerInputs in = x();
              in["Out"] = {fwd.at("Out")};
              in["Out@GRAD"] = {HostVar<T>(out, Values<T>(out.num_elements(), 2))};
              return in;
            },
            // The host's float32 pooling is oneDNN's, whose average gradient
            // rounds the window shares differently in the last bit.
            c.type == "avg" && dtype == DataType::kFloat32 ? Tol<T>() : 0);
      });
    }
  }
}

TEST_F(GpuTest, LayerNormAndGradsMatchCpu) {
  const struct {
    Shape x;
    int64_t axis;
    bool scale, bias;
  } cases[] = {
      {Shape({4, 6}), 1, true, true},      {Shape({2, 3, 4}), 1, false, false},
      {Shape({2, 3, 4}), -1, true, false}, {Shape({3, 3000}), 1, true, true},  // a block per row
      {Shape({700, 20}), 1, true, true},  // many rows: chunked column sums
      {Shape({0, 5}), 1, true, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axis ", c.axis));
    const AttrMap attrs = {{"begin_norm_axis", c.axis}, {"epsilon", 1e-5}};
    for (DataType dtype : kFloatTypes) {
      DispatchDataType(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = c.x.num_elements();
        const int64_t axis = c.axis < 0 ? c.axis + c.x.rank() : c.axis;
        int64_t cols = 1;
        for (int d = static_cast<int>(axis); d < c.x.rank(); ++d) cols *= c.x.dim(d);
        auto inputs = [&] {
          EagerInputs in = {{"X", {HostVar<T>(c.x, Values<T>(n, 1))}}};
          if (c.scale) in["Scale"] = {HostVar<T>(Shape({cols}), Values<T>(cols, 2))};
          if (c.bias) in["Bias"] = {HostVar<T>(Shape({cols}), Values<T>(cols, 3))};
          return in;
        };
        ExpectGpuMatchesCpu(Op("layer_norm", attrs), inputs, Tol<T>() * 8);
        ASSERT_OK_AND_ASSIGN(HostOutputs fwd,
                             RunToHost(Op("layer_norm", attrs), CPUPlace(), inputs()));
        OpDesc grad = Op("layer_norm_grad", attrs);
        grad.outputs["X@GRAD"] = {"dx"};
        if (c.scale) grad.outputs["Scale@GRAD"] = {"ds"};
        grad.outputs["Bias@GRAD"] = {"db"};
        ExpectGpuMatchesCpu(
            grad,
            [&] {
              EagerInputs in = inputs();
              in.erase("Bias");
              in["Mean"] = {fwd.at("Mean")};
              in["Variance"] = {fwd.at("Variance")};
              in["Y@GRAD"] = {HostVar<T>(c.x, Values<T>(n, 4))};
              return in;
            },
            Tol<T>() * 64);
      });
    }
  }
}

TEST_F(GpuTest, ShapeWritesHostMemoryWithoutDeviceWork) {
  for (DataType dtype : AllDataTypes()) {
    SCOPED_TRACE(DataTypeName(dtype));
    ASSERT_OK_AND_ASSIGN(Tensor x,
                         Tensor::Allocate(device_->allocator(), dtype, Shape({1, 3, 5, 5})));
    EagerStats stats;
    ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                         RunOpEager(Op("shape"), GPUPlace(0), {{"Input", {Variable(x)}}}, &stats));
    const Tensor& t = out.at("Out")[0].tensor();
    EXPECT_EQ(t.place(), CPUPlace());
    EXPECT_EQ(t.dtype(), DataType::kInt32);
    EXPECT_EQ(t.ToVector<int32_t>(), (std::vector<int32_t>{1, 3, 5, 5}));
    EXPECT_EQ(stats.copies_h2d + stats.copies_d2h, 0);
  }
  ASSERT_OK_AND_ASSIGN(Tensor scalar,
                       Tensor::Allocate(device_->allocator(), DataType::kFloat32, Shape()));
  ASSERT_OK_AND_ASSIGN(EagerOutputs out,
                       RunOpEager(Op("shape"), GPUPlace(0), {{"Input", {Variable(scalar)}}}));
  EXPECT_EQ(out.at("Out")[0].tensor().shape(), Shape({0}));
}

struct SliceCase {
  Shape x;
  std::vector<int64_t> axes, starts, ends;
};

TEST_F(GpuTest, SliceAndGradMatchCpuBitwise) {
  const std::vector<SliceCase> cases = {
      {Shape({4}), {0}, {0}, {4}},                     // the crop workload's shape slice
      {Shape({2, 3, 8, 8}), {1}, {1}, {3}},            // merged inner dims
      {Shape({5, 6, 7}), {0, 2}, {-4, 1}, {100, -1}},  // negative and clamped
      {Shape({5, 6, 7}), {-1, 1}, {2, 5}, {4, 2}},     // end <= start: empty
      {Shape({3, 1, 4, 2, 5, 2, 3, 2, 3}), {0, 2, 4, 6, 8}, {1, 1, 1, 1, 1}, {3, 3, 4, 2, 2}},
      {Shape({9}), {}, {}, {}},        // nothing sliced
      {Shape(), {}, {}, {}},           // 0-d
      {Shape({0, 3}), {1}, {1}, {2}},  // empty input
  };
  for (const SliceCase& c : cases) {
    SCOPED_TRACE(absl::StrCat(c.x.ToString(), " axes ", c.axes.size()));
    const AttrMap attrs = {{"axes", c.axes}, {"starts", c.starts}, {"ends", c.ends}};
    ASSERT_OK_AND_ASSIGN(Box box, SliceBox("slice", c.x, c.axes, c.starts, c.ends));
    for (DataType dtype : kNumericTypes) {
      SCOPED_TRACE(DataTypeName(dtype));
      DispatchNumericForTest(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const int64_t n = c.x.num_elements();
        ExpectGpuMatchesCpu(
            Op("slice", attrs),
            [&] {
              return EagerInputs{{"Input", {HostVar<T>(c.x, Values<T>(n, 1))}}};
            },
            0);
        ExpectGpuMatchesCpu(
            Op("slice_grad", attrs),
            [&] {
              return EagerInputs{
                  {"Input", {HostVar<T>(c.x, Values<T>(n, 1))}},
                  {"Out@GRAD", {HostVar<T>(box.shape, Values<T>(box.shape.num_elements(), 2))}}};
            },
            0);
      });
    }
  }
}

TEST_F(GpuTest, CropTensorTooLargeIsInvalidArgumentAndGoodCropsMatchCpu) {
  const Shape x({1, 3, 8, 8});
  auto shape_var = [](std::vector<int32_t> v) {
    return Variable(Tensor::FromVector<int32_t>(Shape({static_cast<int64_t>(v.size())}), v));
  };
  auto inputs = [&](std::vector<int32_t> sizes) {
    return EagerInputs{{"X", {HostVar<float>(x, Values<float>(x.num_elements(), 1))}},
                       {"Shape", {shape_var(sizes)}}};
  };
  ExpectSameError(Op("crop_tensor"), inputs({1, 3, 9, 8}), absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': crop of size 9 at offset 0 exceeds dim 2 of X [1, 3, 8, 8]");
  ExpectSameError(Op("crop_tensor", {{"offsets", std::vector<int64_t>{0, 1, 4, 0}}}),
                  inputs({1, 3, 5, 5}), absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': crop of size 3 at offset 1 exceeds dim 1 of X [1, 3, 8, 8]");
  ExpectSameError(Op("crop_tensor"),
                  {{"X", {HostVar<float>(x, Values<float>(x.num_elements()))}},
                   {"Shape", {Variable(Tensor::FromVector<int64_t>(Shape({4}), {1, 3, 5, 5}))}}},
                  absl::StatusCode::kInvalidArgument,
                  "op 'crop_tensor': Shape must be a 1-D int32 tensor, got int64[4]");

  const struct {
    std::vector<int32_t> sizes;
    std::vector<int64_t> offsets;
  } crops[] = {{{1, 3, 5, 5}, {}},  // the crop workload's
               {{-1, 2, -1, 3}, {0, 1, 2, 5}},
               {{1, 3, 8, 8}, {}},   // everything
               {{1, 0, 4, 4}, {}}};  // empty
  for (const auto& c : crops) {
    SCOPED_TRACE(c.offsets.size());
    const AttrMap attrs = {{"offsets", c.offsets}};
    ASSERT_OK_AND_ASSIGN(
        Box box,
        CropBox("crop_tensor", x, std::vector<int64_t>(c.sizes.begin(), c.sizes.end()), c.offsets));
    for (DataType dtype : kNumericTypes) {
      SCOPED_TRACE(DataTypeName(dtype));
      DispatchNumericForTest(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        auto make = [&](bool grad) {
          EagerInputs in = {{"X", {HostVar<T>(x, Values<T>(x.num_elements(), 1))}},
                            {"Shape", {shape_var(c.sizes)}}};
          if (grad) {
            in["Out@GRAD"] = {HostVar<T>(box.shape, Values<T>(box.shape.num_elements(), 2))};
          }
          return in;
        };
        ExpectGpuMatchesCpu(
            Op("crop_tensor", attrs), [&] { return make(false); }, 0);
        ExpectGpuMatchesCpu(
            Op("crop_tensor_grad", attrs), [&] { return make(true); }, 0);
      });
    }
  }
  // Shape is read on the host: only X is copied to the GPU.
  EagerStats stats;
  ASSERT_OK(RunOpEager(Op("crop_tensor"), GPUPlace(0), inputs({1, 3, 5, 5}), &stats).status());
  EXPECT_EQ(stats.copies_h2d, 1);
}

TEST_F(GpuTest, UniformRandomIsBitwiseEqualToCpu) {
  struct Case {
    std::vector<int64_t> shape;
    double min, max;
    int64_t seed;
  };
  const std::vector<Case> cases = {
      {{1000, 150}, -0.05, 0.05, 0},
      {{1023}, -1, 1, 42},
      {{3, 0}, -1, 1, 7},
      {{}, 0, 1, 1},
      {{257, 3}, 2.5, 1e6, -123},
      {{4096}, -1e-30, 3e-30, 9},
      {{77}, 1, 1, 5},
      {{5000}, -3.7, 11.1, std::numeric_limits<int64_t>::min()},
  };
  for (const Case& c : cases) {
    for (DataType dtype : kFloatTypes) {
      SCOPED_TRACE(absl::StrCat(DataTypeName(dtype), " ", c.shape.size(), " seed ", c.seed));
      const AttrMap attrs = {
          {"shape", c.shape}, {"dtype", dtype}, {"min", c.min}, {"max", c.max}, {"seed", c.seed}};
      ExpectGpuMatchesCpu(
          Op("uniform_random", attrs), [] { return EagerInputs{}; }, 0);
    }
  }
}

}  // namespace
}  // namespace cuda
}  // namespace tandem
