// module_scope.cpp — the thread's module path (wick/module_scope.hpp).
#include <wick/module_scope.hpp>

namespace wick {

namespace {
thread_local std::string t_path;
}  // namespace

ModuleScope::ModuleScope(std::string_view name) : previous_size_(t_path.size()) {
  if (name.empty()) return;
  if (!t_path.empty()) t_path += '.';
  t_path += name;
}

// Scopes end in reverse order (they live on the stack), so the path only ever shrinks back.
ModuleScope::~ModuleScope() {
  t_path.resize(previous_size_);
}

const std::string& ModuleScope::current() {
  return t_path;
}

}  // namespace wick
