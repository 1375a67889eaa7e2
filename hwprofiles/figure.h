/* Building profile messages: figures from samples, owned strings, and
 * appending to repeated fields. Messages are allocated with malloc so
 * that fthw__profile__free_unpacked(p, NULL) releases a whole profile.
 * Every helper returns NULL (or -1) on out-of-memory and the caller turns
 * that into an ft_status_t. */
#ifndef FT_HWPROFILES_FIGURE_H
#define FT_HWPROFILES_FIGURE_H

#include "hwprofile.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* Median, min and max of n samples (n >= 1; the array is sorted in place). */
Fthw__Figure *ft_hwp_figure(double *samples, uint32_t n, Fthw__Source source, const char *note);
/* One reading: median = min = max = v, n_runs = 1. */
Fthw__Figure *ft_hwp_figure1(double v, Fthw__Source source, const char *note);

/* A malloc'ed copy (protobuf-c frees it). */
char *ft_hwp_strdup(const char *s);

/* Appends elem (a message when is_message, else a malloc'ed string) to a
 * repeated field (array *arr of *n pointers); on failure elem is freed. */
int ft_hwp_push(void *arr_of_ptrs, size_t *n, void *elem, int is_message);

/* Seconds on a monotonic clock. */
double ft_hwp_now(void);

#endif
