/* Hugging Face checkpoint directory: reads config.json, the weights and the
 * tokenizer files and puts them together into one source model. */
#include "hf.h"

#include "hf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ft_status_t ft_hf_read_file(const char *path, uint64_t max_bytes, char **out_data,
                            uint64_t *out_len)
{
    *out_data = NULL;
    *out_len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ft_status_make(FT_STATUS_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    ft_status_t st = FT_OK;
    char *buf = NULL;
    if (fstat(fd, &sb) != 0) {
        st = ft_status_make(FT_STATUS_IO, "%s: cannot stat: %s", path, strerror(errno));
        goto out_close;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = ft_status_make(FT_STATUS_IO, "%s: not a regular file", path);
        goto out_close;
    }
    if ((uint64_t)sb.st_size > max_bytes) {
        st = ft_status_make(FT_STATUS_OUT_OF_RANGE,
                            "%s: %" PRIu64 " bytes exceeds the limit of %" PRIu64 " bytes", path,
                            (uint64_t)sb.st_size, max_bytes);
        goto out_close;
    }
    /* Read at most one byte more than the size seen, so a file that grows
     * while we read cannot push us past max_bytes. */
    uint64_t cap = (uint64_t)sb.st_size + 1, n = 0;
    if (!(buf = malloc((size_t)cap + 1))) {
        st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        goto out_close;
    }
    while (n < cap) {
        ssize_t r = read(fd, buf + n, (size_t)(cap - n));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = ft_status_make(FT_STATUS_IO, "%s: read failed at byte %" PRIu64 ": %s", path, n,
                                strerror(errno));
            goto out_close;
        }
        if (r == 0) break;
        n += (uint64_t)r;
    }
    if (n > (uint64_t)sb.st_size) {
        st = ft_status_make(FT_STATUS_IO, "%s: file grew while being read", path);
        goto out_close;
    }
    buf[n] = '\0';
    *out_data = buf;
    *out_len = n;
    buf = NULL;
out_close:
    free(buf);
    close(fd);
    return st;
}

/* "<dir>/<name>" in a heap buffer, or NULL when out of memory. */
static char *ft_hf_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + 1 + b + 1);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* Reads dir/name; *out_data stays NULL (and no error) when the file does
 * not exist and `optional` is set. */
FT_WARN_UNUSED static ft_status_t ft_hf_read_in_dir(const char *dir, const char *name, uint64_t max_bytes,
                                     int optional, char **out_path, char **out_data,
                                     uint64_t *out_len)
{
    *out_data = NULL;
    *out_len = 0;
    *out_path = ft_hf_path(dir, name);
    if (!*out_path) return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    struct stat sb;
    if (optional && stat(*out_path, &sb) != 0 && errno == ENOENT) return FT_OK;
    return ft_hf_read_file(*out_path, max_bytes, out_data, out_len);
}

FT_WARN_UNUSED static ft_status_t ft_hf_read_config(ft_src_model_t *src, const char *dir)
{
    char *path, *data;
    uint64_t len;
    ft_status_t st =
        ft_hf_read_in_dir(dir, "config.json", FT_HF_MAX_CONFIG_BYTES, 0, &path, &data, &len);
    if (!st) st = ft_hf_config_parse(&src->meta, path, data, len);
    free(data);
    free(path);
    return st;
}

/* Newer checkpoints keep the chat template in its own file rather than in
 * tokenizer_config.json; it is used only when the latter has none. */
FT_WARN_UNUSED static ft_status_t ft_hf_read_template_file(ft_src_model_t *src, const char *dir)
{
    char *path, *data;
    uint64_t len;
    ft_status_t st = ft_hf_read_in_dir(dir, "chat_template.jinja", FT_HF_MAX_TEMPLATE_BYTES, 1,
                                       &path, &data, &len);
    if (!st && data) {
        const char *nul = memchr(data, '\0', (size_t)len);
        json_t *utf8 = nul ? NULL : json_stringn(data, (size_t)len); /* validates UTF-8 */
        if (nul)
            st = ft_status_make(FT_STATUS_FORMAT, "%s: holds a NUL byte at byte %zu", path,
                                (size_t)(nul - data));
        else if (!utf8)
            st = ft_status_make(FT_STATUS_FORMAT, "%s: is not valid UTF-8", path);
        else if (!(src->tok.chat_template = ft_arena_strndup(src->arena, data, (size_t)len)))
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
        json_decref(utf8);
    }
    free(data);
    free(path);
    return st;
}

FT_WARN_UNUSED static ft_status_t ft_hf_read_tokenizer(ft_src_model_t *src, const char *dir)
{
    char *tpath = NULL, *tdata = NULL, *cpath = NULL, *cdata = NULL;
    uint64_t tlen, clen;
    ft_status_t st = ft_hf_read_in_dir(dir, "tokenizer.json", FT_HF_MAX_TOKENIZER_BYTES, 1, &tpath,
                                       &tdata, &tlen);
    if (st || !tdata) goto out; /* no tokenizer.json: the model has no tokenizer */
    st = ft_hf_read_in_dir(dir, "tokenizer_config.json", FT_HF_MAX_CONFIG_BYTES, 1, &cpath, &cdata,
                           &clen);
    if (st) goto out;
    st = ft_hf_tokenizer_parse(src, tpath, tdata, tlen, cpath, cdata, cdata ? clen : 0);
    if (!st && !src->tok.chat_template) st = ft_hf_read_template_file(src, dir);
out:
    free(tpath);
    free(tdata);
    free(cpath);
    free(cdata);
    return st;
}

ft_status_t ft_hf_import(const char *dir, ft_src_model_t **out_src)
{
    *out_src = NULL;
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return ft_status_make(FT_STATUS_IO, "%s: cannot open: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: not a directory", dir);
    ft_src_model_t *src;
    ft_status_t st = ft_src_model_create(FT_SRC_HF, dir, &src);
    if (st) return st;
    if (!src->path) st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", dir);
    if (!st) st = ft_hf_read_config(src, dir);
    if (!st) st = ft_hf_weights_load(src, dir);
    if (!st) st = ft_hf_unwrap_text_model(src);
    if (!st) st = ft_hf_read_tokenizer(src, dir);
    if (st) {
        ft_src_model_destroy(src);
        return st;
    }
    *out_src = src;
    return FT_OK;
}
