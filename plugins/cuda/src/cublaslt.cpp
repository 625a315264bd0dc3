#include "cublaslt.hpp"

#include <cublasLt.h>

#include <wick/sdk/dtype.hpp>

#include <cstdint>
#include <vector>

namespace wick::cuda {

struct CublasLt::Api {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
};

std::unique_ptr<CublasLt> CublasLt::open(std::string& why) {
  auto lt = std::unique_ptr<CublasLt>(new CublasLt());
  lt->lib_ = DynLib::open({"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}, why);
  if (!lt->lib_) return nullptr;
  try {
    auto api = std::make_unique<Api>();
    const DynLib& l = lt->lib_;
    api->create = l.function<decltype(api->create)>("cublasLtCreate");
    api->destroy = l.function<decltype(api->destroy)>("cublasLtDestroy");
    api->desc_create = l.function<decltype(api->desc_create)>("cublasLtMatmulDescCreate");
    api->desc_destroy = l.function<decltype(api->desc_destroy)>("cublasLtMatmulDescDestroy");
    api->desc_set = l.function<decltype(api->desc_set)>("cublasLtMatmulDescSetAttribute");
    api->layout_create = l.function<decltype(api->layout_create)>("cublasLtMatrixLayoutCreate");
    api->layout_destroy = l.function<decltype(api->layout_destroy)>("cublasLtMatrixLayoutDestroy");
    api->layout_set = l.function<decltype(api->layout_set)>("cublasLtMatrixLayoutSetAttribute");
    api->pref_create = l.function<decltype(api->pref_create)>("cublasLtMatmulPreferenceCreate");
    api->pref_destroy = l.function<decltype(api->pref_destroy)>("cublasLtMatmulPreferenceDestroy");
    api->pref_set = l.function<decltype(api->pref_set)>("cublasLtMatmulPreferenceSetAttribute");
    api->heuristic = l.function<decltype(api->heuristic)>("cublasLtMatmulAlgoGetHeuristic");
    api->matmul = l.function<decltype(api->matmul)>("cublasLtMatmul");
    cublasLtHandle_t h = nullptr;
    if (api->create(&h) != CUBLAS_STATUS_SUCCESS) {
      why = "cublasLtCreate failed (" + l.path() + ")";
      return nullptr;
    }
    lt->handle_ = h;
    lt->api_ = std::move(api);
  } catch (const sdk::Error& e) {
    why = e.what();
    return nullptr;
  }
  return lt;
}

CublasLt::~CublasLt() {
  if (handle_ != nullptr && api_) api_->destroy(static_cast<cublasLtHandle_t>(handle_));
}

namespace {

// One operand as cuBLASLt sees it (column-major): rows x cols with leading dimension ld, whether
// it must be transposed, and its batch stride (elements).
struct Layout {
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, batch_stride = 0;
  bool transpose = false;
};

// The batch dims [0, r - 2) of d as one stride over `count` items (count 1: any), or false.
bool batch_stride(const wick_tensor_desc& d, int64_t& stride) {
  const int r = d.rank;
  stride = 0;
  int64_t expect = -1;  // the stride the next-outer dim must have
  for (int i = r - 3; i >= 0; --i) {
    if (d.shape[i] == 1) continue;
    if (expect < 0) {
      stride = d.strides[i];
    } else if (d.strides[i] != expect) {
      return false;
    }
    expect = d.strides[i] * d.shape[i];
  }
  return true;
}

// Row-major X [R, C] (strides sr, sc) stored for column-major use as the matrix `want_t` asks for:
// with sc == 1 the storage is X^T (C x R, ld sr); with sr == 1 it is X (R x C, ld sc). `as_t`: the
// caller needs X^T. False when neither stride is 1.
bool layout_of(const wick_tensor_desc& d, bool need_transposed, Layout& l) {
  const int r = d.rank;
  const int64_t rows = d.shape[r - 2], cols = d.shape[r - 1];
  const int64_t sr = d.strides[r - 2], sc = d.strides[r - 1];
  const bool row_major = sc == 1 || cols == 1;
  const bool col_major = sr == 1 || rows == 1;
  if (row_major && (sr >= cols || rows == 1)) {  // stored: X^T, cols x rows
    l.rows = static_cast<uint64_t>(cols);
    l.cols = static_cast<uint64_t>(rows);
    l.ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
    l.transpose = !need_transposed;
  } else if (col_major && (sc >= rows || cols == 1)) {  // stored: X, rows x cols
    l.rows = static_cast<uint64_t>(rows);
    l.cols = static_cast<uint64_t>(cols);
    l.ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
    l.transpose = need_transposed;
  } else {
    return false;
  }
  return batch_stride(d, l.batch_stride);
}

int alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int bytes = 1;
  while (bytes < 256 && a % static_cast<uintptr_t>(bytes * 2) == 0) bytes *= 2;
  return bytes;
}

// One matmul as cuBLASLt is asked for it: the element, scalar and compute types, the layouts of
// its first operand, second operand and output (B^T, A^T and C^T: see problem_of), the batch
// count, and where the three start.
struct Problem {
  cudaDataType_t type = CUDA_R_32F, scale = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  Layout first, second, result;
  int64_t batch = 1;
  const char* pa = nullptr;
  const char* pb = nullptr;
  char* pd = nullptr;
};

// The problem of op (a MATMUL on the device pointers out, a, b), or false when cuBLASLt cannot
// take it: a dtype it does not compute, an empty product, or layouts it cannot express.
bool problem_of(const wick_op_desc& op, void* out, const void* a, const void* b, bool allow_tf32,
                Problem& p) {
  const wick_tensor_desc &c = op.outputs[0], &x = op.inputs[0], &y = op.inputs[1];
  const int r = c.rank;
  switch (c.dtype) {
    case WICK_DTYPE_F32:
      p.type = CUDA_R_32F;
      p.compute = allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case WICK_DTYPE_F64: p.type = CUDA_R_64F; p.compute = CUBLAS_COMPUTE_64F; break;
    case WICK_DTYPE_F16: p.type = CUDA_R_16F; p.compute = CUBLAS_COMPUTE_32F; break;
    case WICK_DTYPE_BF16: p.type = CUDA_R_16BF; p.compute = CUBLAS_COMPUTE_32F; break;
    default: return false;
  }
  const int64_t m = c.shape[r - 2], n = c.shape[r - 1], k = x.shape[r - 1];
  if (m == 0 || n == 0 || k == 0) return false;  // the generated path fills zeros
  for (int i = 0; i < r - 2; ++i) p.batch *= c.shape[i];
  // Row-major C = A B is column-major C^T = B^T A^T: cuBLASLt's first operand holds B^T, its second
  // A^T, its output C^T (which must be stored row-major: unit column stride).
  if (!layout_of(y, true, p.first) || !layout_of(x, true, p.second) ||
      !layout_of(c, true, p.result) || p.result.transpose || p.batch > INT32_MAX)
    return false;
  p.pa = static_cast<const char*>(b) + y.byte_offset;
  p.pb = static_cast<const char*>(a) + x.byte_offset;
  p.pd = static_cast<char*>(out) + c.byte_offset;
  p.scale = c.dtype == WICK_DTYPE_F64 ? CUDA_R_64F : CUDA_R_32F;
  return true;
}

}  // namespace

bool CublasLt::matmul(const wick_op_desc& op, void* out, const void* a, const void* b,
                      bool allow_tf32, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream, const std::string& where) {
  Problem p;
  if (!problem_of(op, out, a, b, allow_tf32, p)) return false;
  const Api& api = *api_;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[3] = {nullptr, nullptr, nullptr};
  cublasLtMatmulPreference_t pref = nullptr;
  bool ok = api.desc_create(&desc, p.compute, p.scale) == CUBLAS_STATUS_SUCCESS;
  const cublasOperation_t ta = p.first.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.second.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  ok = ok && api.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) == CUBLAS_STATUS_SUCCESS;
  ok = ok && api.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) == CUBLAS_STATUS_SUCCESS;
  const Layout* ls[3] = {&p.first, &p.second, &p.result};
  const int32_t count = static_cast<int32_t>(p.batch);
  for (int i = 0; i < 3 && ok; ++i) {
    ok = api.layout_create(&layouts[i], p.type, ls[i]->rows, ls[i]->cols, ls[i]->ld) ==
             CUBLAS_STATUS_SUCCESS &&
         api.layout_set(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count) ==
             CUBLAS_STATUS_SUCCESS &&
         api.layout_set(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                        &ls[i]->batch_stride, sizeof ls[i]->batch_stride) == CUBLAS_STATUS_SUCCESS;
  }
  const uint64_t ws = workspace_bytes;
  const uint32_t align_a = static_cast<uint32_t>(alignment(p.pa)),
                 align_b = static_cast<uint32_t>(alignment(p.pb)),
                 align_d = static_cast<uint32_t>(alignment(p.pd));
  ok = ok && api.pref_create(&pref) == CUBLAS_STATUS_SUCCESS &&
       api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws) ==
           CUBLAS_STATUS_SUCCESS &&
       api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof align_a) ==
           CUBLAS_STATUS_SUCCESS &&
       api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof align_b) ==
           CUBLAS_STATUS_SUCCESS &&
       api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof align_d) ==
           CUBLAS_STATUS_SUCCESS &&
       api.pref_set(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof align_d) ==
           CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulHeuristicResult_t found{};
  int returned = 0;
  const auto h = static_cast<cublasLtHandle_t>(handle_);
  ok = ok && api.heuristic(h, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref, 1, &found,
                           &returned) == CUBLAS_STATUS_SUCCESS &&
       returned > 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  if (ok) {
    const float one_f = 1.0f, zero_f = 0.0f;
    const double one_d = 1.0, zero_d = 0.0;
    const void* alpha = p.scale == CUDA_R_64F ? static_cast<const void*>(&one_d) : &one_f;
    const void* beta = p.scale == CUDA_R_64F ? static_cast<const void*>(&zero_d) : &zero_f;
    status = api.matmul(h, desc, alpha, p.pa, layouts[0], p.pb, layouts[1], beta, p.pd, layouts[2],
                        p.pd, layouts[2], &found.algo, workspace, workspace_bytes, stream);
  }
  if (pref != nullptr) api.pref_destroy(pref);
  for (cublasLtMatrixLayout_t l : layouts)
    if (l != nullptr) api.layout_destroy(l);
  if (desc != nullptr) api.desc_destroy(desc);
  if (ok && status != CUBLAS_STATUS_SUCCESS)
    throw sdk::Error(WICK_STATUS_DEVICE_ERROR, "cublasLtMatmul failed with status " +
                                                   std::to_string(static_cast<int>(status)) +
                                                   " on " + where + " (" + lib_.path() + ")");
  return ok;
}

}  // namespace wick::cuda
