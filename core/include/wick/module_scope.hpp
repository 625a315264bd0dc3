// wick/module_scope.hpp — which part of a model the ops on this thread belong to. A layer's forward
// opens a scope with its name; scopes nest into a dotted path ("encoder.layer.0.attention"), which
// the NaN check (docs/config.md: [debug] check_nan) names in its error. Costs a string append and
// a truncation per scope; nothing else reads it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace wick {

class ModuleScope {
 public:
  // Appends name to this thread's path: "a" inside "encoder" gives "encoder.a" (a name may itself
  // be dotted; an empty name leaves the path as it is). Restored when the scope ends.
  explicit ModuleScope(std::string_view name);
  ~ModuleScope();
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

  // This thread's path now; empty outside every scope.
  static const std::string& current();

 private:
  std::size_t previous_size_;
};

}  // namespace wick
