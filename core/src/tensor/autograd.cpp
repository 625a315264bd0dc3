// autograd.cpp — the autograd record and its walk: grad mode, the Tensor methods of autograd
// (tensor.hpp), recording (autograd_graph.hpp), backward, and the gradient checker. The backward
// rules of the ops are in autograd_rules.cpp and autograd_rules_nn.cpp.
#include "tensor/autograd_graph.hpp"

#include "tensor/ops_common.hpp"
#include "tensor/storage.hpp"

#include <atomic>
#include <cmath>
#include <sstream>
#include <unordered_map>

namespace wick {

namespace {

thread_local bool grad_mode = true;

std::string describe(const Tensor& t) {
  return shape_to_string(t.shape()) + " " + dtype_name(t.dtype());
}

}  // namespace

// ---- grad mode ----------------------------------------------------------------------------------

bool autograd::grad_enabled() {
  return grad_mode;
}

autograd::NoGradGuard::NoGradGuard() : previous_(grad_mode) {
  grad_mode = false;
}

autograd::NoGradGuard::~NoGradGuard() {
  grad_mode = previous_;
}

bool detail::grad::mode_enabled() {
  return grad_mode;
}

// ---- the record ---------------------------------------------------------------------------------

Node::~Node() {
  // Take over every node only this one keeps alive, and free them one at a time from a list.
  std::vector<std::shared_ptr<Node>> pending;
  auto adopt = [&pending](std::vector<Edge>& edges) {
    for (Edge& e : edges) {
      if (e.meta && e.meta.use_count() == 1 && e.meta->grad_fn)
        pending.push_back(std::move(e.meta->grad_fn));
      e.meta.reset();
    }
  };
  adopt(edges);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    if (n.use_count() == 1) adopt(n->edges);
  }
}

namespace detail::grad {

namespace {

thread_local std::vector<SavedVersion> t_saved;  // noted by saved(), taken by the next record

// The versions saved() noted for this op, each told which of the op's tensors it belongs to
// (input i of n, by `input(i)`, or the output).
template <class Input>
std::vector<SavedVersion> take_saved(const Tensor& out, size_t n, Input input) {
  std::vector<SavedVersion> saved;
  saved.swap(t_saved);
  for (SavedVersion& s : saved) {
    for (size_t i = 0; i < n && s.role == -2; ++i)
      if (input(i).storage() == s.storage) s.role = static_cast<int>(i);
    if (s.role == -2 && out.storage() == s.storage) s.role = -1;
  }
  return saved;
}

Tensor record_edges(const char* name, Tensor out, std::vector<Edge> edges, BackwardFn backward,
                    std::vector<SavedVersion> saved) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->edges = std::move(edges);
  node->backward = std::move(backward);
  node->saved = std::move(saved);
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  out.set_autograd_meta(std::move(meta));
  return out;
}

Edge edge_of(const Tensor& t) {
  Edge e;
  if (!t.defined()) return e;
  const auto& m = t.autograd_meta();
  if (m && m->requires_grad) e.meta = m;
  e.shape = t.shape();
  e.dtype = t.dtype();
  return e;
}

bool is_input(const Tensor& out, const std::vector<Edge>& edges) {
  if (!out.autograd_meta()) return false;
  for (const Edge& e : edges)
    if (e.meta == out.autograd_meta()) return true;
  return false;
}

}  // namespace

Tensor saved(const Tensor& t) {
  if (t.defined())
    t_saved.push_back({t.storage(), t.storage()->version.load(std::memory_order_relaxed)});
  return t.detach();
}

Tensor record(const char* name, Tensor out, std::initializer_list<const Tensor*> inputs,
              BackwardFn backward) {
  std::vector<SavedVersion> saved =
      take_saved(out, inputs.size(), [&](size_t i) -> const Tensor& { return *inputs.begin()[i]; });
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor* t : inputs) edges.push_back(edge_of(*t));
  // An op that handed back its input (a no-op reshape or cast) is that input: nothing to record.
  if (is_input(out, edges)) return out;
  return record_edges(name, std::move(out), std::move(edges), std::move(backward),
                      std::move(saved));
}

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs,
              BackwardFn backward) {
  std::vector<SavedVersion> saved =
      take_saved(out, inputs.size(), [&](size_t i) -> const Tensor& { return inputs[i]; });
  std::vector<Edge> edges;
  edges.reserve(inputs.size());
  for (const Tensor& t : inputs) edges.push_back(edge_of(t));
  if (is_input(out, edges)) return out;
  return record_edges(name, std::move(out), std::move(edges), std::move(backward),
                      std::move(saved));
}

Tensor record_unsupported(const char* name, Tensor out, std::initializer_list<const Tensor*> inputs,
                          const char* why) {
  const std::string op = name;
  const std::string reason = why;
  return record(name, std::move(out), inputs,
                [op, reason](const Tensor&, const Node&) -> std::vector<Tensor> {
                  throw Error("backward: " + op + " has no backward rule (" + reason +
                              "); compute it without grad (detach() its input, or a NoGradGuard)");
                });
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const size_t lead = static_cast<size_t>(g.rank()) - shape.size();
  std::vector<int> axes;
  for (size_t i = 0; i < static_cast<size_t>(g.rank()); ++i) {
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(static_cast<int>(i));
  }
  return g.sum(axes, true).reshape(shape);
}

Tensor zeros_like(const Tensor& x) {
  return Tensor::zeros(x.shape(), x.dtype(), x.device());
}

}  // namespace detail::grad

// ---- the Tensor side ----------------------------------------------------------------------------

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  detail::require_defined(*this, "set_requires_grad");
  if (meta_ && meta_->grad_fn) {
    if (requires_grad) return *this;
    throw Error("set_requires_grad(false): " + describe(*this) +
                " is the result of a recorded op, not a leaf; use detach() for a copy without "
                "history");
  }
  if (requires_grad && !is_float(dtype_)) {
    throw Error("set_requires_grad: only floating-point tensors can require grad, got " +
                describe(*this) + "; convert it first with .to(DType::F32)");
  }
  if (!meta_) {
    if (!requires_grad) return *this;
    meta_ = std::make_shared<AutogradMeta>();
  }
  meta_->requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const {
  return meta_ && meta_->requires_grad;
}

bool Tensor::is_leaf() const {
  return !meta_ || !meta_->grad_fn;
}

Tensor Tensor::grad() const {
  if (!meta_) return Tensor();
  const std::lock_guard<std::mutex> lock(meta_->grad_mutex);
  return meta_->grad;
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && (grad.shape() != shape_ || grad.dtype() != dtype_)) {
    throw Error("set_grad: the gradient " + describe(grad) + " does not match the tensor " +
                describe(*this));
  }
  if (!meta_) {
    if (!grad.defined()) return;
    meta_ = std::make_shared<AutogradMeta>();
  }
  const Tensor detached = grad.detach();
  const std::lock_guard<std::mutex> lock(meta_->grad_mutex);
  meta_->grad = detached;
}

Tensor Tensor::detach() const {
  Tensor out = *this;
  out.meta_.reset();
  return out;
}

namespace {

// Adds g into a leaf's grad: the first gradient becomes the grad itself (no copy: a training step
// would pay one pass over every parameter for it), later ones are added out of place. So a grad
// may share memory with another gradient or be a broadcast view: read it, never write into it.
// Thread-safe: concurrent backward passes into one leaf each add under the leaf's lock.
void accumulate(AutogradMeta& leaf, Tensor g) {
  g.set_autograd_meta(nullptr);
  const std::lock_guard<std::mutex> lock(leaf.grad_mutex);
  leaf.grad = leaf.grad.defined() ? leaf.grad.add(g) : std::move(g);
}

// Throws when an in-place write has changed a tensor the rule of n saved: the rule would compute
// with the new values and give a wrong gradient without a word.
void check_saved(const Node& n) {
  for (const SavedVersion& s : n.saved) {
    const uint64_t now = s.storage->version.load(std::memory_order_relaxed);
    if (now == s.version) continue;
    const std::string which =
        s.role >= 0 ? "its input " + std::to_string(s.role) + " (" +
                          shape_to_string(n.edges[static_cast<size_t>(s.role)].shape) + " " +
                          dtype_name(n.edges[static_cast<size_t>(s.role)].dtype) + ")"
        : s.role == -1 ? std::string("its output")
                       : std::string("a tensor it saved");
    throw Error(std::string("backward: ") + n.name + " needs " + which +
                " as the forward pass saw it, but an in-place write (nn::assign, an optimizer "
                "step) has modified it since (version " + std::to_string(s.version) + " then, " +
                std::to_string(now) + " now). Write after backward, or write into a clone()");
  }
}

// The gradient as its edge wants it: the dtype converted, the shape checked (a wrong shape is a
// bug in a backward rule, so it is reported rather than broadcast).
Tensor fit(Tensor g, const Edge& e, const Node& node, size_t i) {
  if (g.shape() != e.shape) {
    throw Error(std::string("backward: the rule of ") + node.name + " gave input " +
                std::to_string(i) + " a gradient of shape " + shape_to_string(g.shape()) +
                " for an input of shape " + shape_to_string(e.shape) + " (a bug in Wick)");
  }
  return g.dtype() == e.dtype ? g : g.to(e.dtype);
}

// The seed of a backward from `root`: `seed_in` checked and converted, or 1 for one element.
Tensor backward_seed(const Tensor& root, const Tensor& seed_in) {
  const auto& meta = root.autograd_meta();
  if (!meta || !meta->requires_grad) {
    throw Error("backward: the tensor " + describe(root) +
                " does not require grad: no input of the ops that made it requires grad, or it "
                "was made under a NoGradGuard");
  }
  if (!seed_in.defined()) {
    if (root.numel() != 1) {
      throw Error("backward: the tensor has shape " + shape_to_string(root.shape()) +
                  "; a seed is implied only for one element. Reduce it first (e.g. .sum()) or "
                  "pass a seed of shape " +
                  shape_to_string(root.shape()));
    }
    return Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  if (seed_in.shape() != root.shape()) {
    throw Error("backward: the seed " + describe(seed_in) + " must have the tensor's shape " +
                shape_to_string(root.shape()));
  }
  return seed_in.dtype() == root.dtype() ? seed_in : seed_in.to(root.dtype());
}

bool has_grad_ready_hooks(const AutogradMeta& leaf) {
  const std::lock_guard<std::mutex> lock(leaf.grad_mutex);
  return !leaf.grad_ready_hooks.empty();
}

// Runs the leaf's on_grad_ready hooks (a copy of the list: a hook may add or remove hooks).
void run_grad_ready_hooks(const AutogradMeta& leaf) {
  std::vector<std::pair<uint64_t, std::function<void()>>> hooks;
  {
    const std::lock_guard<std::mutex> lock(leaf.grad_mutex);
    hooks = leaf.grad_ready_hooks;
  }
  for (const auto& h : hooks) h.second();
}

// What one backward pass walks: how many edges reach each node, and each hooked leaf, found by an
// iterative walk (graphs may be thousands of ops deep).
struct Walk {
  std::unordered_map<Node*, int> pending;
  std::unordered_map<const AutogradMeta*, int> hooked_leaves;
};

Walk count_edges(Node* top) {
  Walk w;
  std::vector<Node*> stack{top};
  w.pending[top] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->edges) {
      if (!e.meta) continue;
      if (!e.meta->grad_fn) {
        if (has_grad_ready_hooks(*e.meta)) ++w.hooked_leaves[e.meta.get()];
        continue;
      }
      Node* next = e.meta->grad_fn.get();
      auto [it, fresh] = w.pending.emplace(next, 0);
      ++it->second;
      if (fresh) stack.push_back(next);
    }
  }
  return w;
}

// A leaf's gradient from one edge (`g` undefined: none); its hooks run after its last edge.
void reach_leaf(Walk& w, const Edge& e, Tensor g) {
  if (g.defined()) accumulate(*e.meta, std::move(g));
  auto it = w.hooked_leaves.find(e.meta.get());
  if (it != w.hooked_leaves.end() && --it->second == 0) run_grad_ready_hooks(*e.meta);
}

void run_backward(const Tensor& root, const Tensor& seed_in) {
  const Tensor seed = backward_seed(root, seed_in);
  const auto& meta = root.autograd_meta();
  autograd::NoGradGuard no_grad;
  if (!meta->grad_fn) {
    accumulate(*meta, seed);
    run_grad_ready_hooks(*meta);
    return;
  }
  Walk w = count_edges(meta->grad_fn.get());
  // Each node runs once every node above it has run, with the sum of the gradients it received.
  std::unordered_map<Node*, Tensor> grads;
  grads[meta->grad_fn.get()] = seed.detach();
  std::vector<Node*> ready{meta->grad_fn.get()};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> out;
    auto g = grads.find(n);
    if (g != grads.end()) {
      const Tensor grad = std::move(g->second);
      grads.erase(g);
      check_saved(*n);
      out = n->backward(grad, *n);
      if (out.size() != n->edges.size()) {
        throw Error(std::string("backward: the rule of ") + n->name + " gave " +
                    std::to_string(out.size()) + " gradients for " +
                    std::to_string(n->edges.size()) + " inputs (a bug in Wick)");
      }
    }
    for (size_t i = 0; i < n->edges.size(); ++i) {
      const Edge& e = n->edges[i];
      if (!e.meta) continue;
      const bool has = i < out.size() && out[i].defined();
      if (!e.meta->grad_fn) {
        reach_leaf(w, e, has ? fit(std::move(out[i]), e, *n, i) : Tensor());
        continue;
      }
      Node* next = e.meta->grad_fn.get();
      if (has) {
        const Tensor gi = fit(out[i], e, *n, i).detach();
        auto [it, fresh] = grads.emplace(next, gi);
        if (!fresh) it->second = it->second.add(gi);
      }
      if (--w.pending[next] == 0) ready.push_back(next);
    }
  }
}

}  // namespace

void Tensor::backward(const Tensor& seed) const {
  detail::require_defined(*this, "backward");
  run_backward(*this, seed);
}

// ---- hooks --------------------------------------------------------------------------------------

autograd::GradReadyHook autograd::on_grad_ready(const Tensor& leaf, std::function<void()> hook) {
  detail::require_defined(leaf, "on_grad_ready");
  const auto& meta = leaf.autograd_meta();
  if (!meta || !meta->requires_grad || meta->grad_fn)
    throw Error("on_grad_ready: the tensor " + describe(leaf) +
                (meta && meta->grad_fn ? " is the result of an op, not a leaf (only leaves keep a grad)"
                                       : " does not require grad (set_requires_grad() first)"));
  if (!hook) throw Error("on_grad_ready: an empty hook for the tensor " + describe(leaf));
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  const std::lock_guard<std::mutex> lock(meta->grad_mutex);
  meta->grad_ready_hooks.emplace_back(id, std::move(hook));
  return GradReadyHook(meta, id);
}

autograd::GradReadyHook::GradReadyHook(GradReadyHook&& other) noexcept
    : leaf_(std::move(other.leaf_)), id_(other.id_) {
  other.leaf_.reset();
}

autograd::GradReadyHook& autograd::GradReadyHook::operator=(GradReadyHook&& other) noexcept {
  if (this != &other) {
    reset();
    leaf_ = std::move(other.leaf_);
    id_ = other.id_;
    other.leaf_.reset();
  }
  return *this;
}

void autograd::GradReadyHook::reset() {
  if (const std::shared_ptr<AutogradMeta> meta = leaf_.lock()) {
    const std::lock_guard<std::mutex> lock(meta->grad_mutex);
    std::erase_if(meta->grad_ready_hooks, [&](const auto& h) { return h.first == id_; });
  }
  leaf_.reset();
}

// ---- gradient check -----------------------------------------------------------------------------

autograd::GradCheck autograd::check_gradients(
    const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
    double h, uint64_t seed) {
  std::vector<Tensor> leaves;
  for (const Tensor& x : inputs) {
    detail::require_defined(x, "check_gradients");
    Tensor leaf = x.detach().clone();
    leaf.set_requires_grad();
    leaves.push_back(leaf);
  }
  const Tensor out = fn(leaves);
  const Tensor weights = Tensor::rand(out.shape(), 0.5, 1.5, out.dtype(), out.device(), seed);
  auto loss_of = [&](const Tensor& y) { return y.mul(weights).sum().to(DType::F64).item<double>(); };
  out.mul(weights).sum().backward();

  GradCheck result;
  for (size_t i = 0; i < leaves.size(); ++i) {
    const Tensor x = leaves[i].detach();
    const std::vector<double> base = x.to(DType::F64).to_vector<double>();
    const Tensor g = leaves[i].grad();
    const std::vector<double> analytic =
        g.defined() ? g.to(DType::F64).to_vector<double>() : std::vector<double>(base.size(), 0.0);
    for (size_t j = 0; j < base.size(); ++j) {
      auto at = [&](double v) {
        std::vector<double> moved = base;
        moved[j] = v;
        std::vector<Tensor> args = leaves;
        for (Tensor& a : args) a = a.detach();
        args[i] = Tensor::from_vector(moved, x.shape(), x.device()).to(x.dtype());
        NoGradGuard no_grad;
        return loss_of(fn(args));
      };
      const double numeric = (at(base[j] + h) - at(base[j] - h)) / (2 * h);
      const double err = std::abs(analytic[j] - numeric) / (1.0 + std::abs(numeric));
      if (err > result.max_error || std::isnan(err)) {
        result.max_error = std::isnan(err) ? INFINITY : err;
        std::ostringstream os;
        os.precision(10);
        os << "input " << i << " element " << j << ": autograd " << analytic[j] << ", numeric "
           << numeric;
        result.worst = os.str();
      }
    }
  }
  return result;
}

}  // namespace wick
