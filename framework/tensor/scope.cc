#include "framework/tensor/scope.h"

#include <algorithm>

namespace tandem {

Variable* Scope::Var(absl::string_view name) {
  auto& slot = vars_[name];
  if (slot == nullptr) slot = std::make_unique<Variable>();
  return slot.get();
}

Variable* Scope::Find(absl::string_view name) {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

const Variable* Scope::Find(absl::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

void Scope::Erase(absl::string_view name) { vars_.erase(name); }

std::vector<std::string> Scope::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, v] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tandem
