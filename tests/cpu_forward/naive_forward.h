#pragma once
// A second, deliberately plain implementation of the same model: one sequence from position 0,
// every activation a nested vector, triple loops, no cache, no BLAS, double accumulators. The
// tests hold CpuModel to it.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "test_model.h"

namespace paceline::testing {

using Matrix = std::vector<std::vector<double>>;

// y[t][o] = sum_i x[t][i] * w[o * in + i]
inline Matrix naive_matmul(const Matrix& x, const std::vector<float>& w, size_t out) {
  size_t in = x[0].size();
  Matrix y(x.size(), std::vector<double>(out, 0.0));
  for (size_t t = 0; t < x.size(); ++t)
    for (size_t o = 0; o < out; ++o)
      for (size_t i = 0; i < in; ++i) y[t][o] += x[t][i] * w[o * in + i];
  return y;
}

inline std::vector<double> naive_rms_norm(const std::vector<double>& x, const std::vector<float>& w,
                                          double eps) {
  double ms = 0.0;
  for (double v : x) ms += v * v;
  ms /= static_cast<double>(x.size());
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] / std::sqrt(ms + eps) * w[i];
  return y;
}

// HF's llama3 rule, written out again from its definition.
inline double naive_inv_freq(const ModelConfig& c, size_t i) {
  double f = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / c.head_dim);
  if (!c.rope_scaling) return f;
  const RopeScaling& s = *c.rope_scaling;
  double wavelen = 2 * std::numbers::pi / f;
  double orig = static_cast<double>(s.original_max_position_embeddings);
  if (wavelen < orig / s.high_freq_factor) return f;
  if (wavelen > orig / s.low_freq_factor) return f / s.factor;
  double smooth = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1 - smooth) * f / s.factor + smooth * f;
}

// Rotate-half RoPE on one head, in place.
inline void naive_rope(std::vector<double>& x, size_t offset, const ModelConfig& c, size_t pos) {
  size_t half = static_cast<size_t>(c.head_dim) / 2;
  for (size_t i = 0; i < half; ++i) {
    double a = static_cast<double>(pos) * naive_inv_freq(c, i);
    double x1 = x[offset + i], x2 = x[offset + half + i];
    x[offset + i] = x1 * std::cos(a) - x2 * std::sin(a);
    x[offset + half + i] = x2 * std::cos(a) + x1 * std::sin(a);
  }
}

// Logits for every position of `tokens`: [tokens.size()][vocab].
inline std::vector<float> naive_forward(const ModelConfig& c, const TestWeights& w,
                                        const std::vector<int32_t>& tokens) {
  const size_t n = tokens.size(), hidden = c.hidden_size, hd = c.head_dim;
  const size_t heads = c.num_attention_heads, kv_heads = c.num_key_value_heads;
  const std::vector<float>& embed = w.values("model.embed_tokens.weight");
  Matrix x(n, std::vector<double>(hidden));
  for (size_t t = 0; t < n; ++t)
    for (size_t i = 0; i < hidden; ++i) x[t][i] = embed[tokens[t] * hidden + i];

  for (int64_t layer = 0; layer < c.num_hidden_layers; ++layer) {
    auto name = [&](const char* s) { return "model.layers." + std::to_string(layer) + "." + s; };
    Matrix h(n);
    for (size_t t = 0; t < n; ++t)
      h[t] = naive_rms_norm(x[t], w.values(name("input_layernorm.weight")), c.rms_norm_eps);
    Matrix q = naive_matmul(h, w.values(name("self_attn.q_proj.weight")), heads * hd);
    Matrix k = naive_matmul(h, w.values(name("self_attn.k_proj.weight")), kv_heads * hd);
    Matrix v = naive_matmul(h, w.values(name("self_attn.v_proj.weight")), kv_heads * hd);
    // QK-norm (Qwen3) then RoPE, head by head.
    auto norm_and_rotate = [&](Matrix& m, size_t num_heads, const char* norm_name) {
      for (size_t t = 0; t < n; ++t) {
        for (size_t head = 0; head < num_heads; ++head) {
          if (c.qk_norm) {
            std::vector<double> part(m[t].begin() + head * hd, m[t].begin() + (head + 1) * hd);
            part = naive_rms_norm(part, w.values(name(norm_name)), c.rms_norm_eps);
            std::copy(part.begin(), part.end(), m[t].begin() + head * hd);
          }
          naive_rope(m[t], head * hd, c, t);
        }
      }
    };
    norm_and_rotate(q, heads, "self_attn.q_norm.weight");
    norm_and_rotate(k, kv_heads, "self_attn.k_norm.weight");
    Matrix attn(n, std::vector<double>(heads * hd, 0.0));
    for (size_t t = 0; t < n; ++t) {
      for (size_t head = 0; head < heads; ++head) {
        size_t kvh = head / (heads / kv_heads);
        std::vector<double> p(t + 1);
        double mx = -INFINITY, sum = 0.0;
        for (size_t j = 0; j <= t; ++j) {
          double s = 0.0;
          for (size_t d = 0; d < hd; ++d) s += q[t][head * hd + d] * k[j][kvh * hd + d];
          p[j] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, p[j]);
        }
        for (double& e : p) sum += (e = std::exp(e - mx));
        for (size_t j = 0; j <= t; ++j)
          for (size_t d = 0; d < hd; ++d) attn[t][head * hd + d] += p[j] / sum * v[j][kvh * hd + d];
      }
    }
    Matrix o = naive_matmul(attn, w.values(name("self_attn.o_proj.weight")), hidden);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < hidden; ++i) x[t][i] += o[t][i];

    for (size_t t = 0; t < n; ++t)
      h[t] =
          naive_rms_norm(x[t], w.values(name("post_attention_layernorm.weight")), c.rms_norm_eps);
    size_t inter = c.intermediate_size;
    Matrix gate = naive_matmul(h, w.values(name("mlp.gate_proj.weight")), inter);
    Matrix up = naive_matmul(h, w.values(name("mlp.up_proj.weight")), inter);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < inter; ++i)
        gate[t][i] = gate[t][i] / (1 + std::exp(-gate[t][i])) * up[t][i];
    Matrix down = naive_matmul(gate, w.values(name("mlp.down_proj.weight")), hidden);
    for (size_t t = 0; t < n; ++t)
      for (size_t i = 0; i < hidden; ++i) x[t][i] += down[t][i];
  }

  Matrix final_h(n);
  for (size_t t = 0; t < n; ++t)
    final_h[t] = naive_rms_norm(x[t], w.values("model.norm.weight"), c.rms_norm_eps);
  const char* head_name = c.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  Matrix logits = naive_matmul(final_h, w.values(head_name), c.vocab_size);
  std::vector<float> out;
  for (const auto& row : logits)
    for (double v : row) out.push_back(static_cast<float>(v));
  return out;
}

}  // namespace paceline::testing
