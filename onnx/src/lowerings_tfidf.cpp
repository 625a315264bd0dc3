// lowerings_tfidf.cpp — TfIdfVectorizer on integer input. The host builds, from the
// attributes and the input's length only, the table of candidate n-gram positions (every start,
// and every skip for n >= 2) and a one-hot map from pool n-grams to output columns; the device
// gathers the candidates' tokens, compares them with the pool, counts the matches and maps them
// to the columns (a matmul), and applies the mode's weights.
#include "lowerings.hpp"

#include <algorithm>

namespace wick::onnx {

void OnnxLowering::Impl::lower_tfidf_vectorizer() {
  Tensor x = in(0);
  if (is_float(x.dtype()) || x.dtype() == DType::Bool)
    throw NotImportable("TfIdfVectorizer of " + std::string(dtype_name(x.dtype())) + " (strings and integers only)");
  if (attr("pool_strings") != nullptr) throw NotImportable("TfIdfVectorizer with a string pool");
  if (x.rank() != 1 && x.rank() != 2) throw NotImportable("TfIdfVectorizer of rank " + std::to_string(x.rank()));
  const bool batched = x.rank() == 2;
  if (!batched) x = x.unsqueeze(0);
  const int64_t rows = x.dim(0), len = x.dim(1);
  const int64_t min_n = attr_i("min_gram_length", 1), max_n = attr_i("max_gram_length", 1),
                max_skip = attr_i("max_skip_count", 0);
  const std::string mode = attr_choice("mode", "TF", {"TF", "IDF", "TFIDF"});
  const std::vector<int64_t> counts = attr_ints("ngram_counts").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexes = attr_ints("ngram_indexes").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> pool = attr_ints("pool_int64s").value_or(std::vector<int64_t>{});
  const onnx::AttributeProto* w_attr = attr("weights");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") throw NotImportable("TfIdfVectorizer mode " + mode);
  if (min_n < 1 || max_n < min_n || max_n > static_cast<int64_t>(counts.size()) || max_skip < 0 ||
      indexes.empty())
    throw NotImportable("malformed TfIdfVectorizer: gram lengths, skips or ngram_counts out of range");
  if (*std::min_element(indexes.begin(), indexes.end()) < 0 ||
      *std::max_element(indexes.begin(), indexes.end()) >= (int64_t{1} << 24))
    throw NotImportable("malformed TfIdfVectorizer: ngram_indexes out of range");
  const int64_t columns = *std::max_element(indexes.begin(), indexes.end()) + 1;
  // The host lists every candidate position: at most (skips + 1) * len starts of max_n tokens.
  (void)host_count(static_cast<double>(checked_mul(checked_mul(std::min(max_skip, len) + 1, len), max_n)),
                   "TfIdfVectorizer's candidate positions");
  if (w_attr != nullptr && w_attr->floats.size() != indexes.size())
    throw NotImportable("malformed TfIdfVectorizer: weights and ngram_indexes differ in length");

  Tensor total = filled({rows, columns}, DType::F32, 0);
  size_t gram = 0;  // the pool n-gram's number, which ngram_indexes maps to a column
  for (int64_t g_len = 1; g_len <= static_cast<int64_t>(counts.size()); ++g_len) {
    const int64_t start = counts[static_cast<size_t>(g_len - 1)];
    const int64_t end = g_len < static_cast<int64_t>(counts.size()) ? counts[static_cast<size_t>(g_len)]
                                                                     : static_cast<int64_t>(pool.size());
    if (start < 0 || end < start || end > static_cast<int64_t>(pool.size()) || (end - start) % g_len != 0)
      throw NotImportable("malformed TfIdfVectorizer: ngram_counts do not split the pool");
    const int64_t m = (end - start) / g_len;
    const size_t first = gram;
    gram += static_cast<size_t>(m);
    if (gram > indexes.size()) throw NotImportable("malformed TfIdfVectorizer: fewer ngram_indexes than n-grams");
    if (g_len < min_n || g_len > max_n || m == 0) continue;
    // Candidate positions: start i, stride skip + 1 (unigrams once, whatever the skip).
    std::vector<int64_t> pos;
    for (int64_t skip = 0; skip <= (g_len == 1 ? 0 : std::min(max_skip, len)); ++skip) {
      for (int64_t i = 0; i + (g_len - 1) * (skip + 1) < len; ++i)
        for (int64_t k = 0; k < g_len; ++k) pos.push_back(i + k * (skip + 1));
    }
    if (pos.empty()) continue;
    const int64_t cands = static_cast<int64_t>(pos.size()) / g_len;
    Tensor tokens = Tensor::empty({rows, static_cast<int64_t>(pos.size())}, x.dtype(), dev());
    const wick_axis_params p{sizeof(wick_axis_params), 1, 0};
    exec(WICK_OP_INDEX_SELECT, &p, {x, upload_i64(pos, {static_cast<int64_t>(pos.size())})}, {tokens});
    std::vector<double> grams(pool.begin() + start, pool.begin() + end);
    const Tensor pool_t = upload_values(grams, {1, 1, m, g_len}, x.dtype());
    // [rows, cands, 1, n] == [1, 1, m, n]: a candidate matches a pool n-gram when all n agree.
    const Tensor eq = op2(WICK_OP_EQ, tokens.reshape({rows, cands, 1, g_len}), pool_t, DType::Bool);
    const Tensor agree = reduce(WICK_OP_REDUCE_SUM, cast(eq, DType::F32), {3}, false);
    const Tensor match = cast(op2(WICK_OP_EQ, agree, scalar(static_cast<double>(g_len), DType::F32), DType::Bool), DType::F32);
    const Tensor found = reduce(WICK_OP_REDUCE_SUM, match, {1}, false);  // [rows, m]
    std::vector<double> onehot(
        static_cast<size_t>(host_count(static_cast<double>(checked_mul(m, columns)), "TfIdfVectorizer's n-gram map")), 0.0);
    for (int64_t j = 0; j < m; ++j)
      onehot[static_cast<size_t>(j * columns + indexes[first + static_cast<size_t>(j)])] = 1.0;
    total = op2(WICK_OP_ADD, total, matmul(found, upload_values(onehot, {m, columns}, DType::F32)));
  }
  if (mode != "TF") {
    // Per-column weights (1 without the attribute); IDF counts presence, not occurrences.
    std::vector<double> w(static_cast<size_t>(columns), 1.0);
    if (w_attr != nullptr)
      for (size_t j = 0; j < indexes.size(); ++j) w[static_cast<size_t>(indexes[j])] = w_attr->floats[j];
    const Tensor weights = upload_values(w, {1, columns}, DType::F32);
    if (mode == "IDF") total = cast(op2(WICK_OP_GT, total, scalar(0, DType::F32), DType::Bool), DType::F32);
    total = op2(WICK_OP_MUL, total, weights);
  }
  out(0, batched ? total : total.reshape({columns}));
}

}  // namespace wick::onnx
