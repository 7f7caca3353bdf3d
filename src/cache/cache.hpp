// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// kvrt::cache::Cache — the KV cache manager (C++ API; include/kvrt/cache.h wraps it).
//
// Internally synchronised: every member function may be called from any
// thread at any time; one mutex guards the whole state. Pointers it returns
// (rows, PagedKV) stay valid as documented per function; block memory never
// moves while a sequence holds the block.
//
// Positions and rows: a sequence of length n has positions [0, n). Full and
// window layers store one K row and one V row per position. A bank layer with
// ratio r stores one row (K = V) per group g = p / r; its indexer keys too.
// A block holds block_tokens positions (block_tokens / r rows of a bank).
//
// Life of a position: append() reserves its rows in every manager; the
// runtime writes them (k_row_mut/v_row_mut); mark_computed() declares them
// written. Only then do full blocks get hashed into the prefix index and
// become shareable; rows of a shared or indexed block are immutable, and
// append() copies a shared/indexed partial last block before writing into it.
#pragma once

#include "cache/block_children.hpp"
#include "cache/block_hash.hpp"
#include "cache/block_pool.hpp"
#include "cache/layout.hpp"
#include "kernels/paged_kv.hpp"

#include <array>
#include <atomic>
#include <string>
#include <unordered_set>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kvrt::cache {

class StateReader;
class BlockTier;
struct TierStats;
using SeqId = uint64_t;  // never reused within a cache; 0 is never a valid id

struct KindStats {
    int32_t n_layers = 0;
    uint64_t blocks_in_use = 0;
    uint64_t bytes_in_use = 0;
    uint64_t blocks_cached = 0;
    uint64_t bytes_cached = 0;
    double bytes_per_token = 0;  // sum over the kind's layers of 2 x heads x dim x bytes (/ r for banks, K = V once)
};

struct ManagerStats {
    LayerKind kind = LayerKind::Full;
    int32_t window = 0;
    int32_t ratio = 1;
    int32_t n_layers = 0;
    size_t block_bytes = 0;
    size_t padding_bytes = 0;  // alignment padding inside one block (0 for the usual shapes)
    uint64_t blocks_in_use = 0;
    uint64_t blocks_cached = 0;
};

struct CacheStats {
    uint64_t budget_bytes = 0;
    uint64_t bytes_in_use = 0;  // blocks held by sequences or pins
    uint64_t bytes_cached = 0;  // unreferenced, indexed, evictable
    uint64_t bytes_free = 0;    // budget - in use - cached
    uint64_t blocks_in_use = 0;
    uint64_t blocks_cached = 0;
    uint64_t blocks_free = 0;   // how many more "block sets" (one block per manager) fit in bytes_free
    uint64_t n_sequences = 0;   // live sequences (pins excluded)
    uint64_t n_pins = 0;
    uint64_t queried_tokens = 0;  // prompt tokens passed to match_prefix
    uint64_t hit_tokens = 0;      // of which served from the prefix cache
    uint64_t evictions = 0;
    double bytes_per_token = 0;   // all kinds
    size_t block_set_bytes = 0;   // sum of one block of every manager
    bool dedicated_arena = false;
    bool large_pages = false;
    uint64_t arena_reserved_bytes = 0;
    std::array<KindStats, kNumLayerKinds> kinds{};
    std::vector<ManagerStats> managers;
};

struct SeqInfo {
    int64_t length = 0;
    int64_t computed = 0;
    int64_t n_blocks = 0;   // logical blocks (ceil(length / block_tokens))
    uint64_t bytes = 0;     // bytes of the blocks it references (shared ones counted fully)
    std::array<uint64_t, kNumLayerKinds> bytes_by_kind{};  // the same, split by layer kind
    bool is_pin = false;
};

// What fetch_from_tiers did for one prompt.
struct TierFetch {
    int64_t ram_blocks = 0;            // leading blocks of the prompt already in RAM
    std::vector<int8_t> loaded_from;   // each following block loaded from a tier: 0 disk, 1 remote
};

// One lower tier as the cache sees it.
struct TierReport {
    std::string kind;               // "disk", "redis"
    uint64_t puts = 0, put_bytes = 0, put_failures = 0, gets = 0, hits = 0, get_bytes = 0, misses = 0;
    uint64_t corrupt = 0;           // the backend's and the cache's envelope/payload rejections
    uint64_t errors = 0, timeouts = 0, evictions = 0, bytes_stored = 0;
    uint64_t loaded_blocks = 0;     // block sets loaded back into RAM from this tier
    std::string last_error;
};

class Cache {
public:
    // Validates the layout (kvrt::Error on bad input) and reserves the arena.
    explicit Cache(const CacheConfig& cfg);
    ~Cache();
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    // ---- sequences ---------------------------------------------------------
    SeqId create_sequence(const SeqKeys& keys = {});
    // Releases every block; full computed blocks stay cached until evicted.
    // NOT_FOUND for an unknown, released or pin id.
    void release(SeqId seq);
    // A new sequence sharing all of `parent`'s blocks (by reference count).
    // The partly filled last block is copied on the next append of either.
    // INVALID_STATE when parent has appended positions not yet marked computed.
    SeqId fork(SeqId parent);
    // Positions >= p become invalid; their blocks return. OUT_OF_RANGE when
    // p > length; INVALID_STATE when a window layer no longer holds the rows a
    // query at p needs (p > 0).
    void truncate(SeqId seq, int64_t p);

    // ---- prefix cache ------------------------------------------------------
    // On an empty sequence: attaches the longest cached prefix of tokens[0, n)
    // in whole blocks, never covering the last token, intersected over all
    // managers; returns the hit length in tokens (length and computed become
    // it). INVALID_STATE when seq is not empty.
    // sub_block: the hit may go on into a cached child of the last whole block
    // hit (block_children.hpp) up to the first token that differs; the sequence
    // then holds that block as its partly filled last block (shared, immutable:
    // the next append copies it, as after fork). Every manager must hold the
    // child. Contexts ask for it; CED's caches (block-aligned checkpoints) and
    // the C API's match_prefix do not.
    int64_t match_prefix(SeqId seq, const int32_t* tokens, int64_t n, bool sub_block = false);
    // Same hit length without attaching anything.
    int64_t lookup_prefix(const SeqKeys& keys, const int32_t* tokens, int64_t n, bool sub_block = false) const;
    // Holds the longest cached prefix of tokens (whole blocks, may cover all
    // n) until unpin(); returns the pin id and the pinned token count.
    // NOT_FOUND when no block of it is cached.
    SeqId pin_prefix(const SeqKeys& keys, const int32_t* tokens, int64_t n, int64_t* pinned_tokens);
    void unpin(SeqId pin);

    // ---- rows ----------------------------------------------------------------
    // Reserves rows for n new positions in every manager (two-phase: on
    // CACHE_FULL nothing changed). Window layers drop blocks a query at the
    // old length no longer reads.
    void append(SeqId seq, const int32_t* tokens, int64_t n);
    // Positions [0, n_positions) have all their rows written.
    void mark_computed(SeqId seq, int64_t n_positions);

    // Writable rows of layer at position pos (p / r for banks). Valid while
    // the sequence holds the block. OUT_OF_RANGE past the length or in a
    // window-dropped block; INVALID_STATE in a shared or indexed block.
    uint8_t* k_row_mut(SeqId seq, int32_t layer, int64_t pos);
    uint8_t* v_row_mut(SeqId seq, int32_t layer, int64_t pos);
    // Same by row index (row = pos / r); rows of a sequence: ceil(length / r).
    uint8_t* row_mut(SeqId seq, int32_t layer, int64_t row, bool value);
    const uint8_t* row(SeqId seq, int32_t layer, int64_t row, bool value) const;

    // Copies n_rows rows from k (and v for layers with V rows; v must be null
    // when K = V). Every row is checked before any is written.
    void write_rows(SeqId seq, int32_t layer, int64_t first_row, int64_t n_rows, const void* k, const void* v);
    // Copies n_rows rows out; v_dst may be null (must be for K = V layers).
    void read_rows(SeqId seq, int32_t layer, int64_t first_row, int64_t n_rows, void* k_dst, void* v_dst) const;
    // A copy of the block address table of (seq, layer): nullptr = dropped.
    std::vector<const uint8_t*> block_table(SeqId seq, int32_t layer) const;

    // The read view of one layer for kernels. For a bank (or its reader or
    // indexer keys) "positions" of the view are rows (groups). The pointer
    // array belongs to the sequence and stays valid until the next call that
    // changes this sequence (append, truncate, release, mark_computed does not).
    PagedKV paged_view(SeqId seq, int32_t layer);

    // ---- state files (src/cache/cache_state.cpp; versioned, checksummed, atomic) ----
    // Saves every indexed block (in use or cached) with its hash; returns how
    // many. fingerprint: the model's (checked on load). IO on failure.
    uint64_t save_prefixes(const std::string& path, uint64_t fingerprint_lo, uint64_t fingerprint_hi) const;
    // Loads a prefix file's blocks as cached blocks into FREE budget bytes
    // only (never evicts; stops when full); returns how many were added
    // (blocks already indexed are skipped). MISMATCH: another layout or
    // fingerprint; BAD_FORMAT: malformed/corrupted; the cache is unchanged then.
    uint64_t load_prefixes(const std::string& path, uint64_t fingerprint_lo, uint64_t fingerprint_hi);
    // Saves a sequence: keys, tokens, computed count and every row.
    void save_sequence(SeqId seq, const std::string& path) const;
    // Recreates a saved sequence (new id; its computed full blocks are
    // published). MISMATCH: another layout or fingerprint; CACHE_FULL: does
    // not fit even after eviction (nothing changed).
    SeqId load_sequence(const std::string& path, uint64_t fingerprint_lo, uint64_t fingerprint_hi);
    // The same as a KVRTSEQ container in memory, for files that embed a sequence
    // (a context's saved sequence, runtime/context_state.cpp); `what` names it in messages.
    std::vector<uint8_t> save_sequence_blob(SeqId seq) const;
    SeqId load_sequence_blob(std::vector<uint8_t> blob, uint64_t fingerprint_lo, uint64_t fingerprint_hi,
                             const std::string& what);

    // ---- memory control (src/cache/cache_budget.cpp) ----------------------------
    // A new byte budget. Shrinking evicts cached blocks (LRU first) until the cache fits;
    // INVALID_STATE (nothing changed) when blocks held by sequences and pins alone exceed
    // it; INVALID_ARGUMENT for 0. Growing takes effect at once (memory is committed on use;
    // blocks past the arena's reservation come from the default heap).
    void set_budget(uint64_t budget_bytes);
    // Evicts cached blocks (LRU first) until at most keep_bytes of cached blocks remain, and
    // returns their memory to the arena; returns the bytes released.
    uint64_t trim(uint64_t keep_bytes);

    // ---- lower tiers (src/cache/cache_tiers.cpp) -----------------------------
    // Appends a tier (searched after RAM and the tiers added before it). From now on
    // an evicted indexed block set (every manager's block of that hash) is framed
    // (tier_envelope) and put into every tier, outside the cache mutex.
    void add_tier(std::shared_ptr<BlockTier> tier);
    bool has_tiers() const;
    // Before matching tokens[0, n) with keys: walks the prompt's blocks after the
    // ones RAM holds and loads each block set the tiers hold (verified: envelope,
    // key, checksum, payload shape; anything else counts as corrupt, is removed
    // from the tier and ends the walk) into arena blocks as cached, indexed
    // blocks, so that match_prefix hits them. Tier I/O runs without the cache mutex.
    // Stops at the first miss or when the budget cannot take more. Never throws
    // for a tier fault; may throw OUT_OF_MEMORY.
    TierFetch fetch_from_tiers(const SeqKeys& keys, const int32_t* tokens, int64_t n);
    // Puts every indexed block set not yet written into every tier; returns how many.
    uint64_t persist();
    std::vector<TierReport> tier_reports() const;

    // ---- inspection ----------------------------------------------------------
    SeqInfo seq_info(SeqId seq) const;
    CacheStats stats() const;
    const LayerGeometry& geometry(int32_t layer) const;
    int32_t n_layers() const { return static_cast<int32_t>(layout_.layers.size()); }
    int32_t block_tokens() const { return layout_.block_tokens; }
    const ResolvedLayout& layout() const { return layout_; }
    // Checks every invariant (refs match owners, no block owned twice, counts
    // add up, index consistent); throws kvrt::Error(INTERNAL). O(blocks).
    void check_invariants() const;

private:
    struct Sequence;
    Sequence& get(SeqId id, const char* what);
    const Sequence& get(SeqId id, const char* what) const;
    int64_t hit_blocks(const SeqKeys& keys, const Hash128& extra, const int32_t* tokens, int64_t n, int64_t max_blocks,
                       std::vector<Hash128>* hashes) const;
    // After a hit of H whole blocks (hashes h) of tokens[0, n): how many more tokens (< block_tokens,
    // never the last) a cached child of block H - 1 held by every manager gives, and which (*child).
    int64_t sub_block_tail(const Hash128& extra, const int32_t* tokens, int64_t n, const std::vector<Hash128>& h,
                           Hash128* child) const;
    // Attaches H whole blocks (hashes) and, with tail > 0, the first tail positions of block set
    // `child` as the partly filled last block.
    void attach(Sequence& s, const int32_t* tokens, int64_t H, std::vector<Hash128>&& hashes,
                const Hash128& child = {}, int64_t tail = 0);
    void add_child_locked(const Hash128& parent, const Hash128& extra, const Hash128& h, const int32_t* tokens) noexcept;
    // Whether some manager / every manager indexes a block under h.
    bool indexed_in_any_locked(const Hash128& h) const;
    bool indexed_in_all_locked(const Hash128& h) const;
    void release_blocks(Sequence& s, int64_t from_block);
    void set_entry(Sequence& s, int32_t m, int64_t b, BlockId id);
    void publish_computed_locked(Sequence& s);
    // On release: publishes the sequence's partly filled last block (its computed rows of a block
    // it alone holds, in every manager) for sub-block hits, under a hash no whole block can have.
    void publish_tail_locked(const Sequence& s) noexcept;
    SeqId load_sequence_from(StateReader& r, uint64_t fingerprint_lo, uint64_t fingerprint_hi, const std::string& what);
    uint8_t* row_ptr_locked(const Sequence& s, int32_t layer, int64_t row, bool value, bool writable) const;

    // Lower tiers (cache_tiers.cpp).
    struct TierSlot;
    struct PendingSet {
        Hash128 hash;
        std::vector<uint8_t> payload;
    };
    void append_impl(SeqId seq, const int32_t* tokens, int64_t n);
    void on_evict_locked(BlockId id);
    std::vector<uint8_t> block_set_payload_locked(const Hash128& h) const;
    void flush_pending();
    std::vector<std::shared_ptr<BlockTier>> tier_backends() const;
    std::vector<std::shared_ptr<TierSlot>> tier_slots() const;
    mutable std::mutex tiers_mu_;
    std::vector<std::shared_ptr<TierSlot>> tiers_;  // tiers_mu_
    Hash128 tier_layout_;                           // set once, before the first tier
    std::vector<PendingSet> pending_;               // mu_: evicted block sets to write out
    std::unordered_set<Hash128, Hash128Hasher> persisted_;  // mu_: block sets the tiers have
    std::atomic<bool> has_pending_{false};
    bool tiers_on_ = false;                         // mu_: a tier was added (on_evict_locked copies)

    ResolvedLayout layout_;
    mutable std::mutex mu_;
    BlockPool pool_;
    bool tails_ = false;      // every manager is Full or Window: released sequences' tail blocks are cached
    BlockChildren children_;  // mu_: tokens of indexed blocks under their parents (sub-block hits)
    std::unordered_map<SeqId, std::unique_ptr<Sequence>> seqs_;
    SeqId next_id_ = 1;
    uint64_t queried_tokens_ = 0, hit_tokens_ = 0;
    uint64_t n_pins_ = 0;
};

}  // namespace kvrt::cache
