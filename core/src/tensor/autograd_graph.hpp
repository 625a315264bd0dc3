// autograd_graph.hpp — the record autograd keeps (core internal): a Node per recorded op, the
// AutogradMeta a tracked tensor carries, and the helpers the backward rules are written with.
#pragma once

#include <wick/autograd.hpp>
#include <wick/tensor.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <vector>

namespace wick {

struct Node;
struct Storage;

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                    // leaves only; read and written under grad_mutex
  std::shared_ptr<Node> grad_fn;  // null for leaves
  // Backward passes in several threads (shared parameters) accumulate into the same leaf: the
  // read-add-store of its grad, and every other read or write of it, hold this lock.
  mutable std::mutex grad_mutex;
  // autograd::on_grad_ready's hooks by id (leaves only; under grad_mutex), run after a backward's
  // last addition into grad.
  std::vector<std::pair<uint64_t, std::function<void()>>> grad_ready_hooks;
};

// One input of a recorded op: where its gradient goes (null when it needs none), and the shape and
// dtype the gradient must have.
struct Edge {
  std::shared_ptr<AutogradMeta> meta;
  Shape shape;
  DType dtype = DType::F32;
};

// The gradient of each input (undefined: none) from the gradient of the output. `node` says which
// inputs want one (node.wants(i)), so a rule can skip the rest.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad, const struct Node& node)>;

// A tensor a backward rule keeps (saved()): its storage, and that storage's version then.
struct SavedVersion {
  std::shared_ptr<Storage> storage;
  uint64_t version = 0;
  int role = -2;  // which tensor of the op it is: input i (>= 0), -1 the output, -2 another
};

struct Node {
  const char* name = "";
  std::vector<Edge> edges;
  BackwardFn backward;
  std::vector<SavedVersion> saved;  // checked before `backward` runs

  bool wants(size_t i) const { return i < edges.size() && edges[i].meta != nullptr; }
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the graph below iteratively: a chain thousands of ops deep must not recurse.
  ~Node();
};

namespace detail::grad {

bool mode_enabled();  // autograd::grad_enabled without the public wrapper

// Whether an op on t must record: the only test an op pays when autograd is not in use.
inline bool needs(const Tensor& t) {
  const auto& m = t.autograd_meta();
  return m != nullptr && m->requires_grad && mode_enabled();
}
inline bool needs(std::initializer_list<const Tensor*> ts) {
  bool any = false;
  for (const Tensor* t : ts) any = any || (t->defined() && t->autograd_meta() != nullptr &&
                                           t->autograd_meta()->requires_grad);
  return any && mode_enabled();
}
inline bool needs_any(const std::vector<Tensor>& ts) {
  bool any = false;
  for (const Tensor& t : ts) any = any || (t.autograd_meta() != nullptr && t.autograd_meta()->requires_grad);
  return any && mode_enabled();
}

// t detached, for a backward rule to capture: how a rule keeps a tensor from the forward pass.
// Call it only in the capture list of the rule handed to record() (on this thread): that record
// takes the versions noted since the last one, and backward throws, naming the op, if an in-place
// write (dispatch_in_place) has changed any of them since.
Tensor saved(const Tensor& t);

// Makes `out` the result of a recorded op `name` of `inputs` (undefined inputs are skipped as
// constants) and returns it.
Tensor record(const char* name, Tensor out, std::initializer_list<const Tensor*> inputs,
              BackwardFn backward);
Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn backward);

// A recorded op without a backward rule: backward throws naming it, rather than dropping the
// gradient.
Tensor record_unsupported(const char* name, Tensor out, std::initializer_list<const Tensor*> inputs,
                          const char* why);

// g summed over the axes broadcasting added to reach `shape` (one sum; g itself when it fits).
Tensor sum_to(const Tensor& g, const Shape& shape);

// A zero tensor of x's shape, dtype and device.
Tensor zeros_like(const Tensor& x);

}  // namespace detail::grad

}  // namespace wick
