/* The safetensors shards of an HF directory: which files, and every tensor
 * in them. Each shard is mapped only while its header is read; the source
 * model keeps paths and absolute offsets, and the compiler maps again. */
#include "hf_internal.h"
#include "safetensors.h"

#include "../../runtime/base/mapped_file.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FT_HF_INDEX_NAME "model.safetensors.index.json"

typedef struct ft_hf_shards {
    char **names; /* heap strings, sorted, unique */
    uint32_t n, cap;
} ft_hf_shards_t;

typedef struct ft_hf_tensors {
    ft_src_tensor_t *v; /* heap; names already in the model's arena */
    uint32_t n, cap;
} ft_hf_tensors_t;

static void ft_hf_shards_free(ft_hf_shards_t *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    memset(s, 0, sizeof(*s));
}

static int ft_hf_shards_push(ft_hf_shards_t *s, const char *name)
{
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? s->cap * 2 : 8;
        char **v = cap > s->cap ? realloc(s->names, (size_t)cap * sizeof(*v)) : NULL;
        if (!v) return 0;
        s->names = v;
        s->cap = cap;
    }
    if (!(s->names[s->n] = strdup(name))) return 0;
    s->n++;
    return 1;
}

static int ft_hf_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ft_hf_shards_sort_unique(ft_hf_shards_t *s)
{
    if (s->n < 2) return;
    qsort(s->names, s->n, sizeof(*s->names), ft_hf_cmp_str);
    uint32_t w = 1;
    for (uint32_t i = 1; i < s->n; i++) {
        if (strcmp(s->names[i], s->names[w - 1]) == 0)
            free(s->names[i]);
        else
            s->names[w++] = s->names[i];
    }
    s->n = w;
}

/* A shard must be a plain file name inside the directory. */
static int ft_hf_shard_name_ok(const char *name)
{
    return name[0] != '\0' && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
           !strchr(name, '/');
}

/* Collects the shard names of an index's weight_map; *out_root keeps the
 * parsed index for the per-tensor check afterwards. */
FT_WARN_UNUSED static ft_status_t ft_hf_index_shards(const char *path, const char *text, uint64_t len,
                                      ft_hf_shards_t *shards, json_t **out_root)
{
    json_error_t err;
    json_t *root = json_loadb(text, (size_t)len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ft_status_make(FT_STATUS_FORMAT, "%s: JSON error at byte %d (line %d): %s", path,
                              err.position, err.line, err.text);
    *out_root = root;
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map))
        return ft_status_make(FT_STATUS_FORMAT,
                              "%s: field 'weight_map' is missing or not an object", path);
    const char *tname;
    json_t *v;
    json_object_foreach(map, tname, v)
    {
        const char *shard = json_string_value(v);
        if (!shard)
            return ft_status_make(FT_STATUS_FORMAT, "%s: weight_map entry '%.200s' is not a string",
                                  path, tname);
        if (!ft_hf_shard_name_ok(shard))
            return ft_status_make(
                FT_STATUS_FORMAT,
                "%s: weight_map entry '%.200s' names shard '%.200s', which is not "
                "a plain file name in the directory",
                path, tname, shard);
        if (!ft_hf_shards_push(shards, shard))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    if (shards->n == 0)
        return ft_status_make(FT_STATUS_FORMAT, "%s: field 'weight_map' is empty", path);
    ft_hf_shards_sort_unique(shards);
    return FT_OK;
}

/* Every *.safetensors regular file of dir, sorted by name. */
FT_WARN_UNUSED static ft_status_t ft_hf_scan_dir(const char *dir, ft_hf_shards_t *shards)
{
    DIR *d = opendir(dir);
    if (!d) return ft_status_make(FT_STATUS_IO, "%s: cannot list: %s", dir, strerror(errno));
    ft_status_t st = FT_OK;
    struct dirent *de;
    static const char ext[] = ".safetensors";
    while (!st && (de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n <= sizeof(ext) - 1 || de->d_name[0] == '.' ||
            strcmp(de->d_name + n - (sizeof(ext) - 1), ext) != 0)
            continue;
        if (!ft_hf_shards_push(shards, de->d_name))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    }
    closedir(d);
    if (!st) ft_hf_shards_sort_unique(shards);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_hf_tensors_append(ft_src_model_t *src, ft_hf_tensors_t *all,
                                        const ft_st_file_t *f, uint32_t file_idx, const char *path)
{
    if (f->n_tensors > UINT32_MAX / 2 - all->n)
        return ft_status_make(FT_STATUS_OUT_OF_RANGE, "%s: too many tensors", path);
    if (all->n + f->n_tensors > all->cap) {
        uint32_t cap = all->cap ? all->cap : 256;
        while (cap < all->n + f->n_tensors)
            cap *= 2;
        ft_src_tensor_t *v = realloc(all->v, (size_t)cap * sizeof(*v));
        if (!v) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        all->v = v;
        all->cap = cap;
    }
    for (uint32_t i = 0; i < f->n_tensors; i++) {
        const ft_st_tensor_t *t = &f->tensors[i];
        ft_src_tensor_t *d = &all->v[all->n];
        memset(d, 0, sizeof(*d));
        if (!(d->name = ft_arena_strdup(src->arena, t->name)))
            return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        d->dtype = t->dtype;
        d->n_dims = t->n_dims;
        memcpy(d->shape, t->shape, sizeof(d->shape));
        d->file = file_idx;
        d->offset = t->offset;
        d->n_bytes = t->n_bytes;
        all->n++;
    }
    return FT_OK;
}

/* Maps one shard just long enough to validate its header. */
FT_WARN_UNUSED static ft_status_t ft_hf_read_shard(ft_src_model_t *src, ft_hf_tensors_t *all, uint32_t idx,
                                    const char *path)
{
    ft_mapped_file_t *m;
    ft_status_t st = ft_mapped_file_open(path, &m);
    if (st) return st;
    ft_st_file_t *f;
    st = ft_st_parse(m->data, m->size, path, &f);
    if (!st) {
        src->files[idx].size = m->size;
        st = ft_hf_tensors_append(src, all, f, idx, path);
        ft_st_file_free(f);
    }
    ft_mapped_file_close(m);
    return st;
}

static int ft_hf_cmp_tensor_name(const void *a, const void *b)
{
    return strcmp((*(const ft_src_tensor_t *const *)a)->name,
                  (*(const ft_src_tensor_t *const *)b)->name);
}

/* The tensor called name in the name-sorted array, or NULL. */
static const ft_src_tensor_t *ft_hf_find_sorted(const ft_src_tensor_t *const *sorted, uint32_t n,
                                                const char *name)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid]->name, name);
        if (c == 0) return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* An index entry must name the shard that holds the tensor. */
FT_WARN_UNUSED static ft_status_t ft_hf_check_index(const ft_src_model_t *src,
                                     const ft_src_tensor_t *const *sorted, uint32_t n,
                                     const json_t *index, const char *index_path)
{
    const char *tname;
    json_t *v;
    json_object_foreach(json_object_get(index, "weight_map"), tname, v)
    {
        const char *shard = json_string_value(v);
        const ft_src_tensor_t *t = ft_hf_find_sorted(sorted, n, tname);
        if (!t)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: weight_map lists tensor '%.200s' in shard '%.200s', which "
                                  "does not hold it",
                                  index_path, tname, shard);
        const char *path = src->files[t->file].path;
        const char *base = strrchr(path, '/');
        if (strcmp(base ? base + 1 : path, shard) != 0)
            return ft_status_make(FT_STATUS_FORMAT,
                                  "%s: weight_map lists tensor '%.200s' in shard '%.200s', but it "
                                  "is in %s",
                                  index_path, tname, shard, path);
    }
    return FT_OK;
}

/* A tensor name in two shards is an error; so is an index entry whose shard
 * does not hold that tensor. */
FT_WARN_UNUSED static ft_status_t ft_hf_check_names(const ft_src_model_t *src, const ft_hf_tensors_t *all,
                                     const json_t *index, const char *index_path)
{
    const ft_src_tensor_t **sorted = malloc((all->n ? all->n : 1) * sizeof(*sorted));
    if (!sorted) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", src->path);
    for (uint32_t i = 0; i < all->n; i++)
        sorted[i] = &all->v[i];
    qsort(sorted, all->n, sizeof(*sorted), ft_hf_cmp_tensor_name);
    ft_status_t st = FT_OK;
    for (uint32_t i = 1; i < all->n && !st; i++) {
        const ft_src_tensor_t *a = sorted[i - 1], *b = sorted[i];
        if (strcmp(a->name, b->name) == 0)
            st = ft_status_make(FT_STATUS_FORMAT, "tensor '%.200s' is in both %s and %s", a->name,
                                src->files[a->file].path, src->files[b->file].path);
    }
    if (!st && index) st = ft_hf_check_index(src, sorted, all->n, index, index_path);
    free(sorted);
    return st;
}

/* Chooses the shards: the index's, else model.safetensors, else all. */
FT_WARN_UNUSED static ft_status_t ft_hf_pick_shards(const char *dir, char *index_path, ft_hf_shards_t *shards,
                                     json_t **out_index)
{
    struct stat sb;
    if (stat(index_path, &sb) == 0) {
        char *text;
        uint64_t len;
        ft_status_t st = ft_hf_read_file(index_path, FT_HF_MAX_INDEX_BYTES, &text, &len);
        if (!st) st = ft_hf_index_shards(index_path, text, len, shards, out_index);
        free(text);
        return st;
    }
    size_t n = strlen(dir);
    char *single = malloc(n + sizeof("/model.safetensors"));
    if (!single) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    memcpy(single, dir, n);
    memcpy(single + n, "/model.safetensors", sizeof("/model.safetensors"));
    int have_single = stat(single, &sb) == 0;
    free(single);
    if (have_single)
        return ft_hf_shards_push(shards, "model.safetensors")
                   ? FT_OK
                   : ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    ft_status_t st = ft_hf_scan_dir(dir, shards);
    if (!st && shards->n == 0)
        st = ft_status_make(FT_STATUS_FORMAT,
                            "%s: no weights: neither " FT_HF_INDEX_NAME
                            ", model.safetensors nor any *.safetensors file",
                            dir);
    return st;
}

ft_status_t ft_hf_weights_load(ft_src_model_t *src, const char *dir)
{
    ft_hf_shards_t shards = {0};
    ft_hf_tensors_t all = {0};
    json_t *index = NULL;
    char *index_path = ft_arena_printf(src->arena, "%s/%s", dir, FT_HF_INDEX_NAME);
    if (!index_path) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    ft_status_t st = ft_hf_pick_shards(dir, index_path, &shards, &index);
    if (st) goto out;
    src->files = ft_arena_array(src->arena, shards.n, sizeof(*src->files));
    if (!src->files) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
        goto out;
    }
    for (uint32_t i = 0; i < shards.n && !st; i++) {
        const char *path = ft_arena_printf(src->arena, "%s/%s", dir, shards.names[i]);
        if (!path) {
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
            break;
        }
        src->files[i].path = path;
        src->n_files = i + 1;
        st = ft_hf_read_shard(src, &all, i, path);
        if (st && index)
            st = ft_status_annotate(st, "%s: weight_map shard '%.200s'", index_path,
                                    shards.names[i]);
    }
    if (!st) st = ft_hf_check_names(src, &all, index, index_path);
    if (!st) {
        src->tensors = ft_arena_array(src->arena, all.n, sizeof(*src->tensors));
        if (!src->tensors)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
        else if (all.n)
            memcpy(src->tensors, all.v, (size_t)all.n * sizeof(*all.v));
        src->n_tensors = st ? 0 : all.n;
    }
out:
    json_decref(index);
    ft_hf_shards_free(&shards);
    free(all.v);
    return st;
}
