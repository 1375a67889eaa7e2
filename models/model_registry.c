#include "model_registry.h"

#include "lowering.h"

#include <string.h>

/* The architecture a checkpoint declares, in GGUF's naming. */
static const char *ft_src_arch(const ft_src_model_t *src)
{
    if (src->kind == FT_SRC_GGUF) {
        const char *arch = ft_meta_get_string(&src->meta, "general.architecture");
        /* llama.cpp has no "mixtral" arch: a llama file with experts is one. */
        int64_t n_experts = 0;
        if (arch && strcmp(arch, "llama") == 0 &&
            ft_meta_get_i64(&src->meta, "llama.expert_count", &n_experts) && n_experts > 0)
            return "mixtral";
        return arch;
    }
    const char *hf = ft_meta_get_string(&src->meta, "architectures.0");
    if (hf && strcmp(hf, "Qwen3MoeForCausalLM") == 0)
        return "qwen3moe";
    if (hf && strcmp(hf, "MixtralForCausalLM") == 0)
        return "mixtral";
    if (hf && strcmp(hf, "GptOssForCausalLM") == 0)
        return "gpt-oss";
    if (hf && strcmp(hf, "Glm4MoeForCausalLM") == 0)
        return "glm4moe";
    if (hf && (strcmp(hf, "Qwen3_5MoeForCausalLM") == 0 ||
               strcmp(hf, "Qwen3_5MoeForConditionalGeneration") == 0)) /* its text model */
        return "qwen35moe";
    if (hf && strcmp(hf, "Qwen3NextForCausalLM") == 0) return "qwen3next";
    if (hf && strcmp(hf, "OlmoeForCausalLM") == 0)
        return "olmoe";
    if (hf && (strcmp(hf, "DeepseekV3ForCausalLM") == 0 || strcmp(hf, "DeepseekV2ForCausalLM") == 0))
        return "deepseek2";
    if (hf && strcmp(hf, "MiniMaxM2ForCausalLM") == 0)
        return "minimax-m2";
    const char *model_type = ft_meta_get_string(&src->meta, "model_type");
    if (model_type && strcmp(model_type, "qwen3_moe") == 0)
        return "qwen3moe";
    if (model_type && strcmp(model_type, "mixtral") == 0)
        return "mixtral";
    if (model_type && strcmp(model_type, "glm4_moe") == 0)
        return "glm4moe";
    if (model_type && (strcmp(model_type, "qwen3_5_moe_text") == 0 ||
                       strcmp(model_type, "qwen3_5_moe") == 0))
        return "qwen35moe";
    if (model_type && strcmp(model_type, "qwen3_next") == 0) return "qwen3next";
    if (model_type && strcmp(model_type, "olmoe") == 0)
        return "olmoe";
    if (model_type && (strcmp(model_type, "deepseek_v3") == 0 || strcmp(model_type, "deepseek_v2") == 0))
        return "deepseek2";
    if (model_type && strcmp(model_type, "minimax_m2") == 0)
        return "minimax-m2";
    return hf ? hf : model_type;
}

ft_status_t ft_model_build_ir(const ft_src_model_t *src, ft_ir_model_t **out_model)
{
    *out_model = NULL;
    const char *arch = ft_src_arch(src);
    if (!arch)
        return ft_status_make(FT_STATUS_FORMAT, "%s: the checkpoint does not name its architecture (%s)",
                              src->path,
                              src->kind == FT_SRC_GGUF ? "general.architecture"
                                                       : "config.json: architectures / model_type");
    ft_status_t (*build)(const ft_src_model_t *, ft_ir_model_t *) = NULL;
    if (strcmp(arch, "qwen3moe") == 0)
        build = ft_qwen3moe_build;
    if (strcmp(arch, "mixtral") == 0)
        build = ft_mixtral_build;
    if (strcmp(arch, "gpt-oss") == 0)
        build = ft_gptoss_build;
    if (strcmp(arch, "glm4moe") == 0)
        build = ft_glm4moe_build;
    if (strcmp(arch, "qwen35moe") == 0) build = ft_qwen35moe_build;
    if (strcmp(arch, "qwen3next") == 0) build = ft_qwen3next_build;
    if (strcmp(arch, "olmoe") == 0) build = ft_olmoe_build;
    if (strcmp(arch, "deepseek2") == 0) build = ft_deepseek2_build;
    if (strcmp(arch, "minimax-m2") == 0) build = ft_minimax_m2_build;
    if (!build)
        return ft_status_make(
            FT_STATUS_UNSUPPORTED,
            "%s: architecture '%s' is not supported (supported: qwen3moe, mixtral, gpt-oss, "
            "glm4moe, qwen35moe, qwen3next, olmoe, deepseek2, minimax-m2)",
            src->path, arch);
    ft_ir_model_t *model = NULL;
    ft_status_t st = ft_ir_model_create(&model);
    if (st)
        return st;
    st = build(src, model);
    if (!st)
        st = ft_ir_model_validate(model);
    if (st) {
        ft_ir_model_destroy(model);
        return st;
    }
    *out_model = model;
    return FT_OK;
}

ft_status_t ft_model_lower(const ft_ir_model_t *model, ft_ir_schedule_t *out)
{
    switch (model->hp.arch) {
    case FT_ARCH_QWEN3MOE:
    case FT_ARCH_MIXTRAL: /* the same block shape; no q/k norm, its RoPE pairing: data in the IR */
    case FT_ARCH_GPT_OSS: /* the same again: biases, sinks, YaRN, its activation and windows are data */
    case FT_ARCH_GLM4MOE: /* and leading dense blocks, shared experts, the router's bias: data too */
    case FT_ARCH_QWEN35MOE: /* and Gated DeltaNet blocks beside gated attention, a gated shared
                               expert */
    case FT_ARCH_QWEN3NEXT: /* the same, value heads grouped */
    case FT_ARCH_OLMOE:     /* q/k norms over the whole projection: one wide HEAD_NORM each */
    case FT_ARCH_DEEPSEEK2: /* latent attention blocks (the MLA op) beside the MoE FFNs */
    case FT_ARCH_MINIMAX_M2: /* OLMoE's whole-projection q/k norms, GLM's biased sigmoid router */
        return ft_lower_moe_decoder(model, out);
    case FT_ARCH_UNKNOWN:
        break;
    }
    return ft_status_make(FT_STATUS_UNSUPPORTED, "%s: architecture '%s' has no lowering to an op schedule",
                          model->source_name, ft_arch_name(model->hp.arch));
}
