/* The KV page pool, the prefix tree and its anchors, and a session's page
 * table (runtime/kv), without a model: pages are filled with a pattern of
 * (sequence, position) so every read says which page it came from.
 *   - the pool grows in slabs up to its budget, reuses freed pages, and
 *     fails with FT_STATUS_RESOURCE_EXHAUSTED when full of pages in use;
 *   - a second table whose tokens start with a published prefix attaches
 *     those pages (no copy), and copies on write when it appends into one;
 *   - anchors restore their tail page and state byte for byte;
 *   - eviction takes low priority entries first, then the oldest, and
 *     never a page a table holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../runtime/kv/kv_table.h"

#include <stdlib.h>
#include <string.h>

enum { P = 4, LAYERS = 2, ROW = 3, CTX = 64 };

static ft_status_t mem_alloc(void *user, size_t n, void **out)
{
    (void)user;
    *out = malloc(n);
    return *out ? FT_OK : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "test: malloc");
}

static void mem_free(void *user, void *p)
{
    (void)user;
    free(p);
}

static ft_kv_pool_t *new_pool(uint64_t pages)
{
    ft_kv_pool_desc_t d = {LAYERS, P, ROW, 4, 0};
    d.budget_bytes = pages * (uint64_t)P * ROW * 4 * 2 * LAYERS;
    const ft_kv_mem_t mem = {mem_alloc, mem_free, NULL};
    ft_kv_pool_t *pool = NULL;
    assert_null(ft_kv_pool_create(&d, &mem, NULL, &pool));
    return pool;
}

/* What a "forward pass" of sequence seq writes at position pos. */
static float value(uint32_t seq, uint32_t pos, uint32_t layer, uint32_t kv, uint32_t e)
{
    return (float)(seq * 100000 + pos * 100 + layer * 10 + kv * 5 + e);
}

static void write_rows(ft_kv_table_t *t, uint32_t seq, uint32_t pos0, uint32_t n)
{
    assert_null(ft_kv_table_prepare(t, pos0, n));
    for (uint32_t p = pos0; p < pos0 + n; p++)
        for (uint32_t l = 0; l < LAYERS; l++)
            for (uint32_t kv = 0; kv < 2; kv++) {
                float *row = (float *)ft_kv_table_rows(t, p / P, l, kv) + (size_t)(p % P) * ROW;
                for (uint32_t e = 0; e < ROW; e++)
                    row[e] = value(seq, p, l, kv, e);
            }
}

/* Every row of [0, n) holds what seq_of(p) wrote. */
static void check_rows(const ft_kv_table_t *t, uint32_t n, uint32_t seq_a, uint32_t seq_b,
                       uint32_t split)
{
    for (uint32_t p = 0; p < n; p++)
        for (uint32_t l = 0; l < LAYERS; l++)
            for (uint32_t kv = 0; kv < 2; kv++) {
                const float *row =
                    (const float *)ft_kv_table_rows(t, p / P, l, kv) + (size_t)(p % P) * ROW;
                for (uint32_t e = 0; e < ROW; e++)
                    assert_true(row[e] == value(p < split ? seq_a : seq_b, p, l, kv, e));
            }
}

static void test_pool_budget(void **state)
{
    (void)state;
    ft_kv_pool_t *pool = new_pool(3);
    uint32_t pg[3];
    for (int i = 0; i < 3; i++)
        assert_null(ft_kv_page_alloc(pool, &pg[i]));
    uint32_t extra;
    ft_status_t st = ft_kv_page_alloc(pool, &extra);
    assert_int_equal(ft_status_code(st), FT_STATUS_RESOURCE_EXHAUSTED);
    assert_non_null(strstr(ft_status_message(st), "full"));
    ft_status_free(st);
    ft_kv_pool_stats_t s;
    ft_kv_pool_stats(pool, &s);
    assert_int_equal(s.pages_used, 3);
    assert_int_equal(s.pages_total, 3);
    ft_kv_page_ref(pool, pg[1]);
    ft_kv_page_unref(pool, pg[1]);
    assert_int_equal(ft_kv_page_refs(pool, pg[1]), 1);
    ft_kv_page_unref(pool, pg[1]);
    assert_null(ft_kv_page_alloc(pool, &extra)); /* the freed one, again */
    assert_int_equal(extra, pg[1]);
    for (int i = 0; i < 3; i++)
        ft_kv_page_unref(pool, pg[i]);
    ft_kv_pool_stats(pool, &s);
    assert_int_equal(s.pages_used, 0);
    ft_kv_pool_destroy(pool);
    /* A budget smaller than a page, page tokens not a power of two. */
    ft_kv_pool_desc_t d = {LAYERS, 3, ROW, 4, 1 << 20};
    const ft_kv_mem_t mem = {mem_alloc, mem_free, NULL};
    st = ft_kv_pool_create(&d, &mem, NULL, &pool);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
    d.page_tokens = 4;
    d.budget_bytes = 10;
    st = ft_kv_pool_create(&d, &mem, NULL, &pool);
    assert_int_equal(ft_status_code(st), FT_STATUS_INVALID_ARGUMENT);
    ft_status_free(st);
}

static void test_prefix_share_and_cow(void **state)
{
    (void)state;
    ft_kv_pool_t *pool = new_pool(64);
    ft_kv_tree_t *tree = NULL;
    assert_null(ft_kv_tree_create(pool, 1 << 20, NULL, &tree));
    int32_t toks[CTX];
    for (int i = 0; i < CTX; i++)
        toks[i] = 1000 + i;
    ft_kv_table_t a, b;
    assert_null(ft_kv_table_init(&a, pool, CTX, NULL));
    assert_null(ft_kv_table_init(&b, pool, CTX, NULL));
    write_rows(&a, 1, 0, 10); /* 2 full pages and 2 tokens */
    assert_null(ft_kv_table_publish(&a, tree, toks, 10, FT_KV_PRIO_NORMAL));
    assert_int_equal(a.n_published, 2);
    uint32_t n = 0;
    assert_null(ft_kv_table_restore(&b, tree, toks, 9, NULL, 0, FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 8); /* the full pages; the partial one is not shared */
    assert_int_equal(b.pages[0], a.pages[0]);
    assert_int_equal(b.pages[1], a.pages[1]);
    assert_int_equal(ft_kv_page_refs(pool, a.pages[0]), 3); /* a, b, the tree */
    /* b diverges after the prefix: a's rows stay a's. */
    write_rows(&b, 2, 8, 5);
    check_rows(&b, 13, 1, 2, 8);
    check_rows(&a, 10, 1, 1, 10);
    /* b rewinds into a shared page and writes: copy on write. */
    ft_kv_table_truncate(&b, 6);
    assert_int_equal(b.n_published, 1);
    const uint32_t shared = b.pages[1];
    write_rows(&b, 3, 6, 3);
    assert_int_not_equal(b.pages[1], shared);
    check_rows(&a, 10, 1, 1, 10);
    check_rows(&b, 9, 1, 3, 6);
    /* A diverging token sequence matches only its common full pages. */
    int32_t other[CTX];
    memcpy(other, toks, sizeof(other));
    other[5] = 7;
    ft_kv_table_t c;
    assert_null(ft_kv_table_init(&c, pool, CTX, NULL));
    assert_null(ft_kv_table_restore(&c, tree, other, 20, NULL, 0, FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 4);
    ft_kv_table_free(&c, NULL);
    ft_kv_table_free(&a, NULL);
    ft_kv_table_free(&b, NULL);
    ft_kv_tree_stats_t ts;
    ft_kv_tree_stats(tree, &ts);
    assert_int_equal(ts.n_nodes, 2);
    ft_kv_tree_destroy(tree);
    ft_kv_pool_stats_t ps;
    ft_kv_pool_stats(pool, &ps);
    assert_int_equal(ps.pages_used, 0);
    ft_kv_pool_destroy(pool);
}

static void test_anchor_restore(void **state)
{
    (void)state;
    ft_kv_pool_t *pool = new_pool(64);
    ft_kv_tree_t *tree = NULL;
    assert_null(ft_kv_tree_create(pool, 1 << 20, NULL, &tree));
    int32_t toks[CTX];
    for (int i = 0; i < CTX; i++)
        toks[i] = 50 + i * 3;
    uint8_t rs[37], got[37];
    for (int i = 0; i < 37; i++)
        rs[i] = (uint8_t)(i * 7 + 1);
    ft_kv_table_t a, b;
    assert_null(ft_kv_table_init(&a, pool, CTX, NULL));
    write_rows(&a, 1, 0, 14);
    assert_null(ft_kv_table_anchor(&a, tree, toks, 6, rs, sizeof(rs), FT_KV_PRIO_NORMAL));
    rs[0] ^= 0xff; /* the state at 13 differs */
    assert_null(ft_kv_table_anchor(&a, tree, toks, 13, rs, sizeof(rs), FT_KV_PRIO_NORMAL));
    /* With state: only anchors restore; the deepest one within the limit. */
    assert_null(ft_kv_table_init(&b, pool, CTX, NULL));
    uint32_t n = 0;
    assert_null(ft_kv_table_restore(&b, tree, toks, 12, got, sizeof(got), FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 6);
    rs[0] ^= 0xff;
    assert_memory_equal(got, rs, sizeof(rs));
    check_rows(&b, 6, 1, 1, 6);
    assert_int_not_equal(b.pages[1], a.pages[1]); /* the tail page is a copy */
    ft_kv_table_truncate(&b, 0);
    assert_null(ft_kv_table_restore(&b, tree, toks, 40, got, sizeof(got), FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 13);
    rs[0] ^= 0xff;
    assert_memory_equal(got, rs, sizeof(rs));
    check_rows(&b, 13, 1, 1, 13);
    /* An edited tail does not match the anchor inside its page. */
    ft_kv_table_truncate(&b, 0);
    int32_t edit[CTX];
    memcpy(edit, toks, sizeof(edit));
    edit[12] = 1;
    assert_null(ft_kv_table_restore(&b, tree, edit, 40, got, sizeof(got), FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 6);
    ft_kv_table_free(&b, NULL);
    ft_kv_table_free(&a, NULL);
    /* The state budget: a state larger than it is refused. */
    ft_kv_tree_destroy(tree);
    assert_null(ft_kv_tree_create(pool, 16, NULL, &tree));
    assert_null(ft_kv_table_init(&a, pool, CTX, NULL));
    write_rows(&a, 1, 0, 4);
    ft_status_t st = ft_kv_table_anchor(&a, tree, toks, 2, rs, sizeof(rs), FT_KV_PRIO_NORMAL);
    assert_int_equal(ft_status_code(st), FT_STATUS_RESOURCE_EXHAUSTED);
    ft_status_free(st);
    ft_kv_table_free(&a, NULL);
    ft_kv_tree_destroy(tree);
    ft_kv_pool_destroy(pool);
}

static void test_eviction(void **state)
{
    (void)state;
    ft_kv_pool_t *pool = new_pool(8);
    ft_kv_tree_t *tree = NULL;
    assert_null(ft_kv_tree_create(pool, 1 << 20, NULL, &tree));
    int32_t conv[CTX], side[CTX];
    for (int i = 0; i < CTX; i++) {
        conv[i] = i;
        side[i] = 500 + i;
    }
    /* A conversation caches 4 pages, then ends. */
    ft_kv_table_t t;
    assert_null(ft_kv_table_init(&t, pool, CTX, NULL));
    write_rows(&t, 1, 0, 16);
    assert_null(ft_kv_table_publish(&t, tree, conv, 16, FT_KV_PRIO_NORMAL));
    ft_kv_table_free(&t, NULL);
    /* Side requests (low priority) of 3 pages each come and go: with 4
     * pages left they evict each other, never the conversation's. */
    for (int r = 0; r < 5; r++) {
        side[0] = 500 + r;
        assert_null(ft_kv_table_init(&t, pool, CTX, NULL));
        write_rows(&t, 10 + (uint32_t)r, 0, 12);
        assert_null(ft_kv_table_publish(&t, tree, side, 12, FT_KV_PRIO_LOW));
        ft_kv_table_free(&t, NULL);
    }
    assert_null(ft_kv_table_init(&t, pool, CTX, NULL));
    uint32_t n = 0;
    assert_null(ft_kv_table_restore(&t, tree, conv, 17, NULL, 0, FT_KV_PRIO_NORMAL, &n));
    assert_int_equal(n, 16);
    check_rows(&t, 16, 1, 1, 16);
    /* Held pages are never evicted: 4 held, 4 more fit (evicting the
     * side pages), the 9th page is refused. */
    ft_kv_table_t u;
    assert_null(ft_kv_table_init(&u, pool, CTX, NULL));
    write_rows(&u, 7, 0, 16);
    ft_status_t st = ft_kv_table_prepare(&u, 16, 1);
    assert_int_equal(ft_status_code(st), FT_STATUS_RESOURCE_EXHAUSTED);
    ft_status_free(st);
    check_rows(&t, 16, 1, 1, 16);
    check_rows(&u, 16, 7, 7, 16);
    /* Once the conversation lets go, its pages are the ones to evict. */
    ft_kv_table_free(&t, NULL);
    assert_null(ft_kv_table_prepare(&u, 16, 1));
    ft_kv_tree_stats_t ts;
    ft_kv_tree_stats(tree, &ts);
    assert_true(ts.evicted_nodes >= 4);
    ft_kv_table_free(&u, NULL);
    ft_kv_tree_destroy(tree);
    ft_kv_pool_destroy(pool);
}

/* Two tables compute the same tokens at once: the second to publish takes
 * the tree's page, so the node it builds on stays while it needs it, even
 * when the first table is gone and the pool needs pages. */
static void test_publish_twice(void **state)
{
    (void)state;
    ft_kv_pool_t *pool = new_pool(6);
    ft_kv_tree_t *tree = NULL;
    assert_null(ft_kv_tree_create(pool, 1 << 20, NULL, &tree));
    int32_t toks[CTX];
    for (int i = 0; i < CTX; i++)
        toks[i] = 7 + i;
    ft_kv_table_t a, b;
    assert_null(ft_kv_table_init(&a, pool, CTX, NULL));
    assert_null(ft_kv_table_init(&b, pool, CTX, NULL));
    write_rows(&a, 1, 0, 8);
    write_rows(&b, 1, 0, 8);
    assert_null(ft_kv_table_publish(&a, tree, toks, 8, FT_KV_PRIO_NORMAL));
    assert_null(ft_kv_table_publish(&b, tree, toks, 8, FT_KV_PRIO_NORMAL));
    assert_int_equal(b.pages[0], a.pages[0]);
    assert_int_equal(b.pages[1], a.pages[1]);
    ft_kv_pool_stats_t ps;
    ft_kv_pool_stats(pool, &ps);
    assert_int_equal(ps.pages_used, 2); /* one copy */
    ft_kv_table_free(&a, NULL);
    /* b fills the pool; the pages it holds are not evicted under it. */
    write_rows(&b, 1, 8, 16);
    assert_null(ft_kv_table_publish(&b, tree, toks, 24, FT_KV_PRIO_NORMAL));
    check_rows(&b, 24, 1, 1, 24);
    ft_kv_tree_stats_t ts;
    ft_kv_tree_stats(tree, &ts);
    assert_int_equal(ts.n_nodes, 6);
    ft_kv_table_free(&b, NULL);
    ft_kv_tree_destroy(tree);
    ft_kv_pool_destroy(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_budget),    cmocka_unit_test(test_prefix_share_and_cow),
        cmocka_unit_test(test_anchor_restore), cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_publish_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
