/* Typed request field reads (srv_fields.h). */
#include "srv_fields.h"

#include <math.h>
#include <string.h>

static int ft_srv_bad_type(ft_srv_error_t *err, const char *key, const char *want)
{
    ft_srv_error_set(err, 400, "invalid_request_error", key, "'%s' must be %s", key, want);
    return 0;
}

int ft_srv_get_bool(json_t *obj, const char *key, int *out, ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_boolean(v)) return ft_srv_bad_type(err, key, "a boolean");
    *out = json_is_true(v);
    return 1;
}

int ft_srv_get_number(json_t *obj, const char *key, double lo, double hi, float *out,
                      ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_number(v)) return ft_srv_bad_type(err, key, "a number");
    const double x = json_number_value(v);
    if (!(x >= lo && x <= hi)) {
        ft_srv_error_set(err, 400, "invalid_request_error", key,
                         "'%s' is %g; it must be between %g and %g", key, x, lo, hi);
        return 0;
    }
    *out = (float)x;
    return 1;
}

int ft_srv_get_u32(json_t *obj, const char *key, uint32_t lo, uint32_t hi, uint32_t *out,
                   ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_integer(v)) return ft_srv_bad_type(err, key, "an integer");
    const json_int_t x = json_integer_value(v);
    if (x < (json_int_t)lo || x > (json_int_t)hi) {
        ft_srv_error_set(err, 400, "invalid_request_error", key,
                         "'%s' is %lld; it must be between %u and %u", key, (long long)x, lo, hi);
        return 0;
    }
    *out = (uint32_t)x;
    return 1;
}

int ft_srv_get_string(json_t *obj, const char *key, const char **out, ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_string(v)) return ft_srv_bad_type(err, key, "a string");
    *out = json_string_value(v);
    return 1;
}

int ft_srv_get_stops(ft_srv_conv_t *c, json_t *obj, const char *key, ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    size_t n = json_is_string(v) ? 1 : json_is_array(v) ? json_array_size(v) : (size_t)-1;
    if (n == (size_t)-1) return ft_srv_bad_type(err, key, "a string or an array of strings");
    if (n > FT_SRV_MAX_STOPS) {
        ft_srv_error_set(err, 400, "invalid_request_error", key,
                         "'%s' has %zu strings; at most %d are accepted", key, n, FT_SRV_MAX_STOPS);
        return 0;
    }
    const char **stops = ft_srv_conv_alloc(c, (n ? n : 1) * sizeof(*stops));
    if (!stops) {
        ft_srv_error_set(err, 500, "server_error", key, "out of memory");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_string(v) ? v : json_array_get(v, i);
        if (!json_is_string(s) || json_string_length(s) == 0)
            return ft_srv_bad_type(err, key, "a non-empty string or an array of them");
        stops[i] = json_string_value(s);
    }
    c->stops = stops;
    c->n_stops = n;
    return 1;
}

int ft_srv_get_seed(ft_srv_conv_t *c, json_t *obj, const char *key, ft_srv_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 1;
    if (!json_is_integer(v)) return ft_srv_bad_type(err, key, "an integer");
    c->sampling.seed = (uint64_t)json_integer_value(v);
    c->has_seed = 1;
    return 1;
}
