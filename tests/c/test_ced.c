/* C99 test of kvrt/ced.h: success and failure paths of every function. */
#include <kvrt/kvrt.h>

#include "expect.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>


static long file_size(const char *path) {
    FILE *f = fopen(path, "rb");
    long n;
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fclose(f);
    return n;
}

int main(void) {
    kvrt_ced_init_config cfg;
    uint64_t n = 0, n_base = 0;
    char path[64];
    snprintf(path, sizeof path, "/tmp/kvrt_test_ced_%ld.gguf", (long)getpid());

    /* config init */
    EXPECT_ERR(kvrt_ced_init_config_init(NULL, sizeof cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_init_config_init(&cfg, 3), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_init_config_init(&cfg, sizeof cfg + 64), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_init_config_init(&cfg, sizeof cfg));
    EXPECT(cfg.struct_size == sizeof cfg);
    EXPECT(strcmp(cfg.preset, "tiny") == 0);
    EXPECT(cfg.seed == 1);

    /* parameter count */
    EXPECT_ERR(kvrt_ced_param_count(NULL, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_param_count(&n, NULL), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_OK(kvrt_ced_param_count(&n, &cfg));
    EXPECT(n > 10000 && n < 1000000);
    cfg.preset = "base";
    EXPECT_OK(kvrt_ced_param_count(&n_base, &cfg));
    EXPECT(n_base > 90000000u && n_base < 130000000u);
    cfg.preset = "enormous";
    EXPECT_ERR(kvrt_ced_param_count(&n, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "enormous") != NULL);
    cfg.preset = "tiny";
    cfg.top_k = -4;
    EXPECT_ERR(kvrt_ced_param_count(&n, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(strstr(kvrt_last_error(), "ced.indexer.top_k") != NULL);
    cfg.top_k = 0;

    /* writing */
    EXPECT_ERR(kvrt_ced_write_gguf(NULL, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(kvrt_ced_write_gguf("/nonexistent-dir/x/model.gguf", &cfg), KVRT_ERR_IO);
    cfg.weight_type = 99;
    EXPECT_ERR(kvrt_ced_write_gguf(path, &cfg), KVRT_ERR_INVALID_ARGUMENT);
    EXPECT(file_size(path) < 0); /* nothing written on failure */
    cfg.weight_type = KVRT_CED_WEIGHTS_F32;
    EXPECT_OK(kvrt_ced_write_gguf(path, &cfg));
    EXPECT(file_size(path) > (long)(n * 4)); /* f32 weights, n parameters */
    cfg.weight_type = KVRT_CED_WEIGHTS_Q8_0;
    EXPECT_OK(kvrt_ced_write_gguf(path, NULL)); /* defaults */
    EXPECT_OK(kvrt_ced_write_gguf(path, &cfg));
    EXPECT(file_size(path) < (long)(n * 2));
    remove(path);

    if (failures) fprintf(stderr, "test_ced: %d failures\n", failures);
    return failures ? 1 : 0;
}
