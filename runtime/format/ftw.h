/* FTW weights files (*.ftw): a 4096-byte header, then raw tensor data.
 *
 *   byte  0  magic         "FTWEIGHT" (8 bytes)
 *   byte  8  version       u32 little-endian, FT_FTW_VERSION
 *   byte 12  header_bytes  u32, 4096
 *   byte 16  data_bytes    u64, bytes after the header (a multiple of 4096)
 *   byte 24  content_hash  16 bytes: XXH3-128 of the data bytes, in
 *                          canonical (big-endian) form
 *   byte 40  zero up to byte 4096
 *
 * Tensor offsets in plans are absolute file offsets (so the first tensor is
 * at 4096 or later) and 4096-aligned, so a mapped tensor is page-aligned and
 * one expert is one DMA. Weights are mapped, never parsed or copied.
 *
 * Error codes: FT_STATUS_IO (open/map/write/rename), FT_STATUS_FORMAT
 * (bad magic or header, truncated file), FT_STATUS_UNSUPPORTED (newer
 * version), FT_STATUS_MISMATCH (size or hash differs from the plan or the
 * header), FT_STATUS_OUT_OF_RANGE (a requested range past the data). */
#ifndef FT_FORMAT_FTW_H
#define FT_FORMAT_FTW_H

#include "freetoken.h"

#include <stddef.h>
#include <stdint.h>

#define FT_FTW_MAGIC "FTWEIGHT"
#define FT_FTW_VERSION 1u
#define FT_FTW_HEADER_BYTES 4096u
#define FT_FTW_ALIGN 4096u /* bytes; tensor offsets and the file size */
#define FT_FTW_HASH_BYTES 16u

/* ---- Writing (streaming: a multi-GB file is never held in memory) ---- */

typedef struct ft_ftw_writer ft_ftw_writer_t;

/* Starts writing path.tmp; ft_ftw_writer_finish renames it to path.
 * On success *out_writer is owned by the caller until finish or abort. */
FT_WARN_UNUSED ft_status_t ft_ftw_writer_create(const char *path, ft_ftw_writer_t **out_writer);

/* Pads with zero bytes to the next 4096 boundary (nothing when already
 * there) and gives the absolute file offset reached: where the next tensor
 * starts. out_offset may be NULL. */
FT_WARN_UNUSED ft_status_t ft_ftw_writer_align(ft_ftw_writer_t *w, uint64_t *out_offset);

/* Appends n_bytes of data at the current offset. */
FT_WARN_UNUSED ft_status_t ft_ftw_writer_write(ft_ftw_writer_t *w, const void *data, uint64_t n_bytes);

/* The absolute file offset the next byte will be written at. */
uint64_t ft_ftw_writer_offset(const ft_ftw_writer_t *w);

/* Pads the end to 4096, writes the header, closes and renames path.tmp to
 * path, and frees w, whether it succeeds or not (on failure path.tmp is
 * removed). out_size: the file size in bytes, header included (a plan's
 * WeightFile.size); out_hash16: the 16-byte content hash (WeightFile
 * content_hash). Either may be NULL. */
FT_WARN_UNUSED ft_status_t ft_ftw_writer_finish(ft_ftw_writer_t *w, uint64_t *out_size,
                                 uint8_t out_hash16[FT_FTW_HASH_BYTES]);

/* Discards the file being written and frees w. After any failed writer
 * call the caller aborts. NULL is accepted. */
void ft_ftw_writer_abort(ft_ftw_writer_t *w);

/* ---- Reading ---- */

typedef struct ft_ftw ft_ftw_t;

/* Maps path and checks the header: magic, version, header_bytes, zero
 * padding, and data_bytes + 4096 == the file size. Does not hash the data
 * (see ft_ftw_verify). *out_ftw is owned by the caller: ft_ftw_close. */
FT_WARN_UNUSED ft_status_t ft_ftw_open(const char *path, ft_ftw_t **out_ftw);
void ft_ftw_close(ft_ftw_t *f);

const char *ft_ftw_path(const ft_ftw_t *f);
/* The whole mapped file; plan offsets index it directly. */
const uint8_t *ft_ftw_base(const ft_ftw_t *f);
uint64_t ft_ftw_size(const ft_ftw_t *f); /* bytes, header included */
/* The data after the header, and its size in bytes. */
const uint8_t *ft_ftw_data(const ft_ftw_t *f);
uint64_t ft_ftw_data_bytes(const ft_ftw_t *f);
/* The content hash recorded in the header (16 bytes, canonical form). */
const uint8_t *ft_ftw_hash(const ft_ftw_t *f);

/* Points *out_ptr at [offset, offset + n_bytes) of the file after checking
 * that the range lies in the data area (FT_STATUS_OUT_OF_RANGE if not). */
FT_WARN_UNUSED ft_status_t ft_ftw_range(const ft_ftw_t *f, uint64_t offset, uint64_t n_bytes,
                         const uint8_t **out_ptr);

/* Cheap: compares the file size and the header's hash with what a plan
 * recorded (WeightFile.size, .content_hash). FT_STATUS_MISMATCH names the
 * file and both values. */
FT_WARN_UNUSED ft_status_t ft_ftw_check(const ft_ftw_t *f, uint64_t expected_size,
                         const uint8_t expected_hash16[FT_FTW_HASH_BYTES]);

/* Expensive: re-hashes all data bytes and compares with the header
 * (FT_STATUS_MISMATCH on a difference). For `ftc verify` and full checks. */
FT_WARN_UNUSED ft_status_t ft_ftw_verify(const ft_ftw_t *f);

/* Writes the 32 lower-case hex digits of a 16-byte hash and a NUL. */
void ft_ftw_hash_hex(const uint8_t hash16[FT_FTW_HASH_BYTES], char out_hex[33]);

#endif
