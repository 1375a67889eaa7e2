/* The IR's enums are stored in plans as plan.proto's enums, by number
 * (compiler/plan_build.c and plan_schedule.c cast one to the other), and
 * the runtime reads them back as the proto's: each value must be the same
 * number on both sides. A mismatch fails the build here; test_dtype_table
 * also checks that each proto enum has as many values as the IR enum. */
#include "ir.h"
#include "schedule.h"
#include "tokenizer_ir.h"

#include "plan.pb-c.h"
#include "../runtime/format/plan_validate.h"
#include "../runtime/text/tokenizer_internal.h"

/* FT_<prefix>_<value> (ir/) == FTPLAN__<ENUM>__<prefix>_<value> (plan.proto). */
#define FT_MIRROR(e, p, x)                                                                         \
    _Static_assert((int)FT_##p##_##x == (int)FTPLAN__##e##__##p##_##x,                            \
                   "plan.proto " #e " value " #p "_" #x " must equal FT_" #p "_" #x)

/* ft_arch_t and plan.proto's Arch */
FT_MIRROR(ARCH, ARCH, UNKNOWN);
FT_MIRROR(ARCH, ARCH, QWEN3MOE);
FT_MIRROR(ARCH, ARCH, MIXTRAL);
FT_MIRROR(ARCH, ARCH, GPT_OSS);
FT_MIRROR(ARCH, ARCH, GLM4MOE);
FT_MIRROR(ARCH, ARCH, QWEN35MOE);
FT_MIRROR(ARCH, ARCH, QWEN3NEXT);
FT_MIRROR(ARCH, ARCH, OLMOE);
FT_MIRROR(ARCH, ARCH, DEEPSEEK2);
FT_MIRROR(ARCH, ARCH, MINIMAX_M2);

/* ft_norm_kind_t and plan.proto's NormKind */
FT_MIRROR(NORM_KIND, NORM, RMS);
FT_MIRROR(NORM_KIND, NORM, LAYER);

/* ft_rope_kind_t and plan.proto's RopeKind */
FT_MIRROR(ROPE_KIND, ROPE, NONE);
FT_MIRROR(ROPE_KIND, ROPE, NORM);
FT_MIRROR(ROPE_KIND, ROPE, NEOX);

/* ft_attn_kind_t and plan.proto's AttnKind */
FT_MIRROR(ATTN_KIND, ATTN, NONE);
FT_MIRROR(ATTN_KIND, ATTN, GQA);
FT_MIRROR(ATTN_KIND, ATTN, MLA);
FT_MIRROR(ATTN_KIND, ATTN, GATED_DELTANET);

/* ft_router_scoring_t and plan.proto's RouterScoring */
FT_MIRROR(ROUTER_SCORING, ROUTER, SOFTMAX);
FT_MIRROR(ROUTER_SCORING, ROUTER, SIGMOID);

/* ft_activation_t and plan.proto's Activation */
FT_MIRROR(ACTIVATION, ACT, SILU);
FT_MIRROR(ACTIVATION, ACT, GELU);
FT_MIRROR(ACTIVATION, ACT, SWIGLU_OAI);
FT_MIRROR(ACTIVATION, ACT, SIGMOID);

/* ft_tensor_role_t and plan.proto's TensorRole */
FT_MIRROR(TENSOR_ROLE, ROLE, UNKNOWN);
FT_MIRROR(TENSOR_ROLE, ROLE, TOKEN_EMBD);
FT_MIRROR(TENSOR_ROLE, ROLE, OUTPUT_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, OUTPUT);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_V);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_O);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_ROUTER);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_GATE_EXPS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_UP_EXPS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_DOWN_EXPS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_GATE);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_UP);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_DOWN);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_V_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_O_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_SINKS);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_GATE);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_ROUTER_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_GATE_EXPS_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_UP_EXPS_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_DOWN_EXPS_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_EXP_PROBS_B);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_GATE_SHEXP);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_UP_SHEXP);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_DOWN_SHEXP);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_QKV);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_CONV);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_DT_BIAS);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_A);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_BETA);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_ALPHA);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, SSM_OUT);
FT_MIRROR(TENSOR_ROLE, ROLE, FFN_GATE_INP_SHEXP);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q_A);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q_A_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_Q_B);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_KV_A);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K_ROPE);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_KV_A_NORM);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K_B);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_V_B);
FT_MIRROR(TENSOR_ROLE, ROLE, ATTN_K_B_T);

/* ft_op_kind_t and plan.proto's OpKind */
FT_MIRROR(OP_KIND, OP, INVALID);
FT_MIRROR(OP_KIND, OP, EMBED);
FT_MIRROR(OP_KIND, OP, RMSNORM);
FT_MIRROR(OP_KIND, OP, LINEAR);
FT_MIRROR(OP_KIND, OP, HEAD_NORM);
FT_MIRROR(OP_KIND, OP, ROPE);
FT_MIRROR(OP_KIND, OP, KV_APPEND);
FT_MIRROR(OP_KIND, OP, ATTENTION);
FT_MIRROR(OP_KIND, OP, ADD);
FT_MIRROR(OP_KIND, OP, ROUTER);
FT_MIRROR(OP_KIND, OP, MOE);
FT_MIRROR(OP_KIND, OP, GLU);
FT_MIRROR(OP_KIND, OP, DELTANET);
FT_MIRROR(OP_KIND, OP, MLA);

/* A LINEAR weight without a bias: the same marker in the IR and the plan. */
_Static_assert(FT_OP_NO_BIAS == FT_PLAN_NO_BIAS, "FT_OP_NO_BIAS must equal plan.proto's NO_BIAS");

/* ft_buf_kind_t and plan.proto's BufferKind */
FT_MIRROR(BUFFER_KIND, BUF, ACTIVATION);
FT_MIRROR(BUFFER_KIND, BUF, LOGITS);

/* Appending a role or an op to the IR fails here until plan.proto has it
 * (and its line above). */
_Static_assert(FT_ROLE_COUNT == FT_ROLE_ATTN_K_B_T + 1,
               "a new ft_tensor_role_t value needs plan.proto's TensorRole");
_Static_assert(FT_OP_COUNT == FT_OP_MLA + 1,
               "a new ft_op_kind_t value needs plan.proto's OpKind");

/* Token types: the plan stores the IR's ft_token_type_t bytes, and the
 * runtime's tokenizer reads them as its FT_TOKTYPE_* (text/). */
#define FT_SAME_TOKTYPE(x)                                                                         \
    _Static_assert((int)FT_TOKEN_##x == (int)FT_TOKTYPE_##x,                                       \
                   "FT_TOKEN_" #x " must equal FT_TOKTYPE_" #x)
FT_SAME_TOKTYPE(NORMAL);
FT_SAME_TOKTYPE(UNKNOWN);
FT_SAME_TOKTYPE(CONTROL);
FT_SAME_TOKTYPE(USER_DEFINED);
FT_SAME_TOKTYPE(UNUSED);
FT_SAME_TOKTYPE(BYTE);
