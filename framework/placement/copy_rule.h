// The copy rule: how a value on one place becomes readable on another, and
// how a persistable updated away from its home goes back. One source for
// the placer (placer.cc, which writes the copy ops into the program) and
// the memory estimate (framework/estimate/memory_estimate.cc, which walks
// the same copies as indices, without placing the program).
//
//   CopyList<std::string, Place> copies;   // the valid copies of one value
//   std::string read = EnsureCopy(var, have, want, CPUPlace(), &copies, is_host,
//       [&](const std::string& source, const Place& from, const Place& to) {
//         return AppendCopyOp(var, source, from, to);   // returns the copy's variable
//       });
//
// The rule:
//  - a value is read where it is when it is there;
//  - else the valid copy at the destination is read (one copy per value and
//    destination, until the value is written again: the caller clears its
//    CopyList then);
//  - else between two devices the value goes through the host (the host
//    copy is made, or a valid one reused, first), and the copy is made;
//  - a write-back copies the persistable's last value home, through a host
//    copy of its own between two devices, into the persistable itself.
// Header-only templates over the caller's variable and place types; pure
// functions of their arguments (the callbacks do the writing).
#ifndef TANDEM_FRAMEWORK_PLACEMENT_COPY_RULE_H_
#define TANDEM_FRAMEWORK_PLACEMENT_COPY_RULE_H_

#include <optional>
#include <utility>
#include <vector>

namespace tandem {

// The valid copies of one value, by destination (a few at most: a short list).
template <typename Var, typename Where>
class CopyList {
 public:
  std::optional<Var> Find(const Where& where) const {
    for (const auto& [at, copy] : copies_) {
      if (at == where) return copy;
    }
    return std::nullopt;
  }
  void Add(const Where& where, Var copy) { copies_.emplace_back(where, std::move(copy)); }
  void Clear() { copies_.clear(); }

 private:
  std::vector<std::pair<Where, Var>> copies_;
};

// What op reads for `var`, which is at `have`, when it wants it at `want`:
// `var` itself, a valid copy from `copies`, or new copies made by
// `append(source, from, to)` (which returns the copy's variable) and added
// to `copies`. `host` is the host's place; `is_host(where)` tells a host.
template <typename Var, typename Where, typename IsHost, typename Append>
Var EnsureCopy(const Var& var, const Where& have, const Where& want, const Where& host,
               CopyList<Var, Where>* copies, IsHost is_host, Append append) {
  if (have == want) return var;
  if (std::optional<Var> valid = copies->Find(want)) return *valid;
  Var source = var;
  Where from = have;
  if (!is_host(have) && !is_host(want)) {  // device -> other device, through the host
    std::optional<Var> via = copies->Find(host);
    if (!via.has_value()) {
      via = append(var, have, host);
      copies->Add(host, *via);
    }
    source = *via;
    from = host;
  }
  Var copy = append(source, from, want);
  copies->Add(want, copy);
  return copy;
}

// The write-back of a persistable whose last value is at `have` to its
// home: `append(source, from, to, into_var)` makes each copy (into_var: the
// copy writes the persistable itself) and returns its variable. Nothing
// when it is home already.
template <typename Var, typename Where, typename IsHost, typename Append>
void WriteBackCopy(const Var& var, const Where& have, const Where& home, const Where& host,
                   IsHost is_host, Append append) {
  if (have == home) return;
  Var source = var;
  Where from = have;
  if (!is_host(have) && !is_host(home)) {  // through a host copy of its own
    source = append(var, have, host, /*into_var=*/false);
    from = host;
  }
  append(source, from, home, /*into_var=*/true);
}

}  // namespace tandem

#endif  // TANDEM_FRAMEWORK_PLACEMENT_COPY_RULE_H_
