#include "framework/parallel/data_parallel.h"

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/device/device.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/persistence/checkpoint.h"

namespace tandem {

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Create(
    const Program& main, const Program& startup, const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, DataParallelOptions options) {
  if (options.places.empty()) {
    return absl::InvalidArgumentError("data parallel: no place to run a replica on");
  }
  if (options.processes != nullptr && options.places.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data parallel across processes: each process runs one rank on one place, got ",
        options.places.size(), " places"));
  }
  std::unique_ptr<DataParallel> dp(new DataParallel(std::move(options), feeds, fetches));
  const DataParallelOptions& o = dp->options_;
  dp->group_ = o.processes != nullptr
                   ? CollectiveGroup::CreateAcrossProcesses(o.places[0], o.processes, {o.deadline})
                   : CollectiveGroup::Create(o.places, {o.deadline});
  ReplicateOptions r;
  r.nranks = dp->size();
  r.ring_id = dp->group_->id();
  r.bucket_bytes = o.bucket_bytes;
  r.tables_per_process = o.processes != nullptr;
  ASSIGN_OR_RETURN(dp->programs_, ReplicateForDataParallel(main, startup, r));
  for (const Place& place : o.places) {
    dp->executors_.push_back(std::make_unique<Executor>(place, o.executor));
    dp->scopes_.push_back(std::make_unique<Scope>());
  }
  dp->plans_.resize(dp->local_ranks());
  return dp;
}

DataParallel::DataParallel(DataParallelOptions options, std::vector<std::string> feeds,
                           std::vector<std::string> fetches)
    : options_(std::move(options)), feeds_(std::move(feeds)), fetches_(std::move(fetches)) {}

// Plans before executors: a plan is released while its executor lives.
DataParallel::~DataParallel() { plans_.clear(); }

int DataParallel::size() const { return group_->size(); }

int DataParallel::first_rank() const {
  return options_.processes != nullptr ? options_.processes->rank() : 0;
}

absl::Status DataParallel::OnEveryRank(const std::string& what,
                                       const std::function<absl::Status(int)>& fn) {
  statuses_.assign(local_ranks(), absl::OkStatus());
  std::mutex mu;
  int failed = -1;  // the first of this process's ranks to fail, by time
  auto name = [&](int i) {
    return absl::StrCat("rank ", first_rank() + i, " (", options_.places[i].ToString(), ")");
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < local_ranks(); ++i) {
    threads.emplace_back([&, i] {
      absl::Status s = fn(i);
      if (s.ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      statuses_[i] = s;
      if (failed >= 0) return;
      failed = i;
      group_->Abort(absl::Status(s.code(), absl::StrCat(name(i), " failed: ", s.message())));
    });
  }
  for (std::thread& t : threads) t.join();
  group_->Reset();  // every rank is out of its collectives
  if (failed < 0) return absl::OkStatus();
  const absl::Status& first = statuses_[failed];
  for (int i = 0; i < local_ranks(); ++i) {
    if (!statuses_[i].ok()) continue;
    statuses_[i] =
        absl::AbortedError(absl::StrCat(what, ": rank ", first_rank() + i, " finished, but ",
                                        name(failed), " failed: ", first.message()));
  }
  return absl::Status(first.code(),
                      absl::StrCat(what, ": ", name(failed), " failed: ", first.message()));
}

absl::Status DataParallel::ShareWithRanks() {
  const Scope& owner = *scopes_[0];
  for (const std::string& name : programs_.shared) {
    const Variable* v = owner.Find(name);
    if (v == nullptr || !v->is_tensor() || !v->tensor().initialized()) {
      return absl::FailedPreconditionError(absl::StrCat("data parallel: shared variable '", name,
                                                        "' is not initialised in rank 0's scope"));
    }
    for (int i = 1; i < local_ranks(); ++i) scopes_[i]->Var(name)->set(v->tensor());
  }
  return absl::OkStatus();
}

absl::Status DataParallel::Initialize() {
  RETURN_IF_ERROR(OnEveryRank("data parallel startup", [&](int i) -> absl::Status {
    return executors_[i]->Run(programs_.startup[first_rank() + i], scopes_[i].get()).status();
  }));
  RETURN_IF_ERROR(ShareWithRanks());
  for (int i = 0; i < local_ranks(); ++i) {
    const int rank = first_rank() + i;
    absl::StatusOr<std::unique_ptr<Plan>> plan =
        executors_[i]->Prepare(programs_.main[rank], *scopes_[i], feeds_, fetches_);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(), absl::StrCat("data parallel: preparing rank ", rank,
                                                             ": ", plan.status().message()));
    }
    plans_[i] = *std::move(plan);
  }
  return absl::OkStatus();
}

absl::StatusOr<FeedMap> DataParallel::Slice(const FeedMap& feeds, int rank) const {
  FeedMap slice;
  for (const auto& [name, t] : feeds) {
    if (!t.place().is_host() || t.shape().rank() == 0 || t.shape().dim(0) % size() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data parallel: feed '", name, "' ", DataTypeName(t.dtype()), t.shape().ToString(),
          " on ", t.place().ToString(), " does not split into ", size(),
          " equal slices along its first dim (a host tensor whose batch is a multiple of ", size(),
          ")"));
    }
    auto dims = t.shape().dims();
    dims[0] /= size();
    ASSIGN_OR_RETURN(Tensor part,
                     Tensor::Allocate(CpuAllocator::Default(), t.dtype(), Shape(dims)));
    const size_t bytes = part.NumBytes();
    if (bytes > 0) {
      std::memcpy(part.raw_data(), static_cast<const char*>(t.raw_data()) + rank * bytes, bytes);
    }
    slice.emplace(name, std::move(part));
  }
  return slice;
}

absl::StatusOr<std::vector<std::vector<Tensor>>> DataParallel::Step(const FeedMap& feeds) {
  for (const std::unique_ptr<Plan>& p : plans_) {
    if (p == nullptr) return absl::FailedPreconditionError("data parallel: Step before Initialize");
  }
  std::vector<FeedMap> slices;
  for (int i = 0; i < local_ranks(); ++i) {
    ASSIGN_OR_RETURN(FeedMap s, Slice(feeds, first_rank() + i));
    slices.push_back(std::move(s));
  }
  std::vector<std::vector<Tensor>> out(local_ranks());
  RETURN_IF_ERROR(
      OnEveryRank(absl::StrCat("data parallel step ", steps_), [&](int i) -> absl::Status {
        ASSIGN_OR_RETURN(out[i], executors_[i]->Run(plans_[i].get(), scopes_[i].get(), slices[i]));
        return absl::OkStatus();
      }));
  ++steps_;
  return out;
}

absl::Status DataParallel::Save(const std::string& path) const {
  if (options_.processes == nullptr) return SaveCheckpoint(programs_.main[0], *scopes_[0], path);
  // Rank 0 writes; every process learns how that went.
  constexpr int64_t kMessageBytes = 1024;
  std::string message(kMessageBytes, '\0');
  absl::Status saved;
  if (first_rank() == 0) {
    saved = SaveCheckpoint(programs_.main[0], *scopes_[0], path);
    if (!saved.ok()) message = std::string(saved.ToString()).substr(0, kMessageBytes - 1);
    message.resize(kMessageBytes, '\0');
  }
  RETURN_IF_ERROR(options_.processes->Broadcast(message.data(), kMessageBytes, 0, options_.deadline,
                                                "data parallel save"));
  if (first_rank() == 0 || message[0] == '\0') return saved;  // rank 0: its own error
  return absl::AbortedError(
      absl::StrCat("data parallel save: rank 0 could not save '", path, "': ", message.c_str()));
}

absl::Status DataParallel::Load(const std::string& path) {
  // Each tensor goes where rank 0 keeps it now (a checkpoint of gpu:0 loads
  // on sim:0), then the other ranks take copies on their places.
  std::map<std::string, Place> places;
  for (const std::string& name : PersistableVars(programs_.main[0])) {
    const Variable* v = scopes_[0]->Find(name);
    if (v != nullptr && v->is_tensor() && v->tensor().initialized()) {
      places[name] = v->tensor().place();
    }
  }
  RETURN_IF_ERROR(LoadCheckpoint(path, scopes_[0].get(), places));
  const std::set<std::string> shared(programs_.shared.begin(), programs_.shared.end());
  for (int r = 1; r < local_ranks(); ++r) {
    for (const std::string& name : PersistableVars(programs_.main[first_rank() + r])) {
      if (shared.count(name)) continue;
      const Variable* from = scopes_[0]->Find(name);
      Variable* to = scopes_[r]->Find(name);
      if (from == nullptr || !from->is_tensor() || to == nullptr || !to->is_tensor()) {
        return absl::FailedPreconditionError(absl::StrCat("data parallel: loading '", name,
                                                          "' for rank ", r,
                                                          ": not in the checkpoint or scope"));
      }
      ASSIGN_OR_RETURN(Tensor copy, CopyTensorTo(from->tensor(), to->tensor().place()));
      to->set(std::move(copy));
    }
  }
  return ShareWithRanks();
}

}  // namespace tandem
