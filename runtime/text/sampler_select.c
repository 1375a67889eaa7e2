/* Candidate selection and sorting (see sampler_select.h). Neither
 * allocates: libc's qsort may (glibc merges through a heap buffer), and
 * the sampling step must not. */
#include "sampler_select.h"

static void ft_sel_swap(ft_sampler_cand_t *c, size_t i, size_t j)
{
    ft_sampler_cand_t t = c[i];
    c[i] = c[j];
    c[j] = t;
}

/* A pivot index in [lo, hi]: the median of three positions, one of them
 * spread by a fixed hash so that sorted or reversed logits cost no more
 * than random ones (the result never depends on the pivot choice). */
static size_t ft_sel_pivot(const ft_sampler_cand_t *c, size_t lo, size_t hi)
{
    uint64_t h = (uint64_t)lo * 0x9e3779b97f4a7c15ull ^ (uint64_t)hi * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 31;
    size_t a = lo, b = lo + (size_t)(h % (hi - lo + 1)), m = lo + (hi - lo) / 2;
    if (ft_sampler_cand_before(&c[b], &c[a])) {
        size_t t = a;
        a = b;
        b = t;
    }
    /* now c[a] before c[b]; place m */
    if (ft_sampler_cand_before(&c[m], &c[a])) return a;
    if (ft_sampler_cand_before(&c[b], &c[m])) return b;
    return m;
}

/* Lomuto partition of c[lo..hi] around the pivot; returns its final place. */
static size_t ft_sel_partition(ft_sampler_cand_t *c, size_t lo, size_t hi, size_t pivot)
{
    ft_sel_swap(c, pivot, hi);
    size_t store = lo;
    for (size_t i = lo; i < hi; i++)
        if (ft_sampler_cand_before(&c[i], &c[hi])) ft_sel_swap(c, i, store++);
    ft_sel_swap(c, store, hi);
    return store;
}

void ft_sampler_select(ft_sampler_cand_t *c, size_t n, size_t k)
{
    if (k == 0 || k >= n) return;
    /* Quickselect for the boundary element at index k - 1: afterwards
     * everything before it comes before it in the order. */
    size_t lo = 0, hi = n - 1;
    const size_t target = k - 1;
    while (lo < hi) {
        size_t p = ft_sel_partition(c, lo, hi, ft_sel_pivot(c, lo, hi));
        if (p == target) return;
        if (p < target)
            lo = p + 1;
        else
            hi = p - 1;
    }
}

/* Heap with the *last* candidate at the root, so popping to the end
 * leaves the array in order. */
static void ft_sel_sift(ft_sampler_cand_t *c, size_t root, size_t n)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n) return;
        if (child + 1 < n && ft_sampler_cand_before(&c[child], &c[child + 1])) child++;
        if (!ft_sampler_cand_before(&c[root], &c[child])) return;
        ft_sel_swap(c, root, child);
        root = child;
    }
}

void ft_sampler_sort(ft_sampler_cand_t *c, size_t n)
{
    if (n < 2) return;
    for (size_t i = n / 2; i-- > 0;)
        ft_sel_sift(c, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        ft_sel_swap(c, 0, end);
        ft_sel_sift(c, 0, end);
    }
}
