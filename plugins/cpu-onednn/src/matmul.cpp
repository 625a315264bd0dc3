// Matmul: f32 through oneDNN (cached primitives, strided operands, batch broadcasting); every other
// dtype through a reference loop that accumulates in f64 / 64-bit integers.
#include "kernels.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace wick::cpu {

struct Context::Onednn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  // Creating a primitive costs 0.3-1.2 ms, executing a cached one about a microsecond.
  std::unordered_map<std::string, dnnl::matmul> matmuls;
};

Context::Onednn* create_onednn(int /*threads*/) { return new Context::Onednn(); }
void destroy_onednn(Context::Onednn* onednn) { delete onednn; }

namespace {

// A matrix operand seen as [batch, rows, cols] with one stride per dim.
struct Operand3 {
  int64_t batch, rows, cols;
  int64_t s_batch, s_rows, s_cols;
};

// Collapses the leading batch dims of d into one, if the layout allows it.
std::optional<Operand3> as_3d(const wick_tensor_desc& d) {
  const int nb = d.rank - 2;
  Operand3 o{1, d.shape[nb], d.shape[nb + 1], 0, d.strides[nb], d.strides[nb + 1]};
  if (o.s_rows <= 0 || o.s_cols <= 0) return std::nullopt;
  bool any_nonzero = false, any_zero = false;
  int64_t expected = -1;
  for (int i = nb - 1; i >= 0; --i) {
    o.batch *= d.shape[i];
    if (d.shape[i] == 1) continue;
    if (d.strides[i] == 0) {
      any_zero = true;
      continue;
    }
    any_nonzero = true;
    if (expected >= 0 && d.strides[i] != expected) return std::nullopt;
    if (expected < 0) o.s_batch = d.strides[i];
    expected = d.strides[i] * d.shape[i];
  }
  if (any_zero && any_nonzero) return std::nullopt;
  if (any_zero) o.batch = 1;  // broadcast over the whole batch
  if (o.batch == 1) o.s_batch = o.rows * o.cols;
  return o;
}

// Packs a strided operand into a dense buffer, returning a descriptor of it.
struct Packed {
  std::vector<float> data;
  std::vector<int64_t> strides;
  HostBuffer buffer;
  wick_tensor_desc desc;
};

void pack(const wick_tensor_desc& d, Packed& p) {
  const int64_t n = numel_of(d);
  p.data.resize(static_cast<size_t>(n));
  p.strides.resize(static_cast<size_t>(d.rank));
  int64_t s = 1;
  for (int i = d.rank; i-- > 0;) {
    p.strides[static_cast<size_t>(i)] = s;
    s *= d.shape[i];
  }
  const float* src = data_of<const float>(d);
  sdk::for_each_row<2>(d.shape, d.rank, {p.strides.data(), d.strides}, [&](const sdk::Row<2>& r) {
    for (int64_t i = 0; i < r.length; ++i) p.data[static_cast<size_t>(r.offset[0] + i * r.stride[0])] = src[r.offset[1] + i * r.stride[1]];
  });
  p.buffer.data = reinterpret_cast<unsigned char*>(p.data.data());
  p.buffer.size = static_cast<uint64_t>(n) * sizeof(float);
  p.desc = d;
  p.desc.buffer = &p.buffer;
  p.desc.byte_offset = 0;
  p.desc.strides = p.strides.data();
}

dnnl::memory::desc md(const Operand3& o) {
  return dnnl::memory::desc({o.batch, o.rows, o.cols}, dnnl::memory::data_type::f32,
                            {o.s_batch, o.s_rows, o.s_cols});
}

std::string key_of(const Operand3& a, const Operand3& b, const Operand3& c) {
  std::string k;
  for (const Operand3* o : {&a, &b, &c}) {
    for (int64_t v : {o->batch, o->rows, o->cols, o->s_batch, o->s_rows, o->s_cols}) k += std::to_string(v) + ",";
  }
  return k;
}

void matmul_f32(Context& ctx, const wick_tensor_desc& a_in, const wick_tensor_desc& b_in,
                const wick_tensor_desc& out) {
  Packed pa, pb, pc;
  std::optional<Operand3> a = as_3d(a_in), b = as_3d(b_in), c = as_3d(out);
  const wick_tensor_desc* da = &a_in;
  const wick_tensor_desc* db = &b_in;
  const wick_tensor_desc* dc = &out;
  if (!a) {
    pack(a_in, pa);
    da = &pa.desc;
    a = as_3d(*da);
  }
  if (!b) {
    pack(b_in, pb);
    db = &pb.desc;
    b = as_3d(*db);
  }
  const bool pack_out = !c;
  if (pack_out) {
    pc.data.resize(static_cast<size_t>(numel_of(out)));
    pack(out, pc);  // sets up a dense descriptor; its contents are overwritten
    dc = &pc.desc;
    c = as_3d(*dc);
  }
  Context::Onednn& dnn = *ctx.onednn;
  std::lock_guard lock(dnn.mutex);
  const std::string key = key_of(*a, *b, *c);
  auto it = dnn.matmuls.find(key);
  if (it == dnn.matmuls.end()) {
    dnnl::matmul::desc desc(md(*a), md(*b), md(*c));
    it = dnn.matmuls.emplace(key, dnnl::matmul(dnnl::matmul::primitive_desc(desc, dnn.engine))).first;
  }
  dnnl::memory ma(md(*a), dnn.engine, data_of<float>(*da));
  dnnl::memory mb(md(*b), dnn.engine, data_of<float>(*db));
  dnnl::memory mc(md(*c), dnn.engine, data_of<float>(*dc));
  it->second.execute(dnn.stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
  dnn.stream.wait();
  if (pack_out) {
    float* dst = data_of<float>(out);
    sdk::for_each_row<2>(out.shape, out.rank, {out.strides, pc.strides.data()}, [&](const sdk::Row<2>& r) {
      for (int64_t i = 0; i < r.length; ++i) dst[r.offset[0] + i * r.stride[0]] = pc.data[static_cast<size_t>(r.offset[1] + i * r.stride[1])];
    });
  }
}

template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

template <class T>
void matmul_reference(const wick_tensor_desc& a, const wick_tensor_desc& b, const wick_tensor_desc& out) {
  const int nb = out.rank - 2;
  const int64_t m = out.shape[nb], n = out.shape[nb + 1], k = a.shape[nb + 1];
  const int64_t am = a.strides[nb], ak = a.strides[nb + 1];
  const int64_t bk = b.strides[nb], bn = b.strides[nb + 1];
  const int64_t om = out.strides[nb], on = out.strides[nb + 1];
  const T* pa = data_of<const T>(a);
  const T* pb = data_of<const T>(b);
  T* po = data_of<T>(out);
  // One call per batch element: the batch dims are walked as rows of length 1 or more.
  sdk::for_each_row<3>(out.shape, nb, {out.strides, a.strides, b.strides}, [&](const sdk::Row<3>& r) {
    for (int64_t e = 0; e < r.length; ++e) {
      const T* x = pa + r.offset[1] + e * r.stride[1];
      const T* y = pb + r.offset[2] + e * r.stride[2];
      T* z = po + r.offset[0] + e * r.stride[0];
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          Acc<T> acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<Acc<T>>(x[i * am + p * ak]) * static_cast<Acc<T>>(y[p * bk + j * bn]);
          z[i * om + j * on] = cast_value<T>(acc);
        }
      }
    }
  });
}

wick_support matmul_supports(const wick_op_desc& op) {
  if (op.num_inputs != 2 || op.num_outputs != 1) return WICK_SUPPORT_NO_PARAMS;
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &c = op.outputs[0];
  if (a.dtype != c.dtype || b.dtype != c.dtype) return WICK_SUPPORT_NO_PARAMS;
  if (a.rank < 2 || a.rank != b.rank || a.rank != c.rank) return WICK_SUPPORT_NO_PARAMS;
  const int nb = c.rank - 2;
  for (int i = 0; i < nb; ++i)
    if (a.shape[i] != c.shape[i] || b.shape[i] != c.shape[i]) return WICK_SUPPORT_NO_PARAMS;
  if (a.shape[nb] != c.shape[nb] || b.shape[nb + 1] != c.shape[nb + 1] || a.shape[nb + 1] != b.shape[nb])
    return WICK_SUPPORT_NO_PARAMS;
  return sdk::dtype_size(c.dtype) != 0 ? WICK_SUPPORT_YES : WICK_SUPPORT_NO_DTYPE;
}

void matmul_execute(Context& ctx, const wick_op_desc& op) {
  const wick_tensor_desc &a = op.inputs[0], &b = op.inputs[1], &c = op.outputs[0];
  if (numel_of(c) == 0) return;
  if (a.shape[a.rank - 1] == 0) {  // empty inner dimension: the product is all zeros
    sdk::visit_dtype(c.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = data_of<T>(c);
      sdk::for_each_row<1>(c.shape, c.rank, {c.strides}, [&](const sdk::Row<1>& r) {
        for (int64_t i = 0; i < r.length; ++i) dst[r.offset[0] + i * r.stride[0]] = cast_value<T>(0);
      });
    });
    return;
  }
  if (c.dtype == WICK_DTYPE_F32) return matmul_f32(ctx, a, b, c);
  sdk::visit_dtype(c.dtype, [&](auto tag) { matmul_reference<typename decltype(tag)::type>(a, b, c); });
}

}  // namespace

void register_matmul(KernelTable& table) { table[WICK_OP_MATMUL] = {&matmul_supports, &matmul_execute}; }

}  // namespace wick::cpu
