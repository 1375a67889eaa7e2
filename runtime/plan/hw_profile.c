#include "hw_profile.h"

#include "../format/textproto.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The median of an optional figure; 0 when absent. Rejects negative and
 * non-finite values, naming the field. */
FT_WARN_UNUSED static ft_status_t ft_hw_fig(const Fthw__Figure *f, const char *field, double *out)
{
    *out = 0;
    if (!f)
        return FT_OK;
    if (!isfinite(f->median) || f->median < 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: median %g is not a finite value >= 0", field,
                              f->median);
    *out = f->median;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hw_fig_u64(const Fthw__Figure *f, const char *field, uint64_t *out)
{
    double v;
    ft_status_t st = ft_hw_fig(f, field, &v);
    if (st)
        return st;
    if (v >= 18446744073709549568.0) /* the largest double below 2^64 */
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: %g does not fit 64 bits", field, v);
    *out = (uint64_t)v;
    return FT_OK;
}

static void ft_hw_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* Per format: total bytes over total time of every listed shape, with
 * bytes taken as rows * cols (the same element size within a format). */
FT_WARN_UNUSED static ft_status_t ft_hw_gemv(Fthw__GemvRate *const *rates, size_t n, const char *where,
                              double out[FT_DTYPE_COUNT])
{
    double elems[FT_DTYPE_COUNT] = {0}, secs[FT_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        const Fthw__GemvRate *r = rates[i];
        ft_dtype_t t = ft_dtype_from_name(r->format ? r->format : "");
        if (t == FT_DTYPE_INVALID)
            return ft_status_make(FT_STATUS_FORMAT, "%s.gemv[%zu]: unknown format '%s'", where, i,
                                  r->format ? r->format : "");
        double gbs;
        ft_status_t st = ft_hw_fig(r->weight_gbs, "gemv.weight_gbs", &gbs);
        if (st)
            return ft_status_annotate(st, "%s.gemv[%zu]", where, i);
        if (gbs <= 0)
            continue;
        /* Presets may omit the shape: count each entry as one unit. */
        double e = r->rows && r->cols ? (double)r->rows * r->cols : 1.0;
        elems[t] += e;
        secs[t] += e / gbs;
    }
    for (int t = 0; t < FT_DTYPE_COUNT; t++)
        out[t] = secs[t] > 0 ? elems[t] / secs[t] : 0;
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_hw_from_gpu(const Fthw__Gpu *g, ft_hw_t *out)
{
    ft_hw_gpu_t *o = &out->gpu;
    ft_status_t st;
    ft_hw_name(o->name, sizeof(o->name), g->name);
    o->cc_major = g->cc_major;
    o->cc_minor = g->cc_minor;
    o->unified_memory = g->unified_memory != 0;
    double ov;
    if ((st = ft_hw_fig_u64(g->vram_total_bytes, "vram_total_bytes", &o->vram_bytes)) ||
        (st = ft_hw_fig_u64(g->vram_free_bytes, "vram_free_bytes", &o->vram_free_bytes)) ||
        (st = ft_hw_fig(g->hbm_gbs, "hbm_gbs", &o->hbm_gbs)) ||
        (st = ft_hw_fig(g->h2d_gbs, "h2d_gbs", &o->h2d_gbs)) ||
        (st = ft_hw_fig(g->h2d_overlap_gbs, "h2d_overlap_gbs", &o->h2d_overlap_gbs)) ||
        (st = ft_hw_fig(g->d2h_gbs, "d2h_gbs", &o->d2h_gbs)) ||
        (st = ft_hw_fig(g->gather_gbs, "gather_gbs", &o->gather_gbs)) ||
        (st = ft_hw_fig(g->launch_us, "launch_us", &o->launch_us)) ||
        (st = ft_hw_fig(g->gemm_tflops, "gemm_tflops", &o->gemm_tflops)) ||
        (st = ft_hw_fig(g->cpu_gemv_overlap_gbs, "cpu_gemv_overlap_gbs", &ov)) ||
        (st = ft_hw_gemv(g->gemv, g->n_gemv, "gpus[0]", o->gemv_gbs)))
        return ft_status_annotate(st, "gpus[0]");
    if (o->h2d_gbs <= 0)
        return ft_status_make(FT_STATUS_FORMAT, "gpus[0].h2d_gbs: missing or not positive");
    if (o->vram_free_bytes == 0 || o->vram_free_bytes > o->vram_bytes)
        o->vram_free_bytes = o->vram_bytes;
    out->dram_overlap_gbs = ov;
    return FT_OK;
}

ft_status_t ft_hw_from_profile(const Fthw__Profile *p, ft_hw_t *out)
{
    memset(out, 0, sizeof(*out));
    const Fthw__Cpu *c = p ? p->cpu : NULL;
    if (!c)
        return ft_status_make(FT_STATUS_FORMAT, "profile: no cpu section");
    ft_hw_name(out->cpu_name, sizeof(out->cpu_name), c->model);
    double cores;
    ft_status_t st;
    if ((st = ft_hw_fig(c->n_cores, "cpu.n_cores", &cores)) ||
        (st = ft_hw_fig_u64(c->ram_bytes, "cpu.ram_bytes", &out->ram_bytes)) ||
        (st = ft_hw_fig(c->dram_read_gbs, "cpu.dram_read_gbs", &out->dram_gbs)) ||
        (st = ft_hw_fig(c->dram_read_1t_gbs, "cpu.dram_read_1t_gbs", &out->dram_1t_gbs)) ||
        (st = ft_hw_gemv(c->gemv, c->n_gemv, "cpu", out->cpu_gemv_gbs)))
        return ft_status_annotate(st, "profile");
    out->n_cores = cores >= 1 && cores < 1e6 ? (uint32_t)cores : 1;
    if (out->dram_gbs <= 0)
        return ft_status_make(FT_STATUS_FORMAT, "profile: cpu.dram_read_gbs missing or not positive");
    /* A preset may state only the all-thread figure. */
    if (out->dram_1t_gbs <= 0)
        out->dram_1t_gbs = out->dram_gbs;
    if (p->n_gpus > 0) {
        out->n_gpus = 1;
        if ((st = ft_hw_from_gpu(p->gpus[0], out)))
            return ft_status_annotate(st, "profile");
    }
    return FT_OK;
}

ft_status_t ft_hw_profile_load(const char *path, Fthw__Profile **out_profile)
{
    ProtobufCMessage *m = NULL;
    ft_status_t st = ft_textproto_parse_file(&fthw__profile__descriptor, path, &m);
    *out_profile = (Fthw__Profile *)m;
    return st;
}

ft_status_t ft_hw_load(const char *path, ft_hw_t *out)
{
    Fthw__Profile *p = NULL;
    ft_status_t st = ft_hw_profile_load(path, &p);
    if (!st)
        st = ft_status_annotate(ft_hw_from_profile(p, out), "%s", path);
    if (p)
        fthw__profile__free_unpacked(p, NULL);
    return st;
}

static int ft_hw_gpu_same(const ft_hw_gpu_t *a, const ft_hw_gpu_t *b)
{
    for (int f = 0; f < FT_DTYPE_COUNT; f++)
        if (a->gemv_gbs[f] != b->gemv_gbs[f])
            return 0;
    return strncmp(a->name, b->name, sizeof(a->name)) == 0 && a->cc_major == b->cc_major &&
           a->cc_minor == b->cc_minor && a->vram_bytes == b->vram_bytes && a->vram_free_bytes == b->vram_free_bytes &&
           a->hbm_gbs == b->hbm_gbs && a->h2d_gbs == b->h2d_gbs && a->h2d_overlap_gbs == b->h2d_overlap_gbs &&
           a->d2h_gbs == b->d2h_gbs && a->gather_gbs == b->gather_gbs && a->launch_us == b->launch_us &&
           a->gemm_tflops == b->gemm_tflops && a->unified_memory == b->unified_memory;
}

int ft_hw_same(const ft_hw_t *a, const ft_hw_t *b)
{
    for (int f = 0; f < FT_DTYPE_COUNT; f++)
        if (a->cpu_gemv_gbs[f] != b->cpu_gemv_gbs[f] || a->cpu_gemm_gflops[f] != b->cpu_gemm_gflops[f])
            return 0;
    /* Field by field: a struct copy need not keep the padding memcmp would read. */
    return strncmp(a->cpu_name, b->cpu_name, sizeof(a->cpu_name)) == 0 && a->n_cores == b->n_cores &&
           a->ram_bytes == b->ram_bytes && a->dram_gbs == b->dram_gbs && a->dram_1t_gbs == b->dram_1t_gbs &&
           a->dram_overlap_gbs == b->dram_overlap_gbs && a->n_gpus == b->n_gpus &&
           (a->n_gpus == 0 || ft_hw_gpu_same(&a->gpu, &b->gpu));
}
