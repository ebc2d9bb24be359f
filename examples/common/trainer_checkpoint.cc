#include "examples/common/trainer_checkpoint.h"

#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "framework/base/status_macros.h"
#include "framework/memory/cpu_allocator.h"
#include "framework/persistence/checkpoint.h"

namespace tandem {

std::string TrainerCheckpointPath(const std::string& dir) { return dir + "/checkpoint"; }

absl::Status SaveTrainerCheckpoint(const Program& program, int64_t step, const std::string& dir,
                                   Scope* scope) {
  Tensor t = Tensor::Allocate(CpuAllocator::Default(), DataType::kInt64, Shape({1})).value();
  t.data<int64_t>()[0] = step;
  scope->Var(kTrainerStepVar)->set(std::move(t));
  std::vector<std::string> names = PersistableVars(program);
  names.push_back(kTrainerStepVar);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::ErrnoToStatus(error.value(),
                               absl::StrCat("cannot create --checkpoint_dir '", dir, "'"));
  }
  return SaveCheckpoint(*scope, names, TrainerCheckpointPath(dir));
}

absl::StatusOr<int64_t> ResumeTrainerCheckpoint(const Program& program, const std::string& dir,
                                                Scope* scope) {
  const std::string path = TrainerCheckpointPath(dir);
  const std::vector<std::string> names = PersistableVars(program);
  std::map<std::string, Place> places;
  for (const std::string& name : names) {
    const Variable* v = scope->Find(name);
    if (v != nullptr && v->is_tensor()) places[name] = v->tensor().place();
  }
  Scope loaded;
  RETURN_IF_ERROR(LoadCheckpoint(path, &loaded, places));
  for (const std::string& name : names) {
    const Shape& want = program.block().FindVar(name)->shape;
    const Variable* got = loaded.Find(name);
    if (got == nullptr || !got->is_tensor() || got->tensor().shape() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint '", path, "': '", name, "' is ",
          got != nullptr && got->is_tensor() ? got->tensor().shape().ToString() : "missing",
          " but this model has ", want.ToString(), "; resume with the flags it was saved with"));
    }
  }
  const Variable* step = loaded.Find(kTrainerStepVar);
  if (step == nullptr || !step->is_tensor() || step->tensor().dtype() != DataType::kInt64 ||
      step->tensor().NumElements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint '", path, "' has no int64 '", kTrainerStepVar, "'"));
  }
  for (const std::string& name : names) scope->Var(name)->set(loaded.Find(name)->tensor());
  return step->tensor().data<int64_t>()[0];
}

}  // namespace tandem
