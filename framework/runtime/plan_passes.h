// Executor::Prepare as a list of named passes over a placed program; each
// fills in part of the Plan (plan_internal.h). Private to
// //framework/runtime:executor.
//
//   RETURN_IF_ERROR(BuildPlan(plan, feeds, fetches));   // every pass, in order
//   RETURN_IF_ERROR(MakeFrame(plan));                   // a pipelined run's frame
//
// Threads: Prepare runs the passes on its thread, before the plan runs;
// MakeFrame runs on the thread starting the first pipelined run.
#ifndef TANDEM_FRAMEWORK_RUNTIME_PLAN_PASSES_H_
#define TANDEM_FRAMEWORK_RUNTIME_PLAN_PASSES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/runtime/plan_internal.h"

namespace tandem {

// The passes, in BuildPlan's order (a friend of Plan).
class PlanPasses {
 public:
  // Slots, steps and kernels for every op of the placed program.
  static absl::Status CreateSteps(Plan* plan, const std::vector<std::string>& feeds,
                                  const std::vector<std::string>& fetches);
  // Input-less fill_constant ops whose outputs nothing else writes run once.
  static void FoldConstants(Plan* plan);
  // A fetched persistable that the plan writes keeps runs from overlapping:
  // the next run would update it before this run's fetch reads it.
  static void BlockPipelineOnFetchedUpdates(Plan* plan);
  // Host kernels whose output is copied to a device next write it in that
  // device's pinned memory, so the copy is asynchronous.
  static void PinCopySources(Plan* plan);
  // Which slots are freed after their last use, and (in-order) where.
  static void PlanReleases(Plan* plan);
  // Lanes, dependencies and the events concurrent runs wait on.
  static void BuildSchedule(Plan* plan);
  // The dependencies of a pipelined run on the run before it.
  static void LinkConsecutiveRuns(Plan* plan);
  // Lookups that wait for the previous run's sparse update only by rows.
  static void RefineRowConflicts(Plan* plan);
  // Per device, whether solo runs put its device->host copies on the
  // compute stream (Step::waits.solo_on_compute), and which done events solo
  // runs still need (Step::waits.event_solo).
  static void ChooseSoloCopyStreams(Plan* plan);
  // Frame 0 (see Plan::Frame); later frames by MakeFrame.
  static absl::Status AddFrame(Plan* plan);
  // The events `frame` records (with `pipelined`, also those of steps and
  // run ends that the next run waits for), where still missing.
  static absl::Status AddEvents(Plan* plan, Plan::Frame* frame, bool pipelined);
  // Another frame for pipelined runs.
  static absl::Status AddPipelinedFrame(Plan* plan);

 private:
  // Appends a slot for `name` (CreateSteps calls it once per name).
  static int Slot(Plan* plan, const std::string& name);
  // How many compute-lane steps of the device of step `copy` are its
  // ancestors or descendants. `seen` (one entry per step) is marked with
  // `stamp`, which must differ from every earlier call's.
  static int ComputeStepsOrderedWith(const Plan& plan, int copy, int stamp, std::vector<int>* seen);
  // The plan's collective stream of the step's device (made on first use).
  static absl::Status AddCommStream(Plan* plan, Plan::Step* step);
  static std::vector<std::vector<int>> WritersPerSlot(const Plan& plan);
};

// Every pass of Prepare over `plan`, whose placed program is set.
absl::Status BuildPlan(Plan* plan, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches);
// Another frame for pipelined runs (PlanPasses::AddPipelinedFrame).
absl::Status MakeFrame(Plan* plan);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_PLAN_PASSES_H_
