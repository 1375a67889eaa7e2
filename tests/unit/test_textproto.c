/* The text format over protobuf-c descriptors (runtime/format/textproto.h):
 * a full profile survives print -> parse -> print and pack; every preset
 * parses and converts to the planner's ft_hw_t; hostile text gives errors
 * with line:column; the generic grammar (lists, enums, escapes, comments). */
#include "../../runtime/format/textproto.h"
#include "../../runtime/plan/hw_profile.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static Fthw__Figure *fig(double med, double lo, double hi, uint32_t n, Fthw__Source src, const char *note)
{
    Fthw__Figure *f = malloc(sizeof(*f));
    fthw__figure__init(f);
    f->median = med;
    f->min = lo;
    f->max = hi;
    f->n_runs = n;
    f->source = src;
    f->note = strdup(note);
    return f;
}

static Fthw__GemvRate *gemv(const char *fmt, uint32_t rows, uint32_t cols, double gbs)
{
    Fthw__GemvRate *g = malloc(sizeof(*g));
    fthw__gemv_rate__init(g);
    g->format = strdup(fmt);
    g->rows = rows;
    g->cols = cols;
    g->n_threads = 2;
    g->weight_gbs = fig(gbs, gbs * 0.9, gbs * 1.1, 5, FTHW__SOURCE__MEASURED, "m");
    return g;
}

/* Every field of every message set, strings with characters to escape. */
static Fthw__Profile *full_profile(void)
{
    Fthw__Profile *p = malloc(sizeof(*p));
    fthw__profile__init(p);
    p->version = 1;
    p->machine = strdup("box \"one\"\\\t\n\x01 caf\xc3\xa9");
    p->tool = strdup("test");
    p->quick = 1;
    p->gpu_note = strdup("note");
    Fthw__Cpu *c = malloc(sizeof(*c));
    fthw__cpu__init(c);
    p->cpu = c;
    c->model = strdup("CPU");
    c->n_cores = fig(16, 16, 16, 1, FTHW__SOURCE__SPEC, "spec");
    c->n_physical_cores = fig(8, 8, 8, 1, FTHW__SOURCE__MEASURED, "");
    c->n_isa = 2;
    c->isa = malloc(2 * sizeof(char *));
    c->isa[0] = strdup("avx2");
    c->isa[1] = strdup("avx512_vnni");
    c->n_caches = 1;
    c->caches = malloc(sizeof(Fthw__Cache *));
    c->caches[0] = malloc(sizeof(Fthw__Cache));
    fthw__cache__init(c->caches[0]);
    c->caches[0]->level = 3;
    c->caches[0]->type = strdup("Unified");
    c->caches[0]->size_bytes = fig(33554432, 33554432, 33554432, 1, FTHW__SOURCE__MEASURED, "sysfs");
    c->caches[0]->shared_by_cpus = 16;
    c->ram_bytes = fig(68719476736.0, 68719476736.0, 68719476736.0, 1, FTHW__SOURCE__MEASURED, "");
    c->dram_read_gbs = fig(61.25, 58.0000001, 63.1e0, 7, FTHW__SOURCE__MEASURED, "read");
    c->dram_read_1t_gbs = fig(0.1, 1e-300, 1.7976931348623157e308, 7, FTHW__SOURCE__MEASURED, "1t");
    c->n_gemv = 2;
    c->gemv = malloc(2 * sizeof(Fthw__GemvRate *));
    c->gemv[0] = gemv("q4_k", 768, 2048, 40);
    c->gemv[1] = gemv("q4_k", 2048, 768, 20);
    Fthw__Gpu *g = malloc(sizeof(*g));
    fthw__gpu__init(g);
    g->name = strdup("GPU");
    g->cc_major = 8;
    g->cc_minor = 9;
    g->vram_total_bytes = fig(25769803776.0, 25769803776.0, 25769803776.0, 1, FTHW__SOURCE__MEASURED, "");
    g->vram_free_bytes = fig(24e9, 24e9, 24e9, 1, FTHW__SOURCE__MEASURED, "");
    g->hbm_gbs = fig(900, 890, 910, 3, FTHW__SOURCE__MEASURED, "");
    g->n_h2d = 1;
    g->h2d = malloc(sizeof(Fthw__CopyRate *));
    g->h2d[0] = malloc(sizeof(Fthw__CopyRate));
    fthw__copy_rate__init(g->h2d[0]);
    g->h2d[0]->transfer_bytes = 18446744073709551615ull;
    g->h2d[0]->gbs = fig(24.5, 24, 25, 3, FTHW__SOURCE__MEASURED, "");
    g->h2d_gbs = fig(24.5, 24, 25, 3, FTHW__SOURCE__MEASURED, "");
    g->d2h_gbs = fig(25, 24, 26, 3, FTHW__SOURCE__MEASURED, "");
    g->gather_gbs = fig(20, 19, 21, 3, FTHW__SOURCE__MEASURED, "");
    g->launch_us = fig(4.5, 4, 5, 3, FTHW__SOURCE__MEASURED, "");
    g->h2d_overlap_gbs = fig(22, 21, 23, 3, FTHW__SOURCE__MEASURED, "");
    g->cpu_gemv_overlap_gbs = fig(30, 29, 31, 3, FTHW__SOURCE__MEASURED, "");
    g->n_gemv = 1;
    g->gemv = malloc(sizeof(Fthw__GemvRate *));
    g->gemv[0] = gemv("bf16", 768, 2048, 800);
    g->gemm_tflops = fig(165.2, 165.2, 165.2, 1, FTHW__SOURCE__SPEC, "whitepaper");
    g->unified_memory = 1;
    g->pcie_gen = 4;
    g->pcie_lanes = 16;
    g->ordinal = 3;
    p->n_gpus = 1;
    p->gpus = malloc(sizeof(Fthw__Gpu *));
    p->gpus[0] = g;
    return p;
}

static void test_round_trip(void **state)
{
    (void)state;
    Fthw__Profile *p = full_profile();
    char *t1 = NULL, *t2 = NULL;
    size_t n1, n2;
    assert_null(ft_textproto_print(&p->base, "header line\n\nsecond", &t1, &n1));
    assert_non_null(strstr(t1, "# header line\n#\n# second\n"));
    assert_non_null(strstr(t1, "source: MEASURED"));
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse(&fthw__profile__descriptor, t1, n1, "t1", &m);
    assert_null(st);
    assert_null(ft_textproto_print(m, "header line\n\nsecond", &t2, &n2));
    assert_int_equal(n1, n2);
    assert_string_equal(t1, t2);
    /* The binary forms agree too: nothing was lost or rounded. */
    size_t b1 = protobuf_c_message_get_packed_size(&p->base), b2 = protobuf_c_message_get_packed_size(m);
    assert_int_equal(b1, b2);
    uint8_t *x1 = malloc(b1), *x2 = malloc(b2);
    protobuf_c_message_pack(&p->base, x1);
    protobuf_c_message_pack(m, x2);
    assert_memory_equal(x1, x2, b1);
    Fthw__Profile *q = (Fthw__Profile *)m;
    assert_string_equal(q->machine, p->machine);
    assert_true(q->cpu->dram_read_1t_gbs->max == 1.7976931348623157e308);
    assert_int_equal(q->gpus[0]->h2d[0]->transfer_bytes, 18446744073709551615ull);
    free(x1);
    free(x2);
    free(t1);
    free(t2);
    protobuf_c_message_free_unpacked(m, NULL);
    fthw__profile__free_unpacked(p, NULL);
}

static void test_convert(void **state)
{
    (void)state;
    Fthw__Profile *p = full_profile();
    ft_hw_t hw;
    assert_null(ft_hw_from_profile(p, &hw));
    assert_string_equal(hw.cpu_name, "CPU");
    assert_int_equal(hw.n_cores, 16);
    assert_true(hw.dram_gbs == 61.25);
    /* 768x2048 at 40 and 2048x768 at 20: equal bytes, so 2 / (1/40 + 1/20). */
    assert_true(fabs(hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] - 80.0 / 3.0) < 1e-9);
    assert_int_equal(hw.n_gpus, 1);
    assert_true(hw.gpu.h2d_gbs == 24.5);
    assert_true(hw.gpu.gemv_gbs[FT_DTYPE_BF16] == 800);
    assert_true(hw.dram_overlap_gbs == 30);
    assert_int_equal(hw.gpu.unified_memory, 1);
    /* Missing DRAM figure: refused, naming the field. */
    fthw__figure__free_unpacked(p->cpu->dram_read_gbs, NULL);
    p->cpu->dram_read_gbs = NULL;
    ft_status_t st = ft_hw_from_profile(p, &hw);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "dram_read_gbs"));
    ft_status_free(st);
    fthw__profile__free_unpacked(p, NULL);
}

static void test_presets(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    assert_non_null(slash);
    strcpy(slash, "/../../hwprofiles/presets");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0, n_gpu = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 10 || strcmp(e->d_name + len - 10, ".textproto") != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        ft_hw_t hw;
        ft_status_t st = ft_hw_load(path, &hw);
        if (st)
            fail_msg("%s", ft_status_message(st));
        assert_true(hw.dram_gbs > 0 && hw.dram_1t_gbs > 0 && hw.dram_1t_gbs <= hw.dram_gbs);
        assert_true(hw.ram_bytes > 0 && hw.n_cores > 0);
        assert_true(hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] > 0 && hw.cpu_gemv_gbs[FT_DTYPE_Q4_K] <= hw.dram_gbs);
        if (hw.n_gpus) {
            n_gpu++;
            assert_true(hw.gpu.h2d_gbs > 0 && hw.gpu.d2h_gbs > 0 && hw.gpu.gather_gbs > 0);
            assert_true(hw.gpu.hbm_gbs > hw.gpu.h2d_gbs);
            assert_true(hw.gpu.vram_bytes > 0 && hw.gpu.vram_free_bytes <= hw.gpu.vram_bytes);
            assert_true(hw.gpu.gemv_gbs[FT_DTYPE_Q4_K] > 0 && hw.gpu.gemm_tflops > 0);
            assert_true(hw.gpu.h2d_overlap_gbs > 0 && hw.dram_overlap_gbs > 0);
        }
        /* Every figure of a preset is a specification. */
        Fthw__Profile *p = NULL;
        assert_null(ft_hw_profile_load(path, &p));
        char *text;
        size_t len_t;
        assert_null(ft_textproto_print(&p->base, NULL, &text, &len_t));
        assert_null(strstr(text, "MEASURED"));
        assert_non_null(strstr(text, "source: SPEC"));
        free(text);
        fthw__profile__free_unpacked(p, NULL);
        n++;
    }
    closedir(d);
    assert_true(n >= 8);
    assert_true(n_gpu >= 7);
}

/* Parses text as a Profile and expects an error containing want. */
static void expect_error(const char *text, const char *want)
{
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse(&fthw__profile__descriptor, text, strlen(text), "x", &m);
    if (!st)
        fail_msg("no error for: %s", text);
    if (!strstr(ft_status_message(st), want))
        fail_msg("for %s: got '%s', wanted '%s'", text, ft_status_message(st), want);
    assert_null(m);
    ft_status_free(st);
}

static void test_hostile(void **state)
{
    (void)state;
    expect_error("version: 1\nbogus: 2\n", "x:2:1: unknown field 'bogus' in message fthw.Profile");
    expect_error("version: -1", "x:1:10: integer -1 is out of range");
    expect_error("version: 4294967296", "out of range for a uint32");
    expect_error("version: 1.5", "x:1:10: expected an integer");
    expect_error("version: 1 version: 2", "x:1:12: field 'version' of fthw.Profile is given twice");
    expect_error("cpu {\n  model: \"a\"\n", "x:3:1: the input ends inside message fthw.Cpu opened at 1:5");
    expect_error("cpu { dram_read_gbs { source: MAYBE } }", "x:1:31: 'MAYBE' is not a value of enum fthw.Source");
    expect_error("machine: \"abc\n\"", "x:1:10: string not closed");
    expect_error("machine: \"a\\qb\"", "x:1:12: unknown escape \\q");
    expect_error("machine: \"a\\000b\"", "holds a NUL byte");
    expect_error("quick: maybe", "x:1:8: expected true or false");
    expect_error("version 1", "x:1:9: expected ':'");
    expect_error("version: 1 }", "x:1:12: expected a field name, found '}'");
    expect_error("machine: [\"a\"]", "is not repeated");
    expect_error("cpu { isa: [\"a\" \"b\", 3] }", "x:1:22: expected a quoted string, found '3'");
    expect_error("version: 1 @", "x:1:12: unexpected character 0x40");
    expect_error("cpu { dram_read_gbs { median: 1e999 } }", "out of range");
    expect_error("version: \x01", "unexpected character 0x01");
}

/* A self-recursive message, described by hand: the profile schema is only
 * four levels deep, so the depth bound needs a message that nests. */
typedef struct tp_node {
    ProtobufCMessage base;
    struct tp_node *child;
    int32_t v;
} tp_node_t;
static const ProtobufCMessageDescriptor tp_node_desc;
static void tp_node_init(tp_node_t *m)
{
    memset(m, 0, sizeof(*m));
    m->base.descriptor = &tp_node_desc;
}
static const ProtobufCFieldDescriptor tp_node_fields[2] = {
    {"child", 1, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_MESSAGE, 0, offsetof(tp_node_t, child), &tp_node_desc,
     NULL, 0, 0, NULL, NULL},
    {"v", 2, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_INT32, 0, offsetof(tp_node_t, v), NULL, NULL, 0, 0, NULL,
     NULL},
};
static const unsigned tp_node_by_name[2] = {0, 1};
static const ProtobufCIntRange tp_node_ranges[2] = {{1, 0}, {0, 2}};
static const ProtobufCMessageDescriptor tp_node_desc = {
    PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC, "t.Node", "Node", "Node", "t", sizeof(tp_node_t), 2, tp_node_fields,
    tp_node_by_name, 1, tp_node_ranges, (ProtobufCMessageInit)tp_node_init, NULL, NULL, NULL};

static ft_status_t parse_nested(int depth, ProtobufCMessage **out)
{
    char text[4096] = "";
    for (int i = 0; i < depth; i++)
        strcat(text, "child { ");
    strcat(text, "v: 7 ");
    for (int i = 0; i < depth; i++)
        strcat(text, "} ");
    return ft_textproto_parse(&tp_node_desc, text, strlen(text), "deep", out);
}

static void test_depth(void **state)
{
    (void)state;
    ProtobufCMessage *m = NULL;
    assert_null(parse_nested(FT_TEXTPROTO_MAX_DEPTH, &m));
    tp_node_t *n = (tp_node_t *)m;
    int d = 0;
    while (n->child)
        n = n->child, d++;
    assert_int_equal(d, FT_TEXTPROTO_MAX_DEPTH);
    assert_int_equal(n->v, 7);
    protobuf_c_message_free_unpacked(m, NULL);
    ft_status_t st = parse_nested(FT_TEXTPROTO_MAX_DEPTH + 1, &m);
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "deep:1:263: messages nested more than 32 deep"));
    ft_status_free(st);
}

static void test_grammar(void **state)
{
    (void)state;
    const char *text = "# comment\n"
                       "version: 0x10, machine: 'm' \"n\" # trailing comment\n"
                       "cpu < isa: [\"a\", 'b'] isa: \"c\"; dram_read_gbs: { median: -inf source: 2 }\n"
                       "  dram_read_1t_gbs { median: 1.5e3f min: .5 max: nan } >\n"
                       "gpus { } gpus { name: \"\\x41\\101\\u00e9\" unified_memory: True }\n";
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse(&fthw__profile__descriptor, text, strlen(text), "g", &m);
    if (st)
        fail_msg("%s", ft_status_message(st));
    Fthw__Profile *p = (Fthw__Profile *)m;
    assert_int_equal(p->version, 16);
    assert_string_equal(p->machine, "mn");
    assert_int_equal(p->cpu->n_isa, 3);
    assert_string_equal(p->cpu->isa[2], "c");
    assert_true(isinf(p->cpu->dram_read_gbs->median) && p->cpu->dram_read_gbs->median < 0);
    assert_int_equal(p->cpu->dram_read_gbs->source, FTHW__SOURCE__SPEC);
    assert_true(p->cpu->dram_read_1t_gbs->median == 1500.0);
    assert_true(isnan(p->cpu->dram_read_1t_gbs->max));
    assert_int_equal(p->n_gpus, 2);
    assert_string_equal(p->gpus[1]->name, "AA\xc3\xa9");
    assert_true(p->gpus[1]->unified_memory);
    /* -inf and nan print in a form that parses back. */
    char *t = NULL;
    size_t n;
    assert_null(ft_textproto_print(m, NULL, &t, &n));
    assert_non_null(strstr(t, "median: -inf"));
    assert_non_null(strstr(t, "max: nan"));
    ProtobufCMessage *m2 = NULL;
    assert_null(ft_textproto_parse(&fthw__profile__descriptor, t, n, "t", &m2));
    free(t);
    protobuf_c_message_free_unpacked(m2, NULL);
    protobuf_c_message_free_unpacked(m, NULL);
    /* Empty input is an empty message. */
    assert_null(ft_textproto_parse(&fthw__profile__descriptor, "", 0, "e", &m));
    protobuf_c_message_free_unpacked(m, NULL);
    /* A missing file names the path. */
    st = ft_hw_load("/nonexistent/preset.textproto", &(ft_hw_t){0});
    assert_non_null(st);
    assert_non_null(strstr(ft_status_message(st), "/nonexistent/preset.textproto"));
    ft_status_free(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_convert), cmocka_unit_test(test_presets),
        cmocka_unit_test(test_hostile),    cmocka_unit_test(test_depth), cmocka_unit_test(test_grammar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
