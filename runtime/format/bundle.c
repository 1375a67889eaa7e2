#include "bundle.h"

#include "plan_file.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FT_BUNDLE_PLAN "plan.ftp"

static int ft_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int ft_is_plan_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char magic[8];
    int ok = fread(magic, 1, 8, f) == 8 && memcmp(magic, FT_PLAN_MAGIC, 8) == 0;
    fclose(f);
    return ok;
}

int ft_bundle_is_bundle(const char *path)
{
    if (ft_is_dir(path)) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/%s", path, FT_BUNDLE_PLAN);
        return access(p, F_OK) == 0;
    }
    return ft_is_plan_file(path);
}

ft_status_t ft_bundle_open(const char *path, ft_bundle_t **out_bundle)
{
    *out_bundle = NULL;
    ft_bundle_t *b = calloc(1, sizeof(*b));
    if (!b)
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    ft_status_t st = FT_OK;
    char plan_path[4096];
    if (ft_is_dir(path)) {
        b->dir = strdup(path);
        snprintf(plan_path, sizeof(plan_path), "%s/%s", path, FT_BUNDLE_PLAN);
    } else {
        const char *slash = strrchr(path, '/');
        b->dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
        snprintf(plan_path, sizeof(plan_path), "%s", path);
    }
    if (!b->dir) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    if ((st = ft_mapped_file_open(plan_path, &b->plan_file)) ||
        (st = ft_plan_read_mem(b->plan_file->data, b->plan_file->size, plan_path, &b->plan)))
        goto fail;
    b->weight_files = calloc(b->plan->n_weight_files ? b->plan->n_weight_files : 1, sizeof(ft_ftw_t *));
    if (!b->weight_files) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    b->n_weight_files = (uint32_t)b->plan->n_weight_files;
    for (uint32_t i = 0; i < b->n_weight_files; i++) {
        const Ftplan__WeightFile *wf = b->plan->weight_files[i];
        char wpath[4096];
        snprintf(wpath, sizeof(wpath), "%s/%s", b->dir, wf->name); /* name validated: plain */
        if ((st = ft_ftw_open(wpath, &b->weight_files[i])) ||
            (st = ft_ftw_check(b->weight_files[i], wf->size, wf->content_hash.data))) {
            st = ft_status_annotate(st, "%s: weight file %u of the plan", plan_path, i);
            goto fail;
        }
    }
    *out_bundle = b;
    return FT_OK;
fail:
    ft_bundle_close(b);
    return st;
}

ft_status_t ft_bundle_verify(const ft_bundle_t *b)
{
    for (uint32_t i = 0; i < b->n_weight_files; i++) {
        ft_status_t st = ft_ftw_verify(b->weight_files[i]);
        if (st)
            return st;
    }
    return FT_OK;
}

void ft_bundle_close(ft_bundle_t *b)
{
    if (!b)
        return;
    for (uint32_t i = 0; i < b->n_weight_files; i++)
        ft_ftw_close(b->weight_files[i]);
    free(b->weight_files);
    ft_plan_free(b->plan);
    ft_mapped_file_close(b->plan_file);
    free(b->dir);
    free(b);
}

static void ft_bundle_hex(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = 0;
}

void ft_bundle_ids(const Ftplan__Plan *plan, const uint8_t *plan_file, uint64_t plan_bytes,
                   char plan_hex[FT_BUNDLE_PLAN_HEX_BYTES],
                   char weights_hex[FT_BUNDLE_WEIGHTS_HEX_BYTES])
{
    XXH64_canonical_t h;
    XXH64_canonicalFromHash(&h, XXH3_64bits(plan_file, (size_t)plan_bytes));
    ft_bundle_hex(h.digest, sizeof(h.digest), plan_hex);
    weights_hex[0] = 0;
    if (plan->n_weight_files && plan->weight_files[0]->content_hash.len == 16)
        ft_bundle_hex(plan->weight_files[0]->content_hash.data, 16, weights_hex);
}
