// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CED runtime benchmarks (JSON lines, bench_json.hpp), each with its baseline
// measured in the same run:
//   prefill   CED prefill of an N-token prompt vs exact prefill of the same
//             prompt (goal ratio <= 0.55). Default N = 16384 with the base
//             preset; `--prefill-only --prefill 100000` takes ~215 CPU seconds
//             (exact 150 + CED 65 on one core: the indexers score O(N^2)
//             (position, group) pairs).
//   decode    one decode step at 8K, 64K and 1M positions of context (rows of
//             the context filled at random: CedRuntimeAccess::fill_random), vs the
//             step at 8K (goal <= 1.5x at 1M); the indexers' full scans timed
//             alone (every index layer that scores all visible groups) and their
//             selections (top-k, block-max), and the step without them, which
//             is what must stay flat.
//   sparse    sparse K=V attention over k selected rows vs the same selection
//             computed densely over every row with a mask.
// Usage: bench_ced [--quick] [--prefill N] [--model FILE.gguf] [--no-1m] [--threads T]
//                  [--decode-only | --prefill-only] [--cache-dtype f32|bf16|f16] [--bank-dtype fp4]
//   (--bank-dtype fp4: 4-bit bank rows and indexer keys, util/kv_quant.hpp; windows in
//   --cache-dtype.)
//   (no --model: the base preset, q8_0, seed 1, generated in memory).
// Times are the process's CPU time (CLOCK_PROCESS_CPUTIME_ID) with one
// OpenMP thread by default: on a shared, oversubscribed machine wall time
// measures the neighbours; the work done does not change with them. The wall
// time is printed beside it ("wall_s").
#include "bench_json.hpp"
#include "kernels/attention.hpp"
#include "kernels/indexer.hpp"
#include "model/arch/ced_generator.hpp"
#include "model/gguf/gguf.hpp"
#include "model/gguf/gguf_writer.hpp"
#include "model/arch/ced_runtime.hpp"
#include "runtime/ced_runtime_access.hpp"

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::ced;
using kvrt::bench::emit;
using kvrt::bench::emit_vs;
using kvrt::bench::now_seconds;

namespace {

double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Model {
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
    std::shared_ptr<const CedWeights> w;
};

Model load(const std::string& path, const std::string& preset_name) {
    Model m;
    if (!path.empty()) {
        m.file = std::make_unique<GgufFile>(GgufFile::open(path));
    } else {
        GgufWriter wr;
        GeneratorOptions o;
        o.cfg = preset(preset_name);
        o.seed = 1;
        o.weight_type = TensorType::Q8_0;
        fill_random_gguf(wr, o);
        m.bytes = wr.to_bytes();
        m.file = std::make_unique<GgufFile>(GgufFile::from_buffer(m.bytes.data(), m.bytes.size(), preset_name));
    }
    m.w = CedWeights::load(*m.file);
    return m;
}

DType g_cache_dtype = DType::F32;  // --cache-dtype
bool g_fp4_banks = false;          // --bank-dtype fp4

CedRuntimeOptions runtime_opts(uint64_t bank_budget) {
    CedRuntimeOptions o;
    o.cache_dtype = g_cache_dtype;
    if (g_fp4_banks) o.bank_dtype = DType::FP4;
    o.block_tokens = 16;
    o.chunk = 512;
    o.bank_budget_bytes = bank_budget;
    o.window_budget_bytes = 512ull << 20;
    return o;
}

std::vector<int32_t> tokens(int64_t n, int32_t vocab) {
    std::mt19937 rng(5);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng() % uint32_t(vocab));
    return t;
}

void bench_prefill(const Model& m, int64_t n) {
    std::vector<int32_t> t = tokens(n, m.w->cfg.n_vocab);
    double secs[2];
    for (int i = 0; i < 2; i++) {
        const PrefillMode mode = i == 0 ? PrefillMode::Exact : PrefillMode::CedPrefill;
        CedRuntime rt(m.w, runtime_opts(4ull << 30));
        auto s = rt.create();
        double w0 = now_seconds(), t0 = cpu_seconds();
        rt.prefill(s, t.data(), n, mode, Resume::Cold);
        secs[i] = cpu_seconds() - t0;
        emit("ced_prefill", i == 0 ? "exact_prefill_tokens_per_cpu_s" : "ced_prefill_tokens_per_cpu_s",
             double(n) / secs[i], "tok/s", "\"tokens\":" + std::to_string(n) + ",\"wall_s\":" +
             std::to_string(now_seconds() - w0));
    }
    emit_vs("ced_prefill", "ced_prefill_cpu_seconds", secs[1], "s", "exact_prefill_cpu_seconds", secs[0],
            "\"tokens\":" + std::to_string(n) + ",\"goal_ratio_max\":0.55");
}

void bench_decode(const Model& m, const std::vector<int64_t>& ctxs, int steps) {
    double base = 0, base_rest = 0, base_core = 0;
    for (int64_t ctx : ctxs) {
        const CedConfig& c = m.w->cfg;
        double bpt = 0;
        for (int32_t i = 0; i < c.n_sources(); i++)
            bpt += double(c.entry_dim + c.idx_dim) * double(dtype_size(g_cache_dtype)) / c.source_ratios[i];
        const uint64_t budget = uint64_t(bpt * double(ctx + 4096) * 1.1) + (64ull << 20);
        CedRuntime rt(m.w, runtime_opts(budget));
        auto s = rt.create();
        kvrt::ced::CedRuntimeAccess::fill_random(rt, s, ctx, 3);
        std::vector<double> times;
        int32_t tok = 1;
        for (int i = 0; i < steps + 2; i++) {
            double t0 = cpu_seconds();
            std::vector<float> lg = rt.decode(s, tok);
            double dt = cpu_seconds() - t0;
            if (i >= 2) times.push_back(dt);
            tok = int32_t(std::max_element(lg.begin(), lg.end()) - lg.begin());
        }
        std::sort(times.begin(), times.end());
        const double med = times[times.size() / 2];
        // The full indexer scans of one step, alone: encoder index layers over their
        // bank's visible groups, the decoder source over every position; then the
        // selections over those scores (top-k; the decoder's block-max candidates and
        // its top-k inside them), which are linear in the context too.
        std::vector<double> scans, selects;
        {
            const int32_t Hi = c.idx_heads, Di = c.idx_dim;
            std::mt19937 rng(11);
            std::uniform_real_distribution<float> u(-1.0f, 1.0f);
            std::vector<float> q(size_t(Hi) * Di), wv(Hi, 1.0f);
            for (auto& x : q) x = u(rng);
            std::vector<std::vector<float>> sc(c.n_layers);
            std::vector<int32_t> out(std::max(c.top_k, c.cand_blocks)), rows(size_t(c.cand_blocks) * c.cand_block);
            std::vector<float> cs(rows.size());
            for (int rep = 0; rep < 3; rep++) {
                double t0 = cpu_seconds();
                for (int32_t l = 0; l <= c.decoder_source(); l++) {
                    if (!c.is_index[l]) continue;
                    const int32_t si = c.bank_of[l];
                    const int32_t nvis = int32_t((ctx + 1) / c.source_ratios[si]);
                    PagedKV keys = rt.indexer_view(s, si);
                    sc[l].resize(nvis);
                    IndexerQuery iq{q.data(), wv.data(), Hi};
                    cpu::indexer_scores(keys, iq, nvis, sc[l].data());
                }
                scans.push_back(cpu_seconds() - t0);
                t0 = cpu_seconds();
                for (int32_t l = 0; l <= c.decoder_source(); l++) {
                    if (!c.is_index[l]) continue;
                    const int32_t nvis = int32_t(sc[l].size());
                    if (l < c.decoder_source()) {
                        topk_rows(sc[l].data(), nullptr, nvis, c.top_k, out.data());
                        continue;
                    }
                    const int32_t nb = block_max_candidates(sc[l].data(), nvis, c.cand_block, c.cand_blocks, out.data());
                    const int32_t nr = expand_blocks(out.data(), nb, c.cand_block, nvis, rows.data());
                    for (int32_t i = 0; i < nr; i++) cs[i] = sc[l][rows[i]];
                    topk_rows(cs.data(), rows.data(), nr, c.top_k, out.data());
                }
                selects.push_back(cpu_seconds() - t0);
            }
            std::sort(scans.begin(), scans.end());
            std::sort(selects.begin(), selects.end());
        }
        const double rest = std::max(0.0, med - scans[1]);
        const double core = std::max(0.0, med - scans[1] - selects[1]);
        const std::string extra = "\"context\":" + std::to_string(ctx) + ",\"steps\":" + std::to_string(steps) +
                                  ",\"cache_dtype\":\"" + dtype_name(g_cache_dtype) + "\"" +
                                  (g_fp4_banks ? ",\"bank_dtype\":\"fp4\"" : "");
        emit("ced_decode", "indexer_full_scans_cpu_ms", scans[1] * 1e3, "ms", extra);
        emit("ced_decode", "indexer_full_selections_cpu_ms", selects[1] * 1e3, "ms", extra);
        if (base == 0) {
            base = med;
            base_rest = rest;
            base_core = core;
            emit("ced_decode", "step_cpu_ms", med * 1e3, "ms", extra);
            emit("ced_decode", "step_minus_full_scans_cpu_ms", rest * 1e3, "ms", extra);
            emit("ced_decode", "step_minus_scans_and_selections_cpu_ms", core * 1e3, "ms", extra);
        } else {
            const std::string at = "_at_" + std::to_string(ctxs[0]);
            emit_vs("ced_decode", "step_minus_full_scans_cpu_ms", rest * 1e3, "ms",
                    "step_minus_full_scans_cpu_ms" + at, base_rest * 1e3, extra + ",\"goal_ratio_max\":1.5");
            emit_vs("ced_decode", "step_minus_scans_and_selections_cpu_ms", core * 1e3, "ms",
                    "step_minus_scans_and_selections_cpu_ms" + at, base_core * 1e3, extra + ",\"goal_ratio_max\":1.5");
            emit_vs("ced_decode", "step_cpu_ms", med * 1e3, "ms", "step_cpu_ms" + at, base * 1e3,
                    extra + ",\"goal_ratio_max\":1.5");
        }
    }
}

// Dense attention of one query over all n rows of a K=V bank, rows outside
// `mask` at -inf: the same selection computed densely.
void dense_masked(const PagedKV& bank, const float* q, int32_t H, int32_t D, float scale,
                  const std::vector<uint8_t>& mask, float* out) {
    const int32_t n = bank.n_tokens;
    std::vector<float> lg(n);
    for (int32_t h = 0; h < H; h++) {
        const float* qh = q + size_t(h) * D;
        float mx = -std::numeric_limits<float>::infinity();
        for (int32_t j = 0; j < n; j++) {
            const float* k = reinterpret_cast<const float*>(bank.k_row(j));
            float d = 0;
            for (int32_t c = 0; c < D; c++) d += qh[c] * k[c];
            lg[j] = mask[j] ? d * scale : -std::numeric_limits<float>::infinity();
            mx = std::max(mx, lg[j]);
        }
        float den = 0;
        float* o = out + size_t(h) * D;
        std::fill(o, o + D, 0.0f);
        for (int32_t j = 0; j < n; j++) {
            const float e = std::exp(lg[j] - mx);
            den += e;
            const float* k = reinterpret_cast<const float*>(bank.k_row(j));
            for (int32_t c = 0; c < D; c++) o[c] += e * k[c];
        }
        for (int32_t c = 0; c < D; c++) o[c] /= den;
    }
}

void bench_sparse(const Model& m, int64_t ctx) {
    const CedConfig& c = m.w->cfg;
    CedRuntime rt(m.w, runtime_opts(4ull << 30));
    auto s = rt.create();
    kvrt::ced::CedRuntimeAccess::fill_random(rt, s, ctx, 9);
    const int32_t si = c.n_sources() - 1;  // the decoder's bank (r = 1)
    PagedKV bank = rt.bank_view(s, si);
    const int32_t H = c.n_heads, D = c.entry_dim, k = c.top_k;
    std::mt19937 rng(2);
    std::vector<float> q(size_t(H) * D);
    for (auto& v : q) v = float(rng() % 1000) / 1000.0f - 0.5f;
    std::vector<int32_t> rows(k);
    std::vector<uint8_t> mask(bank.n_tokens, 0);
    for (int32_t i = 0; i < k; i++) rows[i] = int32_t(int64_t(i) * bank.n_tokens / k);
    for (int32_t r : rows) mask[r] = 1;
    std::vector<float> o1(size_t(H) * D), o2(size_t(H) * D), lse(H);
    AttnParams ap;
    ap.n_heads = H;
    ap.head_dim = D;
    ap.scale = 1.0f / std::sqrt(float(D));
    SparseQuery sq{q.data(), rows.data(), k, o1.data(), lse.data()};
    const int reps = 20;
    double t0 = cpu_seconds();
    for (int i = 0; i < reps; i++) cpu::attention_sparse(bank, ap, &sq, 1);
    const double ts = (cpu_seconds() - t0) / reps;
    t0 = cpu_seconds();
    for (int i = 0; i < 3; i++) dense_masked(bank, q.data(), H, D, ap.scale, mask, o2.data());
    const double td = (cpu_seconds() - t0) / 3;
    double diff = 0;
    for (size_t i = 0; i < o1.size(); i++) diff = std::max(diff, double(std::fabs(o1[i] - o2[i])));
    emit_vs("ced_sparse", "sparse_attention_cpu_us", ts * 1e6, "us", "dense_masked_cpu_us", td * 1e6,
            "\"rows\":" + std::to_string(bank.n_tokens) + ",\"selected\":" + std::to_string(k) +
                ",\"max_abs_diff\":" + std::to_string(diff));
}

}  // namespace

int main(int argc, char** argv) {
    std::string model;
    int64_t prefill_n = 16384;
    bool quick = false, big = true;
    int threads = 1;
    bool decode_only = false, prefill_only = false;
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--no-1m") == 0) big = false;
        else if (std::strcmp(argv[i], "--decode-only") == 0) decode_only = true;
        else if (std::strcmp(argv[i], "--prefill-only") == 0) prefill_only = true;
        else if (std::strcmp(argv[i], "--cache-dtype") == 0 && i + 1 < argc) {
            const std::string d = argv[++i];
            if (d == "bf16") g_cache_dtype = DType::BF16;
            else if (d == "f16") g_cache_dtype = DType::F16;
            else if (d != "f32") {
                std::fprintf(stderr, "bench_ced: --cache-dtype takes f32, bf16 or f16\n");
                return 2;
            }
        }
        else if (std::strcmp(argv[i], "--bank-dtype") == 0 && i + 1 < argc) {
            if (std::strcmp(argv[++i], "fp4") != 0) {
                std::fprintf(stderr, "bench_ced: --bank-dtype takes fp4 (else the banks take --cache-dtype)\n");
                return 2;
            }
            g_fp4_banks = true;
        }
        else if (std::strcmp(argv[i], "--prefill") == 0 && i + 1 < argc) prefill_n = std::atoll(argv[++i]);
        else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
        else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = std::atoi(argv[++i]);
        else {
            std::fprintf(stderr, "usage: bench_ced [--quick] [--prefill N] [--model FILE.gguf] [--no-1m] [--threads T] [--decode-only | --prefill-only] [--cache-dtype f32|bf16|f16] [--bank-dtype fp4]\n");
            return 2;
        }
    }
    if (threads > 0) omp_set_num_threads(threads);
    try {
        Model m = load(model, quick ? "tiny" : "base");
        if (!decode_only) {
            if (!prefill_only) bench_sparse(m, quick ? 4096 : 65536);
            bench_prefill(m, quick ? 512 : prefill_n);
        }
        if (prefill_only) return 0;
        std::vector<int64_t> ctxs = {8192, 65536};
        if (big) ctxs.push_back(1 << 20);
        bench_decode(m, quick ? std::vector<int64_t>{1024, 8192} : ctxs, quick ? 3 : 8);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_ced: %s\n", e.what());
        return 1;
    }
    return 0;
}
