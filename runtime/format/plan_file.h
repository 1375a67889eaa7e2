/* The plan container (plan.ftp): a fixed 48-byte little-endian header, then
 * one zstd frame holding the serialized ftplan.Plan protobuf, nothing after.
 *
 *   byte  0  magic           "FTPLAN\r\n" (8 bytes)
 *   byte  8  format_version  u32, FT_PLAN_FORMAT_VERSION
 *   byte 12  header_bytes    u32, 48
 *   byte 16  raw_bytes       u64, size of the serialized protobuf
 *   byte 24  payload_bytes   u64, size of the zstd frame that follows
 *   byte 32  payload_hash    u64, XXH3-64 of the payload bytes
 *   byte 40  reserved        u64, 0
 *   byte 48  payload
 *
 * Writing the same plan twice gives identical bytes (a fixed compression
 * level, single-threaded, no timestamps). Reading checks the container and
 * then the plan's meaning (plan_validate.h), so a plan returned by a reader
 * can be used without further bounds checks against its weight files' sizes.
 *
 * Error codes: FT_STATUS_IO (cannot open/map/write), FT_STATUS_FORMAT
 * (malformed or truncated), FT_STATUS_UNSUPPORTED (a newer format or schema
 * version), FT_STATUS_OUT_OF_RANGE (a size past a limit),
 * FT_STATUS_MISMATCH (payload hash or sizes disagree), FT_STATUS_OUT_OF_MEMORY.
 * Messages name the file, the field and, for the header, its byte offset. */
#ifndef FT_FORMAT_PLAN_FILE_H
#define FT_FORMAT_PLAN_FILE_H

#include "freetoken.h"
#include "plan.pb-c.h"

#include <stdint.h>

#define FT_PLAN_MAGIC "FTPLAN\r\n"
#define FT_PLAN_FORMAT_VERSION 1u
#define FT_PLAN_HEADER_BYTES 48u
/* The largest serialized plan a reader accepts (bytes). */
#define FT_PLAN_MAX_RAW_BYTES (UINT64_C(4) << 30)
/* zstd level used by every writer; changing it changes plan bytes. */
#define FT_PLAN_ZSTD_LEVEL 9

/* Serializes plan into a complete plan file image in memory.
 * *out_data is malloc'ed and owned by the caller (free()). */
FT_WARN_UNUSED ft_status_t ft_plan_encode(const Ftplan__Plan *plan, uint8_t **out_data, uint64_t *out_size);

/* Writes plan to path atomically: path.tmp is written, then renamed. */
FT_WARN_UNUSED ft_status_t ft_plan_write(const Ftplan__Plan *plan, const char *path);

/* Parses and validates a plan file image of size bytes. name is used in
 * messages (the file name). data is not referenced after the call. On
 * success *out_plan is owned by the caller: release it with ft_plan_free. */
FT_WARN_UNUSED ft_status_t ft_plan_read_mem(const uint8_t *data, uint64_t size, const char *name,
                             Ftplan__Plan **out_plan);

/* Maps path and reads it as ft_plan_read_mem does. */
FT_WARN_UNUSED ft_status_t ft_plan_read(const char *path, Ftplan__Plan **out_plan);

/* Unpacks a serialized (uncompressed) plan protobuf of size bytes and
 * validates it: the payload step of ft_plan_read_mem on its own. */
FT_WARN_UNUSED ft_status_t ft_plan_unpack(const uint8_t *raw, uint64_t size, const char *name,
                           Ftplan__Plan **out_plan);

/* Frees a plan returned by a reader. NULL is accepted. */
void ft_plan_free(Ftplan__Plan *plan);

#endif
