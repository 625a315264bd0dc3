// onednn.hpp — the cpu-onednn plugin's oneDNN state (engine, stream, a cache of prepared
// primitives) and the dense scratch operands the oneDNN paths pack strided or f16 data into.
#pragma once

#include "kernels.hpp"
#include "plan_cache.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace wick::cpu {

struct Context::Onednn {
  // plan_cache_bytes: the bound on the bytes every thread's plans hold together.
  Onednn(int threads, uint64_t plan_cache_bytes);

  const int threads;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // The primitive families the plugin hands to oneDNN.
  enum Family { kMatmul, kConv, kPooling, kSoftmax, kLayerNorm, kFamilies };
  // Whether this CPU's oneDNN has an optimised bf16 kernel for each family, probed once at start-up
  // with a tiny primitive (oneDNN 2.6 has bf16 kernels only from AVX-512 on; below it even their
  // creation fails). Where it has none, bf16 data take the f32 kernel (converted, computed, rounded
  // once on store) or the plugin's own loop: `supports` never promises what `execute` cannot run.
  std::array<bool, kFamilies> bf16{};
  // Whether oneDNN runs the family natively in dtype t (f32 always, bf16 where probed).
  bool runs(Family f, wick_dtype t) const {
    return t == WICK_DTYPE_F32 || (t == WICK_DTYPE_BF16 && bf16[static_cast<size_t>(f)]);
  }
  // The instruction set oneDNN dispatches to (after ONEDNN_MAX_CPU_ISA), e.g. "avx2", and whether
  // bf16 is native: for `wick devices` and the benchmark tables.
  std::string isa_note() const;
  // The device is concurrent (WICK_DEVICE_CAP_CONCURRENT): several host threads may run ops at
  // once. oneDNN's primitives may be created and executed in parallel but must run on the thread
  // that created them (its shared scratchpad, DNNL_ENABLE_CONCURRENT_EXEC=OFF), so each calling
  // thread has its own stream and its own plans (stream(), plan()); nothing here is shared but
  // the count of the bytes all plans hold (an atomic).

  // oneDNN (OpenMP build) runs on omp_get_max_threads() of the calling thread, a per-thread
  // setting: a host thread other than the one that initialised the plugin would get the default
  // (every core). Call before creating or executing a primitive.
  void use_configured_threads() const;
  // Runs f on one thread (restoring the configured count after): for small reorders, whose
  // OpenMP region costs more than their work, and on a busy machine may wait for a descheduled
  // thread for milliseconds.
  template <class F>
  void single_threaded(F&& f) const {
    set_threads(1);
    f();
    set_threads(threads);
  }

  // The calling thread's stream on this engine.
  dnnl::stream& stream() { return local().stream; }

  // A prepared plan (primitives, descriptors, reorders) per key, the calling thread's own;
  // creating a primitive costs 0.3-1.2 ms, executing a cached one about a microsecond. Keys start
  // with the op's name. Every thread's plans together are bounded in bytes (PlanCache: this
  // thread's least recently used go first); the reference is valid until the calling thread's next
  // plan() that makes a plan.
  template <class Plan, class Make>
  Plan& plan(const std::string& key, Make&& make) {
    PlanCache& plans = local().plans;
    if (void* hit = plans.find(key)) return *static_cast<Plan*>(hit);
    // Measured on a miss only: a hit costs a hash lookup, as before the bound.
    static std::atomic<uint64_t> typical_bytes{0};  // of a Plan, over every plugin and thread
    PlanMeter meter(typical_bytes);
    std::shared_ptr<void> made = std::make_shared<Plan>(make());
    const uint64_t bytes = meter.bytes();
    return *static_cast<Plan*>(plans.insert(key, std::move(made), bytes));
  }
  // Whether every thread's plans and `bytes` more stay within half the bound: large plans that
  // are only an optimisation (prepacked weights) are made only then, so that weights larger than
  // the cache never evict one another on every call, each repacked in turn.
  bool plans_have_room(uint64_t bytes) const {
    return plan_budget_->used.load(std::memory_order_relaxed) + bytes <= plan_budget_->limit / 2;
  }
  // Drops the calling thread's plans whose key starts with prefix and for which pred(plan) holds.
  template <class Plan, class Pred>
  void drop_plans(std::string_view prefix, Pred&& pred) {
    local().plans.erase_if([&](std::string_view key, void* plan) {
      return key.substr(0, prefix.size()) == prefix && pred(*static_cast<const Plan*>(plan));
    });
  }
  // The calling thread's plan under key, or nullptr; valid as plan()'s reference is.
  template <class Plan>
  Plan* find_plan(std::string_view key) {
    return static_cast<Plan*>(local().plans.find(key));
  }

 private:
  // One thread's oneDNN state for one Onednn (told apart by `id_`, never reused, so a thread
  // that outlives a shut-down plugin never runs the old engine's plans on the new one).
  struct Local {
    Local(const dnnl::engine& e, std::shared_ptr<PlanBudget> budget)
        : stream(e), plans(std::move(budget)) {}
    dnnl::stream stream;
    PlanCache plans;
  };
  Local& local();
  static void set_threads(int n);
  const uint64_t id_;
  const std::shared_ptr<PlanBudget> plan_budget_;
};

// Cache keys: raw bytes of the values, cheaper than text.
inline void key_add(std::string& key, int64_t v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}
inline void key_add(std::string& key, const wick_tensor_desc& d) {
  key_add(key, d.dtype);
  key_add(key, d.rank);
  for (int i = 0; i < d.rank; ++i) {
    key_add(key, d.shape[i]);
    key_add(key, d.strides[i]);
  }
}

// ---- data derived from a weight, kept while the weight is unchanged -------------------------
//
// A weight used again unchanged (same buffer, view and write generation) is reordered once into
// the layout a primitive prefers, and later calls run on that copy (matmul: 2x at 64x768 by
// 768x3072; convolution: no weight reorder per call). The copy is checked against the buffer's
// write generation (HostBuffer::generation, bumped by every write the plugin makes) on every call
// and refreshed when it differs, so an in-place write is never missed; it lives in the thread's
// plan cache, bounded in bytes with every plan. A weight seen once is only noted (WeightSeen):
// one-shot calls, and weights written between calls (training), never pay the copy.

struct WeightSeen {
  uint64_t generation = 0;
};

// The base of a plan holding data derived from a buffer's contents.
struct DerivedFromWeight {
  uint64_t generation = 0;                   // the buffer's when derived; 0: derive again
  std::shared_ptr<std::atomic<bool>> alive;  // the buffer not freed yet (HostBuffer::derived_alive)
};

// The calling thread's `Derived` plan for the weight in `buffer` (write generation `gen`, non-zero),
// made by make() when the weight is seen a second time unchanged and the plans have room for
// `bytes` more; nullptr when the caller must run without it. key(prefix) gives the plan's key
// under a prefix (`prefix` for the plan, `seen_prefix` for the first sighting's note). The caller
// refills the derived data when the plan's generation differs from `gen`, then sets it.
// Neither prefix may begin the other or any other plan's key: plans under `prefix` are dropped
// as `Derived`.
template <class Derived, class Key, class Make>
Derived* derived_from_weight(Context::Onednn& dnn, const wick_buffer* buffer, uint64_t gen,
                             const char* prefix, const char* seen_prefix, Key&& key,
                             uint64_t bytes, Make&& make) {
  Derived* p = dnn.find_plan<Derived>(key(prefix));
  if (p == nullptr) {
    const std::string& seen_key = key(seen_prefix);
    WeightSeen* seen = dnn.find_plan<WeightSeen>(seen_key);
    if (seen == nullptr) {
      dnn.plan<WeightSeen>(seen_key, [&] { return WeightSeen{gen}; });
      return nullptr;
    }
    if (seen->generation != gen) {  // written since it was seen: not a constant yet
      seen->generation = gen;
      return nullptr;
    }
    if (!dnn.plans_have_room(bytes)) {
      // The copies of freed weights go first (Google Benchmark's runs, a model reloaded).
      dnn.drop_plans<Derived>(prefix, [](const Derived& w) {
        return !w.alive->load(std::memory_order_acquire);
      });
      if (!dnn.plans_have_room(bytes)) return nullptr;
    }
    const std::string plan_key = key(prefix);
    p = &dnn.plan<Derived>(plan_key, [&] {
      Derived made = make();
      made.generation = 0;  // filled by the caller
      made.alive = alive_flag(buffer);
      return made;
    });
  }
  if (!p->alive->load(std::memory_order_acquire)) {
    // The copy of a freed buffer, and the weight a new one at its address: the same layout, redone.
    p->alive = alive_flag(buffer);
    p->generation = 0;
  }
  return p;
}

// A buffer's write generation: 0 for memory that is not a buffer of buffer_allocate (a kernel's
// scratch) and for a buffer whose address the host has (HostBuffer::host_visible), which never
// have derived data.
inline uint64_t write_generation(const wick_buffer* buffer) {
  const auto* b = static_cast<const HostBuffer*>(buffer);
  if (b->host_visible.load(std::memory_order_acquire)) return 0;
  return b->generation.load(std::memory_order_acquire);
}

inline dnnl::memory::data_type dnnl_type(wick_dtype t) {
  switch (t) {
    case WICK_DTYPE_F32: return dnnl::memory::data_type::f32;
    case WICK_DTYPE_BF16: return dnnl::memory::data_type::bf16;
    case WICK_DTYPE_F16: return dnnl::memory::data_type::f16;
    default: return dnnl::memory::data_type::undef;
  }
}

// The oneDNN view of a strided operand (element strides, which must be non-negative).
inline dnnl::memory::desc dnnl_desc(const wick_tensor_desc& d) {
  dnnl::memory::dims dims(d.shape, d.shape + d.rank), strides(d.strides, d.strides + d.rank);
  return dnnl::memory::desc(dims, dnnl_type(d.dtype), strides);
}

// Whether oneDNN offers only its reference implementation (slow loops) for a primitive.
inline bool is_reference(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}
// Whether it is JIT code (not a reference or "simple_*" C++ loop).
inline bool is_jit(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("jit", 0) == 0;
}

// Runs a cached plan with one source and one destination (softmax, pooling); false when the plan
// holds no primitive (oneDNN offered only its reference loop) and the caller must use its own.
template <class Plan>
bool run_src_dst(Context::Onednn& dnn, const Plan& plan, void* src_data, void* dst_data) {
  if (!plan.primitive) return false;
  dnnl::memory src(plan.src, dnn.engine, src_data), dst(plan.dst, dnn.engine, dst_data);
  plan.primitive->execute(dnn.stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
  dnn.stream().wait();
  return true;
}

// Whether oneDNN can read the operand in place: no negative strides, no broadcast (stride 0).
inline bool plain_strides(const wick_tensor_desc& d) {
  for (int i = 0; i < d.rank; ++i)
    if (d.shape[i] > 1 && d.strides[i] <= 0) return false;
  return true;
}

// Whether the operand is dense in C order (extent-1 axes may have any stride).
inline bool is_dense(const wick_tensor_desc& d) {
  return sdk::is_c_dense(d.shape, d.strides, d.rank);
}

// Whether an operand's elements fill one span of memory from its data pointer in some axis order
// (C order, channels-last, any permutation; no gaps, no overlap, no negative strides).
inline bool fills_one_span(const wick_tensor_desc& d) {
  std::vector<std::pair<int64_t, int64_t>> axes;  // (stride, extent) of the axes longer than 1
  for (int i = 0; i < d.rank; ++i)
    if (d.shape[i] > 1) axes.emplace_back(d.strides[i], d.shape[i]);
  std::sort(axes.begin(), axes.end());
  int64_t expected = 1;
  for (const auto& [stride, extent] : axes) {
    if (stride != expected) return false;
    expected *= extent;
  }
  return true;
}

// A dense, C-ordered operand in plugin-owned memory with a descriptor that kernels accept like any
// other. Not copyable: the descriptor points into the object.
struct Dense {
  Dense() = default;
  Dense(const Dense&) = delete;
  Dense& operator=(const Dense&) = delete;

  // 64-byte aligned, as the plugin's buffers are: oneDNN's kernels run slower on unaligned data.
  struct Free {
    void operator()(unsigned char* p) const { ::operator delete(p, std::align_val_t(64)); }
  };
  std::unique_ptr<unsigned char, Free> bytes;
  std::vector<int64_t> shape, strides;
  HostBuffer buffer;
  wick_tensor_desc desc{};

  // Shapes the buffer like `like` in dtype `t`; contents undefined.
  void allocate(const wick_tensor_desc& like, wick_dtype t);
  // allocate(), then every element of `src` converted to `t` (src's dtype and t are floats, or
  // equal).
  void load(const wick_tensor_desc& src, wick_dtype t);
  // Writes every element, converted to dst's dtype, into the strided `dst` of the same shape.
  void store(const wick_tensor_desc& dst) const;
};

// Whether any element of an f32 or bf16 operand is NaN or infinite (all exponent bits set): the
// oneDNN primitives that do not keep docs/ops.md's NaN rules run only on finite data.
bool has_non_finite(const Context& ctx, const wick_tensor_desc& d);

// max(0, x) in place on an f32 operand, NaN kept (oneDNN's ReLU gives 0 for NaN).
void relu_keeping_nan_f32(const Context& ctx, const wick_tensor_desc& d);

// Copies src into dst elementwise with cast_value (same shape; float dtypes, or equal dtypes).
void convert_strided(const wick_tensor_desc& src, const wick_tensor_desc& dst);

}  // namespace wick::cpu
