#include "profiler/advisor.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "framework/types/data_type.h"

namespace tandem {
namespace profiler {
namespace {

// A placed copy and the ops on either side of it.
struct Copy {
  int index = -1;  // in the placed program
  bool h2d = true;
  std::string var;    // the variable as the user's program names it
  int consumer = -1;  // first non-copy op after it
  std::string consumer_arg;
};

bool IsCopy(const PlacedProgram& placed, size_t i) { return placed.kernels[i] == nullptr; }

// The user's program back from a placed one: copies dropped, reads of copies
// renamed to the original variables, every op pinned where it was placed
// except `to_cpu` (a placed index, or -1), which goes under "cpu".
Program Unplace(const PlacedProgram& placed, int to_cpu) {
  const Block& block = placed.program.block();
  std::map<std::string, std::string> original;  // copy's output -> variable
  Program out;
  for (size_t i = 0; i < block.ops().size(); ++i) {
    const OpDesc& op = block.ops()[i];
    if (IsCopy(placed, i)) {
      const std::string in = op.Input("X");
      const std::string to = op.Output("Out");
      auto it = original.find(in);
      const std::string root = it == original.end() ? in : it->second;
      if (to != root) original[to] = root;
      continue;
    }
    OpDesc copy = op;
    for (auto& [arg, vars] : copy.inputs) {
      for (std::string& v : vars) {
        auto it = original.find(v);
        if (it != original.end()) v = it->second;
      }
    }
    if (static_cast<int>(i) == to_cpu) copy.op_device = "cpu";
    out.block().AppendOp(std::move(copy));
  }
  for (const VarDesc& v : block.vars()) {
    if (original.count(v.name) == 0) out.block().SetVar(v);
  }
  return out;
}

// Copies in the program placed again (op_device as given); nullopt when it
// cannot be placed (no CPU kernel, a transfer policy that forbids copies).
std::optional<int> CopiesWhenPlaced(const Program& program, const PlacedProgram& like) {
  PlacerOptions options;
  options.initial_places = like.initial_places;
  absl::StatusOr<PlacedProgram> placed = PlaceProgram(program, options);
  if (!placed.ok()) return std::nullopt;
  return placed->num_copies;
}

// The last non-copy op before `before` that writes `var`; -1 if none.
int Producer(const PlacedProgram& placed, const std::string& var, int before) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  for (int i = before - 1; i >= 0; --i) {
    if (IsCopy(placed, i)) continue;
    for (const auto& [arg, vars] : ops[i].outputs) {
      if (std::find(vars.begin(), vars.end(), var) != vars.end()) return i;
    }
  }
  return -1;
}

std::string WhyOnHost(const PlacedProgram& placed, const Copy& c) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  const int p = Producer(placed, c.var, c.index);
  if (p < 0) {
    return absl::StrCat("its input '", c.var, "' lives on the host (fed or kept in the scope)");
  }
  const OpDesc& producer = ops[p];
  if (placed.places[p].is_host()) {
    return absl::StrCat("its input '", c.var, "' is produced on the host by '", producer.type,
                        "' (on cpu)");
  }
  return absl::StrCat("its input '", c.var, "' is produced on the host (HostMemory output of '",
                      producer.type, "')");
}

std::string WhyReadOnHost(const PlacedProgram& placed, const Copy& c) {
  if (c.consumer < 0) {
    return absl::StrCat("its output '", c.var, "' is copied back to the host");
  }
  const OpDesc& reader = placed.program.block().ops()[c.consumer];
  const KernelRegistration* k = placed.kernels[c.consumer];
  const bool host_arg = k != nullptr && k->def.IsHostMemory(c.consumer_arg);
  return absl::StrCat("its output '", c.var, "' is read on the host by '", reader.type, "' (",
                      host_arg ? absl::StrCat("HostMemory '", c.consumer_arg, "'") : "on cpu", ")");
}

int64_t DeclaredBytes(const PlacedProgram& placed, const std::string& var) {
  const VarDesc* d = placed.program.block().FindVar(var);
  if (d == nullptr) return 0;
  int64_t n = 1;
  for (int64_t dim : d->shape.dims()) {
    if (dim < 0) return 0;
    n *= dim;
  }
  return n * static_cast<int64_t>(SizeOf(d->dtype));
}

// "1 async H2D + 1 sync D2H": copies per step by direction and mode ("" when
// not profiled).
std::string Counts(const std::map<std::pair<bool, std::string>, double>& per_step) {
  std::vector<std::string> parts;
  for (bool h2d : {true, false}) {
    for (const auto& [key, n] : per_step) {
      if (key.first != h2d) continue;
      parts.push_back(absl::StrCat(absl::StrFormat("%g", n), key.second.empty() ? "" : " ",
                                   key.second, h2d ? " H2D" : " D2H"));
    }
  }
  return absl::StrJoin(parts, " + ");
}

std::string Bytes(const std::vector<int64_t>& bytes) {
  if (bytes.size() > 1 &&
      std::all_of(bytes.begin(), bytes.end(), [&](int64_t b) { return b == bytes[0]; })) {
    return absl::StrCat(bytes[0], " B each");
  }
  return absl::StrCat(absl::StrJoin(bytes, " B + "), " B");
}

std::string Removes(int removed, int caused) {
  if (removed < caused) return absl::StrCat(removed, " of them");
  std::string all = caused == 1 ? "it" : caused == 2 ? "both" : absl::StrCat("all ", caused);
  if (removed > caused) absl::StrAppend(&all, " (and ", removed - caused, " other copies)");
  return all;
}

// "a", "a and b", "a, b and c".
std::string Sentence(const std::vector<std::string>& parts) {
  if (parts.size() <= 2) return absl::StrJoin(parts, " and ");
  return absl::StrCat(absl::StrJoin(parts.begin(), parts.end() - 1, ", "), " and ", parts.back());
}

}  // namespace

std::vector<Advice> Advise(const Profile& profile, const PlacedProgram& placed) {
  const std::vector<OpDesc>& ops = placed.program.block().ops();
  std::map<int, LedgerEntry> ledger;
  for (const LedgerEntry& e : CopyLedger(profile)) ledger[e.op_index] = e;

  // Every copy, with the variable it moves as the user's program names it.
  std::vector<Copy> copies;
  std::map<std::string, std::string> original;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!IsCopy(placed, i)) continue;
    Copy c;
    c.index = static_cast<int>(i);
    c.h2d = ops[i].type == "memcpy_h2d";
    const std::string in = ops[i].Input("X");
    auto it = original.find(in);
    c.var = it == original.end() ? in : it->second;
    if (ops[i].Output("Out") != c.var) original[ops[i].Output("Out")] = c.var;
    for (size_t k = i + 1; k < ops.size() && c.consumer < 0; ++k) {
      if (IsCopy(placed, k)) continue;
      c.consumer = static_cast<int>(k);
      for (const auto& [arg, vars] : ops[k].inputs) {
        if (std::find(vars.begin(), vars.end(), ops[i].Output("Out")) != vars.end()) {
          c.consumer_arg = arg;
        }
      }
    }
    copies.push_back(c);
  }

  const std::optional<int> base = CopiesWhenPlaced(Unplace(placed, -1), placed);
  std::vector<Advice> advice;
  int user_index = 0;
  for (size_t x = 0; x < ops.size(); ++x) {
    if (IsCopy(placed, x)) continue;
    const int this_index = user_index++;
    if (placed.places[x].is_host()) continue;
    std::vector<std::string> reasons;
    std::vector<const Copy*> caused;
    for (const Copy& c : copies) {
      if (c.h2d && c.consumer == static_cast<int>(x)) {
        caused.push_back(&c);
        reasons.push_back(WhyOnHost(placed, c));
      } else if (!c.h2d && Producer(placed, c.var, c.index) == static_cast<int>(x)) {
        caused.push_back(&c);
        reasons.push_back(WhyReadOnHost(placed, c));
      }
    }
    if (caused.empty() || !base.has_value()) continue;
    const std::optional<int> moved = CopiesWhenPlaced(Unplace(placed, static_cast<int>(x)), placed);
    if (!moved.has_value() || *moved >= *base) continue;

    Advice a;
    a.op = ops[x].type;
    a.op_index = this_index;
    a.placed_index = static_cast<int>(x);
    a.place = placed.places[x];
    a.copies_removed = *base - *moved;
    a.fix = "device_guard(\"cpu\")";
    a.profiled = true;
    std::map<std::pair<bool, std::string>, double> per_mode;  // (h2d, mode) -> per step
    for (const Copy* c : caused) {
      auto it = ledger.find(c->index);
      const bool seen = it != ledger.end() && it->second.var == c->var && it->second.calls > 0;
      const double per_step = seen ? it->second.per_step : 1;
      (c->h2d ? a.h2d_per_step : a.d2h_per_step) += per_step;
      a.bytes.push_back(seen ? it->second.bytes : DeclaredBytes(placed, c->var));
      if (seen) {
        if (it->second.sync) a.sync_per_step += per_step;
        a.ms_per_step += it->second.total_ms / it->second.calls * per_step;
      } else {
        a.profiled = false;
      }
      per_mode[{c->h2d, seen ? (it->second.sync ? "sync" : "async") : ""}] += per_step;
    }
    a.message =
        absl::StrCat(a.op, " (#", a.op_index, ", ", a.place.ToString(), "): ", Counts(per_mode),
                     " per step (", Bytes(a.bytes), ", ",
                     !a.profiled             ? std::string("not profiled")
                     : a.ms_per_step >= 0.01 ? absl::StrFormat("%.3f ms", a.ms_per_step)
                                             : absl::StrFormat("%.3g us", a.ms_per_step * 1e3),
                     "): ", Sentence(reasons), "; put '", a.op, "' under ", a.fix, " to remove ",
                     Removes(a.copies_removed, static_cast<int>(caused.size())));
    advice.push_back(std::move(a));
  }
  std::stable_sort(advice.begin(), advice.end(), [](const Advice& a, const Advice& b) {
    if (a.sync_per_step != b.sync_per_step) return a.sync_per_step > b.sync_per_step;
    if (a.copies_removed != b.copies_removed) return a.copies_removed > b.copies_removed;
    return a.ms_per_step > b.ms_per_step;
  });
  return advice;
}

std::vector<DeviceWaitAdvice> AdviseDeviceWaits(const Profile& profile) {
  // A profile made by hand may not have its figures yet.
  const Concurrency c =
      profile.concurrency.steps.empty() ? ComputeConcurrency(profile) : profile.concurrency;
  std::vector<DeviceWaitAdvice> advice;
  for (const HostBlocker& b : c.blockers) {
    advice.push_back({b.device, b.op, b.op_index, b.idle_ms_per_step, DescribeHostBlocker(b)});
  }
  std::stable_sort(advice.begin(), advice.end(),
                   [](const DeviceWaitAdvice& a, const DeviceWaitAdvice& b) {
                     return a.idle_ms_per_step > b.idle_ms_per_step;
                   });
  return advice;
}

std::string FormatDeviceWaitAdvice(const std::vector<DeviceWaitAdvice>& advice) {
  if (advice.empty()) return "No device waited for a host op.\n";
  std::string out;
  for (const DeviceWaitAdvice& a : advice) absl::StrAppend(&out, a.message, "\n");
  return out;
}

std::string FormatAdvice(const std::vector<Advice>& advice) {
  if (advice.empty()) return "No op placement causes synchronous copies.\n";
  std::string out;
  for (const Advice& a : advice) absl::StrAppend(&out, a.message, "\n");
  return out;
}

}  // namespace profiler
}  // namespace tandem
