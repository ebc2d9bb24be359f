// Executor::Prepare as a list of named passes over a placed program; each
// fills in part of the plan's data (PlanState, plan_state.h). Private to
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
#include "framework/runtime/plan_state.h"

namespace tandem {

// The passes, in BuildPlan's order. Each reads what the passes before it
// filled in and fills in its part of the plan; each can run alone on a
// PlanState built by hand (plan_passes_test.cc).
namespace plan_passes {

// Slots, steps and kernels for every op of the placed program.
absl::Status CreateSteps(PlanState* plan, const std::vector<std::string>& feeds,
                         const std::vector<std::string>& fetches);
// Input-less fill_constant ops whose outputs nothing else writes run once.
void FoldConstants(PlanState* plan);
// Input slots that a step may update in place under another name
// (Step::updated_inputs): a copy of a variable the step also writes.
void MarkInPlaceUpdates(PlanState* plan);
// Steps whose kernel may bind its outputs to an input's tensor
// (KernelDef::ForwardsInput) where nothing can write through one of the
// names into another's values (Step::forwards_inputs).
void AllowForwardedInputs(PlanState* plan);
// A fetched persistable that the plan writes keeps runs from overlapping:
// the next run would update it before this run's fetch reads it.
void BlockPipelineOnFetchedUpdates(PlanState* plan);
// Host kernels whose output is copied to a device next write it in that
// device's pinned memory, so the copy is asynchronous.
void PinCopySources(PlanState* plan);
// Which slots are freed after their last use, and (in-order) where.
void PlanReleases(PlanState* plan);
// Lanes, dependencies and the events concurrent runs wait on.
void BuildSchedule(PlanState* plan);
// The dependencies of a pipelined run on the run before it.
void LinkConsecutiveRuns(PlanState* plan);
// Lookups that wait for the previous run's sparse update only by rows.
void RefineRowConflicts(PlanState* plan);
// Per device, whether solo runs put its copies on the compute stream
// (Step::waits.solo_on_compute), and which done events solo runs still
// need (Step::waits.event_solo). A plan whose steps are then all queued on
// one compute stream is serial (PlanState::serial: runs the caller waits for
// dispatch in order).
void ChooseSoloCopyStreams(PlanState* plan);
// Frame 0 (see PlanState::Frame); later frames by MakeFrame.
absl::Status AddFrame(PlanState* plan);
// The events `frame` records (with `pipelined`, also those of steps and
// run ends that the next run waits for), where still missing.
absl::Status AddEvents(PlanState* plan, PlanState::Frame* frame, bool pipelined);
// Another frame for pipelined runs.
absl::Status AddPipelinedFrame(PlanState* plan);

}  // namespace plan_passes

// Every pass of Prepare over `plan`, whose placed program is set.
absl::Status BuildPlan(PlanState* plan, const std::vector<std::string>& feeds,
                       const std::vector<std::string>& fetches);
// Another frame for pipelined runs (plan_passes::AddPipelinedFrame).
absl::Status MakeFrame(PlanState* plan);

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_RUNTIME_PLAN_PASSES_H_
