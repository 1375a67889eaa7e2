/* The f16 KV cache (ftc's default, kv_format F16) on every backend, on
 * the tiny fixture compiled twice from the same F32 weights, once with
 * --kv f16 and once with --kv f32:
 *
 *  - append: the CPU's KV_APPEND and the fake driver's ft_kv_append_f16
 *    (the emulation of the CUDA kernel) store IEEE halves rounded to
 *    nearest even, checked bit for bit on ties, subnormals and overflow;
 *    after a prompt, layer 0's rows (which do not depend on attention)
 *    are the f32 bundle's rows rounded to half, bit for bit;
 *  - against the float64 reference (which keeps K and V exactly): every
 *    position within FT_KV16_TOL (below) with the same argmax, while the
 *    f16 and f32 bundles' logits do differ (the cache really is half);
 *  - the plan's generated attention over the f16 cache is bit-identical
 *    to the reference loop inside the forward pass, and the cuda backend
 *    (fake driver) gives the cpu backend's logits within FT_BACKEND_TOL
 *    and the same greedy tokens;
 *  - KV memory: a session of the f16 bundle holds half the KV bytes of
 *    the f32 one on cpu, sim and cuda (ft_session_kv_bytes), and the
 *    session's host allocation shrinks by exactly that on cpu.
 *
 * FT_KV16_TOL. An f16 element has an 11-bit significand, so storing K and
 * V rounds each element with relative error at most u16 = 2^-11 = 4.9e-4.
 * A score q.k then moves by at most u16 sum |q_i k_i|, the softmax weights
 * by about as much relative, and the attention output (a convex
 * combination of V rows, each off by <= u16) by about 2 u16 relative; the
 * output projection and the residual stream carry that to the logits. Two
 * layers give about 4 u16 of the largest logit at worst (errors of
 * independent elements mostly cancel: measured ~1e-3); FT_KV16_TOL =
 * 8 u16 = 3.9e-3 leaves a 2x margin, while a real mistake (a half read as
 * bytes of a float, a stride in floats over a cache of halves, a wrong
 * row) moves the logits by 1e-1 or more. The float32 arithmetic around it
 * contributes ~1e-6 (test_forward_f32.c).
 *
 * FT_BACKEND_TOL. Two backends (or kernel sets) compute K and V with
 * float32 sums in different orders (~1e-7 relative apart); where such a
 * difference straddles a half's rounding boundary, that element differs
 * by one half ulp (u16 relative), in a small fraction of elements. The
 * logits then differ by well under u16 of the largest logit:
 * FT_BACKEND_TOL = 2 u16 = 9.8e-4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_test_skip.h"
#include "compile.h"
#include "cuda_codegen.h"
#include "exec/engine_internal.h"
#include "exec/forward_internal.h"
#include "exec/program.h"
#include "fake_cuda.h"
#include "format/convert.h"
#include "import.h"
#include "model_gen.h"
#include "ref_check.h"
#include "ref_forward.h"
#include "ref_ops.h"
#include "ref_runtime.h"
#include "test_tmp.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FT_U16 (1.0 / 2048.0) /* 2^-11 */
#define FT_KV16_TOL (8 * FT_U16)
#define FT_BACKEND_TOL (2 * FT_U16)

enum { N_PROMPT = 20, N_GEN = 12, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_f16[4096], g_f32[4096];
static int g_cuda; /* the bundles have CUDA images and the fake driver loads */

/* Values and the halves they round to (nearest, ties to even). */
static const struct {
    float f;
    uint16_t h;
} k_round[] = {
    {1.0f, 0x3C00},
    {1.0f + 0x1p-11f, 0x3C00},           /* halfway 1 | 1+2^-10: even 1 */
    {1.0f + 3 * 0x1p-11f, 0x3C02},       /* halfway 1+2^-10 | 1+2^-9: even 1+2^-9 */
    {1.0f + 0x1p-11f + 0x1p-20f, 0x3C01}, /* just above halfway: up */
    {-2.5f, 0xC100},
    {65504.0f, 0x7BFF},                  /* the largest half */
    {65519.0f, 0x7BFF},                  /* below halfway to 65536: down */
    {65520.0f, 0x7C00},                  /* halfway: rounds to 2^16, past the range: inf */
    {0x1p-24f, 0x0001},                  /* the smallest subnormal */
    {0x1p-25f, 0x0000},                  /* halfway 0 | 2^-24: even 0 */
    {3 * 0x1p-25f, 0x0002},              /* halfway 2^-24 | 2^-23: even 2^-23 */
    {1e-10f, 0x0000},
    {-0.0f, 0x8000},
    {0.1f, 0x2E66},
};
enum { N_ROUND = sizeof(k_round) / sizeof(k_round[0]) };

static ft_status_t build(const char *dir, const char *src, ft_dtype_t kv, char *out, size_t cap)
{
    snprintf(out, cap, "%s/bundle-kv%s", dir, ft_dtype_name(kv));
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_import_model(src, &m);
    if (st) return st;
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.kv_format = kv;
    if (ft_cg_cuda_nvrtc_available()) {
        co.cuda_archs[0] = 90; /* the fake device is sm_90 */
        co.n_cuda_archs = 1;
    }
    st = ft_compile_bundle(m, &co, out);
    ft_ir_model_destroy(m);
    return st;
}

static int setup(void **state)
{
    (void)state;
    const char *dir = ft_test_tmpdir("kv_f16");
    mkdir(dir, 0755);
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", dir);
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 9;
    ft_status_t st = ft_fixture_write_gguf(&o, src);
    if (!st) st = build(dir, src, FT_DTYPE_F16, g_f16, sizeof(g_f16));
    if (!st) st = build(dir, src, FT_DTYPE_F32, g_f32, sizeof(g_f32));
    if (st) {
        fprintf(stderr, "building the fixture bundles: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    g_cuda = fake && ft_cg_cuda_nvrtc_available();
    if (fake) dlclose(fake);
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    return 0;
}

static ft_engine_t *open_engine(const char *bundle, ft_backend_kind_t backend, int kernels)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) /* a machine to model */
        eo.hw_profile = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
    if (backend != FT_BACKEND_CPU) {
        eo.vram_bytes = 64ull << 20; /* every expert resident */
        eo.plan_ctx = N_CTX;
    }
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    return e;
}

static ft_session_t *open_session(ft_engine_t *e)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    return s;
}

/* Where a session's cached K (kv 0) or V (kv 1) row of a layer is: its
 * page (runtime/kv), the position's row in it. */
static const void *kv_row(const ft_session_t *s, uint32_t layer, uint32_t kv, uint32_t pos)
{
    const ft_kv_table_t *t = &s->kv;
    const size_t row = (size_t)s->m->prog->max_kv_width * s->m->kv_elem_bytes;
    return ft_kv_table_rows(t, pos >> t->page_shift, layer, kv) + (pos & ((1u << t->page_shift) - 1)) * row;
}

/* The block-0 KV_APPEND op of the engine's schedule. */
static const ft_xop_t *kv_append_op(const ft_engine_t *e)
{
    const ft_xops_t *b = &e->model->prog->blocks[0];
    for (uint32_t i = 0; i < b->n; i++)
        if (b->ops[i].kind == FTPLAN__OP_KIND__OP_KV_APPEND) return &b->ops[i];
    fail_msg("block 0 has no KV_APPEND");
    return NULL;
}

/* The CPU's KV_APPEND on rows of the rounding table (K: the values, V:
 * their negations), one token at position 5, and the fake driver's
 * ft_kv_append_f16 on the same rows. */
static void test_append_rounds_to_nearest_even(void **state)
{
    (void)state;
    ft_engine_t *e = open_engine(g_f16, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
    ft_session_t *s = open_session(e);
    assert_int_equal(e->model->kv_dtype, FT_DTYPE_F16);
    const ft_xop_t *x = kv_append_op(e);
    const uint32_t kvd = x->n_kv_heads * x->head_dim, pos = 5;
    float *k = calloc(kvd, sizeof(float)), *v = calloc(kvd, sizeof(float));
    uint16_t *want = calloc(kvd, sizeof(uint16_t));
    assert_non_null(k), assert_non_null(v), assert_non_null(want);
    for (uint32_t i = 0; i < kvd; i++) {
        k[i] = k_round[i % N_ROUND].f;
        v[i] = -k[i];
        want[i] = k_round[i % N_ROUND].h;
    }
    ft_step_t st;
    memset(&st, 0, sizeof(st));
    st.e = e;
    st.w = e->work;
    st.n = st.n_step = 1;
    st.w->row_s[0] = s;
    st.w->row_pos[0] = pos;
    st.buf[x->in[0]] = k;
    st.buf[x->in[1]] = v;
    FT_REF_OK(ft_kv_table_prepare(&s->kv, pos, 1)); /* the position's page, as a step would */
    ft_xop_kv_append(&st, x);
    const uint16_t *kc = kv_row(s, (uint32_t)x->layer, 0, pos), *vc = kv_row(s, (uint32_t)x->layer, 1, pos);
    for (uint32_t i = 0; i < kvd; i++) {
        if (kc[i] != want[i] || vc[i] != (uint16_t)(want[i] ^ 0x8000u))
            fail_msg("cpu: %a stored as K %04x V %04x, want %04x / %04x", (double)k[i], kc[i], vc[i], want[i],
                     want[i] ^ 0x8000u);
    }
    /* the fake driver's kernel on the same rows, two tokens at rows 3, 0 */
    ft_fake_kernel_t fk;
    assert_true(ft_fake_kernel_parse("ft_kv_append_f16", &fk));
    uint16_t *fkc = calloc(4 * (size_t)kvd, 2), *fvc = calloc(4 * (size_t)kvd, 2);
    float *rows_k = calloc(2 * (size_t)kvd, 4), *rows_v = calloc(2 * (size_t)kvd, 4);
    assert_non_null(fkc), assert_non_null(fvc), assert_non_null(rows_k), assert_non_null(rows_v);
    memcpy(rows_k, k, kvd * 4), memcpy(rows_k + kvd, v, kvd * 4);
    memcpy(rows_v, v, kvd * 4), memcpy(rows_v + kvd, k, kvd * 4);
    const int fpos[2] = {3, 0};
    const int *dpos = fpos;
    int dim = (int)kvd, n_tok = 2;
    void *p[] = {&rows_k, &rows_v, &fkc, &fvc, &dim, &dpos, &n_tok};
    const ft_fake_launch_t l = {{2, 1, 1}, {256, 1, 1}, p};
    assert_int_equal(ft_fake_kernel_run(&fk, &l), 0);
    for (uint32_t i = 0; i < kvd; i++) {
        const uint16_t neg = (uint16_t)(want[i] ^ 0x8000u);
        if (fkc[3 * kvd + i] != want[i] || fvc[3 * kvd + i] != neg || fkc[i] != neg || fvc[i] != want[i])
            fail_msg("fake ft_kv_append_f16: %a stored as %04x, want %04x", (double)k[i], fkc[3 * kvd + i],
                     want[i]);
    }
    free(fkc), free(fvc), free(rows_k), free(rows_v);
    free(k), free(v), free(want);
    ft_session_destroy(s);
    ft_engine_close(e);
}

/* Layer 0's K and V rows come from the embeddings alone: after the same
 * prompt the f16 cache holds the f32 cache's rows rounded to half. */
static void test_layer0_rows_are_rounded_f32_rows(void **state)
{
    (void)state;
    ft_engine_t *e16 = open_engine(g_f16, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
    ft_engine_t *e32 = open_engine(g_f32, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
    ft_session_t *s16 = open_session(e16), *s32 = open_session(e32);
    FT_REF_OK(ft_session_eval(s16, k_prompt, N_PROMPT, NULL));
    FT_REF_OK(ft_session_eval(s32, k_prompt, N_PROMPT, NULL));
    const uint32_t stride = e16->model->prog->max_kv_width;
    assert_int_equal(stride, e32->model->prog->max_kv_width);
    for (uint32_t p = 0; p < N_PROMPT; p++) {
        const uint16_t *k16 = kv_row(s16, 0, 0, p), *v16 = kv_row(s16, 0, 1, p);
        const float *k32 = kv_row(s32, 0, 0, p), *v32 = kv_row(s32, 0, 1, p);
        for (size_t i = 0; i < stride; i++)
            if (k16[i] != ft_fp32_to_fp16(k32[i]) || v16[i] != ft_fp32_to_fp16(v32[i]))
                fail_msg("layer 0 position %u element %zu: K %04x V %04x, the f32 rows %a %a round to %04x %04x",
                         p, i, k16[i], v16[i], (double)k32[i], (double)v32[i], ft_fp32_to_fp16(k32[i]),
                         ft_fp32_to_fp16(v32[i]));
    }
    ft_session_destroy(s16), ft_session_destroy(s32);
    ft_engine_close(e16), ft_engine_close(e32);
}

static double max_rel(const float *a, const float *b, uint32_t n_pos, uint32_t V)
{
    double worst = 0;
    double *r = malloc(sizeof(double) * V);
    assert_non_null(r);
    for (uint32_t p = 0; p < n_pos; p++) {
        for (uint32_t i = 0; i < V; i++)
            r[i] = b[(size_t)p * V + i];
        const double d = ft_ref_rel_err(a + (size_t)p * V, r, V);
        worst = d > worst ? d : worst;
    }
    free(r);
    return worst;
}

static void test_matches_reference_within_f16(void **state)
{
    (void)state;
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_load(g_f16, &m));
    const uint32_t V = m->vocab_size;
    double *ref = malloc(sizeof(double) * N_PROMPT * V);
    float *rt16 = malloc(sizeof(float) * N_PROMPT * V), *rt32 = malloc(sizeof(float) * N_PROMPT * V);
    assert_non_null(ref), assert_non_null(rt16), assert_non_null(rt32);
    FT_REF_OK(ft_ref_eval(m, k_prompt, N_PROMPT, ref));
    static const int kinds[] = {FT_KERNELS_REFERENCE, FT_KERNELS_GENERATED};
    for (int k = 0; k < 2; k++) {
        FT_REF_OK(ft_ref_runtime_logits_k(g_f16, kinds[k], N_CTX, 0, 0, k_prompt, N_PROMPT, rt16));
        FT_REF_OK(ft_ref_runtime_logits_k(g_f32, kinds[k], N_CTX, 0, 0, k_prompt, N_PROMPT, rt32));
        const ft_ref_cmp_t c16 = ft_ref_compare(rt16, ref, N_PROMPT, V);
        const ft_ref_cmp_t c32 = ft_ref_compare(rt32, ref, N_PROMPT, V);
        const double apart = max_rel(rt16, rt32, N_PROMPT, V);
        print_message("%s kernels: f16 KV max error %.3g (position %u, top-1 %u/%u), f32 KV %.3g; "
                      "f16 vs f32 %.3g\n",
                      k ? "generated" : "reference", c16.max_err, c16.worst_pos, c16.n_top1_agree, N_PROMPT,
                      c32.max_err, apart);
        assert_true(c16.max_err <= FT_KV16_TOL);
        assert_int_equal(c16.n_top1_agree, N_PROMPT);
        assert_true(c32.max_err <= 1e-4); /* the f32 bundle stays exact */
        assert_true(apart > 0.0);         /* the cache really is half */
    }
    free(ref), free(rt16), free(rt32);
    ft_ref_model_free(m);
}

/* Prompt logits then N_GEN greedy steps' logits and tokens. */
static void greedy(ft_engine_t *e, float *logits, int32_t *tokens)
{
    ft_session_t *s = open_session(e);
    const uint32_t V = ft_engine_info(e)->vocab_size;
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, logits));
    for (int i = 0; i < N_GEN; i++) {
        const float *lg = ft_session_logits(s);
        memcpy(logits + (size_t)(N_PROMPT + i) * V, lg, V * sizeof(float));
        tokens[i] = (int32_t)ft_ref_argmax_f(lg, V);
        FT_REF_OK(ft_session_eval(s, &tokens[i], 1, NULL));
    }
    ft_session_destroy(s);
}

/* The plan's attention over the f16 cache against the reference loop
 * (bit-identical, in the forward pass), and the cpu reference kernels,
 * the generated kernels and the cuda backend against each other. */
static void test_backends_agree(void **state)
{
    (void)state;
    ft_engine_t *gen = open_engine(g_f16, FT_BACKEND_CPU, FT_KERNELS_GENERATED);
    const uint32_t V = ft_engine_info(gen)->vocab_size, n_pos = N_PROMPT + N_GEN;
    const size_t n = (size_t)n_pos * V;
    float *a = malloc(n * 4), *b = malloc(n * 4), *ref = malloc(n * 4), *cuda = malloc(n * 4);
    assert_non_null(a), assert_non_null(b), assert_non_null(ref), assert_non_null(cuda);
    int32_t ta[N_GEN], tb[N_GEN], tr[N_GEN], tc[N_GEN];
    greedy(gen, a, ta);
    ft_program_t *p = gen->model->prog;
    uint32_t n_attn = 0;
    for (uint32_t l = 0; l < p->n_blocks; l++)
        for (uint32_t i = 0; i < p->blocks[l].n; i++) {
            ft_xop_t *x = &p->blocks[l].ops[i];
            if (x->kind != FTPLAN__OP_KIND__OP_ATTENTION) continue;
            assert_non_null(x->attn_kernel_f16); /* the f16 entry of the module */
            assert_null(x->attn_kernel);
            x->attn_kernel_f16 = NULL; /* the reference loop from here on */
            n_attn++;
        }
    assert_int_equal(n_attn, p->n_blocks);
    greedy(gen, b, tb);
    assert_memory_equal(a, b, n * 4);
    assert_memory_equal(ta, tb, sizeof(ta));
    ft_engine_close(gen);
    ft_engine_t *r = open_engine(g_f16, FT_BACKEND_CPU, FT_KERNELS_REFERENCE);
    greedy(r, ref, tr);
    ft_engine_close(r);
    const double d_gen = max_rel(a, ref, n_pos, V);
    print_message("f16 KV: generated vs reference kernels %.3g\n", d_gen);
    assert_true(d_gen <= FT_BACKEND_TOL);
    assert_memory_equal(ta, tr, sizeof(ta));
    if (!g_cuda) {
        free(a), free(b), free(ref), free(cuda);
        FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    }
    ft_engine_t *c = open_engine(g_f16, FT_BACKEND_CUDA, 0);
    greedy(c, cuda, tc);
    ft_engine_close(c);
    const double d_cuda = max_rel(cuda, ref, n_pos, V);
    print_message("f16 KV: cuda (fake driver) vs cpu reference kernels %.3g\n", d_cuda);
    assert_true(d_cuda <= FT_BACKEND_TOL);
    assert_memory_equal(tc, tr, sizeof(tc));
    free(a), free(b), free(ref), free(cuda);
}

/* Counts the bytes live through the allocator. */
typedef struct counting {
    size_t live;
} counting_t;

static void *c_alloc(void *u, size_t n)
{
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    *p = n;
    ((counting_t *)u)->live += n;
    return (char *)p + 16;
}

static void c_free(void *u, void *q)
{
    if (!q) return;
    size_t *p = (size_t *)((char *)q - 16);
    ((counting_t *)u)->live -= *p;
    free(p);
}

static void *c_realloc(void *u, void *q, size_t n)
{
    if (!q) return c_alloc(u, n);
    size_t *p = (size_t *)((char *)q - 16);
    const size_t old = *p;
    size_t *np = realloc(p, n + 16);
    if (!np) return NULL;
    *np = n;
    ((counting_t *)u)->live += n - old;
    return (char *)np + 16;
}

/* Evaluates a whole context: the session then holds every KV page. */
static void fill(ft_session_t *s)
{
    int32_t t[N_CTX];
    for (uint32_t i = 0; i < N_CTX; i++)
        t[i] = (int32_t)(5 + i % 50);
    FT_REF_OK(ft_session_eval(s, t, N_CTX, NULL));
}

/* Host bytes a session with a full context takes on the cpu backend (its
 * buffers and the pool's slab of KV pages), its KV bytes, and the pool's. */
static size_t cpu_session_bytes(const char *bundle, uint64_t *kv, uint64_t *pool)
{
    counting_t cnt = {0};
    const ft_allocator_t al = {c_alloc, c_realloc, c_free, &cnt};
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.allocator = &al;
    eo.kernels = FT_KERNELS_REFERENCE;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    const size_t before = cnt.live;
    ft_session_t *s = open_session(e);
    fill(s);
    const size_t bytes = cnt.live - before;
    *kv = ft_session_kv_bytes(s);
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    *pool = es.kv_bytes_allocated;
    ft_session_destroy(s);
    ft_engine_close(e);
    return bytes;
}

static uint64_t dev_kv_bytes(const char *bundle, ft_backend_kind_t backend)
{
    ft_engine_t *e = open_engine(bundle, backend, 0);
    ft_session_t *s = open_session(e);
    if (backend != FT_BACKEND_CUDA) fill(s); /* cuda: the device's cache for n_ctx */
    const uint64_t kv = ft_session_kv_bytes(s);
    ft_session_destroy(s);
    ft_engine_close(e);
    return kv;
}

static void test_session_kv_memory_halved(void **state)
{
    (void)state;
    uint64_t kv16 = 0, kv32 = 0, pool16 = 0, pool32 = 0;
    const size_t b16 = cpu_session_bytes(g_f16, &kv16, &pool16), b32 = cpu_session_bytes(g_f32, &kv32, &pool32);
    /* 2 layers x 64 positions x (2 KV heads x 16) x K and V */
    const uint64_t elems = 2ull * N_CTX * 2 * 16 * 2;
    print_message("cpu session: f16 KV %llu bytes (session %zu), f32 KV %llu bytes (session %zu)\n",
                  (unsigned long long)kv16, b16, (unsigned long long)kv32, b32);
    assert_int_equal(kv16, elems * 2);
    assert_int_equal(kv32, elems * 4);
    /* the cache is the only difference: the pool's slab of pages */
    assert_int_equal(pool32, 2 * pool16);
    assert_int_equal(b32 - b16, pool32 - pool16);
    const uint64_t sim16 = dev_kv_bytes(g_f16, FT_BACKEND_SIM), sim32 = dev_kv_bytes(g_f32, FT_BACKEND_SIM);
    assert_int_equal(sim16, kv16);
    assert_int_equal(sim32, kv32);
    if (!g_cuda) FT_CUDA_TEST_SKIP("no NVRTC, or the fake driver does not load");
    const uint64_t c16 = dev_kv_bytes(g_f16, FT_BACKEND_CUDA), c32 = dev_kv_bytes(g_f32, FT_BACKEND_CUDA);
    print_message("cuda session (device): f16 KV %llu bytes, f32 KV %llu bytes\n", (unsigned long long)c16,
                  (unsigned long long)c32);
    assert_int_equal(c16, kv16);
    assert_int_equal(c32, kv32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_rounds_to_nearest_even),
        cmocka_unit_test(test_layer0_rows_are_rounded_f32_rows),
        cmocka_unit_test(test_matches_reference_within_f16),
        cmocka_unit_test(test_backends_agree),
        cmocka_unit_test(test_session_kv_memory_halved),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
