// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// Context::save_seq / load_seq / restore_seq / fork_seq / truncate_seq: one
// conversation saved to a file and restored (in this process or another, as saved
// or recomputed from its tokens), forked and cut.
//
// File ("KVRTCTX", the state_file.hpp container: version, XXH3-64 checksum of
// everything, written to a temporary file, fsync'ed, renamed, directory
// fsync'ed):
//   u32 family (0 decoder, 1 CED) | model fingerprint (2 x u64) | u32 KV dtypes (the
//   K rows' type in the low 16 bits; V's type + 1 in the high 16 when V's differs, 0 when
//   not: a file of one type reads as it always did) |
//   u32 block tokens | salt (u64 length + bytes) | tokens (u64 n + n x i32) |
//   u32 has_logits | logits (u64 n + n x f32) | u64 length + the architecture's
//   state: a KVRTSEQ container of the cache sequence (decoders: rows of every
//   layer, its own layout hash and checksum) or a KVRTCED container (CED: bank
//   and window cache sequences plus the tail state).
// Loading checks everything that can be checked before the cache changes, in
// order of what the message should name (model, dtype, block size, salt), and
// installs the new sequence only when its rows were loaded: a failure leaves
// the context's sequence as it was.
#include "cache/state_file.hpp"
#include "model/model.hpp"
#include "runtime/context.hpp"
#include "runtime/seq_file.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

#include <cstring>
#include <limits>

namespace kvrt::runtime {

// The file's magic, family codes and dtype word live in runtime/seq_file.hpp, with the
// parser both load_seq and the fuzz harness (tests/fuzz/fuzz_seq_file.cpp) use.
static constexpr const char* kCtxMagic = kSeqFileMagic;
static constexpr uint32_t kFamilyDecoder = kSeqFamilyDecoder, kFamilyCed = kSeqFamilyCed;

void Context::save_seq(int32_t seq, const std::string& path) const {
    const Seq& s = seq_ref(seq);
    cache::StateWriter w(kCtxMagic);
    w.u32(ced_ ? kFamilyCed : kFamilyDecoder);
    w.u64(model_->fingerprint().lo);
    w.u64(model_->fingerprint().hi);
    w.u32(kv_dtypes_word(p_.kv_dtype, p_.kv_v_dtype));
    w.u32(static_cast<uint32_t>(p_.block_tokens));
    w.u64(keys_.salt.size());  // the salt, plus its arithmetic suffix (Context::Context)
    w.bytes(keys_.salt.data(), keys_.salt.size());
    w.u64(s.tokens.size());
    w.bytes(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
    w.u32(s.has_logits ? 1 : 0);
    const size_t nl = s.has_logits ? s.logits.size() : 0;
    w.u64(nl);
    w.bytes(s.logits.data(), nl * sizeof(float));
    std::vector<uint8_t> arch;
    if (ced_ && s.ced) arch = ced_->save_state(s.ced);
    else if (!ced_ && s.id) arch = cache_->save_sequence_blob(s.id);
    w.u64(arch.size());
    w.bytes(arch.data(), arch.size());
    w.commit(path);
}

SeqFileContents Context::read_seq_path(const std::string& path, bool rows_may_differ) const {
    // Largest file this context could have written: its cache budget, twice, plus headers.
    const uint64_t budget = ced_ ? ced_->bank_cache().stats().budget_bytes + ced_->window_cache().stats().budget_bytes
                                 : cache_->stats().budget_bytes;
    cache::StateReader r(path, kCtxMagic, 2 * budget + (uint64_t(1) << 34));
    SeqFileExpect want;
    want.ced = ced_ != nullptr;
    want.fingerprint_lo = model_->fingerprint().lo;
    want.fingerprint_hi = model_->fingerprint().hi;
    want.dtypes_word = kv_dtypes_word(p_.kv_dtype, p_.kv_v_dtype);
    want.block_tokens = static_cast<uint32_t>(p_.block_tokens);
    want.salt = keys_.salt;
    want.n_ctx = p_.n_ctx;
    want.n_vocab = model_->config().n_vocab;
    return read_seq_file(r, want, path, rows_may_differ);
}

void Context::install_seq(int32_t seq, SeqFileContents&& f, const std::string& path) {
    Seq& s = seq_ref(seq);
    const uint64_t n = f.tokens.size(), fp_lo = f.fingerprint_lo, fp_hi = f.fingerprint_hi;
    std::vector<int32_t> tokens = std::move(f.tokens);
    std::vector<float> logits = std::move(f.logits);
    std::vector<uint8_t> arch = std::move(f.arch);
    const uint32_t has_logits = f.has_logits ? 1 : 0;

    // Load the rows into a new cache sequence; install it only when that worked.
    Seq fresh;
    if (n > 0) {
        if (ced_) {
            fresh.ced = ced_->load_state(std::move(arch), path);
            if (ced_->tokens(fresh.ced) != tokens) {
                ced_->release(fresh.ced);
                fail(KVRT_ERR_BAD_FORMAT, path + ": the CED state's tokens differ from the file's");
            }
        } else {
            fresh.id = cache_->load_sequence_blob(std::move(arch), fp_lo, fp_hi, path);
            const cache::SeqInfo info = cache_->seq_info(fresh.id);
            if (info.length != int64_t(n) || info.computed != int64_t(n)) {
                cache_->release(fresh.id);
                fail(KVRT_ERR_BAD_FORMAT, path + ": the saved rows do not cover the saved tokens");
            }
        }
    }
    fresh.tokens = std::move(tokens);
    fresh.logits = std::move(logits);
    fresh.has_logits = has_logits != 0;
    drop(s);
    s = std::move(fresh);
}

void Context::load_seq(int32_t seq, const std::string& path) {
    seq_ref(seq);  // (an id outside the context: OUT_OF_RANGE before the file is read)
    install_seq(seq, read_seq_path(path, false), path);
}

void Context::restore_seq(int32_t seq, const std::string& path, RequestStats* stats, bool* recomputed) {
    const double t0 = log::now_s();
    seq_ref(seq);
    SeqFileContents f = read_seq_path(path, true);
    const size_t n = f.tokens.size();
    if (f.rows_differ.empty()) {
        install_seq(seq, std::move(f), path);
        if (stats) {
            *stats = RequestStats{};
            stats->prompt_tokens = n;
            stats->reused_tokens = n;
            stats->kv_bytes = kv_bytes(seq);
            stats->ttft_s = log::now_s() - t0;
        }
        return;
    }
    if (recomputed) *recomputed = true;
    log::at(log::Info, [&] { return f.rows_differ + ": recomputing its " + std::to_string(n) + " tokens"; });
    if (n == 0) {  // an empty conversation: nothing to recompute
        drop(seq_ref(seq));
        if (stats) *stats = RequestStats{};
        return;
    }
    prefill(seq, f.tokens.data(), n, stats);
}

void Context::fork_seq(int32_t src, int32_t dst) {
    Seq& a = seq_ref(src);
    Seq& b = seq_ref(dst);
    if (src == dst) return;
    Seq c;
    if (a.ced) c.ced = ced_->fork(a.ced);
    else if (a.id) c.id = cache_->fork(a.id);
    c.tokens = a.tokens;
    c.logits = a.logits;
    c.has_logits = a.has_logits;
    drop(b);
    b = std::move(c);
}

void Context::truncate_seq(int32_t seq, size_t n) {
    Seq& s = seq_ref(seq);
    KVRT_CHECK(n <= s.tokens.size(), KVRT_ERR_OUT_OF_RANGE,
               "truncate: " + std::to_string(n) + " is more than the " + std::to_string(s.tokens.size()) +
                   " tokens sequence " + std::to_string(seq) + " holds");
    if (n == s.tokens.size()) return;
    if (n == 0) {
        drop(s);
        return;
    }
    if (s.ced) ced_->truncate(s.ced, static_cast<int64_t>(n));  // INVALID_STATE: nothing changed
    else cache_->truncate(s.id, static_cast<int64_t>(n));
    s.tokens.resize(n);
    s.has_logits = false;
}

}  // namespace kvrt::runtime
