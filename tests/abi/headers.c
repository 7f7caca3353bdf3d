/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* Compiled (not run) as C99 and C11 with -Wall -Wextra -pedantic -Werror:
 * every public header must be valid, warning-free C on its own. */
#include <kvrt/kvrt.h>

int kvrt_header_check_dummy(void);
int kvrt_header_check_dummy(void) { return KVRT_OK; }
