// wick/models/models.hpp — the models layer in one include: model directories and configs, KV
// caches, BERT and sentence embeddings, causal language models.
#pragma once

#include <wick/models/bert.hpp>
#include <wick/models/causal_lm.hpp>
#include <wick/models/config.hpp>
#include <wick/models/kv_cache.hpp>
