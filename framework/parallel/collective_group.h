// CollectiveGroup: the ranks of one data-parallel program in this process
// and the in-process communicator that the host (cpu) and sim kernels of
// the collective ops (c_allreduce_sum, c_broadcast, c_allgather; ops/collective)
// use. A kernel finds its group by its op's ring_id attribute.
//
//   std::shared_ptr<CollectiveGroup> g =
//       CollectiveGroup::Create({SimPlace(0), SimPlace(1)}, {.deadline = absl::Seconds(30)});
//   // each rank r, on its own thread:
//   CollectiveGroup::Call call;
//   call.kind = CollectiveKind::kAllReduce;
//   call.op = "c_allreduce_sum";
//   call.key = "w@GRAD";                       // the same on every rank
//   call.scale = 0.5;                          // averaging over 2 ranks
//   call.tensors = {{DataType::kFloat32, grad_r, grad_r, n}};   // in place
//   RETURN_IF_ERROR(g->Run(r, call));          // every rank's grad = (g0 + g1) / 2
//
// Matching: the calls of the ranks meet by key and by their count for that
// key (a rank's n-th call with key "w@GRAD" meets the others' n-th), so the
// order in which one rank issues collectives of different keys does not
// matter (host workers may run them in any order).
//
// Determinism: the last rank to arrive computes the result for all of them,
// summing in rank order 0, 1, ..., n-1 and then scaling, into a temporary
// that is copied to every rank's output: every rank gets bitwise the same
// values, run after run.
//
// Failures: a rank that does not arrive within the deadline makes every
// waiting rank return DeadlineExceeded naming the op, the key and the
// missing ranks; Abort(status) (a driver that saw a rank fail) makes every
// waiting and later call return Aborted with that status. Either leaves the
// group aborted until Reset(), which the caller makes once no rank is inside
// Run. Nothing ever waits past the deadline.
//
// Across processes: CreateAcrossProcesses makes the group of a job of one
// rank per process (mpirun; process_group.h): this process holds rank
// processes->rank() on `local`, and Run exchanges the ranks' parts through
// the ProcessGroup, in the order the calls are made (the executor issues a
// plan's collectives in program order). The ranks first exchange what
// their calls are, so calls that do not match are InvalidArgument on every
// rank before any data moves. Results are the same as in one process
// (sums in rank order, bitwise the same on every rank). A failure there
// (a missing rank, Abort on any process) ends the group for good: Reset
// does not revive it.
//
// Thread-safety: Run, Abort and Reset may be called from any thread. The
// buffers of a call are read and written by whichever rank's thread
// combines them, while the calling ranks wait in Run; they must be host
// addressable (cpu memory, sim device memory).
#ifndef TANDEM_FRAMEWORK_PARALLEL_COLLECTIVE_GROUP_H_
#define TANDEM_FRAMEWORK_PARALLEL_COLLECTIVE_GROUP_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "framework/kernel/kernel_registry.h"
#include "framework/parallel/process_group.h"
#include "framework/place/place.h"
#include "framework/types/data_type.h"

namespace tandem {

struct CollectiveGroupOptions {
  // How long a rank waits for the others in one collective.
  absl::Duration deadline = absl::Seconds(60);
};

class CollectiveGroup {
 public:
  // One tensor (part) of a call: `count` elements of `dtype` read from `in` and
  // written to `out` (an all-gather writes nranks * count). `out` may be
  // `in` (in place) for an all-reduce and a broadcast.
  struct Part {
    DataType dtype = DataType::kFloat32;
    const void* in = nullptr;
    void* out = nullptr;
    int64_t count = 0;
  };
  // One rank's part of a collective.
  struct Call {
    CollectiveKind kind = CollectiveKind::kAllReduce;
    std::string op;   // the op type, for messages
    std::string key;  // what the ranks' calls meet by (see the header comment)
    std::vector<Part> tensors;
    double scale = 1;  // all-reduce: out = scale * sum (floating-point dtypes)
    int root = 0;      // broadcast: the rank whose values everyone gets
  };

  // A group of places.size() ranks (rank r runs on places[r]; places may
  // repeat, e.g. the host for each rank's host collectives), registered
  // under a new id until the returned group is destroyed. CHECK-fails on an
  // empty list (a caller's bug).
  static std::shared_ptr<CollectiveGroup> Create(std::vector<Place> places,
                                                 CollectiveGroupOptions options = {});
  // The group of a job of one rank per process: this process's rank is
  // processes->rank(), on `local`. CHECK-fails on a null ProcessGroup.
  static std::shared_ptr<CollectiveGroup> CreateAcrossProcesses(
      Place local, std::shared_ptr<ProcessGroup> processes, CollectiveGroupOptions options = {});
  // The live group registered as `id`; nullptr if none.
  static std::shared_ptr<CollectiveGroup> Find(int64_t id);

  CollectiveGroup(const CollectiveGroup&) = delete;
  CollectiveGroup& operator=(const CollectiveGroup&) = delete;
  ~CollectiveGroup();

  int64_t id() const { return id_; }
  int size() const {
    return processes_ != nullptr ? processes_->size() : static_cast<int>(places_.size());
  }
  // The places of this process's ranks, in rank order (across processes:
  // the one of rank processes()->rank()).
  const std::vector<Place>& places() const { return places_; }
  // The processes the group spans; nullptr for a group of one process.
  ProcessGroup* processes() const { return processes_.get(); }
  absl::Duration deadline() const { return options_.deadline; }

  // Rank `rank`'s part of a collective; returns once every rank's matching
  // call was combined (its outputs are written), or with the error above.
  // InvalidArgument for a rank out of range and, on every rank, for calls
  // that do not match (kind, tensors, dtypes, counts, scale or root).
  absl::Status Run(int rank, const Call& call);
  // Fails every waiting and later call with Aborted(why) until Reset.
  void Abort(const absl::Status& why);
  // Forgets every call and the abort. Call only while no rank is in Run.
  void Reset();

 private:
  CollectiveGroup(int64_t id, std::vector<Place> places, std::shared_ptr<ProcessGroup> processes,
                  CollectiveGroupOptions options);
  static std::shared_ptr<CollectiveGroup> Register(std::vector<Place> places,
                                                   std::shared_ptr<ProcessGroup> processes,
                                                   CollectiveGroupOptions options);

  struct Meeting {
    std::vector<const Call*> calls;  // per rank; null until it arrived
    int arrived = 0, left = 0;
    bool combining = false, done = false;
    absl::Status status;
  };

  // "op c_allreduce_sum 'w@GRAD' on rank 0 of 2 (group 3)".
  std::string Describe(const Call& call, int rank) const;
  // Why the calls do not match; OK if they do.
  absl::Status CheckMatch(const std::vector<const Call*>& calls) const;
  // Computes every rank's outputs (the calls match).
  absl::Status Combine(const std::vector<const Call*>& calls) const;
  // Run for a group across processes: this process's rank's part.
  absl::Status RunAcrossProcesses(int rank, const Call& call);
  // The parts' exchange of RunAcrossProcesses, after the calls matched.
  absl::Status ExchangeAcrossProcesses(const Call& call, const std::string& what);
  // Waits for the meeting to be done (or the group aborted); the error on timeout.
  absl::Status AwaitLocked(std::unique_lock<std::mutex>& lock, Meeting& m, const Call& call,
                           int rank);

  const int64_t id_;
  const std::vector<Place> places_;
  const std::shared_ptr<ProcessGroup> processes_;
  const CollectiveGroupOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  absl::Status aborted_;                                         // guarded by mu_
  std::map<std::pair<std::string, int>, int64_t> seq_;           // (key, rank) -> calls made
  std::map<std::pair<std::string, int64_t>, Meeting> meetings_;  // (key, n) -> meeting
};

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PARALLEL_COLLECTIVE_GROUP_H_
