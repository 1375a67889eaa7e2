/* The semantic check of a plan: everything the runtime relies on without
 * checking again. After ft_plan_validate succeeds:
 *
 *  - schema_version is one this runtime knows; hparams are present and in
 *    range; every enum holds a value the schema defines;
 *  - blocks has exactly hparams.n_layers entries, blocks[i].index == i, each
 *    with attention and (when is_moe) MoE parameters in range;
 *  - weight_files have plain names (non-empty, at most 255 bytes, no '/',
 *    backslash or ".."), distinct, sizes that are whole 4096-byte pages
 *    (header included) and 16-byte content hashes;
 *  - every tensor has a distinct name, a valid format, 1..4 non-zero dims
 *    whose byte size (ft_dtype_row_bytes) equals its size field (for an
 *    expert stack, expert_stride != 0: one expert's slice, and the stride is
 *    a multiple of 4096 not smaller than the slice), a 4096-aligned offset
 *    past the FTW header, and all of its bytes inside its weight file;
 *  - expert_blocks lie inside their files, with strides that are multiples
 *    of 4096, at most one per layer, on MoE layers with that expert count;
 *  - the tokenizer is present, has 1..vocab_size tokens, one type byte per
 *    token with values 1..6, and special ids that are -1 or a token id.
 *
 * The weight files themselves are not opened: their size and hash in the
 * plan are compared with the files by ft_ftw_check (ftw.h).
 *
 * Codes: FT_STATUS_UNSUPPORTED (newer schema), FT_STATUS_FORMAT (missing or
 * malformed field, bad enum, misalignment, bad name, duplicate),
 * FT_STATUS_OUT_OF_RANGE (a value past its limit, bytes past a file's end),
 * FT_STATUS_MISMATCH (fields that disagree: shape vs size, counts). */
#ifndef FT_FORMAT_PLAN_VALIDATE_H
#define FT_FORMAT_PLAN_VALIDATE_H

#include "freetoken.h"
#include "plan.pb-c.h"

/* The plan schema version this runtime reads and ftc writes. */
#define FT_PLAN_SCHEMA_VERSION 1u

/* Limits that keep hostile hyperparameters from sizing huge buffers. */
#define FT_PLAN_MAX_LAYERS 4096u
#define FT_PLAN_MAX_D_MODEL (1u << 20)
#define FT_PLAN_MAX_VOCAB (1u << 24)
#define FT_PLAN_MAX_CONTEXT (1u << 26)
#define FT_PLAN_MAX_HEADS 65536u
#define FT_PLAN_MAX_HEAD_DIM 65536u
#define FT_PLAN_MAX_EXPERTS 65536u
#define FT_PLAN_MAX_FFN (1u << 24)
#define FT_PLAN_MAX_DIMS 4u

/* name is the plan's file name, used in messages. */
ft_status_t ft_plan_validate(const Ftplan__Plan *plan, const char *name);

#endif
