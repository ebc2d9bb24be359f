// KernelDef and KernelRegistry. A kernel's whole contract is its
// registration line: op, device type, dtype constraints and the arguments
// that live in host memory.
//
//   REGISTER_KERNEL(KernelDef("crop_tensor", "gpu")
//                       .TypeConstraint("X", {DataType::kFloat32})
//                       .HostMemory("Shape"),
//                   CropTensorKernel);
//
//   ASSIGN_OR_RETURN(const KernelRegistration* k,
//       KernelRegistry::Global().Find("crop_tensor", DeviceType::GPU(),
//                                     [&](absl::string_view arg) { ... dtype ... }));
//
// A kernel that allocates temporary device memory while it runs (beyond its
// outputs: im2col columns, partial sums) declares how much, so that the
// memory estimate (framework/estimate/memory_estimate.h) counts it:
//
//   REGISTER_KERNEL(KernelDef("mean", "gpu")
//                       .TypeConstraint("X", kFloatTypes)
//                       .Scratch([](const OpDesc&, const ArgMetas& in, const ArgMetas&) {
//                         const TensorMeta* x = FirstMeta(in, "X");
//                         return x == nullptr ? 0 : 8 * MeanPartCount(x->shape.num_elements());
//                       }),
//                   MeanKernel);
//
// A collective (an all-reduce across the replicas of a data-parallel
// program, framework/parallel) says which one it is: the executor runs its
// device work on a stream of its own, so that it overlaps the kernels, and
// the profiler reports its bandwidth:
//
//   REGISTER_KERNEL(KernelDef("c_allreduce_sum", "gpu")
//                       .TypeConstraint("X", kFloatTypes)
//                       .Collective(CollectiveKind::kAllReduce),
//                   NcclAllReduceKernel);
//
// Kernels that touch a table row by row say so, and the pipelined executor
// lets a lookup of a sparse table run while the previous step's sparse
// update of that table does, waiting only for the rows it writes
// (executor.h, "Pipelined runs"):
//
//   KernelDef("lookup_table", "cpu")         // Out[k] = W[Ids[k]] (no padding row)
//       .GathersRows("W", "Ids", "Out", [](const OpDesc& op) { return !HasPadding(op); });
//   KernelDef("lookup_table_grad", "cpu")    // a sparse W@GRAD whose rows are Ids
//       .SparseRowsFrom("Ids", "W@GRAD", [](const OpDesc& op) { return IsSparse(op); });
//   KernelDef("sgd", "cpu").UpdatesRowsOf("Param", "Grad");   // sparse Grad: only its rows
//
// A TypeConstraint names an input argument (its variable's dtype) or a dtype
// attribute. Two registrations for the same op and device whose constraints
// can match the same dtypes are a start-up crash. Registration happens during
// static initialisation; lookups afterwards are thread-safe.
#ifndef TANDEM_FRAMEWORK_KERNEL_KERNEL_REGISTRY_H_
#define TANDEM_FRAMEWORK_KERNEL_KERNEL_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "framework/kernel/op_kernel.h"
#include "framework/op/op_desc.h"
#include "framework/op/op_schema.h"
#include "framework/place/place.h"
#include "framework/types/data_type.h"

namespace tandem {

inline const std::vector<DataType> kFloatTypes = {DataType::kFloat32, DataType::kFloat64};
inline const std::vector<DataType> kFloatTypesWith16Bit = {DataType::kFloat32, DataType::kFloat64,
                                                           DataType::kBFloat16, DataType::kFloat16};
inline const std::vector<DataType> kNumericTypes = {DataType::kFloat32, DataType::kFloat64,
                                                    DataType::kInt32, DataType::kInt64};
inline const std::vector<DataType> kNumericTypesWith16Bit = {
    DataType::kFloat32, DataType::kFloat64,  DataType::kInt32,
    DataType::kInt64,   DataType::kBFloat16, DataType::kFloat16};

// What a collective kernel does across its group's ranks (none: not a
// collective). Its bus bandwidth is its algorithm bandwidth (bytes / time)
// times 2 (n - 1) / n for an all-reduce, (n - 1) / n for an all-gather and 1
// for a broadcast (the convention of NCCL's tests).
enum class CollectiveKind { kNone, kAllReduce, kBroadcast, kAllGather };
// "allreduce", "broadcast", "allgather", "none".
const char* CollectiveKindName(CollectiveKind kind);
// The bus bandwidth factor above for `ranks` ranks (1 for one rank or fewer).
double CollectiveBusFactor(CollectiveKind kind, int ranks);

// An op's arguments as shape inference sees them, by argument name.
using ArgMetas = std::map<std::string, std::vector<TensorMeta>>;
// The most bytes of temporary memory on its device a kernel allocates
// while it computes `op` with arguments of these metas (unknown dims as 1;
// a SelectedRows argument's first dim: the rows it holds), beyond its
// outputs; freed when Compute returns. Called at Prepare, from any thread:
// a pure function.
using ScratchFn =
    std::function<int64_t(const OpDesc& op, const ArgMetas& inputs, const ArgMetas& outputs)>;
// Whether a kernel's row contract holds for this op (e.g. for its
// attributes); a pure function.
using OpPredicate = std::function<bool(const OpDesc& op)>;

// The row contracts of KernelDef (see the header comment). Each holds for
// an op when `applies` is unset or returns true for it.
struct RowGatherContract {
  // Output `out`'s row k is row ids[k] of input `table` (a dense 2-D
  // tensor), for every k, and nothing else is read: the executor may run
  // the kernel on other ids and copy some rows of `table` itself.
  std::string table, ids, out;
  OpPredicate applies;
};
struct SparseRowsContract {
  // Output `out` is sparse (SelectedRows) and its rows are the values of
  // input `ids`.
  std::string ids, out;
  OpPredicate applies;
};
struct RowUpdateContract {
  // With a sparse input `grad`, the kernel writes only the rows of input
  // (and in-place output) `param` that `grad` names.
  std::string param, grad;
};

// The meta of argument `arg`'s first variable; nullptr when it has none.
const TensorMeta* FirstMeta(const ArgMetas& args, absl::string_view arg);

class KernelDef {
 public:
  // `device_type` is a device-type name ("cpu", "gpu", "sim").
  KernelDef(std::string op, std::string device_type)
      : op_(std::move(op)), device_type_name_(std::move(device_type)) {}

  KernelDef& TypeConstraint(std::string arg_or_attr, std::vector<DataType> types);
  KernelDef& HostMemory(std::string arg);
  KernelDef& Scratch(ScratchFn bytes);
  // Pinned host memory the kernel object keeps across runs for data it
  // stages itself (a CUDA kernel's KernelStaging), at most these bytes for
  // `op`; same contract as Scratch. The memory estimate counts it on the
  // host from the start, once whatever the runs in flight.
  KernelDef& HostStaging(ScratchFn bytes);
  // The kernel is a collective of this kind over the ranks of its op's
  // group (attributes ring_id, nranks, rank): on a device its work goes to
  // the executor's collective stream (a stream of the plan's own, ordered
  // with the compute stream by events), and the profiler reports its bytes
  // (its inputs') and bandwidths.
  KernelDef& Collective(CollectiveKind kind);
  // Row contracts (RowGatherContract and the others above).
  KernelDef& GathersRows(std::string table, std::string ids, std::string out,
                         OpPredicate applies = nullptr);
  KernelDef& SparseRowsFrom(std::string ids, std::string out, OpPredicate applies = nullptr);
  KernelDef& UpdatesRowsOf(std::string param, std::string grad);
  // The kernel may bind its outputs to input `arg`'s own tensor instead of
  // writing copies (elementwise_add_grad: X@GRAD and Y@GRAD are Out@GRAD
  // when nothing is broadcast), where the plan allows it for the step
  // (KernelContext::may_forward_inputs: no other step writes those
  // variables, none is persistable, fed or fetched).
  KernelDef& ForwardsInput(std::string arg) {
    forwarded_input_ = std::move(arg);
    return *this;
  }
  const std::string& forwarded_input() const { return forwarded_input_; }  // "": none

  const std::string& op() const { return op_; }
  const std::string& device_type_name() const { return device_type_name_; }
  DeviceType device_type() const;
  const std::map<std::string, std::set<DataType>>& type_constraints() const { return constraints_; }
  const std::set<std::string>& host_memory_args() const { return host_args_; }
  bool IsHostMemory(absl::string_view arg) const { return host_args_.count(std::string(arg)) > 0; }
  // What Scratch declared for `op` (0 when nothing was declared).
  int64_t ScratchBytes(const OpDesc& op, const ArgMetas& inputs, const ArgMetas& outputs) const {
    return scratch_ ? scratch_(op, inputs, outputs) : 0;
  }
  bool declares_scratch() const { return static_cast<bool>(scratch_); }
  // What HostStaging declared for `op` (0 when nothing was declared).
  int64_t HostStagingBytes(const OpDesc& op, const ArgMetas& inputs,
                           const ArgMetas& outputs) const {
    return host_staging_ ? host_staging_(op, inputs, outputs) : 0;
  }
  bool declares_host_staging() const { return static_cast<bool>(host_staging_); }
  CollectiveKind collective() const { return collective_; }
  // The row contracts that hold for `op`; nullptr when none was declared or
  // its predicate refuses the op.
  const RowGatherContract* RowGather(const OpDesc& op) const;
  const SparseRowsContract* SparseRows(const OpDesc& op) const;
  const RowUpdateContract* RowUpdate() const { return row_update_ ? &*row_update_ : nullptr; }
  // "crop_tensor on gpu [X: float32] HostMemory(Shape)"
  std::string DebugString() const;

 private:
  std::string op_;
  std::string device_type_name_;
  std::map<std::string, std::set<DataType>> constraints_;
  std::set<std::string> host_args_;
  ScratchFn scratch_;
  ScratchFn host_staging_;
  CollectiveKind collective_ = CollectiveKind::kNone;
  std::optional<RowGatherContract> row_gather_;
  std::optional<SparseRowsContract> sparse_rows_;
  std::optional<RowUpdateContract> row_update_;
  std::string forwarded_input_;
};

using KernelFactory = std::function<absl::StatusOr<std::unique_ptr<OpKernel>>(const OpDesc&)>;

struct KernelRegistration {
  KernelDef def;
  KernelFactory factory;
  // Creates and initialises a kernel for `op`.
  absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpDesc& op) const { return factory(op); }
};

// Returns the dtype bound to an argument or attribute name, or nullopt when
// it is unknown (an absent optional input).
using DTypeResolver = absl::FunctionRef<std::optional<DataType>(absl::string_view)>;

class KernelRegistry {
 public:
  static KernelRegistry& Global();

  // CHECK-fails on an ambiguous duplicate (see above).
  void Register(KernelDef def, KernelFactory factory);
  // Replaces the factory of every kernel registered so far for the device
  // type named `device_type` by wrap(factory), and returns how many: for a
  // backend that adapts kernels it shares with others (the sim backend
  // orders them after its stream). Like Register, call it during static
  // initialisation only, e.g. from a registrar defined after the kernels'
  // registrars in the same file.
  int WrapFactories(absl::string_view device_type,
                    absl::FunctionRef<KernelFactory(KernelFactory)> wrap);

  // The kernel for `op` on `device` whose constraints accept the dtypes;
  // NotFound listing the kernels registered for the op otherwise.
  absl::StatusOr<const KernelRegistration*> Find(absl::string_view op, DeviceType device,
                                                 DTypeResolver dtype_of) const;
  // The dtype-resolving form for an op whose variables' dtypes are known.
  absl::StatusOr<const KernelRegistration*> FindForOp(
      const OpDesc& op, DeviceType device,
      absl::FunctionRef<std::optional<DataType>(const std::string& var)> var_dtype) const;

  bool HasKernel(absl::string_view op, DeviceType device) const;
  std::vector<const KernelRegistration*> KernelsFor(absl::string_view op) const;
  std::vector<const KernelRegistration*> AllKernels() const;

 private:
  std::vector<std::unique_ptr<KernelRegistration>> kernels_;
};

struct KernelRegistrar {
  KernelRegistrar(KernelDef def, KernelFactory factory) {
    KernelRegistry::Global().Register(std::move(def), std::move(factory));
  }
};

template <typename K>
KernelFactory MakeKernelFactory() {
  return [](const OpDesc& op) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    auto kernel = std::make_unique<K>();
    absl::Status s = kernel->Init(op);
    if (!s.ok()) return s;
    return std::unique_ptr<OpKernel>(std::move(kernel));
  };
}

// A kernel class that several backends register (backends/common, templated
// on an execution policy) carries its registration line beside it, as a
// static member taking the device type:
//
//   template <typename Policy>
//   class ScaleKernel final : public OpKernel {
//    public:
//     using Types = NumericTypes;
//     static KernelDef Contract(const std::string& device_type) {
//       return KernelDef("scale", device_type).TypeConstraint("X", Types::DataTypes());
//     }
//     ...
//   };
//   RegisterByContract<ScaleKernel<CpuPolicy>, MeanKernel<CpuPolicy>>("cpu");
//
// Registers each of `Kernels` for `device_type` with its Contract. Called
// during static initialisation (backends/common/host_kernels.h).
template <typename... Kernels>
void RegisterByContract(const std::string& device_type) {
  (KernelRegistry::Global().Register(Kernels::Contract(device_type), MakeKernelFactory<Kernels>()),
   ...);
}

#define TANDEM_KERNEL_CONCAT_INNER_(a, b) a##b
#define TANDEM_KERNEL_CONCAT_(a, b) TANDEM_KERNEL_CONCAT_INNER_(a, b)
// REGISTER_KERNEL(KernelDef(...)..., KernelClass): the class is
// default-constructed and Init(op) is called for every op instance.
#define REGISTER_KERNEL(def, ...)                                                                \
  static ::tandem::KernelRegistrar TANDEM_KERNEL_CONCAT_(tandem_kernel_registrar_, __COUNTER__)( \
      def, ::tandem::MakeKernelFactory<__VA_ARGS__>())

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_KERNEL_KERNEL_REGISTRY_H_
