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
#include "framework/runtime/checkpoint.h"

namespace tandem {

absl::StatusOr<std::unique_ptr<DataParallel>> DataParallel::Create(
    const Program& main, const Program& startup, const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, DataParallelOptions options) {
  if (options.places.empty()) {
    return absl::InvalidArgumentError("data parallel: no place to run a replica on");
  }
  std::unique_ptr<DataParallel> dp(new DataParallel(std::move(options), feeds, fetches));
  dp->group_ = CollectiveGroup::Create(dp->options_.places, {dp->options_.deadline});
  ReplicateOptions r;
  r.nranks = dp->size();
  r.ring_id = dp->group_->id();
  r.bucket_bytes = dp->options_.bucket_bytes;
  ASSIGN_OR_RETURN(dp->programs_, ReplicateForDataParallel(main, startup, r));
  for (int rank = 0; rank < dp->size(); ++rank) {
    dp->executors_.push_back(
        std::make_unique<Executor>(dp->options_.places[rank], dp->options_.executor));
    dp->scopes_.push_back(std::make_unique<Scope>());
  }
  dp->plans_.resize(dp->size());
  return dp;
}

DataParallel::DataParallel(DataParallelOptions options, std::vector<std::string> feeds,
                           std::vector<std::string> fetches)
    : options_(std::move(options)), feeds_(std::move(feeds)), fetches_(std::move(fetches)) {}

// Plans before executors: a plan is released while its executor lives.
DataParallel::~DataParallel() { plans_.clear(); }

absl::Status DataParallel::OnEveryRank(const std::string& what,
                                       const std::function<absl::Status(int)>& fn) {
  statuses_.assign(size(), absl::OkStatus());
  std::mutex mu;
  int failed = -1;  // the first rank to fail, by time
  std::vector<std::thread> threads;
  for (int r = 0; r < size(); ++r) {
    threads.emplace_back([&, r] {
      absl::Status s = fn(r);
      if (s.ok()) return;
      std::lock_guard<std::mutex> lock(mu);
      statuses_[r] = s;
      if (failed >= 0) return;
      failed = r;
      group_->Abort(
          absl::Status(s.code(), absl::StrCat("rank ", r, " (", options_.places[r].ToString(),
                                              ") failed: ", s.message())));
    });
  }
  for (std::thread& t : threads) t.join();
  group_->Reset();  // every rank is out of its collectives
  if (failed < 0) return absl::OkStatus();
  const absl::Status& first = statuses_[failed];
  for (int r = 0; r < size(); ++r) {
    if (!statuses_[r].ok()) continue;
    statuses_[r] = absl::AbortedError(absl::StrCat(what, ": rank ", r, " finished, but rank ",
                                                   failed, " failed: ", first.message()));
  }
  return absl::Status(
      first.code(), absl::StrCat(what, ": rank ", failed, " (", options_.places[failed].ToString(),
                                 ") failed: ", first.message()));
}

absl::Status DataParallel::ShareWithRanks() {
  const Scope& owner = *scopes_[0];
  for (const std::string& name : programs_.shared) {
    const Variable* v = owner.Find(name);
    if (v == nullptr || !v->is_tensor() || !v->tensor().initialized()) {
      return absl::FailedPreconditionError(absl::StrCat("data parallel: shared variable '", name,
                                                        "' is not initialised in rank 0's scope"));
    }
    for (int r = 1; r < size(); ++r) scopes_[r]->Var(name)->set(v->tensor());
  }
  return absl::OkStatus();
}

absl::Status DataParallel::Initialize() {
  RETURN_IF_ERROR(OnEveryRank("data parallel startup", [&](int r) -> absl::Status {
    return executors_[r]->Run(programs_.startup[r], scopes_[r].get()).status();
  }));
  RETURN_IF_ERROR(ShareWithRanks());
  for (int r = 0; r < size(); ++r) {
    absl::StatusOr<std::unique_ptr<Plan>> plan =
        executors_[r]->Prepare(programs_.main[r], *scopes_[r], feeds_, fetches_);
    if (!plan.ok()) {
      return absl::Status(plan.status().code(), absl::StrCat("data parallel: preparing rank ", r,
                                                             ": ", plan.status().message()));
    }
    plans_[r] = *std::move(plan);
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
  for (int r = 0; r < size(); ++r) {
    ASSIGN_OR_RETURN(FeedMap s, Slice(feeds, r));
    slices.push_back(std::move(s));
  }
  std::vector<std::vector<Tensor>> out(size());
  RETURN_IF_ERROR(
      OnEveryRank(absl::StrCat("data parallel step ", steps_), [&](int r) -> absl::Status {
        ASSIGN_OR_RETURN(out[r], executors_[r]->Run(plans_[r].get(), scopes_[r].get(), slices[r]));
        return absl::OkStatus();
      }));
  ++steps_;
  return out;
}

absl::Status DataParallel::Save(const std::string& path) const {
  return SaveCheckpoint(programs_.main[0], *scopes_[0], path);
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
  for (int r = 1; r < size(); ++r) {
    for (const std::string& name : PersistableVars(programs_.main[r])) {
      if (shared.count(name)) continue;
      const Variable* from = scopes_[0]->Find(name);
      Variable* to = scopes_[r]->Find(name);
      if (from == nullptr || !from->is_tensor() || to == nullptr || !to->is_tensor()) {
        return absl::FailedPreconditionError(absl::StrCat("data parallel: loading '", name,
                                                          "' for rank ", r,
                                                          ": not in the checkpoint or scope"));
      }
      // Device to device goes through the host (CopyTensorTo moves one side).
      ASSIGN_OR_RETURN(Tensor host, CopyTensorTo(from->tensor(), CPUPlace()));
      ASSIGN_OR_RETURN(Tensor copy, CopyTensorTo(host, to->tensor().place()));
      to->set(std::move(copy));
    }
  }
  return ShareWithRanks();
}

}  // namespace tandem
