/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

#define _POSIX_C_SOURCE 200809L
/* C99 test of a context's sequence state (kvrt/context.h): seq_tokens, seq_save,
 * seq_load, seq_fork, seq_truncate — success and failure paths — and "restored ==
 * never stopped": one process prefills, decodes and saves, then exits; a second
 * process loads and runs the next 32 greedy decode steps; their logits equal the
 * uninterrupted run's bit for bit. On SmolLM2 and, when $KVRT_CED_MODEL names
 * the tiny CED model (the ced_tiny_model fixture), on CED. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEPS 32
#define WARM 4

static int argmax(const float *x, size_t n) {
    size_t i, best = 0;
    for (i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return (int)best;
}

static kvrt_context *make_ctx(kvrt_model *m, int32_t dtype, uint32_t block_tokens, const char *salt) {
    kvrt_context_config cc;
    kvrt_context *ctx = NULL;
    kvrt_context_config_init(&cc, sizeof cc);
    cc.n_ctx = 512;
    cc.n_seq_max = 3;
    cc.n_threads = 2;
    cc.kv_dtype = dtype;
    cc.block_tokens = block_tokens;
    cc.cache_salt = salt;
    if (kvrt_context_create(&ctx, m, &cc) != KVRT_OK) {
        fprintf(stderr, "context_create: %s\n", kvrt_last_error());
        return NULL;
    }
    return ctx;
}

/* A prompt of n token ids (the same in every process). */
static void prompt_of(int32_t *p, size_t n, uint32_t vocab) {
    size_t i;
    for (i = 0; i < n; ++i) p[i] = (int32_t)((i * 7919u + 13u) % (vocab > 1000 ? 1000 : vocab - 1) + 1);
}

/* Greedy decode steps from the sequence's logits; logits of every step into out (steps x V). */
static int run_steps(kvrt_context *ctx, int32_t seq, size_t V, int steps, float *out) {
    int s;
    size_t w = 0;
    int32_t tok;
    for (s = 0; s < steps; ++s) {
        if (kvrt_context_get_logits(out + (size_t)s * V, V, &w, ctx, seq) != KVRT_OK) return -1;
        tok = argmax(out + (size_t)s * V, V);
        if (kvrt_context_decode(ctx, &seq, &tok, 1) != KVRT_OK) return -1;
    }
    return 0;
}

static size_t vocab_of(kvrt_model *m) {
    kvrt_model_info info;
    kvrt_model_info_init(&info, sizeof info);
    if (kvrt_model_get_info(&info, m) != KVRT_OK) return 0;
    return (size_t)info.n_vocab;
}

/* Child 1: prefill + WARM decode steps, save, exit. */
static int child_save(const char *model_path, int32_t dtype, uint32_t bt, const char *file) {
    kvrt_model *m = NULL;
    kvrt_context *ctx;
    int32_t prompt[40];
    float *l;
    size_t V;
    int rc;
    if (kvrt_model_load(&m, model_path, NULL) != KVRT_OK) return 2;
    V = vocab_of(m);
    ctx = make_ctx(m, dtype, bt, "tenant");
    if (!ctx) return 3;
    prompt_of(prompt, 40, (uint32_t)V);
    if (kvrt_context_prefill(NULL, ctx, 1, prompt, 40) != KVRT_OK) return 4;
    l = (float *)malloc(V * WARM * sizeof(float));
    rc = run_steps(ctx, 1, V, WARM, l) == 0 && kvrt_context_seq_save(ctx, 1, file) == KVRT_OK ? 0 : 5;
    if (rc) fprintf(stderr, "child_save: %s\n", kvrt_last_error());
    free(l);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    return rc;
}

/* Child 2: load (into another sequence id), run STEPS greedy steps, write their logits. */
static int child_load(const char *model_path, int32_t dtype, uint32_t bt, const char *file, const char *out) {
    kvrt_model *m = NULL;
    kvrt_context *ctx;
    float *l;
    size_t V;
    FILE *f;
    int rc = 0;
    if (kvrt_model_load(&m, model_path, NULL) != KVRT_OK) return 2;
    V = vocab_of(m);
    ctx = make_ctx(m, dtype, bt, "tenant");
    if (!ctx) return 3;
    if (kvrt_context_seq_load(ctx, 2, file) != KVRT_OK) {
        fprintf(stderr, "child_load: %s\n", kvrt_last_error());
        return 4;
    }
    l = (float *)malloc(V * STEPS * sizeof(float));
    if (run_steps(ctx, 2, V, STEPS, l) != 0) rc = 5;
    f = fopen(out, "wb");
    if (!f || fwrite(l, sizeof(float), V * STEPS, f) != V * STEPS) rc = 6;
    if (f) fclose(f);
    free(l);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    return rc;
}

static int run_child(int which, const char *model_path, int32_t dtype, uint32_t bt, const char *file, const char *out) {
    int status = 0;
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) _exit(which == 1 ? child_save(model_path, dtype, bt, file) : child_load(model_path, dtype, bt, file, out));
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static int copy_with(const char *from, const char *to, long truncate_at, long flip_at) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    long i = 0;
    int c;
    if (!a || !b) return -1;
    while ((c = fgetc(a)) != EOF) {
        if (truncate_at >= 0 && i >= truncate_at) break;
        if (i == flip_at) c ^= 0x10;
        fputc(c, b);
        ++i;
    }
    fclose(a);
    fclose(b);
    return 0;
}

/* The two child processes of one model: save, then load + STEPS steps. */
struct Run {
    char dir[64], file[256], out[256], bad[256];
    int rc1, rc2;
};

static void run_children(struct Run *r, const char *model_path, int32_t dtype, uint32_t bt) {
    snprintf(r->dir, sizeof r->dir, "/tmp/kvrt_ctxstate_XXXXXX");
    r->rc1 = r->rc2 = -1;
    if (!mkdtemp(r->dir)) {
        EXPECT(0);
        return;
    }
    snprintf(r->file, sizeof r->file, "%s/conv.kvrt", r->dir);
    snprintf(r->out, sizeof r->out, "%s/logits.bin", r->dir);
    snprintf(r->bad, sizeof r->bad, "%s/bad.kvrt", r->dir);
    r->rc1 = run_child(1, model_path, dtype, bt, r->file, r->out);
    EXPECT(r->rc1 == 0);
    if (r->rc1 == 0) r->rc2 = run_child(2, model_path, dtype, bt, r->file, r->out);
    EXPECT(r->rc2 == 0);
}

/* The rest of the scenario on one model, in this process. */
static void scenario(struct Run *r, const char *name, const char *model_path, int32_t dtype, uint32_t bt,
                     int failure_paths) {
    char *file = r->file, *out = r->out, *bad = r->bad;
    kvrt_model *m = NULL, *m2 = NULL;
    kvrt_context *ctx, *other;
    int32_t prompt[40], buf[128], tok, seq;
    float *ref, *got, *warm, *la, *lb;
    size_t V, w = 0, i;
    FILE *f;
    int rc2 = r->rc2;

    EXPECT_OK(kvrt_model_load(&m, model_path, NULL));
    if (!m) return;
    V = vocab_of(m);
    ctx = make_ctx(m, dtype, bt, "tenant");
    EXPECT(ctx != NULL);
    if (!ctx) return;
    ref = (float *)malloc(V * STEPS * sizeof(float));
    got = (float *)malloc(V * STEPS * sizeof(float));
    warm = (float *)malloc(V * WARM * sizeof(float));
    la = (float *)malloc(V * sizeof(float));
    lb = (float *)malloc(V * sizeof(float));
    /* The uninterrupted run. */
    prompt_of(prompt, 40, (uint32_t)V);
    EXPECT_OK(kvrt_context_prefill(NULL, ctx, 0, prompt, 40));
    EXPECT(run_steps(ctx, 0, V, WARM, warm) == 0);
    EXPECT(run_steps(ctx, 0, V, STEPS, ref) == 0);
    if (rc2 == 0) {
        f = fopen(out, "rb");
        EXPECT(f != NULL);
        if (f) {
            EXPECT(fread(got, sizeof(float), V * STEPS, f) == V * STEPS);
            fclose(f);
            for (i = 0; i < STEPS; ++i)
                if (memcmp(ref + i * V, got + i * V, V * sizeof(float)) != 0) {
                    fprintf(stderr, "%s: decode step %u after load differs from the uninterrupted run\n", name,
                            (unsigned)i);
                    failures++;
                    break;
                }
            if (i == STEPS) printf("%s: %d decode steps after save, exit, load: bit-identical\n", name, STEPS);
        }
    }

    /* seq_tokens: the prompt and the WARM + STEPS decoded tokens. */
    EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 0));
    EXPECT(w == 40 + WARM + STEPS);
    EXPECT_ERR(kvrt_context_seq_tokens(buf, 3, &w, ctx, 0), KVRT_ERR_BUFFER_TOO_SMALL);
    EXPECT(w == 40 + WARM + STEPS);
    EXPECT_OK(kvrt_context_seq_tokens(buf, 128, &w, ctx, 0));
    EXPECT(memcmp(buf, prompt, sizeof prompt) == 0);
    EXPECT(buf[40] == argmax(warm, V));
    EXPECT_ERR(kvrt_context_seq_tokens(buf, 128, NULL, ctx, 0), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_context_seq_tokens(buf, 128, &w, ctx, 7), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_seq_tokens(buf, 128, &w, NULL, 0), KVRT_ERR_BAD_HANDLE);

    /* Fork: both branches continue identically; truncate + re-prefill == before. */
    EXPECT_OK(kvrt_context_seq_fork(ctx, 0, 1));
    EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 1));
    EXPECT(w == 40 + WARM + STEPS);
    tok = 5;
    seq = 0;
    EXPECT_OK(kvrt_context_decode(ctx, &seq, &tok, 1));
    EXPECT_OK(kvrt_context_get_logits(la, V, &w, ctx, 0));
    seq = 1;
    EXPECT_OK(kvrt_context_decode(ctx, &seq, &tok, 1));
    EXPECT_OK(kvrt_context_get_logits(lb, V, &w, ctx, 1));
    EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);
    /* Cut the last token and prefill it again: the same logits as before the cut. */
    EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 1));
    {
        int32_t *all = (int32_t *)malloc(w * sizeof(int32_t));
        size_t n_all = w;
        EXPECT_OK(kvrt_context_seq_tokens(all, n_all, &w, ctx, 1));
        EXPECT_OK(kvrt_context_seq_truncate(ctx, 1, n_all - 1));
        EXPECT_ERR(kvrt_context_get_logits(la, V, &w, ctx, 1), KVRT_ERR_INVALID_STATE);
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 1));
        EXPECT(w == n_all - 1);
        EXPECT_OK(kvrt_context_prefill(NULL, ctx, 1, all, n_all));
        EXPECT_OK(kvrt_context_get_logits(la, V, &w, ctx, 1));
        EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);
        free(all);
    }
    EXPECT_ERR(kvrt_context_seq_truncate(ctx, 1, 1000), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_seq_truncate(ctx, 9, 0), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_seq_fork(ctx, 0, 9), KVRT_ERR_OUT_OF_RANGE);
    EXPECT_ERR(kvrt_context_seq_fork(NULL, 0, 1), KVRT_ERR_BAD_HANDLE);
    EXPECT_OK(kvrt_context_seq_fork(ctx, 1, 1));
    EXPECT_OK(kvrt_context_seq_truncate(ctx, 1, 0));
    EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 1));
    EXPECT(w == 0);

    if (failure_paths) {
        /* Save errors. */
        EXPECT_ERR(kvrt_context_seq_save(ctx, 0, NULL), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_seq_save(NULL, 0, file), KVRT_ERR_BAD_HANDLE);
        EXPECT_ERR(kvrt_context_seq_save(ctx, 5, file), KVRT_ERR_OUT_OF_RANGE);
        EXPECT_ERR(kvrt_context_seq_save(ctx, 0, "/nonexistent-dir/x.kvrt"), KVRT_ERR_IO);
        /* Load errors leave sequence 0 as it was. */
        EXPECT_OK(kvrt_context_get_logits(la, V, &w, ctx, 0));
        EXPECT_ERR(kvrt_context_seq_load(ctx, 0, NULL), KVRT_ERR_INVALID_ARGUMENT);
        EXPECT_ERR(kvrt_context_seq_load(ctx, 0, "/nonexistent-dir/x.kvrt"), KVRT_ERR_NOT_FOUND);
        EXPECT_ERR(kvrt_context_seq_load(ctx, 9, file), KVRT_ERR_OUT_OF_RANGE);
        EXPECT(copy_with(file, bad, 100, -1) == 0);
        EXPECT_ERR(kvrt_context_seq_load(ctx, 0, bad), KVRT_ERR_BAD_FORMAT);
        EXPECT(copy_with(file, bad, -1, 5000) == 0);
        EXPECT_ERR(kvrt_context_seq_load(ctx, 0, bad), KVRT_ERR_BAD_FORMAT);
        f = fopen(bad, "wb");
        if (f) {
            fputs("not a kvrt file at all, just some text that is long enough", f);
            fclose(f);
        }
        EXPECT_ERR(kvrt_context_seq_load(ctx, 0, bad), KVRT_ERR_BAD_FORMAT);
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 0));
        EXPECT(w == 40 + WARM + STEPS + 1);
        EXPECT_OK(kvrt_context_get_logits(lb, V, &w, ctx, 0));
        EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);
        /* Another KV dtype, block size or salt: refused with a message. */
        other = make_ctx(m, dtype == KVRT_KV_F32 ? KVRT_KV_F16 : KVRT_KV_F32, bt, "tenant");
        EXPECT(other != NULL);
        EXPECT_ERR(kvrt_context_seq_load(other, 0, file), KVRT_ERR_MISMATCH);
        EXPECT(strstr(kvrt_last_error(), "dtype") != NULL);
        kvrt_context_destroy(other);
        other = make_ctx(m, dtype, bt * 2, "tenant");
        EXPECT_ERR(kvrt_context_seq_load(other, 0, file), KVRT_ERR_MISMATCH);
        EXPECT(strstr(kvrt_last_error(), "block_tokens") != NULL);
        kvrt_context_destroy(other);
        /* The same K type with V rows of another type (int8, with scales): refused by the header,
         * naming both types; the sequence it replaces is left as it was. */
        {
            kvrt_context_config vc;
            kvrt_context_config_init(&vc, sizeof vc);
            vc.n_ctx = 512;
            vc.n_seq_max = 3;
            vc.n_threads = 2;
            vc.kv_dtype = dtype;
            vc.v_dtype = KVRT_DTYPE_I8;
            vc.block_tokens = bt;
            vc.cache_salt = "tenant";
            other = NULL;
            EXPECT_OK(kvrt_context_create(&other, m, &vc));
            if (other) {
                EXPECT_OK(kvrt_context_prefill(NULL, other, 0, prompt, 8));
                EXPECT_ERR(kvrt_context_seq_load(other, 0, file), KVRT_ERR_MISMATCH);
                EXPECT(strstr(kvrt_last_error(), "V rows of int8") != NULL);
                EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, other, 0));
                EXPECT(w == 8);
                /* And a file of int8 V does not load into the f16/f32 context. */
                EXPECT_OK(kvrt_context_seq_save(other, 0, bad));
                EXPECT_ERR(kvrt_context_seq_load(ctx, 1, bad), KVRT_ERR_MISMATCH);
                EXPECT(strstr(kvrt_last_error(), "V rows of int8") != NULL);
                kvrt_context_destroy(other);
            }
        }
        other = make_ctx(m, dtype, bt, "another tenant");
        EXPECT_ERR(kvrt_context_seq_load(other, 0, file), KVRT_ERR_MISMATCH);
        EXPECT(strstr(kvrt_last_error(), "salt") != NULL);
        kvrt_context_destroy(other);
        /* Another model (the CED model when present). */
        if (getenv("KVRT_CED_MODEL") && *getenv("KVRT_CED_MODEL") &&
            kvrt_model_load(&m2, getenv("KVRT_CED_MODEL"), NULL) == KVRT_OK) {
            other = make_ctx(m2, dtype, bt, "tenant");
            if (other) {
                EXPECT_ERR(kvrt_context_seq_load(other, 0, file), KVRT_ERR_MISMATCH);
                kvrt_context_destroy(other);
            }
            kvrt_model_destroy(m2);
        }
        /* Save and load in one process; an empty sequence round-trips as empty. */
        EXPECT_OK(kvrt_context_seq_save(ctx, 0, file));
        EXPECT_OK(kvrt_context_seq_load(ctx, 2, file));
        EXPECT_OK(kvrt_context_get_logits(lb, V, &w, ctx, 2));
        EXPECT(memcmp(la, lb, V * sizeof(float)) == 0);
        EXPECT_OK(kvrt_context_seq_save(ctx, 1, file));
        EXPECT_OK(kvrt_context_seq_load(ctx, 2, file));
        EXPECT_OK(kvrt_context_seq_tokens(NULL, 0, &w, ctx, 2));
        EXPECT(w == 0);
    }

    free(ref);
    free(got);
    free(warm);
    free(la);
    free(lb);
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(m);
    remove(file);
    remove(out);
    remove(bad);
    rmdir(r->dir);
}

int main(void) {
    char path[1024];
    const char *ced = getenv("KVRT_CED_MODEL");
    struct Run smol, cedrun;
    int have_ced = ced && *ced;
    expect_model_path(path, sizeof path);
    /* Every child first: a forked child must not inherit a parent's OpenMP threads. */
    run_children(&smol, path, KVRT_KV_F16, 16);
    if (have_ced) run_children(&cedrun, ced, KVRT_KV_F32, 4);
    scenario(&smol, "SmolLM2", path, KVRT_KV_F16, 16, 1);
    if (have_ced) scenario(&cedrun, "CED", ced, KVRT_KV_F32, 4, 0);
    else fprintf(stderr, "test_context_state: KVRT_CED_MODEL is not set; the CED half did not run\n");
    if (failures) fprintf(stderr, "test_context_state: %d failures\n", failures);
    return failures ? 1 : 0;
}
