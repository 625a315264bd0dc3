/*
 * wick_plugin.h — the Wick device-plugin ABI.
 *
 * A plugin is a shared library exporting one C symbol, WICK_PLUGIN_ENTRY_SYMBOL, that returns a
 * pointer to a static, immutable wick_plugin_api table. Everything the host and the plugin say to
 * each other crosses this header: plain C types, no exceptions, no C++ objects.
 *
 * Versioning (see sdk/ABI_CHANGELOG.md):
 *   - WICK_ABI_MAJOR changes when a layout or a meaning changes. The host refuses a plugin whose
 *     major differs from its own.
 *   - WICK_ABI_MINOR grows when something is appended: a table slot, a struct field, an op code,
 *     a dtype. Every struct starts with `struct_size`; a reader only touches fields that lie
 *     inside the size the writer declared. The host calls a table slot only when the plugin's
 *     minor has it, its offset lies inside the table's struct_size, and the pointer is non-NULL.
 *
 * Lifetime: get the table (no side effects) -> check versions -> initialize -> use -> shutdown ->
 * release the library. Nothing in the table may be called before initialize succeeded except
 * the error_* slots and the descriptive fields.
 *
 * Threading: unless a declaration says otherwise, a slot may be called from any thread. The host
 * serialises the calls on one device (one in-order stream per device: op_execute, buffer_* of
 * that device's buffers, device_synchronize, device_get_free_memory); calls on different devices
 * of one plugin may run at the same time, and op_supports (pure) may run at any time, alongside
 * any call but initialize and shutdown. A device that declares WICK_DEVICE_CAP_CONCURRENT (1.2)
 * is not serialised at all: the host may call it from several threads at once, and each call
 * must then be safe alongside any other on that device. Each thread's calls still take effect in
 * the order it makes them; work two threads queue at the same time has no order between them
 * (two threads writing one buffer at once is the application's race, as in any runtime).
 * The plugin-wide slots (initialize, device_get, device_get_props, shutdown) are never called
 * concurrently with each other.
 */
#ifndef WICK_PLUGIN_H
#define WICK_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WICK_ABI_MAJOR 1
#define WICK_ABI_MINOR 8

/* The one symbol every plugin exports. */
#define WICK_PLUGIN_ENTRY_SYMBOL "wick_plugin_get_api"

#if defined(_WIN32)
#define WICK_PLUGIN_EXPORT __declspec(dllexport)
#else
#define WICK_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

/* Stable numbers, never reused. */
typedef enum wick_status {
  WICK_STATUS_OK = 0,
  WICK_STATUS_INVALID_ARGUMENT = 1, /* bad shapes, dtypes, params, options */
  WICK_STATUS_UNSUPPORTED = 2,      /* the plugin cannot run this (should have said so in supports) */
  WICK_STATUS_OUT_OF_MEMORY = 3,
  WICK_STATUS_DEVICE_ERROR = 4,     /* the device or its runtime reported a failure */
  WICK_STATUS_UNAVAILABLE = 5,      /* the device or runtime is not there */
  WICK_STATUS_INTERNAL = 6          /* a bug in the plugin; includes exceptions caught at the ABI */
} wick_status;

/* An error object owned by the plugin that created it. NULL means success. The receiver must free
 * it exactly once with the same plugin's error_destroy. */
typedef struct wick_error wick_error;

/* ---------------------------------------------------------------------------------------------
 * Data types — stable numbers, never reused.
 * ------------------------------------------------------------------------------------------- */
typedef enum wick_dtype {
  WICK_DTYPE_INVALID = 0,
  WICK_DTYPE_F32 = 1,
  WICK_DTYPE_F64 = 2,
  WICK_DTYPE_F16 = 3,  /* IEEE 754 binary16 */
  WICK_DTYPE_BF16 = 4, /* bfloat16: the top half of an f32 */
  WICK_DTYPE_I8 = 5,
  WICK_DTYPE_U8 = 6,
  WICK_DTYPE_I16 = 7,
  WICK_DTYPE_I32 = 8,
  WICK_DTYPE_I64 = 9,
  WICK_DTYPE_U32 = 10,
  WICK_DTYPE_U64 = 11,
  WICK_DTYPE_BOOL = 12 /* one byte, 0 or 1 */
} wick_dtype;

/* ---------------------------------------------------------------------------------------------
 * Opaque objects, created and owned by the plugin.
 * ------------------------------------------------------------------------------------------- */
typedef struct wick_device wick_device; /* valid from initialize until shutdown */
typedef struct wick_buffer wick_buffer; /* valid from buffer_allocate until buffer_free */

/* ---------------------------------------------------------------------------------------------
 * Initialisation options: typed key/values from the config's [plugins.<name>] table.
 * ------------------------------------------------------------------------------------------- */
typedef enum wick_option_type {
  WICK_OPTION_BOOL = 1,
  WICK_OPTION_INT = 2,
  WICK_OPTION_FLOAT = 3,
  WICK_OPTION_STRING = 4
} wick_option_type;

typedef struct wick_option {
  size_t struct_size;
  const char* key; /* NUL-terminated, never NULL; valid during initialize only */
  wick_option_type type;
  int32_t bool_value;       /* WICK_OPTION_BOOL: 0 or 1 */
  int64_t int_value;        /* WICK_OPTION_INT */
  double float_value;       /* WICK_OPTION_FLOAT */
  const char* string_value; /* WICK_OPTION_STRING: NUL-terminated; valid during initialize only */
} wick_option;

typedef struct wick_initialize_args {
  size_t struct_size;
  uint32_t host_abi_major; /* the host's WICK_ABI_MAJOR / MINOR */
  uint32_t host_abi_minor;
  const wick_option* options; /* may be NULL when num_options == 0 */
  size_t num_options;
} wick_initialize_args;

typedef struct wick_initialize_result {
  size_t struct_size; /* set by the host */
  /* Number of devices the plugin will serve. Zero is a successful, quiet answer. */
  size_t num_devices;
  /* Why there are zero devices ("no NVIDIA driver: cudaGetDeviceCount returned 35 ..."), or a
   * short note otherwise. May be NULL. Owned by the plugin, valid until shutdown. */
  const char* message;
} wick_initialize_result;

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */
typedef enum wick_device_kind {
  WICK_DEVICE_KIND_CPU = 1,
  WICK_DEVICE_KIND_GPU = 2,
  WICK_DEVICE_KIND_ACCELERATOR = 3,
  WICK_DEVICE_KIND_OTHER = 4
} wick_device_kind;

/* Capability flags of a device. */
#define WICK_DEVICE_CAP_HOST_MEMORY ((uint64_t)1 << 0) /* buffers live in host memory */
#define WICK_DEVICE_CAP_BUFFER_COPY ((uint64_t)1 << 1) /* buffer_copy works on this device */
#define WICK_DEVICE_CAP_ASYNC ((uint64_t)1 << 2)       /* execute may return before completion */
#define WICK_DEVICE_CAP_F64 ((uint64_t)1 << 3)         /* double precision arithmetic */
#define WICK_DEVICE_CAP_F16 ((uint64_t)1 << 4)         /* native half arithmetic */
#define WICK_DEVICE_CAP_BF16 ((uint64_t)1 << 5)        /* native bfloat16 arithmetic */
/* 1.2: the device takes calls from several threads at once (see Threading above); without it the
 * host serialises its calls. A host older than 1.2 ignores the bit and serialises. */
#define WICK_DEVICE_CAP_CONCURRENT ((uint64_t)1 << 6)
/* Every capability bit this header defines: a device that sets another is malformed. */
#define WICK_DEVICE_CAP_KNOWN_1_2 ((uint64_t)0x7f)
/* 1.3 defined no bit. */
#define WICK_DEVICE_CAP_KNOWN_1_3 WICK_DEVICE_CAP_KNOWN_1_2
/* 1.4 defined no bit. */
#define WICK_DEVICE_CAP_KNOWN_1_4 WICK_DEVICE_CAP_KNOWN_1_3
/* 1.5 appended a slot, no capability bit. */
#define WICK_DEVICE_CAP_KNOWN_1_5 WICK_DEVICE_CAP_KNOWN_1_4
/* 1.6 appended a params field, no capability bit. */
#define WICK_DEVICE_CAP_KNOWN_1_6 WICK_DEVICE_CAP_KNOWN_1_5
/* 1.7 appended a slot, no capability bit. */
#define WICK_DEVICE_CAP_KNOWN_1_7 WICK_DEVICE_CAP_KNOWN_1_6
/* 1.8 appended a slot and a struct, no capability bit. */
#define WICK_DEVICE_CAP_KNOWN_1_8 WICK_DEVICE_CAP_KNOWN_1_7

typedef struct wick_device_props {
  size_t struct_size; /* set by the host; the plugin fills only fields inside it */
  const char* name;   /* e.g. "NVIDIA H200"; owned by the plugin, valid until shutdown */
  const char* vendor; /* may be NULL; same lifetime */
  wick_device_kind kind;
  uint64_t memory_bytes;   /* total memory usable for buffers; 0 if unknown */
  uint64_t capabilities;   /* WICK_DEVICE_CAP_* */
  uint32_t compute_units;  /* cores, SMs, ...; 0 if unknown */
} wick_device_props;

/* ---------------------------------------------------------------------------------------------
 * Ops. Codes are stable numbers, never reused; a new op is a new code. A plugin that does not
 * know a code answers WICK_SUPPORT_NO_OP and the host falls back.
 *
 * Conventions every kernel follows:
 *   - Operands are strided views: shape and strides in elements, any sign; stride 0 broadcasts.
 *   - Elementwise ops receive inputs already broadcast to the output's shape (stride 0).
 *   - Outputs never overlap inputs unless the op says so.
 *   - f16/bf16 may be computed in f32 and rounded to nearest-even on store.
 * Semantics of each op live in docs/ops.md.
 * ------------------------------------------------------------------------------------------- */
#include "wick_ops.h"

/* The codes come from the op table (wick_ops.h: one row per op with its number, arity, params
 * struct and dtypes). Adding a row adds a code; a row's number never changes and is never reused
 * (tests/test_abi.cpp holds the numbers every released ABI minor shipped). */
typedef enum wick_op_code {
  WICK_OP_INVALID = 0,
#define WICK_OP_ENUM_ROW(NAME, CODE, ...) WICK_OP_##NAME = CODE,
  WICK_OP_LIST(WICK_OP_ENUM_ROW)
#undef WICK_OP_ENUM_ROW
  WICK_OP_CODE_MAX_ = 0x7fffffff /* not an op: keeps the enum 32-bit */
} wick_op_code;

/* A strided view of a buffer. In supports(), `buffer` is NULL: only dtype and geometry are known. */
typedef struct wick_tensor_desc {
  size_t struct_size;
  wick_buffer* buffer;   /* may be NULL in supports() */
  /* Where element [0, ..., 0] lies, in bytes from the buffer's start; always a multiple of the
   * element size. Meaningful in supports() too. */
  uint64_t byte_offset;
  wick_dtype dtype;
  int32_t rank;          /* 0 for a scalar */
  const int64_t* shape;  /* rank entries; may be NULL when rank == 0; valid during the call */
  const int64_t* strides;/* rank entries, in elements, any sign; valid during the call */
} wick_tensor_desc;

/* Parameters: every struct starts with struct_size. Ops not listed take no parameters (NULL). */

/* WICK_OP_FILL: the value is given as a double and an int64 so that every dtype is exact. Bool is
 * true when either field is non-zero. */
typedef struct wick_fill_params {
  size_t struct_size;
  double float_value; /* used for f32, f64, f16, bf16 */
  int64_t int_value;  /* used for integer dtypes and bool (bit pattern for u64) */
} wick_fill_params;

/* WICK_OP_REDUCE_*: axes to reduce, each in [0, rank). The output keeps reduced axes as extent 1. */
typedef struct wick_reduce_params {
  size_t struct_size;
  const int32_t* axes; /* valid during the call */
  int32_t num_axes;
} wick_reduce_params;

/* WICK_OP_IOTA: out[0][i...] = start + step * k, where k is the index along `axis`, or the
 * C-order flat index when axis == -1. Integer dtypes use the int_ fields, floats the float_ ones. */
typedef struct wick_iota_params {
  size_t struct_size;
  int32_t axis;
  double float_start;
  double float_step;
  int64_t int_start;
  int64_t int_step;
} wick_iota_params;

/* WICK_OP_RNG_UNIFORM (values in [a, b)) and WICK_OP_RNG_NORMAL (mean a, standard deviation b).
 * Counter-based (Philox-4x32-10, docs/ops.md): element i in C order of out[0] uses counter
 * offset + i and key seed, so every device produces the same stream. */
typedef struct wick_rng_params {
  size_t struct_size;
  uint64_t seed;
  uint64_t offset;
  double a;
  double b;
} wick_rng_params;

/* Unary ops with scalars: ELU (alpha), AFFINE (x * alpha + beta), POWF (x ** alpha),
 * ROUND (mode: WICK_ROUND_*). Other unary ops take no parameters. */
#define WICK_ROUND_HALF_AWAY_FROM_ZERO 0
#define WICK_ROUND_HALF_TO_EVEN 1
typedef struct wick_unary_params {
  size_t struct_size;
  double alpha;
  double beta;
  int32_t mode;
} wick_unary_params;

/* Modes of index_reduce and scatter_elements. */
#define WICK_REDUCE_MODE_SET 0
#define WICK_REDUCE_MODE_ADD 1
#define WICK_REDUCE_MODE_MUL 2
#define WICK_REDUCE_MODE_MAX 3
#define WICK_REDUCE_MODE_MIN 4

/* One axis and a mode or flag:
 *   ARGMAX/ARGMIN: flag = 1 selects the last index of ties (else the first); out[0] is i32 or
 *     i64 with the axis kept at extent 1.
 *   CUMSUM..CUMMIN: flag bit 0 = reverse, bit 1 = exclusive.
 *   INDEX_SELECT, GATHER_ELEMENTS: the axis. INDEX_REDUCE, SCATTER_ELEMENTS: the axis, and
 *     flag = WICK_REDUCE_MODE_*.
 *   SOFTMAX, LOG_SOFTMAX: the axis. */
typedef struct wick_axis_params {
  size_t struct_size;
  int32_t axis;
  int32_t flag;
} wick_axis_params;

/* WICK_OP_CONV: in[0] input [N, C, spatial...], in[1] weight [O, C / groups, kernel...],
 * out[0] [N, O, out spatial...]. Arrays have spatial_rank entries and are valid during the call;
 * input_dilations may be NULL (all 1; > 1 gives a transposed convolution).
 * 1.3, the two gradients of that convolution (same params; floats; out spatial as CONV gives it):
 *   WICK_OP_CONV_GRAD_INPUT: in[0] the output's gradient [N, O, out spatial...], in[1] the weight
 *     [O, C / groups, kernel...], out[0] the input's gradient [N, C, spatial...].
 *   WICK_OP_CONV_GRAD_WEIGHT: in[0] the input [N, C, spatial...], in[1] the output's gradient
 *     [N, O, out spatial...], out[0] the weight's gradient [O, C / groups, kernel...].
 * Both overwrite out[0] (no accumulation into it). A plugin older than 1.3 answers NO_OP and the
 * host composes them from CONV.
 * The fused WICK_OP_CONV_BIAS and WICK_OP_CONV_BIAS_RELU (same params; floats): in[0], in[1] as
 * CONV, in[2] a bias [O] added to every output of channel o; _RELU then takes max(0, y) (NaN stays
 * NaN). A plugin without them answers NO_OP and the host runs CONV, ADD and RELU. */
typedef struct wick_conv_params {
  size_t struct_size;
  int32_t spatial_rank;
  const int64_t* strides;
  const int64_t* padding_lo;
  const int64_t* padding_hi;
  const int64_t* dilations;
  const int64_t* input_dilations;
  int64_t groups;
} wick_conv_params;

/* WICK_OP_WINDOW_* and WINDOW_SCATTER_*: arrays have one entry per tensor axis. Padded positions
 * hold the reduction's identity (0 for sum, 1 for prod, -inf / lowest for max, +inf / max for
 * min). WINDOW_SCATTER_*: in[0] operand, in[1] source (the window output's shape); out[0] has
 * the operand's shape, starts at init_value, and each source value is added at the position its
 * window selected (the first maximum / minimum). */
typedef struct wick_window_params {
  size_t struct_size;
  int32_t rank;
  const int64_t* window;
  const int64_t* strides;
  const int64_t* padding_lo;
  const int64_t* padding_hi;
  const int64_t* dilations;
  double init_value;
} wick_window_params;

/* WICK_OP_SORT: out[0] values, out[1] indices (i32 or i64) along axis. NaN sorts after every
 * number in ascending order (before, descending). stable != 0 keeps equal elements in order. */
typedef struct wick_sort_params {
  size_t struct_size;
  int32_t axis;
  int32_t descending;
  int32_t stable;
} wick_sort_params;

/* WICK_OP_LAYER_NORM (in: x, [weight], [bias]) and WICK_OP_RMS_NORM (in: x, [weight]): normalise
 * over the last num_axes axes. WICK_OP_BATCH_NORM (inference; in: x [N, C, ...], mean, var,
 * weight, bias, each [C]). */
typedef struct wick_norm_params {
  size_t struct_size;
  int32_t num_axes;
  double epsilon;
} wick_norm_params;

/* WICK_OP_ATTENTION: in q [..., L, E], k [..., S, E], v [..., S, Ev], optional additive mask
 * broadcast to [..., L, S]; out [..., L, Ev] = softmax(q k^T * scale + mask (+ causal)) v. */
typedef struct wick_attention_params {
  size_t struct_size;
  double scale;
  int32_t causal;
} wick_attention_params;

/* 1.4, GGML block quantization: WICK_OP_QUANTIZE, WICK_OP_DEQUANTIZE, WICK_OP_MATMUL_QUANT.
 * `type` is a GGML type number (wick/sdk/ggml_types.hpp: Q4_0 2, Q4_1 3, Q5_0 6, Q5_1 7, Q8_0 8,
 * Q8_1 9, Q2_K 10, Q3_K 11, Q4_K 12, Q5_K 13, Q6_K 14, Q8_K 15); a row of k values (k a multiple
 * of the type's block size: 32, or 256 for the K-quants) is k / block_size blocks of type_size
 * bytes, stored as u8, the blocks laid out as in a GGUF file.
 *   QUANTIZE: in[0] a float row tensor [..., k] -> out[0] u8 [..., k / block_size * type_size],
 *     byte for byte what ggml's reference quantizer (quantize_row_*_ref) makes of the values
 *     rounded to f32.
 *   DEQUANTIZE: in[0] u8 [..., k / block_size * type_size] -> out[0] a float tensor [..., k]:
 *     ggml's dequantize_row_* (in f32; rounded once to f16 or bf16, widened exactly to f64).
 *   MATMUL_QUANT: in[0] x, a float tensor [..., M, k]; in[1] w, u8 [N, k / block_size *
 *     type_size] (N rows of k quantized weights) -> out[0] [..., M, N] of x's dtype:
 *     x dequantize(w)^T, with x as given (never rounded to 8 bits) unless `flags` says so.
 *
 * 1.6 appended `flags` (read it only when struct_size covers it: sdk::quant_flags). One bit,
 * MATMUL_QUANT only (QUANTIZE and DEQUANTIZE take flags 0):
 *   WICK_QUANT_ROUND_X: the result is DEFINED as
 *     dequantize(quantize(x, A), f32) dequantize(w)^T, summed in f32,
 *     where A is the weight type's 8-bit activation type (ggml's vec_dot_type:
 *     sdk::ggml::activation_type: Q8_0 for Q4_0, Q5_0, Q8_0; Q8_1 for Q4_1, Q5_1, Q8_1; Q8_K for
 *     the K-quants) and quantize is ggml's reference quantizer of each row of x (as QUANTIZE), so
 *     that the integer block dot products llama.cpp uses compute it to f32 summation error.
 * A plugin answers WICK_SUPPORT_NO_PARAMS for a bit it does not take; the host never sends a bit
 * to a plugin of minor < 6 (which would not see it) and composes the definition from QUANTIZE,
 * DEQUANTIZE and MATMUL_QUANT itself where a plugin declines. */
#define WICK_QUANT_ROUND_X 1u
#define WICK_QUANT_FLAGS_KNOWN_1_6 WICK_QUANT_ROUND_X
typedef struct wick_quant_params {
  size_t struct_size;
  int32_t type;
  int64_t k;
  uint32_t flags; /* 1.6: WICK_QUANT_* bits; absent (0) in a struct of 1.4's size */
} wick_quant_params;

/* WICK_OP_ADAM_UPDATE: one Adam or AdamW step, elementwise. in: parameter p, gradient g, first
 * moment m, second moment v (one float dtype, one shape); out: p', m', v', which MAY be the very
 * tensors p, m and v (same buffer, offset and strides: the update in place). Computed in f32 for
 * f32, f16 and bf16, in f64 for f64, as:
 *   flags bit 0 (WICK_ADAM_DECOUPLED) clear: g += weight_decay p; set (AdamW): p *= 1 - lr weight_decay
 *   m' = beta1 m + (1 - beta1) g;   v' = beta2 v + (1 - beta2) g g
 *   p' = p - (lr / bias_correction1) m' / (sqrt(v') / sqrt(bias_correction2) + eps)
 * where bias_correction_k = 1 - beta_k^step. */
#define WICK_ADAM_DECOUPLED 1
typedef struct wick_optim_params {
  size_t struct_size;
  double lr;
  double beta1;
  double beta2;
  double eps;
  double weight_decay;
  double bias_correction1;
  double bias_correction2;
  int32_t flags;
} wick_optim_params;

typedef struct wick_op_desc {
  size_t struct_size;
  wick_op_code op;
  const void* params; /* a wick_*_params struct or NULL; valid during the call */
  const wick_tensor_desc* inputs;
  size_t num_inputs;
  const wick_tensor_desc* outputs;
  size_t num_outputs;
} wick_op_desc;

/* The answer of supports(): why not, so the host can log a useful fallback reason. */
typedef enum wick_support {
  WICK_SUPPORT_YES = 0,
  WICK_SUPPORT_NO_OP = 1,     /* the op code is not implemented */
  WICK_SUPPORT_NO_DTYPE = 2,  /* the op is, but not for these dtypes */
  WICK_SUPPORT_NO_PARAMS = 3, /* the op and dtypes are, but not these params or shapes */
  /* The plugin failed while answering (an exception caught at the ABI: a bug in the plugin). The
   * host does not run the op there and reports a plugin fault, never "not implemented". Hosts
   * older than this value treat it as an unknown answer, which is a decline too. */
  WICK_SUPPORT_ERROR = 4
} wick_support;

/* 1.8: a buffer as its device's own API names it (buffer_native_memory). `kind` is DLPack's device
 * type (dlpack.h's DLDeviceType), so that the numbers mean the same to every library that reads
 * them; a host reads only the kinds it knows and treats any other as no answer. */
#define WICK_NATIVE_MEMORY_CUDA 2 /* address: a CUdeviceptr; queue: a cudaStream_t (CUstream) */
typedef struct wick_native_memory {
  size_t struct_size;     /* set by the host; the plugin fills only fields inside it */
  int32_t kind;           /* WICK_NATIVE_MEMORY_* */
  int32_t device_ordinal; /* the device in its API's numbering (CUDA's device ordinal) */
  void* address;          /* the buffer's first byte in the device's address space */
  void* queue;            /* the in-order queue the plugin runs the buffer's work on */
} wick_native_memory;

/* ---------------------------------------------------------------------------------------------
 * The plugin table.
 * ------------------------------------------------------------------------------------------- */
#define WICK_PLUGIN_FLAG_UNLOADABLE ((uint64_t)1 << 0) /* may be dlclose'd before process exit */

typedef struct wick_plugin_api {
  size_t struct_size; /* sizeof(wick_plugin_api) as the plugin was compiled */
  uint32_t abi_major; /* WICK_ABI_MAJOR the plugin was compiled against */
  uint32_t abi_minor; /* WICK_ABI_MINOR the plugin was compiled against */
  const char* name;    /* the plugin's name, e.g. "cpu-onednn"; static */
  const char* version; /* the plugin's own version, e.g. "0.1.0"; static */
  uint64_t flags;      /* WICK_PLUGIN_FLAG_* */

  /* --- errors (1.0). Callable at any time, from any thread. --- */
  wick_status (*error_code)(const wick_error* error);
  /* Owned by the error; valid until error_destroy. Never NULL. */
  const char* (*error_message)(const wick_error* error);
  /* Frees the error. error may be NULL. */
  void (*error_destroy)(wick_error* error);

  /* --- lifecycle (1.0) --- */
  /* Probes the hardware and prepares devices. Called once, before anything else but errors.
   * Unknown option keys and bad option values are WICK_STATUS_INVALID_ARGUMENT errors naming the
   * key. Finding no device is success with result->num_devices == 0 and a reason in message. */
  wick_error* (*initialize)(const wick_initialize_args* args, wick_initialize_result* result);
  /* Releases everything. Called once, after every buffer was freed; not concurrently with
   * anything else. */
  void (*shutdown)(void);

  /* --- devices (1.0) --- */
  /* index < num_devices. *out is valid until shutdown. */
  wick_error* (*device_get)(size_t index, wick_device** out);
  /* Fills props; the host sets props->struct_size first. */
  wick_error* (*device_get_props)(const wick_device* device, wick_device_props* props);
  /* Blocks until all work queued on the device has finished. */
  wick_error* (*device_synchronize)(wick_device* device);

  /* --- buffers (1.0) --- */
  /* Allocates size_bytes (may be 0) of device memory; contents undefined. *out owned by the caller,
   * released with buffer_free. */
  wick_error* (*buffer_allocate)(wick_device* device, uint64_t size_bytes, wick_buffer** out);
  /* Frees a buffer after the work queued on it has finished. buffer may be NULL. */
  void (*buffer_free)(wick_buffer* buffer);
  /* Host -> device. Blocks until src may be reused. */
  wick_error* (*buffer_write)(wick_buffer* dst, uint64_t dst_offset, const void* src, uint64_t size);
  /* Device -> host. Blocks until dst holds the data (waits for queued work). */
  wick_error* (*buffer_read)(const wick_buffer* src, uint64_t src_offset, void* dst, uint64_t size);
  /* Device -> device within this plugin. OPTIONAL (may be NULL): the host stages through host
   * memory otherwise. */
  wick_error* (*buffer_copy)(const wick_buffer* src, uint64_t src_offset, wick_buffer* dst,
                             uint64_t dst_offset, uint64_t size);

  /* --- ops (1.0) --- */
  /* Pure, cheap, thread-safe; may be called before any buffer exists (descriptors carry NULL
   * buffers). Must not fail. */
  wick_support (*op_supports)(const wick_device* device, const wick_op_desc* op);
  /* Enqueues the op on the device's in-order stream. Called only after op_supports said YES. */
  wick_error* (*op_execute)(wick_device* device, const wick_op_desc* op);

  /* --- 1.1 --- */
  /* Current free memory of the device in bytes. OPTIONAL (may be NULL). */
  wick_error* (*device_get_free_memory)(const wick_device* device, uint64_t* free_bytes);

  /* --- 1.5 --- */
  /* A buffer over `size` bytes of host memory at `host`, without a copy (a mapped model file).
   * OPTIONAL (may be NULL), and only for devices with WICK_DEVICE_CAP_HOST_MEMORY: the host copies
   * into buffer_allocate's memory otherwise. The host keeps the memory valid and unchanged until
   * buffer_free, which releases only the plugin's record of it. The buffer is read-only: the host
   * never names it as an op's output nor as the destination of buffer_write or buffer_copy. `host`
   * is aligned to at least 32 bytes (GGUF's default alignment); a plugin that needs more, or that
   * cannot read such memory, fails with WICK_STATUS_UNSUPPORTED and the host copies.
   *
   * A plugin of minor >= 7 gets more (an array shared with NumPy or PyTorch): `host` is aligned
   * only to the element size of the descriptors that will name the buffer (1, 2, 4 or 8 bytes;
   * every element they reach lies inside the `size` bytes and at a multiple of that size from
   * `host`), and `host` is const only for 1.5's sake: the host may name the buffer as an op's
   * output or as the destination of buffer_write or buffer_copy (when its caller asked for a
   * writable tensor), and the plugin then writes there like into any buffer of its own. The memory
   * stays unchanged between calls, as in 1.5, unless the host asked for the buffer's address
   * (buffer_host_address, below): it does so first for every buffer whose memory its owner may
   * change. A plugin that needs more alignment, or that cannot write such memory, declines. */
  wick_error* (*buffer_wrap_host)(wick_device* device, const void* host, uint64_t size,
                                  wick_buffer** out);

  /* --- 1.7 --- */
  /* The host address of the buffer's first byte, in *out. OPTIONAL (may be NULL), and only for
   * devices with WICK_DEVICE_CAP_HOST_MEMORY: the host then has no address for the buffer (an
   * older minor, a device without host memory and an isolated plugin, in another process, neither).
   * A plugin that has none for this buffer fails with WICK_STATUS_UNSUPPORTED. The address is the
   * same on every call and valid until buffer_free; it must not be the address of a copy. The host
   * reads or writes there only when no work queued on the buffer is running: it calls
   * device_synchronize first, and makes no call that uses the buffer while it reads or writes.
   * From the first call on, the buffer's contents may change between calls without buffer_write
   * (the host or its caller wrote there), so the plugin keeps no data derived from them across
   * calls (a prepacked copy of a weight) once it gave the address. Does not synchronize. */
  wick_error* (*buffer_host_address)(wick_device* device, wick_buffer* buffer, void** out);

  /* --- 1.8 --- */
  /* The buffer as the device's own API names it (wick_native_memory, above), for a library that
   * works on device memory itself (NCCL on a CUDA device). OPTIONAL (may be NULL); a plugin that
   * has no such name for this buffer fails with WICK_STATUS_UNSUPPORTED. The address is the same
   * on every call and valid until buffer_free. Foreign work on the memory goes on out->queue, the
   * in-order queue the plugin runs the buffer's work on: queued there after this call, it runs after
   * the work queued on the buffer before, and the plugin's later work runs after it. From the first
   * call on, the contents may change between calls (that work wrote there), so the plugin keeps no
   * data derived from them across calls. Does not synchronize. */
  wick_error* (*buffer_native_memory)(wick_device* device, wick_buffer* buffer,
                                      wick_native_memory* out);
} wick_plugin_api;

/* The size of the table up to and including the last slot of each minor: a plugin whose
 * struct_size is smaller than WICK_PLUGIN_API_SIZE_1_0 is malformed. */
#define WICK_PLUGIN_API_SIZE_1_0 \
  (offsetof(wick_plugin_api, op_execute) + sizeof(((wick_plugin_api*)0)->op_execute))
#define WICK_PLUGIN_API_SIZE_1_1                 \
  (offsetof(wick_plugin_api, device_get_free_memory) + \
   sizeof(((wick_plugin_api*)0)->device_get_free_memory))
/* 1.2 appended a capability bit, no slot: its table is the size of 1.1's. */
#define WICK_PLUGIN_API_SIZE_1_2 WICK_PLUGIN_API_SIZE_1_1
/* 1.3 appended two op codes, no slot. */
#define WICK_PLUGIN_API_SIZE_1_3 WICK_PLUGIN_API_SIZE_1_2
/* 1.4 appended wick_quant_params and three op codes, no slot. */
#define WICK_PLUGIN_API_SIZE_1_4 WICK_PLUGIN_API_SIZE_1_3
#define WICK_PLUGIN_API_SIZE_1_5                  \
  (offsetof(wick_plugin_api, buffer_wrap_host) + \
   sizeof(((wick_plugin_api*)0)->buffer_wrap_host))
/* 1.6 appended wick_quant_params.flags, no slot. */
#define WICK_PLUGIN_API_SIZE_1_6 WICK_PLUGIN_API_SIZE_1_5
#define WICK_PLUGIN_API_SIZE_1_7                     \
  (offsetof(wick_plugin_api, buffer_host_address) + \
   sizeof(((wick_plugin_api*)0)->buffer_host_address))
#define WICK_PLUGIN_API_SIZE_1_8                      \
  (offsetof(wick_plugin_api, buffer_native_memory) + \
   sizeof(((wick_plugin_api*)0)->buffer_native_memory))

/* The entry point every plugin exports under WICK_PLUGIN_ENTRY_SYMBOL. No side effects: it may
 * be called before the host decided to use the plugin. Returns a static table, never NULL. */
typedef const wick_plugin_api* (*wick_plugin_get_api_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WICK_PLUGIN_H */
