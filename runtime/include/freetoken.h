/*
 * freetoken.h - the public C API of libfreetoken.
 *
 * This header is the contract between libfreetoken and the programs that
 * embed it. Every fallible call returns an ft_status_t: NULL means success,
 * anything else is an owned error object that the caller must release with
 * ft_status_free() (or hand on to its own caller).
 */
#ifndef FREETOKEN_H
#define FREETOKEN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exports: libfreetoken.so is built with -fvisibility=hidden, and the
 * declarations between this push and its pop (at the end of the header)
 * are what it exports, so the shared library's symbols are exactly this
 * header's functions. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

#define FT_VERSION_MAJOR 0
#define FT_VERSION_MINOR 1
#define FT_VERSION_PATCH 0

/* Error classes. Values never change meaning; new ones are appended. */
typedef enum ft_status_code {
    FT_STATUS_OK = 0,
    FT_STATUS_INVALID_ARGUMENT = 1, /* the caller passed something wrong */
    FT_STATUS_IO = 2,               /* open/read/write/mmap failed */
    FT_STATUS_FORMAT = 3,           /* a file or message is malformed */
    FT_STATUS_OUT_OF_MEMORY = 4,
    FT_STATUS_UNSUPPORTED = 5, /* valid input that we do not handle (yet) */
    FT_STATUS_OUT_OF_RANGE = 6,  /* a count, size or offset is past a limit */
    FT_STATUS_UNAVAILABLE = 7,   /* a device or library is not present */
    FT_STATUS_MISMATCH = 8,      /* hashes, versions or shapes disagree */
    FT_STATUS_INTERNAL = 9,      /* a bug in freetoken */
    FT_STATUS_CANCELLED = 10,    /* the work was cancelled (ft_request_cancel) before it finished */
    FT_STATUS_BUSY = 11,         /* refused for now: the engine's queue is full, or it still has
                                    live sessions (ft_engine_close); retrying later may succeed */
    FT_STATUS_RESOURCE_EXHAUSTED = 12, /* a fixed budget is spent and nothing can be freed: the
                                          KV page pool is full of pages in use by sessions */
} ft_status_code_t;

/* An error: a code plus a message. NULL is success. */
typedef struct ft_status *ft_status_t;

#define FT_OK ((ft_status_t)NULL)

/* On every function that returns an ft_status_t: a dropped status is a
 * leaked error object and a failure nobody saw. GCC does not accept a (void)
 * cast as using the result; free the status (ft_status_free) where ignoring
 * it is right, and say why. */
#if defined(__GNUC__) || defined(__clang__)
#define FT_WARN_UNUSED __attribute__((warn_unused_result))
#else
#define FT_WARN_UNUSED
#endif

/* Makes an error with a printf-style message. Never returns NULL: when the
 * message cannot be allocated a static out-of-memory status is returned
 * (which ft_status_free accepts). */
FT_WARN_UNUSED ft_status_t ft_status_make(ft_status_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
FT_WARN_UNUSED ft_status_t ft_status_makev(ft_status_code_t code, const char *fmt, va_list ap);

/* Prefixes context to an existing error ("while reading X: <old message>")
 * and returns it. NULL in gives NULL out, so it can wrap any call. */
FT_WARN_UNUSED ft_status_t ft_status_annotate(ft_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

ft_status_code_t ft_status_code(ft_status_t status);
/* The message; "ok" for NULL. Valid until the status is freed. */
const char *ft_status_message(ft_status_t status);
/* A short stable name for the code, e.g. "format". */
const char *ft_status_code_name(ft_status_code_t code);
void ft_status_free(ft_status_t status);

/* Allocator hook. NULL wherever an allocator is accepted means the libc
 * allocator. Through it go the engine's and sessions' own objects: the
 * executor's model, engine and session state (activations, KV pages,
 * scratch), the expert cache and its sim slot memory, the offload and
 * streaming buffers, and the cuda backend's host-side objects (a test fails
 * the k-th of these for every k: tests/unit/test_alloc_fail.c).
 *
 * These allocations do NOT go through it; they use libc (or the library's
 * own default) whatever the hook:
 *   - status objects (runtime/base/status.c): malloc, so that an error can
 *     be reported when the hook is what failed; when even that fails a
 *     static out-of-memory status is returned, which needs no allocation;
 *   - reading the bundle (runtime/format/): the bundle and FTW file objects,
 *     the plan's decompression buffer and zstd's decompression context
 *     (ZSTD_decompress), protobuf-c's unpacked plan (unpacked with the
 *     default allocator), plan validation and textproto (hardware profile)
 *     parsing, including its arena (runtime/base/arena.c);
 *   - the mapped weight and profile files (runtime/base/mapped_file.c: the
 *     object; the bytes are mmap'd, not allocated);
 *   - the planner's results (runtime/plan/: pinned experts, hit rates, the
 *     q* table), made at open and again by every ft_engine_replan;
 *   - the tokenizer, its vocabulary index, BPE merges, pre-tokenizer and
 *     PCRE2's compiled patterns and match data, chat formatting, the
 *     detokenizer, stop strings and the sampler (runtime/text/); strings
 *     returned to the caller by ft_engine_tokenize and
 *     ft_engine_chat_format are malloc'd and freed with ft_engine_free;
 *   - the thread pool (runtime/base/threadpool.c, and the threads' stacks);
 *   - the CPU kernel module object (runtime/backends/cpu/cpu_module.c; the
 *     module itself is loaded with dlopen) and the sim device's slot clocks
 *     (runtime/backends/sim/sim_device.c);
 *   - the cuda backend's page-locked host buffers (cuMemHostAlloc) and all
 *     device memory, which the driver allocates. */
typedef struct ft_allocator {
    void *(*alloc)(void *user, size_t n_bytes);
    void *(*realloc)(void *user, void *p, size_t n_bytes);
    void (*free)(void *user, void *p);
    void *user;
} ft_allocator_t;


/* ------------------------------------------------------------------ */
/* Threads.                                                            */
/* ------------------------------------------------------------------ */

/* The concurrency contract (DESIGN.md section 10). An engine is immutable
 * after ft_engine_open, apart from what its scheduler owns. The scheduler
 * is one thread per engine, started by ft_engine_open: it alone runs the
 * model, on the engine's thread pool and device, in steps. A step is a
 * list of work items, each (session, tokens): a prefill chunk of at most
 * the session's n_batch tokens or one decode token, chosen round-robin
 * from the running requests up to a token budget (ft_engine_options_t
 * step_tokens). On the cpu and sim backends a step is one forward pass
 * over all its items' tokens (continuous batching: attention reads each
 * session's own KV cache, every other op, the MoE block with its expert
 * reads included, runs over the step's tokens together); on cuda the
 * items still run one after another. A session's results do not depend
 * on what else shares its step (items are never put in one pass with
 * items that would run other kernels alone), and chunk boundaries are the
 * session's own (n_batch), so every session's logits are bit-identical to
 * running it alone.
 *
 * Any number of threads may submit work (ft_request_submit, or the
 * synchronous ft_session_eval, which submits and waits) and read results.
 * Per function:
 *   - thread-safe on one engine from any thread: ft_engine_info,
 *     ft_engine_stats, ft_engine_reset_stats, ft_engine_replan,
 *     ft_engine_count_routing, ft_engine_routing_counts (these wait for the
 *     step in progress), ft_engine_tokenize, ft_engine_token_bytes,
 *     ft_engine_is_eog, ft_engine_chat_format, ft_engine_chat_template,
 *     ft_engine_verify_some,
 *     ft_engine_free,
 *     ft_detokenizer_create, ft_session_create, ft_session_retain,
 *     ft_session_destroy, and every ft_request_* call;
 *   - thread-safe on different sessions, and on one session from several
 *     threads (its requests run in submit order): ft_session_eval,
 *     ft_session_rewind and ft_session_anchor (refused with FT_STATUS_BUSY
 *     while the session has an unfinished request);
 *   - ft_session_logits, ft_session_n_past, ft_session_n_ctx,
 *     ft_session_kv_bytes, ft_session_n_restored read the session without
 *     a lock: call them when
 *     the session has no unfinished request (after ft_session_eval or
 *     ft_request_wait returned, which orders the reads after the writes);
 *   - ft_engine_open and ft_engine_close: once each, with no other call on
 *     that engine in flight; close refuses (FT_STATUS_BUSY) while sessions
 *     are live;
 *   - detokenizers, stop matchers and samplers: one thread at a time each
 *     (a sampler given to a request belongs to the scheduler until the
 *     request finishes).
 * Calls that wait for the scheduler (ft_session_eval, ft_session_rewind,
 * ft_request_wait, ft_request_next with wait) are refused with
 * FT_STATUS_INVALID_ARGUMENT on the scheduler's own thread (from a request
 * callback), where they would wait for themselves. */

/* ------------------------------------------------------------------ */
/* Engines: a compiled bundle, opened for running.                     */
/* ------------------------------------------------------------------ */

typedef struct ft_engine ft_engine_t;
typedef struct ft_session ft_session_t;

typedef enum ft_backend_kind {
    FT_BACKEND_CPU = 0,  /* everything on this machine's CPU */
    FT_BACKEND_SIM = 1,  /* a modelled GPU (from a hardware profile) with a VRAM budget:
                            real expert cache, q* split and streaming, numerics on the CPU,
                            time on a virtual clock (predictions, labelled as such) */
    FT_BACKEND_CUDA = 2, /* an NVIDIA GPU through the CUDA driver */
} ft_backend_kind_t;

/* Which CPU kernels run the products (DESIGN.md section 9). */
typedef enum ft_kernels_kind {
    FT_KERNELS_AUTO = 0,      /* the plan's generated kernels where they are the faster
                                 ones: every batch for an avx512 module (its decode path
                                 streams weights at least as fast as the reference);
                                 for avx2 and portable modules only batches of two or
                                 more tokens (prefill), a single decode token running
                                 the reference kernels */
    FT_KERNELS_REFERENCE = 1, /* always the portable reference kernels (the numerics oracle) */
    FT_KERNELS_GENERATED = 2, /* the plan's CPU module for every product it has (products it
                                 lacks, and bundles without one or for an ISA this CPU does
                                 not run, fall back to the reference kernels) */
} ft_kernels_kind_t;

/* Checking the weights against the plan's per-blob hashes (ftc compile
 * records one per tensor and per expert). A damaged blob fails the request
 * that would use it with FT_STATUS_MISMATCH naming the bundle, the tensor or
 * expert and its byte range; other requests go on. */
typedef enum ft_verify_kind {
    FT_VERIFY_LAZY = 0, /* dense tensors at open, each expert the first time a token is routed to it
                           (at most one extra read of each blob; the default) */
    FT_VERIFY_FULL = 1, /* the whole weights file re-hashed at open */
    FT_VERIFY_OFF = 2,  /* only the cheap checks at open: sizes and the header's hash against the
                           plan (weights from another compile are refused in every mode) */
} ft_verify_kind_t;

/* The rest of lazy verification, ahead of use (a server calls it while
 * idle, so a damaged blob shows in its health report before a request
 * routes to it): checks expert blobs not checked yet, in order, until about
 * max_bytes of weights were read. *out_left (may be NULL): blobs still
 * unchecked; 0 when everything is (or nothing is to be checked: verify off
 * or full, a plan without per-blob hashes). Returns FT_STATUS_MISMATCH for
 * a damaged blob it found (naming it; the next call goes on past it), else
 * FT_OK. Thread-safe; it reads the mapped weights beside running steps. */
FT_WARN_UNUSED ft_status_t ft_engine_verify_some(ft_engine_t *engine, uint64_t max_bytes, uint64_t *out_left);

typedef struct ft_engine_options {
    uint32_t n_threads;              /* 0: one per online CPU */
    const ft_allocator_t *allocator; /* NULL: libc */
    ft_backend_kind_t backend;
    const char *hw_profile;          /* sim: the machine to model (profile or preset file);
                                        NULL: the one the bundle was compiled for (--hw) */
    uint64_t vram_bytes;             /* sim/cuda: VRAM budget; 0: the compile's budget, else
                                        the profile's free VRAM */
    uint32_t plan_ctx;               /* tokens of KV the VRAM plan reserves; 0: 4096 */
    int kernels;                     /* ft_kernels_kind_t; 0: FT_KERNELS_AUTO */
    int verify;                      /* ft_verify_kind_t; 0: FT_VERIFY_LAZY */
    /* The scheduler ("Threads" above); 0 in any of these: the default. */
    uint32_t max_queued;  /* requests from ft_request_submit waiting to start, beyond which
                             submit refuses with FT_STATUS_BUSY (default 256; synchronous
                             calls wait instead and are not counted) */
    uint32_t max_running; /* requests the scheduler interleaves, one work item each per
                             step (default 16) */
    uint32_t step_tokens; /* token budget of a step: items are added while they fit, and a
                             step always takes at least one (default 512) */
    /* cpu and sim backends: the byte budget of the KV page pool every session's KV cache
       lives in, pages of 16 positions x every layer, K and V, in the plan's KV type, taken
       from host memory (cpu) or the modelled card (sim) as tokens are evaluated (a session
       no longer reserves its n_ctx). Cached prefix pages are evicted when it is spent; a
       step that still needs a page then fails with FT_STATUS_RESOURCE_EXHAUSTED. Anchors'
       state copies may take a quarter of it more. 0: min(8 GiB, a quarter of RAM). The
       cuda backend keeps each session's KV on the device and ignores it. */
    uint64_t kv_budget_bytes;
} ft_engine_options_t;

void ft_engine_options_init(ft_engine_options_t *opts);

/* Opens a bundle directory (or its plan.ftp): reads and validates the plan,
 * maps the weights (never copies them), checks their size and recorded hash
 * against the plan, and prepares the tokenizer and the thread pool. */
FT_WARN_UNUSED ft_status_t ft_engine_open(const char *bundle_path, const ft_engine_options_t *opts,
                           ft_engine_t **out_engine);
/* Stops the scheduler and frees the engine. Refused while sessions are
 * live (created or retained and not yet released by every holder, the
 * requests' own references included): FT_STATUS_BUSY naming how many, and
 * the engine stays open and usable. NULL engine: nothing, FT_OK. The one
 * status-returning call without FT_WARN_UNUSED, so that programs written
 * against the void close still build: one that drops the status must have
 * destroyed its sessions first (it then always gets FT_OK). */
ft_status_t ft_engine_close(ft_engine_t *engine);

typedef struct ft_model_info {
    const char *arch;        /* "qwen3moe" */
    uint32_t n_layers, d_model, vocab_size, context_length;
    uint32_t n_experts, n_experts_used;
    uint64_t total_params, active_params;
    uint64_t weight_bytes;           /* all weights in the bundle */
    uint64_t weight_bytes_per_token; /* weights one decoded token reads */
    uint32_t n_threads;
    const char *kernels; /* what runs the products: "generated avx512" (or avx2,
                            portable) when the plan's CPU module was loaded, else
                            "reference" */
    int batched_steps;   /* 1: a scheduler step is one forward pass over its
                            sessions' tokens (every backend; on cuda a step's
                            one-token items and its prefill chunks are two
                            passes); 0: one after another (no backend today) */
    uint64_t recurrent_state_bytes; /* a session's recurrent state (linear-attention layers:
                                       Gated DeltaNet), which a rewind cannot truncate and an
                                       anchor copies; 0: attention only */
} ft_model_info_t;

/* Valid while the engine is open. */
const ft_model_info_t *ft_engine_info(const ft_engine_t *engine);

/* Offloading statistics (sim and cuda backends; zeros on the cpu backend),
 * and the weight checks. */
typedef struct ft_engine_stats {
    int predicted;            /* 1: times are modelled (sim backend), not measured */
    uint64_t expert_hits, expert_misses;
    uint64_t misses_to_gpu, misses_to_cpu, experts_streamed;
    uint64_t bytes_copied;
    uint64_t n_tokens, n_steps;
    double device_seconds;    /* modelled (sim) or measured device time of all steps */
    uint64_t order_violations; /* sim: kernels that read a slot before its copy completed */
    uint32_t n_slots;         /* expert cache slots */
    uint64_t vram_bytes;      /* the budget in force */
    double predicted_decode_tok_s, predicted_prefill_tok_s; /* the planner's */
    uint32_t prefill_stream_tokens; /* prefill batches of at least this many tokens stream
                                       whole layers; UINT32_MAX: never */
    /* The plan is authoritative: plan_stored is 1 while the partition in
     * force is the one stored in plan.ftp (the open's budget, machine and
     * context are those it was compiled for, and no re-plan since). When
     * the open solved it instead, plan_note says so and why in one line
     * ("plan: solved again for 6.0 GiB of VRAM (compiled for 8.0 GiB)");
     * "" when the stored one was taken or the plan stores none (compiled
     * without --hw: solved at open); NULL on the cpu backend. Valid while
     * the engine is open. */
    int plan_stored;
    const char *plan_note;
    /* Weight checks (every backend): expert blobs checked so far and found
     * damaged; verify_note: "" or one line saying the plan has no per-blob
     * hashes to check. */
    uint64_t blobs_checked, blobs_damaged;
    const char *verify_note;
    const char *verify_damage; /* "" or the first damaged blob's error (bundle, layer, expert,
                                  byte range) */
    /* The scheduler (every backend): steps run, and the bytes of expert
     * weights their forward passes read (each routed expert's gate, up and
     * down once per pass, for all the pass's tokens routed to it; cpu and
     * sim backends, 0 on cuda). */
    uint64_t sched_steps;
    uint64_t expert_bytes_read;
    /* The KV page pool and the prefix cache (cpu and sim; zeros on cuda):
     * positions per page and a page's bytes, the budget, the bytes taken
     * from memory so far (slabs of pages, kept until close), pages in use
     * (by sessions, the cache or anchors), full pages the prefix tree
     * caches, anchors recorded, cached pages and anchors evicted, and the
     * positions requests restored from the cache instead of computing. */
    uint32_t kv_page_tokens;
    uint64_t kv_page_bytes, kv_budget_bytes, kv_bytes_allocated;
    uint64_t kv_pages_used, kv_pages_cached, kv_anchors, kv_evictions;
    uint64_t kv_tokens_restored;
} ft_engine_stats_t;

void ft_engine_stats(const ft_engine_t *engine, ft_engine_stats_t *out);
void ft_engine_reset_stats(ft_engine_t *engine);

/* Routing counts for calibration: after ft_engine_count_routing(e, 1),
 * every evaluated token adds 1 to counts[layer * n_experts + expert] for
 * each expert it is routed to (n_experts: ft_model_info_t.n_experts).
 * ft_engine_routing_counts copies them out (n_layers * n_experts values)
 * and returns the number of tokens counted. */
FT_WARN_UNUSED ft_status_t ft_engine_count_routing(ft_engine_t *engine, int on);
uint64_t ft_engine_routing_counts(const ft_engine_t *engine, uint64_t *out_counts, size_t n_counts);

/* Moves the boundary between KV memory and expert slots for a new VRAM
 * budget while sessions are live: the new partition is solved and checked
 * before anything is freed, the coldest expert slots are evicted when
 * shrinking, no session state is dropped, no weight is re-read, and on any
 * failure nothing changes. Not for the cpu backend (nothing to move). */
FT_WARN_UNUSED ft_status_t ft_engine_replan(ft_engine_t *engine, uint64_t vram_bytes);

#define FT_TOKENIZE_SPECIAL 1u /* recognize special tokens written in the text */
#define FT_TOKENIZE_ADD_BOS 2u /* prepend BOS when the model wants one */

/* Tokenizer: flags are FT_TOKENIZE_*. *out_ids is released with
 * ft_engine_free. The text between special tokens is first normalized as
 * the model's tokenizer asks (NFC for Qwen's), so the tokens decode to that
 * form. */
FT_WARN_UNUSED ft_status_t ft_engine_tokenize(const ft_engine_t *engine, const char *text, size_t len,
                               unsigned flags, int32_t **out_ids, uint32_t *out_n);
/* The bytes of one token (may be part of a UTF-8 sequence). */
FT_WARN_UNUSED ft_status_t ft_engine_token_bytes(const ft_engine_t *engine, int32_t id, const char **out_bytes,
                                  uint32_t *out_len);
/* 1 when id ends generation (EOS, <|im_end|>, ...). */
int ft_engine_is_eog(const ft_engine_t *engine, int32_t id);

typedef struct ft_chat_message {
    const char *role; /* "system", "user", "assistant", "tool" */
    const char *content;
} ft_chat_message_t;

/* Renders messages in the model's chat format; *out_text is released with
 * ft_engine_free. */
FT_WARN_UNUSED ft_status_t ft_engine_chat_format(const ft_engine_t *engine, const ft_chat_message_t *msgs,
                                  size_t n_msgs, int add_generation_prompt, char **out_text);

/* The model's chat template: the Jinja source the bundle carries (GGUF
 * tokenizer.chat_template, or HF tokenizer_config.json's chat_template),
 * or NULL when it has none. Valid while the engine is open. A server that
 * renders richer conversations than ft_engine_chat_format (tools, tool
 * results, reasoning) picks its renderer and output parser from it. */
const char *ft_engine_chat_template(const ft_engine_t *engine);

void ft_engine_free(const ft_engine_t *engine, void *p);

/* ------------------------------------------------------------------ */
/* Sessions: one sequence with its own KV cache.                       */
/* ------------------------------------------------------------------ */

/* How long a session's cached pages and anchors may stay (the prefix cache). */
typedef enum ft_cache_priority {
    FT_CACHE_NORMAL = 0, /* a conversation */
    FT_CACHE_LOW = 1,    /* a side request (a title, a quota probe): what it caches is evicted
                            before any normal entry, so side requests evict each other, not a
                            conversation's pages */
} ft_cache_priority_t;

typedef struct ft_session_options {
    uint32_t n_ctx;   /* tokens of context; 0: the model's context length */
    uint32_t n_batch; /* most tokens one forward pass takes (prefill chunk); 0: 256 */
    uint64_t max_tokens; /* the session's token limit: the most tokens it may evaluate over its
                            life, every prompt and generated token counted once each time it is
                            evaluated (a rewind does not give any back); 0: no limit. A prompt
                            past it is refused (FT_STATUS_OUT_OF_RANGE); generation stops there
                            (FT_FINISH_LIMIT). */
    /* The prefix cache (cpu and sim backends; ignored on cuda). 1: the session publishes
       every full KV page it computes to the engine's prefix tree (pages stay cached after
       it is destroyed, until evicted), and a request that starts while the session is
       empty (n_past 0: new, or rewound to 0) restores the longest cached prefix of its
       prompt, or the deepest anchor that matches, and computes only the rest (at least
       its last token, whose logits it needs, and at least two where single tokens run
       other kernels than batches: FT_KERNELS_AUTO with an avx2 or portable module). The
       logits are bit-identical to computing the whole prompt (each row's arithmetic
       does not depend on the rows beside it; tests/unit/test_kv_prefix.c). It is not
       for requests that ask for every prompt row's logits (out_all_logits: nothing is
       restored). 0 (default): neither. */
    int prefix_cache;
    int cache_priority; /* ft_cache_priority_t of what it caches; 0: FT_CACHE_NORMAL */
} ft_session_options_t;

void ft_session_options_init(ft_session_options_t *opts);

/* Allocates every buffer the forward pass needs and (cpu, sim) a page
 * table into the engine's KV page pool, whose pages it takes as positions
 * are evaluated (the pool takes memory in slabs and reuses freed pages, so
 * a steady state allocates nothing); on cuda the KV cache for n_ctx
 * positions on the device. The session starts with one reference, the
 * caller's. */
FT_WARN_UNUSED ft_status_t ft_session_create(ft_engine_t *engine, const ft_session_options_t *opts,
                              ft_session_t **out_session);
/* Takes another reference (a second owner, e.g. a server's cache of
 * conversations); each is dropped with ft_session_destroy. */
void ft_session_retain(ft_session_t *session);
/* Drops the caller's reference. The session is freed when the last one
 * goes: a request holds one until it is released, so a session may be
 * destroyed while its requests still run. NULL: nothing. */
void ft_session_destroy(ft_session_t *session);

/* Appends n tokens to the sequence and runs them through the model in
 * batches of up to n_batch tokens (prefill; n = 1 is a decode step).
 * out_all_logits, when not NULL, receives n x vocab_size float32 logits,
 * row per position; either way ft_session_logits then holds the last
 * position's. Errors: an empty batch, an unknown token id, or a sequence
 * longer than the session's context or its token limit (nothing is
 * evaluated then). Synchronous: a request submitted to the scheduler and
 * waited for (after the session's earlier requests); allocates nothing. */
FT_WARN_UNUSED ft_status_t ft_session_eval(ft_session_t *session, const int32_t *tokens, uint32_t n,
                            float *out_all_logits);

/* The logits of the last evaluated position (vocab_size floats), or NULL
 * before any evaluation. Valid until the next eval. */
const float *ft_session_logits(const ft_session_t *session);
uint32_t ft_session_n_past(const ft_session_t *session);
uint32_t ft_session_n_ctx(const ft_session_t *session);
/* Bytes of the session's KV cache in the plan's kv_format (f16: 2 bytes an
 * element, f32: 4): on cpu and sim the pages it holds (shared ones
 * included: pages of 16 positions x every layer, K and V), which grow with
 * the positions it holds; on cuda the device's cache for n_ctx positions. */
uint64_t ft_session_kv_bytes(const ft_session_t *session);
/* Positions the session's last request restored from the prefix cache
 * instead of computing (0 without prefix_cache). Read it as
 * ft_session_n_past. */
uint32_t ft_session_n_restored(const ft_session_t *session);
/* Forgets every position from n_past on (n_past <= current): on cpu and
 * sim it drops the session's references to the pages past it (cached
 * pages stay in the prefix cache). Refused (FT_STATUS_BUSY) while the
 * session has an unfinished request. A model with recurrent
 * (linear-attention) layers keeps one state for all its positions: such a
 * session rewinds to 0 (starting over) and to where it is; any other
 * position is refused (FT_STATUS_UNSUPPORTED; a prefix_cache session
 * restores an anchor instead, ft_session_anchor). */
FT_WARN_UNUSED ft_status_t ft_session_rewind(ft_session_t *session, uint32_t n_past);

/* Marks a semantic anchor at position pos of the session (pos <=
 * ft_session_n_past): a point the chat layer expects a later request to
 * resume from (the end of the system prompt and tools, of each message,
 * of each tool call and tool result, of reasoning). The anchor records
 * what truncation cannot recover: the KV of the positions before it (the
 * full pages shared through the prefix tree, the partial last page
 * copied) and the recurrent state of linear-attention layers (so for a
 * model with such layers pos must be n_past). A later request of a
 * prefix_cache session whose prompt matches the tokens up to an anchor
 * restores it, in time proportional to its pages and state, not its
 * tokens, and gives bit-identical logits to computing them (as for
 * prefix_cache). Anchors are evicted with the cache (at the session's
 * cache_priority). Errors: the session has no prefix_cache, or an
 * unfinished request (FT_STATUS_BUSY); pos past n_past, or before it on a
 * model with recurrent state (invalid_argument); a full pool
 * (FT_STATUS_RESOURCE_EXHAUSTED); unsupported on the cuda backend. */
FT_WARN_UNUSED ft_status_t ft_session_anchor(ft_session_t *session, uint32_t pos);

/* ------------------------------------------------------------------ */
/* Streaming text: token ids to UTF-8, and stop strings.               */
/* ------------------------------------------------------------------ */

/* A detokenizer turns generated token ids into text as they arrive,
 * emitting only whole UTF-8 characters: a character whose bytes are split
 * over several tokens (byte-level BPE byte tokens, SentencePiece-style
 * <0xNN> byte-fallback tokens) is held until the token that completes it.
 * Bytes that cannot become valid UTF-8 are replaced by U+FFFD as they are
 * found, one per "maximal subpart" (Unicode Standard ch. 3: Rust's
 * String::from_utf8_lossy, which HF tokenizers' decode uses); what is
 * still held at the end becomes one U+FFFD at ft_detokenizer_flush. So the
 * concatenated output is the lossy UTF-8 decoding of all the tokens'
 * bytes (ft_engine_token_bytes; special tokens give their own text), and
 * every piece is valid UTF-8 on its own.
 *
 * One detokenizer serves one stream of tokens and is used by one thread
 * at a time; different detokenizers of one engine may be used from
 * different threads. It borrows the engine's tokenizer: destroy it
 * before closing the engine. Feeding and flushing allocate nothing. */
typedef struct ft_detokenizer ft_detokenizer_t;

/* Errors: a NULL argument (invalid_argument), out of memory. */
FT_WARN_UNUSED ft_status_t ft_detokenizer_create(const ft_engine_t *engine,
                                                 ft_detokenizer_t **out_detok);
void ft_detokenizer_destroy(ft_detokenizer_t *detok);

/* Feeds one token id. *out_text and *out_len: the text that is complete now
 * (often empty, never NUL-terminated), valid until the next call on this
 * detokenizer. Errors: an id out of range (invalid_argument; nothing is
 * fed, the state is unchanged). */
FT_WARN_UNUSED ft_status_t ft_detokenizer_feed(ft_detokenizer_t *detok, int32_t id,
                                               const char **out_text, size_t *out_len);
/* The end of the stream: what is still held comes out as U+FFFD (at most
 * one, 3 bytes). The detokenizer is empty afterwards and may start a new
 * stream. */
FT_WARN_UNUSED ft_status_t ft_detokenizer_flush(ft_detokenizer_t *detok, const char **out_text,
                                                size_t *out_len);
/* Drops what is held (a new stream, the old one abandoned). */
void ft_detokenizer_reset(ft_detokenizer_t *detok);

/* A stop-string matcher watches streamed text and says when it contains
 * one of the stop strings, and how many trailing bytes must be held back
 * from the output because they may be the start of one; once the next
 * bytes rule that out they can be shown. It matches bytes, across any
 * split of the text into pieces, and buffers nothing (the caller keeps the
 * text). Stop strings must be valid UTF-8, so when it is fed whole
 * characters (a detokenizer's output) the held-back bytes and the stop
 * offset always fall on character boundaries. The first stop string to
 * complete wins; of two completing at the same byte, the longer one.
 *
 * One matcher serves one stream and is used by one thread at a time. */
typedef struct ft_stop_matcher ft_stop_matcher_t;

/* Copies the n_stops strings. Errors (invalid_argument): stops NULL with
 * n_stops > 0, a NULL or empty string, one that is not valid UTF-8 (the
 * message names its index and the byte offset). */
FT_WARN_UNUSED ft_status_t ft_stop_matcher_create(const char *const *stops, size_t n_stops,
                                                  ft_stop_matcher_t **out_matcher);
void ft_stop_matcher_destroy(ft_stop_matcher_t *matcher);

/* Feeds the next n bytes of text. Returns 1 when the text so far contains
 * a stop string (*out_stop_at: the offset in the whole text where it
 * starts; the text before it is the output), else 0 with *out_hold:
 * trailing bytes of the text so far that must not be shown yet. After a
 * stop it keeps returning 1 with the same offset. Cannot fail. */
int ft_stop_matcher_feed(ft_stop_matcher_t *matcher, const char *bytes, size_t n,
                         size_t *out_stop_at, size_t *out_hold);
/* The index (in the create array) of the stop string found, or -1 while
 * none has been. */
int ft_stop_matcher_which(const ft_stop_matcher_t *matcher);

/* ------------------------------------------------------------------ */
/* Sampling.                                                           */
/* ------------------------------------------------------------------ */

/* A sampler picks each next token from the logits, for one request: it
 * holds that request's options, its random state and the counts of the
 * tokens it generated, so requests sampled by different samplers never
 * affect each other (in any interleaving, on any threads). One sampler is
 * used by one thread at a time. Sampling allocates nothing.
 *
 * The chain, in this order (llama.cpp's default order, with OpenAI's
 * request fields where llama.cpp has them too):
 *   0. filter (constrained output): the tokens the caller's filter rules
 *      out are banned, as a logit_bias of -INFINITY bans them;
 *   1. logit_bias: bias[id] is added to the token's logit (OpenAI's
 *      logit_bias; -INFINITY bans the token outright, even greedy);
 *   2. repeat_penalty over the last repeat_last_n ids of the history the
 *      caller passes (prompt and output alike), each distinct id once: a
 *      positive logit is divided by it, a negative one multiplied;
 *   3. presence and frequency penalties, OpenAI's definitions,
 *        logit -= presence_penalty * (count > 0) + frequency_penalty * count,
 *      where count is how often the token was generated in this request:
 *      the tokens this sampler returned plus those passed to
 *      ft_sampler_accept since create or the last reset; the prompt does
 *      not count;
 *   4. temperature <= 0: greedy, the highest logit (lowest id on ties);
 *   5. top_k: keep the k highest;
 *   6. top_p: keep the smallest highest-first prefix whose probability
 *      (softmax of the logits left) reaches top_p;
 *   7. min_p: keep logits >= max + ln(min_p), i.e. probability >= min_p
 *      times the best one's;
 *   8. logits / temperature; softmax over what is kept; one draw from
 *      xoshiro256** seeded from seed (through splitmix64).
 * Filters 5-7 always keep at least one candidate. NaN logits count as
 * -inf, +inf ones as the largest float. */
typedef struct ft_sampler ft_sampler_t;

/* The most tokens top_logprobs may ask for (OpenAI's limit). */
#define FT_SAMPLER_MAX_TOP_LOGPROBS 20

/* The largest |presence_penalty|, |frequency_penalty| and finite
 * |logit bias| accepted (OpenAI's ranges are 2 and 100). */
#define FT_SAMPLER_MAX_PENALTY 1e6f

typedef struct ft_logit_bias {
    int32_t id;
    float bias; /* added to the logit: finite, or -INFINITY to ban the token */
} ft_logit_bias_t;

typedef struct ft_sampler_options {
    float temperature;      /* <= 0: greedy (argmax) */
    uint32_t top_k;         /* 0: off */
    float top_p;            /* 1: off */
    float min_p;            /* 0: off */
    float repeat_penalty;   /* 1: off */
    uint32_t repeat_last_n; /* history tokens the penalty looks at */
    uint64_t seed;          /* the same seed, logits and history give the same tokens */
    /* The serving APIs' fields (OpenAI/Anthropic requests); _init sets them off: */
    float presence_penalty;            /* 0: off */
    float frequency_penalty;           /* 0: off */
    const ft_logit_bias_t *logit_bias; /* [n_logit_bias], copied by create; NULL: none */
    uint32_t n_logit_bias;             /* each id at most once */
    uint32_t top_logprobs;             /* 0..FT_SAMPLER_MAX_TOP_LOGPROBS: most likely tokens
                                          each sample reports */
    /* A token filter for constrained output (a grammar, e.g. JSON): NULL, or
       called at the start of each ft_sampler_next with the history it was
       given and allowed[n_vocab], all 1; it sets allowed[id] = 0 for each
       token that may not come next. It runs where the sampler runs (for a
       request, on the scheduler's thread): it must be quick and must not wait
       for the scheduler. When it rules out every token, sampling fails
       ("nothing to sample"). */
    void (*filter)(void *user, const int32_t *history, uint32_t n_history, uint8_t *allowed,
                   uint32_t n_vocab);
    void *filter_user;
} ft_sampler_options_t;

/* greedy off: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05,
 * repeat_penalty 1.0, repeat_last_n 64, seed 0; no presence or frequency
 * penalty, no logit bias, top_logprobs 0, no filter. */
void ft_sampler_options_init(ft_sampler_options_t *opts);

/* Allocates everything sampling needs for a vocabulary of n_vocab (NULL
 * opts: the defaults). Errors (invalid_argument, naming the field): a
 * temperature, top_p, min_p or penalty out of its range or NaN, a
 * logit_bias entry with an id outside the vocabulary, given twice, or a
 * bias that is NaN, +inf or too large, top_logprobs above the limit. */
FT_WARN_UNUSED ft_status_t ft_sampler_create(const ft_sampler_options_t *opts, uint32_t n_vocab,
                              ft_sampler_t **out_sampler);
void ft_sampler_destroy(ft_sampler_t *sampler);

typedef struct ft_token_logprob {
    int32_t id;
    float logprob; /* natural log of its probability */
} ft_token_logprob_t;

/* One sampled token and its log-probabilities: the log-softmax of the
 * distribution it was drawn from, i.e. after logit bias and penalties,
 * over the candidates top_k/top_p/min_p kept, at the temperature (logit /
 * temperature). Greedy (temperature <= 0) has no such distribution; there
 * it is the log-softmax at temperature 1 over every token after logit
 * bias and penalties (the distribution whose most likely token was
 * taken). Computed in double, stored as float. */
typedef struct ft_sample {
    int32_t token;
    float logprob; /* the token's */
    uint32_t n_top; /* entries of top[]: top_logprobs, or fewer when fewer tokens have
                       probability > 0 in that distribution */
    ft_token_logprob_t top[FT_SAMPLER_MAX_TOP_LOGPROBS]; /* most likely first; ties: lower id */
} ft_sample_t;

/* Picks the next token from logits (n_vocab floats, not modified),
 * fills *out and counts the token as generated (step 3). Errors
 * (invalid_argument): a NULL sampler, logits or out; a history id outside
 * the vocabulary (naming its index); nothing left to sample (every logit
 * -inf or NaN after logit bias and penalties). On error nothing is
 * counted and the random state is unchanged. */
FT_WARN_UNUSED ft_status_t ft_sampler_next(ft_sampler_t *sampler, const float *logits,
                                           const int32_t *history, uint32_t n_history,
                                           ft_sample_t *out);

/* Counts a token as generated that the caller put into the output
 * without sampling it (a forced prefix). Errors: an id outside the
 * vocabulary. */
FT_WARN_UNUSED ft_status_t ft_sampler_accept(ft_sampler_t *sampler, int32_t id);

/* A new request with the same options: forgets the generated counts and
 * reseeds from the options' seed, so it gives the same tokens as a new
 * sampler would. */
void ft_sampler_reset(ft_sampler_t *sampler);

/* ft_sampler_next without the log-probabilities: returns the token, or -1
 * on any error (the status is dropped; prefer ft_sampler_next). */
int32_t ft_sampler_sample(ft_sampler_t *sampler, const float *logits, const int32_t *history,
                          uint32_t n_history);

/* ------------------------------------------------------------------ */
/* Requests: asynchronous work for the scheduler.                      */
/* ------------------------------------------------------------------ */

/* A request appends tokens to a session and evaluates them (a prompt),
 * then optionally generates: it samples a token from the last logits,
 * evaluates it, samples the next, and so on. The last token sampled is
 * returned but not evaluated (the session's n_past does not count it; a
 * conversation that continues passes it first in its next prompt), as
 * ft_session_eval + ft_sampler_next would do. Generated tokens stream out
 * as they are made, through a callback on the scheduler's thread, through
 * ft_request_next from any thread, or both. A session's requests run in
 * the order they were submitted; requests of different sessions share the
 * scheduler's steps ("Threads" above).
 *
 * Life cycle: ft_request_submit -> (ft_request_next | ft_request_wait |
 * ft_request_cancel)* -> ft_request_release. A request holds a reference
 * to its session until it is released. */
typedef struct ft_request ft_request_t;

/* Why a request finished. */
typedef enum ft_finish_reason {
    FT_FINISH_NONE = 0,      /* not finished */
    FT_FINISH_EVALUATED = 1, /* max_new_tokens 0: every prompt token evaluated */
    FT_FINISH_LENGTH = 2,    /* max_new_tokens generated */
    FT_FINISH_EOG = 3,       /* an end-of-generation token was sampled (stop_at_eog; it is the
                                last token returned) */
    FT_FINISH_CONTEXT = 4,   /* the session's context is full: the last token sampled cannot be
                                evaluated */
    FT_FINISH_LIMIT = 5,     /* the session's token limit (max_tokens) is reached, likewise */
    FT_FINISH_CANCELLED = 6, /* ft_request_cancel or ft_request_release before it finished */
    FT_FINISH_ERROR = 7,     /* ft_request_wait returns the error */
} ft_finish_reason_t;

/* Called on the scheduler's thread, between steps of the scheduler's
 * work, for each generated token (sample not NULL, index: 0, 1, ...) and
 * once when the request finishes (sample NULL; ft_request_finish_reason
 * says why). It must return quickly and must not wait for the scheduler
 * (see "Threads"); it may call ft_request_cancel and the ft_engine_* and
 * ft_detokenizer / ft_stop_matcher calls. */
typedef void (*ft_request_fn)(void *user, ft_request_t *request, const ft_sample_t *sample,
                              uint32_t index);

typedef struct ft_request_options {
    const int32_t *tokens;  /* the prompt: appended to the session and evaluated (copied by
                               submit); may be empty when generating from the logits the
                               session already has */
    uint32_t n_tokens;
    float *out_all_logits;  /* NULL, or n_tokens x vocab_size floats the scheduler fills (the
                               caller's memory, read after the request finished) */
    uint32_t max_new_tokens; /* tokens to generate; 0: evaluate the prompt only */
    ft_sampler_t *sampler;   /* required when max_new_tokens > 0: borrowed, used only by the
                                scheduler until the request finishes; its history is the
                                session's tokens (every token evaluated, in order) */
    int stop_at_eog;         /* 1: finish at an end-of-generation token (default) */
    ft_request_fn on_token;  /* NULL: none */
    void *user;              /* passed to on_token */
} ft_request_options_t;

/* No prompt, no generation, stop_at_eog 1, no callback. */
void ft_request_options_init(ft_request_options_t *opts);

/* Queues a request on the session. Checked at once: a NULL argument, token
 * ids outside the vocabulary, generation without a sampler or a sampler
 * for another vocabulary size is not checked (the caller's), nothing to
 * do (no prompt and no generation). Refused with FT_STATUS_BUSY when
 * max_queued requests are already waiting. Checked when it starts (its
 * error then comes from ft_request_wait): room for the prompt in the
 * session's context and token limit, and logits to sample from when the
 * prompt is empty. Allocates the request (the prompt's copy and room for
 * max_new_tokens samples) through the engine's allocator. */
FT_WARN_UNUSED ft_status_t ft_request_submit(ft_session_t *session, const ft_request_options_t *opts,
                                             ft_request_t **out_request);

/* Takes the next generated token, in order. *out_got 1: *out is the
 * token; 0: the request has finished and every token was taken, or (wait
 * 0) none is ready yet. With wait 1 it blocks until a token is ready or
 * the request finishes. Errors: NULL arguments; waiting on the scheduler's
 * thread. */
FT_WARN_UNUSED ft_status_t ft_request_next(ft_request_t *request, int wait, ft_sample_t *out,
                                           int *out_got);

/* Waits until the request has finished. FT_OK for FT_FINISH_EVALUATED,
 * LENGTH, EOG, CONTEXT, LIMIT; FT_STATUS_CANCELLED when it was cancelled;
 * else the error that stopped it (a copy: each call returns a new status).
 * Tokens made before a cancel or an error stay evaluated in the session
 * (ft_session_n_past says how many; ft_session_rewind undoes them). */
FT_WARN_UNUSED ft_status_t ft_request_wait(ft_request_t *request);

/* Asks the scheduler to stop the request at the next step boundary (a
 * prefill chunk or a decode token already running finishes first).
 * Idempotent; nothing once the request has finished. */
void ft_request_cancel(ft_request_t *request);

/* Without waiting: the finish reason (FT_FINISH_NONE while running), and
 * the tokens generated so far. */
ft_finish_reason_t ft_request_finish_reason(const ft_request_t *request);
uint32_t ft_request_n_generated(const ft_request_t *request);
/* Copies the generated tokens (at most n) into ids and returns how many it
 * copied: the first ft_request_n_generated tokens, whatever ft_request_next
 * has taken. */
uint32_t ft_request_tokens(const ft_request_t *request, int32_t *ids, uint32_t n);

/* Drops the caller's handle. An unfinished request is cancelled; the
 * scheduler frees it (and drops its session reference) once it has
 * stopped. NULL: nothing. */
void ft_request_release(ft_request_t *request);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* FREETOKEN_H */
