/* The ROUTER op's variants as schedule parameters: sigmoid scores,
 * group-limited choice (DeepSeek-V3's: experts in equal groups, each group
 * scored by the sum of its two best scores, the choice among the best
 * groups) and a scale on the chosen weights. The tiny Qwen3-MoE fixture's
 * plan is rewritten with every ROUTER op sigmoid-scored, its 8 experts in
 * 4 groups of which 2 are used, and weights times 2.5; the executor runs it
 * on the cpu backend (reference and generated kernels: the plan's fused
 * router is for plain softmax routers, so both take the generic path) and
 * the sim, against the float64 reference with the same router:
 *
 *  - a 20-token prompt's logits within 1e-4 (normalized error; f32 weights,
 *    as test_forward_f32.c) with the same argmax at every position, and far
 *    from the plain router's logits (the variant is what ran);
 *  - 32 greedy tokens, one a call, equal to the reference's;
 *  - the plan validator refuses groups that do not divide the experts or
 *    cannot hold the experts chosen, naming the op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_forward.h"
#include "ref_greedy_check.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include "import.h"
#include "ir.h"

#include "../../runtime/format/bundle.h"
#include "../../runtime/format/plan_file.h"
#include "../../runtime/format/plan_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FT_ROUTER_TOL 1e-4
enum { N_PROMPT = 20, N_GEN = 32, N_CTX = 64 };
static const int32_t k_prompt[N_PROMPT] = {17,  300, 5,   5,   120, 77, 562, 0,  42, 9,
                                           256, 31,  400, 401, 2,   88, 199, 17, 17, 500};
enum { N_GROUPS = 4, N_GROUPS_USED = 2 };
#define SCALE 2.5f

static char g_dir[4096], g_plain[4096], g_variant[4200], g_hw[4096];

/* Every ROUTER op of plan p made the variant. */
static void make_variant(Ftplan__Plan *p)
{
    for (size_t l = 0; l < p->schedule->n_blocks; l++)
        for (size_t i = 0; i < p->schedule->blocks[l]->n_ops; i++) {
            Ftplan__Op *op = p->schedule->blocks[l]->ops[i];
            if (op->kind != FTPLAN__OP_KIND__OP_ROUTER)
                continue;
            op->scoring = FTPLAN__ROUTER_SCORING__ROUTER_SIGMOID;
            op->n_groups = N_GROUPS;
            op->n_groups_used = N_GROUPS_USED;
            op->routed_scaling = SCALE;
        }
}

static int setup(void **state)
{
    (void)state;
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    snprintf(g_dir, sizeof(g_dir), "%s", ft_test_tmpdir("router_variants"));
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_F32, g_dir, g_plain, sizeof(g_plain));
    /* The variant: the same weights, the plan rewritten. */
    snprintf(g_variant, sizeof(g_variant), "%s/variant", g_dir);
    mkdir(g_variant, 0755);
    char src[4300], dst[4300];
    snprintf(src, sizeof(src), "%s/weights.ftw", g_plain);
    snprintf(dst, sizeof(dst), "%s/weights.ftw", g_variant);
    size_t n = 0;
    uint8_t *w = st ? NULL : ft_test_read_file(src, &n);
    ft_bundle_t *b = NULL;
    if (!st && (!w || ft_test_write_file(dst, w, n) != 0))
        st = ft_status_make(FT_STATUS_IO, "%s: cannot copy", dst);
    free(w);
    if (!st) st = ft_bundle_open(g_plain, &b);
    if (!st) {
        make_variant(b->plan);
        snprintf(dst, sizeof(dst), "%s/plan.ftp", g_variant);
        st = ft_plan_write(b->plan, dst);
        ft_bundle_close(b);
    }
    if (st) {
        fprintf(stderr, "building the router-variant bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    snprintf(g_hw, sizeof(g_hw), "%s/hwprofiles/presets/rtx4090.textproto", FT_SOURCE_DIR);
    return 0;
}

/* The reference's prompt logits and greedy continuation with the
 * variant's router (or the plain one). */
static void reference(int variant, uint32_t n_gen, ft_ref_greedy_t *out)
{
    char src[4200];
    snprintf(src, sizeof(src), "%s/model.gguf", g_dir);
    ft_ir_model_t *ir = NULL;
    FT_REF_OK(ft_import_model(src, &ir));
    ft_ref_model_t *m;
    FT_REF_OK(ft_ref_model_from_ir(ir, &m));
    for (uint32_t l = 0; variant && l < m->n_layers; l++) {
        m->layers[l].sigmoid = 1;
        m->layers[l].n_groups = N_GROUPS;
        m->layers[l].n_groups_used = N_GROUPS_USED;
        m->layers[l].routed_scaling = SCALE;
    }
    FT_REF_OK(ft_ref_greedy_reference(m, k_prompt, N_PROMPT, n_gen, N_CTX, out));
    ft_ref_model_free(m);
    ft_ir_model_destroy(ir);
}

static void check(ft_backend_kind_t backend, int kernels, const char *name, const ft_ref_greedy_t *ref)
{
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = backend;
    eo.kernels = kernels;
    if (backend == FT_BACKEND_SIM) {
        eo.hw_profile = g_hw;
        eo.vram_bytes = 2250ull << 10; /* dense weights, KV, scratch and a few experts */
        eo.plan_ctx = N_CTX;
    }
    ft_ref_expect_greedy(g_variant, &eo, N_CTX, k_prompt, ref, FT_ROUTER_TOL, name, 0);
}

static void test_variant_matches_reference(void **state)
{
    (void)state;
    ft_ref_greedy_t ref, plain;
    reference(1, N_GEN, &ref);
    reference(0, 0, &plain);
    /* The variant routes otherwise: its logits are far from the plain ones. */
    const double apart = ft_ref_greedy_apart(&ref, &plain);
    print_message("variant vs plain router (reference): %.3g\n", apart);
    assert_true(apart > 1e-2);
    check(FT_BACKEND_CPU, FT_KERNELS_REFERENCE, "router variant cpu reference", &ref);
    check(FT_BACKEND_CPU, FT_KERNELS_GENERATED, "router variant cpu generated", &ref);
    check(FT_BACKEND_SIM, FT_KERNELS_GENERATED, "router variant sim generated", &ref);
    ft_ref_greedy_free(&ref);
    ft_ref_greedy_free(&plain);
}

/* Bad groups in a ROUTER op are refused by the validator, naming it. */
static void test_validator(void **state)
{
    (void)state;
    ft_bundle_t *b;
    FT_REF_OK(ft_bundle_open(g_variant, &b));
    Ftplan__Op *op = b->plan->schedule->blocks[1]->ops[10];
    assert_int_equal(op->kind, FTPLAN__OP_KIND__OP_ROUTER);
    static const struct {
        uint32_t groups, used;
        const char *word;
    } bad[] = {{3, 1, "expert groups"}, {4, 5, "expert groups"}, {8, 1, "expert groups"}, {0, 2, "without groups"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        op->n_groups = bad[i].groups;
        op->n_groups_used = bad[i].used;
        ft_status_t st = ft_plan_validate(b->plan, "plan.ftp");
        assert_non_null(st);
        print_message("refused: %s\n", ft_status_message(st));
        assert_non_null(strstr(ft_status_message(st), "schedule.blocks[1].ops[10] (OP_ROUTER)"));
        assert_non_null(strstr(ft_status_message(st), bad[i].word));
        ft_status_free(st);
    }
    op->n_groups = N_GROUPS;
    op->n_groups_used = N_GROUPS_USED;
    FT_REF_OK(ft_plan_validate(b->plan, "plan.ftp"));
    ft_bundle_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_variant_matches_reference),
                                       cmocka_unit_test(test_validator)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
