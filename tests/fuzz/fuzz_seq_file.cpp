// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// libFuzzer harness: a context's saved conversation (kvrt_context_seq_save / _load's
// "KVRTCTX" file): the container (cache/state_file), the header and records
// (runtime/seq_file.cpp's read_seq_file, which Context::load_seq calls), and the
// decoder's rows blob (Cache::load_sequence_blob, the "KVRTSEQ" container inside).
//
// Input: byte 0 is the mode: bit 0 keeps the trailing XXH3-64 checksum as given
// (default: recomputed over the rest, so that mutations reach the parsers), bit 1 takes
// the context's expectations (family, fingerprint, dtypes, block size, salt) from the
// file's own header where it has them, so that a mutated header parses on instead of
// stopping at the first MISMATCH (default: the expectations of the context that wrote
// the seeds), bit 2 reads it as kvrt_context_seq_restore does (rows of another dtype, block
// size or salt recorded, not refused). The rest is the file, loaded from memory as
// Context::load_seq loads it.
// A file must load or fail with kvrt::Error, a failed load leaves the cache as it was,
// and a loaded sequence holds exactly the file's tokens, all computed, readable, and
// is released with the cache's byte accounting intact.
//
// Seeds: KVRT_FUZZ_WRITE_SEEDS=<dir> fuzz_seq_file writes files in Context::save_seq's
// format around rows the cache itself saved (tests/fuzz/corpus/seq_file holds them).
#include "fuzz_cache_config.hpp"
#include "fuzz_support.hpp"

#include "cache/cache.hpp"
#include "cache/state_file.hpp"
#include "runtime/seq_file.hpp"
#include "util/error.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace kvrt;
using namespace kvrt::cache;
using kvrt::fuzz::kFpHi;
using kvrt::fuzz::kFpLo;
using kvrt::fuzz::fill;
using namespace kvrt::runtime;

namespace {

constexpr uint32_t kVocab = 512, kCtx = 256;


SeqFileExpect default_expect() {
    SeqFileExpect e;
    e.ced = false;
    e.fingerprint_lo = kFpLo;
    e.fingerprint_hi = kFpHi;
    e.dtypes_word = kv_dtypes_word(DType::F16, std::nullopt);
    e.block_tokens = 4;
    e.salt = "";
    e.n_ctx = kCtx;
    e.n_vocab = kVocab;
    return e;
}

template <typename T>
bool peek(const std::vector<uint8_t>& f, size_t at, T& v) {
    if (at + sizeof(T) > f.size()) return false;
    std::memcpy(&v, f.data() + at, sizeof(T));
    return true;
}

// The expectations a context would need to accept this file's header (magic 8, version 4,
// then family, fingerprint, dtype word, block size, salt), field by field while the file has them.
SeqFileExpect expect_from_header(const std::vector<uint8_t>& f) {
    SeqFileExpect e = default_expect();
    uint32_t family = 0, dt = 0, bt = 0;
    uint64_t lo = 0, hi = 0, salt_len = 0;
    if (peek(f, 12, family)) e.ced = family == kSeqFamilyCed;
    if (peek(f, 16, lo) && peek(f, 24, hi)) {
        e.fingerprint_lo = lo;
        e.fingerprint_hi = hi;
    }
    if (peek(f, 32, dt)) e.dtypes_word = dt;
    if (peek(f, 36, bt)) e.block_tokens = bt;
    if (peek(f, 40, salt_len) && salt_len <= f.size() && 48 + salt_len <= f.size())
        e.salt.assign(reinterpret_cast<const char*>(f.data() + 48), salt_len);
    return e;
}

// A file as Context::save_seq writes it (context_state.cpp), around a cache sequence blob.
std::vector<uint8_t> context_file(const std::vector<int32_t>& tokens, bool logits, const std::vector<uint8_t>& blob,
                                  const std::string& salt) {
    StateWriter w(kSeqFileMagic);
    w.u32(kSeqFamilyDecoder);
    w.u64(kFpLo);
    w.u64(kFpHi);
    w.u32(kv_dtypes_word(DType::F16, std::nullopt));
    w.u32(4);
    w.u64(salt.size());
    w.bytes(salt.data(), salt.size());
    w.u64(tokens.size());
    w.bytes(tokens.data(), tokens.size() * sizeof(int32_t));
    w.u32(logits ? 1 : 0);
    std::vector<float> l(logits ? kVocab : 0);
    for (size_t i = 0; i < l.size(); i++) l[i] = float(i % 97) * 0.25f - 3.0f;
    w.u64(l.size());
    w.bytes(l.data(), l.size() * sizeof(float));
    w.u64(blob.size());
    w.bytes(blob.data(), blob.size());
    return w.finish();
}


void write_seeds(const char* dir) {
    Cache c(kvrt::fuzz::small_cache_config());
    int n = 0;
    auto emit = [&](uint8_t mode, const std::vector<uint8_t>& file) {
        std::vector<uint8_t> bytes(1, mode);
        bytes.insert(bytes.end(), file.begin(), file.end());
        const std::string out = std::string(dir) + "/seed-" + std::to_string(n++);
        if (!fuzz::write_file(out, bytes.data(), bytes.size())) fuzz::missing("cannot write " + out);
    };
    for (size_t len : {size_t(11), size_t(3)}) {
        std::vector<int32_t> toks(len);
        for (size_t i = 0; i < len; i++) toks[i] = int32_t((17 + i * 29) % kVocab);
        SeqId s = c.create_sequence(SeqKeys{kFpLo, kFpHi, len == 3 ? "tenant-7" : "", 0});
        c.append(s, toks.data(), int64_t(len));
        fill(c, s, 0, int64_t(len));
        const std::vector<uint8_t> blob = c.save_sequence_blob(s);
        c.release(s);
        const std::string salt = len == 3 ? "tenant-7" : "";
        emit(0, context_file(toks, len == 11, blob, salt));
        emit(2, context_file(toks, false, blob, salt));
    }
    emit(0, context_file({}, false, {}, ""));  // an empty conversation
    std::fprintf(stderr, "fuzz_seq_file: wrote %d seeds to %s\n", n, dir);
}

std::unique_ptr<Cache>& cache_slot() {
    static std::unique_ptr<Cache> c;
    return c;
}

void check_stats(const Cache& c) {
    const CacheStats st = c.stats();
    if (st.bytes_in_use + st.bytes_cached + st.bytes_free != st.budget_bytes) {
        std::fprintf(stderr, "fuzz_seq_file: cache accounting broken\n");
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* dir = std::getenv("KVRT_FUZZ_WRITE_SEEDS"); dir && *dir) {
        write_seeds(dir);
        std::exit(0);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool keep_checksum = data[0] & 1, trust_header = data[0] & 2, rows_may_differ = data[0] & 4;
    std::vector<uint8_t> file(data + 1, data + size);
    if (!keep_checksum && file.size() >= 8) {
        const uint64_t sum = XXH3_64bits(file.data(), file.size() - 8);
        std::memcpy(file.data() + file.size() - 8, &sum, 8);
    }
    const SeqFileExpect want = trust_header ? expect_from_header(file) : default_expect();
    SeqFileContents f;
    try {
        StateReader r(std::move(file), kSeqFileMagic, "fuzz.kvrtctx");
        f = read_seq_file(r, want, "fuzz.kvrtctx", rows_may_differ);
    } catch (const Error&) {
        return 0;
    }
    // What read_seq_file promises about what it returns.
    if (f.tokens.size() > want.n_ctx || f.arch.empty() != f.tokens.empty() ||
        f.logits.size() != (f.has_logits ? want.n_vocab : 0u) || f.fingerprint_lo != want.fingerprint_lo) {
        std::fprintf(stderr, "fuzz_seq_file: read_seq_file returned a record its checks should have refused\n");
        std::abort();
    }
    for (int32_t t : f.tokens)
        if (t < 0 || uint32_t(t) >= want.n_vocab) std::abort();
    // Rows of another dtype, block size or salt: kvrt_context_seq_restore prefills the tokens
    // (checked above) and never reads the rows; the strict read never returns such a record.
    if (!f.rows_differ.empty()) {
        if (!rows_may_differ) std::abort();
        return 0;
    }
    if (f.tokens.empty() || want.ced) return 0;  // CED state blobs need the CED runtime (not in this slice)

    // The decoder's rows, as Context::load_seq loads them.
    std::unique_ptr<Cache>& slot = cache_slot();
    if (!slot) slot = std::make_unique<Cache>(kvrt::fuzz::small_cache_config());
    Cache& c = *slot;
    const CacheStats before = c.stats();
    SeqId id = 0;
    try {
        id = c.load_sequence_blob(std::move(f.arch), f.fingerprint_lo, f.fingerprint_hi, "fuzz.kvrtctx");
    } catch (const Error&) {
        const CacheStats after = c.stats();
        if (after.bytes_in_use != before.bytes_in_use || after.n_sequences != before.n_sequences) {
            std::fprintf(stderr, "fuzz_seq_file: a failed load changed the cache\n");
            std::abort();
        }
        return 0;
    }
    check_stats(c);
    const SeqInfo info = c.seq_info(id);
    if (info.length == int64_t(f.tokens.size()) && info.computed == info.length) {
        std::vector<uint8_t> k(2 * 8 * 2), v(2 * 8 * 2);
        for (int64_t p = 0; p < info.length; p++) {
            try {
                c.read_rows(id, 0, p, 1, k.data(), v.data());
            } catch (const Error&) {
                std::fprintf(stderr, "fuzz_seq_file: a loaded full layer's row %lld cannot be read\n", (long long)p);
                std::abort();
            }
        }
    }
    c.release(id);
    check_stats(c);
    slot.reset();  // the next input starts from an empty cache
    return 0;
}
