// Checkpoints: save and restore the persistable variables of a training
// program (parameters, optimizer state, learning rate) so a run can resume
// exactly where it stopped.
//
//   RETURN_IF_ERROR(SaveCheckpoint(builder.main_program(), scope, "/ckpt/step_1000"));
//   ...
//   Scope fresh;
//   RETURN_IF_ERROR(LoadCheckpoint("/ckpt/step_1000", &fresh));           // original places
//   RETURN_IF_ERROR(LoadCheckpoint("/ckpt/step_1000", &fresh,
//                                  {{"emb_w", CPUPlace()}}));            // or moved
//
// Format (little-endian): "TNDMCKPT", u32 version (1), u32 tensor count,
// u32 CRC-32 of those 16 bytes; then per tensor: u32 name length, name, u32
// dtype-name length, dtype name, u32 place length, place ("cpu", "gpu:0"),
// u32 rank, i64 dims, u64 data bytes, the data, and a u32 CRC-32 (IEEE) of
// the whole record before it. Device tensors are copied to the host to be
// written and restored on their recorded place (or the one the caller
// maps them to).
//
// Saving writes "<path>.tmp", fsyncs it, renames it over `path` and fsyncs
// the directory (AtomicFileWriter; a failed save removes the temporary), so
// `path` always holds a complete checkpoint: the old one or the new one. Loading verifies every record before changing the scope,
// so a bad file leaves the scope untouched: a missing file is NotFound; a
// truncated or corrupted one (bad magic, checksum mismatch, impossible
// sizes, trailing bytes) is DataLoss naming the file, the byte offset and,
// once known, the tensor; never a silently wrong tensor. Loading also
// rejects, as DataLoss, whatever saving never writes even under a valid
// checksum: an empty or non-UTF-8 name, a name twice, a dtype name that is
// not canonical ("float"), a data byte count other than the shape's (checked
// without overflow), a bool byte other than 0 or 1, a place other than
// Place::ToString()'s spelling. Saving refuses empty and non-UTF-8 names. Functions are
// synchronous; not thread-safe for one Scope.
#ifndef TANDEM_FRAMEWORK_PERSISTENCE_CHECKPOINT_H_
#define TANDEM_FRAMEWORK_PERSISTENCE_CHECKPOINT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "framework/place/place.h"
#include "framework/program/program.h"
#include "framework/tensor/scope.h"

namespace tandem {

// Saves the dense tensors `names` of `scope` to `path`. InvalidArgument for
// an empty `path` ("checkpoint path is empty", before anything is written);
// NotFound for a name the scope lacks; InvalidArgument for a duplicate, empty
// or non-UTF-8 name or a variable that does not hold an initialised dense
// tensor; the errno's code (e.g. NotFound, PermissionDenied) naming the file
// when writing fails.
absl::Status SaveCheckpoint(const Scope& scope, const std::vector<std::string>& names,
                            const std::string& path);

// Saves every persistable variable of `program` (as SaveCheckpoint above).
absl::Status SaveCheckpoint(const Program& program, const Scope& scope, const std::string& path);

// The persistable variables of `program`, sorted.
std::vector<std::string> PersistableVars(const Program& program);

// Loads every tensor of the checkpoint at `path` into `scope`, each on
// `places[name]` if given, else on the place it was saved from
// (FailedPrecondition naming the tensor if that device does not exist).
// Errors as in the header comment.
absl::Status LoadCheckpoint(const std::string& path, Scope* scope,
                            const std::map<std::string, Place>& places = {});

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PERSISTENCE_CHECKPOINT_H_
