// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "model/model.hpp"

#include "model/arch/ced_weights.hpp"
#include "model/load_tasks.hpp"

#include "model/tokenizer/chat_template.hpp"
#include "formats/tensor_type_dequant.hpp"
#include "model/tokenizer/tokenizer.hpp"
#include "model/tokenizer/tokenizer_gguf.hpp"
#include "util/dtype.hpp"
#include "util/error.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>

namespace kvrt {

std::array<uint8_t, 16> ModelFingerprint::bytes() const noexcept {
    std::array<uint8_t, 16> b{};
    for (int i = 0; i < 8; ++i) {
        b[i] = static_cast<uint8_t>(lo >> (8 * i));
        b[8 + i] = static_cast<uint8_t>(hi >> (8 * i));
    }
    return b;
}

std::string ModelFingerprint::hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                  static_cast<unsigned long long>(lo));
    return buf;
}

Model::~Model() = default;

bool Model::is_eog(int32_t token) const noexcept { return tok_ && tok_->is_end_of_generation(token); }

std::string_view Model::token_piece(int32_t token) const { return tok_ ? tok_->piece(token, false) : std::string_view(); }

const Tokenizer& Model::tokenizer() const {
    if (!tok_)
        fail(KVRT_ERR_UNSUPPORTED, "model '" + name_ + "' (" + arch_ +
                                       ") has no vocabulary (no tokenizer.ggml.* metadata): pass token ids");
    return *tok_;
}

void Model::embed(int32_t token, float* out) const {
    tok_embd_->dequantize_row(token, out);
    if (cfg_.embd_scale != 1.0f)
        for (uint32_t i = 0; i < cfg_.n_embd; ++i) out[i] *= cfg_.embd_scale;
}

std::string Model::apply_chat(std::span<const ChatMessage> messages, bool add_assistant) const {
    if (!chat_) fail(KVRT_ERR_UNSUPPORTED, chat_error_);
    return chat_->render(messages, add_assistant);
}

namespace {

// A norm weight vector of n elements (f32 / f16 / bf16 in the file).
std::vector<float> read_vector(const GgufFile& f, const std::string& name, uint32_t n) {
    const GgufTensor& t = f.expect_tensor(name, {n}, {TensorType::F32, TensorType::F16, TensorType::BF16});
    std::vector<float> v(n);
    for (uint32_t i = 0; i < n; ++i) {
        switch (t.type) {
            case TensorType::F32: std::memcpy(&v[i], t.data + 4ull * i, 4); break;
            case TensorType::F16: {
                uint16_t h;
                std::memcpy(&h, t.data + 2ull * i, 2);
                v[i] = f16_to_f32(h);
                break;
            }
            default: {
                uint16_t h;
                std::memcpy(&h, t.data + 2ull * i, 2);
                v[i] = bf16_to_f32(h);
                break;
            }
        }
    }
    return v;
}

// Every type kvrt can compute with: packed as is, or dequantised to f32 first.
constexpr std::initializer_list<TensorType> kMatmulTypes = {
    TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
    TensorType::Q5_1, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K};

// F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K (kernels/weight_matmul.hpp).
bool packs_natively(TensorType t) { return PackedWeight::supports(t); }

struct PackJob {
    const GgufTensor* t;
    std::unique_ptr<PackedWeight>* dst;
};

}  // namespace

std::shared_ptr<const Model> Model::load(const std::string& path, const ModelLoadOptions& opts) {
    std::shared_ptr<Model> m(new Model());
    const LoadTasks::Report report = [&](float frac, const char* stage) {
        if (opts.progress && !opts.progress(frac, stage))
            fail(KVRT_ERR_CANCELLED, path + ": loading cancelled by the progress callback");
    };
    report(0.0f, "load");
    m->file_ = std::make_unique<GgufFile>(GgufFile::open(path));
    const GgufFile& f = *m->file_;
    m->arch_ = std::string(f.architecture());
    m->name_ = std::string(f.get_string("general.name", ""));
    m->arch_info_ = find_architecture(m->arch_);
    if (!m->arch_info_)
        fail(KVRT_ERR_UNSUPPORTED, path + ": general.architecture '" + m->arch_ +
                                       "' is not supported (kvrt runs: " + supported_architectures() + ")");
    if (m->arch_info_->family == ArchFamily::Decoder) m->cfg_ = m->arch_info_->decoder_config(f);
    for (const GgufTensor& t : f.tensors()) {
        m->n_params_ += t.n_elements;
        m->weight_bytes_ += t.n_bytes;
    }

    // The fingerprint hash, the tokenizer and (decoder models) the repacking of every matmul
    // weight run as tasks of one parallel region: the hash and the tokenizer are serial and took
    // a quarter of a load's CPU time before the packing began.
    LoadTasks tasks;
    const uint64_t total = f.file_size();
    // The hash's cost in the progress: about a fifth of packing the same bytes.
    tasks.add(total / 5, "hash", [m, &f, total](LoadTasks::Tick& tick) {
        // XXH3-128 over the whole mapped file (metadata + tensor data), in slices so that the
        // progress moves and a stopping load does not wait for the rest.
        const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(), &XXH3_freeState);
        if (!st) throw std::bad_alloc();
        XXH3_128bits_reset(st.get());
        const uint64_t slice = 16ull << 20;
        for (uint64_t off = 0; off < total; off += slice) {
            const uint64_t n = std::min(slice, total - off);
            XXH3_128bits_update(st.get(), f.base() + off, static_cast<size_t>(n));
            if (!tick.advance(n / 5)) break;
        }
        const XXH128_hash_t h = XXH3_128bits_digest(st.get());
        m->fp_.lo = h.low64;
        m->fp_.hi = h.high64;
    }, /*on_caller=*/true);
    const bool has_vocab = f.has("tokenizer.ggml.model") || m->arch_info_->family == ArchFamily::Decoder;
    if (has_vocab)
        tasks.add(0, "load", [m, &f](LoadTasks::Tick&) { m->tok_ = std::make_unique<Tokenizer>(tokenizer_from_gguf(f)); });
    if (!m->is_ced()) m->plan_decoder(opts, tasks);
    // A CED model's weights load after the region (ced_weights.cpp): its share starts at 0.3.
    tasks.run(opts.n_threads, 0.0f, m->is_ced() ? 0.3f : 1.0f, report);

    if (has_vocab) {
        try {
            auto text = [&](int32_t id) { return id >= 0 ? m->tok_->token_text(id) : std::string_view(); };
            m->chat_ = std::make_unique<ChatTemplate>(
                ChatTemplate::detect(m->tok_->chat_template(), text(m->tok_->bos_id()), text(m->tok_->eos_id())));
        } catch (const Error& e) {
            // A model without a known template still loads; kvrt_model_chat_apply reports why.
            m->chat_error_ = e.what();
        }
    } else {
        m->chat_error_ = "model '" + m->name_ + "' has no vocabulary, hence no chat template";
    }
    if (m->is_ced()) {
        m->ced_ = ced::CedWeights::load(f);
        m->set_ced_sizes();
        if (m->tok_ && static_cast<uint32_t>(m->tok_->n_tokens()) != m->cfg_.n_vocab)
            fail(KVRT_ERR_BAD_FORMAT, path + ": the tokenizer has " + std::to_string(m->tok_->n_tokens()) +
                                          " tokens but ced.vocab_size is " + std::to_string(m->cfg_.n_vocab));
    } else {
        if (static_cast<uint32_t>(m->tok_->n_tokens()) != m->cfg_.n_vocab)
            fail(KVRT_ERR_BAD_FORMAT, path + ": the tokenizer has " + std::to_string(m->tok_->n_tokens()) +
                                          " tokens but token_embd.weight has " + std::to_string(m->cfg_.n_vocab) + " rows");
        m->output_ = m->output_own_ ? m->output_own_.get() : m->tok_embd_.get();
    }
    report(1.0f, "pack");
    return m;
}

void Model::set_ced_sizes() {
    const ced::CedConfig& cc = ced_->cfg;
    cfg_ = DecoderConfig{};
    cfg_.n_layers = static_cast<uint32_t>(cc.n_layers);
    cfg_.n_embd = static_cast<uint32_t>(cc.n_embd);
    cfg_.n_ff = static_cast<uint32_t>(cc.n_ff);
    cfg_.n_heads = static_cast<uint32_t>(cc.n_heads);
    cfg_.n_kv_heads = 1;
    cfg_.head_dim = static_cast<uint32_t>(cc.entry_dim);
    cfg_.n_vocab = static_cast<uint32_t>(cc.n_vocab);
    cfg_.n_ctx_train = cc.n_ctx_train > 0 ? static_cast<uint32_t>(cc.n_ctx_train) : (1u << 20);
    cfg_.n_rot = static_cast<uint32_t>(cc.rope_dims);
    cfg_.rope_theta = cc.rope_theta;
    cfg_.rms_eps = cc.rms_eps;
    cfg_.sliding_window = static_cast<uint32_t>(cc.window);
}

void Model::plan_decoder(const ModelLoadOptions& opts, LoadTasks& tasks) {
    Model* m = this;
    const GgufFile& f = *file_;
    const std::string& path = f.path();
    DecoderConfig& c = cfg_;

    // Tensors and their shapes (ggml order: ne[0] = the row length K).
    const GgufTensor* te = &f.require_tensor("token_embd.weight");
    if (te->n_dims != 2 || te->ne[0] != c.n_embd || te->ne[1] == 0 || te->ne[1] > (1u << 24))
        fail(KVRT_ERR_BAD_FORMAT, path + ": token_embd.weight has shape " + te->shape_string() + ", expected [" +
                                      std::to_string(c.n_embd) + ", n_vocab]");
    c.n_vocab = static_cast<uint32_t>(te->ne[1]);  // checked against the tokenizer once it is built
    f.expect_tensor("token_embd.weight", {c.n_embd, c.n_vocab}, kMatmulTypes);

    std::vector<PackJob> jobs;
    jobs.push_back({te, &m->tok_embd_});
    if (f.find_tensor("output.weight") != nullptr)
        jobs.push_back({&f.expect_tensor("output.weight", {c.n_embd, c.n_vocab}, kMatmulTypes), &m->output_own_});
    m->output_norm_ = read_vector(f, "output_norm.weight", c.n_embd);
    m->layers_.resize(c.n_layers);
    for (uint32_t i = 0; i < c.n_layers; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        DecoderLayerWeights& L = m->layers_[i];
        L.attn_norm = read_vector(f, p + "attn_norm.weight", c.n_embd);
        L.ffn_norm = read_vector(f, p + "ffn_norm.weight", c.n_embd);
        if (c.qkv_bias) {
            L.bq = read_vector(f, p + "attn_q.bias", c.q_dim());
            L.bk = read_vector(f, p + "attn_k.bias", c.kv_dim());
            L.bv = read_vector(f, p + "attn_v.bias", c.kv_dim());
        }
        if (c.qk_norm) {
            L.q_norm = read_vector(f, p + "attn_q_norm.weight", c.head_dim);
            L.k_norm = read_vector(f, p + "attn_k_norm.weight", c.head_dim);
        }
        if (c.post_norms) {
            L.post_attn_norm = read_vector(f, p + "post_attention_norm.weight", c.n_embd);
            L.post_ffn_norm = read_vector(f, p + "post_ffw_norm.weight", c.n_embd);
        }
        jobs.push_back({&f.expect_tensor(p + "attn_q.weight", {c.n_embd, c.q_dim()}, kMatmulTypes), &L.wq});
        jobs.push_back({&f.expect_tensor(p + "attn_k.weight", {c.n_embd, c.kv_dim()}, kMatmulTypes), &L.wk});
        jobs.push_back({&f.expect_tensor(p + "attn_v.weight", {c.n_embd, c.kv_dim()}, kMatmulTypes), &L.wv});
        jobs.push_back({&f.expect_tensor(p + "attn_output.weight", {c.q_dim(), c.n_embd}, kMatmulTypes), &L.wo});
        jobs.push_back({&f.expect_tensor(p + "ffn_gate.weight", {c.n_embd, c.n_ff}, kMatmulTypes), &L.w_gate});
        jobs.push_back({&f.expect_tensor(p + "ffn_up.weight", {c.n_embd, c.n_ff}, kMatmulTypes), &L.w_up});
        jobs.push_back({&f.expect_tensor(p + "ffn_down.weight", {c.n_ff, c.n_embd}, kMatmulTypes), &L.w_down});
    }
    // Every matmul weight is allocated here and packed by tasks of about kSliceElems elements
    // (whole panel pairs), so that the largest tensor (a tied embedding is a quarter to two thirds
    // of a Q4_K_M file's elements) does not leave one thread packing it while the others wait.
    constexpr uint64_t kSliceElems = uint64_t{4} << 20;
    for (const PackJob& job : jobs) {
        const GgufTensor& t = *job.t;
        const bool as_f32 = opts.f32_weights || !packs_natively(t.type);
        if (as_f32 && !dequant_supported(t.type))
            fail(KVRT_ERR_UNSUPPORTED, path + ": tensor " + std::string(t.name) + " has type " + tensor_type_name(t.type) +
                                           ", which kvrt cannot compute with");
        const int64_t rows = static_cast<int64_t>(t.n_rows()), k = static_cast<int64_t>(t.row_elems());
        *job.dst = std::make_unique<PackedWeight>(as_f32 ? TensorType::F32 : t.type, rows, k, PackedWeight::Unpacked{});
        PackedWeight* w = job.dst->get();
        const int64_t align = PackedWeight::kPackRowAlign;
        const int64_t step = std::max<int64_t>(align, static_cast<int64_t>(kSliceElems) / k / align * align);
        for (int64_t first = 0; first < rows; first += step) {
            const int64_t n = std::min(step, rows - first);
            const uint64_t bytes = t.row_bytes * static_cast<uint64_t>(n);
            tasks.add(bytes, "pack", [&t, w, first, n, as_f32](LoadTasks::Tick&) {
                if (as_f32) {
                    std::vector<float> f(static_cast<size_t>(n) * t.row_elems());
                    dequantize_rows_f32(t, static_cast<uint64_t>(first), static_cast<uint64_t>(n), f.data());
                    w->pack_rows(first, n, f.data());
                } else {
                    w->pack_rows(first, n, t.row(static_cast<uint64_t>(first)));
                }
            });
        }
    }
}

uint64_t Model::decode_weight_bytes() const noexcept {
    if (is_ced() || output_ == nullptr) return weight_bytes_;
    auto vec = [](const std::vector<float>& v) { return static_cast<uint64_t>(v.size() * sizeof(float)); };
    auto packed = [](const std::unique_ptr<PackedWeight>& w) { return w ? static_cast<uint64_t>(w->bytes()) : 0ull; };
    uint64_t b = output_->bytes() + vec(output_norm_) + tok_embd_->row_bytes();
    for (const DecoderLayerWeights& L : layers_) {
        b += packed(L.wq) + packed(L.wk) + packed(L.wv) + packed(L.wo) + packed(L.w_gate) + packed(L.w_up) +
             packed(L.w_down);
        b += vec(L.attn_norm) + vec(L.ffn_norm) + vec(L.bq) + vec(L.bk) + vec(L.bv) + vec(L.q_norm) + vec(L.k_norm) +
             vec(L.post_attn_norm) + vec(L.post_ffn_norm);
    }
    return b;
}

}  // namespace kvrt
