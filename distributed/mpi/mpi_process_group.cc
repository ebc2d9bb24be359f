#include "distributed/mpi/mpi_process_group.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/base/status_macros.h"

namespace tandem {
namespace {

constexpr int kDataTag = 1;
constexpr int kAbortTag = 2;
constexpr int64_t kPieceBytes = int64_t{1} << 30;  // MPI counts are int
constexpr size_t kMaxAbortMessage = 4096;

std::string MpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return absl::StrCat("MPI error ", code);
  return std::string(text, length);
}

}  // namespace

struct MpiProcessGroup::Comms {
  MPI_Comm data = MPI_COMM_NULL;     // the collectives' transfers
  MPI_Comm control = MPI_COMM_NULL;  // Abort's messages
};

// The non-blocking transfers of one call, with the rank at the other end.
struct MpiProcessGroup::Transfers {
  std::vector<MPI_Request> requests;
  std::vector<int> peers;
  std::vector<bool> is_receive;

  int Add(bool receive, int peer) {
    requests.push_back(MPI_REQUEST_NULL);
    peers.push_back(peer);
    is_receive.push_back(receive);
    return static_cast<int>(requests.size()) - 1;
  }
  // Posts the sends or receives of `bytes` at `buf` with `peer`, in pieces.
  int Post(bool receive, int peer, char* buf, int64_t bytes, MPI_Comm comm) {
    int64_t off = 0;
    do {  // an empty part is one empty message: the ranks still meet
      const int n = static_cast<int>(std::min(kPieceBytes, bytes - off));
      const int i = Add(receive, peer);
      const int rc = receive
                         ? MPI_Irecv(buf + off, n, MPI_BYTE, peer, kDataTag, comm, &requests[i])
                         : MPI_Isend(buf + off, n, MPI_BYTE, peer, kDataTag, comm, &requests[i]);
      if (rc != MPI_SUCCESS) return rc;
      off += n;
    } while (off < bytes);
    return MPI_SUCCESS;
  }
  // Gives up on what is still pending (cancels the receives).
  void Abandon() {
    for (size_t i = 0; i < requests.size(); ++i) {
      if (requests[i] == MPI_REQUEST_NULL) continue;
      if (is_receive[i]) MPI_Cancel(&requests[i]);
      MPI_Request_free(&requests[i]);
    }
  }
};

bool MpiProcessGroup::LaunchedByMpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

absl::StatusOr<std::shared_ptr<MpiProcessGroup>> MpiProcessGroup::Init(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) {
    return absl::FailedPreconditionError("MPI is already initialised in this process");
  }
  int provided = 0;
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  if (rc != MPI_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("MPI_Init_thread failed: ", MpiError(rc)));
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    return absl::FailedPreconditionError(
        absl::StrCat("this MPI provides thread level ", provided, ", not MPI_THREAD_MULTIPLE (",
                     MPI_THREAD_MULTIPLE, "), which the executor's threads need"));
  }
  auto comms = std::make_unique<Comms>();
  MPI_Comm_dup(MPI_COMM_WORLD, &comms->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &comms->control);
  MPI_Comm_set_errhandler(comms->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(comms->control, MPI_ERRORS_RETURN);
  std::shared_ptr<MpiProcessGroup> group(new MpiProcessGroup(std::move(comms)));
  MPI_Comm_rank(group->comms_->data, &group->rank_);
  MPI_Comm_size(group->comms_->data, &group->size_);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, group->rank_, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &group->local_rank_);
  MPI_Comm_free(&host);
  return group;
}

MpiProcessGroup::MpiProcessGroup(std::unique_ptr<Comms> comms) : comms_(std::move(comms)) {}

MpiProcessGroup::~MpiProcessGroup() {
  if (!failure().ok()) return;  // see the header comment
  MPI_Comm_free(&comms_->data);
  MPI_Comm_free(&comms_->control);
  MPI_Finalize();
}

absl::Status MpiProcessGroup::failure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return failure_;
}

void MpiProcessGroup::Fail(const absl::Status& why) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (failure_.ok()) failure_ = why;
}

void MpiProcessGroup::ReceiveAbort() {
  std::lock_guard<std::mutex> lock(failure_mu_);
  int flag = 0;
  MPI_Status status;
  if (MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comms_->control, &flag, &status) != MPI_SUCCESS ||
      !flag) {
    return;
  }
  int length = 0;
  MPI_Get_count(&status, MPI_CHAR, &length);
  std::string text(std::max(length, 0), '\0');
  MPI_Recv(text.data(), length, MPI_CHAR, status.MPI_SOURCE, kAbortTag, comms_->control,
           MPI_STATUS_IGNORE);
  if (failure_.ok()) {
    failure_ = absl::AbortedError(absl::StrCat("process rank ", status.MPI_SOURCE, " of ", size_,
                                               " aborted the job: ", text));
  }
}

void MpiProcessGroup::Abort(const absl::Status& why) {
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (!failure_.ok()) return;  // the others know already, or it came from them
  failure_ = why.ok() ? absl::AbortedError("aborted") : why;
  std::string text(failure_.message().substr(0, kMaxAbortMessage));
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request;
    // Small: sent at once (eager); the request is freed when it is done.
    if (MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, r, kAbortTag,
                  comms_->control, &request) == MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
}

absl::Status MpiProcessGroup::Await(Transfers& t, absl::Duration deadline,
                                    const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  const auto end = start + absl::ToChronoNanoseconds(deadline);
  int idle = 0;
  for (;;) {
    bool pending = false, progressed = false;
    for (size_t i = 0; i < t.requests.size(); ++i) {
      if (t.requests[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      const int rc = MPI_Test(&t.requests[i], &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        t.Abandon();
        Fail(absl::UnavailableError(absl::StrCat(what, ": MPI transfer with rank ", t.peers[i],
                                                 " failed: ", MpiError(rc))));
        return failure();
      }
      progressed |= done != 0;
      pending |= done == 0;
    }
    if (!pending) return absl::OkStatus();
    ReceiveAbort();
    absl::Status failed = failure();
    if (!failed.ok()) {
      t.Abandon();
      return failed;
    }
    if (std::chrono::steady_clock::now() >= end) {
      std::set<int> missing;
      for (size_t i = 0; i < t.requests.size(); ++i) {
        if (t.requests[i] != MPI_REQUEST_NULL) missing.insert(t.peers[i]);
      }
      t.Abandon();
      Fail(absl::DeadlineExceededError(absl::StrCat(
          what, ": rank", missing.size() > 1 ? "s " : " ", absl::StrJoin(missing, ", "),
          " of the mpi job did not arrive within ", absl::FormatDuration(deadline))));
      return failure();
    }
    // Spin while data flows; back off when nothing moves.
    idle = progressed ? 0 : idle + 1;
    if (idle > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

absl::Status MpiProcessGroup::PostingFailed(Transfers& t, int peer, int code,
                                            const std::string& what) {
  t.Abandon();
  Fail(absl::UnavailableError(
      absl::StrCat(what, ": posting MPI transfers with rank ", peer, " failed: ", MpiError(code))));
  return failure();
}

absl::Status MpiProcessGroup::AllGather(const void* in, int64_t bytes, void* out,
                                        absl::Duration deadline, const std::string& what) {
  std::lock_guard<std::mutex> lock(call_mu_);
  RETURN_IF_ERROR(failure());
  char* all = static_cast<char*>(out);
  char* mine = all + rank_ * bytes;
  if (bytes > 0 && mine != in) std::memmove(mine, in, bytes);
  Transfers t;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    int rc = t.Post(/*receive=*/true, r, all + r * bytes, bytes, comms_->data);
    if (rc == MPI_SUCCESS) rc = t.Post(/*receive=*/false, r, mine, bytes, comms_->data);
    if (rc != MPI_SUCCESS) return PostingFailed(t, r, rc, what);
  }
  return Await(t, deadline, what);
}

absl::Status MpiProcessGroup::Broadcast(void* buf, int64_t bytes, int root, absl::Duration deadline,
                                        const std::string& what) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": broadcast root ", root, " is not a rank of 0..", size_ - 1));
  }
  std::lock_guard<std::mutex> lock(call_mu_);
  RETURN_IF_ERROR(failure());
  Transfers t;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_ || (rank_ != root && r != root)) continue;
    const int rc =
        t.Post(/*receive=*/rank_ != root, r, static_cast<char*>(buf), bytes, comms_->data);
    if (rc != MPI_SUCCESS) return PostingFailed(t, r, rc, what);
  }
  return Await(t, deadline, what);
}

}  // namespace tandem
