/* The CUDA backend of the engine: the model's dense weights resident in
 * VRAM, routed experts in device slots managed by the shared offload code
 * (runtime/moe: expert cache, q* dispatch, whole-layer prefill streaming,
 * re-plan), an f32 KV cache per session on the device, and the forward
 * pass as kernels from the plan's CUDA module (codegen/cuda), with the
 * experts the dispatch keeps on the CPU computed by the CPU's kernels.
 *
 * Status: runs here against tests/cuda_fake (a libcuda that emulates the
 * kernels on the CPU); written for the Driver API's real semantics (async
 * copies on a copy stream, kernels on a compute stream ordered by events),
 * checked on a GPU only by tests/gpu/run.sh. */
#ifndef FT_BACKENDS_CUDA_ENGINE_H
#define FT_BACKENDS_CUDA_ENGINE_H

#include "freetoken.h"

#include "../../base/threadpool.h"
#include "../../exec/model.h"
#include "../../format/bundle.h"
#include "../../moe/offload.h"
#include "../../plan/hw.h"

#include <stdint.h>

typedef struct ft_cuda_engine ft_cuda_engine_t;
typedef struct ft_cuda_session ft_cuda_session_t;

typedef struct ft_cuda_engine_options {
    const char *lib_name;    /* driver library; NULL: $FT_CUDA_LIB, else libcuda.so.1 */
    int ordinal;             /* which GPU */
    const ft_hw_t *hw;       /* the machine for the q* split; NULL: generic figures */
    uint64_t vram_bytes;     /* budget; 0: the device's free VRAM less a headroom */
    uint32_t plan_ctx;       /* tokens of KV the plan reserves */
    /* The plan's stored partition is used when hw is its embedded profile
     * and vram_bytes its budget (ft_offload_create); calibration comes
     * from the plan. */
    int poll_vram; /* 1: re-plan when free VRAM changes under us */
    /* Experts the dispatch keeps on the CPU run the plan's generated
     * kernels (bound in the model) when they have at least this many
     * tokens, as the cpu backend's do; 0: always the reference kernels. */
    uint32_t gen_min_tokens;
} ft_cuda_engine_options_t;

/* Opens the device, loads the plan's CUDA module (cubin for this GPU, else
 * PTX), pins the mapped FTW files in place, plans the VRAM partition and
 * uploads the dense weights. UNAVAILABLE (the caller falls back to the
 * CPU) when there is no driver or GPU or the plan has no CUDA images;
 * OUT_OF_RANGE when the budget cannot keep every layer on the GPU (the
 * message says what it needs). m, bundle and pool must outlive it. */
FT_WARN_UNUSED ft_status_t ft_cuda_engine_create(const ft_bundle_t *bundle, const ft_model_t *m,
                                  ft_threadpool_t *pool, const ft_cuda_engine_options_t *opts,
                                  const ft_allocator_t *alloc, ft_cuda_engine_t **out);
void ft_cuda_engine_destroy(ft_cuda_engine_t *ce);
/* The offload state (cache, dispatch, stats, re-plan) the engine drives. */
ft_offload_t *ft_cuda_engine_offload(ft_cuda_engine_t *ce);
/* Re-plans for a new budget (ft_engine_replan). */
FT_WARN_UNUSED ft_status_t ft_cuda_engine_replan(ft_cuda_engine_t *ce, uint64_t vram_bytes);

/* Device buffers of one session: KV cache for n_ctx tokens, activations
 * for batches of n_batch. */
FT_WARN_UNUSED ft_status_t ft_cuda_session_create(ft_cuda_engine_t *ce, uint32_t n_ctx, uint32_t n_batch,
                                   ft_cuda_session_t **out);
void ft_cuda_session_destroy(ft_cuda_session_t *cs);

/* Runs tokens[0..n) (n <= n_batch, inputs validated by the caller) at
 * positions n_past.., appending to the device KV cache; writes the logits
 * of every position to all_logits when not NULL, and the last one's to
 * last_logits. routing: NULL, or calibration counts [n_layers][max_experts]
 * to add each token's chosen experts to. Between steps it may poll free
 * VRAM and re-plan. */
FT_WARN_UNUSED ft_status_t ft_cuda_forward_chunk(ft_cuda_session_t *cs, const int32_t *tokens, uint32_t n,
                                  uint32_t n_past, float *all_logits, float *last_logits,
                                  uint64_t *routing);

#endif
