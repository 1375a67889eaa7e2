/* Any protobuf-c message as JSON (by reflection, like the text format),
 * and a hardware profile as JSON with the headline keys other tools read:
 * "dram_read_gbs" (all threads) at the top and "h2d_gbs" per GPU. */
#include "profile_json.h"

#include <math.h>
#include <string.h>

static json_t *ft_pj_message(const ProtobufCMessage *m);

static json_t *ft_pj_value(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32: return json_integer(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32: return json_integer(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64: return json_integer(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        uint64_t v = *(const uint64_t *)p;
        return v > INT64_MAX ? json_real((double)v) : json_integer((json_int_t)v);
    }
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double v = f->type == PROTOBUF_C_TYPE_FLOAT ? *(const float *)p : *(const double *)p;
        return isfinite(v) ? json_real(v) : json_null(); /* JSON has no inf or nan */
    }
    case PROTOBUF_C_TYPE_BOOL: return json_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)p);
        return ev ? json_string(ev->name) : json_integer(*(const int *)p);
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        return json_string(s ? s : ""); /* NULL (not UTF-8) is dropped by the caller */
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        return json_stringn_nocheck((const char *)b->data, b->len);
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        return sub ? ft_pj_message(sub) : json_null();
    }
    }
    return json_null();
}

static size_t ft_pj_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 8;
    case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
    default: return 4;
    }
}

/* Every field, defaults included, so JSON readers see a fixed shape;
 * absent sub-messages are null. */
static json_t *ft_pj_message(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    json_t *o = json_object();
    for (unsigned i = 0; o && i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const char *base = (const char *)m;
        json_t *v;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(char *const *)(base + f->offset);
            v = json_array();
            for (size_t k = 0; v && k < n; k++)
                json_array_append_new(v, ft_pj_value(f, arr + k * ft_pj_size(f->type)));
        } else {
            v = ft_pj_value(f, base + f->offset);
        }
        if (v)
            json_object_set_new(o, f->name, v);
    }
    return o;
}

json_t *ft_protobuf_to_json(const ProtobufCMessage *m)
{
    return ft_pj_message(m);
}

static json_t *ft_pj_median(const Fthw__Figure *f)
{
    return f && isfinite(f->median) ? json_real(f->median) : json_null();
}

json_t *ft_profile_to_json(const Fthw__Profile *p)
{
    json_t *o = ft_pj_message(&p->base);
    if (!o)
        return NULL;
    const Fthw__Cpu *c = p->cpu;
    json_object_set_new(o, "dram_read_gbs", ft_pj_median(c ? c->dram_read_gbs : NULL));
    json_object_set_new(o, "dram_read_1t_gbs", ft_pj_median(c ? c->dram_read_1t_gbs : NULL));
    json_t *gpus = json_object_get(o, "gpus");
    for (size_t i = 0; i < p->n_gpus && json_is_array(gpus); i++) {
        json_t *g = json_array_get(gpus, i);
        const Fthw__Gpu *gp = p->gpus[i];
        /* The headline figures as plain numbers next to the full records. */
        json_t *full = json_object_get(g, "h2d_gbs");
        if (full)
            json_object_set(g, "h2d_gbs_figure", full);
        json_object_set_new(g, "h2d_gbs", ft_pj_median(gp->h2d_gbs));
        full = json_object_get(g, "d2h_gbs");
        if (full)
            json_object_set(g, "d2h_gbs_figure", full);
        json_object_set_new(g, "d2h_gbs", ft_pj_median(gp->d2h_gbs));
    }
    return o;
}
