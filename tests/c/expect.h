/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* Shared by the C99 API tests (one per .c file): EXPECT-style checks that
 * count failures and print kvrt's last error, and the real model's path. */
#ifndef KVRT_TESTS_C_EXPECT_H
#define KVRT_TESTS_C_EXPECT_H

#include <kvrt/kvrt.h>

#include <stdio.h>
#include <stdlib.h>

static int failures = 0;

#define EXPECT(cond)                                                                                   \
    do {                                                                                               \
        if (!(cond)) {                                                                                 \
            fprintf(stderr, "%s:%d: EXPECT(%s) failed (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    kvrt_last_error());                                                                \
            failures++;                                                                                \
        }                                                                                              \
    } while (0)
#define EXPECT_OK(call) EXPECT((call) == KVRT_OK)
/* A failing call must return `code` and name the problem. */
#define EXPECT_ERR(call, code)                \
    do {                                      \
        kvrt_clear_error();                   \
        EXPECT((call) == (code));             \
        EXPECT(kvrt_last_error()[0] != '\0'); \
    } while (0)

/* The real model fetched by scripts/setup.sh: $KVRT_MODEL, else
 * $KVRT_MODEL_DIR/..., else ~/.cache/kvrt/models/... */
static inline void expect_model_path(char *buf, size_t cap) {
    const char *p = getenv("KVRT_MODEL");
    const char *d = getenv("KVRT_MODEL_DIR");
    const char *h = getenv("HOME");
    if (p && *p) snprintf(buf, cap, "%s", p);
    else if (d && *d) snprintf(buf, cap, "%s/SmolLM2-135M-Instruct.Q4_1.gguf", d);
    else snprintf(buf, cap, "%s/.cache/kvrt/models/SmolLM2-135M-Instruct.Q4_1.gguf", h && *h ? h : "/root");
}

#endif
