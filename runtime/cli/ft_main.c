/* ft: run compiled bundles.
 *
 *   ft run BUNDLE -p TEXT [options]       generate text, streamed
 *   ft logits BUNDLE --tokens 1,2,3 -o F  float32 logits of every position
 *   ft bench BUNDLE [--json]              prefill and decode speed
 *
 * Exit codes: 0 ok, 1 failure, 2 usage. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char ft_usage[] =
    "usage: ft <command> BUNDLE [options]\n"
    "\n"
    "  run BUNDLE (-p TEXT | --prompt-tokens 1,2,3) [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "      [--min-p P] [--repeat-penalty R] [--seed S] [--stop STR]... [--chat] [--json]\n"
    "      [--presence-penalty F] [--frequency-penalty F] [--logit-bias ID=BIAS]... [--top-logprobs N]\n"
    "      [--threads N] [--ctx N] [--batch N] [--backend cpu|sim|cuda] [--hw PROFILE] [--vram SIZE]\n"
    "  chat BUNDLE [--temp T] [--seed S] [-n N] [--backend ...] [--hw PROFILE] [--vram SIZE]\n"
    "      multi-turn chat on stdin; /vram SIZE re-plans the VRAM budget live, /stats, /reset, /quit\n"
    "  logits BUNDLE --tokens 1,2,3 -o FILE [--threads N]\n"
    "      writes n_tokens x vocab float32 logits, row-major\n"
    "  bench BUNDLE [--prompt N] [--gen N] [--reps R] [--threads N] [--json] [--kernels K]\n"
    "      [--backend cpu|sim|cuda] [--hw PROFILE] [--vram SIZE] [--replan-at N:SIZE] [--parallel N]\n"
    "      prefill and decode tokens/s, weight bytes read per token, and the share of\n"
    "      this machine's DRAM read bandwidth (measured in the same run); --parallel N: N\n"
    "      sessions decoding at once through the scheduler against one alone in the same run\n"
    "      (aggregate_decode_tok_s, single_decode_tok_s, expert bytes read per step)\n"
    "  every command that opens a bundle also takes --kernels auto|generated|reference: the\n"
    "  plan's generated CPU kernels where they are faster (auto, the default: prefill batches),\n"
    "  for every product (generated), or never (reference); and --verify lazy|full|off: check\n"
    "  each weight blob against the plan's hash before its first use (lazy, the default), the\n"
    "  whole weights file at open (full), or only sizes and the header (off)\n"
    "  version\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(ft_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0)
        return ft_cli_run(argc - 1, argv + 1);
    if (strcmp(cmd, "logits") == 0)
        return ft_cli_logits(argc - 1, argv + 1);
    if (strcmp(cmd, "chat") == 0)
        return ft_cli_chat(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return ft_cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("ft %d.%d.%d\n", FT_VERSION_MAJOR, FT_VERSION_MINOR, FT_VERSION_PATCH);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(ft_usage, stdout);
        return 0;
    }
    fprintf(stderr, "ft: unknown command '%s'\n\n%s", cmd, ft_usage);
    return 2;
}
