// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// CedRuntime::save_state / load_state: one CED sequence as a self-contained
// container, so that a context can save a conversation and a later process
// continues it bit for bit. Besides the tokens it holds what the cached rows
// alone do not: the decoder's progress and floors, the per-source count of
// fixed groups and the raw rows of every open group (tail state), and the two
// cache sequences (bank + indexer keys, window rings) as KVRTSEQ containers,
// each with its own layout hash, fingerprint and checksum.
#include "cache/state_file.hpp"
#include "model/arch/ced_runtime.hpp"
#include "model/arch/ced_runtime_seq.hpp"
#include "util/error.hpp"

#include <cstring>
#include <limits>

namespace kvrt::ced {

namespace {
const char kCedMagic[8] = {'K', 'V', 'R', 'T', 'C', 'E', 'D', '\0'};

void put_floats(cache::StateWriter& w, const std::vector<float>& v) {
    w.u64(v.size());
    w.bytes(v.data(), v.size() * sizeof(float));
}
void put_blob(cache::StateWriter& w, const std::vector<uint8_t>& b) {
    w.u64(b.size());
    w.bytes(b.data(), b.size());
}
std::vector<float> get_floats(cache::StateReader& r, uint64_t max, const std::string& what) {
    uint64_t n = r.u64();
    KVRT_CHECK(n <= max && n <= r.remaining() / sizeof(float), KVRT_ERR_BAD_FORMAT, what + ": bad tail state size");
    std::vector<float> v(n);
    if (n) std::memcpy(v.data(), r.bytes(n * sizeof(float)), n * sizeof(float));
    return v;
}
std::vector<uint8_t> get_blob(cache::StateReader& r, const std::string& what) {
    uint64_t n = r.u64();
    KVRT_CHECK(n <= r.remaining(), KVRT_ERR_BAD_FORMAT, what + ": an embedded cache sequence exceeds the file");
    const uint8_t* p = r.bytes(n);
    return std::vector<uint8_t>(p, p + n);
}
}  // namespace

std::vector<uint8_t> CedRuntime::save_state(SeqId id) const {
    const Seq& s = get(id);
    cache::StateWriter w(kCedMagic);
    w.u32(static_cast<uint32_t>(c_.n_sources()));
    w.u64(s.tokens.size());
    w.bytes(s.tokens.data(), s.tokens.size() * sizeof(int32_t));
    for (int64_t v : {s.bank_len, s.win_len, s.dec_start, s.dec_next, s.enc_floor, s.dec_floor}) w.i64(v);
    for (int32_t i = 0; i < c_.n_sources(); i++) {
        w.i64(s.fixed[i]);
        put_floats(w, s.tail_kv[i]);
        put_floats(w, s.tail_gate[i]);
    }
    w.u32(s.bank != 0);
    if (s.bank) put_blob(w, banks_->save_sequence_blob(s.bank));
    w.u32(s.win != 0);
    if (s.win) put_blob(w, windows_->save_sequence_blob(s.win));
    return w.finish();
}

CedRuntime::SeqId CedRuntime::load_state(std::vector<uint8_t> blob, const std::string& what) {
    cache::StateReader r(std::move(blob), kCedMagic, what);
    KVRT_CHECK(r.u32() == static_cast<uint32_t>(c_.n_sources()), KVRT_ERR_MISMATCH,
               what + " was saved from a CED model with another number of bank sources");
    auto s = std::make_unique<Seq>();
    const uint64_t n = r.u64();
    KVRT_CHECK(n <= uint64_t(std::numeric_limits<int32_t>::max()) && n * 4 <= r.remaining(), KVRT_ERR_BAD_FORMAT,
               what + ": bad CED token count");
    s->tokens.resize(n);
    if (n) std::memcpy(s->tokens.data(), r.bytes(n * 4), n * 4);
    for (int32_t t : s->tokens)
        KVRT_CHECK(t >= 0 && t < c_.n_vocab, KVRT_ERR_BAD_FORMAT, what + ": a token is outside the vocabulary");
    int64_t* fields[] = {&s->bank_len, &s->win_len, &s->dec_start, &s->dec_next, &s->enc_floor, &s->dec_floor};
    for (int64_t* f : fields) {
        *f = r.i64();
        KVRT_CHECK(*f >= 0 && *f <= int64_t(n), KVRT_ERR_BAD_FORMAT, what + ": a CED position is outside the sequence");
    }
    const size_t D = c_.entry_dim;
    s->fixed.resize(c_.n_sources());
    s->tail_kv.resize(c_.n_sources());
    s->tail_gate.resize(c_.n_sources());
    for (int32_t i = 0; i < c_.n_sources(); i++) {
        const int64_t ratio = c_.source_ratios[i];
        s->fixed[i] = r.i64();
        KVRT_CHECK(s->fixed[i] >= 0 && s->fixed[i] <= int64_t(n) / ratio + 1, KVRT_ERR_BAD_FORMAT,
                   what + ": bad fixed group count");
        s->tail_kv[i] = get_floats(r, uint64_t(ratio) * D, what);
        s->tail_gate[i] = get_floats(r, uint64_t(ratio) * D, what);
    }
    const bool has_bank = r.u32() != 0;
    std::vector<uint8_t> bank_blob = has_bank ? get_blob(r, what) : std::vector<uint8_t>{};
    const bool has_win = r.u32() != 0;
    std::vector<uint8_t> win_blob = has_win ? get_blob(r, what) : std::vector<uint8_t>{};
    r.expect_end();
    // Everything is read: now the caches (each validates its container first; on failure nothing
    // of this sequence stays).
    if (has_bank) s->bank = banks_->load_sequence_blob(std::move(bank_blob), fp_lo_, fp_hi_, what + " (bank rows)");
    try {
        if (has_win) s->win = windows_->load_sequence_blob(std::move(win_blob), fp_lo_, fp_hi_, what + " (window rows)");
        KVRT_CHECK(!s->bank || banks_->seq_info(s->bank).length == s->bank_len, KVRT_ERR_BAD_FORMAT,
                   what + ": the bank rows do not cover the saved length");
        KVRT_CHECK(!s->win || windows_->seq_info(s->win).length == s->win_len, KVRT_ERR_BAD_FORMAT,
                   what + ": the window rows do not cover the saved length");
    } catch (...) {
        if (s->bank) banks_->release(s->bank);
        if (s->win) windows_->release(s->win);
        throw;
    }
    SeqId id = next_id_++;
    seqs_.emplace(id, std::move(s));
    return id;
}

}  // namespace kvrt::ced
