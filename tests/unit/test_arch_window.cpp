// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Gemma 3's sliding windows on the real model (gemma-3-270m: 18 layers, every
// 6th global, the other 15 local with W = 512; 1 KV head of 256).
//
// 1. Memory: the KV bytes a sequence holds equal the window manager's rule,
//    derived here from the model config alone: after an append that started
//    at position `old`, a window layer keeps the blocks from
//    floor(max(0, old - W + 1) / bt) on (queries at old.. read from
//    old - W + 1; blocks wholly before return to the pool), a full layer all
//    ceil(n / bt) blocks. The same model with every layer full holds more.
// 2. Exactness past the window: a ~700-token prompt (window layers drop
//    blocks), a prefix hit beyond the window, edits beyond it (one the
//    sequence can truncate to, one the window already dropped the rows of, so
//    the prefix cache serves it): every result equals the uncached forward,
//    bit for bit, and each resume point is the one the window rule allows.
// 3. The rule of a prefix hit itself (cache/README.md): full layers holding a
//    prefix is not enough; the window blocks the resuming query reads must be
//    there too.
#include "cache/cache.hpp"
#include "runtime_test_support.hpp"

#include <doctest/doctest.h>

#include <numeric>
#include <string>

using namespace kvrt;
using kvrt::test::bit_equal;
using kvrt::test::small_params;
using kvrt::test::uncached_last;

namespace {

constexpr int64_t kBt = 16;

// The window rule and the byte formula, from the model config only.
struct WindowGeom {
    int64_t W = 0, bt = kBt;
    int64_t n_full = 0, n_window = 0;
    uint64_t layer_block_bytes = 0;  // K + V of one layer for bt positions

    explicit WindowGeom(const DecoderConfig& c, int64_t block_tokens = kBt) : W(c.sliding_window), bt(block_tokens) {
        for (uint32_t l = 0; l < c.n_layers; ++l) (c.layer_is_window(l) ? n_window : n_full)++;
        const uint64_t row = uint64_t(c.n_kv_heads) * c.head_dim * 2;  // f16
        layer_block_bytes = 2 * row * uint64_t(bt);
    }
    int64_t blocks(int64_t n) const { return (n + bt - 1) / bt; }
    // Window blocks dropped once an append started at `old`.
    int64_t dropped(int64_t old) const { return std::max<int64_t>(0, old - W + 1) / bt; }
    uint64_t full_bytes(int64_t n) const { return uint64_t(n_full) * layer_block_bytes * uint64_t(blocks(n)); }
    uint64_t window_bytes(int64_t n, int64_t dropped_blocks) const {
        return uint64_t(n_window) * layer_block_bytes * uint64_t(blocks(n) - dropped_blocks);
    }
    uint64_t bytes(int64_t n, int64_t last_old) const { return full_bytes(n) + window_bytes(n, dropped(last_old)); }
    uint64_t all_full_bytes(int64_t n) const { return uint64_t(n_full + n_window) * layer_block_bytes * uint64_t(blocks(n)); }
    // May a sequence whose windows dropped `dropped_blocks` blocks be truncated to p?
    bool truncate_allowed(int64_t p, int64_t dropped_blocks) const {
        return p == 0 || std::max<int64_t>(0, p - W + 1) / bt >= dropped_blocks;
    }
};

struct Gemma {
    bool ok = false;
    std::shared_ptr<const Model> m;
    Gemma() : ok(kvrt::test::real_model_available("gemma3")) {
        if (ok) {
            m = kvrt::test::real_model("gemma3");
            REQUIRE(m->config().sliding_window == 512);
            REQUIRE(m->config().swa_pattern == 6);
        }
    }
    size_t vocab() const { return m->config().n_vocab; }
};

// A prompt of exactly n tokens (numbered sentences, cut to n).
std::vector<int32_t> long_prompt(const Model& m, size_t n) {
    static const char* const kThings[] = {"apples", "bolts", "cables", "drums", "eggs", "flutes", "gears", "hats"};
    std::string text = "Depot log.";
    std::vector<int32_t> t;
    for (int i = 1; t.size() < n; ++i) {
        for (int j = 0; j < 16; ++j, ++i)
            text += " Note " + std::to_string(i) + ": lorry " + std::to_string(i * 7 % 31) + " left at " +
                    std::to_string(6 + i % 12) + ":" + std::to_string(10 + i % 50) + " with " + std::to_string(3 + i % 17) +
                    " crates of " + kThings[i % 8] + ".";
        t = m.tokenizer().encode(text, EncodeOptions{true, false});
    }
    t.resize(n);
    return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("gemma3 window: the KV bytes a sequence holds equal the window formula, all layers full hold more") {
    const Gemma G;
    if (!G.ok) return;
    const WindowGeom g(G.m->config());
    CHECK(g.n_full == 3);
    CHECK(g.n_window == 15);
    const int64_t n_prompt = 2000, n_batch = 512, decode_steps = 40;
    cache::CacheConfig win = runtime::cache_config_for(*G.m, DType::F16, kBt, 1ull << 30);
    cache::CacheConfig full = win;
    for (cache::LayerSpec& s : full.layers) {
        s.kind = cache::LayerKind::Full;
        s.window = 0;
    }
    cache::Cache cw(win), cf(full);
    const cache::SeqId sw = cw.create_sequence(), sf = cf.create_sequence();
    std::vector<int32_t> toks(n_prompt + decode_steps);
    std::iota(toks.begin(), toks.end(), 1);
    // As the Context appends: the prompt in n_batch chunks, then one token per decode step.
    int64_t n = 0, old = 0;
    auto step = [&](int64_t len) {
        old = n;
        cw.append(sw, toks.data() + n, len);
        cf.append(sf, toks.data() + n, len);
        n += len;
        cw.mark_computed(sw, n);
        cf.mark_computed(sf, n);
        const cache::SeqInfo iw = cw.seq_info(sw), inf = cf.seq_info(sf);
        CHECK_MESSAGE(iw.bytes == g.bytes(n, old), "length " << n << " after an append from " << old);
        CHECK(iw.bytes_by_kind[int(cache::LayerKind::Full)] == g.full_bytes(n));
        CHECK(iw.bytes_by_kind[int(cache::LayerKind::Window)] == g.window_bytes(n, g.dropped(old)));
        CHECK(inf.bytes == g.all_full_bytes(n));
        if (g.dropped(old) > 0) CHECK(iw.bytes < inf.bytes);
        else CHECK(iw.bytes == inf.bytes);
    };
    while (n < n_prompt) step(std::min(n_batch, n_prompt - n));
    // After the prompt the window layers still hold what the last chunk's queries read.
    CHECK(cw.seq_info(sw).bytes == g.full_bytes(n_prompt) + g.window_bytes(n_prompt, g.dropped(1536)));
    for (int64_t i = 0; i < decode_steps; ++i) step(1);
    // Steady state: the window layers hold the blocks covering the last W positions.
    const int64_t len = n_prompt + decode_steps;
    CHECK(g.blocks(len) - g.dropped(len - 1) <= g.W / g.bt + 1);
    CHECK(cw.seq_info(sw).bytes == g.full_bytes(len) + g.window_bytes(len, g.dropped(len - 1)));
    MESSAGE("gemma3 at " << len << " tokens: " << cw.seq_info(sw).bytes << " bytes (window formula) vs "
                         << cf.seq_info(sf).bytes << " with every layer full");
    cw.check_invariants();
}

TEST_CASE("gemma3 window: a prefix hit needs the window blocks its first query reads, not only the full layers'") {
    const Gemma G;
    if (!G.ok) return;
    const WindowGeom g(G.m->config());
    cache::Cache c(runtime::cache_config_for(*G.m, DType::F16, kBt, 1ull << 30));
    cache::SeqKeys keys;
    keys.fingerprint_lo = 1;
    std::vector<int32_t> toks(760);
    std::iota(toks.begin(), toks.end(), 5);
    // 700 positions appended in one go, then one more before anything is marked
    // computed: the window layers drop blocks [0, 11) unpublished (gone), the full
    // layers keep and publish all of theirs.
    const cache::SeqId s = c.create_sequence(keys);
    c.append(s, toks.data(), 700);
    c.append(s, toks.data() + 700, 1);
    c.mark_computed(s, 701);
    const int64_t gone = g.dropped(700);
    REQUIRE(gone == 11);
    c.check_invariants();
    // A prompt sharing 600 tokens: the full layers hold floor(599/16) = 37 blocks, but
    // resuming at any k <= 37 blocks needs a window block below 11: no hit.
    std::vector<int32_t> p600(toks.begin(), toks.begin() + 600);
    p600.push_back(99999);
    CHECK(c.lookup_prefix(keys, p600.data(), int64_t(p600.size())) == 0);
    // Sharing all 701: resuming at 43 blocks (688) reads window blocks [11, 43): all there.
    std::vector<int32_t> p720(toks.begin(), toks.begin() + 720);
    CHECK(c.lookup_prefix(keys, p720.data(), int64_t(p720.size())) == 688);
    // The rule, checked for every prefix length against the blocks that exist.
    for (int64_t shared = 16; shared <= 720; shared += 37) {
        std::vector<int32_t> p(toks.begin(), toks.begin() + shared);
        p.push_back(99999);
        int64_t want = 0;
        for (int64_t k = std::min<int64_t>(701 / kBt, shared / kBt); k > 0; --k)
            if (std::max<int64_t>(0, k * kBt - g.W + 1) / kBt >= gone) {
                want = k * kBt;
                break;
            }
        CHECK_MESSAGE(c.lookup_prefix(keys, p.data(), int64_t(p.size())) == want, "shared prefix " << shared);
    }
    // Attaching the hit gives a sequence whose window tables start where the rule says.
    const cache::SeqId t = c.create_sequence(keys);
    CHECK(c.match_prefix(t, p720.data(), int64_t(p720.size())) == 688);
    const cache::SeqInfo it = c.seq_info(t);
    CHECK(it.bytes == g.full_bytes(688) + g.window_bytes(688, g.dropped(688)));
    c.check_invariants();
}

TEST_CASE("runtime[gemma3]: past the 512-token window, cached runs, prefix hits and edits equal the uncached forward") {
    const Gemma G;
    if (!G.ok) return;
    const WindowGeom g(G.m->config());
    const size_t V = G.vocab();
    // Sanitized builds run ~10x slower: a shorter prompt that still crosses the window.
    const size_t n = kvrt::test::kSanitized ? 576 : 700;
    const std::vector<int32_t> P = long_prompt(*G.m, n);
    runtime::ContextParams params = small_params(1024, 128);
    runtime::Context ctx(G.m, params);
    runtime::RequestStats st;

    // 1. The prompt in two prefills (an appended turn keeps the first), in chunks of 128.
    const size_t cut = 520;
    ctx.prefill(0, P.data(), cut, &st);
    CHECK(st.computed_tokens == cut);
    ctx.prefill(0, P.data(), n, &st);
    CHECK(st.reused_tokens == cut);
    CHECK(st.computed_tokens == n - cut);
    // (Each uncached pass costs a ~700-token forward: the prompt's logits are checked
    // through the decode steps below, whose last pass covers every position before.)
    // Appends began at 0, 128, 256, 384, 512 (first prefill), then 520, 648, ... (second).
    int64_t last_old = int64_t(cut);
    while (last_old + 128 < int64_t(n)) last_old += 128;
    CHECK(ctx.kv_bytes(0) == g.bytes(int64_t(n), last_old));
    CHECK(st.kv_bytes == ctx.kv_bytes(0));

    // 2. Greedy decode steps: the window layers drop blocks as the sequence grows.
    const int steps = kvrt::test::kSanitized ? 2 : 4;
    std::vector<int32_t> all = P;
    for (int i = 0; i < steps; ++i) {
        const int32_t tok = runtime::argmax(ctx.logits(0).data(), V);
        ctx.decode(std::vector<int32_t>{0}.data(), &tok, 1);
        all.push_back(tok);
        CHECK(ctx.kv_bytes(0) == g.bytes(int64_t(all.size()), int64_t(all.size()) - 1));
    }
    CHECK(g.dropped(int64_t(all.size()) - 1) > 0);
    // Under the sanitizers only the two resume paths (3 and 5) are compared with the
    // uncached forward: each comparison is a ~600-token forward there.
    const bool every_check = !kvrt::test::kSanitized;
    if (every_check) CHECK(bit_equal(ctx.logits(0).data(), uncached_last(*G.m, all.data(), all.size()).data(), V));
    ctx.release(0);  // its computed full blocks (and the window blocks it dropped) stay cached

    // 3. A prefix hit beyond the window: B shares P's first n - 50 tokens.
    const size_t shared = n - 50;
    const std::vector<int32_t> B =
        concat(std::vector<int32_t>(P.begin(), P.begin() + int64_t(shared)),
               G.m->tokenizer().encode(" Question: which lorry left last?", EncodeOptions{false, false}));
    ctx.prefill(0, B.data(), B.size(), &st);
    size_t common = 0;
    while (common < B.size() && common < P.size() && B[common] == P[common]) ++common;
    const size_t hit = std::min(common, B.size() - 1);  // to the first changed token (a sub-block hit)
    CHECK(hit % kBt != 0);
    CHECK(st.reused_from_cache == hit);
    CHECK(st.reused_tokens == hit);
    CHECK(st.computed_tokens == B.size() - hit);
    CHECK(bit_equal(ctx.logits(0).data(), uncached_last(*G.m, B.data(), B.size()).data(), V));
    // Attached from the cache without the window blocks its first query does not read.
    CHECK(ctx.kv_bytes(0) == g.full_bytes(int64_t(B.size())) + g.window_bytes(int64_t(B.size()), g.dropped(int64_t(hit))));
    std::vector<int32_t> b_all = B;
    for (int i = 0; i < 2; ++i) {
        const int32_t tok = runtime::argmax(ctx.logits(0).data(), V);
        ctx.decode(std::vector<int32_t>{0}.data(), &tok, 1);
        b_all.push_back(tok);
    }
    const int64_t dropped_now = g.dropped(int64_t(b_all.size()) - 1);
    REQUIRE(dropped_now > 0);

    // 4. An edit near the end: the sequence still holds every row a query at the edit
    //    reads, so it keeps everything before the changed token.
    {
        std::vector<int32_t> E = b_all;
        const size_t at = E.size() - 3;
        REQUIRE(g.truncate_allowed(int64_t(at), dropped_now));
        E[at] = E[at] == 100 ? 101 : 100;
        ctx.prefill(0, E.data(), E.size(), &st);
        CHECK(st.reused_tokens == at);
        CHECK(st.reused_from_cache == 0);
        CHECK(st.computed_tokens == E.size() - at);
        if (every_check) CHECK(bit_equal(ctx.logits(0).data(), uncached_last(*G.m, E.data(), E.size()).data(), V));
        b_all = E;
        const int32_t tok = runtime::argmax(ctx.logits(0).data(), V);
        ctx.decode(std::vector<int32_t>{0}.data(), &tok, 1);
        b_all.push_back(tok);
    }
    // 5. An edit past the window start: the window layers already dropped rows a query
    //    at the edit reads (truncation refused), so the prefix cache serves the
    //    positions before it (the window blocks there are still cached): the whole
    //    blocks, then the block holding the edit up to the edit (a sub-block hit).
    {
        std::vector<int32_t> E = b_all;
        const size_t at = shared - 30 + 5;  // not block-aligned: the block holding it is shared in part
        REQUIRE(at % kBt != 0);
        REQUIRE_FALSE(g.truncate_allowed(int64_t(at), g.dropped(int64_t(b_all.size()) - 1)));
        E[at] = E[at] == 100 ? 101 : 100;
        ctx.prefill(0, E.data(), E.size(), &st);
        CHECK(st.reused_tokens == at);
        CHECK(st.reused_from_cache == at);
        CHECK(st.computed_tokens == E.size() - at);
        CHECK(bit_equal(ctx.logits(0).data(), uncached_last(*G.m, E.data(), E.size()).data(), V));
    }
    ctx.cache()->check_invariants();
}
