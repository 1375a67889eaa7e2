/* A STREAM-style triad, a[i] = b[i] + s * c[i], on every online CPU with
 * pthreads: an independent measure of DRAM bandwidth that
 * scripts/check-profile.sh compares with `ftc profile`. Counts 24 bytes per
 * element as STREAM does (two reads and one write; the write-allocate read
 * is not counted). Prints the best of N runs in GB/s, as STREAM reports.
 *
 * Usage: stream_triad [MiB per array] [runs] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double *a, *b, *c;
static size_t n;
static long n_threads;
static pthread_barrier_t start, done;

static void *worker(void *arg)
{
    long t = (long)arg;
    size_t lo = n * (size_t)t / (size_t)n_threads, hi = n * (size_t)(t + 1) / (size_t)n_threads;
    for (size_t i = lo; i < hi; i++) /* first touch: pages local to the thread */
        a[i] = 0, b[i] = 1.0, c[i] = 2.0;
    for (;;) {
        pthread_barrier_wait(&start);
        if (!a)
            return NULL;
        for (size_t i = lo; i < hi; i++)
            a[i] = b[i] + 3.0 * c[i];
        pthread_barrier_wait(&done);
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    int runs = argc > 2 ? atoi(argv[2]) : 10;
    n = mib * (1u << 20) / sizeof(double);
    n_threads = sysconf(_SC_NPROCESSORS_ONLN);
    if (n_threads < 1)
        n_threads = 1;
    a = aligned_alloc(4096, n * sizeof(double));
    b = aligned_alloc(4096, n * sizeof(double));
    c = aligned_alloc(4096, n * sizeof(double));
    if (!a || !b || !c || runs < 1)
        return 1;
    pthread_barrier_init(&start, NULL, (unsigned)n_threads + 1);
    pthread_barrier_init(&done, NULL, (unsigned)n_threads + 1);
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)n_threads);
    for (long t = 0; t < n_threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    double best = 0;
    for (int r = 0; r <= runs; r++) {
        double t0 = now();
        pthread_barrier_wait(&start);
        pthread_barrier_wait(&done);
        double gbs = 24.0 * (double)n / (now() - t0) / 1e9;
        if (r > 0 && gbs > best) /* run 0 is a warm-up */
            best = gbs;
    }
    double *keep = a;
    a = NULL;
    pthread_barrier_wait(&start);
    for (long t = 0; t < n_threads; t++)
        pthread_join(th[t], NULL);
    printf("%.3f\n", best);
    free(keep);
    free(b);
    free(c);
    free(th);
    return 0;
}
