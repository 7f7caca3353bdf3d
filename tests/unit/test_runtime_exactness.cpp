// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// The KV cache changes nothing: a row's logits do not depend on whether its
// prefix was computed in one pass, in chunks, token by token through decode,
// taken from the prefix cache, kept across an edit, or batched with other
// sequences. All comparisons here are bit for bit, against the uncached
// forward (the same fast kernels over a per-call contiguous K/V buffer,
// every position recomputed from scratch).
//
// Every case runs once per architecture (llama = SmolLM2-135M, qwen2 =
// Qwen2.5-Coder-0.5B, gemma3 = Gemma 3 270M: test_models.hpp), each as its own
// test case "runtime[ARCH]: ..." (ctest runs each in its own process: one
// model loaded per process). Gemma 3's local layers have a 512-token window;
// the cases at the end run it past the window (blocks dropped, prefix hits and
// edits beyond it).
#include "runtime/reference_forward.hpp"
#include "runtime_test_support.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace kvrt;
using kvrt::test::bit_equal;
using kvrt::test::greedy_run;
using kvrt::test::small_params;

namespace {

// One architecture's real model and helpers; `ok` false = skipped (missing model outside CI).
struct Arch {
    std::string name;
    bool ok = false;
    std::shared_ptr<const Model> m;
    explicit Arch(const char* arch) : name(arch), ok(kvrt::test::real_model_available(arch)) {
        if (ok) m = kvrt::test::real_model(arch);
    }
    std::vector<int32_t> encode(const std::string& s) const { return m->tokenizer().encode(s, EncodeOptions{true, false}); }
    size_t vocab() const { return m->config().n_vocab; }
    const float* row(const std::vector<float>& all, size_t t) const { return all.data() + t * vocab(); }
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t c = 0;
    while (c < a.size() && c < b.size() && a[c] == b[c]) ++c;
    return c;
}

// The cache's K/V element types (issue 15): f16 (the default), int8, fp8, and K and V apart;
// and the activation codes of the quantised matmuls (ContextParams::act_bits: 0, the
// default, 16-bit for the K/V projections and 8-bit elsewhere; 8 or 16 everywhere).
struct KvTypes {
    DType k = DType::F16, v = DType::F16;
    int act_bits = 0;
    ActCodes codes() const { return ActCodes::from_option(act_bits); }
};
runtime::ContextParams typed(runtime::ContextParams p, KvTypes t) {
    p.kv_dtype = t.k;
    if (t.v != t.k) p.kv_v_dtype = t.v;
    p.act_bits = t.act_bits;
    return p;
}

void chunked_prefill(const char* arch, KvTypes kt = {}) {
    const Arch A(arch);
    if (!A.ok) return;
    const std::vector<int32_t> p = A.encode("The quick brown fox jumps over the lazy dog because it was late.");
    REQUIRE(p.size() >= 12);
    const std::vector<float> want = runtime::uncached_forward(*A.m, p.data(), static_cast<int32_t>(p.size()), kt.k, kt.v, kt.codes());
    for (uint32_t chunk : {1u, 5u, 512u}) {
        runtime::Context ctx(A.m, typed(small_params(256, chunk, false), kt));
        std::vector<float> all;
        ctx.prefill(0, p.data(), p.size(), nullptr, &all);
        REQUIRE(all.size() == p.size() * A.vocab());
        for (size_t t = 0; t < p.size(); ++t)
            CHECK_MESSAGE(bit_equal(A.row(all, t), A.row(want, t), A.vocab()), std::string(arch) << ": chunk " << chunk << ", position " << t);
        CHECK(bit_equal(ctx.logits(0).data(), A.row(want, p.size() - 1), A.vocab()));
    }
}

void greedy_decode(const char* arch, KvTypes kt = {}) {
    const Arch A(arch);
    if (!A.ok) return;
    const std::vector<int32_t> p = A.encode("Once upon a time, in a small village,");
    const int steps = kvrt::test::kSanitized ? 12 : 32;
    runtime::Context ctx(A.m, typed(small_params(256), kt));
    const kvrt::test::GreedyRun run = greedy_run(ctx, 0, p, steps);
    std::vector<int32_t> all = p;
    all.insert(all.end(), run.tokens.begin(), run.tokens.end() - 1);  // the last choice was not decoded
    const std::vector<float> want = runtime::uncached_forward(*A.m, all.data(), static_cast<int32_t>(all.size()), kt.k, kt.v, kt.codes());
    for (int s = 0; s <= steps; ++s)
        CHECK_MESSAGE(bit_equal(run.logits[static_cast<size_t>(s)].data(), A.row(want, p.size() - 1 + static_cast<size_t>(s)), A.vocab()),
                      std::string(arch) << ": decode step " << s);
}

// block_tokens 16: the hit covers whole blocks and part of the next; 0 (the library's default, 64
// positions): A's prompt and decode steps fill no block, so the hit is into A's last, partly filled
// block, which the cache keeps when A is released (a tail block).
void prefix_hit(const char* arch, KvTypes kt = {}, int32_t block_tokens = 16) {
    const Arch A(arch);
    if (!A.ok) return;
    // Two prompts sharing a 40+ token document prefix.
    const std::string doc =
        "Project memo. The bridge repair starts on 3 May and must finish by 30 June. The budget is fixed. "
        "Two contractors bid; the city chose the cheaper one after an audit of its safety record.";
    const std::vector<int32_t> a = A.encode(doc + " Question: when does the repair start?");
    const std::vector<int32_t> b = A.encode(doc + " Question: who won the bid?");
    const size_t common = common_prefix(a, b);
    REQUIRE(common >= 32);
    const int steps = kvrt::test::kSanitized ? 4 : 16;

    runtime::ContextParams params = typed(small_params(256), kt);
    params.block_tokens = block_tokens;
    runtime::Context warm(A.m, params);
    const int32_t bt = warm.params().block_tokens;
    CHECK(bt == (block_tokens ? block_tokens : runtime::kDefaultBlockTokens));
    runtime::RequestStats sa, sb;
    greedy_run(warm, 0, a, 2, &sa);
    CHECK(sa.reused_tokens == 0);
    CHECK(sa.computed_tokens == a.size());
    warm.release(0);  // A's full blocks stay in the prefix cache
    const kvrt::test::GreedyRun hit = greedy_run(warm, 0, b, steps, &sb);
    // The hit reaches the first changed token (a sub-block hit: A's block holding it is copied up
    // to there), not only the last whole block before it.
    CHECK(sb.reused_from_cache == std::min(common, b.size() - 1));
    CHECK(sb.reused_from_cache % bt != 0);  // this prompt pair does exercise the partial block
    if (block_tokens == 0) CHECK(a.size() + 1 < static_cast<size_t>(bt));  // ... and A's tail block
    CHECK(sb.reused_tokens == sb.reused_from_cache);
    CHECK(sb.computed_tokens == b.size() - sb.reused_tokens);

    runtime::Context cold(A.m, params);
    runtime::RequestStats sc;
    const kvrt::test::GreedyRun ref = greedy_run(cold, 0, b, steps, &sc);
    CHECK(sc.reused_tokens == 0);
    CHECK(hit.tokens == ref.tokens);
    for (int s = 0; s <= steps; ++s)
        CHECK_MESSAGE(bit_equal(hit.logits[static_cast<size_t>(s)].data(), ref.logits[static_cast<size_t>(s)].data(), A.vocab()),
                      std::string(arch) << ": step " << s);
}

void edited_prompt(const char* arch) {
    const Arch A(arch);
    if (!A.ok) return;
    const std::vector<int32_t> orig = A.encode("The total budget is 1,000,000 EUR and the deadline is in March. Summary:");
    const std::vector<int32_t> edit = A.encode("The total budget is 500,000 EUR and the deadline is in March. Summary:");
    const size_t first = common_prefix(orig, edit);
    REQUIRE(first > 2);
    REQUIRE(first < edit.size());
    runtime::Context ctx(A.m, small_params(256));
    greedy_run(ctx, 0, orig, 3);
    runtime::RequestStats st;
    const kvrt::test::GreedyRun edited = greedy_run(ctx, 0, edit, 6, &st);
    CHECK(st.reused_tokens == first);
    CHECK(st.computed_tokens == edit.size() - first);
    runtime::Context cold(A.m, small_params(256));
    const kvrt::test::GreedyRun ref = greedy_run(cold, 0, edit, 6);
    CHECK(edited.tokens == ref.tokens);
    for (size_t s = 0; s < ref.logits.size(); ++s)
        CHECK_MESSAGE(bit_equal(edited.logits[s].data(), ref.logits[s].data(), A.vocab()), std::string(arch) << ": step " << s);

    // Appending (a next chat turn) keeps everything and computes only the new tokens. After the
    // release the cache keeps the released sequence's last, partly filled block (a tail block),
    // whose rows cover edit and the first decoded tokens: every position before the last is reused.
    std::vector<int32_t> longer = edit;
    longer.push_back(edited.tokens[0]);
    longer.push_back(edited.tokens[1]);
    ctx.release(0);
    ctx.prefill(0, edit.data(), edit.size(), &st);
    CHECK(st.reused_tokens == edit.size() - 1);
    ctx.prefill(0, longer.data(), longer.size(), &st);
    CHECK(st.reused_tokens == longer.size() - 1);
    CHECK(st.computed_tokens == 1);
    // Without the released rows (a fresh context) the live sequence still computes only the new two.
    runtime::Context fresh(A.m, small_params(256));
    fresh.prefill(0, edit.data(), edit.size(), &st);
    fresh.prefill(0, longer.data(), longer.size(), &st);
    CHECK(st.reused_tokens == edit.size());
    CHECK(st.computed_tokens == 2);
}

void batched_decode(const char* arch) {
    const Arch A(arch);
    if (!A.ok) return;
    const std::vector<std::vector<int32_t>> prompts = {A.encode("Paris is the capital of"), A.encode("1, 2, 3, 4,"),
                                                       A.encode("def add(a, b):\n    return")};
    runtime::ContextParams p = small_params(256);
    p.n_seq_max = 3;
    runtime::Context batched(A.m, p);
    std::vector<int32_t> seqs = {0, 1, 2}, next(3);
    for (int s = 0; s < 3; ++s) {
        batched.prefill(s, prompts[static_cast<size_t>(s)].data(), prompts[static_cast<size_t>(s)].size());
        next[static_cast<size_t>(s)] = runtime::argmax(batched.logits(s).data(), A.vocab());
    }
    const int steps = kvrt::test::kSanitized ? 2 : 6;
    std::vector<std::vector<std::vector<float>>> got(3);
    for (int i = 0; i < steps; ++i) {
        batched.decode(seqs.data(), next.data(), 3);
        for (int s = 0; s < 3; ++s) {
            got[static_cast<size_t>(s)].push_back(batched.logits(s));
            next[static_cast<size_t>(s)] = runtime::argmax(batched.logits(s).data(), A.vocab());
        }
    }
    for (int s = 0; s < 3; ++s) {
        runtime::Context alone(A.m, small_params(256));
        const kvrt::test::GreedyRun r = greedy_run(alone, 0, prompts[static_cast<size_t>(s)], steps);
        for (int i = 0; i < steps; ++i)
            CHECK_MESSAGE(bit_equal(got[static_cast<size_t>(s)][static_cast<size_t>(i)].data(),
                                    r.logits[static_cast<size_t>(i) + 1].data(), A.vocab()),
                          std::string(arch) << ": sequence " << s << " step " << i);
    }
}

void batched_prefill(const char* arch) {
    const Arch A(arch);
    if (!A.ok) return;
    // Three prompts of different lengths, n_batch small enough that rounds split prompts and
    // mix sequences; sequence 2 shares a prefix with a prompt computed before (a cache hit).
    const std::vector<int32_t> doc = A.encode(
        "The river authority approved the new flood gates in March, after two years of studies. The budget is "
        "fixed at one million euros, and the works must end before the winter floods of next year.");
    REQUIRE(doc.size() > 32);
    std::vector<int32_t> q2 = doc;
    for (int32_t t : A.m->tokenizer().encode(" When is the deadline?", EncodeOptions{false, false})) q2.push_back(t);
    const std::vector<std::vector<int32_t>> prompts = {A.encode("Paris is the capital of"),
                                                       A.encode("def add(a, b):\n    return a + b\n\nprint(add(1,"), q2};
    runtime::ContextParams p = small_params(256, 8);
    p.n_seq_max = 4;
    runtime::Context batched(A.m, p);
    batched.prefill(3, doc.data(), doc.size());  // fills the prefix cache with the document
    const std::vector<int32_t> seqs = {0, 1, 2};
    const int32_t* toks[3] = {prompts[0].data(), prompts[1].data(), prompts[2].data()};
    const size_t lens[3] = {prompts[0].size(), prompts[1].size(), prompts[2].size()};
    runtime::RequestStats st[3];
    batched.prefill_batch(seqs.data(), toks, lens, 3, st);
    CHECK(st[2].reused_from_cache >= 16);  // the document's full blocks came from the cache
    // Prompt 0 shares only what it has in common with the document (Gemma's BOS: a 1-token hit).
    CHECK(st[0].reused_tokens == std::min(common_prefix(prompts[0], doc), prompts[0].size() - 1));
    for (size_t s = 0; s < 3; ++s) {
        CHECK(st[s].prompt_tokens == lens[s]);
        CHECK(st[s].computed_tokens + st[s].reused_tokens == lens[s]);
        CHECK(batched.tokens(static_cast<int32_t>(s)) == prompts[s]);
        runtime::Context alone(A.m, small_params(256));
        alone.prefill(0, prompts[s].data(), prompts[s].size());
        CHECK_MESSAGE(bit_equal(batched.logits(static_cast<int32_t>(s)).data(), alone.logits(0).data(), A.vocab()),
                      std::string(arch) << ": sequence " << s);
    }
    // Bad input changes nothing: a repeated sequence, a token past the vocabulary.
    const std::vector<int32_t> again = {0, 0};
    CHECK_THROWS(batched.prefill_batch(again.data(), toks, lens, 2));
    std::vector<int32_t> bad = prompts[1];
    bad.back() = static_cast<int32_t>(A.vocab());
    const int32_t* bad_toks[2] = {prompts[1].data(), bad.data()};
    const size_t bad_lens[2] = {prompts[1].size(), bad.size()};
    const std::vector<int32_t> two = {0, 1};
    CHECK_THROWS(batched.prefill_batch(two.data(), bad_toks, bad_lens, 2));
    CHECK(batched.tokens(0) == prompts[0]);
    CHECK(batched.tokens(1) == prompts[1]);
    CHECK(batched.has_logits(1));
}

// prefill_batch takes up to n_batch rows per round from the prompts in order, so a prompt of
// n_batch - 1 tokens beside a longer one makes a round of a chunk and ONE row (a single-token step
// at position 0), and a prompt that continues a sequence by one token beside a new prompt makes
// one with the single row at a later position: batches that mix chunks with single-token steps
// (forward_prefill_team: the singles through the decode kernel's team mode), at 8 rows (at most
// kTeamRows) and at 40. Each sequence's logits equal the same prompt prefilled alone.
void mixed_rounds(const char* arch) {
    const Arch A(arch);
    if (!A.ok) return;
    std::string s;
    for (int i = 0; i < 6; ++i)
        s += "Round " + std::to_string(i) + ": the ferry leaves the north pier at nine, stops at the island, and is back "
             "by noon unless the wind turns. ";
    const std::vector<int32_t> text = A.encode(s);
    for (size_t nb : {size_t(8), size_t(40)}) {
        REQUIRE(text.size() >= 3 * nb + 8);
        auto span = [&](size_t from, size_t n) {
            return std::vector<int32_t>(text.begin() + static_cast<std::ptrdiff_t>(from),
                                        text.begin() + static_cast<std::ptrdiff_t>(from + n));
        };
        runtime::ContextParams p = small_params(256, static_cast<uint32_t>(nb));
        p.n_seq_max = 4;
        p.n_threads = 2;
        runtime::Context batched(A.m, p);
        std::vector<int32_t> a = span(0, nb - 1), b = span(2, nb + 5), c = span(5, nb + 3);
        const int32_t ids[2] = {0, 1};
        {
            const int32_t* toks[2] = {a.data(), b.data()};
            const size_t lens[2] = {a.size(), b.size()};
            batched.prefill_batch(ids, toks, lens, 2);  // round 1: a's nb - 1 rows and b's first
            runtime::Context alone(A.m, small_params(256));
            alone.prefill(0, b.data(), b.size());
            CHECK_MESSAGE(bit_equal(batched.logits(1).data(), alone.logits(0).data(), A.vocab()),
                          std::string(arch) << ": n_batch " << nb << ", the prompt whose first row was a single");
        }
        a.push_back(text[nb + 20]);
        {
            const int32_t* toks[2] = {a.data(), c.data()};
            const size_t lens[2] = {a.size(), c.size()};
            runtime::RequestStats st[2];
            batched.prefill_batch(ids, toks, lens, 2, st);  // round 1: a's new row and c's first nb - 1
            CHECK(st[0].computed_tokens == 1);
        }
        const std::vector<int32_t>* want[2] = {&a, &c};
        for (int q = 0; q < 2; ++q) {
            runtime::Context alone(A.m, small_params(256));
            alone.prefill(0, want[q]->data(), want[q]->size());
            CHECK_MESSAGE(bit_equal(batched.logits(q).data(), alone.logits(0).data(), A.vocab()),
                          std::string(arch) << ": n_batch " << nb << ", sequence " << q);
        }
    }
}

void thread_count(const char* arch, KvTypes kt = {}) {
    const Arch A(arch);
    if (!A.ok) return;
    const std::vector<int32_t> p = A.encode("Threads must not matter for the result.");
    runtime::ContextParams p1 = typed(small_params(128), kt), p2 = typed(small_params(128), kt);
    p1.n_threads = 1;
    p2.n_threads = 2;
    runtime::Context c1(A.m, p1), c2(A.m, p2);
    const kvrt::test::GreedyRun a = greedy_run(c1, 0, p, 3), b = greedy_run(c2, 0, p, 3);
    CHECK(a.tokens == b.tokens);
    for (size_t s = 0; s < a.logits.size(); ++s)
        CHECK_MESSAGE(bit_equal(a.logits[s].data(), b.logits[s].data(), A.vocab()), std::string(arch) << ": step " << s);
    // n_threads 0: the governor (runtime/thread_governor.hpp) runs some steps on the OpenMP
    // default and probes fewer threads from step 4 on; the logits are those of 1 thread.
    runtime::ContextParams p0 = typed(small_params(128), kt);
    p0.n_threads = 0;
    runtime::Context c0(A.m, p0), c1b(A.m, p1);
    const kvrt::test::GreedyRun g = greedy_run(c0, 0, p, 12), f = greedy_run(c1b, 0, p, 12);
    CHECK(g.tokens == f.tokens);
    for (size_t s = 0; s < g.logits.size(); ++s)
        CHECK_MESSAGE(bit_equal(g.logits[s].data(), f.logits[s].data(), A.vocab()),
                      std::string(arch) << ": governed threads, step " << s);
}

}  // namespace

// One test case per (property, architecture).
#define KVRT_EXACTNESS_CASES(ARCH)                                                                                     \
    TEST_CASE("runtime[" ARCH "]: chunked cached prefill equals the uncached forward at every prompt position, bit for bit") { \
        chunked_prefill(ARCH);                                                                                         \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: 32 greedy decode steps through the cache equal the uncached forward, bit for bit") { \
        greedy_decode(ARCH);                                                                                           \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: a prefix-cache hit gives the cold run's logits and greedy text, bit for bit") {      \
        prefix_hit(ARCH);                                                                                              \
        prefix_hit(ARCH, {}, 0);                                                                                       \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: an edited prompt keeps the positions before the first changed token and equals a cold run") { \
        edited_prompt(ARCH);                                                                                           \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: a batched decode step equals each sequence decoded alone, bit for bit") {            \
        batched_decode(ARCH);                                                                                          \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: a batched prefill equals each sequence prefilled alone, bit for bit") {              \
        batched_prefill(ARCH);                                                                                         \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: rounds that mix prompt chunks with single rows equal each prompt alone, bit for bit") { \
        mixed_rounds(ARCH);                                                                                            \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: the thread count does not change a bit of the logits") { thread_count(ARCH); }   \
    TEST_CASE("runtime[" ARCH "]: int8 KV, chunked prefill, decode and prefix hits equal the uncached int8 run") {  \
        chunked_prefill(ARCH, {DType::I8, DType::I8});                                                               \
        greedy_decode(ARCH, {DType::I8, DType::I8});                                                                 \
        prefix_hit(ARCH, {DType::I8, DType::I8});                                                                    \
    }                                                                                                                  \
    TEST_CASE("runtime[" ARCH "]: fp8 KV and K,V of different types, chunked prefill equals the uncached run") {    \
        chunked_prefill(ARCH, {DType::FP8_E4M3, DType::FP8_E4M3});                                                   \
        chunked_prefill(ARCH, {DType::F16, DType::I8});                                                              \
        greedy_decode(ARCH, {DType::I8, DType::FP8_E4M3});                                                           \
    }

KVRT_EXACTNESS_CASES("llama")

// The other activation-code settings (kvrt_context_config.act_bits 16 and 8 everywhere, and 9:
// the default with outlier residuals on the 8-bit codes; the cases above run the default, 16-bit
// codes for the K/V projections only) on one model: the same guarantees, against the uncached
// forward run with those codes; the four are different computations; and contexts of the four
// sharing a cache never reuse each other's blocks.
TEST_CASE("runtime[llama]: act_bits 16, 8 and 9 keep chunked prefill, decode, prefix hits and threads bit-exact") {
    for (int bits : {16, 8, 9}) {
        const KvTypes kt{DType::F16, DType::F16, bits};
        chunked_prefill("llama", kt);
        greedy_decode("llama", kt);
        prefix_hit("llama", kt);
        thread_count("llama", kt);
    }
    const Arch A("llama");
    if (!A.ok) return;
    const std::vector<int32_t> p = A.encode("Sixteen bits per activation.");
    const auto n = static_cast<int32_t>(p.size());
    const std::vector<float> w0 = runtime::uncached_forward(*A.m, p.data(), n, DType::F16, DType::F16);
    const std::vector<float> w8 = runtime::uncached_forward(*A.m, p.data(), n, DType::F16, DType::F16, ActBits::Q8);
    const std::vector<float> w16 = runtime::uncached_forward(*A.m, p.data(), n, DType::F16, DType::F16, ActBits::Q16);
    CHECK_FALSE(bit_equal(w8.data(), w16.data(), w8.size()));
    CHECK_FALSE(bit_equal(w0.data(), w8.data(), w0.size()));
    CHECK_FALSE(bit_equal(w0.data(), w16.data(), w0.size()));
    // 9 is the default's computation (since 0.3.3), and its residuals apply: not the 8-bit codes alone.
    const std::vector<float> w9 =
        runtime::uncached_forward(*A.m, p.data(), n, DType::F16, DType::F16, ActCodes::from_option(kActBitsOutliers));
    CHECK(bit_equal(w0.data(), w9.data(), w0.size()));
    ActCodes plain;
    plain.other = plain.head = ActBits::Q8;
    const std::vector<float> wp = runtime::uncached_forward(*A.m, p.data(), n, DType::F16, DType::F16, plain);
    CHECK_FALSE(bit_equal(w0.data(), wp.data(), w0.size()));
    CHECK_FALSE(bit_equal(wp.data(), w8.data(), w0.size()));
    // One shared cache: 16 and 8 compute the document themselves, then hit their own blocks; 9 hits
    // the default's.
    const std::vector<int32_t> doc = A.encode(
        "Project memo. The bridge repair starts on 3 May and must finish by 30 June. The budget is fixed.");
    REQUIRE(doc.size() > 16);
    runtime::Context first(A.m, small_params(256));
    first.prefill(0, doc.data(), doc.size());
    for (int bits : {16, 8, 9}) {
        runtime::Context c(A.m, typed(small_params(256), KvTypes{DType::F16, DType::F16, bits}), first.cache());
        runtime::RequestStats st;
        c.prefill(0, doc.data(), doc.size(), &st);
        if (bits == 9) CHECK(st.reused_from_cache >= 16);
        else CHECK_MESSAGE(st.reused_from_cache == 0, "act_bits " << bits);
        const std::vector<float> want = runtime::uncached_forward(*A.m, doc.data(), static_cast<int32_t>(doc.size()),
                                                                  DType::F16, DType::F16, ActCodes::from_option(bits));
        CHECK(bit_equal(c.logits(0).data(), A.row(want, doc.size() - 1), A.vocab()));
        c.release(0);
        runtime::RequestStats again;
        c.prefill(0, doc.data(), doc.size(), &again);
        CHECK_MESSAGE(again.reused_from_cache >= 16, "act_bits " << bits);
    }
}
KVRT_EXACTNESS_CASES("qwen2")
KVRT_EXACTNESS_CASES("gemma3")
