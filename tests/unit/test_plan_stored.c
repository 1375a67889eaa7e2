/* The plan is authoritative (DESIGN.md section 4, issue 9 item 3): a bundle
 * compiled for a machine and a VRAM budget opens on the sim backend with
 * the partition, slots, q* table and streaming threshold stored in its
 * plan, not solved again; a different budget, a longer context or another
 * machine solves again and says why in one line; a re-plan always solves.
 * The compile and the runtime size everything from the one description
 * (ft_plan_model_from_plan), with the plan's KV format (f32). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compile.h"
#include "exec/engine_internal.h"
#include "import.h"
#include "model_gen.h"
#include "moe/offload_internal.h"
#include "plan/from_plan.h"
#include "plan/hw_profile.h"
#include "test_tmp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char g_hw_bundle[4096], g_plain_bundle[4096];
static const char *g_laptop = FT_SOURCE_DIR "/hwprofiles/presets/rtx4060_laptop.textproto";
static const char *g_slowcpu = FT_SOURCE_DIR "/tests/data/slow_cpu_fast_pcie.textproto";
/* The tiny model's budget with a few of its 16 expert blobs in slots, and
 * one with room for more. */
static const uint64_t g_compiled = 2250ull << 10, g_other = 2400ull << 10;
#define COMPILED_CTX 64u

static ft_status_t build(const char *dir, const Fthw__Profile *hw, const char *name, char *out, size_t cap)
{
    char src[4096];
    snprintf(src, sizeof(src), "%s/model.gguf", dir);
    snprintf(out, cap, "%s/%s", dir, name);
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    o.seed = 5;
    o.format = FT_DTYPE_Q8_0;
    ft_status_t st = ft_fixture_write_gguf(&o, src);
    ft_ir_model_t *m = NULL;
    if (!st)
        st = ft_import_model(src, &m);
    if (st)
        return st;
    ft_compile_options_t co;
    ft_compile_options_init(&co);
    co.hw_profile = hw;
    if (hw) {
        co.budget.vram_bytes = g_compiled;
        co.budget.ctx = COMPILED_CTX;
    }
    st = ft_compile_bundle(m, &co, out);
    ft_ir_model_destroy(m);
    return st;
}

static int setup(void **state)
{
    (void)state;
    const char *dir = ft_test_tmpdir("plan_stored");
    mkdir(dir, 0755);
    Fthw__Profile *hw = NULL;
    ft_status_t st = ft_hw_profile_load(g_laptop, &hw);
    if (!st)
        st = build(dir, hw, "bundle-hw", g_hw_bundle, sizeof(g_hw_bundle));
    if (!st)
        st = build(dir, NULL, "bundle-plain", g_plain_bundle, sizeof(g_plain_bundle));
    if (hw)
        fthw__profile__free_unpacked(hw, NULL);
    if (st) {
        fprintf(stderr, "%s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static ft_engine_t *open_sim(const char *bundle, const char *hw, uint64_t vram, uint32_t ctx)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_SIM;
    eo.hw_profile = hw;
    eo.vram_bytes = vram;
    eo.plan_ctx = ctx;
    ft_engine_t *e = NULL;
    ft_status_t st = ft_engine_open(bundle, &eo, &e);
    if (st)
        fail_msg("open %s: %s", bundle, ft_status_message(st));
    return e;
}

/* The partition in force is the plan's, field for field. */
static void expect_stored(const ft_engine_t *e)
{
    const Ftplan__Partition *p = e->bundle->plan->partition;
    const ft_plan_result_t *r = ft_offload_plan(e->offload);
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    assert_int_equal(s.plan_stored, 1);
    assert_string_equal(s.plan_note, "");
    assert_int_equal(s.n_slots, p->n_slots + p->n_pinned);
    assert_int_equal(r->n_slots, p->n_slots);
    assert_int_equal(r->vram_slots, p->vram_slots);
    assert_int_equal(r->vram_kv, p->vram_kv);
    assert_int_equal(r->prefill_stream_tokens, p->prefill_stream_tokens);
    assert_int_equal(r->n_buckets, p->n_bucket_tokens);
    assert_int_equal(p->n_qstar, (size_t)e->bundle->plan->hparams->n_layers * p->n_bucket_tokens);
    assert_memory_equal(r->qstar, p->qstar, p->n_qstar * sizeof(float));
    assert_memory_equal(r->bucket_tokens, p->bucket_tokens, p->n_bucket_tokens * sizeof(uint32_t));
    assert_true(s.predicted_decode_tok_s == p->predicted_decode_tok_s);
}

/* Solved at open: one line (no newline) that starts as `head` and names
 * each of the words. */
static void expect_solved(const ft_engine_t *e, const char *head, const char *word1, const char *word2)
{
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    assert_int_equal(s.plan_stored, 0);
    assert_non_null(s.plan_note);
    if (strncmp(s.plan_note, head, strlen(head)) != 0 || strchr(s.plan_note, '\n') ||
        (word1 && !strstr(s.plan_note, word1)) || (word2 && !strstr(s.plan_note, word2)))
        fail_msg("plan note '%s': expected '%s...' naming '%s' and '%s'", s.plan_note, head, word1 ? word1 : "",
                 word2 ? word2 : "");
}

static void test_compiled_budget_takes_the_stored_plan(void **state)
{
    (void)state;
    /* The compiled budget by default, and given explicitly; a shorter
     * context than the compiled one is served by its KV reservation. */
    const uint64_t vrams[] = {0, g_compiled, g_compiled};
    const uint32_t ctxs[] = {0, COMPILED_CTX, 25};
    for (int i = 0; i < 3; i++) {
        ft_engine_t *e = open_sim(g_hw_bundle, NULL, vrams[i], ctxs[i]);
        expect_stored(e);
        ft_engine_stats_t s;
        ft_engine_stats(e, &s);
        assert_int_equal(s.vram_bytes, g_compiled);
        ft_engine_close(e);
    }
    /* The same profile named explicitly is the same machine. */
    ft_engine_t *e = open_sim(g_hw_bundle, g_laptop, g_compiled, COMPILED_CTX);
    expect_stored(e);
    ft_engine_close(e);
}

static void test_other_budget_solves_again(void **state)
{
    (void)state;
    ft_engine_t *e = open_sim(g_hw_bundle, NULL, g_other, 0);
    expect_solved(e, "plan: solved again for 2.3 MiB of VRAM", "compiled for 2.2 MiB", NULL);
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    assert_int_equal(s.vram_bytes, g_other);
    /* What was solved is the planner's answer for that budget. */
    const ft_plan_result_t *r = ft_offload_plan(e->offload);
    assert_int_equal(r->vram_budget, g_other);
    assert_true(s.n_slots > e->bundle->plan->partition->n_slots);
    ft_engine_close(e);

    e = open_sim(g_hw_bundle, NULL, 0, 4 * COMPILED_CTX);
    expect_solved(e, "plan: solved again for ", "256 tokens of context (compiled for 64)", NULL);
    ft_engine_close(e);

    e = open_sim(g_hw_bundle, g_slowcpu, g_compiled, COMPILED_CTX);
    expect_solved(e, "plan: solved again for ", "another machine", "RTX 4060");
    ft_engine_close(e);

    /* Without a stored partition it is solved at open, as the only way,
     * and there is no compiled budget to report a difference from. */
    e = open_sim(g_plain_bundle, g_laptop, g_compiled, COMPILED_CTX);
    ft_engine_stats(e, &s);
    assert_int_equal(s.plan_stored, 0);
    assert_string_equal(s.plan_note, "");
    assert_int_equal(ft_offload_plan(e->offload)->vram_budget, g_compiled);
    ft_engine_close(e);
}

/* A re-plan solves for its budget, and going back to the compiled budget
 * solves too (it is a re-plan, not an open). */
static void test_replan_solves(void **state)
{
    (void)state;
    ft_engine_t *e = open_sim(g_hw_bundle, NULL, 0, 0);
    expect_stored(e);
    assert_null(ft_engine_replan(e, g_other));
    ft_engine_stats_t s;
    ft_engine_stats(e, &s);
    assert_int_equal(s.plan_stored, 0);
    assert_int_equal(s.vram_bytes, g_other);
    assert_null(ft_engine_replan(e, g_compiled));
    ft_engine_stats(e, &s);
    assert_int_equal(s.plan_stored, 0);
    assert_int_equal(s.n_slots, e->bundle->plan->partition->n_slots + e->bundle->plan->partition->n_pinned);
    ft_engine_close(e);
}

/* One description: KV is sized in the plan's element type (f16, ftc's
 * default, which the runtime stores), experts by their FTW blobs; the
 * stored KV region is ctx tokens of it, and a session of ctx tokens holds
 * exactly that many KV bytes. */
static void test_one_description(void **state)
{
    (void)state;
    ft_engine_t *e = open_sim(g_hw_bundle, NULL, 0, 0);
    const Ftplan__Plan *plan = e->bundle->plan;
    assert_int_equal(plan->kv_format, FTPLAN__WEIGHT_FORMAT__WF_F16);
    assert_int_equal(ft_plan_kv_dtype(plan), FT_DTYPE_F16);
    ft_plan_model_t *pm = NULL;
    assert_null(ft_plan_model_from_plan(plan, "test", NULL, &pm));
    uint64_t kv = 0;
    for (uint32_t l = 0; l < pm->n_layers; l++) {
        const Ftplan__Attention *a = plan->blocks[l]->attn;
        assert_int_equal(pm->layers[l].kv_bytes_per_token, 2ull * a->n_kv_heads * a->head_dim * 2);
        assert_int_equal(pm->layers[l].expert_bytes, e->offload->L[l].blob_stride);
        assert_int_equal(pm->layers[l].expert_bytes % 4096, 0);
        kv += pm->layers[l].kv_bytes_per_token;
    }
    assert_int_equal(plan->partition->vram_kv, kv * COMPILED_CTX);
    assert_int_equal(plan->partition->slot_bytes, e->offload->slot_bytes);
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = COMPILED_CTX;
    ft_session_t *s = NULL;
    assert_null(ft_session_create(e, &so, &s));
    /* The session's KV is pages of the pool: 16 positions of the plan's
     * per-token KV each. */
    ft_engine_stats_t es;
    ft_engine_stats(e, &es);
    assert_int_equal(es.kv_page_bytes, kv * es.kv_page_tokens);
    ft_session_destroy(s);
    ft_plan_model_free(pm, NULL);
    ft_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compiled_budget_takes_the_stored_plan),
        cmocka_unit_test(test_other_budget_solves_again),
        cmocka_unit_test(test_replan_solves),
        cmocka_unit_test(test_one_description),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
