// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors
// Numerical fidelity tooling (issue 14) on tiny random models: logits at chosen positions
// (Context::prefill_positions / kvrt_context_prefill_logits) equal each prefix's own
// last-position logits bit for bit; `kvrt perplexity`'s windows and value equal a hand
// computation of llama-perplexity's rule; the saved-logits file round-trips, its KL against
// itself is 0, and bad input (no text, a context of 1, another model or vocabulary, a
// truncated or corrupted file) gets a status and a message.
#include "ced_test_util.hpp"
#include "fidelity/kl_divergence.hpp"
#include "fidelity/logits_file.hpp"
#include "fidelity/perplexity.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "tiny_llama.hpp"
#include "util/error.hpp"

#include <kvrt/kvrt.h>

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::fidelity;

namespace {

struct TempPath {
    std::string path;
    explicit TempPath(const std::string& name)
        : path((std::filesystem::temp_directory_path() / ("kvrt_fid_" + name + "_" + std::to_string(::getpid()))).string()) {}
    ~TempPath() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
        std::filesystem::remove(path + ".tmp", ec);
    }
};

std::vector<int32_t> random_ids(size_t n, int32_t vocab, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int32_t> t(n);
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    return t;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// A tiny model through the C API (the perplexity driver's interface).
struct CModel {
    TempPath file;
    kvrt_model* m = nullptr;
    explicit CModel(const std::string& name, const test::TinyLlamaOptions& o = {}) : file(name + ".gguf") {
        test::tiny_llama_writer(o).write(file.path);
        REQUIRE(kvrt_model_load(&m, file.path.c_str(), nullptr) == KVRT_OK);
    }
    ~CModel() { kvrt_model_destroy(m); }
    kvrt_context* context(uint32_t n_ctx, uint32_t n_batch = 512) const {
        kvrt_context_config cc;
        kvrt_context_config_init(&cc, sizeof cc);
        cc.n_ctx = n_ctx;
        cc.n_batch = n_batch;
        cc.prefix_caching = 0;
        cc.kv_dtype = KVRT_KV_F32;
        kvrt_context* c = nullptr;
        REQUIRE(kvrt_context_create(&c, m, &cc) == KVRT_OK);
        return c;
    }
};

// -log p(next) of every scored position, by hand: each window prefix prefilled alone.
double hand_nll(const CModel& cm, const std::vector<int32_t>& toks, uint32_t n_ctx, uint32_t stride, int32_t bos,
                size_t* n_scored) {
    const uint32_t V = test::tiny_vocab_size();
    std::vector<size_t> starts;
    uint32_t first;
    if (stride == 0) {
        for (size_t s = 0; s + n_ctx <= toks.size(); s += n_ctx) starts.push_back(s);
        first = n_ctx / 2;
    } else {
        for (size_t s = 0; s + n_ctx < toks.size(); s += stride) starts.push_back(s);
        first = n_ctx - stride - 1;
    }
    double nll = 0;
    *n_scored = 0;
    std::vector<float> lg(V);
    for (size_t s : starts) {
        std::vector<int32_t> w(toks.begin() + static_cast<std::ptrdiff_t>(s), toks.begin() + static_cast<std::ptrdiff_t>(s + n_ctx));
        if (bos >= 0) w[0] = bos;
        for (uint32_t j = first; j + 1 < n_ctx; ++j) {
            kvrt_context* c = cm.context(n_ctx);
            size_t written = 0;
            REQUIRE(kvrt_context_prefill(nullptr, c, 0, w.data(), j + 1) == KVRT_OK);
            REQUIRE(kvrt_context_get_logits(lg.data(), V, &written, c, 0) == KVRT_OK);
            kvrt_context_destroy(c);
            double mx = lg[0], sum = 0;
            for (float x : lg) mx = std::max(mx, static_cast<double>(x));
            for (float x : lg) sum += std::exp(x - mx);
            nll -= lg[static_cast<size_t>(toks[s + j + 1])] - mx - std::log(sum);
            ++*n_scored;
        }
    }
    return nll;
}

template <class F>
void expect_error(kvrt_status want, const char* needle, F&& f) {
    try {
        f();
        FAIL("no error; expected " << kvrt_status_string(want));
    } catch (const Error& e) {
        CHECK(e.status() == want);
        INFO(e.what());
        CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
}

}  // namespace

TEST_CASE("position logits: every requested row equals that prefix's own last-position logits, bit for bit") {
    test::TinyLlamaOptions o;
    o.sliding_window = 6;  // window layers too
    const std::string path = test::write_tiny_llama("fid_pos", o);
    auto model = Model::load(path);
    std::filesystem::remove(path);
    const uint32_t V = model->config().n_vocab;
    const std::vector<int32_t> toks = random_ids(23, static_cast<int32_t>(V), 5);
    for (uint32_t n_batch : {3u, 512u}) {
        runtime::ContextParams p;
        p.n_ctx = 64;
        p.n_batch = n_batch;
        p.block_tokens = 4;
        p.kv_dtype = DType::F32;
        runtime::Context ctx(model, p);
        runtime::ContextParams pa = p;
        pa.prefix_caching = false;
        pa.n_batch = 512;
        runtime::Context alone(model, pa);
        ctx.prefill(0, toks.data(), toks.size());  // positions held and cached already
        const std::vector<uint32_t> pos = {0, 4, 5, 11, 17, 21};
        runtime::RequestStats st;
        ctx.prefill_positions(0, toks.data(), toks.size(), pos.data(), pos.size(), &st);
        CHECK(st.reused_tokens == 0);
        CHECK(st.computed_tokens == toks.size());
        for (uint32_t q : pos) {
            alone.prefill(0, toks.data(), q + 1);
            CHECK_MESSAGE(same_bits(ctx.position_logits(0, q), alone.logits(0).data(), V), "position " << q);
            alone.release(0);
        }
        alone.prefill(0, toks.data(), toks.size());
        CHECK(same_bits(ctx.logits(0).data(), alone.logits(0).data(), V));
        // Starting later: reuse stops at the first requested position.
        const std::vector<uint32_t> late = {9, 22};
        ctx.prefill_positions(0, toks.data(), toks.size(), late.data(), late.size(), &st);
        CHECK(st.reused_tokens <= 9);  // window layers may not allow a cut at 9: then a cached block
        CHECK(st.reused_tokens + st.computed_tokens == toks.size());
        alone.release(0);
        alone.prefill(0, toks.data(), 10);
        CHECK(same_bits(ctx.position_logits(0, 9), alone.logits(0).data(), V));
        CHECK(same_bits(ctx.position_logits(0, 22), ctx.logits(0).data(), V));
        expect_error(KVRT_ERR_NOT_FOUND, "position 4", [&] { ctx.position_logits(0, 4); });
    }
}

TEST_CASE("position logits: a CED model gives its last position and refuses others with UNSUPPORTED") {
    const std::string path = (std::filesystem::temp_directory_path() / ("kvrt_fid_ced_" + std::to_string(::getpid()) + ".gguf")).string();
    ced::GeneratorOptions go;
    go.cfg = ced::preset("tiny");
    go.seed = 3;
    ced::write_random_gguf(path, go);
    auto model = Model::load(path);
    std::filesystem::remove(path);
    runtime::ContextParams p;
    p.n_ctx = 128;
    p.kv_dtype = DType::F32;
    runtime::Context ctx(model, p);
    const std::vector<int32_t> toks = random_ids(20, static_cast<int32_t>(model->config().n_vocab), 9);
    const uint32_t last = 19, mid[2] = {5, 19};
    ctx.prefill_positions(0, toks.data(), toks.size(), &last, 1);
    CHECK(same_bits(ctx.position_logits(0, 19), ctx.logits(0).data(), model->config().n_vocab));
    expect_error(KVRT_ERR_UNSUPPORTED, "CED", [&] { ctx.prefill_positions(0, toks.data(), toks.size(), mid, 2); });
    CHECK(ctx.tokens(0).size() == 20);  // refused before anything changed
}

TEST_CASE("perplexity windows: llama-perplexity's rule and its stride variant, bad input refused") {
    WindowPlan p = plan_windows(20, 8, 0);
    REQUIRE(p.windows.size() == 2);
    CHECK(p.windows[1].start == 8);
    CHECK(p.windows[0].first == 4);
    CHECK(p.windows[0].last == 6);
    CHECK(p.n_scored == 6);
    p = plan_windows(20, 8, 3);  // starts 0, 3, 6, 9 (ceil(12 / 3)), each scores 3
    REQUIRE(p.windows.size() == 4);
    CHECK(p.windows[3].start == 9);
    CHECK(p.windows[0].first == 4);
    CHECK(p.n_scored == 12);
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "no tokens", [] { plan_windows(0, 8, 0); });
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "context of 1", [] { plan_windows(100, 1, 0); });
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "at least 16", [] { plan_windows(15, 8, 0); });
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "stride", [] { plan_windows(100, 8, 8); });
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "not more than", [] { plan_windows(8, 8, 2); });
}

TEST_CASE("perplexity: the tiny model's value equals a hand computation, in any row chunking and with a stride") {
    CModel cm("ppl");
    const std::vector<int32_t> toks = random_ids(40, static_cast<int32_t>(test::tiny_vocab_size()), 21);
    const int32_t bos = 257;
    for (uint32_t stride : {0u, 3u}) {
        size_t n = 0;
        const double nll = hand_nll(cm, toks, 8, stride, bos, &n);
        PerplexityOptions o;
        o.n_ctx = 8;
        o.stride = stride;
        o.bos = bos;
        kvrt_context* c = cm.context(8);
        const PerplexityResult r = run_perplexity(c, cm.m, toks, o);
        o.max_rows_bytes = 2 * 4 * test::tiny_vocab_size();  // two rows per call
        const PerplexityResult r2 = run_perplexity(c, cm.m, toks, o);
        kvrt_context_destroy(c);
        CHECK(r.n_scored == n);
        CHECK(r.ppl == doctest::Approx(std::exp(nll / static_cast<double>(n))).epsilon(1e-6));
        CHECK(r2.nll == r.nll);  // the same rows, bit for bit
        CHECK(r.window_ppl.size() == r.plan.windows.size());
        CHECK(r.ppl > 1.0);
    }
}

TEST_CASE("logits file: saved and read back, the KL of a file against itself is 0, a run against it too") {
    CModel cm("kl");
    const std::vector<int32_t> toks = random_ids(36, static_cast<int32_t>(test::tiny_vocab_size()), 4);
    TempPath f("self.klg");
    PerplexityOptions o;
    o.n_ctx = 12;
    o.bos = 257;
    o.save_path = f.path;
    o.producer = "unit test";
    kvrt_context* c = cm.context(12);
    const PerplexityResult r = run_perplexity(c, cm.m, toks, o);
    LogitsReader a(f.path), b(f.path);
    CHECK(a.header().n_vocab == test::tiny_vocab_size());
    CHECK(a.header().tokens == toks);
    CHECK(a.header().producer == "unit test");
    CHECK(a.header().n_records == r.n_scored);
    KlSummary s;
    LogitsRecord x, y;
    double nll = 0;
    for (uint32_t i = 0; i < a.header().n_records; ++i) {
        a.read(i, x);
        b.read(i, y);
        s.add(x, y);
        nll -= x.lp_target;
    }
    CHECK(s.mean() == 0.0);
    CHECK(s.max() == 0.0);
    CHECK(s.top1_agreement() == 1.0);
    CHECK(s.ppl_ratio() == 1.0);
    CHECK(std::exp(nll / r.n_scored) == doctest::Approx(r.ppl).epsilon(1e-12));
    // A decoded record is a distribution near the logits' own.
    std::vector<double> lp;
    x.log_probs(lp);
    double mass = 0;
    for (double v : lp) mass += std::exp(v);
    CHECK(mass == doctest::Approx(1.0).epsilon(1e-9));
    CHECK(lp[static_cast<size_t>(x.target)] == doctest::Approx(x.lp_target).epsilon(1e-3));
    // A live run against the file: KL 0, same perplexity.
    PerplexityOptions k = o;
    k.save_path.clear();
    k.kl_base_path = f.path;
    const PerplexityResult rk = run_perplexity(c, cm.m, toks, k);
    REQUIRE(rk.has_kl);
    CHECK(rk.kl.count() == r.n_scored);
    CHECK(rk.kl.mean() == 0.0);
    CHECK(rk.kl.p99() == 0.0);
    CHECK(rk.kl.top1_agreement() == 1.0);
    CHECK(rk.kl.ppl_ratio() == 1.0);
    // Another model's distributions differ: KL > 0, top-1 agreement below 1 is possible.
    test::TinyLlamaOptions other;
    other.seed = 99;
    CModel cm2("kl_other", other);
    kvrt_context* c2 = cm2.context(12);
    const PerplexityResult ro = run_perplexity(c2, cm2.m, toks, k);  // same identity string: same shape
    CHECK(ro.kl.mean() > 0.0);
    CHECK(ro.kl.max() >= ro.kl.p99());
    CHECK(ro.kl.p99() >= ro.kl.median());
    kvrt_context_destroy(c2);
    kvrt_context_destroy(c);
}

TEST_CASE("logits file: truncated, corrupted, foreign files and another model, vocabulary or text are refused") {
    CModel cm("bad");
    const std::vector<int32_t> toks = random_ids(24, static_cast<int32_t>(test::tiny_vocab_size()), 8);
    TempPath f("good.klg"), t("trunc.klg"), g("garbage.klg"), v("vocab.klg");
    PerplexityOptions o;
    o.n_ctx = 12;
    o.bos = 257;
    o.save_path = f.path;
    kvrt_context* c = cm.context(12);
    run_perplexity(c, cm.m, toks, o);
    o.save_path.clear();
    const auto size = std::filesystem::file_size(f.path);
    std::filesystem::copy_file(f.path, t.path);
    std::filesystem::resize_file(t.path, size - 10);
    expect_error(KVRT_ERR_BAD_FORMAT, "truncated", [&] { LogitsReader r(t.path); });
    std::filesystem::resize_file(t.path, 20);
    expect_error(KVRT_ERR_BAD_FORMAT, "truncated", [&] { LogitsReader r(t.path); });
    {
        std::filesystem::remove(t.path);
        std::filesystem::copy_file(f.path, t.path);
        std::fstream io(t.path, std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(static_cast<std::streamoff>(size / 2));
        char ch = 0;
        io.read(&ch, 1);
        ch = static_cast<char>(ch ^ 0x40);
        io.seekp(static_cast<std::streamoff>(size / 2));
        io.write(&ch, 1);
    }
    expect_error(KVRT_ERR_BAD_FORMAT, "checksum", [&] { LogitsReader r(t.path); });
    {
        std::ofstream(g.path) << "this is not a logits file at all";
    }
    expect_error(KVRT_ERR_BAD_FORMAT, "magic", [&] { LogitsReader r(g.path); });
    expect_error(KVRT_ERR_NOT_FOUND, "no logits file", [&] { LogitsReader r(g.path + ".missing"); });
    // Another vocabulary.
    LogitsHeader h = LogitsReader(f.path).header();
    LogitsHeader hv = h;
    hv.n_vocab = h.n_vocab + 7;
    hv.n_records = 0;
    {
        LogitsWriter w(v.path, hv);
        w.finish();
    }
    o.kl_base_path = v.path;
    expect_error(KVRT_ERR_MISMATCH, "vocabulary", [&] { run_perplexity(c, cm.m, toks, o); });
    // Another model (another shape, so another identity); allowed when asked.
    test::TinyLlamaOptions wide;
    wide.n_ff = 128;
    CModel cm3("bad_wide", wide);
    kvrt_context* c3 = cm3.context(12);
    o.kl_base_path = f.path;
    expect_error(KVRT_ERR_MISMATCH, "another model", [&] { run_perplexity(c3, cm3.m, toks, o); });
    o.allow_other_model = true;
    CHECK(run_perplexity(c3, cm3.m, toks, o).kl.count() > 0);
    o.allow_other_model = false;
    kvrt_context_destroy(c3);
    // Another text, other windows.
    std::vector<int32_t> other = toks;
    other[3] = (other[3] + 1) % static_cast<int32_t>(test::tiny_vocab_size());
    expect_error(KVRT_ERR_MISMATCH, "position 3", [&] { run_perplexity(c, cm.m, other, o); });
    o.stride = 4;
    expect_error(KVRT_ERR_MISMATCH, "windows", [&] { run_perplexity(c, cm.m, toks, o); });
    // Bad input before any work: no text, a context of 1, a saved file that cannot be written.
    PerplexityOptions e;
    e.n_ctx = 12;
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "no tokens", [&] { run_perplexity(c, cm.m, {}, e); });
    e.n_ctx = 1;
    expect_error(KVRT_ERR_INVALID_ARGUMENT, "context of 1", [&] { run_perplexity(c, cm.m, toks, e); });
    e.n_ctx = 12;
    e.save_path = "/nonexistent-dir/x.klg";
    expect_error(KVRT_ERR_IO, "cannot create", [&] { run_perplexity(c, cm.m, toks, e); });
    kvrt_context_destroy(c);
}
