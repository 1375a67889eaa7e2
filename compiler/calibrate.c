#include "calibrate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tokens evaluated per call: bounds the progress granularity, not the
 * result (routing of a token does not depend on how prompts are batched). */
#define FT_CALIBRATE_CHUNK 256u

FT_WARN_UNUSED static ft_status_t ft_calib_read_text(const char *path, char **out_text, size_t *out_len)
{
    *out_text = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ft_status_make(FT_STATUS_IO, "%s: cannot open the calibration text: %s", path,
                              strerror(errno));
    size_t cap = FT_CALIBRATE_MAX_TEXT_BYTES;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return ft_status_make(FT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, cap + 1, f);
    int err = ferror(f);
    fclose(f);
    if (err || n > cap) {
        free(buf);
        return err ? ft_status_make(FT_STATUS_IO, "%s: read error", path)
                   : ft_status_make(FT_STATUS_OUT_OF_RANGE,
                                    "%s: calibration text larger than %u bytes", path,
                                    FT_CALIBRATE_MAX_TEXT_BYTES);
    }
    if (n == 0) {
        free(buf);
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT, "%s: the calibration text is empty",
                              path);
    }
    buf[n] = 0;
    *out_text = buf;
    *out_len = n;
    return FT_OK;
}

/* Evaluates ids in windows of the session's context, chunk by chunk. */
FT_WARN_UNUSED static ft_status_t ft_calib_eval(ft_session_t *s, const int32_t *ids, uint32_t n,
                                 ft_progress_fn progress, void *user)
{
    uint32_t n_ctx = ft_session_n_ctx(s);
    for (uint32_t done = 0; done < n;) {
        if (ft_session_n_past(s) >= n_ctx) {
            ft_status_t st = ft_session_rewind(s, 0);
            if (st)
                return st;
        }
        uint32_t room = n_ctx - ft_session_n_past(s), k = n - done;
        k = k < room ? k : room;
        k = k < FT_CALIBRATE_CHUNK ? k : FT_CALIBRATE_CHUNK;
        ft_status_t st = ft_session_eval(s, ids + done, k, NULL);
        if (st)
            return ft_status_annotate(st, "calibration tokens %u..%u", done, done + k);
        done += k;
        if (progress)
            progress(user, "calibrating", done, n);
    }
    return FT_OK;
}

FT_WARN_UNUSED static ft_status_t ft_calib_run(ft_engine_t *e, const char *text, size_t len,
                                ft_progress_fn progress, void *user, ft_calibration_t *out)
{
    const ft_model_info_t *info = ft_engine_info(e);
    int32_t *ids = NULL;
    uint32_t n = 0;
    ft_session_t *s = NULL;
    ft_session_options_t so;
    ft_session_options_init(&so);
    ft_status_t st = ft_engine_tokenize(e, text, len, FT_TOKENIZE_ADD_BOS, &ids, &n);
    if (!st && n == 0)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT, "the calibration text has no tokens");
    if (!st && info->n_experts == 0)
        st = ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                            "the model has no routed experts to calibrate");
    if (!st)
        st = ft_engine_count_routing(e, 1);
    if (!st)
        st = ft_session_create(e, &so, &s);
    if (!st)
        st = ft_calib_eval(s, ids, n, progress, user);
    if (!st) {
        size_t n_counts = (size_t)info->n_layers * info->n_experts;
        out->counts = calloc(n_counts, sizeof(*out->counts));
        if (!out->counts)
            st = ft_status_make(FT_STATUS_OUT_OF_MEMORY, "calibration counts");
        else {
            out->n_tokens = ft_engine_routing_counts(e, out->counts, n_counts);
            out->n_layers = info->n_layers;
            out->n_experts = info->n_experts;
        }
    }
    ft_session_destroy(s);
    ft_engine_free(e, ids);
    return st;
}

ft_status_t ft_calibrate_bundle(const char *bundle_dir, const char *text_path,
                                ft_progress_fn progress, void *user, ft_calibration_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *base = strrchr(text_path, '/');
    snprintf(out->source, sizeof(out->source), "%s", base ? base + 1 : text_path);
    char *text = NULL;
    size_t len = 0;
    ft_status_t st = ft_calib_read_text(text_path, &text, &len);
    if (st)
        return st;
    ft_engine_options_t eo;
    ft_engine_options_init(&eo);
    eo.backend = FT_BACKEND_CPU;
    ft_engine_t *e = NULL;
    if (!(st = ft_engine_open(bundle_dir, &eo, &e)))
        st = ft_calib_run(e, text, len, progress, user, out);
    ft_engine_close(e);
    free(text);
    if (st) {
        ft_calibration_release(out);
        return ft_status_annotate(st, "%s: calibration", text_path);
    }
    return FT_OK;
}

void ft_calibration_release(ft_calibration_t *c)
{
    free(c->counts);
    c->counts = NULL;
}

