#include "framework/parallel/collective_group.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"
#include "glog/logging.h"

namespace tandem {
namespace {

struct Registry {
  std::mutex mu;
  int64_t next_id = 0;
  std::map<int64_t, std::weak_ptr<CollectiveGroup>> groups;
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // never destroyed: groups may outlive statics
  return *registry;
}

template <typename T>
void SumInRankOrder(const std::vector<const void*>& ins, int64_t n, double scale, T* acc) {
  if (acc != ins[0]) std::memmove(acc, ins[0], n * sizeof(T));
  for (size_t r = 1; r < ins.size(); ++r) {
    const T* in = static_cast<const T*>(ins[r]);
    for (int64_t i = 0; i < n; ++i) acc[i] += in[i];
  }
  if (scale == 1) return;
  const T s = static_cast<T>(scale);
  for (int64_t i = 0; i < n; ++i) acc[i] *= s;
}

// Every rank's out = scale * (in_0 + ... + in_n-1), summed in rank order.
absl::Status AllReducePart(const std::vector<const CollectiveGroup::Call*>& calls, size_t part) {
  const CollectiveGroup::Part& p0 = calls[0]->tensors[part];
  const double scale = calls[0]->scale;
  std::vector<const void*> ins;
  for (const CollectiveGroup::Call* c : calls) ins.push_back(c->tensors[part].in);
  const size_t bytes = static_cast<size_t>(p0.count) * SizeOf(p0.dtype);
  // Summed straight into rank 0's output (which may be its input: each
  // element is read before it is written) unless that output overlaps
  // another rank's input; the other ranks' outputs are copies of it.
  char* out0 = static_cast<char*>(p0.out);
  const auto out = reinterpret_cast<uintptr_t>(out0);
  bool overlaps = false;
  for (size_t r = 1; r < ins.size(); ++r) {
    const auto in = reinterpret_cast<uintptr_t>(ins[r]);
    overlaps |= in < out + bytes && out < in + bytes;
  }
  std::vector<char> scratch(overlaps ? bytes : 0);
  char* acc = overlaps ? scratch.data() : out0;
  switch (p0.dtype) {
    case DataType::kFloat32:
      SumInRankOrder(ins, p0.count, scale, reinterpret_cast<float*>(acc));
      break;
    case DataType::kFloat64:
      SumInRankOrder(ins, p0.count, scale, reinterpret_cast<double*>(acc));
      break;
    case DataType::kInt32:
    case DataType::kInt64:
      if (scale != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scale ", scale, " needs a floating-point dtype, got ", DataTypeName(p0.dtype)));
      }
      if (p0.dtype == DataType::kInt32) {
        SumInRankOrder(ins, p0.count, 1, reinterpret_cast<int32_t*>(acc));
      } else {
        SumInRankOrder(ins, p0.count, 1, reinterpret_cast<int64_t*>(acc));
      }
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot sum ", DataTypeName(p0.dtype), " values"));
  }
  for (const CollectiveGroup::Call* c : calls) {
    void* out_r = c->tensors[part].out;  // null: a rank of another process
    if (bytes > 0 && out_r != nullptr && out_r != acc) std::memcpy(out_r, acc, bytes);
  }
  return absl::OkStatus();
}

// What a call does, which the ranks' calls must agree on:
// "all_reduce of float32[10], int64[4] scale 0.5 root 0".
std::string Signature(const CollectiveGroup::Call& c) {
  std::vector<std::string> parts;
  for (const CollectiveGroup::Part& p : c.tensors) {
    parts.push_back(absl::StrCat(DataTypeName(p.dtype), "[", p.count, "]"));
  }
  return absl::StrCat(CollectiveKindName(c.kind), " of ", absl::StrJoin(parts, ", "), " scale ",
                      c.scale, " root ", c.root);
}

// Bytes of a call's signature as the processes exchange it (longer ones are cut).
constexpr size_t kSignatureBytes = 256;

}  // namespace

std::shared_ptr<CollectiveGroup> CollectiveGroup::Create(std::vector<Place> places,
                                                         CollectiveGroupOptions options) {
  CHECK(!places.empty()) << "a collective group needs at least one rank";
  return Register(std::move(places), nullptr, options);
}

std::shared_ptr<CollectiveGroup> CollectiveGroup::CreateAcrossProcesses(
    Place local, std::shared_ptr<ProcessGroup> processes, CollectiveGroupOptions options) {
  CHECK(processes != nullptr) << "a group across processes needs its ProcessGroup";
  return Register({local}, std::move(processes), options);
}

std::shared_ptr<CollectiveGroup> CollectiveGroup::Register(std::vector<Place> places,
                                                           std::shared_ptr<ProcessGroup> processes,
                                                           CollectiveGroupOptions options) {
  Registry& reg = GlobalRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  const int64_t id = reg.next_id++;
  std::shared_ptr<CollectiveGroup> group(
      new CollectiveGroup(id, std::move(places), std::move(processes), options));
  reg.groups[id] = group;
  return group;
}

std::shared_ptr<CollectiveGroup> CollectiveGroup::Find(int64_t id) {
  Registry& reg = GlobalRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  auto it = reg.groups.find(id);
  return it == reg.groups.end() ? nullptr : it->second.lock();
}

CollectiveGroup::CollectiveGroup(int64_t id, std::vector<Place> places,
                                 std::shared_ptr<ProcessGroup> processes,
                                 CollectiveGroupOptions options)
    : id_(id), places_(std::move(places)), processes_(std::move(processes)), options_(options) {}

CollectiveGroup::~CollectiveGroup() {
  Registry& reg = GlobalRegistry();
  std::lock_guard<std::mutex> lock(reg.mu);
  reg.groups.erase(id_);
}

std::string CollectiveGroup::Describe(const Call& call, int rank) const {
  return absl::StrCat("op ", call.op, " '", call.key, "' on rank ", rank, " of ", size(),
                      " (group ", id_, ")");
}

absl::Status CollectiveGroup::CheckMatch(const std::vector<const Call*>& calls) const {
  const std::string first = Signature(*calls[0]);
  for (size_t r = 1; r < calls.size(); ++r) {
    const std::string other = Signature(*calls[r]);
    if (other != first) {
      return absl::InvalidArgumentError(absl::StrCat("the ranks' calls do not match: rank 0 makes ",
                                                     first, ", rank ", r, " makes ", other));
    }
  }
  if (calls[0]->kind == CollectiveKind::kBroadcast &&
      (calls[0]->root < 0 || calls[0]->root >= size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast root ", calls[0]->root, " is not a rank of 0..", size() - 1));
  }
  return absl::OkStatus();
}

absl::Status CollectiveGroup::Combine(const std::vector<const Call*>& calls) const {
  RETURN_IF_ERROR(CheckMatch(calls));
  const Call& c0 = *calls[0];
  for (size_t part = 0; part < c0.tensors.size(); ++part) {
    const size_t bytes =
        static_cast<size_t>(c0.tensors[part].count) * SizeOf(c0.tensors[part].dtype);
    switch (c0.kind) {
      case CollectiveKind::kAllReduce:
        RETURN_IF_ERROR(AllReducePart(calls, part));
        break;
      case CollectiveKind::kBroadcast: {
        const void* from = calls[c0.root]->tensors[part].in;
        for (const Call* c : calls) {
          if (c->tensors[part].out != from && bytes > 0) {
            std::memcpy(c->tensors[part].out, from, bytes);
          }
        }
        break;
      }
      case CollectiveKind::kAllGather:
        for (const Call* c : calls) {
          char* out = static_cast<char*>(c->tensors[part].out);
          for (size_t r = 0; r < calls.size() && bytes > 0; ++r) {
            std::memcpy(out + r * bytes, calls[r]->tensors[part].in, bytes);
          }
        }
        break;
      case CollectiveKind::kNone:
        return absl::InvalidArgumentError("not a collective");
    }
  }
  return absl::OkStatus();
}

absl::Status CollectiveGroup::AwaitLocked(std::unique_lock<std::mutex>& lock, Meeting& m,
                                          const Call& call, int rank) {
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(options_.deadline);
  auto over = [&] { return m.done || (!aborted_.ok() && !m.combining); };
  while (!over()) {
    if (cv_.wait_until(lock, deadline) != std::cv_status::timeout || over() || m.combining) {
      continue;
    }
    std::vector<int> missing;
    for (int r = 0; r < size(); ++r) {
      if (m.calls[r] == nullptr) missing.push_back(r);
    }
    aborted_ = absl::DeadlineExceededError(
        absl::StrCat(Describe(call, rank), ": rank", missing.size() > 1 ? "s " : " ",
                     absl::StrJoin(missing, ", "), " did not arrive within ",
                     absl::FormatDuration(options_.deadline)));
    cv_.notify_all();
  }
  if (m.done) return m.status;
  if (aborted_.code() == absl::StatusCode::kDeadlineExceeded) return aborted_;
  return absl::AbortedError(absl::StrCat(Describe(call, rank), " gave up: ", aborted_.message()));
}

absl::Status CollectiveGroup::Run(int rank, const Call& call) {
  if (rank < 0 || rank >= size()) {
    return absl::InvalidArgumentError(absl::StrCat("op ", call.op, " '", call.key, "': rank ", rank,
                                                   " is not in 0..", size() - 1, " (group ", id_,
                                                   ")"));
  }
  if (processes_ != nullptr) return RunAcrossProcesses(rank, call);
  std::unique_lock<std::mutex> lock(mu_);
  if (!aborted_.ok()) {
    return absl::AbortedError(absl::StrCat(Describe(call, rank), " gave up: ", aborted_.message()));
  }
  const auto meeting_key = std::make_pair(call.key, seq_[{call.key, rank}]++);
  Meeting& m = meetings_[meeting_key];
  if (m.calls.empty()) m.calls.resize(size(), nullptr);
  m.calls[rank] = &call;
  absl::Status status;
  if (++m.arrived == size()) {
    m.combining = true;
    lock.unlock();  // the others wait for `done`; unrelated collectives go on meanwhile
    absl::Status combined = Combine(m.calls);
    lock.lock();
    m.status = combined.ok()
                   ? combined
                   : absl::Status(combined.code(),
                                  absl::StrCat(Describe(call, rank), ": ", combined.message()));
    m.combining = false;
    m.done = true;
    cv_.notify_all();
    status = m.status;
  } else {
    status = AwaitLocked(lock, m, call, rank);
  }
  if (m.done && ++m.left == size()) meetings_.erase(meeting_key);
  return status;
}

void CollectiveGroup::Abort(const absl::Status& why) {
  const absl::Status status = why.ok() ? absl::AbortedError("aborted") : why;
  if (processes_ != nullptr) processes_->Abort(status);
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_.ok()) aborted_ = status;
  cv_.notify_all();
}

absl::Status CollectiveGroup::RunAcrossProcesses(int rank, const Call& call) {
  if (rank != processes_->rank()) {
    return absl::InvalidArgumentError(absl::StrCat(Describe(call, rank),
                                                   ": this process holds rank ", processes_->rank(),
                                                   " of the ", processes_->name(), " job"));
  }
  // One collective at a time: the processes match calls by their order.
  std::lock_guard<std::mutex> lock(mu_);
  const std::string what = Describe(call, rank);
  if (!aborted_.ok())
    return absl::AbortedError(absl::StrCat(what, " gave up: ", aborted_.message()));
  const absl::Status failed = processes_->failure();  // for good: see the header comment
  if (!failed.ok()) return absl::AbortedError(absl::StrCat(what, " gave up: ", failed.message()));
  std::string mine = absl::StrCat(call.key, ": ", Signature(call));
  mine.resize(kSignatureBytes, '\0');
  std::string all(kSignatureBytes * size(), '\0');
  absl::Status s =
      processes_->AllGather(mine.data(), kSignatureBytes, all.data(), options_.deadline, what);
  if (s.ok()) {
    for (int r = 0; r < size() && s.ok(); ++r) {
      const std::string theirs = all.substr(r * kSignatureBytes, kSignatureBytes);
      if (theirs == mine) continue;
      s = absl::InvalidArgumentError(absl::StrCat("the ranks' calls do not match: rank ", rank,
                                                  " makes ", mine.c_str(), ", rank ", r, " makes ",
                                                  theirs.c_str()));
    }
    if (s.ok()) s = ExchangeAcrossProcesses(call, what);
  }
  if (s.ok() || absl::StartsWith(s.message(), what)) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

absl::Status CollectiveGroup::ExchangeAcrossProcesses(const Call& call, const std::string& what) {
  for (const Part& p : call.tensors) {
    const int64_t bytes = p.count * static_cast<int64_t>(SizeOf(p.dtype));
    switch (call.kind) {
      case CollectiveKind::kAllReduce: {
        // Every rank's part, then the sum in rank order: the one-process result.
        std::vector<char> gathered(static_cast<size_t>(bytes) * size());
        RETURN_IF_ERROR(
            processes_->AllGather(p.in, bytes, gathered.data(), options_.deadline, what));
        std::vector<Call> ranks(size());
        std::vector<const Call*> calls;
        for (int r = 0; r < size(); ++r) {
          ranks[r].scale = call.scale;
          ranks[r].tensors.push_back({p.dtype, gathered.data() + r * bytes, nullptr, p.count});
          calls.push_back(&ranks[r]);
        }
        ranks[0].tensors[0].out = p.out;
        RETURN_IF_ERROR(AllReducePart(calls, 0));
        break;
      }
      case CollectiveKind::kBroadcast:
        if (p.out != p.in && bytes > 0) std::memcpy(p.out, p.in, bytes);
        RETURN_IF_ERROR(processes_->Broadcast(p.out, bytes, call.root, options_.deadline, what));
        break;
      case CollectiveKind::kAllGather:
        RETURN_IF_ERROR(processes_->AllGather(p.in, bytes, p.out, options_.deadline, what));
        break;
      case CollectiveKind::kNone:
        return absl::InvalidArgumentError("not a collective");
    }
  }
  return absl::OkStatus();
}

void CollectiveGroup::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = absl::OkStatus();
  seq_.clear();
  meetings_.clear();
}

}  // namespace tandem
