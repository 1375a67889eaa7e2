/* The free-VRAM polling policy of the CUDA backend (runtime/moe/vram_policy):
 * when another program takes or returns device memory, which budget to
 * re-plan to. Pure arithmetic, so every case is checked here without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "moe/vram_policy.h"

#define MiB (1ull << 20)

static ft_vram_policy_t policy(void)
{
    ft_vram_policy_t p;
    ft_vram_policy_init(&p, 1000 * MiB, 8000 * MiB);
    p.headroom_bytes = 100 * MiB;
    p.grow_margin_bytes = 50 * MiB;
    return p;
}

static void test_steady_state_keeps_budget(void **state)
{
    (void)state;
    const ft_vram_policy_t p = policy();
    /* We hold 3000 MiB under a 3000 MiB budget; 100 MiB free is exactly
     * the headroom: nothing to do. */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 3000 * MiB, 100 * MiB), 0);
    /* A little more free, below the grow margin: still nothing. */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 3000 * MiB, 149 * MiB), 0);
}

static void test_shrinks_when_memory_is_taken(void **state)
{
    (void)state;
    const ft_vram_policy_t p = policy();
    /* Someone took memory: only 40 MiB free, so 3000 + 40 - 100 remain. */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 3000 * MiB, 40 * MiB), 2940 * MiB);
    /* Never below the resident minimum... */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 900 * MiB, 0), 1000 * MiB);
    /* ...and no re-plan when the budget already is the minimum. */
    assert_int_equal(ft_vram_policy_decide(&p, 1000 * MiB, 1000 * MiB, 0), 0);
}

static void test_grows_with_hysteresis(void **state)
{
    (void)state;
    const ft_vram_policy_t p = policy();
    /* 150 MiB more than the budget after the headroom: grow to it. */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 3000 * MiB, 250 * MiB), 3150 * MiB);
    /* After growing, the same free memory (now ours) gives no new change:
     * the decision is stable, no oscillation. */
    assert_int_equal(ft_vram_policy_decide(&p, 3150 * MiB, 3150 * MiB, 100 * MiB), 0);
    /* Never above the budget that holds everything. */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 3000 * MiB, 90000 * MiB), 8000 * MiB);
    assert_int_equal(ft_vram_policy_decide(&p, 8000 * MiB, 8000 * MiB, 90000 * MiB), 0);
    /* A budget above the cap is not shrunk while memory is there. */
    assert_int_equal(ft_vram_policy_decide(&p, 9000 * MiB, 9000 * MiB, 500 * MiB), 0);
}

static void test_absurd_numbers_saturate(void **state)
{
    (void)state;
    ft_vram_policy_t p = policy();
    p.max_bytes = 0; /* no cap */
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, UINT64_MAX, UINT64_MAX),
                     UINT64_MAX - 100 * MiB);
    assert_int_equal(ft_vram_policy_decide(&p, 3000 * MiB, 0, 0), 1000 * MiB);
}

static void test_poll_rate_limit(void **state)
{
    (void)state;
    ft_vram_policy_t p = policy();
    p.every_steps = 4;
    p.every_ns = 1000;
    assert_false(ft_vram_policy_due(&p, 3, 0, 5000)); /* too few steps */
    assert_false(ft_vram_policy_due(&p, 4, 0, 999));  /* too soon */
    assert_true(ft_vram_policy_due(&p, 4, 0, 1000));
    assert_false(ft_vram_policy_due(&p, 9, 2000, 1000)); /* a clock going back is not due */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_state_keeps_budget),
        cmocka_unit_test(test_shrinks_when_memory_is_taken),
        cmocka_unit_test(test_grows_with_hysteresis),
        cmocka_unit_test(test_absurd_numbers_saturate),
        cmocka_unit_test(test_poll_rate_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
