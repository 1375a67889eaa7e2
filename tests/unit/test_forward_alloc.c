/* The decode step allocates nothing: an engine opened with a counting
 * ft_allocator_t, warmed up with a prompt and one decode step, then
 * decodes more tokens (and prefills another batch) while the counts stay
 * still. Also: the hook is really used, and everything it handed out is
 * given back when the session and engine close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ref_bundle.h"
#include "ref_check.h"
#include "ref_ops.h"
#include "test_tmp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct counting {
    atomic_long n_calls; /* alloc + realloc calls */
    atomic_long n_live;  /* blocks handed out and not yet freed */
} counting_t;

static void *count_alloc(void *user, size_t n)
{
    counting_t *c = user;
    void *p = malloc(n ? n : 1);
    atomic_fetch_add(&c->n_calls, 1);
    if (p) atomic_fetch_add(&c->n_live, 1);
    return p;
}

static void *count_realloc(void *user, void *p, size_t n)
{
    counting_t *c = user;
    void *q = realloc(p, n ? n : 1);
    atomic_fetch_add(&c->n_calls, 1);
    if (q && !p) atomic_fetch_add(&c->n_live, 1);
    return q;
}

static void count_free(void *user, void *p)
{
    counting_t *c = user;
    if (p) atomic_fetch_sub(&c->n_live, 1);
    free(p);
}

static void test_decode_allocates_nothing(void **state)
{
    ft_fixture_opts_t o;
    ft_fixture_opts_init(&o);
    char bundle[4096];
    FT_REF_OK(ft_ref_build_bundle(&o, FT_REF_FROM_GGUF, FT_DTYPE_Q8_0, ft_test_tmpdir("alloc"),
                                  bundle, sizeof(bundle)));
    counting_t c;
    atomic_init(&c.n_calls, 0);
    atomic_init(&c.n_live, 0);
    const ft_allocator_t a = {count_alloc, count_realloc, count_free, &c};
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.allocator = &a;
    eo.n_threads = 2;
    ft_engine_t *e;
    ft_session_t *s;
    FT_REF_OK(ft_engine_open(bundle, &eo, &e));
    ft_session_options_t so;
    ft_session_options_init(&so);
    so.n_ctx = 64;
    so.n_batch = 8;
    FT_REF_OK(ft_session_create(e, &so, &s));
    assert_true(atomic_load(&c.n_calls) > 0); /* the engine uses the hook */
    const uint32_t V = ft_engine_info(e)->vocab_size;

    const int32_t prompt[12] = {17, 300, 5, 5, 120, 77, 562, 0, 42, 9, 256, 31};
    FT_REF_OK(ft_session_eval(s, prompt, 12, NULL)); /* warm-up: a prefill */
    int32_t tok = (int32_t)ft_ref_argmax_f(ft_session_logits(s), V);
    FT_REF_OK(ft_session_eval(s, &tok, 1, NULL)); /* and one decode step */

    const long before = atomic_load(&c.n_calls);
    for (int i = 0; i < 16; i++) {
        tok = (int32_t)ft_ref_argmax_f(ft_session_logits(s), V);
        FT_REF_OK(ft_session_eval(s, &tok, 1, NULL));
    }
    const long after_decode = atomic_load(&c.n_calls);
    print_message("allocator calls: %ld to open and warm up, %ld in 16 decode steps\n", before,
                  after_decode - before);
    assert_int_equal(after_decode - before, 0);
    /* The header promises more: a prefill batch allocates nothing either. */
    FT_REF_OK(ft_session_eval(s, prompt, 8, NULL));
    assert_int_equal(atomic_load(&c.n_calls) - after_decode, 0);

    ft_session_destroy(s);
    ft_engine_close(e);
    assert_int_equal(atomic_load(&c.n_live), 0); /* all given back */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_allocates_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
