// lowerings.cpp — the table of lowerings that OnnxLowering::run looks a node's op type up in: one
// row per ONNX op type and opset range, and the lookup that checks the rows once. The lowerings
// themselves are in lowerings_*.cpp, one file per op family (lowerings.hpp lists them by file).
#include "lowerings.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace wick::onnx {

// --- The table of lowerings: one row per ONNX op type and opset range (first, last served) ---
//
// Each row was checked against ONNX 1.23.2's operator schemas (opsets up to kChecked = 28). A row
// reaches kChecked where the op's versions after its first only widened the types (bfloat16,
// float8, 4-bit: those Wick lacks are refused as dtypes) or added attributes or enumerated values
// that the importer checks (attributes.cpp: an attribute the lowering does not read must hold its
// default; attr_choice refuses a value it does not implement). A row closes earlier, with a
// comment, where a later version changed the semantics without such an attribute.

const OnnxLowering::Impl::Row OnnxLowering::Impl::kLowerings[] = {
    // Direct maps: unary, binary, comparisons, logic
    {"Abs", 1, kChecked, &Impl::lower_unary<WICK_OP_ABS>},
    {"Neg", 1, kChecked, &Impl::lower_unary<WICK_OP_NEG>},
    {"Exp", 1, kChecked, &Impl::lower_unary<WICK_OP_EXP>},
    {"Log", 1, kChecked, &Impl::lower_unary<WICK_OP_LOG>},
    {"Sqrt", 1, kChecked, &Impl::lower_unary<WICK_OP_SQRT>},
    {"Reciprocal", 1, kChecked, &Impl::lower_unary<WICK_OP_RECIP>},
    {"Tanh", 1, kChecked, &Impl::lower_unary<WICK_OP_TANH>},
    {"Sigmoid", 1, kChecked, &Impl::lower_unary<WICK_OP_SIGMOID>},
    {"Sin", 1, kChecked, &Impl::lower_unary<WICK_OP_SIN>},
    {"Cos", 1, kChecked, &Impl::lower_unary<WICK_OP_COS>},
    {"Tan", 1, kChecked, &Impl::lower_unary<WICK_OP_TAN>},
    {"Asin", 1, kChecked, &Impl::lower_unary<WICK_OP_ASIN>},
    {"Acos", 1, kChecked, &Impl::lower_unary<WICK_OP_ACOS>},
    {"Atan", 1, kChecked, &Impl::lower_unary<WICK_OP_ATAN>},
    {"Sinh", 1, kChecked, &Impl::lower_unary<WICK_OP_SINH>},
    {"Cosh", 1, kChecked, &Impl::lower_unary<WICK_OP_COSH>},
    {"Asinh", 1, kChecked, &Impl::lower_unary<WICK_OP_ASINH>},
    {"Acosh", 1, kChecked, &Impl::lower_unary<WICK_OP_ACOSH>},
    {"Atanh", 1, kChecked, &Impl::lower_unary<WICK_OP_ATANH>},
    {"Erf", 1, kChecked, &Impl::lower_unary<WICK_OP_ERF>},
    {"Floor", 1, kChecked, &Impl::lower_unary<WICK_OP_FLOOR>},
    {"Ceil", 1, kChecked, &Impl::lower_unary<WICK_OP_CEIL>},
    {"Relu", 1, kChecked, &Impl::lower_unary<WICK_OP_RELU>},
    {"Sign", 1, kChecked, &Impl::lower_unary<WICK_OP_SIGN>},
    {"Not", 1, kChecked, &Impl::lower_unary<WICK_OP_LOGICAL_NOT>},
    {"Add", 1, kChecked, &Impl::lower_binary<WICK_OP_ADD>},
    {"Sub", 1, kChecked, &Impl::lower_binary<WICK_OP_SUB>},
    {"Mul", 1, kChecked, &Impl::lower_binary<WICK_OP_MUL>},
    {"Div", 1, kChecked, &Impl::lower_binary<WICK_OP_DIV>},
    {"And", 1, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_AND>},
    {"Or", 1, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_OR>},
    {"Xor", 1, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_XOR>},
    {"Equal", 1, kChecked, &Impl::lower_compare<WICK_OP_EQ>},
    {"Less", 1, kChecked, &Impl::lower_compare<WICK_OP_LT>},
    {"Greater", 1, kChecked, &Impl::lower_compare<WICK_OP_GT>},
    {"LessOrEqual", 1, kChecked, &Impl::lower_compare<WICK_OP_LE>},
    {"GreaterOrEqual", 1, kChecked, &Impl::lower_compare<WICK_OP_GE>},
    {"Max", 1, kChecked, &Impl::lower_variadic<WICK_OP_MAXIMUM>},
    {"Min", 1, kChecked, &Impl::lower_variadic<WICK_OP_MINIMUM>},
    {"Sum", 1, kChecked, &Impl::lower_variadic<WICK_OP_ADD>},
    {"Mean", 1, kChecked, &Impl::lower_mean},
    {"Identity", 1, kChecked, &Impl::lower_identity},
    {"IsNaN", 1, kChecked, &Impl::lower_is_nan},
    {"IsInf", 1, kChecked, &Impl::lower_is_inf},
    {"Round", 1, kChecked, &Impl::lower_round},
    {"Pow", 1, kChecked, &Impl::lower_pow},
    // BitShift 28 adds signed types (arithmetic right shift) and defines out-of-range counts (0,
    // or -1 shifting a negative value right): Wick's shl/shr as docs/ops.md gives them.
    {"BitShift", 1, kChecked, &Impl::lower_bit_shift},
    {"Mod", 1, kChecked, &Impl::lower_mod},
    {"Where", 1, kChecked, &Impl::lower_where},
    // Activations
    {"Elu", 1, kChecked, &Impl::lower_elu},
    {"Selu", 1, kChecked, &Impl::lower_selu},
    {"Celu", 1, kChecked, &Impl::lower_celu},
    {"LeakyRelu", 1, kChecked, &Impl::lower_leaky_relu},
    {"PRelu", 1, 6, &Impl::lower_prelu_per_channel},
    {"PRelu", 7, kChecked, &Impl::lower_prelu},
    {"ThresholdedRelu", 1, kChecked, &Impl::lower_thresholded_relu},
    {"HardSigmoid", 1, kChecked, &Impl::lower_hard_sigmoid},
    {"HardSwish", 1, kChecked, &Impl::lower_hard_swish},
    {"Softplus", 1, kChecked, &Impl::lower_softplus},
    {"Softsign", 1, kChecked, &Impl::lower_softsign},
    {"Clip", 1, 10, &Impl::lower_clip_attrs},
    {"Clip", 11, kChecked, &Impl::lower_clip},
    // Matrix products and reductions
    {"MatMul", 1, kChecked, &Impl::lower_matmul},
    {"Gemm", 1, kChecked, &Impl::lower_gemm},
    {"ReduceSum", 1, 12, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM>},
    {"ReduceSum", 13, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM>},
    {"ReduceProd", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_PROD>},
    {"ReduceProd", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_PROD>},
    {"ReduceMax", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_MAX>},
    {"ReduceMax", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_MAX>},
    {"ReduceMin", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_MIN>},
    {"ReduceMin", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_MIN>},
    {"ReduceMean", 1, 17, &Impl::lower_reduce_mean<From::Attr>},
    {"ReduceMean", 18, kChecked, &Impl::lower_reduce_mean<From::Input>},
    {"ReduceSumSquare", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_SQR>},
    {"ReduceSumSquare", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_SQR>},
    {"ReduceL1", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_ABS>},
    {"ReduceL1", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_ABS>},
    {"ReduceL2", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_SQR, WICK_OP_SQRT>},
    {"ReduceL2", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_SQR, WICK_OP_SQRT>},
    {"ReduceLogSum", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_LOG>},
    {"ReduceLogSum", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_LOG>},
    {"ReduceLogSumExp", 1, 17, &Impl::lower_reduce<From::Attr, WICK_OP_REDUCE_SUM, WICK_OP_EXP, WICK_OP_LOG>},
    {"ReduceLogSumExp", 18, kChecked, &Impl::lower_reduce<From::Input, WICK_OP_REDUCE_SUM, WICK_OP_EXP, WICK_OP_LOG>},
    {"ArgMax", 1, kChecked, &Impl::lower_arg_reduce<WICK_OP_ARGMAX>},
    {"ArgMin", 1, kChecked, &Impl::lower_arg_reduce<WICK_OP_ARGMIN>},
    {"CumSum", 1, kChecked, &Impl::lower_cumsum},
    {"Softmax", 1, 12, &Impl::lower_softmax_2d<false>},
    {"Softmax", 13, kChecked, &Impl::lower_softmax<false>},
    {"LogSoftmax", 1, 12, &Impl::lower_softmax_2d<true>},
    {"LogSoftmax", 13, kChecked, &Impl::lower_softmax<true>},
    // Views and shapes
    {"Reshape", 1, kChecked, &Impl::lower_reshape},
    {"Flatten", 1, kChecked, &Impl::lower_flatten},
    {"Squeeze", 1, 12, &Impl::lower_squeeze<From::Attr>},
    {"Squeeze", 13, kChecked, &Impl::lower_squeeze<From::Input>},
    {"Unsqueeze", 1, 12, &Impl::lower_unsqueeze<From::Attr>},
    {"Unsqueeze", 13, kChecked, &Impl::lower_unsqueeze<From::Input>},
    {"Transpose", 1, kChecked, &Impl::lower_transpose},
    {"Expand", 1, kChecked, &Impl::lower_expand},
    {"Concat", 1, kChecked, &Impl::lower_concat},
    {"Split", 1, 12, &Impl::lower_split<From::Attr>},
    {"Split", 13, kChecked, &Impl::lower_split<From::Input>},
    {"Slice", 1, 9, &Impl::lower_slice_attrs},
    {"Slice", 10, kChecked, &Impl::lower_slice},
    {"Shape", 1, kChecked, &Impl::lower_shape},
    {"Size", 1, kChecked, &Impl::lower_size},
    // Constants and casts
    {"Constant", 1, kChecked, &Impl::lower_constant},
    {"ConstantOfShape", 1, kChecked, &Impl::lower_constant_of_shape},
    {"Cast", 1, kChecked, &Impl::lower_cast},
    {"CastLike", 1, kChecked, &Impl::lower_cast_like},
    // Indexing
    {"Gather", 1, kChecked, &Impl::lower_gather},
    {"GatherElements", 1, kChecked, &Impl::lower_gather_elements},
    {"ScatterElements", 1, kChecked, &Impl::lower_scatter_elements},
    {"Scatter", 9, 10, &Impl::lower_scatter_elements},
    // Neural-network ops
    {"Conv", 1, kChecked, &Impl::lower_conv},
    {"ConvTranspose", 1, kChecked, &Impl::lower_conv_transpose},
    {"ConvInteger", 1, kChecked, &Impl::lower_conv_integer},
    {"QLinearConv", 1, kChecked, &Impl::lower_qlinear_conv},
    {"Einsum", 1, kChecked, &Impl::lower_einsum},
    {"Pad", 1, 1, &Impl::lower_pad_paddings},
    {"Pad", 2, 10, &Impl::lower_pad_attrs},
    {"Pad", 11, kChecked, &Impl::lower_pad},
    {"InstanceNormalization", 1, kChecked, &Impl::lower_instance_norm},
    {"Shrink", 1, kChecked, &Impl::lower_shrink},
    {"Hardmax", 1, 12, &Impl::lower_hardmax_2d},
    {"Hardmax", 13, kChecked, &Impl::lower_hardmax},
    {"QuantizeLinear", 1, kChecked, &Impl::lower_quantize_linear},
    {"DequantizeLinear", 1, kChecked, &Impl::lower_dequantize_linear},
    {"OneHot", 1, kChecked, &Impl::lower_one_hot},
    {"EyeLike", 1, kChecked, &Impl::lower_eye_like},
    {"Resize", 10, 10, &Impl::lower_resize_10},
    {"Resize", 11, kChecked, &Impl::lower_resize},
    {"GatherND", 1, kChecked, &Impl::lower_gather_nd},
    {"ScatterND", 1, kChecked, &Impl::lower_scatter_nd},
    {"NonZero", 1, kChecked, &Impl::lower_non_zero},
    {"Compress", 1, kChecked, &Impl::lower_compress},
    {"ReverseSequence", 1, kChecked, &Impl::lower_reverse_sequence},
    {"LRN", 1, kChecked, &Impl::lower_lrn},
    {"HannWindow", 1, kChecked, &Impl::lower_window_function},
    {"HammingWindow", 1, kChecked, &Impl::lower_window_function},
    {"BlackmanWindow", 1, kChecked, &Impl::lower_window_function},
    {"MatMulInteger", 1, kChecked, &Impl::lower_matmul_integer},
    {"QLinearMatMul", 1, kChecked, &Impl::lower_qlinear_matmul},
    {"DynamicQuantizeLinear", 1, kChecked, &Impl::lower_dynamic_quantize_linear},
    {"Upsample", 7, 8, &Impl::lower_upsample_attr},
    {"Upsample", 9, 9, &Impl::lower_upsample},
    {"MeanVarianceNormalization", 1, kChecked, &Impl::lower_mean_variance_normalization},
    {"MaxPool", 1, kChecked, &Impl::lower_max_pool},
    {"AveragePool", 1, kChecked, &Impl::lower_average_pool},
    {"GlobalAveragePool", 1, kChecked, &Impl::lower_global_pool<false>},
    {"GlobalMaxPool", 1, kChecked, &Impl::lower_global_pool<true>},
    {"LayerNormalization", 1, kChecked, &Impl::lower_layer_norm},
    {"BatchNormalization", 1, 13, &Impl::lower_batch_norm_inference},
    {"BatchNormalization", 14, kChecked, &Impl::lower_batch_norm},
    {"TopK", 1, 9, &Impl::lower_top_k_attr},
    {"TopK", 10, kChecked, &Impl::lower_top_k},
    {"Range", 1, kChecked, &Impl::lower_range},
    {"DepthToSpace", 1, kChecked, &Impl::lower_depth_to_space},
    {"SpaceToDepth", 1, kChecked, &Impl::lower_space_to_depth},
    {"Tile", 1, kChecked, &Impl::lower_tile},
    {"NegativeLogLikelihoodLoss", 1, kChecked, &Impl::lower_loss<false>},
    {"SoftmaxCrossEntropyLoss", 1, kChecked, &Impl::lower_loss<true>},
    {"Trilu", 1, kChecked, &Impl::lower_trilu},
    // Sampling at data-given positions (lowerings_spatial.cpp)
    {"GridSample", 16, 19, &Impl::lower_grid_sample_16},
    {"GridSample", 20, kChecked, &Impl::lower_grid_sample},
    {"MaxUnpool", 9, kChecked, &Impl::lower_max_unpool},
    // Outputs shaped by the values, decided on the host (lowerings_selection.cpp)
    {"Unique", 11, kChecked, &Impl::lower_unique},
    {"NonMaxSuppression", 10, kChecked, &Impl::lower_non_max_suppression},
    {"Det", 11, kChecked, &Impl::lower_det},
    {"DFT", 17, 19, &Impl::lower_dft_17},
    {"DFT", 20, kChecked, &Impl::lower_dft},
    {"STFT", 17, kChecked, &Impl::lower_stft},
    {"MelWeightMatrix", 17, kChecked, &Impl::lower_mel_weight_matrix},
    // Recurrent layers (lowerings_rnn.cpp); layout is 0 before opset 14
    {"RNN", 7, kChecked, &Impl::lower_recurrent<Cell::Rnn>},
    {"GRU", 7, kChecked, &Impl::lower_recurrent<Cell::Gru>},
    {"LSTM", 7, kChecked, &Impl::lower_recurrent<Cell::Lstm>},
    // Dropout (lowerings_nn.cpp)
    {"Dropout", 7, 9, &Impl::lower_dropout_attrs<false>},
    {"Dropout", 10, 11, &Impl::lower_dropout_attrs<true>},
    {"Dropout", 12, kChecked, &Impl::lower_dropout},
    // Sequence and optional values (lowerings_sequences.cpp)
    {"SequenceConstruct", 11, kChecked, &Impl::lower_sequence_construct},
    {"SequenceEmpty", 11, kChecked, &Impl::lower_sequence_empty},
    {"SequenceInsert", 11, kChecked, &Impl::lower_sequence_insert},
    {"SequenceAt", 11, kChecked, &Impl::lower_sequence_at},
    {"SequenceErase", 11, kChecked, &Impl::lower_sequence_erase},
    {"SequenceLength", 11, kChecked, &Impl::lower_sequence_length},
    {"SplitToSequence", 11, kChecked, &Impl::lower_split_to_sequence},
    {"ConcatFromSequence", 11, kChecked, &Impl::lower_concat_from_sequence},
    {"Optional", 15, kChecked, &Impl::lower_optional},
    {"OptionalHasElement", 15, kChecked, &Impl::lower_optional_has_element},
    {"OptionalGetElement", 15, kChecked, &Impl::lower_optional_get_element},
    // Subgraphs (lowerings_control_flow.cpp)
    {"If", 1, kChecked, &Impl::lower_if},
    {"Loop", 1, kChecked, &Impl::lower_loop},
    {"Scan", 8, 8, &Impl::lower_scan_8},
    {"Scan", 9, kChecked, &Impl::lower_scan},
    {"SequenceMap", 17, kChecked, &Impl::lower_sequence_map},
    // ai.onnx.preview.training, by that domain's opset (lowerings_training.cpp)
    {"ai.onnx.preview.training.Adagrad", 1, kChecked, &Impl::lower_adagrad},
    {"ai.onnx.preview.training.Momentum", 1, kChecked, &Impl::lower_momentum},
    {"ai.onnx.preview.training.Adam", 1, kChecked, &Impl::lower_adam},
    // Text (lowerings_tfidf.cpp)
    {"TfIdfVectorizer", 9, kChecked, &Impl::lower_tfidf_vectorizer},
    // Bitwise ops (opset 18): Wick's bitwise ops on integers
    {"BitwiseAnd", 18, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_AND>},
    {"BitwiseOr", 18, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_OR>},
    {"BitwiseXor", 18, kChecked, &Impl::lower_binary<WICK_OP_BITWISE_XOR>},
    {"BitwiseNot", 18, kChecked, &Impl::lower_unary<WICK_OP_BITWISE_NOT>},
    // Ops added for coverage (lowerings_extra.cpp)
    {"CumProd", 26, kChecked, &Impl::lower_cumprod},
    {"LpNormalization", 1, kChecked, &Impl::lower_lp_normalization},
    {"LpPool", 11, kChecked, &Impl::lower_lp_pool},
    // GroupNormalization 18-20 scales per group, not per channel: not served
    {"GroupNormalization", 21, kChecked, &Impl::lower_group_norm},
    {"CenterCropPad", 18, kChecked, &Impl::lower_center_crop_pad},
    {"TensorScatter", 24, kChecked, &Impl::lower_tensor_scatter},
    // Transformer blocks (lowerings_transformer.cpp)
    {"Gelu", 20, kChecked, &Impl::lower_gelu},
    {"Swish", 24, kChecked, &Impl::lower_swish},
    {"Mish", 18, kChecked, &Impl::lower_mish},
    {"SwiGLU", 28, kChecked, &Impl::lower_swiglu},
    {"RMSNormalization", 23, kChecked, &Impl::lower_rms_norm},
    // Attention 25 adds the sliding window (left_window_size, right_window_size), served too
    {"Attention", 23, kChecked, &Impl::lower_attention},
    {"RotaryEmbedding", 23, kChecked, &Impl::lower_rotary_embedding},
    // Wick's own fused ops (kFusedDomain, optimize.hpp), keyed by that domain
    {"com.wick.fused.FusedConv", 1, kChecked, &Impl::lower_fused_conv},
};

OnnxLowering::Impl::Lowering OnnxLowering::Impl::lowering(const std::string& op_type,
                                                          int64_t opset) {
  // The rows of each op type, by first opset served; checked once for empty and overlapping ranges.
  static const std::map<std::string, std::vector<const Row*>> by_type = [] {
    std::map<std::string, std::vector<const Row*>> m;
    for (const Row& row : kLowerings) {
      if (row.first < 1 || row.last < row.first || row.last > kChecked)
        throw std::logic_error(std::string("the ONNX lowering row for ") + row.op_type +
                               " has an empty opset range or one past the opset it was checked against");
      m[row.op_type].push_back(&row);
    }
    for (auto& [type, rows] : m) {
      std::sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) { return a->first < b->first; });
      for (size_t i = 1; i < rows.size(); ++i)
        if (rows[i]->first <= rows[i - 1]->last)
          throw std::logic_error("two ONNX lowerings for " + type + " at opset " +
                                 std::to_string(rows[i]->first));
    }
    return m;
  }();
  auto it = by_type.find(op_type);
  if (it == by_type.end()) throw NotImportable("ONNX op " + op_type + " is not mapped onto Wick ops");
  std::string served;
  for (const Row* row : it->second) {
    if (opset >= row->first && opset <= row->last) return row->lower;
    if (!served.empty()) served.append(", ");
    served.append(std::to_string(row->first));
    if (row->last != row->first) served.append("-").append(std::to_string(row->last));
  }
  throw NotImportable("ONNX op " + op_type + " at opset " + std::to_string(opset) +
                      ": the importer serves opsets " + served + " (the newest supported is " +
                      std::to_string(it->second.back()->last) + ", checked against ONNX " +
                      kCheckedRelease + ")");
}

}  // namespace wick::onnx
