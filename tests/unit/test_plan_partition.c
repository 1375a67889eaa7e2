/* The plan's machine-specific fields (hw_profile, budget, partition,
 * calibration): a round trip through the plan file keeps every byte, and
 * each kind of inconsistency is refused with the field in the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/format/plan_file.h"
#include "../../runtime/format/plan_validate.h"
#include "plan_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_LAYERS FT_PLAN_FIXTURE_LAYERS
#define N_BUCKETS 3
#define N_EXPERTS 4 /* the fixture's experts per layer */

/* A fixture plan with every new field filled consistently. */
typedef struct fx_part {
    ft_plan_fixture_t fx;
    Fthw__Profile prof;
    Fthw__Cpu cpu;
    Fthw__Gpu gpu, *gpus[1];
    Fthw__Figure dram, h2d, hbm, ram;
    Ftplan__Budget budget;
    Ftplan__Partition part;
    Ftplan__Calibration calib;
    uint32_t pinned[2], buckets[N_BUCKETS];
    float qstar[N_LAYERS * N_BUCKETS], hit[N_LAYERS];
    double decode_s[4];
    uint64_t counts[N_LAYERS * N_EXPERTS];
} fx_part_t;

static void fig(Fthw__Figure *f, double v)
{
    *f = (Fthw__Figure)FTHW__FIGURE__INIT;
    f->median = f->min = f->max = v;
    f->n_runs = 1;
    f->source = FTHW__SOURCE__SPEC;
}

static void fx_part_init(fx_part_t *x)
{
    memset(x, 0, sizeof(*x));
    ft_plan_fixture_init(&x->fx, 0);
    Ftplan__Plan *plan = &x->fx.plan;
    x->prof = (Fthw__Profile)FTHW__PROFILE__INIT;
    x->cpu = (Fthw__Cpu)FTHW__CPU__INIT;
    x->gpu = (Fthw__Gpu)FTHW__GPU__INIT;
    fig(&x->dram, 80);
    fig(&x->h2d, 12);
    fig(&x->hbm, 250);
    fig(&x->ram, 32e9);
    x->prof.machine = "test machine";
    x->cpu.dram_read_gbs = &x->dram;
    x->cpu.ram_bytes = &x->ram;
    x->prof.cpu = &x->cpu;
    x->gpu.name = "test GPU";
    x->gpu.h2d_gbs = &x->h2d;
    x->gpu.hbm_gbs = &x->hbm;
    x->gpus[0] = &x->gpu;
    x->prof.n_gpus = 1;
    x->prof.gpus = x->gpus;
    plan->hw_profile = &x->prof;

    x->budget = (Ftplan__Budget)FTPLAN__BUDGET__INIT;
    x->budget.vram_bytes = 8u << 20;
    x->budget.ram_bytes = 1u << 30;
    x->budget.ctx = 256;
    x->budget.batch = 1;
    plan->budget = &x->budget;

    Ftplan__Partition *p = &x->part;
    *p = (Ftplan__Partition)FTPLAN__PARTITION__INIT;
    p->vram_dense = 1u << 20;
    p->slot_bytes = 8192;
    p->n_pinned = 2;
    p->vram_pinned = 2 * 8192;
    p->n_slots = 3;
    p->vram_slots = 3 * 8192;
    p->vram_kv = 4096;
    p->vram_scratch = 2u << 20;
    p->vram_used = p->vram_dense + p->vram_pinned + p->vram_slots + p->vram_kv + p->vram_scratch;
    x->pinned[0] = 1;             /* layer 0, expert 1 */
    x->pinned[1] = N_EXPERTS + 3; /* layer 1, expert 3 */
    p->n_pinned_ids = 2;
    p->pinned_ids = x->pinned;
    p->expert_id_stride = N_EXPERTS;
    p->n_gpu_layers = N_LAYERS;
    p->output_on_gpu = 1;
    p->ram_weights = 3u << 20;
    p->ram_needed = 5u << 20;
    x->buckets[0] = 1;
    x->buckets[1] = 4;
    x->buckets[2] = 64;
    p->n_bucket_tokens = N_BUCKETS;
    p->bucket_tokens = x->buckets;
    for (int i = 0; i < N_LAYERS * N_BUCKETS; i++)
        x->qstar[i] = 0.25f * (float)(i % 5);
    p->n_qstar = N_LAYERS * N_BUCKETS;
    p->qstar = x->qstar;
    x->hit[0] = 0.5f;
    x->hit[1] = 0.75f;
    p->n_hit_rate = N_LAYERS;
    p->hit_rate = x->hit;
    p->prefill_stream_tokens = 32;
    p->predicted_decode_tok_s = 42.5;
    p->predicted_prefill_tok_s = 900;
    p->bottleneck = FTPLAN__BOTTLENECK__BOTTLENECK_PCIE;
    x->decode_s[1] = 0.02;
    p->n_decode_s = 4;
    p->decode_s = x->decode_s;
    p->note = "";
    plan->partition = p;

    Ftplan__Calibration *c = &x->calib;
    *c = (Ftplan__Calibration)FTPLAN__CALIBRATION__INIT;
    c->n_tokens = 10;
    c->n_experts = N_EXPERTS;
    /* 2 experts used: each layer's counts sum to 20. */
    const uint64_t counts[N_LAYERS * N_EXPERTS] = {10, 6, 4, 0, 1, 2, 7, 10};
    memcpy(x->counts, counts, sizeof(counts));
    c->n_counts = N_LAYERS * N_EXPERTS;
    c->counts = x->counts;
    c->source = "sample.txt";
    plan->calibration = c;
}

static void expect_refused(fx_part_t *x, ft_status_code_t code, const char *needle)
{
    ft_status_t st = ft_plan_validate(&x->fx.plan, "p.ftp");
    if (ft_status_code(st) != code || !strstr(ft_status_message(st), needle) ||
        !strstr(ft_status_message(st), "p.ftp"))
        fail_msg("expected %s with '%s', got %s: %s", ft_status_code_name(code), needle,
                 ft_status_code_name(ft_status_code(st)), st ? ft_status_message(st) : "ok");
    ft_status_free(st);
}

static void test_round_trip(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
    uint8_t *d1 = NULL, *d2 = NULL;
    uint64_t n1 = 0, n2 = 0;
    assert_null(ft_plan_encode(&x.fx.plan, &d1, &n1));
    Ftplan__Plan *back = NULL;
    assert_null(ft_plan_read_mem(d1, n1, "p.ftp", &back));
    const Ftplan__Partition *p = back->partition;
    assert_non_null(p);
    assert_int_equal(p->n_slots, 3);
    assert_int_equal(p->n_pinned_ids, 2);
    assert_int_equal(p->pinned_ids[1], N_EXPERTS + 3);
    assert_int_equal(p->n_qstar, N_LAYERS * N_BUCKETS);
    assert_true(p->qstar[4] == 1.0f);
    assert_true(p->hit_rate[1] == 0.75f);
    assert_true(p->predicted_decode_tok_s == 42.5);
    assert_int_equal(p->bottleneck, FTPLAN__BOTTLENECK__BOTTLENECK_PCIE);
    assert_int_equal(back->budget->ctx, 256);
    assert_string_equal(back->hw_profile->gpus[0]->name, "test GPU");
    assert_true(back->hw_profile->cpu->dram_read_gbs->median == 80);
    assert_int_equal(back->calibration->n_tokens, 10);
    assert_int_equal(back->calibration->counts[7], 10);
    /* Re-encoding what was read gives the same bytes: deterministic. */
    assert_null(ft_plan_encode(back, &d2, &n2));
    assert_int_equal(n1, n2);
    assert_memory_equal(d1, d2, n1);
    ft_plan_free(back);
    free(d1);
    free(d2);
}

static void test_presence(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    x.fx.plan.budget = NULL;
    expect_refused(&x, FT_STATUS_FORMAT, "budget");
    fx_part_init(&x);
    x.fx.plan.hw_profile = NULL;
    expect_refused(&x, FT_STATUS_FORMAT, "hw_profile");
    fx_part_init(&x);
    x.cpu.dram_read_gbs = NULL;
    expect_refused(&x, FT_STATUS_FORMAT, "cpu.dram_read_gbs");
    fx_part_init(&x);
    x.h2d.median = NAN;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "gpus[0].h2d_gbs");
    /* Neither partition nor budget: a plan without a machine is fine. */
    fx_part_init(&x);
    x.fx.plan.partition = NULL;
    x.fx.plan.budget = NULL;
    x.fx.plan.calibration = NULL;
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
}

static void test_sizes(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    x.part.vram_kv += 1;
    expect_refused(&x, FT_STATUS_MISMATCH, "vram_used");
    fx_part_init(&x);
    x.budget.vram_bytes = x.part.vram_used - 1;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "budget.vram_bytes");
    fx_part_init(&x);
    x.part.vram_dense = UINT64_MAX;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "overflow");
    fx_part_init(&x);
    x.part.n_slots = 4;
    expect_refused(&x, FT_STATUS_MISMATCH, "vram_slots");
    fx_part_init(&x);
    x.budget.ram_bytes = x.part.ram_needed - 1;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "ram_needed");
    fx_part_init(&x);
    x.budget.ctx = 0;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "budget.ctx");
    fx_part_init(&x);
    x.part.n_gpu_layers = N_LAYERS + 1;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "n_gpu_layers");
}

static void test_pinned(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    x.part.n_pinned = 3;
    expect_refused(&x, FT_STATUS_MISMATCH, "n_pinned");
    fx_part_init(&x);
    x.pinned[1] = x.pinned[0];
    expect_refused(&x, FT_STATUS_FORMAT, "pinned_ids[1]");
    fx_part_init(&x);
    x.pinned[1] = N_LAYERS * N_EXPERTS; /* past the last layer */
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "pinned_ids[1]");
    fx_part_init(&x);
    x.part.n_gpu_layers = 1; /* layer 1's expert is pinned, but layer 1 runs on the CPU */
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "pinned_ids[1]");
    fx_part_init(&x);
    x.part.expert_id_stride = N_EXPERTS + 1;
    expect_refused(&x, FT_STATUS_MISMATCH, "expert_id_stride");
}

static void test_qstar(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    x.part.n_qstar--;
    expect_refused(&x, FT_STATUS_MISMATCH, "qstar");
    fx_part_init(&x);
    x.part.n_hit_rate = 1;
    expect_refused(&x, FT_STATUS_MISMATCH, "hit_rate");
    fx_part_init(&x);
    x.qstar[3] = 1.5f;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "qstar[3]");
    fx_part_init(&x);
    x.hit[0] = NAN;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "hit_rate[0]");
    fx_part_init(&x);
    x.buckets[2] = 4;
    expect_refused(&x, FT_STATUS_FORMAT, "bucket_tokens[2]");
    fx_part_init(&x);
    x.part.n_bucket_tokens = 0;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "bucket_tokens");
    fx_part_init(&x);
    x.part.predicted_decode_tok_s = INFINITY;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "predicted_decode_tok_s");
    fx_part_init(&x);
    x.part.bottleneck = (Ftplan__Bottleneck)9;
    expect_refused(&x, FT_STATUS_FORMAT, "bottleneck");
    fx_part_init(&x);
    x.part.n_decode_s = 3;
    expect_refused(&x, FT_STATUS_MISMATCH, "decode_s");
}

static void test_calibration(void **state)
{
    (void)state;
    fx_part_t x;
    fx_part_init(&x);
    x.calib.n_counts--;
    expect_refused(&x, FT_STATUS_MISMATCH, "calibration.counts");
    fx_part_init(&x);
    x.calib.n_experts = N_EXPERTS + 1;
    expect_refused(&x, FT_STATUS_MISMATCH, "calibration.n_experts");
    fx_part_init(&x);
    x.counts[2] = 11; /* more than n_tokens */
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "calibration.counts[2]");
    fx_part_init(&x);
    x.counts[3] = 1; /* 21 routings: more than 10 tokens x 2 used */
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "layer 0");
    fx_part_init(&x);
    x.calib.n_tokens = 0;
    expect_refused(&x, FT_STATUS_OUT_OF_RANGE, "n_tokens");
    fx_part_init(&x);
    x.calib.source = "../etc/passwd";
    expect_refused(&x, FT_STATUS_FORMAT, "calibration.source");
    /* Calibration alone (no --hw) is a valid plan. */
    fx_part_init(&x);
    x.fx.plan.partition = NULL;
    x.fx.plan.budget = NULL;
    x.fx.plan.hw_profile = NULL;
    assert_null(ft_plan_validate(&x.fx.plan, "p.ftp"));
}

/* Fuzz seeds with every machine-specific field, written into
 * $FT_PLAN_SEED_DIR when it is set (tests/fuzz/corpus/fuzz_plan/README.txt). */
static void test_write_seeds(void **state)
{
    (void)state;
    const char *dir = getenv("FT_PLAN_SEED_DIR");
    if (!dir || !*dir)
        skip();
    fx_part_t x;
    fx_part_init(&x);
    uint8_t *d = NULL;
    uint64_t n = 0;
    assert_null(ft_plan_encode(&x.fx.plan, &d, &n));
    size_t raw_n = ftplan__plan__get_packed_size(&x.fx.plan);
    uint8_t *raw = malloc(raw_n);
    assert_non_null(raw);
    assert_int_equal(ftplan__plan__pack(&x.fx.plan, raw), raw_n);
    const struct {
        const char *name;
        const uint8_t *data;
        size_t n;
    } seeds[] = {{"plan_partition.ftp", d, (size_t)n}, {"raw_partition.pb", raw, raw_n}};
    for (size_t i = 0; i < 2; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(seeds[i].data, 1, seeds[i].n, f), seeds[i].n);
        assert_int_equal(fclose(f), 0);
    }
    free(raw);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_presence),
        cmocka_unit_test(test_sizes),      cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_qstar),      cmocka_unit_test(test_calibration),
        cmocka_unit_test(test_write_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
