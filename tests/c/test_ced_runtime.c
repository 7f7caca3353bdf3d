/* C99 test of the CED runtime functions of kvrt/ced.h: success and failure paths. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static int not_a_handle = 42;
#define FOREIGN_MODEL ((kvrt_ced_model *)(void *)&not_a_handle)
#define FOREIGN_SESSION ((kvrt_ced_session *)(void *)&not_a_handle)

int main(void) {
    char path[64];
    kvrt_ced_init_config icfg;
    kvrt_ced_model *model = NULL;
    kvrt_ced_session *sess = NULL;
    kvrt_ced_session_config scfg;
    kvrt_ced_memory mem;
    kvrt_ced_prefill_info info;
    int32_t layer = 0, ratio = 0, tokens[40], tok;
    double main_bpt = 0, idx_bpt = 0, bank_bpt = 0;
    uint64_t seq = 0, seq2 = 0, bank_use = 0, win_use = 0;
    int64_t len = 0;
    float *logits, *logits2;
    size_t written = 0, i;
    snprintf(path, sizeof path, "/tmp/kvrt_test_ced_rt_%ld.gguf", (long)getpid());

    EXPECT_OK(kvrt_ced_init_config_init(&icfg, sizeof icfg));
    EXPECT_OK(kvrt_ced_write_gguf(path, &icfg));

    /* load */
    EXPECT_ERR(kvrt_ced_model_load(NULL, path), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_model_load(&model, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_model_load(&model, "/nonexistent/ced.gguf"), KVRT_ERR_NOT_FOUND);
    EXPECT(model == NULL);
    EXPECT_OK(kvrt_ced_model_load(&model, path));
    remove(path);

    /* memory */
    mem.struct_size = 3;
    EXPECT_ERR(kvrt_ced_memory_get(&mem, model), KVRT_ERR_INVALID_ARGUMENT);
    mem.struct_size = sizeof mem;
    EXPECT_ERR(kvrt_ced_memory_get(&mem, FOREIGN_MODEL), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_ced_memory_get(&mem, model));
    EXPECT(mem.n_layers == 6 && mem.n_sources == 2 && mem.window == 8 && mem.elem_bytes == 4);
    EXPECT(mem.global_bytes_per_token == mem.main_bytes_per_token + mem.indexer_bytes_per_token);
    EXPECT(mem.global_bytes_per_token < mem.dense_bytes_per_token);
    EXPECT_OK(kvrt_ced_memory_source(&layer, &ratio, &main_bpt, &idx_bpt, model, 0));
    EXPECT(layer == 1 && ratio == 2 && main_bpt == 32 * 4 / 2.0 && idx_bpt == 16 * 4 / 2.0);
    EXPECT_OK(kvrt_ced_memory_source(&layer, &ratio, NULL, NULL, model, 1));
    EXPECT(layer == 3 && ratio == 1);
    EXPECT_ERR(kvrt_ced_memory_source(NULL, NULL, NULL, NULL, model, 2), KVRT_ERR_OUT_OF_RANGE);

    /* session */
    EXPECT_ERR(kvrt_ced_session_config_init(&scfg, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_session_config_init(&scfg, sizeof scfg));
    scfg.block_tokens = 3; /* not a multiple of the r = 2 bank */
    EXPECT_ERR(kvrt_ced_session_create(&sess, model, &scfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(sess == NULL);
    EXPECT_ERR(kvrt_ced_session_create(&sess, FOREIGN_MODEL, NULL), KVRT_ERR_BAD_HANDLE);
    scfg.block_tokens = 4;
    scfg.bank_budget_bytes = 4u << 20;
    scfg.window_budget_bytes = 4u << 20;
    EXPECT(scfg.cache_dtype == KVRT_DTYPE_F32);
    scfg.cache_dtype = 7; /* not a cache row type */
    EXPECT_ERR(kvrt_ced_session_create(&sess, model, &scfg), KVRT_ERR_INVALID_ARGUMENT);
    scfg.cache_dtype = KVRT_DTYPE_F32;
    scfg.reserved0 = 1;
    EXPECT_ERR(kvrt_ced_session_create(&sess, model, &scfg), KVRT_ERR_INVALID_ARGUMENT);
    scfg.reserved0 = 0;
    /* A first-version struct (no cache_dtype) still works, with the default. */
    scfg.struct_size = offsetof(kvrt_ced_session_config, cache_dtype);
    EXPECT_OK(kvrt_ced_session_create(&sess, model, &scfg));
    kvrt_ced_session_destroy(sess);
    sess = NULL;
    EXPECT_ERR(kvrt_ced_session_config_init(&scfg, offsetof(kvrt_ced_session_config, cache_dtype) - 1),
               KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_session_config_init(&scfg, sizeof scfg));
    scfg.block_tokens = 4;
    scfg.bank_budget_bytes = 4u << 20;
    scfg.window_budget_bytes = 4u << 20;
    /* bf16 caches: half the bank bytes per token of the (f32) memory report */
    scfg.cache_dtype = KVRT_DTYPE_BF16;
    EXPECT_OK(kvrt_ced_session_create(&sess, model, &scfg));
    EXPECT_OK(kvrt_ced_seq_create(&seq, sess));
    for (i = 0; i < 40; i++) tokens[i] = (int32_t)((i * 37 + 11) % 256);
    EXPECT_OK(kvrt_ced_prefill(NULL, sess, seq, tokens, 30, KVRT_CED_PREFILL_EXACT, KVRT_CED_RESUME_AUTO));
    EXPECT_OK(kvrt_ced_session_bytes(&bank_bpt, &bank_use, &win_use, sess));
    EXPECT(bank_bpt * 2 == mem.global_bytes_per_token);
    kvrt_ced_session_destroy(sess);
    sess = NULL;
    scfg.cache_dtype = KVRT_DTYPE_F32;
    EXPECT_OK(kvrt_ced_session_create(&sess, model, &scfg));
    kvrt_ced_model_destroy(model); /* the session keeps it alive */
    kvrt_ced_model_destroy(NULL);

    /* sequences */
    EXPECT_ERR(kvrt_ced_seq_create(&seq, FOREIGN_SESSION), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_ced_seq_create(NULL, sess), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_seq_create(&seq, sess));
    for (i = 0; i < 40; i++) tokens[i] = (int32_t)((i * 37 + 11) % 256);
    EXPECT_ERR(kvrt_ced_logits(NULL, 0, &written, sess, seq), KVRT_ERR_INVALID_STATE);
    EXPECT_ERR(kvrt_ced_extend(sess, seq, tokens, 1), KVRT_ERR_INVALID_STATE);
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, seq, tokens, 0, 0, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, seq, tokens, 10, 7, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, seq, tokens, 10, 0, 9), KVRT_ERR_INVALID_ARGUMENT);
    tokens[5] = 999;
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, seq, tokens, 10, 0, 0), KVRT_ERR_OUT_OF_RANGE);
    tokens[5] = 5;
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, 777, tokens, 10, 0, 0), KVRT_ERR_NOT_FOUND);
    info.struct_size = sizeof info;
    EXPECT_OK(kvrt_ced_prefill(&info, sess, seq, tokens, 30, KVRT_CED_PREFILL_CED, KVRT_CED_RESUME_AUTO));
    EXPECT(info.hit == 0 && info.computed == 30 && info.decoded == 8);
    EXPECT_ERR(kvrt_ced_prefill(NULL, sess, seq, tokens, 30, 0, 0), KVRT_ERR_INVALID_STATE);
    EXPECT_OK(kvrt_ced_seq_length(&len, sess, seq));
    EXPECT(len == 30);

    /* logits: size query, too small, full */
    EXPECT_OK(kvrt_ced_logits(NULL, 0, &written, sess, seq));
    EXPECT(written == 256);
    logits = (float *)malloc(256 * sizeof(float));
    logits2 = (float *)malloc(256 * sizeof(float));
    EXPECT_ERR(kvrt_ced_logits(logits, 10, &written, sess, seq), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(written == 256);
    EXPECT_OK(kvrt_ced_logits(logits, 256, &written, sess, seq));
    EXPECT(isfinite(logits[0]) && isfinite(logits[255]));

    /* fork, extend both, truncate */
    EXPECT_OK(kvrt_ced_seq_fork(&seq2, sess, seq));
    EXPECT_ERR(kvrt_ced_seq_fork(&seq2, sess, 12345), KVRT_ERR_NOT_FOUND);
    tok = 3;
    EXPECT_OK(kvrt_ced_extend(sess, seq, &tok, 1));
    EXPECT_OK(kvrt_ced_extend(sess, seq2, &tok, 1));
    EXPECT_OK(kvrt_ced_logits(logits, 256, &written, sess, seq));
    EXPECT_OK(kvrt_ced_logits(logits2, 256, &written, sess, seq2));
    EXPECT(memcmp(logits, logits2, 256 * sizeof(float)) == 0);
    tok = -1;
    EXPECT_ERR(kvrt_ced_extend(sess, seq, &tok, 1), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_OK(kvrt_ced_seq_length(&len, sess, seq));
    EXPECT(len == 31);
    EXPECT_ERR(kvrt_ced_seq_truncate(sess, seq, 29), KVRT_ERR_INVALID_STATE); /* cuts a closed r = 2 group */
    EXPECT_ERR(kvrt_ced_seq_truncate(sess, seq, 40), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_OK(kvrt_ced_seq_truncate(sess, seq, 30));
    EXPECT_ERR(kvrt_ced_logits(NULL, 0, &written, sess, seq), KVRT_ERR_INVALID_STATE);

    /* a second request sharing the first 28 tokens resumes from the cache */
    EXPECT_OK(kvrt_ced_seq_create(&seq2, sess));
    EXPECT_OK(kvrt_ced_prefill(&info, sess, seq2, tokens, 35, KVRT_CED_PREFILL_CED, KVRT_CED_RESUME_BOUNDED_REPLAY));
    EXPECT(info.hit == 28 && info.replayed == 8 && info.exact_resume == 0);

    /* accounting */
    EXPECT_OK(kvrt_ced_session_bytes(&bank_bpt, &bank_use, &win_use, sess));
    EXPECT(bank_bpt == mem.global_bytes_per_token);
    EXPECT(bank_use > 0 && win_use > 0);
    EXPECT_ERR(kvrt_ced_session_bytes(NULL, NULL, NULL, FOREIGN_SESSION), KVRT_ERR_BAD_HANDLE);

    EXPECT_OK(kvrt_ced_seq_release(sess, seq));
    EXPECT_ERR(kvrt_ced_seq_release(sess, seq), KVRT_ERR_NOT_FOUND);
    kvrt_ced_session_destroy(sess);
    kvrt_ced_session_destroy(NULL);
    EXPECT_ERR(kvrt_ced_seq_create(&seq, sess), KVRT_ERR_BAD_HANDLE);
    free(logits);
    free(logits2);
    if (failures) fprintf(stderr, "test_ced_runtime: %d failures\n", failures);
    return failures ? 1 : 0;
}
