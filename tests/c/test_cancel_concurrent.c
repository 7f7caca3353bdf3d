/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of kvrt_context_cancel and kvrt_context_activity_get from a real
 * second thread (the name holds "concurrent": scripts/test.sh also runs it
 * under ThreadSanitizer), of the one cancellation rule (KVRT_ERR_CANCELLED
 * from prefill and generate, the sequence keeping what was computed, stats
 * with KVRT_STOP_CANCELLED) and of the re-entrancy guard (a callback calling a
 * changing function on its own context gets KVRT_ERR_INVALID_STATE).
 *
 * No timing: the working thread's callback hands control to the UI thread
 * (a condition variable) and waits until that thread has read the activity
 * and called kvrt_context_cancel, so the cancel lands at a known point.
 * The model and the context run on one OpenMP thread: under ThreadSanitizer
 * only the two threads of the test exist (libgomp is not instrumented). */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

/* The handshake: the worker's callback sets `asked`, the UI thread answers with `done`. */
static struct {
    kvrt_context *ctx;
    int asked, done, quit;
    /* what the UI thread saw */
    kvrt_context_activity act;
    kvrt_status act_status, cancel_status;
} H;

static void *ui_thread(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!H.asked && !H.quit) pthread_cond_wait(&cv, &mu);
        if (H.quit) break;
        H.asked = 0;
        kvrt_context_activity_init(&H.act, sizeof H.act);
        H.act_status = kvrt_context_activity_get(&H.act, H.ctx);
        H.cancel_status = kvrt_context_cancel(H.ctx);
        H.done = 1;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Called on the working thread: asks the UI thread to look and cancel, waits for it. */
static void hand_over(void) {
    pthread_mutex_lock(&mu);
    H.done = 0;
    H.asked = 1;
    pthread_cond_broadcast(&cv);
    while (!H.done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

static int progress_calls = 0;
static int on_progress(float fraction, const char *stage, void *user_data) {
    (void)fraction;
    (void)stage;
    (void)user_data;
    if (++progress_calls == 2) hand_over(); /* cancel after the second chunk */
    return 0;                               /* the callback itself never cancels */
}

struct Gen {
    int calls;
    int cancel_at;
    kvrt_status reentrant_prefill, read_logits, isa_set;
    int32_t prompt[4];
};
static float logits[49152];
static int on_token(int32_t token, const char *text, size_t len, void *user_data) {
    struct Gen *g = (struct Gen *)user_data;
    size_t w = 0;
    (void)token;
    (void)text;
    (void)len;
    if (++g->calls == g->cancel_at) {
        /* Re-entrant calls from inside the callback. */
        g->reentrant_prefill = kvrt_context_prefill(NULL, H.ctx, 0, g->prompt, 4);
        g->read_logits = kvrt_context_get_logits(logits, 49152, &w, H.ctx, 0);
        g->isa_set = kvrt_isa_set(KVRT_ISA_SCALAR); /* a call is running: refused */
        hand_over();
    }
    return 0;
}

int main(void) {
    char path[1024];
    static char text[8192];
    static int32_t prompt[1024];
    kvrt_model *m = NULL;
    kvrt_context_config cc;
    kvrt_model_config mc;
    kvrt_request_stats st;
    kvrt_generate_config gc;
    kvrt_context_activity act;
    pthread_t ui;
    size_t n = 0, len = 0, w = 0, i;
    int32_t out_tokens[16];
    size_t out_written = 0;
    struct Gen g;
    int32_t active_before = -1, active_after = -1;

    expect_model_path(path, sizeof path);
    kvrt_model_config_init(&mc, sizeof mc);
    mc.n_threads = 1;
    if (kvrt_model_load(&m, path, &mc) != KVRT_OK) {
        fprintf(stderr, "test_cancel_concurrent: cannot load %s: %s\n", path, kvrt_last_error());
        return 1;
    }
    text[0] = '\0';
    for (i = 0; i < 12; ++i)
        strcat(text, "The river ran past the old mill, where the miller counted sacks of grain every morning. ");
    EXPECT_OK(kvrt_model_tokenize(prompt, 1024, &n, m, text, strlen(text), 0));
    EXPECT(n > 160);

    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 1024;
    cc.n_batch = 32; /* many chunks */
    cc.prefix_caching = 0;
    cc.n_threads = 1;
    cc.progress = on_progress;
    EXPECT_OK(kvrt_context_create(&H.ctx, m, &cc));
    EXPECT(pthread_create(&ui, NULL, ui_thread, NULL) == 0);

    /* Idle: a cancel is dropped when the next call starts. */
    EXPECT_OK(kvrt_context_cancel(H.ctx));
    kvrt_context_activity_init(&act, sizeof act);
    EXPECT_OK(kvrt_context_activity_get(&act, H.ctx));
    EXPECT(act.phase == KVRT_PHASE_IDLE && act.cancel_pending == 0 && act.calls == 0);
    EXPECT_OK(kvrt_context_prefill(NULL, H.ctx, 0, prompt, 8));
    EXPECT_OK(kvrt_context_seq_release(H.ctx, 0));

    /* Prefill cancelled from the UI thread after the second chunk. */
    kvrt_request_stats_init(&st, sizeof st);
    progress_calls = 0;
    EXPECT_ERR(kvrt_context_prefill(&st, H.ctx, 0, prompt, n), KVRT_ERR_CANCELLED);
    EXPECT(H.act_status == KVRT_OK && H.cancel_status == KVRT_OK);
    EXPECT(H.act.phase == KVRT_PHASE_PREFILL);
    EXPECT(H.act.prefill_total == n && H.act.prefill_done == 64); /* seen from the other thread */
    EXPECT(st.stop_reason == KVRT_STOP_CANCELLED);
    EXPECT(st.computed_tokens == 64 && st.prompt_tokens == n);
    EXPECT_OK(kvrt_context_seq_length(&len, H.ctx, 0));
    EXPECT(len == 64); /* two whole chunks kept */
    EXPECT_ERR(kvrt_context_get_logits(logits, 49152, &w, H.ctx, 0), KVRT_ERR_INVALID_STATE);
    kvrt_context_activity_init(&act, sizeof act);
    EXPECT_OK(kvrt_context_activity_get(&act, H.ctx));
    EXPECT(act.phase == KVRT_PHASE_IDLE && act.cancel_pending == 0 && act.calls == 3);

    /* The next call is not cancelled and resumes from the kept positions. */
    progress_calls = 100;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_OK(kvrt_context_prefill(&st, H.ctx, 0, prompt, n));
    EXPECT(st.reused_tokens == 64 && st.computed_tokens == n - 64);

    /* Generate cancelled after the third token; the callback's re-entrant calls. */
    memset(&g, 0, sizeof g);
    g.cancel_at = 3;
    memcpy(g.prompt, prompt, sizeof g.prompt);
    EXPECT_OK(kvrt_isa_get(&active_before, NULL));
    kvrt_generate_config_init(&gc, sizeof gc);
    gc.max_tokens = 12;
    gc.stop_at_eog = 0;
    gc.on_token = on_token;
    gc.user_data = &g;
    gc.tokens_out = out_tokens;
    gc.tokens_capacity = 16;
    gc.tokens_written = &out_written;
    kvrt_request_stats_init(&st, sizeof st);
    EXPECT_ERR(kvrt_context_generate(&st, H.ctx, 0, prompt, n, &gc), KVRT_ERR_CANCELLED);
    EXPECT(g.calls == 3);
    EXPECT(g.reentrant_prefill == KVRT_ERR_INVALID_STATE);
    EXPECT(g.read_logits == KVRT_OK);
    EXPECT(g.isa_set == KVRT_ERR_INVALID_STATE);
    EXPECT_OK(kvrt_isa_get(&active_after, NULL));
    EXPECT(active_after == active_before);
    EXPECT(H.act.phase == KVRT_PHASE_DECODE && H.act.generated_tokens == 3);
    EXPECT(st.stop_reason == KVRT_STOP_CANCELLED && st.generated_tokens == 3);
    EXPECT(out_written == 3);
    EXPECT_OK(kvrt_context_seq_length(&len, H.ctx, 0));
    EXPECT(len == n + 2); /* the prompt and the two tokens decoded before the stop */

    /* After the call the context works again, and the guard is released. */
    gc.on_token = NULL;
    gc.max_tokens = 2;
    EXPECT_OK(kvrt_context_generate(&st, H.ctx, 0, prompt, n, &gc));
    EXPECT(st.stop_reason == KVRT_STOP_MAX_TOKENS);

    /* Failure paths. */
    EXPECT_ERR(kvrt_context_cancel(NULL), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_context_cancel((kvrt_context *)(void *)&g), KVRT_ERR_BAD_HANDLE);
    EXPECT_ERR(kvrt_context_activity_get(NULL, H.ctx), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_activity_get(&act, NULL), KVRT_ERR_BAD_HANDLE);
    act.struct_size = 3;
    EXPECT_ERR(kvrt_context_activity_get(&act, H.ctx), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_activity_init(NULL, sizeof act), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_activity_init(&act, 1), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_activity_init(&act, sizeof act + 8), KVRT_ERR_INVALID_ARGUMENT);

    pthread_mutex_lock(&mu);
    H.quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(ui, NULL);
    kvrt_context_destroy(H.ctx);
    kvrt_model_destroy(m);
    if (failures) fprintf(stderr, "test_cancel_concurrent: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
