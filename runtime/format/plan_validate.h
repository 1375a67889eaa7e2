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
 *    token with values 1..6, and special ids that are -1 or a token id;
 *  - an embedded hw_profile has a cpu section and finite, non-negative
 *    figures, a positive cpu.dram_read_gbs, and for a GPU positive hbm_gbs
 *    and h2d_gbs, and known GEMV formats (what ft_hw_from_profile and the
 *    planner require);
 *  - partition and budget come together, with a hw_profile; budget.ctx is
 *    1..FT_PLAN_MAX_CONTEXT, batch 1..FT_PLAN_MAX_BATCH, ram_bytes > 0; the
 *    six VRAM regions add up to vram_used <= budget.vram_bytes, vram_slots =
 *    n_slots * slot_bytes, ram_weights <= ram_needed <= budget.ram_bytes;
 *    n_gpu_layers <= n_layers; expert_id_stride is the largest expert count;
 *    pinned_ids (n_pinned of them, or none with unified memory) are strictly
 *    ascending ids of existing experts of GPU layers; 1..FT_PLAN_MAX_QSTAR_
 *    BUCKETS strictly ascending bucket bounds >= 1; qstar holds n_layers x
 *    n_buckets and hit_rate n_layers values, all in [0, 1]; predictions,
 *    decode_s (0 or 4 values) and copy_bytes_per_token finite and >= 0;
 *  - cpu_module, when present: a known ISA name, abi_version equal to
 *    FT_KABI_VERSION, an ELF shared object of 1..FT_PLAN_MAX_MODULE_BYTES
 *    bytes, 0..FT_PLAN_MAX_CPU_KERNELS kernels with a known op, valid
 *    formats (format_aux only for experts) and rows/cols in range;
 *  - cuda_images: at most FT_PLAN_MAX_CUDA_IMAGES, archs "sm_NN[N]"
 *    strictly ascending, ELF cubins of 1..FT_PLAN_MAX_MODULE_BYTES bytes;
 *    cuda_ptx: at most one per image, archs "compute_NN[N]", non-empty
 *    text of at most FT_PLAN_MAX_MODULE_BYTES bytes;
 *  - schedule, when present (the engine refuses a plan without one):
 *    1..64 buffers with names, known kinds and widths 1..FT_PLAN_MAX_FFN;
 *    one block of ops per layer; at most 4096 ops per list, each of a
 *    known kind with the inputs, outputs and weights its kind takes,
 *    buffer and tensor indices in range, and the parameters it reads in
 *    range (eps, RoPE kind/dim/theta, heads, head_dim, expert counts,
 *    expert_ffn, scoring, activation);
 *  - calibration, when present: n_experts is the largest expert count, at
 *    least one token, n_layers x n_experts counts, each at most n_tokens
 *    (0 past a layer's experts and on dense layers), each layer's sum at
 *    most n_tokens x n_experts_used, and a plain source file name.
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
/* 2: the op schedule (Plan.schedule) is the program; a version-1 plan has
 * none and is refused with "recompile". */
#define FT_PLAN_SCHEMA_VERSION 2u

/* Limits that keep hostile hyperparameters from sizing huge buffers. */
#define FT_PLAN_MAX_LAYERS 4096u
#define FT_PLAN_MAX_D_MODEL (1u << 20)
#define FT_PLAN_MAX_VOCAB (1u << 24)
#define FT_PLAN_MAX_CONTEXT (1u << 26)
#define FT_PLAN_MAX_HEADS 65536u
#define FT_PLAN_MAX_HEAD_DIM 65536u
#define FT_PLAN_MAX_CONV_KERNEL 64u /* DELTANET: the causal conv's taps */
#define FT_PLAN_MAX_EXPERTS 65536u
#define FT_PLAN_MAX_FFN (1u << 24)
#define FT_PLAN_MAX_DIMS 4u
#define FT_PLAN_MAX_BATCH 4096u
/* Op.biases[j]: LINEAR weight j has no bias (plan.proto). */
#define FT_PLAN_NO_BIAS 0xFFFFFFFFu
/* q* token-count buckets; equals FT_PLAN_MAX_BUCKETS (runtime/plan/planner.h)
 * so that a plan's table fits ft_plan_result_t. */
#define FT_PLAN_MAX_QSTAR_BUCKETS 8u

/* Kernel modules (plan_validate_kernels.c). */
#define FT_PLAN_MAX_MODULE_BYTES (256u << 20)
#define FT_PLAN_MAX_CPU_KERNELS 65536u
#define FT_PLAN_MAX_CUDA_IMAGES 16u

/* The schema's name of an op kind ("OP_LINEAR"), "?" for unknown ones. */
const char *ft_plan_op_kind_name(int kind);

/* name is the plan's file name, used in messages. */
FT_WARN_UNUSED ft_status_t ft_plan_validate(const Ftplan__Plan *plan, const char *name);

#endif
