#include "figure.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int ft_hwp_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

char *ft_hwp_strdup(const char *s)
{
    size_t n = strlen(s ? s : "") + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s ? s : "", n);
    return p;
}

Fthw__Figure *ft_hwp_figure(double *samples, uint32_t n, Fthw__Source source, const char *note)
{
    if (n == 0)
        return NULL;
    Fthw__Figure *f = malloc(sizeof(*f));
    if (!f)
        return NULL;
    fthw__figure__init(f);
    f->note = ft_hwp_strdup(note);
    if (!f->note) {
        free(f);
        return NULL;
    }
    qsort(samples, n, sizeof(double), ft_hwp_cmp);
    /* Even counts: the mean of the two middle samples. */
    f->median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
    f->min = samples[0];
    f->max = samples[n - 1];
    f->n_runs = n;
    f->source = source;
    return f;
}

Fthw__Figure *ft_hwp_figure1(double v, Fthw__Source source, const char *note)
{
    return ft_hwp_figure(&v, 1, source, note);
}

int ft_hwp_push(void *arr_of_ptrs, size_t *n, void *elem, int is_message)
{
    void ***arr = arr_of_ptrs;
    if (!elem)
        return -1;
    void **p = realloc(*arr, (*n + 1) * sizeof(void *));
    if (!p) {
        if (is_message)
            protobuf_c_message_free_unpacked(elem, NULL);
        else
            free(elem);
        return -1;
    }
    p[*n] = elem;
    *arr = p;
    (*n)++;
    return 0;
}

double ft_hwp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
