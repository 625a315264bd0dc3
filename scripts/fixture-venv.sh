#!/usr/bin/env bash
# Makes (once) the Python venv that the model and tokenizer fixture scripts run in, and prints its
# python: Debian's python3 and torch 1.13 (system site packages) with transformers, tokenizers and
# sentence-transformers from PyPI at versions that work with that torch. Only fixture scripts use
# it; tests read the fixtures they wrote (checked in), never this venv.
#   "$(scripts/fixture-venv.sh)" models/fixtures/make_fixtures.py
# WICK_FIXTURE_VENV overrides the place (default: build/fixture-venv).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${WICK_FIXTURE_VENV:-$root/build/fixture-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import transformers, tokenizers, sentence_transformers, gguf, sentencepiece" 2>/dev/null; then
  /usr/bin/python3 -m venv --system-site-packages "$venv" >&2
  "$venv/bin/pip" install -q "transformers==4.46.3" "tokenizers==0.20.3" "safetensors==0.8.0" \
    "numpy<2" "scipy<1.14" "scikit-learn<1.6" "gguf==0.19.0" "sentencepiece==0.2.3" >&2
  # Without its dependencies: they would bring PyPI's torch 2 over Debian's torch 1.13.
  "$venv/bin/pip" install -q --no-deps "sentence-transformers==3.0.1" >&2
fi
echo "$venv/bin/python"
