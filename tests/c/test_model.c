/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt/model.h: every function's success and failure paths, on the
 * real SmolLM2 model ($KVRT_MODEL, $KVRT_MODEL_DIR or ~/.cache/kvrt/models) and
 * on small hand-written bad files. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void put_str(FILE *f, const char *s) {
    put_u64(f, (uint64_t)strlen(s));
    fwrite(s, 1, strlen(s), f);
}

/* A valid GGUF v3 header with no tensors and general.architecture = arch. */
static void write_arch_only(const char *path, const char *arch) {
    FILE *f = fopen(path, "wb");
    fwrite("GGUF", 1, 4, f);
    put_u32(f, 3);
    put_u64(f, 0);
    put_u64(f, 1);
    put_str(f, "general.architecture");
    put_u32(f, 8);
    put_str(f, arch);
    fclose(f);
}

static int cancel_after_two(float fraction, const char *stage, void *user_data) {
    int *calls = (int *)user_data;
    (void)fraction;
    (void)stage;
    return ++*calls > 2;
}

/* The load packs on several threads; its reports must still come on the calling
 * thread, with fractions in [0, 1] that never decrease and end at 1. */
static pthread_t loading_thread;
static float last_fraction = -1.0f;
static int count_progress(float fraction, const char *stage, void *user_data) {
    int *calls = (int *)user_data;
    if (fraction < 0.0f || fraction > 1.0f || stage == NULL) failures++;
    if (fraction < last_fraction) {
        fprintf(stderr, "test_model: progress went back from %g to %g (%s)\n", last_fraction, fraction, stage);
        failures++;
    }
    if (!pthread_equal(pthread_self(), loading_thread)) {
        fprintf(stderr, "test_model: progress reported on another thread (%s)\n", stage);
        failures++;
    }
    last_fraction = fraction;
    ++*calls;
    return 0;
}

int main(void) {
    char path[1024], bad[256], buf[4096];
    kvrt_model *m = NULL, *m2 = NULL;
    kvrt_model_config cfg;
    kvrt_model_info info;
    size_t n = 0, w = 0, i;
    int32_t toks[64];
    int calls = 0, eog = -1;
    const char *type = NULL;
    uint64_t ne = 0, nb = 0;
    kvrt_chat_message msgs[2];

    expect_model_path(path, sizeof path);

    /* config_init */
    EXPECT(kvrt_model_config_init(&cfg, sizeof cfg) == KVRT_OK);
    EXPECT(cfg.struct_size == sizeof cfg && cfg.progress == NULL);
    EXPECT(kvrt_model_config_init(NULL, sizeof cfg) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_config_init(&cfg, 3) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_config_init(&cfg, sizeof cfg + 64) == KVRT_ERR_INVALID_ARGUMENT);
    kvrt_model_config_init(&cfg, sizeof cfg);

    /* load: failures */
    m = (kvrt_model *)&cfg;
    EXPECT(kvrt_model_load(&m, NULL, NULL) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(m == NULL);
    EXPECT(kvrt_model_load(NULL, path, NULL) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_load(&m, "/nonexistent/kvrt/model.gguf", NULL) == KVRT_ERR_NOT_FOUND);
    EXPECT(strstr(kvrt_last_error(), "/nonexistent/kvrt/model.gguf") != NULL);
    snprintf(bad, sizeof bad, "/tmp/kvrt_c_test_model_%d.gguf", (int)getpid());
    write_arch_only(bad, "gpt2");
    EXPECT(kvrt_model_load(&m, bad, NULL) == KVRT_ERR_UNSUPPORTED);
    EXPECT(strstr(kvrt_last_error(), "gpt2") != NULL);
    write_arch_only(bad, "ced"); /* a CED model loads here too: the missing key is named */
    EXPECT(kvrt_model_load(&m, bad, NULL) == KVRT_ERR_BAD_FORMAT);
    EXPECT(strstr(kvrt_last_error(), "ced.block_count") != NULL);
    EXPECT(m == NULL);
    {
        FILE *f = fopen(bad, "wb");
        fwrite("GGUF\x03\x00\x00\x00\xff\xff", 1, 10, f); /* truncated header */
        fclose(f);
    }
    EXPECT(kvrt_model_load(&m, bad, NULL) == KVRT_ERR_BAD_FORMAT);
    remove(bad);
    cfg.progress = cancel_after_two;
    cfg.progress_user_data = &calls;
    EXPECT(kvrt_model_load(&m, path, &cfg) == KVRT_ERR_CANCELLED);
    EXPECT(m == NULL);
    cfg.n_threads = -1;
    EXPECT(kvrt_model_load(&m, path, &cfg) == KVRT_ERR_INVALID_ARGUMENT);

    /* load: success, with progress */
    kvrt_model_config_init(&cfg, sizeof cfg);
    calls = 0;
    cfg.progress = count_progress;
    cfg.progress_user_data = &calls;
    cfg.n_threads = 2;
    loading_thread = pthread_self();
    EXPECT(kvrt_model_load(&m, path, &cfg) == KVRT_OK);
    if (m == NULL) {
        fprintf(stderr, "test_model: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT(calls >= 10); /* the hash's slices and the packing's tasks move it */
    EXPECT(last_fraction == 1.0f);

    /* info */
    EXPECT(kvrt_model_info_init(&info, sizeof info) == KVRT_OK);
    EXPECT(kvrt_model_info_init(NULL, sizeof info) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_info_init(&info, 1) == KVRT_ERR_INVALID_ARGUMENT);
    kvrt_model_info_init(&info, sizeof info);
    EXPECT(kvrt_model_get_info(&info, m) == KVRT_OK);
    EXPECT(strcmp(info.architecture, "llama") == 0);
    EXPECT(info.n_layers == 30 && info.n_vocab == 49152 && info.n_heads == 9 && info.n_kv_heads == 3);
    EXPECT(info.head_dim == 64 && info.n_embd == 576 && info.n_ff == 1536 && info.n_ctx_train == 8192);
    EXPECT(info.n_layers_full == 30 && info.n_layers_window == 0 && info.sliding_window == 0);
    EXPECT(info.kv_bytes_per_token == 2u * 30 * 3 * 64 * 2);
    EXPECT(info.kv_bytes_per_token_full == info.kv_bytes_per_token);
    EXPECT(info.eos_token == 2 && info.bos_token == 1);
    EXPECT(info.n_params > 100000000u);
    EXPECT(kvrt_model_get_info(&info, NULL) == KVRT_ERR_BAD_HANDLE);
    EXPECT(kvrt_model_get_info(NULL, m) == KVRT_ERR_INVALID_ARGUMENT);
    info.struct_size = 2;
    EXPECT(kvrt_model_get_info(&info, m) == KVRT_ERR_INVALID_ARGUMENT);

    /* metadata */
    EXPECT(kvrt_model_meta_string(buf, sizeof buf, &w, m, "llama.block_count") == KVRT_OK);
    EXPECT(strcmp(buf, "30") == 0 && w == 3); /* text buffers: written counts the NUL */
    EXPECT(kvrt_model_meta_string(buf, sizeof buf, &w, m, "general.architecture") == KVRT_OK);
    EXPECT(strcmp(buf, "llama") == 0);
    EXPECT(kvrt_model_meta_string(NULL, 0, &w, m, "general.architecture") == KVRT_OK);
    EXPECT(w == 6);
    EXPECT(kvrt_model_meta_string(buf, 3, &w, m, "general.architecture") == KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(w == 6);
    EXPECT(kvrt_model_meta_string(buf, sizeof buf, &w, m, "no.such.key") == KVRT_ERR_NOT_FOUND);
    EXPECT(kvrt_model_meta_string(buf, sizeof buf, &w, m, NULL) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_meta_string(buf, sizeof buf, &w, NULL, "x") == KVRT_ERR_BAD_HANDLE);
    EXPECT(kvrt_model_meta_count(&n, m) == KVRT_OK && n == 33);
    EXPECT(kvrt_model_meta_count(NULL, m) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_meta_key(buf, sizeof buf, &w, m, 0) == KVRT_OK);
    EXPECT(strcmp(buf, "general.architecture") == 0);
    EXPECT(kvrt_model_meta_key(buf, sizeof buf, &w, m, n) == KVRT_ERR_OUT_OF_RANGE);

    /* tensors */
    EXPECT(kvrt_model_tensor_count(&n, m) == KVRT_OK && n == 272);
    EXPECT(kvrt_model_tensor_info(buf, sizeof buf, &w, &type, &ne, &nb, m, 0) == KVRT_OK);
    EXPECT(strcmp(buf, "token_embd.weight") == 0 && strcmp(type, "q8_0") == 0);
    EXPECT(ne == 576u * 49152u && nb == ne / 32 * 34);
    EXPECT(kvrt_model_tensor_info(NULL, 0, NULL, &type, NULL, NULL, m, 1) == KVRT_OK);
    EXPECT(kvrt_model_tensor_info(buf, 4, &w, NULL, NULL, NULL, m, 0) == KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(kvrt_model_tensor_info(buf, sizeof buf, &w, NULL, NULL, NULL, m, n) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_model_tensor_count(&n, NULL) == KVRT_ERR_BAD_HANDLE);

    /* tokenize / detokenize */
    EXPECT(kvrt_model_tokenize(NULL, 0, &n, m, "The sky is", 10, 0) == KVRT_OK);
    EXPECT(n == 3);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, "The sky is", 10, 0) == KVRT_OK);
    EXPECT(n == 3 && toks[0] == 504 && toks[1] == 6376 && toks[2] == 314);
    EXPECT(kvrt_model_tokenize(toks, 2, &n, m, "The sky is", 10, 0) == KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(n == 3);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, "<|im_start|>", 12, KVRT_TOKENIZE_PARSE_SPECIAL) == KVRT_OK);
    EXPECT(n == 1 && toks[0] == 1);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, "<|im_start|>", 12, 0) == KVRT_OK);
    EXPECT(n > 1);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, "", 0, 0) == KVRT_OK && n == 0);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, NULL, 5, 0) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_tokenize(toks, 64, &n, m, "x", 1, 0x80u) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_tokenize(toks, 64, NULL, m, "x", 1, 0) == KVRT_ERR_INVALID_ARGUMENT);
    toks[0] = 504;
    toks[1] = 6376;
    toks[2] = 314;
    EXPECT(kvrt_model_detokenize(buf, sizeof buf, &w, m, toks, 3, 0) == KVRT_OK);
    EXPECT(w == 11 && strcmp(buf, "The sky is") == 0); /* NUL-terminated; written counts the NUL */
    EXPECT(kvrt_model_detokenize(NULL, 0, &w, m, toks, 3, 0) == KVRT_OK && w == 11);
    EXPECT(kvrt_model_detokenize(buf, 4, &w, m, toks, 3, 0) == KVRT_ERR_BUFFER_TOO_SMALL && w == 11);
    toks[1] = 49152;
    EXPECT(kvrt_model_detokenize(buf, sizeof buf, &w, m, toks, 3, 0) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(strstr(kvrt_last_error(), "49152") != NULL);
    toks[0] = 2;
    EXPECT(kvrt_model_detokenize(buf, sizeof buf, &w, m, toks, 1, KVRT_DETOKENIZE_SPECIAL) == KVRT_OK);
    EXPECT(w == 11 && strcmp(buf, "<|im_end|>") == 0);
    EXPECT(kvrt_model_detokenize(buf, sizeof buf, &w, m, toks, 1, 0) == KVRT_OK && w == 1 && buf[0] == '\0');

    EXPECT(kvrt_model_token_is_eog(&eog, m, 2) == KVRT_OK && eog == 1);
    EXPECT(kvrt_model_token_is_eog(&eog, m, 504) == KVRT_OK && eog == 0);
    EXPECT(kvrt_model_token_is_eog(&eog, m, -1) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_model_token_is_eog(&eog, m, 49152) == KVRT_ERR_OUT_OF_RANGE);
    EXPECT(kvrt_model_token_is_eog(NULL, m, 2) == KVRT_ERR_INVALID_ARGUMENT);

    /* chat template */
    msgs[0].role = "user";
    msgs[0].content = "Hi";
    EXPECT(kvrt_model_chat_apply(NULL, 0, &w, m, msgs, 1, 1) == KVRT_OK);
    i = w;
    EXPECT(kvrt_model_chat_apply(buf, sizeof buf, &w, m, msgs, 1, 1) == KVRT_OK);
    EXPECT(w == i && buf[w - 1] == '\0' && strlen(buf) + 1 == w);
    EXPECT(strstr(buf, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") != NULL);
    EXPECT(strstr(buf, "You are a helpful AI assistant named SmolLM") != NULL);
    EXPECT(kvrt_model_chat_apply(buf, 8, &w, m, msgs, 1, 1) == KVRT_ERR_BUFFER_TOO_SMALL);
    msgs[1].role = NULL;
    msgs[1].content = "x";
    EXPECT(kvrt_model_chat_apply(buf, sizeof buf, &w, m, msgs, 2, 1) == KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(kvrt_model_chat_apply(buf, sizeof buf, &w, m, NULL, 1, 1) == KVRT_ERR_INVALID_ARGUMENT);

    /* Handles: a destroyed handle is refused, never dereferenced; destroy(NULL) is a no-op. */
    EXPECT(kvrt_model_load(&m2, path, NULL) == KVRT_OK);
    kvrt_model_destroy(m2);
    EXPECT(kvrt_model_get_info(&info, m2) == KVRT_ERR_BAD_HANDLE);
    kvrt_model_destroy(m2);
    kvrt_model_destroy(NULL);
    kvrt_model_destroy(m);

    if (failures) {
        fprintf(stderr, "test_model: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_model: ok\n");
    return 0;
}
