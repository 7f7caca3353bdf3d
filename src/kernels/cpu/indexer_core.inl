// The batched indexer: many queries scored against the same keys, each key tile
// built (converted, transposed) once for all of them. Compiled once per ISA right
// after attention_core.inl (whose KeyTile, tile_build and tile_scores it reuses),
// inside that ISA's namespace.
//
// Bits: query i's score of key j is computed exactly as by indexer() (the
// per-query kernel): the same tile slot for j (tiles aligned to multiples of T),
// the same per-lane dot (tile_scores: two FMA chains over even / odd dims), and
// acc = fma(w_h, ReLU(dot_h), acc) over heads h = 0, 1, ... in order. Which rows
// share a register block (heads of one query or of several) never enters a
// lane's arithmetic, so a prefill chunk's selections equal token-by-token decode's.

// Rows of one register block in the batched kernel: (query, head) pairs, in
// query-major, head-minor order.
struct IdxRow {
    const float* q;  // the head's query
    int32_t query;   // index into the batch
    int32_t head;
};

inline void indexer_batch(const PagedKV& keys, const IndexerQuery* qs, const int32_t* n_visible, int32_t n_queries,
                          float* scores, size_t stride) {
    const int d = keys.head_dim;
    int32_t n_max = 0;
    double work = 0;
    for (int32_t i = 0; i < n_queries; ++i) {
        n_max = n_visible[i] > n_max ? n_visible[i] : n_max;
        work += double(n_visible[i]) * qs[i].n_heads * d;
    }
    if (n_max == 0) return;
    const int n_tiles = (n_max + T - 1) / T;
#pragma omp parallel for schedule(dynamic, 4) if (n_tiles > 1 && work > kParallelWork)
    for (int ti = 0; ti < n_tiles; ++ti) {
        const int64_t base = int64_t(ti) * T;
        const int jb = static_cast<int>(mn(n_max - 1 - base, T - 1));
        KeyTile tile;
        tile_init(tile, scratch_floats(tile_floats(d)), d);
        auto row = [&](int j) { return keys.k_row(base + j); };
        tile_build(tile, d, keys.dtype, 0, jb, row, row, false);
        // The (query, head) rows of the queries that see this tile, query-major.
        int32_t n_rows = 0;
        for (int32_t i = 0; i < n_queries; ++i)
            if (n_visible[i] > base) n_rows += qs[i].n_heads;
        IdxRow* rows = scratch<IdxRow>(1, size_t(n_rows));  // slot 0 holds the tile
        n_rows = 0;
        for (int32_t i = 0; i < n_queries; ++i)
            if (n_visible[i] > base)
                for (int32_t h = 0; h < qs[i].n_heads; ++h)
                    rows[n_rows++] = IdxRow{qs[i].q + size_t(h) * d, i, h};
        V acc[NV];
        for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
        // Folds row r's lane scores into its query's accumulator; stores the query's
        // scores after its last head.
        auto fold_row = [&](const IdxRow& r, V(&s)[NV]) {
            const IndexerQuery& q = qs[r.query];
            for (int v = 0; v < NV; ++v) acc[v] = Ops::fma(Ops::set1(q.w[r.head]), Ops::max(s[v], Ops::zero()), acc[v]);
            if (r.head == q.n_heads - 1) {
                alignas(64) float tmp[T];
                for (int v = 0; v < NV; ++v) Ops::store(tmp + v * Ops::W, acc[v]);
                const int jq = static_cast<int>(mn(int64_t(n_visible[r.query]) - 1 - base, T - 1));
                float* out = scores + size_t(r.query) * stride + base;
                for (int j = 0; j <= jq; ++j) out[j] = tmp[j];
                for (int v = 0; v < NV; ++v) acc[v] = Ops::zero();
            }
        };
        int r = 0;
        for (; r + kRowsScore <= n_rows; r += kRowsScore) {
            const float* q[kRowsScore];
            for (int i = 0; i < kRowsScore; ++i) q[i] = rows[r + i].q;
            V s[kRowsScore][NV];
            tile_scores<kRowsScore>(tile, d, q, s);
            for (int i = 0; i < kRowsScore; ++i) fold_row(rows[r + i], s[i]);
        }
        for (; r < n_rows; ++r) {
            const float* q[1] = {rows[r].q};
            V s[1][NV];
            tile_scores<1>(tile, d, q, s);
            fold_row(rows[r], s[0]);
        }
    }
}
