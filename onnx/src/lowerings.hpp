// lowerings.hpp — OnnxLowering::Impl, the lowering of one node: the helpers every lowering
// uses (lower.cpp) and one member per ONNX op type or family and opset range
// (lowerings*.cpp), found by op type and the model's ai.onnx opset in the table of lowerings.
// Private to onnx/src.
#pragma once

#include <wick/onnx/lower.hpp>

#include <wick/wick_plugin.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace wick::onnx {

struct ResizeRule;

struct OnnxLowering::Impl {
  OnnxLowering& g;
  const onnx::NodeProto& n;
  int64_t version = 0;  // the model's opset of the node's domain (ai.onnx or the training one)
  // The attributes the lowering asked for (attr() records them); see check_attributes_read.
  mutable std::vector<std::string> read_;
  // The inputs the lowering took (in(), in_value()); see check_inputs_read.
  mutable std::vector<bool> inputs_read_;

  // A lowering reads the node's inputs and attributes, runs Wick ops and sets its outputs.
  using Lowering = void (Impl::*)();
  // One row per ONNX op type and opset range: the lowering serves models whose ai.onnx opset
  // import is in [first, last]. Where an op changed form (an attribute became an input, a default
  // changed), each form has its own row; the rows of one op type must not overlap.
  // Every row is closed: its last opset is at most the newest one its op was checked against,
  // kChecked, that of the ONNX release whose operator schemas (kCheckedRelease) the rows and
  // schemas.inc were compared with. A model of a newer opset is refused, never run on the old
  // semantics.
  static constexpr int64_t kChecked = 28;
  static constexpr const char* kCheckedRelease = "1.23.2";
  struct Row {
    const char* op_type;
    int64_t first, last;
    Lowering lower;
  };
  static const Row kLowerings[];
  // The lowering of op_type at `opset`; NotImportable naming the op, the opset and the ranges
  // served when no row covers it. Throws std::logic_error on the first call if rows overlap.
  static Lowering lowering(const std::string& op_type, int64_t opset);

  // --- Attributes checked against the op's schema (attributes.cpp) ---
  // "ONNX op <type> (opset <n>)", the start of every refusal.
  std::string node_context() const;
  // The node's attribute `name` (nullptr when absent), recorded as read by the lowering.
  const onnx::AttributeProto* attr(const char* name) const;
  [[noreturn]] void refuse_attr(const onnx::AttributeProto& a, const std::string& why) const;
  // A string attribute with enumerated values: one outside `implemented` is refused naming it.
  std::string attr_choice(const char* name, const char* dflt,
                          std::initializer_list<const char*> implemented) const;
  // Before the lowering: every attribute is in the op's schema at `version` (schemas.inc).
  void check_attributes_known(const std::string& schema_op) const;
  // After it: every attribute the lowering did not read holds the schema's default.
  void check_attributes_read(const std::string& schema_op) const;
  // After it: every input the node gives was taken by the lowering (an input a later opset added,
  // which the lowering does not implement, is refused rather than ignored).
  void check_inputs_read() const;

  // --- The node: inputs, outputs, attributes (lower.cpp) ---
  const Device& dev() const { return g.device_; }
  int64_t opset() const { return g.opset_; }
  Tensor in(size_t i) const {
    mark_input(i);
    return g.get(n.inputs.at(i));
  }
  void mark_input(size_t i) const {
    if (inputs_read_.size() <= i) inputs_read_.resize(i + 1, false);
    inputs_read_[i] = true;
  }
  bool has_in(size_t i) const { return i < n.inputs.size() && !n.inputs[i].empty(); }
  void out(size_t i, const Tensor& t) {
    if (i < n.outputs.size() && !n.outputs[i].empty()) g.set(n.outputs[i], t);
  }
  int64_t attr_i(const char* name, int64_t dflt) const;
  float attr_f(const char* name, float dflt) const;
  std::string attr_s(const char* name, const std::string& dflt) const;
  std::optional<std::vector<int64_t>> attr_ints(const char* name) const;
  // Where an op's integer list (Squeeze's axes, Split's sizes) comes from in its opset range.
  enum class From { Attr, Input };
  // Attribute `attr` (From::Attr) or input `input` (From::Input); empty when absent.
  std::vector<int64_t> ints_from(From from, size_t input, const char* attr);
  static int norm_axis(int64_t axis, int rank);
  // Attribute `name` with exactly `count` values (`dflt` each when absent); another count is a malformed
  // node (NotImportable naming it).
  std::vector<int64_t> attr_ints_n(const char* name, size_t count, int64_t dflt) const;
  // Host arithmetic on sizes from the model: overflow is a malformed node, never wraparound.
  static int64_t checked_mul(int64_t a, int64_t b);
  static int64_t checked_add(int64_t a, int64_t b);
  // The limits in force (ImportLimits): a corrupt model gets NotImportable, not any allocation.
  static int64_t max_host_elements();
  static int64_t max_loop_steps();
  // A count `what` read from the model as a double: an integer in [0, max_host_elements()].
  static int64_t host_count(double v, const char* what);
  static Shape broadcast(const Shape& a, const Shape& b);

  // --- Wick ops on the device; a decline or an error ends the folder ---
  void exec(wick_op_code op, const void* params, const std::vector<Tensor>& ins,
            const std::vector<Tensor>& outs);
  Tensor op1(wick_op_code op, const Tensor& x, const void* params = nullptr,
             std::optional<DType> odt = std::nullopt);
  Tensor op2(wick_op_code op, const Tensor& a, const Tensor& b,
             std::optional<DType> odt = std::nullopt);
  Tensor where(const Tensor& c, const Tensor& a, const Tensor& b);
  Tensor cast(const Tensor& x, DType t);
  Tensor affine(const Tensor& x, double mul, double add);
  Tensor filled(const Shape& s, DType t, double value);
  Tensor reshape(const Tensor& x, const Shape& s);

  // --- Host read-backs and host-built constants ---
  Tensor scalar(double v, DType t);
  std::vector<int64_t> host_ints(const Tensor& t);
  double host_scalar(const Tensor& t);
  std::vector<double> host_doubles(const Tensor& t);
  Tensor upload_values(const std::vector<double>& v, const Shape& s, DType t);
  Tensor upload_i64(const std::vector<int64_t>& v, const Shape& s);
  // Index input values with negative ones counted from the end of `axis` of x.
  std::vector<int64_t> index_values(const Tensor& x, const Tensor& idx, int axis);

  // --- Composites several op types share ---
  Tensor reduce(wick_op_code op, const Tensor& x, std::vector<int32_t> axes, bool keepdims);
  std::vector<int32_t> reduce_axes(const Tensor& x, From from, bool& noop);
  int64_t reduced_count(const Tensor& x, const std::vector<int32_t>& axes);
  Tensor softmax(const Tensor& x, int axis, bool log);
  Tensor matmul(Tensor a, Tensor b);
  Tensor nll(const Tensor& x, const Tensor& target, const std::optional<Tensor>& weight,
             int64_t ignore, const std::string& reduction);
  // Pads and output sizes of Conv and the pools, ONNX's auto_pad and ceil_mode included.
  // hi includes ceil_extra, the end padding ceil_mode adds beyond the model's pads.
  struct Window {
    std::vector<int64_t> kernel, strides, dil, lo, hi, ceil_extra;
  };
  Window window(const Tensor& x, const std::vector<int64_t>& kernel, bool ceil_mode);
  Tensor window_op(wick_op_code op, const Tensor& x, const Window& w, double init);

  // The lowerings, by op family in one file each (lowerings_*.cpp); their table is lowerings.cpp's.

  // --- Elementwise ops and activations (lowerings_elementwise.cpp) ---
  template <wick_op_code Op>
  void lower_unary() {
    out(0, op1(Op, in(0)));
  }
  template <wick_op_code Op>
  void lower_binary() {
    const Tensor a = in(0);
    out(0, op2(Op, a, legacy_operand(a, in(1))));
  }
  template <wick_op_code Op>
  void lower_compare() {
    const Tensor a = in(0);
    out(0, op2(Op, a, legacy_operand(a, in(1)), DType::Bool));
  }
  // The second operand of a binary op as opsets before 7 define it: broadcast = 1 lays B's dims
  // along A's from `axis` (default: A's trailing dims, NumPy's alignment); an explicit
  // broadcast = 0 needs equal shapes. Without the attributes (and from opset 7, which has none):
  // B as it is, NumPy's rules.
  Tensor legacy_operand(const Tensor& a, const Tensor& b);
  template <wick_op_code Op>
  void lower_variadic() {
    out(0, fold(Op));
  }
  Tensor fold(wick_op_code op);
  void lower_mean();
  void lower_identity();
  void lower_is_nan();
  void lower_is_inf();
  void lower_round();
  void lower_pow();
  void lower_bit_shift();
  void lower_mod();
  void lower_where();
  void lower_cast();
  void lower_cast_like();
  Tensor elu(const Tensor& x, double alpha);
  void lower_elu();
  void lower_selu();
  void lower_celu();
  Tensor where_negative(const Tensor& x, const Tensor& scaled);
  void lower_leaky_relu();
  void lower_prelu_per_channel();
  void lower_prelu();
  void lower_thresholded_relu();
  Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);
  void lower_hard_sigmoid();
  void lower_hard_swish();
  void lower_softplus();
  void lower_softsign();
  void lower_clip_attrs();
  void lower_clip();
  void lower_shrink();

  // --- Matrix products (lowerings_matmul.cpp) ---
  void lower_matmul();
  void lower_gemm();
  void lower_einsum();
  Tensor einsum_diagonals(std::string& term, Tensor x);
  Tensor einsum_product(const std::vector<Tensor>& xs, const std::vector<std::string>& terms,
                        const std::string& letters);

  // --- Reductions along axes (lowerings_reduce.cpp) ---
  // A reduction with an optional elementwise op before (Pre) and after (Post) it; its axes an
  // attribute or an input (ReduceSum from opset 13, the others from 18).
  template <From Axes, wick_op_code Red, wick_op_code Pre = WICK_OP_INVALID,
            wick_op_code Post = WICK_OP_INVALID>
  void lower_reduce() {
    reduction(Axes, Red, Pre, Post, false);
  }
  template <From Axes>
  void lower_reduce_mean() {
    reduction(Axes, WICK_OP_REDUCE_SUM, WICK_OP_INVALID, WICK_OP_INVALID, true);
  }
  void reduction(From axes, wick_op_code red, wick_op_code pre, wick_op_code post, bool mean);
  Tensor empty_reduction(const Tensor& x, const std::vector<int32_t>& axes, bool keep, wick_op_code red,
                         wick_op_code post, bool mean);
  template <wick_op_code Op>
  void lower_arg_reduce() {
    arg_reduce(Op);
  }
  void arg_reduce(wick_op_code op);
  void lower_cumsum();
  // Softmax and LogSoftmax along `axis` (opset 13 on), or of the input coerced to 2-D (before).
  template <bool Log>
  void lower_softmax() {
    const Tensor x = in(0);
    out(0, softmax(x, norm_axis(attr_i("axis", -1), x.rank()), Log));
  }
  template <bool Log>
  void lower_softmax_2d() {
    const Tensor x = in(0);
    out(0, softmax(coerced_2d(x), 1, Log).reshape(x.shape()));
  }
  Tensor coerced_2d(const Tensor& x);
  Tensor hardmax(const Tensor& x, int axis);
  void lower_hardmax();
  void lower_hardmax_2d();
  void lower_top_k_attr();
  void lower_top_k();
  void top_k(int64_t k);

  // --- Views, shapes and rearranged data (lowerings_shape.cpp) ---
  void lower_reshape();
  void lower_flatten();
  template <From Axes>
  void lower_squeeze() {
    squeeze(ints_from(Axes, 1, "axes"));
  }
  template <From Axes>
  void lower_unsqueeze() {
    unsqueeze(ints_from(Axes, 1, "axes"));
  }
  void squeeze(std::vector<int64_t> axes);
  void unsqueeze(std::vector<int64_t> axes);
  void lower_transpose();
  void lower_expand();
  void lower_concat();
  template <From Sizes>
  void lower_split() {
    split(ints_from(Sizes, 1, "split"));
  }
  void split(std::vector<int64_t> sizes);
  void lower_slice_attrs();
  void lower_slice();
  void slice(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
             std::optional<std::vector<int64_t>> axes, std::optional<std::vector<int64_t>> steps);
  void lower_shape();
  void lower_size();
  void lower_pad_paddings();
  void lower_pad_attrs();
  void lower_pad();
  void pad(Tensor x, const std::vector<int64_t>& pads, double value);
  void lower_depth_to_space();
  void lower_space_to_depth();
  void lower_tile();

  // --- Tensors from attributes, sizes and positions (lowerings_creation.cpp) ---
  void lower_constant();
  void lower_constant_of_shape();
  void lower_range();
  void lower_window_function();
  Tensor positions(const Shape& shape, int axis);
  void lower_one_hot();
  void lower_eye_like();
  void lower_trilu();

  // --- Indexing (lowerings_indexing.cpp) ---
  void lower_gather();
  void lower_gather_elements();
  void lower_scatter_elements();
  int32_t reduction_mode() const;
  std::vector<int64_t> nd_rows(const Tensor& data, const Tensor& indices, int64_t batch_dims);
  void lower_gather_nd();
  void lower_scatter_nd();
  void lower_non_zero();
  void lower_compress();
  void lower_reverse_sequence();

  // --- Quantization (lowerings_quantize.cpp) ---
  Tensor along_axis(const Tensor& v, const Tensor& x, int64_t axis_attr);
  void lower_quantize_linear();
  void lower_dequantize_linear();
  void lower_dynamic_quantize_linear();
  void lower_matmul_integer();
  void lower_qlinear_matmul();
  void lower_conv_integer();
  void lower_qlinear_conv();

  // --- Resize and Upsample (lowerings_resize.cpp) ---
  Tensor resize_axis(const Tensor& x, int axis, int64_t out_len, double scale, const ResizeRule& r,
                     double roi_start, double roi_end);
  void lower_upsample_attr();
  void lower_upsample();
  void lower_resize_10();
  void lower_resize();
  void resize_axes(std::vector<double>& scales, std::vector<int64_t>& sizes, std::vector<double>& roi);
  void resize(const ResizeRule& r, const std::vector<double>& scales,
              const std::vector<int64_t>& sizes, const std::vector<double>& roi);

  // --- Neural-network layers (lowerings_nn.cpp) ---
  Tensor per_channel(const Tensor& v, int rank);
  void lower_conv();
  void lower_fused_conv();
  Tensor conv(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, bool relu = false);
  void check_kernel_shape(const std::vector<int64_t>& k) const;
  void lower_conv_transpose();
  void lower_lrn();
  void lower_instance_norm();
  Window pool_window();
  void lower_max_pool();
  void lower_average_pool();
  template <bool Max>
  void lower_global_pool() {
    global_pool(Max);
  }
  void global_pool(bool max);
  void lower_layer_norm();
  void lower_mean_variance_normalization();
  void lower_batch_norm_inference();
  void lower_batch_norm();
  void batch_norm_training();
  void batch_norm_inference();
  template <bool Softmax>
  void lower_loss() {
    loss(Softmax);
  }
  void loss(bool softmax_first);
  // Dropout: the identity unless in training mode (random, not importable); its mask in the
  // input's dtype before opset 10, bool from 10; training_mode an input from 12.
  template <bool MaskBool>
  void lower_dropout_attrs() {
    dropout(false, MaskBool);
  }
  void lower_dropout();
  void dropout(bool training, bool mask_bool);

  // --- Sampling and pooling at data-given positions (lowerings_spatial.cpp) ---
  Tensor reflect(const Tensor& c, double lo, double hi);
  void grid_sample(const std::string& mode);
  struct GridTap;
  std::vector<GridTap> grid_taps(Tensor c, int64_t size, const std::string& mode,
                                 const std::string& padding, bool align);
  Tensor grid_gather(const Tensor& x, const std::vector<std::vector<GridTap>>& taps,
                     int64_t in_count, int64_t out_count, DType ct);
  void lower_grid_sample_16();
  void lower_grid_sample();
  void max_pool_with_indices(const Window& w);
  static std::vector<int64_t> max_pool_positions(const Tensor& x, const Window& w,
                                                 const std::vector<int64_t>& k,
                                                 const Shape& out_spatial, int64_t out_count,
                                                 bool column_major);
  void lower_max_unpool();

  // --- Value-shaped outputs, decided on the host (lowerings_selection.cpp) ---
  void lower_unique();
  void lower_non_max_suppression();

  // --- Linear algebra (lowerings_linalg.cpp) ---
  void lower_det();

  // --- Spectral ops (lowerings_spectral.cpp) ---
  Tensor dft(const Tensor& x, int64_t length, int64_t bins, bool inverse);
  void dft_node(int64_t axis_value);
  void lower_dft_17();
  void lower_dft();
  void lower_stft();
  void lower_mel_weight_matrix();

  // --- Recurrent layers (lowerings_rnn.cpp) ---
  enum class Cell { Rnn, Gru, Lstm };
  template <Cell C>
  void lower_recurrent() {
    recurrent(C);
  }
  void recurrent(Cell cell);
  struct Recurrence;
  struct RecurrentDirection;
  Recurrence recurrence(Cell cell);
  void recurrent_activations(Recurrence& rc);
  Tensor reverse_steps(const Recurrence& rc, const Tensor& t);
  Tensor recurrent_initial(const Recurrence& rc, size_t input_index, int64_t d);
  Tensor recurrent_activation(const Recurrence& rc, size_t f, const Tensor& t);
  RecurrentDirection recurrent_weights(const Recurrence& rc, int64_t d);
  void recurrent_direction(const Recurrence& rc, int64_t d, const Tensor& y, const Tensor& y_h,
                           const Tensor& y_c);
  Tensor recurrent_step(const Recurrence& rc, const RecurrentDirection& dir, const Tensor& xt,
                        const Tensor& h, const Tensor& c, Tensor& c_new);
  // An activation of RNN, GRU and LSTM by its ONNX name; alpha and beta default per function.
  Tensor activation(const std::string& name, const Tensor& x, std::optional<double> alpha,
                    std::optional<double> beta);

  // --- ONNX's narrow types, held in wider dtypes (lowerings_narrow.cpp) ---
  // Before a node runs: NotImportable when an input is narrow and the op neither casts, dequantizes
  // nor only moves values; after: a moving op's outputs keep its input's narrow type.
  void check_narrow_inputs(const std::string& type) const;
  void tag_narrow_outputs(const std::string& type);
  // Cast of a value to ONNX type `to` (a narrow one rounded exactly on the host).
  Value cast_to_onnx(const Value& x, int32_t to, bool saturate, const std::string& round_mode);
  // QuantizeLinear to a narrow type (the zero point's): saturate(x / scale + zero point).
  Value quantize_narrow(const Tensor& q_unrounded, int32_t to, bool saturate);

  // --- Sequence and optional values (lowerings_sequences.cpp) ---
  // After a node with a uint16 input: its u32 outputs wrapped to 16 bits and marked (Value::u16).
  void narrow_u16_outputs();
  const Value& in_value(size_t i) const;
  void out_value(size_t i, Value v);
  Value in_sequence(size_t i) const;
  std::vector<Tensor> sequence_tensors(const Value& seq) const;
  size_t sequence_position(size_t input, size_t size, bool past_end);
  Tensor concat(const std::vector<Tensor>& parts, int axis);
  Tensor stack(const std::vector<Tensor>& parts, int axis);
  void lower_sequence_construct();
  void lower_sequence_empty();
  void lower_sequence_insert();
  void lower_sequence_at();
  void lower_sequence_erase();
  void lower_sequence_length();
  void lower_split_to_sequence();
  void lower_concat_from_sequence();
  void lower_optional();
  void lower_optional_has_element();
  void lower_optional_get_element();

  // --- Subgraphs (lowerings_control_flow.cpp) ---
  const onnx::GraphProto& graph_attr(const char* name) const;
  std::vector<Value> run_body(const onnx::GraphProto& body, const std::vector<Value>& inputs,
                              size_t outputs);
  Tensor tensor_of(const Value& v, const char* what) const;
  Tensor scan_output(std::vector<Tensor> parts, int64_t axis_attr, bool reverse, int32_t elem_type);
  std::vector<Tensor> scan(const onnx::GraphProto& body, std::vector<Value> states,
                           const std::vector<Tensor>& xs, const std::vector<int64_t>& in_axes,
                           const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                           const std::vector<int64_t>& out_dirs);
  void lower_if();
  void lower_loop();
  void lower_scan_8();
  void lower_scan();
  void lower_sequence_map();

  // --- ai.onnx.preview.training (lowerings_training.cpp) ---
  size_t optimized_tensors(size_t groups);
  Tensor regularized(const Tensor& x, const Tensor& grad, double norm);
  void lower_adagrad();
  void lower_momentum();
  void lower_adam();

  // --- Text (lowerings_tfidf.cpp) ---
  void lower_tfidf_vectorizer();

  // --- Ops added for coverage (lowerings_extra.cpp) ---
  void lower_cumprod();
  void lower_lp_normalization();
  void lower_lp_pool();
  void lower_group_norm();
  void lower_center_crop_pad();
  void lower_tensor_scatter();

  // --- Transformer blocks (lowerings_transformer.cpp) ---
  bool try_fused(wick_op_code op, const void* params, const std::vector<Tensor>& ins,
                 const std::vector<Tensor>& outs);
  void lower_gelu();
  Tensor swish(const Tensor& x, double alpha);
  void lower_swish();
  void lower_mish();
  void lower_swiglu();
  void lower_rms_norm();
  Tensor rotary_cache(const Tensor& cache, const std::optional<std::vector<int64_t>>& pos, int64_t B,
                      int64_t S);
  void lower_rotary_embedding();
  struct AttentionInputs;
  Tensor attention_heads(const Tensor& t, int64_t heads, const char* what);
  AttentionInputs attention_inputs();
  Tensor attention_bias(const AttentionInputs& a);
  Tensor attention_repeat(const Tensor& t, int64_t heads);
  void lower_attention();
  Tensor attention_composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias,
                             const std::optional<Tensor>& masked, double scale, double softcap,
                             int64_t mode, DType smt);
};

}  // namespace wick::onnx
