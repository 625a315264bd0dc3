// Sentence embeddings with a sentence-transformers directory (e.g. all-MiniLM-L6-v2): tokenize,
// encode (BERT, mean pooling, normalisation), and compare the sentences by cosine similarity.
//
//   wick-example-embed build/models/all-MiniLM-L6-v2 "A cat sits." "A kitten is sitting." "Stocks fell."
#include <wick/models/bert.hpp>
#include <wick/tokenizers/tokenizer.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) try {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR TEXT...\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::vector<std::string> texts(argv + 2, argv + argc);
  const auto embedder = wick::models::SentenceEmbedder::load(dir);
  auto tok = wick::tokenizers::Tokenizer::from_file(dir + "/tokenizer.json");
  auto pad = tok.padding().value_or(wick::tokenizers::Padding{});
  pad.length = std::nullopt;  // to the longest text of the batch
  tok.set_padding(pad);
  const auto enc = tok.encode_batch(texts);
  std::vector<int64_t> ids, mask;
  for (const auto& e : enc) {
    ids.insert(ids.end(), e.ids.begin(), e.ids.end());
    mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
  }
  const wick::Shape shape{static_cast<int64_t>(texts.size()), static_cast<int64_t>(enc[0].size())};
  const wick::Tensor e = embedder->encode(wick::Tensor::from_vector(ids, shape), wick::Tensor::from_vector(mask, shape));
  // Unit rows: their dot products are the cosine similarities.
  const std::vector<float> sim = e.matmul(e.t()).to_vector<float>();
  std::printf("%zu embeddings of %lld values; cosine similarities:\n", texts.size(), static_cast<long long>(e.dim(1)));
  for (size_t i = 0; i < texts.size(); ++i) {
    for (size_t j = 0; j < texts.size(); ++j) std::printf(" %6.3f", static_cast<double>(sim[i * texts.size() + j]));
    std::printf("   %s\n", texts[i].c_str());
  }
  return 0;
} catch (const std::exception& ex) {
  std::cerr << "error: " << ex.what() << "\n";
  return 1;
}
