/* ftc's help texts: the overview (`ftc help`) and each command's
 * (`ftc help CMD`, `ftc CMD --help`). The man page ftc(1) is generated
 * from them at build time (cmake/help2man.awk), so they keep the layout
 * runtime/cli/cli_help.c describes: "usage:" lines, paragraphs at column
 * 0, "section:" lines, "  TERM" entries described by lines indented four
 * or more, and under "examples:" a two-space line before the commands it
 * describes (indented four). tests/e2e/test_cli_help.sh checks that every
 * option a command's getopt table accepts is listed here, and only those. */
#include "ftc_help.h"
#include "../runtime/cli/cli_help_text.h"

#include "format/dtype.h"

#include <string.h>

static const char ftc_help_inspect[] =
    "usage: ftc inspect MODEL_OR_BUNDLE [options]\n"
    "\n"
    "What a model or a compiled bundle is: architecture, shapes, parameters,\n"
    "weight formats and bytes, tokenizer; for a bundle also its hashes, kernel\n"
    "modules, KV format and, when it was compiled with --hw, the plan (VRAM\n"
    "regions, RAM needed, expert slots and pinned experts, q* and the expected hit\n"
    "rate per layer, predicted tok/s and the bottleneck).\n"
    "\n"
    "arguments:\n"
    "  MODEL_OR_BUNDLE\n"
    "      a GGUF file, an HF directory (config.json, *.safetensors, tokenizer.json),\n"
    "      or a bundle directory (or its plan.ftp)\n"
    "\n"
    "options:\n"
    "  --json\n"
    "      one JSON object (keys in the README); for a bundle it includes plan_hash\n"
    "      (XXH3-64 of plan.ftp), weights_hash (XXH3-128 of the weights) and the op\n"
    "      schedule\n"
    "  --tensors\n"
    "      also one line (or JSON entry) per tensor: name, format, shape, bytes, offset\n"
    "  --ir\n"
    "      models only: print the model IR as text instead\n"
    "  --schedule\n"
    "      bundles only: print the op schedule the runtime executes, one op a line\n"
    "  --svg FILE\n"
    "      bundles only: also draw the plan's VRAM partition into FILE (SVG)\n"
    "  -h, --help\n"
    "      print this help and exit\n"
    "\n"
    "examples:\n"
    "  What a GGUF file holds, for a script:\n"
    "    ftc inspect model.gguf --json\n"
    "  The plan of a bundle compiled for a machine, and its picture:\n"
    "    ftc inspect qwen3-bundle --svg plan.svg\n";

static const char ftc_help_compile[] =
    "usage: ftc compile MODEL -o BUNDLE_DIR [options]\n"
    "\n"
    "Compiles a model into BUNDLE_DIR/plan.ftp (the plan: model description, op\n"
    "schedule, tokenizer, kernel modules, and with --hw the solved partition) and\n"
    "BUNDLE_DIR/weights.ftw (the weights repacked: every tensor 4 KiB aligned, each\n"
    "expert one contiguous blob), creating BUNDLE_DIR. Compiling the same input with\n"
    "the same options twice gives byte-identical files. A model that cannot fit the\n"
    "RAM budget is refused, saying by how much, before anything is written. Progress\n"
    "is shown on a terminal.\n"
    "\n"
    "arguments:\n"
    "  MODEL\n"
    "      a GGUF file or an HF directory (config.json, *.safetensors, tokenizer.json)\n"
    "\n"
    "options:\n"
    "  -o, --output BUNDLE_DIR\n"
    "      where the bundle goes (required)\n"
    "  -f, --format F\n"
    "      convert the weight matrices to F (default: keep the source's formats);\n"
    "      norms are always f32. F may also be a mix, q3_k_m, q4_k_m or q5_k_m:\n"
    "      each matrix in the type llama-quantize gives it (docs/quant-mixes.md)\n"
    "  --kv f16|f32\n"
    "      the KV cache's element type (default f16: half the memory; f32 is exact)\n"
    "  --hw PROFILE\n"
    "      solve the plan for this machine (ftc profile output or a preset) and store\n"
    "      it with the profile; without it the runtime solves at open\n"
    "  --vram SIZE\n"
    "      with --hw: the VRAM budget (default: the profile's free VRAM)\n"
    "  --ram SIZE\n"
    "      with --hw: the RAM budget (default: the profile's RAM)\n"
    "  --ctx N\n"
    "      with --hw: tokens of KV the plan reserves, 1..2^26 (default: 4096 or the\n"
    "      model's context length when shorter)\n"
    "  --calibrate FILE\n"
    "      run the compiled model's routers over this text file on the CPU, store the\n"
    "      routing counts, and with --hw pin the experts used most\n"
    "  --cpu-isa avx512|avx2|portable|none\n"
    "      the ISA of the generated CPU kernels (default: the best this machine runs;\n"
    "      none: no CPU module, the runtime's reference kernels run)\n"
    "  --cuda-arch LIST|none\n"
    "      the GPU targets of the CUDA kernels, e.g. sm_86,sm_90 or 86,90, plus PTX for\n"
    "      the lowest (default: sm_80, sm_86, sm_89, sm_90, sm_100 and sm_120 when ftc\n"
    "      was built with NVRTC, -DFT_CUDA=ON; else none). A bundle without CUDA kernels\n"
    "      and with an avx512 module stores its Q8_0 products' rows interleaved by 16\n"
    "      (q8_0_r16) for the generated kernels: about twice their prefill speed\n"
    "  --json\n"
    "      print one line of JSON: bundle, plan_bytes, plan_hash, weights_bytes,\n"
    "      weights_hash, seconds\n"
    "  -q, --quiet\n"
    "      print nothing on success\n"
    "  -h, --help\n"
    "      print this help and exit\n"
    "\n"
    "examples:\n"
    "  Compile for this machine, keeping the GGUF's formats:\n"
    "    ftc profile -o host.textproto\n"
    "    ftc compile model.gguf --hw host.textproto -o qwen3-bundle\n"
    "  Convert to Q4_K, for a laptop GPU with 6 GiB for the model:\n"
    "    ftc compile hf-dir --format q4_k --hw rtx4060_laptop.textproto --vram 6G -o b\n";

static const char ftc_help_verify[] =
    "usage: ftc verify BUNDLE\n"
    "\n"
    "Re-hashes every byte of the bundle's weights and checks them against the hashes\n"
    "its plan recorded, then prints BUNDLE: ok. A mismatch is a failure (exit 1)\n"
    "that names the file. Opening a bundle always checks sizes and the recorded\n"
    "header hash; ft checks each weight blob before its first use (ft --verify).\n"
    "\n"
    "options:\n"
    "  -h, --help\n"
    "      print this help and exit\n"
    "\n"
    "examples:\n"
    "  Check a bundle after copying it to another machine:\n"
    "    ftc verify qwen3-bundle\n";

static const char ftc_help_profile[] =
    "usage: ftc profile [-o FILE] [options]\n"
    "\n"
    "Measures this machine and writes its hardware profile as text: CPU model,\n"
    "cores, ISA, caches and RAM, DRAM read bandwidth with all threads and one, the\n"
    "CPU's expert-GEMV rate per weight format with the runtime's own kernels, and\n"
    "each GPU through the CUDA driver when one is present (VRAM, device memory\n"
    "bandwidth, pinned copies by size, gather, launch latency, and copies and CPU\n"
    "work measured together). Every figure records how it was obtained (median and\n"
    "spread of N runs). A summary goes to stdout when the profile goes to a file,\n"
    "else to stderr; progress is shown on a terminal.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE\n"
    "      write the profile to FILE (default: stdout)\n"
    "  --json\n"
    "      print the profile as JSON on stdout (the text still goes to -o FILE)\n"
    "  --quick\n"
    "      fewer and smaller runs (about 30 s on a small machine)\n"
    "  --threads N\n"
    "      threads of the CPU measurements, 1..1024 (default: one per online CPU)\n"
    "  --no-gpu\n"
    "      do not look for a CUDA driver\n"
    "  -h, --help\n"
    "      print this help and exit\n"
    "\n"
    "examples:\n"
    "  Profile this machine for ftc compile --hw:\n"
    "    ftc profile -o host.textproto\n";

static const char ftc_help_plan[] =
    "usage: ftc plan MODEL --hw PROFILE [options]\n"
    "\n"
    "Will MODEL fit that machine, and how fast will it run? Plans from the model's\n"
    "shapes alone (no weights are read): whether it fits the budgets, the VRAM\n"
    "partition (dense weights, pinned experts, LRU expert slots, KV pages, stream\n"
    "buffers, scratch), the RAM needed, and predicted decode and prefill tok/s with\n"
    "the bottleneck. Every speed is a prediction from the profile. A model that does\n"
    "not fit exits with 1, saying why.\n"
    "\n"
    "arguments:\n"
    "  MODEL\n"
    "      a GGUF file, an HF directory, or a config.json alone\n"
    "\n"
    "options:\n"
    "  --hw PROFILE\n"
    "      the machine: ftc profile output or a preset (required)\n"
    "  --vram SIZE\n"
    "      the VRAM budget (default: the profile's free VRAM)\n"
    "  --ram SIZE\n"
    "      the RAM budget (default: the profile's RAM)\n"
    "  --ctx N\n"
    "      tokens of context to reserve KV for, 1..2^30 (default 4096)\n"
    "  --format F\n"
    "      the routed experts' weight format (default: the checkpoint's), or a mix\n"
    "      (q3_k_m, q4_k_m, q5_k_m) giving every matrix the format ftc compile --format\n"
    "      gives it; a mix reads the tensor table (a GGUF or an HF directory with its\n"
    "      safetensors), not a config.json alone\n"
    "  --dense-format F\n"
    "      the other weights' format (default: as --format, else the checkpoint's)\n"
    "  --json\n"
    "      one JSON object: fits, the partition, predicted_decode_tok_s,\n"
    "      predicted_prefill_tok_s, bottleneck, ...\n"
    "  -h, --help\n"
    "      print this help and exit\n"
    "\n"
    "examples:\n"
    "  Qwen3-30B-A3B in Q4_K on an 8 GiB laptop GPU, from its config alone:\n"
    "    ftc plan config.json --hw rtx4060_laptop.textproto --format q4_k\n";

static const char ftc_help_version[] = "usage: ftc version\n"
                                       "\n"
                                       "Prints ftc and its version: ftc 0.1.0.\n";

static const char ftc_help_help[] =
    "usage: ftc help [COMMAND]\n"
    "\n"
    "Prints the overview of ftc, or COMMAND's options, defaults and examples (as\n"
    "ftc COMMAND --help does).\n";

static const char ftc_help_head[] =
    "ftc - compile Mixture-of-Experts language models for this machine\n"
    "\n"
    "usage: ftc COMMAND [options]\n"
    "       ftc help [COMMAND]\n"
    "\n"
    "ftc is freetoken's ahead-of-time compiler. It measures a machine (profile),\n"
    "plans how a model's experts split between VRAM, RAM, the CPU and the PCIe link\n"
    "(plan), and compiles a GGUF file or an HF directory into a bundle that ft runs:\n"
    "the weights repacked, the solved plan, and kernels specialized for the model\n"
    "and the machine (compile). ftc COMMAND --help prints a command's options.\n"
    "\n";

static const char ftc_help_sizes[] =
    "\n"
    "sizes:\n"
    "  SIZE\n"
    "      bytes, with an optional unit: K, M, G, T (or KiB, MiB, GiB, TiB) are powers of\n"
    "      1024, KB, MB, GB, TB powers of 1000: 512M, 8G, 1.5T, 24GB\n";

static const char ftc_help_tail[] =
    "\n"
    FT_HELP_EXIT_STATUS
    "\n"
    "examples:\n"
    "  Measure this machine, compile a model for it and look at the plan:\n"
    "    ftc profile -o host.textproto\n"
    "    ftc compile model.gguf --hw host.textproto -o qwen3-bundle\n"
    "    ftc inspect qwen3-bundle\n"
    "\n"
    "see also:\n"
    "  ft(1)  runs the bundles ftc compiles\n";

const ftc_help_t ftc_help_commands[] = {
    {"inspect", "what a model or a bundle is, and a bundle's plan", ftc_help_inspect},
    {"compile", "compile a model into a bundle", ftc_help_compile},
    {"verify", "re-hash a bundle's weights against its plan", ftc_help_verify},
    {"profile", "measure this machine into a hardware profile", ftc_help_profile},
    {"plan", "will a model fit a machine, and how fast will it run (predicted)", ftc_help_plan},
    {"version", "print the version", ftc_help_version},
    {"help", "print this overview, or a command's help", ftc_help_help},
    {NULL, NULL, NULL},
};

const ftc_help_t *ftc_help_find(const char *name)
{
    for (const ftc_help_t *h = ftc_help_commands; h->name; h++)
        if (strcmp(h->name, name) == 0) return h;
    return NULL;
}

/* The weight formats --format takes, from dtype.h's table. */
static void ftc_help_formats(FILE *out)
{
    char list[256];
    fprintf(out, "\nformats:\n  F\n      a weight format: %s\n",
            ft_dtype_list(FT_DTYPE_FLAG_WEIGHT, "or", list, sizeof(list)));
}

void ftc_help_overview(FILE *out)
{
    fputs(ftc_help_head, out);
    fputs("commands:\n", out);
    for (const ftc_help_t *h = ftc_help_commands; h->name; h++)
        fprintf(out, "  %-8s %s\n", h->name, h->summary);
    fputs(ftc_help_sizes, out);
    ftc_help_formats(out);
    fputs(ftc_help_tail, out);
}

int ftc_help_print(const char *name)
{
    const ftc_help_t *h = ftc_help_find(name);
    fputs(h ? h->text : "", stdout);
    return 0;
}

void ftc_help_usage(const char *name, FILE *out)
{
    const ftc_help_t *h = ftc_help_find(name);
    const char *text = h ? h->text : "";
    const char *end = strstr(text, "\n\n");
    fwrite(text, 1, end ? (size_t)(end - text) + 1 : strlen(text), out);
    fprintf(out, "(ftc %s --help lists the options)\n", name);
}
