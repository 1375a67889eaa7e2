/* The op schedule: what the lowering writes into the plan for the tiny
 * Qwen3-MoE fixture, the plan validator's refusals of malformed schedules
 * (each naming the list, op index and field), and the executor's refusals
 * of schedules it cannot bind (naming the op), through ft_engine_open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "test_tmp.h"

#include "../../runtime/format/bundle.h"
#include "../../runtime/format/plan_file.h"
#include "../../runtime/format/plan_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_bundle[4096];
static ft_bundle_t *g_b;

static int setup(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    ft_status_t st = ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_Q8_0, ft_test_tmpdir("schedule"), g_bundle,
                                         sizeof(g_bundle));
    if (!st)
        st = ft_bundle_open(g_bundle, &g_b);
    if (st) {
        fprintf(stderr, "building the fixture bundle: %s\n", ft_status_message(st));
        ft_status_free(st);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    ft_bundle_close(g_b);
    return 0;
}

/* The kinds of a block's ops, in order. */
static void test_lowering(void **state)
{
    const Ftplan__Plan *p = g_b->plan;
    const Ftplan__Schedule *s = p->schedule;
    assert_non_null(s);
    assert_int_equal(p->schema_version, FT_PLAN_SCHEMA_VERSION);
    assert_int_equal(s->n_blocks, p->hparams->n_layers);
    static const int want[] = {
        FTPLAN__OP_KIND__OP_RMSNORM,   FTPLAN__OP_KIND__OP_LINEAR,    FTPLAN__OP_KIND__OP_HEAD_NORM,
        FTPLAN__OP_KIND__OP_HEAD_NORM, FTPLAN__OP_KIND__OP_ROPE,      FTPLAN__OP_KIND__OP_KV_APPEND,
        FTPLAN__OP_KIND__OP_ATTENTION, FTPLAN__OP_KIND__OP_LINEAR,    FTPLAN__OP_KIND__OP_ADD,
        FTPLAN__OP_KIND__OP_RMSNORM,   FTPLAN__OP_KIND__OP_ROUTER,    FTPLAN__OP_KIND__OP_MOE};
    for (size_t l = 0; l < s->n_blocks; l++) {
        assert_int_equal(s->blocks[l]->n_ops, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < s->blocks[l]->n_ops; i++)
            assert_int_equal(s->blocks[l]->ops[i]->kind, want[i]);
        const Ftplan__Op *rope = s->blocks[l]->ops[4];
        assert_int_equal(rope->rope, FTPLAN__ROPE_KIND__ROPE_NEOX);
        assert_int_equal(rope->rope_dim, p->hparams->rope_dim);
        const Ftplan__Op *moe = s->blocks[l]->ops[11];
        char name[64];
        snprintf(name, sizeof(name), "blk.%zu.ffn_down_exps.weight", l);
        assert_string_equal(p->tensors[moe->weights[2]]->name, name);
    }
    assert_int_equal(s->n_prologue, 1);
    assert_int_equal(s->prologue[0]->kind, FTPLAN__OP_KIND__OP_EMBED);
    assert_int_equal(s->n_epilogue, 2);
    assert_int_equal(s->buffers[s->epilogue[1]->outputs[0]]->kind, FTPLAN__BUFFER_KIND__BUF_LOGITS);
}

/* Runs the validator on the bundle's plan after mutate(op) and expects a
 * refusal whose message has each word. */
static void expect_invalid(void (*mutate)(Ftplan__Plan *), const char *word1, const char *word2)
{
    Ftplan__Plan *p = g_b->plan;
    Ftplan__Op *op = p->schedule->blocks[1]->ops[4]; /* the ROPE */
    const Ftplan__Op saved = *op;
    const uint32_t in0 = op->inputs[0];
    mutate(p);
    ft_status_t st = ft_plan_validate(p, "plan.ftp");
    *op = saved;
    op->inputs[0] = in0;
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), word1));
    assert_non_null(strstr(ft_status_message(st), word2));
    ft_status_free(st);
    ft_status_t ok = ft_plan_validate(p, "plan.ftp");
    assert_null(ok);
}

static Ftplan__Op *rope_of(Ftplan__Plan *p)
{
    return p->schedule->blocks[1]->ops[4];
}
static void m_kind(Ftplan__Plan *p) { rope_of(p)->kind = 77; }
static void m_index(Ftplan__Plan *p) { rope_of(p)->inputs[0] = 1000; }
static void m_arity(Ftplan__Plan *p) { rope_of(p)->n_inputs = 1; }
static void m_rope_dim(Ftplan__Plan *p) { rope_of(p)->rope_dim = 3; }
static void m_heads(Ftplan__Plan *p) { rope_of(p)->n_heads = 3; }
static void m_glu(Ftplan__Plan *p) { rope_of(p)->kind = FTPLAN__OP_KIND__OP_GLU; }

static void test_validator(void **state)
{
    expect_invalid(m_kind, "schedule.blocks[1].ops[4]", "unknown op kind 77");
    expect_invalid(m_index, "schedule.blocks[1].ops[4] (OP_ROPE)", "inputs[0] = 1000");
    expect_invalid(m_arity, "schedule.blocks[1].ops[4] (OP_ROPE)", "1 inputs");
    expect_invalid(m_rope_dim, "OP_ROPE", "rope_dim 3");
    expect_invalid(m_heads, "OP_ROPE", "n_heads 3");
    expect_invalid(m_glu, "schedule.blocks[1].ops[4] (OP_GLU)", "0 outputs");
}

/* Writes the bundle's plan after mutate into a copy of the bundle and
 * expects ft_engine_open to refuse it naming each word; mutate's change is
 * undone by undo. */
static void expect_unbindable(const char *name, void (*mutate)(Ftplan__Plan *), void (*undo)(Ftplan__Plan *),
                              const char *word1, const char *word2)
{
    char dir[4096], path[4200], src[4200];
    snprintf(dir, sizeof(dir), "%s", ft_test_tmpdir(name));
    snprintf(src, sizeof(src), "%s/weights.ftw", g_bundle);
    snprintf(path, sizeof(path), "%s/weights.ftw", dir);
    size_t n;
    uint8_t *w = ft_test_read_file(src, &n);
    assert_int_equal(ft_test_write_file(path, w, n), 0);
    free(w);
    snprintf(path, sizeof(path), "%s/plan.ftp", dir);
    mutate(g_b->plan);
    ft_status_t st = ft_plan_write(g_b->plan, path);
    undo(g_b->plan);
    assert_null(st);
    ft_engine_t *e = NULL;
    st = ft_engine_open(dir, NULL, &e);
    assert_null(e);
    assert_non_null(st);
    print_message("refused: %s\n", ft_status_message(st));
    assert_non_null(strstr(ft_status_message(st), word1));
    assert_non_null(strstr(ft_status_message(st), word2));
    ft_status_free(st);
}

static Ftplan__Schedule *g_saved_schedule;
static uint32_t g_saved_u32;
static void m_no_schedule(Ftplan__Plan *p) { g_saved_schedule = p->schedule; p->schedule = NULL; }
static void u_no_schedule(Ftplan__Plan *p) { p->schedule = g_saved_schedule; }
static Ftplan__Op *att_of(Ftplan__Plan *p) { return p->schedule->blocks[0]->ops[6]; }
/* twice the query heads the buffers hold (sliding windows run now: test_sliding_window) */
static void m_att_heads(Ftplan__Plan *p) { att_of(p)->n_heads *= 2; }
static void u_att_heads(Ftplan__Plan *p) { att_of(p)->n_heads /= 2; }
/* wo reading q's weight: a [q_dim, d] matrix where [d, q_dim] belongs */
static Ftplan__Op *wo_of(Ftplan__Plan *p) { return p->schedule->blocks[0]->ops[7]; }
static void m_shape(Ftplan__Plan *p) { g_saved_u32 = wo_of(p)->weights[0]; wo_of(p)->weights[0] = p->schedule->blocks[0]->ops[1]->weights[1]; }
static void u_shape(Ftplan__Plan *p) { wo_of(p)->weights[0] = g_saved_u32; }

/* The residual ADD (o -> x) of block 0 made a GLU (o, o -> x) of an
 * activation the executor does not have. */
static Ftplan__Op *add_of(Ftplan__Plan *p) { return p->schedule->blocks[0]->ops[8]; }
static Ftplan__Op g_saved_op;
static uint32_t g_glu_inputs[2];
static void m_gelu(Ftplan__Plan *p)
{
    Ftplan__Op *op = add_of(p);
    g_saved_op = *op;
    g_glu_inputs[0] = g_glu_inputs[1] = op->inputs[0];
    op->kind = FTPLAN__OP_KIND__OP_GLU;
    op->inputs = g_glu_inputs;
    op->n_inputs = 2;
    op->act = FTPLAN__ACTIVATION__ACT_GELU;
}
static void u_gelu(Ftplan__Plan *p) { *add_of(p) = g_saved_op; }

static void test_executor_refusals(void **state)
{
    expect_unbindable("no-schedule", m_no_schedule, u_no_schedule, "no op schedule", "recompile");
    expect_unbindable("heads", m_att_heads, u_att_heads, "block 0 op 6 (OP_ATTENTION)", "do not fit");
    expect_unbindable("shape", m_shape, u_shape, "block 0 op 7 (OP_LINEAR)", "between buffers");
    assert_int_equal(add_of(g_b->plan)->kind, FTPLAN__OP_KIND__OP_ADD);
    expect_unbindable("gelu", m_gelu, u_gelu, "block 0 op 8 (OP_GLU)", "only SwiGLU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lowering),
        cmocka_unit_test(test_validator),
        cmocka_unit_test(test_executor_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
