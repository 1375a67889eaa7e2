/* The planner: given a model's shape, a machine and budgets, decide the
 * VRAM partition, the per-layer q* split of missed experts between CPU
 * compute and PCIe copies, the prefill streaming threshold, and predict
 * tok/s (DESIGN.md sections 5 and 6). Used by ftc (compile, plan) and by
 * the runtime (re-plan). Pure computation: no I/O, deterministic. */
#ifndef FT_PLAN_PLANNER_H
#define FT_PLAN_PLANNER_H

#include "freetoken.h"
#include "../format/hw.h"

#include <stdint.h>

/* One layer's shape, in the bytes of the weight formats it will run in. */
typedef struct ft_plan_layer {
    int is_moe;
    uint32_t n_experts, n_used;
    uint64_t expert_bytes;     /* one routed expert: gate + up + down */
    uint64_t expert_params;    /* parameters of one routed expert */
    /* One routed expert's gate, up and down matrices: each one's format
     * and bytes (mixes give them different formats: Q4_K_M's down is Q6_K
     * in some layers); FT_DTYPE_INVALID / 0 where not known, and then the
     * model's expert_format stands for the layer. */
    ft_dtype_t expert_part_format[3];
    uint64_t expert_part_bytes[3];
    uint64_t dense_bytes;      /* attention, norms, router, shared experts, dense FFN */
    uint64_t dense_params;
    uint64_t kv_bytes_per_token; /* K + V appended per token (0 for recurrent layers) */
    uint64_t state_bytes;      /* fixed recurrent state per sequence (linear attention) */
} ft_plan_layer_t;

typedef struct ft_plan_model {
    const char *arch;
    uint32_t n_layers;
    ft_plan_layer_t *layers;   /* [n_layers] */
    uint64_t embed_bytes;      /* token embedding (read one row per token; stays in RAM) */
    uint64_t output_bytes;     /* output head, read fully per token */
    uint32_t d_model, vocab_size;
    ft_dtype_t expert_format;  /* the routed experts' weight format */
    ft_dtype_t dense_format;   /* the attention matrices' (the sim times dense kernels with
                                  it); FT_DTYPE_INVALID: not known */
    /* Optional calibration: expert popularity, [n_layers][max n_experts]
     * fractions of routed tokens (each layer's row sums to n_used); NULL:
     * uniform. */
    const float *popularity;
    uint32_t popularity_stride;
} ft_plan_model_t;

typedef struct ft_plan_budget {
    uint64_t vram_bytes;       /* 0: the profile's free VRAM */
    uint64_t ram_bytes;        /* 0: the profile's RAM */
    uint32_t ctx;              /* tokens of KV to reserve */
    uint32_t batch;            /* sequences decoded together (1 now) */
} ft_plan_budget_t;

#define FT_PLAN_MAX_BUCKETS 8

typedef enum ft_bottleneck {
    FT_BOTTLENECK_DRAM = 0,
    FT_BOTTLENECK_PCIE = 1,
    FT_BOTTLENECK_GPU = 2,
    FT_BOTTLENECK_CPU = 3,
} ft_bottleneck_t;

typedef struct ft_plan_result {
    int fits;                  /* 0: see `why` */
    char why[256];
    /* VRAM partition, bytes */
    uint64_t vram_dense, vram_pinned, vram_slots, vram_kv, vram_stream, vram_scratch;
    uint64_t slot_bytes;       /* one slot holds one expert (largest expert_bytes) */
    uint32_t n_slots;          /* LRU slots shared by all layers */
    uint32_t n_pinned;         /* hot experts pinned (from calibration) */
    uint64_t ram_needed;       /* host RAM the plan needs (weights + KV spill + buffers) */
    /* q*: fraction of a layer's missed experts sent to the GPU, per
     * token-count bucket (tokens routed to an expert in one step). */
    uint32_t n_buckets;
    uint32_t bucket_tokens[FT_PLAN_MAX_BUCKETS]; /* upper bound of each bucket */
    float *qstar;              /* [n_layers][n_buckets], malloc'ed */
    float *hit_rate;           /* [n_layers] expected LRU + pinned hit rate */
    uint32_t prefill_stream_tokens; /* above this many tokens, stream whole layers */
    double predicted_decode_tok_s, predicted_prefill_tok_s;
    ft_bottleneck_t bottleneck;

    /* Added with the solver (docs/planner.md). */
    uint64_t vram_budget, ram_budget; /* the budgets solved for, bytes (resolved from 0) */
    uint64_t vram_used;        /* sum of the VRAM regions above, <= vram_budget */
    uint64_t ram_weights;      /* of ram_needed: the mapped weights */
    uint32_t n_gpu_layers;     /* layers [0, n) run on the GPU; the rest run on the CPU */
    int output_on_gpu;         /* the output head is resident */
    int cpu_only;              /* no GPU (or no VRAM for even the scratch) */
    int unified;               /* the GPU reads host memory in place: no copies, no slots */
    int stream_buffers;        /* 1: the two streaming buffers are reserved */
    char note[256];            /* what the plan gave up and why; "" when nothing */
    /* Pinned experts as flat ids layer * expert_id_stride + expert,
     * ascending; malloc'ed, [n_pinned]. */
    uint32_t *pinned;
    uint32_t expert_id_stride; /* the largest n_experts of any layer */
    /* Decode breakdown: seconds per token by resource (index
     * ft_bottleneck_t), and the expected bytes copied per token. */
    double decode_s[4];
    double copy_bytes_per_token;
} ft_plan_result_t;

/* The token-count buckets the q* table is solved for: tokens routed to one
 * expert in one step, each entry the upper bound of its bucket. */
#define FT_PLAN_BUCKET_TOKENS {1, 2, 4, 8, 16, 64, 256, 1024}
/* The prompt length the prefill prediction is for, and the context
 * position the decode prediction is for (min with ctx). */
#define FT_PLAN_PREFILL_TOKENS 512

const char *ft_bottleneck_name(ft_bottleneck_t b);

/* Solves the plan. A model that cannot fit the RAM budget gives fits = 0
 * and a `why` saying by how much (not an error status); errors are for
 * invalid inputs. */
FT_WARN_UNUSED ft_status_t ft_planner_solve(const ft_plan_model_t *model, const ft_hw_t *hw,
                             const ft_plan_budget_t *budget, ft_plan_result_t *out);
/* Frees qstar, hit_rate and pinned and sets them to NULL. */
void ft_plan_result_release(ft_plan_result_t *res);

#endif
