/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The kvrt authors */

/* C99 test of the common API: version, status strings, last error. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>


int main(void) {
    char buf[32];
    EXPECT(kvrt_version() == KVRT_VERSION_NUMBER);
    snprintf(buf, sizeof buf, "%d.%d.%d", KVRT_VERSION_MAJOR, KVRT_VERSION_MINOR, KVRT_VERSION_PATCH);
    EXPECT(strcmp(kvrt_version_string(), buf) == 0);
    EXPECT(strcmp(kvrt_status_string(KVRT_OK), "KVRT_OK") == 0);
    EXPECT(strcmp(kvrt_status_string(KVRT_ERR_CACHE_FULL), "KVRT_ERR_CACHE_FULL") == 0);
    EXPECT(strcmp(kvrt_status_string((kvrt_status)-999), "KVRT_ERR_UNKNOWN") == 0);
    kvrt_clear_error();
    EXPECT(kvrt_last_error() != NULL && kvrt_last_error()[0] == '\0');
    if (failures) {
        fprintf(stderr, "test_common: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_common: ok\n");
    return 0;
}
