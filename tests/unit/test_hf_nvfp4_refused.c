/* An NVIDIA ModelOpt NVFP4 safetensors checkpoint is refused at import,
 * naming the tensor and its scales, until the runtime's NVFP4 type carries
 * ModelOpt's per-tensor second scale (issue 14): "weight" U8 [rows,
 * cols / 2] (two E2M1 codes a byte), "weight_scale" F8_E4M3 [rows,
 * cols / 16], "weight_scale_2" F32 [] and "input_scale" F32 []. Before,
 * such a checkpoint was reported as an FP8 scale beside a U8 tensor.
 * Checked with and without the per-tensor scale, on a dense projection
 * and on the first expert of a stack (a later expert alone in another
 * format is refused as differing from expert 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "frontends/safetensors.h"
#include "import.h"
#include "ir.h"
#include "model_gen.h"
#include "st_writer.h"
#include "test_tmp.h"

#include "../../runtime/base/mapped_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_src[4096];

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(g_src, sizeof(g_src), "%s/src", ft_test_tmpdir("hf_nvfp4_refused"));
    assert_int_equal(ft_fixture_write_hf(&o, g_src, 1), 0);
    return 0;
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_true(a && b);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
        assert_int_equal(fwrite(buf, 1, n, b), n);
    fclose(a);
    assert_int_equal(fclose(b), 0);
}

/* dir: the fixture with matrix `on` rewritten as ModelOpt NVFP4 (codes
 * and scales zero: the import must refuse before reading them). */
static void write_nvfp4(const char *dir, const char *on, int with_scale_2)
{
    mkdir(dir, 0755);
    static const char *const others[] = {"config.json", "tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        char a[4400], b[4400];
        snprintf(a, sizeof(a), "%s/%s", g_src, others[i]);
        snprintf(b, sizeof(b), "%s/%s", dir, others[i]);
        struct stat sb;
        if (stat(a, &sb) == 0) copy_file(a, b);
    }
    char path[4400];
    snprintf(path, sizeof(path), "%s/model.safetensors", g_src);
    ft_mapped_file_t *map = NULL;
    ft_st_file_t *st = NULL;
    assert_int_equal(ft_mapped_file_open(path, &map), 0);
    assert_int_equal(ft_st_parse(map->data, map->size, path, &st), 0);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    ft_st_writer_t *w;
    assert_int_equal(ft_st_writer_create(path, &w), 0);
    int hit = 0;
    for (uint32_t pass = 0; pass < 2; pass++) {
        if (pass == 1) assert_int_equal(ft_st_writer_write_header(w), 0);
        for (uint32_t k = 0; k < st->n_tensors; k++) {
            const ft_st_tensor_t *t = &st->tensors[k];
            if (strcmp(t->name, on) != 0) {
                if (pass == 0)
                    assert_int_equal(ft_st_writer_add_tensor(w, t->name, ft_dtype_info(t->dtype)->st_name,
                                                             t->n_dims, t->shape, t->n_bytes),
                                     0);
                else
                    assert_int_equal(ft_st_writer_write_data(w, map->data + t->offset, t->n_bytes), 0);
                continue;
            }
            hit = 1;
            assert_int_equal(t->n_dims, 2);
            const uint64_t rows = t->shape[0], cols = t->shape[1];
            const uint64_t qs[2] = {rows, cols / 2}, sc[2] = {rows, cols / 16};
            char n[300];
            uint8_t *zero = calloc(rows * cols / 2 + 4, 1);
            assert_non_null(zero);
            if (pass == 0) {
                assert_int_equal(ft_st_writer_add_tensor(w, t->name, "U8", 2, qs, rows * cols / 2), 0);
                snprintf(n, sizeof(n), "%s_scale", t->name);
                assert_int_equal(ft_st_writer_add_tensor(w, n, "F8_E4M3", 2, sc, rows * cols / 16), 0);
                if (with_scale_2) {
                    snprintf(n, sizeof(n), "%s_scale_2", t->name);
                    assert_int_equal(ft_st_writer_add_tensor(w, n, "F32", 0, qs, 4), 0);
                }
                snprintf(n, sizeof(n), "%.*sinput_scale", (int)(strlen(t->name) - strlen("weight")), t->name);
                assert_int_equal(ft_st_writer_add_tensor(w, n, "F32", 0, qs, 4), 0);
            } else {
                assert_int_equal(ft_st_writer_write_data(w, zero, rows * cols / 2), 0);
                assert_int_equal(ft_st_writer_write_data(w, zero, rows * cols / 16), 0);
                if (with_scale_2) assert_int_equal(ft_st_writer_write_data(w, zero, 4), 0);
                assert_int_equal(ft_st_writer_write_data(w, zero, 4), 0);
            }
            free(zero);
        }
    }
    assert_true(hit);
    assert_int_equal(ft_st_writer_close(w), 0);
    ft_st_file_free(st);
    ft_mapped_file_close(map);
}

static void expect_refused(const char *on, int with_scale_2)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/bad-%d-%zu", ft_test_tmpdir("hf_nvfp4_refused"), with_scale_2, strlen(on));
    write_nvfp4(dir, on, with_scale_2);
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_import_model(dir, &m);
    if (!st) {
        ft_ir_model_destroy(m);
        fail_msg("%s: a ModelOpt NVFP4 matrix was imported", on);
    }
    const char *msg = ft_status_message(st);
    print_message("refused: %s\n", msg);
    char scale_2[320];
    snprintf(scale_2, sizeof(scale_2), "%s_scale_2", on);
    if (!strstr(msg, on) || !strstr(msg, "ModelOpt NVFP4") || !strstr(msg, scale_2) ||
        (strstr(msg, "missing here") != NULL) == with_scale_2)
        fail_msg("'%s' does not name '%s', NVFP4 and its scales as expected", msg, on);
    ft_status_free(st);
}

static void test_dense(void **state)
{
    (void)state;
    expect_refused("model.layers.0.self_attn.q_proj.weight", 1);
    expect_refused("model.layers.1.self_attn.o_proj.weight", 0);
}

static void test_expert(void **state)
{
    (void)state;
    expect_refused("model.layers.1.mlp.experts.0.down_proj.weight", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_expert),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
