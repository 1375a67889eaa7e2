/* Scaled FP8 safetensors checkpoints imported without widening: DeepSeek's
 * F8_E4M3 "weight" + float32 "weight_scale_inv" per 128 x 128 tile, and
 * compressed-tensors' F8_E4M3 "weight" + "weight_scale" per row [rows, 1]
 * or per tensor [] (models/model_names.c attaches them, compiler/
 * weights_pack.c writes FP8 blocks: per 128 columns of a row the source's
 * 128 bytes and the scale that covers them).
 *
 * The wide fixture written as an F8_E4M3 HF checkpoint (tests/fixtures) is
 * rewritten with st_writer into
 *  - the scaled checkpoint: every F8_E4M3 matrix keeps its bytes and gets a
 *    scale tensor of the mode under test, scales m 2^e with m <= 15 (so
 *    that value * scale is exact in float32 and in BF16);
 *  - the same weights dequantized to F32 (value * scale per element).
 * Checked: the bundle's FP8 blocks equal the source's bytes and scales bit
 * for bit (token embeddings with 563 rows: a partial tile; a dense
 * projection; an expert of a stack); the runtime's logits of the two
 * bundles agree within 1e-4 of the largest logit (the float bound: the
 * same weights, activations in float32 on both, only the summation
 * differs) with the same top-1 token at every position. Hostile
 * checkpoints (a scale of the wrong shape or type, one matrix without its
 * scale, a scale beside a non-FP8 tensor, both scale kinds at once) fail
 * to import with an error naming the tensor. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "import.h"
#include "compile.h"
#include "frontends/safetensors.h"
#include "ir.h"
#include "model_gen.h"
#include "ref_bundle.h"
#include "ref_runtime.h"
#include "st_writer.h"
#include "test_tmp.h"

#include "../../runtime/base/mapped_file.h"
#include "../../runtime/format/bundle.h"
#include "../../runtime/format/convert.h"
#include "../../runtime/format/minifloat.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FT_FLOAT_TOL 1e-4
enum { N_PROMPT = 12, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {1, 17, 42, 99, 5, 230, 7, 311, 64, 12, 500, 3};

typedef enum mode { MODE_TILE, MODE_ROW, MODE_TENSOR } mode_t_;

/* A hostile variant: which matrix (name substring) gets what. */
typedef enum bad { BAD_NONE, BAD_SHAPE, BAD_DTYPE, BAD_MISSING, BAD_ON_NORM, BAD_BOTH } bad_t;

typedef struct src_ckpt {
    char dir[4096];
    ft_mapped_file_t *map;
    ft_st_file_t *st;
} src_ckpt_t;

/* Scale i of tensor k: m 2^e with m in 1..15, e in -9..-4. */
static float scale_for(uint32_t k, uint64_t i)
{
    const uint32_t h = (k + 1) * 2654435761u ^ (uint32_t)(i * 40503u + 7);
    return (float)(1 + (h >> 3) % 15) * ldexpf(1.0f, (int)((h >> 9) % 6) - 9);
}

static int is_scaled(const ft_st_tensor_t *t)
{
    return t->dtype == FT_DTYPE_F8_E4M3 && t->n_dims == 2;
}

/* The scale of element (r, c) of tensor k in mode m. */
static float scale_at(mode_t_ m, uint32_t k, const ft_st_tensor_t *t, uint64_t r, uint64_t c)
{
    const uint64_t tiles = (t->shape[1] + 127) / 128;
    return scale_for(k, m == MODE_TILE ? r / 128 * tiles + c / 128 : m == MODE_ROW ? r : 0);
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

static void load_src(src_ckpt_t *s)
{
    ft_fixture_opts_t o;
    ft_ref_wide_opts(&o);
    o.format = FT_DTYPE_F8_E4M3;
    snprintf(s->dir, sizeof(s->dir), "%s/src", ft_test_tmpdir("hf_fp8_scaled"));
    assert_int_equal(ft_fixture_write_hf(&o, s->dir, 1), 0);
    char path[4200];
    snprintf(path, sizeof(path), "%s/model.safetensors", s->dir);
    assert_int_equal(ft_mapped_file_open(path, &s->map), 0);
    assert_int_equal(ft_st_parse(s->map->data, s->map->size, path, &s->st), 0);
}

static void free_src(src_ckpt_t *s)
{
    ft_st_file_free(s->st);
    ft_mapped_file_close(s->map);
}

/* Writes dir: the source's other files, and model.safetensors with the
 * scaled matrices (dequant: as F32 values instead), damaged as `bad` says
 * on the first matrix whose name contains bad_on. */
static void write_variant(const src_ckpt_t *s, const char *dir, mode_t_ m, ft_dtype_t sdt,
                          int dequant, bad_t bad, const char *bad_on)
{
    mkdir(dir, 0755);
    DIR *d = opendir(s->dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strcmp(e->d_name, "model.safetensors") != 0) {
            char a[4400], b[4400];
            snprintf(a, sizeof(a), "%s/%s", s->dir, e->d_name);
            snprintf(b, sizeof(b), "%s/%s", dir, e->d_name);
            copy_file(a, b);
        }
    closedir(d);
    char path[4400];
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    ft_st_writer_t *w;
    assert_int_equal(ft_st_writer_create(path, &w), 0);
    const char *sdt_name = ft_dtype_info(sdt)->st_name;
    int bad_done = 0;
    /* header: each tensor, then its scale */
    for (uint32_t pass = 0; pass < 2; pass++) {
        if (pass == 1) assert_int_equal(ft_st_writer_write_header(w), 0);
        for (uint32_t k = 0; k < s->st->n_tensors; k++) {
            const ft_st_tensor_t *t = &s->st->tensors[k];
            const uint8_t *src = s->map->data + t->offset;
            const int target = !bad_done && bad != BAD_NONE && strstr(t->name, bad_on) != NULL &&
                               (bad == BAD_ON_NORM ? t->n_dims == 1 : is_scaled(t));
            if (pass == 1 && target) bad_done = 1;
            if (!is_scaled(t) || dequant) {
                const int widen = is_scaled(t) && dequant;
                if (pass == 0) {
                    assert_int_equal(ft_st_writer_add_tensor(
                                         w, t->name,
                                         widen ? "F32" : ft_dtype_info(t->dtype)->st_name,
                                         t->n_dims, t->shape, widen ? 4 * t->n_bytes : t->n_bytes),
                                     0);
                } else if (widen) {
                    float *f = malloc(4 * t->n_bytes);
                    assert_non_null(f);
                    for (uint64_t r = 0; r < t->shape[0]; r++)
                        for (uint64_t c = 0; c < t->shape[1]; c++)
                            f[r * t->shape[1] + c] =
                                ft_e4m3_to_f32(src[r * t->shape[1] + c]) * scale_at(m, k, t, r, c);
                    assert_int_equal(ft_st_writer_write_data(w, f, 4 * t->n_bytes), 0);
                    free(f);
                } else {
                    assert_int_equal(ft_st_writer_write_data(w, src, t->n_bytes), 0);
                }
                if (target && bad == BAD_ON_NORM) { /* a scale beside a norm weight */
                    const uint64_t one[1] = {1};
                    if (pass == 0) {
                        char sn[300];
                        snprintf(sn, sizeof(sn), "%s_scale", t->name);
                        assert_int_equal(ft_st_writer_add_tensor(w, sn, "F32", 1, one, 4), 0);
                    } else {
                        const float v = 1;
                        assert_int_equal(ft_st_writer_write_data(w, &v, 4), 0);
                    }
                }
                continue;
            }
            /* a scaled matrix: its bytes, then its scale tensor */
            if (pass == 0)
                assert_int_equal(
                    ft_st_writer_add_tensor(w, t->name, "F8_E4M3", 2, t->shape, t->n_bytes), 0);
            else
                assert_int_equal(ft_st_writer_write_data(w, src, t->n_bytes), 0);
            if (target && bad == BAD_MISSING) continue;
            const uint64_t rows = t->shape[0], tiles = (t->shape[1] + 127) / 128;
            uint64_t shape[2] = {m == MODE_TILE ? (rows + 127) / 128 : rows,
                                 m == MODE_TILE ? tiles : 1};
            uint32_t n_dims = m == MODE_TENSOR ? 0 : 2;
            if (target && bad == BAD_SHAPE) shape[0] += 1;
            const uint64_t n = n_dims ? shape[0] * shape[1] : 1;
            const int wrong_dt = target && bad == BAD_DTYPE;
            const uint32_t esz = wrong_dt ? 4 : ft_dtype_info(sdt)->block_bytes;
            for (int both = 0; both < (target && bad == BAD_BOTH ? 2 : 1); both++) {
                char sn[300];
                snprintf(sn, sizeof(sn), "%s%s", t->name,
                         (m == MODE_TILE) != both ? "_scale_inv" : "_scale");
                if (pass == 0) {
                    assert_int_equal(ft_st_writer_add_tensor(w, sn, wrong_dt ? "I32" : sdt_name,
                                                             n_dims, shape, n * esz),
                                     0);
                    continue;
                }
                uint8_t *buf = calloc(n, esz);
                assert_non_null(buf);
                for (uint64_t i = 0; i < n && !wrong_dt; i++) {
                    const float v = scale_for(k, i);
                    if (sdt == FT_DTYPE_F32) {
                        memcpy(buf + 4 * i, &v, 4);
                    } else { /* BF16: exact for m <= 15 */
                        uint32_t u;
                        memcpy(&u, &v, 4);
                        buf[2 * i] = (uint8_t)(u >> 16);
                        buf[2 * i + 1] = (uint8_t)(u >> 24);
                    }
                }
                assert_int_equal(ft_st_writer_write_data(w, buf, n * esz), 0);
                free(buf);
            }
        }
    }
    assert_int_equal(ft_st_writer_close(w), 0);
}

static void compile_dir(const char *dir, const char *bundle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_import_model(dir, &m);
    if (st) fail_msg("import %s: %s", dir, ft_status_message(st));
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.kv_format = FT_DTYPE_F32;
    co.n_cuda_archs = 0;
    st = ft_compile_bundle(m, &co, bundle);
    if (st) fail_msg("compile %s: %s", dir, ft_status_message(st));
    ft_ir_model_destroy(m);
}

/* The bundle's FP8 blocks of source tensor `hf_name` (plan tensor
 * `plan_name`, expert `expert` of a stack or -1) against the source bytes
 * and scales, bit for bit. */
static void check_blocks(const src_ckpt_t *s, mode_t_ m, const ft_bundle_t *b, const char *hf_name,
                         const char *plan_name, int expert)
{
    uint32_t k = 0;
    while (k < s->st->n_tensors && strcmp(s->st->tensors[k].name, hf_name) != 0)
        k++;
    assert_true(k < s->st->n_tensors);
    const ft_st_tensor_t *t = &s->st->tensors[k];
    const Ftplan__Tensor *pt = NULL;
    for (size_t i = 0; i < b->plan->n_tensors; i++)
        if (strcmp(b->plan->tensors[i]->name, plan_name) == 0) pt = b->plan->tensors[i];
    assert_non_null(pt);
    assert_int_equal(pt->format, FT_DTYPE_FP8);
    const uint64_t rows = t->shape[0], cols = t->shape[1], nb = cols / 128;
    const uint64_t at = pt->offset + (expert >= 0 ? (uint64_t)expert * pt->expert_stride : 0);
    const uint8_t *p;
    assert_int_equal(ft_ftw_range(b->weight_files[pt->file], at, rows * nb * 132, &p), 0);
    const uint8_t *src = s->map->data + t->offset;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t j = 0; j < nb; j++) {
            const uint8_t *blk = p + (r * nb + j) * 132;
            const float want = scale_at(m, k, t, r, 128 * j);
            uint8_t wb[4];
            memcpy(wb, &want, 4);
            if (memcmp(blk, wb, 4) != 0 || memcmp(blk + 4, src + r * cols + 128 * j, 128) != 0)
                fail_msg("%s row %llu block %llu: not the source's bytes and scale", hf_name,
                         (unsigned long long)r, (unsigned long long)j);
        }
}

/* The source checkpoint, written once for all tests. */
static src_ckpt_t g_src;

static int setup(void **state)
{
    (void)state;
    load_src(&g_src);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free_src(&g_src);
    return 0;
}

static void check_mode(mode_t_ m, ft_dtype_t sdt, const char *tag)
{
    src_ckpt_t s = g_src;
    const char *tmp = ft_test_tmpdir("hf_fp8_scaled");
    char scaled[4096], wide[4096], b_scaled[4200], b_wide[4200];
    snprintf(scaled, sizeof(scaled), "%s/%s", tmp, tag);
    snprintf(wide, sizeof(wide), "%s/%s-f32", tmp, tag);
    snprintf(b_scaled, sizeof(b_scaled), "%s/bundle-%s", tmp, tag);
    snprintf(b_wide, sizeof(b_wide), "%s/bundle-%s-f32", tmp, tag);
    write_variant(&s, scaled, m, sdt, 0, BAD_NONE, "");
    write_variant(&s, wide, m, sdt, 1, BAD_NONE, "");
    compile_dir(scaled, b_scaled);
    compile_dir(wide, b_wide);
    ft_bundle_t *b;
    assert_int_equal(ft_bundle_open(b_scaled, &b), 0);
    check_blocks(&s, m, b, "model.embed_tokens.weight", "token_embd.weight", -1);
    check_blocks(&s, m, b, "model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", -1);
    check_blocks(&s, m, b, "model.layers.1.mlp.experts.2.down_proj.weight",
                 "blk.1.ffn_down_exps.weight", 2);
    ft_bundle_close(b);
    /* logits */
    uint32_t vocab = 0;
    for (uint32_t k = 0; k < s.st->n_tensors; k++)
        if (strcmp(s.st->tensors[k].name, "model.embed_tokens.weight") == 0)
            vocab = (uint32_t)s.st->tensors[k].shape[0];
    assert_true(vocab > 0);
    float *a = malloc((size_t)N_PROMPT * vocab * sizeof(float));
    float *r = malloc((size_t)N_PROMPT * vocab * sizeof(float));
    assert_true(a && r);
    assert_int_equal(ft_ref_runtime_logits(b_scaled, N_CTX, 0, 0, k_prompt, N_PROMPT, a), 0);
    assert_int_equal(ft_ref_runtime_logits(b_wide, N_CTX, 0, 0, k_prompt, N_PROMPT, r), 0);
    double worst = 0;
    for (uint32_t pos = 0; pos < N_PROMPT; pos++) {
        const float *x = a + (size_t)pos * vocab, *y = r + (size_t)pos * vocab;
        double mx = 0, err = 0;
        uint32_t ax = 0, ay = 0;
        for (uint32_t v = 0; v < vocab; v++) {
            mx = fmax(mx, fabs((double)y[v]));
            err = fmax(err, fabs((double)x[v] - y[v]));
            if (x[v] > x[ax]) ax = v;
            if (y[v] > y[ay]) ay = v;
        }
        worst = fmax(worst, err / mx);
        if (ax != ay) fail_msg("%s: position %u: top-1 %u vs %u", tag, pos, ax, ay);
    }
    print_message("%s: logits within %.3g of the f32 checkpoint's (bound %.0e)\n", tag, worst,
                  FT_FLOAT_TOL);
    assert_true(worst <= FT_FLOAT_TOL);
    free(a);
    free(r);
}

static void test_deepseek_tiles(void **state)
{
    (void)state;
    check_mode(MODE_TILE, FT_DTYPE_F32, "tile128");
}

static void test_per_channel(void **state)
{
    (void)state;
    check_mode(MODE_ROW, FT_DTYPE_BF16, "per-row");
}

static void test_per_tensor(void **state)
{
    (void)state;
    check_mode(MODE_TENSOR, FT_DTYPE_F32, "per-tensor");
}

static void expect_refused(const src_ckpt_t *s, mode_t_ m, bad_t bad, const char *on,
                           const char *want1, const char *want2)
{
    char dir[4200];
    snprintf(dir, sizeof(dir), "%s/bad-%d-%d", ft_test_tmpdir("hf_fp8_scaled"), (int)m, (int)bad);
    write_variant(s, dir, m, FT_DTYPE_F32, 0, bad, on);
    ft_ir_model_t *im = NULL;
    ft_status_t st = ft_import_model(dir, &im);
    if (!st) {
        ft_ir_model_destroy(im);
        fail_msg("bad %d: imported", (int)bad);
    }
    const char *msg = ft_status_message(st);
    print_message("refused: %s\n", msg);
    if (!strstr(msg, want1) || (want2 && !strstr(msg, want2)))
        fail_msg("bad %d: '%s' does not name '%s'", (int)bad, msg, want1);
    ft_status_free(st);
}

static void test_hostile(void **state)
{
    (void)state;
    const src_ckpt_t s = g_src;
    expect_refused(&s, MODE_TILE, BAD_SHAPE, "layers.0.self_attn.k_proj",
                   "model.layers.0.self_attn.k_proj.weight_scale_inv", "tile");
    expect_refused(&s, MODE_ROW, BAD_SHAPE, "layers.1.mlp.experts.1.up_proj",
                   "model.layers.1.mlp.experts.1.up_proj.weight_scale", "per row");
    expect_refused(&s, MODE_TILE, BAD_DTYPE, "layers.0.self_attn.o_proj",
                   "model.layers.0.self_attn.o_proj.weight_scale_inv", "F32, BF16 or F16");
    expect_refused(&s, MODE_TILE, BAD_MISSING, "layers.1.mlp.experts.3.gate_proj",
                   "model.layers.1.mlp.experts.3.gate_proj.weight", "lacks");
    expect_refused(&s, MODE_ROW, BAD_MISSING, "layers.0.self_attn.v_proj", "missing scale tensor",
                   "blk.0.attn_v.weight");
    expect_refused(&s, MODE_ROW, BAD_ON_NORM, "layers.0.input_layernorm",
                   "model.layers.0.input_layernorm.weight_scale", "not a 2-D F8_E4M3 matrix");
    expect_refused(&s, MODE_TILE, BAD_BOTH, "layers.0.self_attn.q_proj",
                   "model.layers.0.self_attn.q_proj.weight", "both");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_tiles),
        cmocka_unit_test(test_per_channel),
        cmocka_unit_test(test_per_tensor),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
