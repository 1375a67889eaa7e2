/* Qwen3.5/3.6 MoE hybrids (qwen35moe) through the op schedule, with no
 * Qwen code in the runtime: the fixture (4 layers: Gated DeltaNet in 0..2,
 * full attention in 3, as full_attention_interval 4 says; 4 value heads
 * over 2 key heads of 16, tiled; a conv of 4 taps; the full-attention
 * layer's gate interleaved per head in attn_q, q/k norms, RoPE over 4 of
 * 16 dims; a sigmoid-gated shared expert beside 8 routed experts in every
 * layer) written as GGUF with llama.cpp's names and keys, imported,
 * compiled to an f32 bundle and run by the executor against the float64
 * reference loaded from the imported IR:
 *
 *  - the import: block kinds, shapes and the split q / gate;
 *  - the schedule of a DeltaNet block (RMSNORM, LINEAR q|k|v z b, LINEAR a,
 *    DELTANET, HEAD_NORM, GLU, LINEAR, ADD) and of the gated shared expert;
 *  - cpu (reference and generated kernels) and sim (everything resident,
 *    and a budget with a few expert slots, the rest to the CPU): a 20-token prompt's
 *    logits within 1e-4 (normalized error) with the same argmax, 32 greedy
 *    tokens equal; the reference with the value heads grouped instead of
 *    tiled, and without the shared expert's gate, is far from it (the
 *    two layout facts this import depends on);
 *  - prefill in chunks of 1, 7 and 64 tokens (a 70-token prompt): the
 *    same logits bit for bit on the reference kernels, and the same
 *    greedy continuation; on the generated kernels (the module's DeltaNet
 *    recurrence, kernel ABI 4, for every step) the same tokens, the logits
 *    within 1e-4 of the reference kernels';
 *  - the recurrent state: rewinding to 0 starts over (the same logits
 *    again), a rewind into the middle is refused naming the recurrent
 *    layers;
 *  - hostile files: a missing ssm tensor, a bad ssm.inner_size, a too
 *    short conv, a layer pattern that leaves attn_q's gate rows unread;
 *  - Qwen3-Next (qwen3next): the same model written with fused ssm_in /
 *    ssm_ba and grouped value heads imports to the same reference and runs
 *    to the Qwen3.5 reference on cpu and sim;
 *  - the cuda backend through the fake driver (the DeltaNet kernels, the
 *    state in device memory) within the same tolerance with the same
 *    greedy tokens, Qwen3.5 and Qwen3-Next; never run on a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cuda_codegen.h"
#include "cuda_test_skip.h"
#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"
#include "model_registry.h"

#include "../../runtime/format/bundle.h"
#include "ft_kernel_abi.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_Q35_TOL 1e-4
#define FT_Q35_SMALL_VRAM (2300ull << 10) /* dense weights, KV, scratch and a few experts */
#define FT_Q35_CUDA_SMALL_VRAM (2900ull << 10) /* the cuda backend: its buffers too */
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 128, N_LONG = 70, N_CONT = 16 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};

static char g_dir[4096], g_bundle[4096], g_hw[4096];
static char g_next_dir[4096], g_next_bundle[4096]; /* the Qwen3-Next file of the same model */
static ft_ref_greedy_t g_ref;

static void q35_opts(ft_fixture_opts_t *o)
{
    ft_fixture_opts_init(o);
    o->arch = FT_FIXTURE_QWEN35MOE;
    o->name = "freetoken-fixture-qwen35moe";
    o->n_layers = 4;
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    q35_opts(&o);
    snprintf(g_dir, sizeof(g_dir), "%s/gguf", ft_test_tmpdir("qwen35moe_run"));
    ft_status_t st =
        ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir, g_bundle, sizeof(g_bundle));
    if (st) {
        fprintf(stderr, "building the qwen35moe bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    o.arch = FT_FIXTURE_QWEN3NEXT;
    o.name = "freetoken-fixture-qwen3next";
    snprintf(g_next_dir, sizeof(g_next_dir), "%s/next", ft_test_tmpdir("qwen35moe_run"));
    st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_next_dir, g_next_bundle,
                             sizeof(g_next_bundle));
    if (st) {
        fprintf(stderr, "building the qwen3next bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ft_ref_greedy_free(&g_ref);
    return 0;
}

static ft_src_model_t *source(void)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src, &s));
    return s;
}

static ft_ir_model_t *import_from(const char *dir)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    return ir;
}

static ft_ir_model_t *import(void)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    return ir;
}

static void test_import(void **state)
{
    (void)state;
    ft_ir_model_t *m = import();
    assert_int_equal(m->hp.arch, FT_ARCH_QWEN35MOE);
    assert_int_equal(m->hp.n_layers, 4);
    assert_int_equal(m->hp.rope, FT_ROPE_NEOX);
    assert_int_equal(m->hp.rope_dim, 4); /* a quarter of head_dim 16 */
    assert_false(m->hp.tie_embeddings);
    for (uint32_t l = 0; l < 4; l++) {
        const ft_ir_block_t *b = &m->blocks[l];
        assert_true(b->is_moe);
        assert_true(b->moe.shared_gate);
        assert_int_equal(b->moe.n_shared_experts, 1);
        assert_int_equal(b->moe.shared_ffn, 32);
        assert_true(b->moe.norm_topk_prob);
        const ft_ir_tensor_t *g = ft_ir_find(m, FT_ROLE_FFN_GATE_INP_SHEXP, (int32_t)l);
        assert_non_null(g);
        assert_int_equal(g->n_dims, 2);
        assert_int_equal(g->shape[0], 1);
        assert_int_equal(g->shape[1], 64);
        if (l < 3) {
            assert_int_equal(b->attn.kind, FT_ATTN_GATED_DELTANET);
            assert_int_equal(b->attn.n_heads, 4);
            assert_int_equal(b->attn.n_kv_heads, 2);
            assert_int_equal(b->attn.head_dim, 16);
            assert_int_equal(b->attn.conv_kernel, 4);
            assert_true(b->attn.heads_tiled);
            assert_null(ft_ir_find(m, FT_ROLE_ATTN_Q, (int32_t)l));
            const ft_ir_tensor_t *qkv = ft_ir_find(m, FT_ROLE_SSM_QKV, (int32_t)l);
            assert_non_null(qkv);
            assert_int_equal(qkv->shape[0], (2 * 2 + 4) * 16);
            assert_non_null(ft_ir_find(m, FT_ROLE_SSM_A, (int32_t)l));
        } else {
            assert_int_equal(b->attn.kind, FT_ATTN_GQA);
            assert_true(b->attn.qk_norm);
            assert_true(b->attn.has_out_gate);
            const ft_ir_tensor_t *q = ft_ir_find(m, FT_ROLE_ATTN_Q, (int32_t)l);
            const ft_ir_tensor_t *gate = ft_ir_find(m, FT_ROLE_ATTN_GATE, (int32_t)l);
            assert_non_null(q);
            assert_non_null(gate);
            assert_int_equal(q->shape[0], 4 * 16);
            assert_int_equal(q->n_pieces, 4); /* one per head: its rows before its gate's */
            assert_int_equal(gate->pieces[0].offset, q->pieces[0].offset + q->pieces[0].n_bytes);
        }
    }
    ft_ir_model_destroy(m);
}

static void test_schedule(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_bundle, &b));
    const Ftplan__BlockOps *blk = b->plan->schedule->blocks[0];
    static const int mixer[] = {FTPLAN__OP_KIND__OP_RMSNORM,   FTPLAN__OP_KIND__OP_LINEAR,
                                FTPLAN__OP_KIND__OP_LINEAR,    FTPLAN__OP_KIND__OP_DELTANET,
                                FTPLAN__OP_KIND__OP_HEAD_NORM, FTPLAN__OP_KIND__OP_GLU,
                                FTPLAN__OP_KIND__OP_LINEAR,    FTPLAN__OP_KIND__OP_ADD};
    assert_true(blk->n_ops > 8);
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(blk->ops[i]->kind, mixer[i]);
    const Ftplan__Op *dn = blk->ops[3];
    assert_int_equal(dn->conv_kernel, 4);
    assert_true(dn->heads_tiled);
    assert_int_equal(b->plan->tensors[dn->weights[0]]->role, FTPLAN__TENSOR_ROLE__ROLE_SSM_CONV);
    assert_int_equal(b->plan->tensors[dn->weights[2]]->role, FTPLAN__TENSOR_ROLE__ROLE_SSM_A);
    assert_int_equal(b->plan->blocks[0]->attn->kind, FTPLAN__ATTN_KIND__ATTN_GATED_DELTANET);
    /* the generated recurrence for the layer's shape (kernel ABI 4) */
    int dn_kernels = 0;
    for (size_t i = 0; b->plan->cpu_module && i < b->plan->cpu_module->n_kernels; i++) {
        const Ftplan__CpuKernel *k = b->plan->cpu_module->kernels[i];
        if (k->op != FT_KABI_OP_DELTANET) continue;
        dn_kernels++;
        assert_int_equal(k->rows, 4);
        assert_int_equal(k->cols, 16);
        assert_int_equal(k->key_heads, 2 | FT_KABI_DELTANET_TILED);
    }
    assert_int_equal(dn_kernels, 1);
    /* the shared expert's gate: a one-row LINEAR and the one-float GLU on its output */
    int gated = 0;
    for (size_t i = 0; i + 1 < blk->n_ops; i++) {
        const Ftplan__Op *op = blk->ops[i], *next = blk->ops[i + 1];
        if (op->kind == FTPLAN__OP_KIND__OP_LINEAR &&
            b->plan->tensors[op->weights[0]]->role ==
                FTPLAN__TENSOR_ROLE__ROLE_FFN_GATE_INP_SHEXP) {
            assert_int_equal(next->kind, FTPLAN__OP_KIND__OP_GLU);
            assert_int_equal(next->act, FTPLAN__ACTIVATION__ACT_SIGMOID);
            assert_int_equal(next->inputs[0], op->outputs[0]);
            assert_int_equal(next->outputs[0], next->inputs[1]);
            gated = 1;
        }
    }
    assert_true(gated);
    ft_bundle_close(b);
}

static void reference(void)
{
    ft_ir_model_t *ir = import();
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    assert_true(m->layers[0].deltanet);
    assert_false(m->layers[3].deltanet);
    assert_non_null(m->layers[3].w_gate);
    assert_non_null(m->layers[0].sh_gate_inp);
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, N_GEN, N_CTX, &g_ref));
    /* The layout facts the import depends on change the logits: value
     * heads grouped instead of tiled, the shared expert ungated. */
    ft_ref_greedy_t other;
    for (uint32_t l = 0; l < 3; l++)
        m->layers[l].heads_tiled = 0;
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, 1, N_CTX, &other));
    const double grouped = ft_ref_greedy_apart(&other, &g_ref);
    ft_ref_greedy_free(&other);
    for (uint32_t l = 0; l < 3; l++)
        m->layers[l].heads_tiled = 1;
    double *sg[4];
    for (uint32_t l = 0; l < 4; l++) {
        sg[l] = m->layers[l].sh_gate_inp;
        m->layers[l].sh_gate_inp = NULL;
    }
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, 1, N_CTX, &other));
    const double ungated = ft_ref_greedy_apart(&other, &g_ref);
    ft_ref_greedy_free(&other);
    for (uint32_t l = 0; l < 4; l++)
        m->layers[l].sh_gate_inp = sg[l];
    print_message("reference: grouped heads %.3g apart, ungated shared expert %.3g apart\n",
                  grouped, ungated);
    assert_true(grouped > 100 * FT_Q35_TOL);
    assert_true(ungated > 100 * FT_Q35_TOL);
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void test_matches_reference(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    static const struct {
        ft_backend_kind_t backend;
        int kernels;
        const char *name;
    } cases[] = {
        {FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "qwen35moe cpu reference"},
        {FT_BACKEND_CPU, FT_KERNELS_GENERATED, "qwen35moe cpu generated"},
        {FT_BACKEND_SIM, FT_KERNELS_REFERENCE, "qwen35moe sim reference"},
        {FT_BACKEND_SIM, FT_KERNELS_GENERATED, "qwen35moe sim generated"},
    };
    float *first = NULL;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ft_engine_options_t eo;
        ft_engine_options_init(&eo);
        eo.backend = cases[c].backend;
        eo.kernels = cases[c].kernels;
        if (eo.backend == FT_BACKEND_SIM) {
            eo.hw_profile = g_hw;
            eo.vram_bytes = 64ull << 20;
            eo.plan_ctx = N_CTX;
        }
        float *prompt = ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_Q35_TOL,
                                             cases[c].name, 1);
        if (c == 0) {
            first = prompt;
            continue;
        }
        if (cases[c].kernels == FT_KERNELS_REFERENCE) /* the sim computes as the cpu backend */
            assert_memory_equal(prompt, first, sizeof(float) * N_PROMPT * g_ref.vocab);
        free(prompt);
    }
    free(first);
}

/* The sim with too little VRAM for every expert: the MoE goes through the
 * expert cache and q* dispatch beside the DeltaNet layers' state, and the
 * logits stay the reference's. */
static void test_sim_offload(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.kernels = FT_KERNELS_GENERATED;
    eo.hw_profile = g_hw;
    eo.vram_bytes = FT_Q35_SMALL_VRAM;
    eo.plan_ctx = N_CTX;
    free(ft_ref_expect_greedy(g_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_Q35_TOL,
                              "qwen35moe sim, few slots", 0));
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(g_bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, NULL));
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    print_message("sim %.0f KiB: %u slots, %llu hits, %llu misses (%llu to the CPU)\n",
                  FT_Q35_SMALL_VRAM / 1024.0, es.n_slots, (unsigned long long)es.expert_hits,
                  (unsigned long long)es.expert_misses, (unsigned long long)es.misses_to_cpu);
    assert_true(es.n_slots > 0);
    assert_true(es.expert_misses > 0);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static ft_engine_t *open_cpu_kernels(int kernels)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CPU;
    eo.kernels = kernels;
    ft_engine_t *e = NULL;
    FT_REF_OK(ft_engine_open(g_bundle, &eo, &e));
    return e;
}

static ft_engine_t *open_cpu(void)
{
    return open_cpu_kernels(FT_KERNELS_REFERENCE);
}

static ft_session_t *new_session(ft_engine_t *e)
{
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = N_CTX;
    ft_session_t *s = NULL;
    FT_REF_OK(ft_session_create(e, &so, &s));
    return s;
}

static int32_t argmax(const float *x, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return (int32_t)best;
}

/* The long prompt in chunks of `chunk`, then N_CONT greedy tokens: the
 * last prompt position's logits into last, the tokens into cont. */
static void run_chunked(ft_engine_t *e, const int32_t *prompt, uint32_t chunk, float *last,
                        int32_t *cont, uint32_t vocab)
{
    ft_session_t *s = new_session(e);
    for (uint32_t at = 0; at < N_LONG; at += chunk) {
        const uint32_t n = N_LONG - at < chunk ? N_LONG - at : chunk;
        FT_REF_OK(ft_session_eval(s, prompt + at, n, NULL));
    }
    memcpy(last, ft_session_logits(s), vocab * sizeof(float));
    for (uint32_t i = 0; i < N_CONT; i++) {
        cont[i] = argmax(ft_session_logits(s), vocab);
        FT_REF_OK(ft_session_eval(s, &cont[i], 1, NULL));
    }
    ft_session_destroy(s);
}

static void test_chunked_prefill(void **state)
{
    (void)state;
    ft_engine_t *e = open_cpu();
    const uint32_t V = ft_engine_info(e)->vocab_size;
    int32_t prompt[N_LONG];
    for (uint32_t i = 0; i < N_LONG; i++)
        prompt[i] = (int32_t)((i * 37u + 11u) % V);
    static const uint32_t chunks[] = {1, 7, 64};
    float *last[3];
    int32_t cont[3][N_CONT];
    for (int c = 0; c < 3; c++) {
        last[c] = malloc(V * sizeof(float));
        assert_non_null(last[c]);
        run_chunked(e, prompt, chunks[c], last[c], cont[c], V);
    }
    for (int c = 1; c < 3; c++) {
        assert_memory_equal(last[c], last[0], V * sizeof(float));
        assert_memory_equal(cont[c], cont[0], sizeof(cont[0]));
    }
    print_message("chunks of 1, 7 and 64: the same logits and %u greedy tokens (first %d)\n",
                  N_CONT, cont[0][0]);
    ft_engine_close(e);
    /* The generated kernels: every step runs the module's DeltaNet
     * recurrence (kernel ABI 4), the heads on the pool; the same greedy
     * tokens, the logits within the tolerance of the reference kernels'. */
    e = open_cpu_kernels(FT_KERNELS_GENERATED);
    for (int c = 0; c < 3; c++) {
        float *gen = malloc(V * sizeof(float));
        int32_t gcont[N_CONT];
        assert_non_null(gen);
        run_chunked(e, prompt, chunks[c], gen, gcont, V);
        double d = 0.0, mx = 0.0;
        for (uint32_t i = 0; i < V; i++) {
            d = fmax(d, fabs((double)gen[i] - last[0][i]));
            mx = fmax(mx, fabs((double)last[0][i]));
        }
        print_message("generated kernels, chunks of %u: %.3g from the reference kernels' logits\n",
                      chunks[c], d / mx);
        assert_true(d / mx <= FT_Q35_TOL);
        assert_memory_equal(gcont, cont[0], sizeof(gcont));
        free(gen);
    }
    ft_engine_close(e);
    for (int c = 0; c < 3; c++)
        free(last[c]);
}

static void test_rewind(void **state)
{
    (void)state;
    ft_engine_t *e = open_cpu();
    const uint32_t V = ft_engine_info(e)->vocab_size;
    ft_session_t *s = new_session(e);
    float *a = malloc(V * sizeof(float));
    assert_non_null(a);
    FT_REF_OK(ft_session_eval(s, k_prompt, 10, NULL));
    memcpy(a, ft_session_logits(s), V * sizeof(float));
    ft_status_t st = ft_session_rewind(s, 5);
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_int_equal(ft_status_code(st), FT_STATUS_UNSUPPORTED);
    assert_non_null(strstr(ft_status_message(st), "recurrent"));
    ft_status_free(st);
    assert_int_equal(ft_session_n_past(s), 10);
    FT_REF_OK(ft_session_rewind(s, 10)); /* a rewind to where it is: nothing to cut */
    FT_REF_OK(ft_session_eval(s, k_prompt + 10, 3, NULL));
    FT_REF_OK(ft_session_rewind(s, 0)); /* starts over: the state is zero again */
    FT_REF_OK(ft_session_eval(s, k_prompt, 10, NULL));
    assert_memory_equal(ft_session_logits(s), a, V * sizeof(float));
    free(a);
    ft_session_destroy(s);
    ft_engine_close(e);
}

static void expect_refused(ft_src_model_t *src, ft_status_code_t code, const char *needle);

/* Qwen3-Next: the same model in its own layout (fused ssm_in / ssm_ba per
 * key head, grouped value heads; model_gen_qwen35.c fills it from the
 * Qwen3.5 file's tensors): its import splits the fused tensors into the
 * same roles, its reference equals the Qwen3.5 one, and its bundle runs to
 * the Qwen3.5 reference on cpu and sim. */
static void test_qwen3next(void **state)
{
    (void)state;
    if (!g_ref.vocab) reference();
    ft_ir_model_t *m = import_from(g_next_dir);
    assert_int_equal(m->hp.arch, FT_ARCH_QWEN3NEXT);
    for (uint32_t l = 0; l < 4; l++)
        assert_int_equal(m->blocks[l].attn.kind, l < 3 ? FT_ATTN_GATED_DELTANET : FT_ATTN_GQA);
    assert_false(m->blocks[0].attn.heads_tiled);
    const ft_ir_tensor_t *qkv = ft_ir_find(m, FT_ROLE_SSM_QKV, 0),
                         *z = ft_ir_find(m, FT_ROLE_ATTN_GATE, 0);
    const ft_ir_tensor_t *beta = ft_ir_find(m, FT_ROLE_SSM_BETA, 0);
    assert_int_equal(qkv->n_pieces, 3 * 2); /* q, k and v of each of the 2 key heads */
    assert_int_equal(qkv->shape[0], (2 * 2 + 4) * 16);
    assert_int_equal(z->n_pieces, 2);
    assert_int_equal(beta->n_pieces, 2);
    assert_int_equal(beta->shape[0], 4);
    ft_ref_model_t *rm;
    FT_REF_OK(ft_ref_model_from_ir(m, &rm));
    ft_ref_greedy_t next;
    FT_REF_OK(ft_ref_greedy_reference(rm, k_prompt, N_PROMPT, N_GEN, N_CTX, &next));
    const double apart = ft_ref_greedy_apart(&next, &g_ref);
    print_message("qwen3next reference vs qwen35moe reference: %.3g apart\n", apart);
    assert_true(apart >= 0.0 && apart < 1e-6);
    assert_memory_equal(next.tokens, g_ref.tokens, N_GEN * sizeof(int32_t));
    ft_ref_greedy_free(&next);
    ft_ref_model_free(rm);
    ft_ir_model_destroy(m);
    /* the fused tensors' shapes and presence are checked */
    char src_path[4200];
    snprintf(src_path, sizeof(src_path), "%s/model.gguf", g_next_dir);
    ft_src_model_t *s = NULL;
    FT_REF_OK(ft_import_source(src_path, &s));
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.2.ssm_ba.weight"))->name = "blk.2.ssm_ab.weight";
    expect_refused(s, FT_STATUS_FORMAT, "blk.2.ssm_ba.weight");
    s = NULL;
    FT_REF_OK(ft_import_source(src_path, &s));
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.0.ssm_in.weight"))->shape[0] -= 1;
    expect_refused(s, FT_STATUS_FORMAT, "blk.0.ssm_in.weight");
    static const struct {
        ft_backend_kind_t backend;
        int kernels;
        const char *name;
    } cases[] = {
        {FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "qwen3next cpu reference"},
        {FT_BACKEND_CPU, FT_KERNELS_GENERATED, "qwen3next cpu generated"},
        {FT_BACKEND_SIM, FT_KERNELS_GENERATED, "qwen3next sim generated"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ft_engine_options_t eo;
        ft_engine_options_init(&eo);
        eo.backend = cases[c].backend;
        eo.kernels = cases[c].kernels;
        if (eo.backend == FT_BACKEND_SIM) {
            eo.hw_profile = g_hw;
            eo.vram_bytes = 64ull << 20;
            eo.plan_ctx = N_CTX;
        }
        free(ft_ref_expect_greedy(g_next_bundle, &eo, N_CTX, k_prompt, &g_ref, FT_Q35_TOL,
                                  cases[c].name, 0));
    }
}

/* The cuda backend through the fake driver (which emulates each kernel
 * as the GPU would compute it: f32 sums, the kernels' orders): the
 * DeltaNet kernels (templates/deltanet.cuh, token by token, the state in
 * device memory per session), the shared expert's gate, on Qwen3.5's tiled
 * heads and Qwen3-Next's grouped ones, within the same tolerance of the
 * reference with the same greedy tokens (a prompt, then decode steps
 * replayed as graphs), everything resident and with experts through
 * slots and the CPU; a second prompt in the same session after a rewind
 * to 0 gives the first's logits (the state starts over). Not run on a
 * GPU. */
static void test_cuda(void **state)
{
    (void)state;
    void *fake = dlopen(FT_CUDA_FAKE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (fake) dlclose(fake);
    if (!fake || !ft_cg_cuda_nvrtc_available())
        FT_CUDA_TEST_SKIP(fake ? "no NVRTC" : "the fake CUDA driver does not load");
    setenv("FT_CUDA_LIB", FT_CUDA_FAKE_LIB, 1);
    setenv("FT_CUDA_FAKE_VRAM", "536870912", 1);
    if (!g_ref.vocab) reference();
    for (int next = 0; next < 2; next++) {
        char src[4200], bundle[4300];
        snprintf(src, sizeof(src), "%s/model.gguf", next ? g_next_dir : g_dir);
        snprintf(bundle, sizeof(bundle), "%s/bundle-cuda", next ? g_next_dir : g_dir);
        FT_REF_OK(ft_ref_build_cuda_bundle(src, bundle));
        ft_ref_expect_cuda_runs(bundle, N_CTX, k_prompt, &g_ref, FT_Q35_TOL, g_hw,
                                next ? 0 : FT_Q35_CUDA_SMALL_VRAM, next ? "qwen3next" : "qwen35moe");
        if (next) continue;
        ft_engine_options_t eo;
        ft_engine_options_init(&eo);
        eo.backend = FT_BACKEND_CUDA;
        eo.vram_bytes = 64ull << 20;
        eo.plan_ctx = N_CTX;
        ft_engine_t *e = NULL;
        FT_REF_OK(ft_engine_open(bundle, &eo, &e));
        ft_session_options_t so;
        ft_session_options_init(&so);
        so.n_ctx = N_CTX;
        ft_session_t *s = NULL;
        FT_REF_OK(ft_session_create(e, &so, &s));
        /* device KV only for the one full-attention block (2 KV heads of 16, f32, K and V) */
        assert_int_equal(ft_session_kv_bytes(s), 2ull * N_CTX * 2 * 16 * 4);
        const uint32_t V = ft_engine_info(e)->vocab_size;
        float *a = malloc(sizeof(float) * N_PROMPT * V), *b = malloc(sizeof(float) * N_PROMPT * V);
        assert_non_null(a);
        assert_non_null(b);
        FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, a));
        FT_REF_OK(ft_session_rewind(s, 0));
        FT_REF_OK(ft_session_eval(s, k_prompt, N_PROMPT, b));
        assert_memory_equal(a, b, sizeof(float) * N_PROMPT * V);
        free(a);
        free(b);
        ft_session_destroy(s);
        ft_engine_close(e);
    }
}

static void expect_refused(ft_src_model_t *src, ft_status_code_t code, const char *needle)
{
    ft_ir_model_t *m = NULL;
    ft_status_t st = ft_model_build_ir(src, &m);
    assert_null(m);
    if (!st) fail_msg("expected an error containing '%s'", needle);
    print_message("refused: %s\n", ft_status_message(st));
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle))
        fail_msg("got [%s] %s; wanted [%s] containing '%s'",
                 ft_status_code_name(ft_status_code(st)), ft_status_message(st),
                 ft_status_code_name(code), needle);
    ft_status_free(st);
    ft_src_model_destroy(src);
}

static void test_hostile(void **state)
{
    (void)state;
    ft_src_model_t *s = source();
    ((ft_src_tensor_t *)ft_src_find_tensor(s, "blk.1.ssm_a"))->name = "blk.1.ssm_b";
    expect_refused(s, FT_STATUS_FORMAT, "blk.1.ssm_a");
    s = source();
    assert_null(ft_meta_add_int(&s->meta, "qwen35moe.ssm.inner_size", 65));
    expect_refused(s, FT_STATUS_FORMAT, "ssm.inner_size");
    s = source();
    assert_null(ft_meta_add_int(&s->meta, "qwen35moe.ssm.conv_kernel", 1));
    expect_refused(s, FT_STATUS_OUT_OF_RANGE, "ssm.conv_kernel");
    s = source(); /* the full-attention layer's q without its gate rows */
    assert_null(ft_meta_add_int(&s->meta, "qwen35moe.full_attention_interval", 2));
    expect_refused(s, FT_STATUS_FORMAT, "blk.1.attn_q.weight");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import),
        cmocka_unit_test(test_schedule),
        cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_sim_offload),
        cmocka_unit_test(test_chunked_prefill),
        cmocka_unit_test(test_rewind),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_qwen3next),
        cmocka_unit_test(test_cuda),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
