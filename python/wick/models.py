"""Ready models from Hugging Face directories and GGUF files (wick::models from Python).

    m = wick.models.load("build/models/all-MiniLM-L6-v2")
    e = m.embed(["A cat sits.", "Stocks fell."])          # [2, 384] f32, unit rows
    lm = wick.models.load("tinyllama.Q4_K_M.gguf")
    print(lm.generate("Once upon a time", max_tokens=32))  # greedy unless temperature > 0

``load`` picks the model by config.json's model_type: "bert" gives a SentenceEmbedder (BERT with
sentence-transformers' pooling and normalisation when the directory has modules.json, as `wick
embed`), "llama", "mistral", "qwen2", "gpt2" and GGUF files a CausalLM (as `wick generate`). The
model's long calls (embed, generate, forward) release the GIL; a loaded model may be shared by
threads.
"""
from ._wick import DType as _DType
from ._wick import models as _models

SentenceEmbedder = _models.SentenceEmbedder
CausalLM = _models.CausalLM
model_type = _models.model_type

__all__ = ["load", "SentenceEmbedder", "CausalLM", "model_type"]

_DTYPES = {"f32": _DType.float32, "float32": _DType.float32, "bf16": _DType.bfloat16,
           "bfloat16": _DType.bfloat16, "f16": _DType.float16, "float16": _DType.float16}


def _dtype(dtype):
    if dtype is None or dtype == "auto":
        return None
    if isinstance(dtype, _DType):
        return dtype
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ValueError("dtype %r: expected float32, bfloat16, float16 or 'auto' (the checkpoint's own)"
                         % (dtype,)) from None


def load(path, device=None, dtype="float32", round_activations=True):
    """The model of a directory or GGUF file at ``path`` on ``device`` (None: the default device)
    as ``dtype`` (float32, bfloat16, float16, or "auto"/None for the checkpoint's own).
    ``round_activations``: GGUF only, llama.cpp's 8-bit rounding of activations (docs/models.md).
    Returns a SentenceEmbedder (model_type "bert") or a CausalLM."""
    path = str(path)
    kind = model_type(path)
    if kind == "bert":
        return SentenceEmbedder(path, device, _dtype(dtype))
    return CausalLM(path, device, _dtype(dtype), round_activations)
