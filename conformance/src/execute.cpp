#include "execute.hpp"

#include "grad.hpp"
#include "onnx_import.hpp"

#include <wick/direct.hpp>
#include <wick/error.hpp>
#include <wick/sdk/ops.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace wick::conformance {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<Tensor> upload_all(const Case& c, const Device& device) {
  std::vector<Tensor> out;
  for (const Operand& o : c.inputs) out.push_back(upload(o, device));
  return out;
}

std::vector<Tensor> allocate_outputs(const Case& c, const Device& device) {
  std::vector<Tensor> out;
  for (const Expected& e : c.outputs) out.push_back(Tensor::empty(e.shape, e.dtype, device));
  return out;
}

// Outputs of the backend under test, each a view into a larger buffer whose first and last
// kCanaryBytes hold a pattern: a plugin that writes outside its output (but inside the buffer,
// where no bounds check sees it) changes them, and the case fails saying so.
constexpr int64_t kCanaryBytes = 64;
constexpr uint8_t kCanary = 0xA5;

struct GuardedOutputs {
  std::vector<Tensor> outs;
  std::vector<Tensor> guards;  // u8, canary + output bytes + canary
};

// The bytes of an output's guard buffer: the output's own between two canaries.
int64_t guarded_bytes(const Expected& e) {
  int64_t n = 1;
  for (int64_t d : e.shape) n *= d;
  return n * static_cast<int64_t>(dtype_size(e.dtype)) + 2 * kCanaryBytes;
}

GuardedOutputs allocate_guarded_outputs(const Case& c, const Device& device) {
  GuardedOutputs g;
  for (const Expected& e : c.outputs) {
    const std::vector<uint8_t> pattern(static_cast<size_t>(guarded_bytes(e)), kCanary);
    Tensor guard = Tensor::from_vector(pattern, {static_cast<int64_t>(pattern.size())}, device);
    std::vector<int64_t> strides(e.shape.size(), 1);
    for (size_t d = e.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * e.shape[d];
    g.outs.emplace_back(guard.storage(), e.dtype, e.shape, strides,
                        kCanaryBytes / static_cast<int64_t>(dtype_size(e.dtype)));
    g.guards.push_back(std::move(guard));
  }
  return g;
}

// "" when every canary is intact, else what was overwritten.
std::string canary_damage(const GuardedOutputs& g) {
  for (size_t k = 0; k < g.guards.size(); ++k) {
    const std::vector<uint8_t> bytes = g.guards[k].to_vector<uint8_t>();
    const size_t total = bytes.size();
    int64_t before = 0, after = 0;
    for (size_t i = 0; i < static_cast<size_t>(kCanaryBytes); ++i) {
      before += bytes[i] != kCanary;
      after += bytes[total - 1 - i] != kCanary;
    }
    if (before + after > 0)
      return "the plugin wrote outside output " + std::to_string(k) + " (an out-of-bounds write): " +
             std::to_string(before) + " of the " + std::to_string(kCanaryBytes) +
             " bytes before it and " + std::to_string(after) + " of the " +
             std::to_string(kCanaryBytes) + " after it changed";
  }
  return "";
}

// The reference's output as an Expected (for the differential mode).
Expected as_expected(const Expected& shape_of, const std::vector<unsigned char>& raw) {
  Expected e;
  e.dtype = shape_of.dtype;
  e.shape = shape_of.shape;
  const size_t n = raw.size() / dtype_size(e.dtype);
  sdk::visit_dtype(to_c(e.dtype), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, raw.data() + k * sizeof(T), sizeof(T));
      if (is_float(e.dtype)) {
        e.f.push_back(static_cast<double>(v));
      } else if constexpr (std::is_same_v<T, uint64_t>) {
        e.i.push_back(static_cast<int64_t>(v));
      } else {
        e.i.push_back(static_cast<int64_t>(v));
      }
    }
  });
  return e;
}

bool norm_scaled(const std::string& cls) { return cls == "reduce" || cls == "matmul" || cls == "norm"; }

int sort_axis(const Case& c) {
  const auto* p = static_cast<const wick_sort_params*>(c.params.get());
  return p != nullptr ? p->axis : 0;
}

// Compares every output; the first failing one decides the result.
void check_outputs(const ExecContext& ctx, const Case& c, const std::vector<Expected>& want,
                   const std::vector<Tensor>& outs, double factor, bool norm_scale, Result& r) {
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::vector<unsigned char> got = download(outs[k]);
    Comparison cmp;
    if (c.check == "sort_indices" && k == 1 && !c.inputs.empty()) {
      cmp = compare_sort_indices(c.inputs[0], sort_axis(c), want[0], got, want[1].dtype);
    } else {
      Bound b = ctx.tolerances->bound(c.tolerance, want[k].dtype, c.info.id, ctx.backend);
      b.rtol *= factor;
      b.atol *= factor;
      cmp = compare_output(want[k], got, b, c.reduction, norm_scale);
    }
    if (!cmp.ok) {
      r.status = "FAIL";
      r.message = (outs.size() > 1 ? "output " + std::to_string(k) + ": " : std::string()) + cmp.detail;
      r.error = cmp.error;
      r.threshold = cmp.threshold;
      r.worst_index = cmp.worst_index >= 0 ? index_string(cmp.worst_index, want[k].shape) : "";
      return;
    }
  }
  r.status = "PASS";
}

void run_test(const ExecContext& ctx, const Case& c, Result& r) {
  const std::vector<Tensor> ins = upload_all(c, ctx.device);
  if (ctx.mode == "support") {
    const std::vector<Tensor> outs = allocate_outputs(c, ctx.device);
    const wick_support s = query_op_direct(ctx.device, c.code, c.params.get(), ins, outs);
    // A plugin that fails while answering has a bug to fix, not an op to implement.
    r.status = s == WICK_SUPPORT_YES ? "SUPPORTED" : s == WICK_SUPPORT_ERROR ? "FAIL" : "UNSUPPORTED";
    r.message = s == WICK_SUPPORT_YES ? "" : std::string("plugin: ") + to_string(s);
    return;
  }
  const GuardedOutputs guarded = allocate_guarded_outputs(c, ctx.device);
  const DirectResult d = run_op_direct(ctx.device, c.code, c.params.get(), ins, guarded.outs);
  if (d.status == DirectResult::Status::Ran) {
    if (const std::string damage = canary_damage(guarded); !damage.empty()) {
      r.status = "FAIL";
      r.message = damage;
      return;
    }
  }
  if (d.status == DirectResult::Status::Unsupported) {
    r.status = d.support == WICK_SUPPORT_ERROR ? "FAIL" : "UNSUPPORTED";
    r.message = "plugin: " + d.message;
    return;
  }
  if (d.status == DirectResult::Status::Failed) {
    r.status = "FAIL";
    r.message = "op_execute failed: " + d.message;
    return;
  }
  if (c.info.source == "golden") {
    check_outputs(ctx, c, c.outputs, guarded.outs, 1, false, r);
    return;
  }
  // diff: the same inputs on the reference device.
  if (!ctx.reference) {
    r.status = "SKIP";
    r.message = "no reference device (" + ctx.reference_name + ") loaded";
    return;
  }
  const std::vector<Tensor> rins = upload_all(c, *ctx.reference);
  const std::vector<Tensor> routs = allocate_outputs(c, *ctx.reference);
  const DirectResult rd = run_op_direct(*ctx.reference, c.code, c.params.get(), rins, routs);
  if (rd.status != DirectResult::Status::Ran) {
    r.status = "SKIP";
    r.message = "reference " + ctx.reference_name + " cannot run it: " + rd.message;
    return;
  }
  std::vector<Expected> want;
  for (size_t k = 0; k < routs.size(); ++k) want.push_back(as_expected(c.outputs[k], download(routs[k])));
  check_outputs(ctx, c, want, guarded.outs, ctx.tolerances->differential_factor(),
                norm_scaled(c.tolerance), r);
}

void run_perf(const ExecContext& ctx, const Case& c, Result& r) {
  const std::vector<Tensor> ins = upload_all(c, ctx.device);
  const std::vector<Tensor> outs = allocate_outputs(c, ctx.device);
  DirectResult d = run_op_direct(ctx.device, c.code, c.params.get(), ins, outs);  // warm-up
  if (d.status != DirectResult::Status::Ran) {
    r.status = d.status == DirectResult::Status::Unsupported ? "UNSUPPORTED" : "FAIL";
    r.message = "plugin: " + d.message;
    return;
  }
  std::vector<double> times;
  const auto start = Clock::now();
  while (times.size() < 3 || (since(start) < 0.3 && times.size() < 50)) {
    const auto t0 = Clock::now();
    d = run_op_direct(ctx.device, c.code, c.params.get(), ins, outs);
    times.push_back(since(t0));
    if (d.status != DirectResult::Status::Ran) {
      r.status = "FAIL";
      r.message = "op_execute failed: " + d.message;
      return;
    }
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  double bytes = 0, out_elems = 0;
  for (const Tensor& t : ins) bytes += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
  for (const Tensor& t : outs) {
    bytes += static_cast<double>(t.numel()) * static_cast<double>(dtype_size(t.dtype()));
    out_elems += static_cast<double>(t.numel());
  }
  r.status = "PASS";
  r.perf = {{"median_s", median}, {"reps", times.size()}, {"gbps", bytes / median * 1e-9}};
  if (c.code == WICK_OP_MATMUL || c.code == WICK_OP_CONV || c.code == WICK_OP_ATTENTION)
    r.perf["gflops"] = 2.0 * static_cast<double>(c.reduction) * out_elems / median * 1e-9;
}

}  // namespace

CaseBuffers case_buffers(const Case& c) {
  CaseBuffers b;
  for (const Operand& o : c.inputs) {
    ++b.count;
    b.bytes += o.bytes.size();
  }
  for (const Expected& e : c.outputs) {
    ++b.count;
    b.bytes += static_cast<uint64_t>(guarded_bytes(e));
  }
  return b;
}

Tensor upload(const Operand& operand, const Device& device) {
  const Tensor base = Tensor::from_bytes(operand.bytes.data(), operand.bytes.size(), Shape{operand.storage},
                                         operand.dtype, device);
  return Tensor(base.storage(), operand.dtype, operand.shape, operand.strides, operand.offset);
}

std::vector<unsigned char> download(const Tensor& t) {
  std::vector<unsigned char> raw(static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
  t.copy_to_host(raw.data(), raw.size());
  return raw;
}

Result execute_case(const ExecContext& ctx, const std::string& id) {
  Result r;
  r.backend = ctx.backend;
  r.id = id;
  const auto t0 = Clock::now();
  try {
    if (id.rfind("onnx/", 0) == 0) {
      if (ctx.onnx == nullptr) throw Error("no ONNX node-test directory");
      r = run_onnx_case(ctx, *ctx.onnx, id);
    } else if (id.rfind("grad/", 0) == 0) {
      run_grad_case(ctx, id, r);
    } else {
      const Case c = ctx.golden->load(id, ctx.seed);
      r.source = c.info.source;
      r.op = c.info.op;
      r.dtype = c.info.dtype;
      if (ctx.mode == "perf") {
        run_perf(ctx, c, r);
      } else {
        run_test(ctx, c, r);
      }
    }
  } catch (const std::exception& e) {
    r.status = "FAIL";
    r.message = std::string("error: ") + e.what();
  }
  r.backend = ctx.backend;
  r.id = id;
  r.seconds = since(t0);
  return r;
}

}  // namespace wick::conformance
