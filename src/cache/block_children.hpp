// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

// BlockChildren: the tokens of every indexed block under its parent, for hits that end inside a
// block (Cache::match_prefix with sub_block).
//
// The prefix index answers "is this whole block cached?" by hash: a prompt that leaves a cached
// block after c < block_tokens tokens misses the block entirely and recomputes those c positions.
// Rows of position p depend only on tokens [0, p], so the first c rows of any cached child of the
// prompt's last whole hit (same parent hash, same extra keys) whose first c tokens equal the
// prompt's are the rows the prompt would compute. This index finds the child with the longest
// such common prefix: per (parent, extra keys) the children's token arrays in lexicographic order,
// where the longest common prefix with a query is at its insertion point or next to it (O(log k)
// for k children, however many conversations branch at one block).
//
// Entries are added when a block is published (computed or loaded with its tokens; prefix files
// carry no tokens, so their blocks serve whole-block hits only) and removed when the last manager
// evicts the block set's hash. Not synchronised (the Cache's mutex guards it).
#pragma once

#include "cache/block_hash.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>
#include <vector>

namespace kvrt::cache {

class BlockChildren {
public:
    // Records block h: child of parent under extra, tokens[0, n). Idempotent. May throw
    // std::bad_alloc (then nothing changed).
    void add(const Hash128& parent, const Hash128& extra, const Hash128& h, const int32_t* tokens, size_t n);
    // Forgets block h (no-op when unknown). Never throws.
    void remove(const Hash128& h) noexcept;
    // The child of (parent, extra) whose tokens share the longest common prefix c with
    // query[0, n) among those usable(hash) accepts, c capped at n; *c = 0 and a zero hash when
    // none shares a token.
    Hash128 longest(const Hash128& parent, const Hash128& extra, const int32_t* query, size_t n, size_t* c,
                    const std::function<bool(const Hash128&)>& usable) const;
    size_t size() const { return where_.size(); }
    // Calls f(h, group, tokens) for every recorded block: group names (parent, extra keys) for
    // add_to_group (prefix files keep the records with their blocks).
    template <class F>
    void for_each(F&& f) const {
        for (const auto& [h, w] : where_) f(h, w.group, w.it->first);
    }
    // add() by group (from for_each).
    void add_to_group(const Hash128& group, const Hash128& h, const int32_t* tokens, size_t n);
    static Hash128 group_key(const Hash128& parent, const Hash128& extra);

private:
    using Children = std::map<std::vector<int32_t>, Hash128>;
    std::unordered_map<Hash128, Children, Hash128Hasher> groups_;  // group_key -> children
    struct Where {
        Hash128 group;
        Children::iterator it;
    };
    std::unordered_map<Hash128, Where, Hash128Hasher> where_;  // block hash -> its entry
};

}  // namespace kvrt::cache
