#include "host/dispatch_policy.hpp"

#include <wick/dispatch.hpp>
#include "host/log.hpp"
#include "tensor/storage.hpp"

#include <algorithm>

namespace wick {

namespace {

// The live policies, so that the dispatcher can find the one that governs a device. Never
// destroyed: a runtime may be destroyed during static destruction.
std::mutex g_policies_mutex;
std::vector<std::weak_ptr<DispatchPolicy>>& live_policies() {
  static auto* policies = new std::vector<std::weak_ptr<DispatchPolicy>>();
  return *policies;
}

// Writes `host` (out's elements in C order) into out's own elements, whatever its strides: one
// write per run of elements contiguous in memory (the whole tensor when it is contiguous; a row of
// the innermost axis when that axis has stride 1; single elements otherwise).
void write_strided(const Tensor& out, const std::vector<unsigned char>& host) {
  const uint64_t esize = dtype_size(out.dtype());
  if (out.is_contiguous()) {
    out.storage()->write(static_cast<uint64_t>(out.offset()) * esize, host.data(), host.size());
    return;
  }
  // Collapse axes that step through memory as one (extent-1 axes dropped).
  Shape shape;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < out.shape().size(); ++d) {
    if (out.shape()[d] == 1) continue;
    if (!shape.empty() && strides.back() == out.strides()[d] * out.shape()[d]) {
      shape.back() *= out.shape()[d];
      strides.back() = out.strides()[d];
    } else {
      shape.push_back(out.shape()[d]);
      strides.push_back(out.strides()[d]);
    }
  }
  const bool rows = !strides.empty() && strides.back() == 1;
  const int64_t run = rows ? shape.back() : 1;
  const size_t outer = rows ? shape.size() - 1 : shape.size();
  std::vector<int64_t> index(outer, 0);
  for (size_t done = 0; done < host.size(); done += static_cast<size_t>(run) * esize) {
    int64_t at = out.offset();
    for (size_t d = 0; d < outer; ++d) at += index[d] * strides[d];
    out.storage()->write(static_cast<uint64_t>(at) * esize, host.data() + done,
                         static_cast<uint64_t>(run) * esize);
    for (size_t d = outer; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

DispatchPolicy::DispatchPolicy(std::shared_ptr<const PluginRegistry> registry, bool strict)
    : strict(strict), registry_(std::move(registry)) {}

std::atomic<int> DispatchPolicy::checking_policies_{0};

DispatchPolicy::~DispatchPolicy() {
  set_check_nan(false);
}

void DispatchPolicy::set_check_nan(bool on) {
  if (check_nan_.exchange(on) != on) checking_policies_.fetch_add(on ? 1 : -1);
}

std::shared_ptr<DispatchPolicy> DispatchPolicy::create(
    std::shared_ptr<const PluginRegistry> registry, bool strict) {
  std::shared_ptr<DispatchPolicy> policy(new DispatchPolicy(std::move(registry), strict));
  std::lock_guard lock(g_policies_mutex);
  auto& policies = live_policies();
  policies.erase(std::remove_if(policies.begin(), policies.end(),
                                [](const std::weak_ptr<DispatchPolicy>& p) { return p.expired(); }),
                 policies.end());
  policies.push_back(policy);
  return policy;
}

std::shared_ptr<DispatchPolicy> DispatchPolicy::governing(const Device& device) {
  std::lock_guard lock(g_policies_mutex);
  for (const std::weak_ptr<DispatchPolicy>& weak : live_policies()) {
    std::shared_ptr<DispatchPolicy> policy = weak.lock();
    if (policy != nullptr && policy->governs(device)) return policy;
  }
  return nullptr;
}

bool DispatchPolicy::nan_check_on(const Device& device) {
  std::lock_guard lock(g_policies_mutex);
  for (const std::weak_ptr<DispatchPolicy>& weak : live_policies()) {
    std::shared_ptr<DispatchPolicy> policy = weak.lock();
    if (policy != nullptr && policy->check_nan() && policy->governs(device)) return true;
  }
  return false;
}

// By the loaded plugin, not the device handle: two registries that load the same library share
// its handles but not their LoadedPlugin.
bool DispatchPolicy::governs(const Device& device) const {
  return registry_->owns(device);
}

bool DispatchPolicy::record(const FallbackRecord& record) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = records_.try_emplace({record.op, record.dtype, record.device}, record);
  it->second.count += 1;
  return inserted;
}

std::vector<FallbackRecord> DispatchPolicy::records() const {
  std::lock_guard lock(mutex_);
  std::vector<FallbackRecord> out;
  for (const auto& [key, r] : records_) out.push_back(r);
  return out;
}

void DispatchPolicy::reset() {
  std::lock_guard lock(mutex_);
  records_.clear();
}

void run_declined_op(wick_op_code op, const void* params, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& outputs, const FallbackRecord& declined) {
  const Device device = outputs.front().device();
  const std::string what = "op '" + declined.op + "' (" + declined.dtype +
                           ") is not supported by plugin '" + declined.plugin + "' on device " +
                           declined.device + " (" + declined.reason + ")";
  const std::shared_ptr<DispatchPolicy> policy = DispatchPolicy::governing(device);
  if (policy == nullptr) {
    throw Error(what + ", and there is no CPU fallback: " + declined.device +
                " belongs to no wick::Runtime");
  }
  if (policy->strict) {
    throw Error("strict mode: " + what +
                "; the CPU fallback is disabled by strict = true (set strict = false, or choose "
                "another device)");
  }
  const Device cpu = policy->cpu_device();
  if (cpu == device) throw Error(what + ": no device can run it");
  if (policy->record(declined)) {
    log(LogLevel::Warn, "fallback: " + what + "; running it on " + cpu.name() +
                            " with copies (logged once per op, dtype and device)");
  }
  std::vector<Tensor> cpu_inputs, cpu_outputs;
  for (const Tensor& t : inputs) cpu_inputs.push_back(t.to(cpu));
  for (const Tensor& t : outputs) cpu_outputs.push_back(Tensor::empty(t.shape(), t.dtype(), cpu));
  dispatch(op, params, cpu_inputs, cpu_outputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    std::vector<unsigned char> host(static_cast<size_t>(out.numel()) * dtype_size(out.dtype()));
    cpu_outputs[i].copy_to_host(host.data(), host.size());
    write_strided(out, host);
  }
}

}  // namespace wick
