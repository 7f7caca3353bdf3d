/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt/process.h: the log callback (what a model load, a context
 * and a failed call report; levels; replacing and removing the callback; a
 * callback calling kvrt), the ISA query and limit, and of
 * kvrt_model_chat_apply_template (family names, template text, the model's
 * own), on the real SmolLM2 model. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>

struct Log {
    int n[5];
    char all[16384];
    size_t len;
    int call_kvrt; /* the callback calls kvrt (a failing call: its message is dropped) */
};

static void on_log(int32_t level, const char *msg, void *user_data) {
    struct Log *l = (struct Log *)user_data;
    size_t n = strlen(msg);
    if (level >= 0 && level < 5) l->n[level]++;
    if (l->len + n + 2 < sizeof l->all) {
        memcpy(l->all + l->len, msg, n);
        l->len += n;
        l->all[l->len++] = '\n';
        l->all[l->len] = '\0';
    }
    if (l->call_kvrt) (void)kvrt_isa_set(99);
}

static int greedy3(kvrt_context *ctx, const int32_t *prompt, size_t n, int32_t *out) {
    kvrt_generate_config gc;
    size_t w = 0;
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.max_tokens = 3;
    gc.stop_at_eog = 0;
    gc.tokens_out = out;
    gc.tokens_capacity = 3;
    gc.tokens_written = &w;
    return kvrt_context_generate(NULL, ctx, 0, prompt, n, &gc) == KVRT_OK && w == 3;
}

int main(void) {
    char path[1024];
    static char buf[8192], own[8192], tmpl[16384];
    struct Log log1, log2;
    kvrt_model *m = NULL;
    kvrt_context *ctx = NULL;
    kvrt_context_config cc;
    int32_t prompt[64], a[3], b[3];
    size_t n = 0, w = 0, w2 = 0, len1 = 0;
    int32_t active = -1, detected = -1, scalar_active = -1;
    kvrt_chat_message msgs[2];

    /* ---- logging ---- */
    memset(&log1, 0, sizeof log1);
    memset(&log2, 0, sizeof log2);
    EXPECT_OK(kvrt_set_log_callback(KVRT_LOG_DEBUG, on_log, &log1));
    expect_model_path(path, sizeof path);
    if (kvrt_model_load(&m, path, NULL) != KVRT_OK) {
        fprintf(stderr, "test_logging: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    EXPECT(log1.n[KVRT_LOG_INFO] >= 1);
    EXPECT(strstr(log1.all, "loaded ") != NULL && strstr(log1.all, "kernels use ISA ") != NULL);
    EXPECT(strstr(log1.all, "loading model ") != NULL); /* DEBUG */
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 128;
    EXPECT_OK(kvrt_context_create(&ctx, m, &cc));
    EXPECT(strstr(log1.all, "cache: budget ") != NULL); /* memory reserved */
    /* A failed call's reason at DEBUG. */
    EXPECT_ERR(kvrt_context_seq_release(ctx, 77), KVRT_ERR_OUT_OF_RANGE);
    EXPECT(strstr(log1.all, "KVRT_ERR_OUT_OF_RANGE") != NULL && strstr(log1.all, "77") != NULL);

    /* INFO and above only: the failure is not reported. */
    len1 = log1.len;
    EXPECT_OK(kvrt_set_log_callback(KVRT_LOG_INFO, on_log, &log2));
    EXPECT_ERR(kvrt_context_seq_release(ctx, 78), KVRT_ERR_OUT_OF_RANGE);
    EXPECT(log2.len == 0);
    EXPECT(log1.len == len1); /* the replaced callback is never called again */
    EXPECT_OK(kvrt_isa_set(KVRT_ISA_AMX));       /* logged at INFO */
    EXPECT(log2.n[KVRT_LOG_INFO] == 1 && strstr(log2.all, "kernels use ISA") != NULL);
    /* A callback that calls kvrt: works, and the message of its own failing call is dropped. */
    EXPECT_OK(kvrt_set_log_callback(KVRT_LOG_DEBUG, on_log, &log2));
    log2.call_kvrt = 1;
    EXPECT_OK(kvrt_isa_set(KVRT_ISA_AMX));
    EXPECT(log2.n[KVRT_LOG_INFO] == 2 && log2.n[KVRT_LOG_DEBUG] == 0);
    log2.call_kvrt = 0;
    /* Removed: nothing more. */
    EXPECT_OK(kvrt_set_log_callback(KVRT_LOG_NONE, on_log, &log2));
    EXPECT_OK(kvrt_isa_set(KVRT_ISA_AMX));
    EXPECT(log2.n[KVRT_LOG_INFO] == 2);
    EXPECT_OK(kvrt_set_log_callback(KVRT_LOG_DEBUG, NULL, NULL));
    EXPECT_ERR(kvrt_set_log_callback(-1, on_log, &log2), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_set_log_callback(5, on_log, &log2), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strcmp(kvrt_log_level_name(KVRT_LOG_WARN), "warn") == 0);
    EXPECT(strcmp(kvrt_log_level_name(42), "?") == 0);

    /* ---- ISA ---- */
    EXPECT_OK(kvrt_isa_get(&active, &detected));
    EXPECT(detected >= KVRT_ISA_SCALAR && detected <= KVRT_ISA_AMX && active == detected);
    EXPECT_OK(kvrt_isa_get(NULL, &detected));
    EXPECT_ERR(kvrt_isa_get(NULL, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strcmp(kvrt_isa_name(KVRT_ISA_AVX2), "avx2") == 0 && strcmp(kvrt_isa_name(-3), "?") == 0);
    EXPECT(strcmp(kvrt_isa_name(KVRT_ISA_AMX), "amx") == 0 && strcmp(kvrt_isa_name(6), "?") == 0);
    EXPECT_OK(kvrt_model_tokenize(prompt, 64, &n, m, "The capital of France is", 24, 0));
    EXPECT(greedy3(ctx, prompt, n, a));
    EXPECT_OK(kvrt_isa_set(KVRT_ISA_SCALAR));
    EXPECT_OK(kvrt_isa_get(&scalar_active, NULL));
    EXPECT(scalar_active == KVRT_ISA_SCALAR);
    EXPECT_OK(kvrt_context_seq_release(ctx, 0));
    EXPECT(greedy3(ctx, prompt, n, b));
    EXPECT(a[0] == b[0]); /* the first greedy token agrees across kernel paths */
    EXPECT_OK(kvrt_isa_set(KVRT_ISA_AMX)); /* above the CPU: clamped to it */
    EXPECT_OK(kvrt_isa_get(&active, NULL));
    EXPECT(active == detected);
    EXPECT_ERR(kvrt_isa_set(6), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_isa_set(-1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_isa_get(&active, NULL));
    EXPECT(active == detected); /* a refused call changed nothing */

    /* ---- chat template override ---- */
    msgs[0].role = "user";
    msgs[0].content = "Hi";
    msgs[1].role = "assistant";
    msgs[1].content = "Hello";
    EXPECT_OK(kvrt_model_chat_apply(own, sizeof own, &w, m, msgs, 1, 1));
    EXPECT_OK(kvrt_model_chat_apply_template(buf, sizeof buf, &w2, m, NULL, msgs, 1, 1));
    EXPECT(w2 == w && strcmp(buf, own) == 0);
    /* The model's own template text, passed explicitly, renders the same. */
    EXPECT_OK(kvrt_model_meta_string(tmpl, sizeof tmpl, &w, m, "tokenizer.chat_template"));
    EXPECT_OK(kvrt_model_chat_apply_template(buf, sizeof buf, &w2, m, tmpl, msgs, 1, 1));
    EXPECT(strcmp(buf, own) == 0);
    /* Families. */
    EXPECT_OK(kvrt_model_chat_apply_template(buf, sizeof buf, &w2, m, "chatml", msgs, 2, 0));
    EXPECT(strcmp(buf, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n") == 0);
    EXPECT(w2 == strlen(buf) + 1); /* text buffers: written counts the NUL */
    EXPECT_OK(kvrt_model_chat_apply_template(buf, sizeof buf, &w2, m, "gemma", msgs, 1, 1));
    EXPECT(strstr(buf, "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n") != NULL);
    EXPECT_OK(kvrt_model_chat_apply_template(buf, sizeof buf, &w2, m, "llama3", msgs, 1, 1));
    EXPECT(strstr(buf, "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>") != NULL);
    EXPECT_OK(kvrt_model_chat_apply_template(NULL, 0, &w2, m, "zephyr", msgs, 1, 1)); /* size query */
    EXPECT(w2 > 0);
    EXPECT_ERR(kvrt_model_chat_apply_template(buf, 4, &w, m, "chatml", msgs, 1, 1), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT_ERR(kvrt_model_chat_apply_template(buf, sizeof buf, &w, m, "{{ not a known template }}", msgs, 1, 1),
               KVRT_ERR_UNSUPPORTED);
    EXPECT_ERR(kvrt_model_chat_apply_template(buf, sizeof buf, &w, m, "", msgs, 1, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_model_chat_apply_template(buf, sizeof buf, NULL, m, "chatml", msgs, 1, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_model_chat_apply_template(buf, sizeof buf, &w, NULL, "chatml", msgs, 1, 1), KVRT_ERR_BAD_HANDLE);

    /* ---- kvrt_model_retain: a second handle, each destroyed once ---- */
    {
        kvrt_model *m2 = NULL, *bad = NULL;
        kvrt_model_info info;
        EXPECT_OK(kvrt_model_retain(&m2, m));
        EXPECT(m2 != NULL && m2 != m);
        kvrt_model_destroy(m); /* the first handle goes; m2 still holds the model */
        kvrt_model_info_init(&info, sizeof info);
        EXPECT_ERR(kvrt_model_get_info(&info, m), KVRT_ERR_BAD_HANDLE);
        EXPECT_OK(kvrt_model_get_info(&info, m2));
        EXPECT(info.n_vocab == 49152);
        EXPECT_ERR(kvrt_model_retain(&bad, m), KVRT_ERR_BAD_HANDLE); /* destroyed */
        EXPECT(bad == NULL);
        EXPECT_ERR(kvrt_model_retain(&bad, NULL), KVRT_ERR_BAD_HANDLE);
        EXPECT_ERR(kvrt_model_retain(NULL, m2), KVRT_ERR_INVALID_ARGUMENT);
        m = m2;
    }

    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_logging: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
