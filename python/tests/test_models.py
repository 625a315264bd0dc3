"""wick.models from Python against independent results: embeddings against `wick embed --json` and
sentence-transformers' own (tests/data/models/minilm.expected.safetensors), generation against
`wick generate` and transformers' greedy tokens (tests/data/generate/tiny-llama/expected.json),
a GGUF file against `wick generate`."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import wick

BUILD = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(wick._wick.__file__))))
SOURCE = os.environ.get("WICK_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.environ.get("WICK_MODELS_DIR") or os.path.join(BUILD, "models")
MINILM = os.path.join(MODELS, "all-MiniLM-L6-v2")
TINY_LLAMA = os.path.join(SOURCE, "tests", "data", "generate", "tiny-llama")
GGUF = os.path.join(SOURCE, "tests", "data", "gguf_llama", "tiny-llama.q8_0.gguf")
CLI = os.path.join(BUILD, "bin", "wick")

needs_minilm = pytest.mark.skipif(not os.path.isdir(MINILM), reason="all-MiniLM-L6-v2 not in " + MODELS)
needs_cli = pytest.mark.skipif(not os.access(CLI, os.X_OK), reason="no wick CLI at " + CLI)


def cli(*args):
    env = dict(os.environ, WICK_LOG_LEVEL="off")
    p = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    kinds = {"F32": np.float32, "I64": np.int64}
    return {k: np.frombuffer(blob[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]],
                             dtype=kinds[e["dtype"]]).reshape(e["shape"]).copy()
            for k, e in header.items() if k != "__metadata__"}


@pytest.fixture(scope="module")
def minilm():
    return wick.models.load(MINILM)


@needs_minilm
@needs_cli
def test_embed_matches_the_cli(minilm):
    texts = ["A cat sits on the mat.", "Stocks fell sharply today.", "short"]
    want = np.array(json.loads(cli("embed", "--model", MINILM, "--json", *texts))["embeddings"], np.float32)
    got = minilm.embed(texts)
    assert isinstance(minilm, wick.models.SentenceEmbedder)
    assert got.shape == (3, 384) and got.dtype == wick.float32 and minilm.dimension == 384
    np.testing.assert_allclose(np.asarray(got), want, atol=1e-6)
    np.testing.assert_allclose(np.asarray(minilm.embed("short"))[0], want[2], atol=1e-5)  # one text, one row


@needs_minilm
def test_embed_matches_sentence_transformers(minilm):
    with open(os.path.join(SOURCE, "tests", "data", "models", "minilm.sentences.json")) as f:
        sentences = json.load(f)
    want = read_safetensors(os.path.join(SOURCE, "tests", "data", "models", "minilm.expected.safetensors"))
    got = np.asarray(minilm.embed(sentences))
    np.testing.assert_allclose(got, want["embeddings"], atol=1e-5)
    # encode() of the reference's own token ids gives the same.
    enc = minilm.encode(wick.asarray(want["ids"]), wick.asarray(want["attention_mask"]))
    np.testing.assert_allclose(np.asarray(enc), want["embeddings"], atol=1e-5)
    assert minilm.tokenize(sentences[0]) == [int(i) for i, m in zip(want["ids"][0], want["attention_mask"][0]) if m]


@pytest.fixture(scope="module")
def tiny_llama():
    return wick.models.load(TINY_LLAMA)


def expected_generation():
    with open(os.path.join(TINY_LLAMA, "expected.json")) as f:
        return json.load(f)


def test_generate_ids_match_transformers(tiny_llama):
    exp = expected_generation()
    assert isinstance(tiny_llama, wick.models.CausalLM) and tiny_llama.model_type == "llama"
    for case in exp["greedy"]:
        assert tiny_llama.generate_ids([case["prompt"]], max_tokens=12) == [case["new"]]
    assert tiny_llama.generate_ids(exp["batch"]["prompts"], max_tokens=12) == exp["batch"]["new"]
    text = exp["text"]
    assert tiny_llama.encode(text["prompt"]) == text["prompt_ids"]
    assert tiny_llama.generate(text["prompt"], max_tokens=12) == text["text"]
    assert tiny_llama.decode(text["new"]) == text["text"]
    logits = tiny_llama.forward(wick.asarray([text["prompt_ids"]]))
    assert logits.shape == (1, len(text["prompt_ids"]), tiny_llama.vocab_size)
    assert int(wick.argmax(logits[0, -1])) == text["new"][0]


@needs_cli
@pytest.mark.parametrize("model", [TINY_LLAMA, GGUF], ids=["directory", "gguf"])
def test_generate_matches_the_cli(model):
    prompt = "The quick brown fox"
    lm = wick.models.load(model)
    want = cli("generate", "--model", model, "--prompt", prompt, "--max-tokens", "10")
    assert lm.generate(prompt, max_tokens=10) + "\n" == want
    sampled = cli("generate", "--model", model, "--prompt", prompt, "--max-tokens", "10", "--temperature", "0.8",
                  "--top-k", "20", "--seed", "7")
    assert lm.generate(prompt, max_tokens=10, temperature=0.8, top_k=20, seed=7) + "\n" == sampled


def test_model_errors_are_python_exceptions(tmp_path):
    with pytest.raises(RuntimeError, match="config.json"):
        wick.models.load(str(tmp_path))
    lm = wick.models.load(TINY_LLAMA)
    with pytest.raises(Exception, match="top_p"):
        lm.generate("hi", top_p=2.0)
    with pytest.raises(ValueError, match="dtype"):
        wick.models.load(TINY_LLAMA, dtype="int8")


def test_generate_streams_and_stops(tiny_llama):
    text = expected_generation()["text"]
    pieces = []
    assert tiny_llama.generate(text["prompt"], max_tokens=12, on_token=pieces.append) == text["text"]
    assert "".join(pieces) == text["text"] and len(pieces) > 1
    seen = []
    short = tiny_llama.generate(text["prompt"], max_tokens=12, on_token=lambda p: seen.append(p) or len(seen) < 2)
    assert short == "".join(seen) and len(seen) == 2 and text["text"].startswith(short)

    def fail(piece):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        tiny_llama.generate(text["prompt"], on_token=fail)
