// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The CED runtime with sparse attention on the oneDNN path (KVRT_ONEDNN=on's mode): prefill
// chunked 256 / 5 / 1 and token-by-token decode give the same bits, 1 and 2 threads give the
// same bits, and the logits stay close to the no-cache reference and to the hand-written path.
#include "ced_test_util.hpp"
#include "kernels/onednn/sparse_attention.hpp"
#include "model/arch/ced_runtime.hpp"
#include "runtime/ced_reference.hpp"
#include "util/isa.hpp"

#include <doctest/doctest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>

using namespace kvrt;
using namespace kvrt::ced;

namespace {

struct ModeScope {
    onednn::Mode prev;
    explicit ModeScope(onednn::Mode m) : prev(onednn::onednn_set_mode(m)) {}
    ~ModeScope() { onednn::onednn_set_mode(prev); }
};

CedRuntimeOptions opts(int32_t chunk) {
    CedRuntimeOptions o;
    o.block_tokens = 4;
    o.chunk = chunk;
    o.bank_budget_bytes = 16u << 20;
    o.window_budget_bytes = 16u << 20;
    return o;
}


// The tiny preset with more heads, wider entries and more selected rows (k = 40 of up to 70
// groups), so that the sparse GEMMs see several heads and a selection of more than one tile.
CedConfig wider() {
    CedConfig c = preset("tiny");
    c.n_heads = 8;
    c.entry_dim = 64;
    c.rope_dims = 16;
    c.top_k = 40;
    c.cand_blocks = 30;
    return c;
}

}  // namespace

TEST_CASE("onednn.ced: chunking, decode and threads give the same bits on the oneDNN path") {
    if (isa_detected() < Isa::Avx2) {
        CHECK(isa_detected() < Isa::Avx2);  // the path needs AVX2 (test_onednn_sparse checks the choice)
        return;
    }
    ModeScope on(onednn::Mode::On);
    const int prev_threads = omp_get_max_threads();
    for (const CedConfig& cfg : {preset("tiny"), wider()}) {
        CAPTURE(cfg.n_heads);
        const test::CedModel m = test::make_ced_model(cfg, 31);
        const int64_t N = 70;
        std::vector<int32_t> toks = test::random_tokens(N, cfg.n_vocab, 3);
        omp_set_num_threads(2);
        CedRuntime a(m.weights, opts(256)), b(m.weights, opts(5)), c(m.weights, opts(1));
        auto sa = a.create(), sb = b.create(), sc = c.create();
        std::vector<float> la = a.prefill(sa, toks.data(), N, PrefillMode::Exact).logits;
        std::vector<float> lb = b.prefill(sb, toks.data(), N, PrefillMode::Exact).logits;
        std::vector<float> lc = c.prefill(sc, toks.data(), 1, PrefillMode::Exact).logits;
        for (int64_t i = 1; i < N; i++) lc = c.decode(sc, toks[size_t(i)]);
        CHECK(la == lb);
        CHECK(la == lc);
        // One thread: the same bits.
        omp_set_num_threads(1);
        CedRuntime d(m.weights, opts(256));
        auto sd = d.create();
        std::vector<float> ld = d.prefill(sd, toks.data(), N, PrefillMode::Exact).logits;
        CHECK(la == ld);
        omp_set_num_threads(prev_threads);
        // Close to the no-cache reference (double) and to the hand-written kernels' logits.
        CedReference ref(m.weights);
        std::vector<float> want = ref.prefill(toks.data(), N, PrefillMode::Exact);
        INFO("max abs logit difference to the reference " << test::logits_max_abs_diff(la, want));
        CHECK(test::logits_max_abs_diff(la, want) < 2e-3);
        ModeScope off(onednn::Mode::Off);
        CedRuntime e(m.weights, opts(256));
        auto se = e.create();
        std::vector<float> le = e.prefill(se, toks.data(), N, PrefillMode::Exact).logits;
        CHECK(test::logits_max_abs_diff(la, le) < 2e-3);
    }
    omp_set_num_threads(prev_threads);
}
