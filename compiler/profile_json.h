/* JSON forms of protobuf-c messages (jansson; compiler side only). */
#ifndef FT_COMPILER_PROFILE_JSON_H
#define FT_COMPILER_PROFILE_JSON_H

#include "hwprofile.pb-c.h"

#include <jansson.h>

/* Every field by its .proto name; enums by name; sub-messages as objects,
 * repeated fields as arrays. NULL on out-of-memory. */
json_t *ft_protobuf_to_json(const ProtobufCMessage *m);

/* The profile as ft_protobuf_to_json gives it, plus "dram_read_gbs" and
 * "dram_read_1t_gbs" (medians, GB/s) at the top, and in each GPU
 * "h2d_gbs" and "d2h_gbs" as numbers (the full figures move to
 * "h2d_gbs_figure" and "d2h_gbs_figure"). */
json_t *ft_profile_to_json(const Fthw__Profile *p);

#endif
