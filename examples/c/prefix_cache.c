/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* kvrt from C: one document, two questions. The second question's prompt
 * shares the system prompt and the document with the first, so kvrt reuses
 * their K/V from the prefix cache instead of recomputing them.
 *
 *   cc -std=c99 prefix_cache.c $(pkg-config --cflags --libs kvrt) -o prefix_cache
 *   ./prefix_cache [model.gguf]     (default: $KVRT_MODEL, else
 *                                    ~/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf)
 * Exits non-zero if anything fails or the second question reused nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kvrt/kvrt.h>

static const char *DOCUMENT =
    "The Harbour Street Bakery opened in 1987 in the old customs house of Port Ellen. "
    "It was founded by two sisters, Morag and Isla Campbell, who had trained as pastry cooks in Glasgow. "
    "The bakery bakes every night from two until six in the morning in a wood-fired oven built in 1902. "
    "Its most popular bread is a dark rye loaf with caraway seeds, and on Saturdays it sells "
    "more than four hundred cinnamon buns. In 2015 the bakery won the Scottish Baker of the Year award. "
    "It employs eleven people and closes every year for the first two weeks of January.";

static const char *QUESTIONS[2] = {
    "When did the bakery open, and who founded it?",
    "What is the bakery's most popular bread?",
};

static int fail(const char *what) {
    fprintf(stderr, "%s failed: %s\n", what, kvrt_last_error());
    return 1;
}

static int print_token(int32_t token, const char *text, size_t len, void *user_data) {
    (void)token;
    (void)user_data;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* Renders the chat for one question and tokenizes it; *out is malloc'ed. */
static kvrt_status build_prompt(int32_t **out, size_t *n_out, const kvrt_model *model, const char *question) {
    static char user[4096];
    kvrt_chat_message msgs[2];
    size_t n = 0;
    char *text;
    kvrt_status st;
    snprintf(user, sizeof user, "Document:\n%s\n\nQuestion: %s", DOCUMENT, question);
    msgs[0].role = "system";
    msgs[0].content = "Answer the question using only the document. Be brief.";
    msgs[1].role = "user";
    msgs[1].content = user;
    st = kvrt_model_chat_apply(NULL, 0, &n, model, msgs, 2, 1);
    if (st != KVRT_OK) return st;
    text = malloc(n);
    if (!text) return KVRT_ERR_OUT_OF_MEMORY;
    st = kvrt_model_chat_apply(text, n, &n, model, msgs, 2, 1);
    n -= 1; /* text buffers: n counted the NUL */
    if (st == KVRT_OK) st = kvrt_model_tokenize(NULL, 0, n_out, model, text, n, KVRT_TOKENIZE_PARSE_SPECIAL);
    if (st == KVRT_OK) {
        *out = malloc(*n_out * sizeof **out);
        st = *out ? kvrt_model_tokenize(*out, *n_out, n_out, model, text, n, KVRT_TOKENIZE_PARSE_SPECIAL)
                  : KVRT_ERR_OUT_OF_MEMORY;
    }
    free(text);
    return st;
}

int main(int argc, char **argv) {
    char path[4096];
    kvrt_model *model = NULL;
    kvrt_context *ctx = NULL;
    kvrt_context_config ccfg;
    kvrt_generate_config gcfg;
    kvrt_request_stats stats;
    int q, rc = 0;
    uint64_t reused_second = 0, prompt_second = 0;

    if (kvrt_version() != KVRT_VERSION_NUMBER) {
        fprintf(stderr, "libkvrt %s does not match the headers\n", kvrt_version_string());
        return 1;
    }
    if (argc > 1) snprintf(path, sizeof path, "%s", argv[1]);
    else if (getenv("KVRT_MODEL")) snprintf(path, sizeof path, "%s", getenv("KVRT_MODEL"));
    else snprintf(path, sizeof path, "%s/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                  getenv("HOME") ? getenv("HOME") : ".");

    if (kvrt_model_load(&model, path, NULL) != KVRT_OK) return fail("kvrt_model_load");
    kvrt_context_config_init(&ccfg, sizeof ccfg);
    ccfg.n_ctx = 1024;
    ccfg.n_seq_max = 2; /* one sequence per question: they share only the prefix cache */
    if (kvrt_context_create(&ctx, model, &ccfg) != KVRT_OK) {
        rc = fail("kvrt_context_create");
        goto done;
    }
    kvrt_generate_config_init(&gcfg, sizeof gcfg);
    gcfg.max_tokens = 24;
    gcfg.on_token = print_token;

    for (q = 0; q < 2; ++q) {
        int32_t *prompt = NULL;
        size_t n_prompt = 0;
        if (build_prompt(&prompt, &n_prompt, model, QUESTIONS[q]) != KVRT_OK) {
            rc = fail("building the prompt");
            goto done;
        }
        printf("Q%d: %s\nA%d: ", q + 1, QUESTIONS[q], q + 1);
        kvrt_request_stats_init(&stats, sizeof stats);
        if (kvrt_context_generate(&stats, ctx, q, prompt, n_prompt, &gcfg) != KVRT_OK) {
            free(prompt);
            rc = fail("kvrt_context_generate");
            goto done;
        }
        free(prompt);
        printf("\n   prompt %llu tokens: reused %llu (from the prefix cache %llu), computed %llu; "
               "generated %llu tokens, %.1f tokens/s\n",
               (unsigned long long)stats.prompt_tokens, (unsigned long long)stats.reused_tokens,
               (unsigned long long)stats.reused_from_cache, (unsigned long long)stats.computed_tokens,
               (unsigned long long)stats.generated_tokens, stats.decode_tokens_per_s);
        if (q == 1) {
            reused_second = stats.reused_from_cache;
            prompt_second = stats.prompt_tokens;
        }
    }
    printf("second question: reused %llu of %llu prompt tokens from the prefix cache\n",
           (unsigned long long)reused_second, (unsigned long long)prompt_second);
    if (reused_second == 0) {
        fprintf(stderr, "expected the shared document to come from the prefix cache\n");
        rc = 1;
    }
done:
    kvrt_context_destroy(ctx);
    kvrt_model_destroy(model);
    return rc;
}
