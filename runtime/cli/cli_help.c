/* ft's help: the overview (`ft help`) and each command's (`ft help CMD`,
 * `ft CMD --help`). These texts are the only documentation of the command
 * line that is written by hand: the man page ft(1) is generated from them
 * at build time (cmake/help2man.awk), so they follow the layout it reads:
 *
 *   "usage: ..." lines, then paragraphs at column 0;
 *   a section is a line "name:" at column 0;
 *   an entry is "  TERM  description" (two spaces, then the term, then two
 *   or more spaces), continued by lines indented four or more spaces;
 *   under "examples:", a line indented two spaces says what the commands
 *   after it (indented four) do.
 *
 * Every option a command accepts is listed here with its default;
 * tests/e2e/test_cli_help.sh checks that against the getopt tables. */
#include "cli.h"
#include "cli_help_text.h"

#include <string.h>

/* The options every command that opens a bundle takes (cli.h,
 * FT_CLI_ENGINE_LONGOPTS). */
#define FT_HELP_ENGINE                                                                             \
    "engine options:\n"                                                                            \
    "  --backend cpu|sim|cuda\n"                                                                   \
    "      where the model runs (default cpu): cpu, this machine's CPU; sim, a modelled\n"         \
    "      GPU machine (--hw) with a VRAM budget (--vram), whose expert cache, q* split\n"         \
    "      and layer streaming really run while a virtual clock predicts the speed; cuda,\n"       \
    "      an NVIDIA GPU through the CUDA driver (without a driver or GPU, or for a bundle\n"      \
    "      compiled with --cuda-arch none, one line says so and the cpu backend runs)\n"           \
    "  --hw PROFILE\n"                                                                             \
    "      sim and cuda: the machine's hardware profile (ftc profile output or a preset,\n"        \
    "      share/freetoken/presets/*.textproto); default: the profile the bundle was\n"            \
    "      compiled for (ftc compile --hw), else generic figures (cuda)\n"                         \
    "  --vram SIZE\n"                                                                              \
    "      sim and cuda: the VRAM budget; default: the budget the bundle was compiled for,\n"      \
    "      else the profile's free VRAM (cuda: the free VRAM, polled between steps, and\n"         \
    "      re-planned when it changes)\n"                                                          \
    "  --threads N\n"                                                                              \
    "      CPU threads (default: one per online CPU)\n"                                            \
    "  --kv-budget SIZE\n"                                                                         \
    "      cpu and sim: the KV page pool every session's KV cache lives in (pages of 16\n"         \
    "      positions, taken as tokens are evaluated; cached prefix pages are evicted\n"            \
    "      when it is spent); default: min(8 GiB, a quarter of RAM)\n"                             \
    "  --kernels auto|generated|reference\n"                                                       \
    "      the CPU kernels: auto (the default) runs the plan's generated kernels where\n"          \
    "      they are the faster ones, generated runs them for every product they have,\n"           \
    "      reference never (the portable kernels that define the numerics)\n"                      \
    "  --verify lazy|full|off\n"                                                                   \
    "      checking the weights against the plan's hashes: lazy (the default) checks each\n"       \
    "      blob before its first use, full re-hashes the whole weights file at open, off\n"        \
    "      checks only sizes and the header (weights of another compile are refused in\n"          \
    "      every mode)\n"                                                                          \
    "  -h, --help\n"                                                                               \
    "      print this help and exit\n"

static const char ft_help_run[] =
    "usage: ft run BUNDLE (-p TEXT | --prompt-tokens IDS) [options]\n"
    "\n"
    "Evaluates the prompt and generates up to N tokens, streaming the text to stdout\n"
    "as it is decoded (whole UTF-8 characters only), then reports prefill and decode\n"
    "speed on stderr. Generation stops at the model's end-of-generation token, at a\n"
    "--stop string or when the context is full. Greedy unless --temp is above 0: the\n"
    "same bundle and options give the same tokens.\n"
    "\n"
    "options:\n"
    "  -p, --prompt TEXT\n"
    "      the prompt, tokenized with the model's tokenizer (BOS added when the model\n"
    "      wants one); must not be empty\n"
    "  --prompt-tokens IDS\n"
    "      the prompt as comma-separated token ids, taken as they are: 1,2,3\n"
    "  --chat\n"
    "      wrap the prompt in the model's chat format as one user message\n"
    "  -n, --n-predict N\n"
    "      the most tokens to generate (default 128)\n"
    "  --stop STR\n"
    "      stop before the first occurrence of STR in the text; up to 16, repeatable\n"
    "  --json\n"
    "      print one JSON object instead of the text: tokens, logprobs (per token: id,\n"
    "      logprob, top), text, n_prompt_tokens, n_generated, prefill_tok_s,\n"
    "      decode_tok_s, stopped\n"
    "  --ctx N\n"
    "      tokens of context (default: the model's context length)\n"
    "  --batch N\n"
    "      the most prompt tokens one forward pass takes (default 256)\n"
    "\n"
    "sampling options:\n"
    "  --temp T\n"
    "      temperature (default 0: greedy, the most likely token)\n"
    "  --seed S\n"
    "      seed of the sampler's generator (default 0)\n"
    "  --top-k K\n"
    "      keep the K most likely tokens (default 40; 0: off)\n"
    "  --top-p P\n"
    "      keep the most likely tokens whose probabilities sum to P (default 0.95; 1: off)\n"
    "  --min-p P\n"
    "      keep tokens at least P times as likely as the most likely one (default 0.05;\n"
    "      0: off)\n"
    "  --repeat-penalty R\n"
    "      penalize each token among the last 64 of prompt and output: a positive logit\n"
    "      is divided by R, a negative one multiplied (default 1: off)\n"
    "  --presence-penalty F\n"
    "      subtract F from the logit of every token generated so far (default 0)\n"
    "  --frequency-penalty F\n"
    "      subtract F times the count of its generations so far from each token's logit\n"
    "      (default 0)\n"
    "  --logit-bias ID=BIAS\n"
    "      add BIAS to token ID's logit; -inf bans it; up to 64, repeatable\n"
    "  --top-logprobs N\n"
    "      with --json, the N most likely tokens of each step, 0..20 (default 0)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  The greedy continuation of a prompt, 64 tokens:\n"
    "    ft run qwen3-bundle -p 'The capital of France is' -n 64\n"
    "  A sampled chat reply, the same every time for seed 7:\n"
    "    ft run qwen3-bundle --chat -p 'Write a haiku about rain' --temp 0.8 --seed 7\n"
    "  On a modelled 8 GiB laptop GPU:\n"
    "    ft run qwen3-bundle -p 'Hello' --backend sim --hw rtx4060_laptop.textproto --vram 8G\n";

static const char ft_help_chat[] =
    "usage: ft chat BUNDLE [options] < MESSAGES\n"
    "\n"
    "A conversation on stdin: each line is a user message, rendered in the model's\n"
    "chat format and answered on stdout, one reply a line. The session and its KV\n"
    "cache live between turns, so each turn evaluates only its new tokens. Lines\n"
    "that start with / are commands:\n"
    "\n"
    "commands:\n"
    "  /vram SIZE\n"
    "      re-plan the VRAM budget while the conversation lives (sim and cuda): expert\n"
    "      slots and KV pages move, no state is dropped; prints the statistics\n"
    "  /stats\n"
    "      the offloading statistics: budget, slots, hit rate, bytes copied\n"
    "  /reset\n"
    "      forget the conversation\n"
    "  /quit, /exit\n"
    "      leave (so does the end of the input)\n"
    "\n"
    "options:\n"
    "  -n, --n-predict N\n"
    "      the most tokens of each reply (default 256)\n"
    "  --temp T\n"
    "      temperature (default 0.8; 0: greedy); top-k 40, top-p 0.95 and min-p 0.05\n"
    "      apply\n"
    "  --seed S\n"
    "      seed of the sampler's generator (default 0)\n"
    "  --ctx N\n"
    "      tokens of context the whole conversation may fill (default: the model's\n"
    "      context length)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  Two turns from a file, greedy:\n"
    "    printf 'Hello\\nTell me more\\n' | ft chat qwen3-bundle --temp 0\n"
    "  On a modelled GPU, shrinking its budget in the middle (type /vram 4G):\n"
    "    ft chat qwen3-bundle --backend sim --hw rtx4060_laptop.textproto --vram 8G\n";

static const char ft_help_serve[] =
    "usage: ft serve BUNDLE [options]\n"
    "\n"
    "An HTTP server with OpenAI- and Anthropic-compatible APIs, for coding agents\n"
    "and SDKs. Each request gets its own session and runs beside the others on the\n"
    "engine's scheduler; a client that disconnects cancels its request. Prints\n"
    "'listening on http://HOST:PORT' once it accepts connections and serves until\n"
    "SIGINT or SIGTERM. Endpoints: GET /health, GET /v1/models, POST\n"
    "/v1/chat/completions (streamed or not; tools with tool_choice auto, none,\n"
    "required or a named tool, reasoning_content, logprobs, stop, seed, logit_bias,\n"
    "penalties, response_format json_object: the reply constrained to one JSON\n"
    "object; json_schema is refused), POST /v1/messages (streamed or not;\n"
    "thinking, tool_use and tool_result blocks), POST /v1/messages/count_tokens, and\n"
    "POST /tokenize, /detokenize and /apply-template (the prompt a chat body makes),\n"
    "GET /v1/stats (requests active, completed, cancelled; tokens; engine counters),\n"
    "GET /metrics (the same for Prometheus, with time-to-first-token and per-token\n"
    "latency histograms), and\n"
    "POST /v1/completions (raw text or token ids, no template; echo, legacy logprobs),\n"
    "and POST /v1/responses (OpenAI's Responses API as Codex speaks it, stateless:\n"
    "instructions, message, reasoning, function_call and function_call_output items,\n"
    "the streamed event sequence with complete usage) with /v1/responses/input_tokens.\n"
    "Tools, tool calls and reasoning are rendered and parsed in the model's own\n"
    "chat template for Qwen3, Qwen3.5/3.6, Qwen3-Coder, gpt-oss (harmony), DeepSeek\n"
    "V3.1 and GLM-4.5/4.6; other ChatML models serve plain chat. Errors come in each\n"
    "protocol's own shape. While no request runs, the server checks the expert\n"
    "weights lazy verification has not reached yet (--verify lazy, the default):\n"
    "GET /health answers 503 \"degraded\", naming the blob, once one is found\n"
    "damaged (200 \"ok\" otherwise, with the counts), and /metrics has\n"
    "ft_weight_blobs_checked, _damaged and _unchecked.\n"
    "\n"
    "options:\n"
    "  --host ADDR\n"
    "      the address to listen on (default 127.0.0.1); one that is not loopback\n"
    "      needs --api-key. Without a key, requests whose Host header names anything\n"
    "      but loopback are refused (403), so web pages cannot reach the server\n"
    "      through a DNS name rebound to 127.0.0.1\n"
    "  --port N\n"
    "      the TCP port (default 8080; 0: any free port, printed)\n"
    "  --api-key KEY\n"
    "      require KEY as 'Authorization: Bearer KEY' or 'x-api-key: KEY' on every\n"
    "      endpoint but /health (compared in constant time). Without --api-key, the\n"
    "      environment variable FT_API_KEY, when set and not empty, is the key (it then\n"
    "      stays out of the process's command line: packaging/freetoken.service)\n"
    "  --parallel N\n"
    "      requests the scheduler runs at once (default 4); more wait in its queue\n"
    "  --prefix-cache anchors|rewind|off\n"
    "      how requests reuse earlier ones' work. anchors (the default; cpu and sim\n"
    "      backends, rewind on cuda): KV pages go to a prefix cache shared by\n"
    "      all requests, and an anchor is marked at each message boundary of a\n"
    "      request (the system turn, each message, each tool call and tool result,\n"
    "      the prompt's end, the reply's end), with the state of recurrent layers; a\n"
    "      request restores the deepest anchor or longest cached prefix its prompt\n"
    "      shares and computes only the rest, reported as cached_tokens (OpenAI) and\n"
    "      cache_read_input_tokens (Anthropic). Side requests (no tools, max_tokens\n"
    "      at most 512: titles, summaries) cache at low priority, so they cannot\n"
    "      evict a conversation's anchors. rewind: --parallel sessions are kept and a\n"
    "      request takes the one sharing the longest prefix with its prompt (a model\n"
    "      with recurrent layers starts over). off: every prompt from its first\n"
    "      token (baselines for benchmarks)\n"
    "  --ctx N\n"
    "      tokens of context per request (default: the model's, at most 4096)\n"
    "  --max-body SIZE\n"
    "      the largest request body (default 64M); larger ones get 413\n"
    "  --model-id NAME\n"
    "      the model id GET /v1/models reports (default: the bundle's folder name);\n"
    "      any name a request gives is accepted and echoed\n"
    "  --script FILE\n"
    "      a test hook, never on unless given: chat requests take the replies in FILE\n"
    "      in turn (separated by lines that are exactly %%) instead of sampling; the\n"
    "      reply's tokens are evaluated by the model and then streamed and parsed as\n"
    "      if sampled, so tool-call round trips are deterministic on test fixtures;\n"
    "      a separator line '%% no-tools' instead marks the reply after it as the one\n"
    "      for every request that offers no tools (an agent's title requests)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  Serve on port 8080 and ask it something with curl:\n"
    "    ft serve qwen3-bundle &\n"
    "    curl -s localhost:8080/v1/chat/completions -d "
    "'{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}'\n"
    "  Claude Code against it (its system prompt and tools alone are many thousand tokens):\n"
    "    ft serve qwen3-bundle --ctx 32768 --parallel 2 &\n"
    "    ANTHROPIC_BASE_URL=http://127.0.0.1:8080 ANTHROPIC_AUTH_TOKEN=dummy claude\n";

static const char ft_help_launch[] =
    "usage: ft launch claude|codex|opencode [BUNDLE] [options] [-- AGENT ARGS]\n"
    "\n"
    "Runs a coding agent on freetoken. When an ft serve answers GET /health on\n"
    "127.0.0.1:PORT it is used (and keeps running; the agent replaces ft);\n"
    "otherwise ft serve BUNDLE is started there (its output in\n"
    "$TMPDIR/ft-launch-PORT.log), and stopped when the agent exits. The agent gets\n"
    "what points it at the server (docs/agents.md shows the same by hand):\n"
    "  claude    ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, the model in\n"
    "            ANTHROPIC_MODEL, ANTHROPIC_DEFAULT_OPUS/SONNET/HAIKU_MODEL,\n"
    "            ANTHROPIC_SMALL_FAST_MODEL and CLAUDE_CODE_SUBAGENT_MODEL,\n"
    "            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, API_TIMEOUT_MS (both\n"
    "            unless set); ANTHROPIC_API_KEY is unset\n"
    "  codex     -c overrides: model, model_provider \"freetoken\" with base_url\n"
    "            http://127.0.0.1:PORT/v1, wire_api \"responses\", no websockets,\n"
    "            env_key FREETOKEN_API_KEY\n"
    "  opencode  OPENCODE_CONFIG_CONTENT: a provider \"freetoken\" on\n"
    "            @ai-sdk/openai-compatible with baseURL http://127.0.0.1:PORT/v1, the\n"
    "            model as model and small_model, its context from /v1/models\n"
    "The key is FT_API_KEY when set (the server started then requires it), else\n"
    "\"freetoken\" (a server without a key takes any). Exits with the agent's\n"
    "status; 127 when the agent is not on PATH.\n"
    "\n"
    "options:\n"
    "  --port N\n"
    "      the server's port on 127.0.0.1 (default 8080)\n"
    "  --model NAME\n"
    "      the model name the agent asks for (default freetoken; the server answers\n"
    "      to any)\n"
    "  --ctx N, --parallel N\n"
    "      passed to the ft serve it starts\n"
    "\n"
    "examples:\n"
    "  Claude Code on a bundle:\n"
    "    ft launch claude qwen3-bundle --ctx 32768\n"
    "  Codex, one task, on a server already running:\n"
    "    ft launch codex --port 8080 -- exec \"list the files\"\n";

static const char ft_help_logits[] =
    "usage: ft logits BUNDLE --tokens IDS -o FILE [options]\n"
    "\n"
    "Evaluates a token sequence in one pass and writes the logits of every position:\n"
    "n_tokens x vocabulary float32 values in this machine's byte order, row-major,\n"
    "for comparing with other implementations. Says what it wrote on stderr.\n"
    "\n"
    "options:\n"
    "  --tokens IDS\n"
    "      the token ids, comma-separated: 1,2,3 (at most the model's context length)\n"
    "  -o, --output FILE\n"
    "      where the logits go (replaced)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  The logits of five tokens, 5 x vocabulary floats:\n"
    "    ft logits qwen3-bundle --tokens 1,2,3,4,5 -o logits.bin\n";

static const char ft_help_perplexity[] =
    "usage: ft perplexity BUNDLE --file TEXT [--ctx N] [--kl-base BASE | --save-logits FILE]\n"
    "       [options]\n"
    "\n"
    "How well the model predicts a text, as llama.cpp's perplexity tool measures it:\n"
    "the text is tokenized (BOS added when the model wants one), cut into windows of\n"
    "N tokens (the tail that fills no window is dropped; the first token of each\n"
    "window becomes BOS when the model adds one), each window evaluated from an\n"
    "empty context, and only its second half scored (positions N/2 to N-2, each\n"
    "predicting the next token), so every scored token sees at least N/2 tokens.\n"
    "Prints exp of the mean negative log-likelihood, with its standard error. The\n"
    "text needs at least 2N tokens (two windows, as llama.cpp asks); an empty text,\n"
    "a shorter one or invalid UTF-8 is an error. Progress goes to stderr when it is\n"
    "a terminal.\n"
    "\n"
    "With --kl-base, each scored position also gives the KL divergence of this\n"
    "bundle's next-token distribution from the base's, KL(base || this), computed in\n"
    "double from log-softmax, and whether both give the same most likely token: the\n"
    "mean, median, 99th percentile and maximum over all positions (quantiles\n"
    "interpolated linearly between ranks) and the share of same top tokens. The\n"
    "base evaluates this bundle's token ids and must have the same vocabulary.\n"
    "\n"
    "options:\n"
    "  -f, --file TEXT\n"
    "      the text, UTF-8 (special tokens in it are taken as plain text)\n"
    "  --ctx N\n"
    "      tokens of each window, at least 4 (default: 512, or the model's context\n"
    "      length when shorter; with a saved base, the file's)\n"
    "  --kl-base BASE\n"
    "      compare with BASE: a bundle (evaluated here too), or a file --save-logits\n"
    "      wrote (refused when it was saved for another vocabulary, --ctx or text)\n"
    "  --save-logits FILE\n"
    "      write this bundle's logits at the scored positions to FILE, for a later\n"
    "      --kl-base FILE (replaced): a 32-byte header (magic FTKLBASE, version,\n"
    "      vocabulary size, ctx, windows, a hash of the vocabulary), the windows'\n"
    "      token ids, then windows x (N - 1 - N/2) x vocabulary float32 logits, all\n"
    "      little-endian (runtime/cli/cli_ppl_file.h)\n"
    "  --json\n"
    "      print one JSON object: perplexity, perplexity_err, n_tokens (the tokens\n"
    "      scored), n_text_tokens, ctx, n_windows; with a base also base_perplexity,\n"
    "      kld_mean, kld_median, kld_p99, kld_max, same_top (a share, 0..1)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  The perplexity of a text in windows of 256 tokens:\n"
    "    ft perplexity qwen3-q4_k --file wiki.test.raw --ctx 256\n"
    "  What q4_k costs against f32, through a saved file:\n"
    "    ft perplexity qwen3-f32 --file wiki.test.raw --save-logits f32.kld\n"
    "    ft perplexity qwen3-q4_k --file wiki.test.raw --kl-base f32.kld --json\n";

static const char ft_help_bench[] =
    "usage: ft bench BUNDLE [options]\n"
    "\n"
    "Measures prefill and decode speed on fixed token ids (sampling is not timed):\n"
    "each of R runs evaluates a prompt of N tokens in one batch, then decodes G tokens\n"
    "one at a time; the medians are reported. On the cpu backend it also reports the\n"
    "weight bytes one decoded token reads and that traffic as a share of this\n"
    "machine's DRAM read bandwidth, measured in the same run. On sim the speeds are\n"
    "predictions for the modelled machine and are labelled so; on cuda they are\n"
    "measured, with the expert cache's counts.\n"
    "\n"
    "With --json the result is one JSON object that also records what makes it\n"
    "reproducible: bundle (the path, plan_hash and weights_hash as ftc inspect\n"
    "reports them, the model's architecture and the compiler), machine (this\n"
    "machine's CPU model, cores, ISA, RAM and the DRAM bandwidth measured now),\n"
    "profile (the machine the plan was solved for, or the --hw one on sim; null when\n"
    "there is none), build (the freetoken version, source revision, compiler, build\n"
    "type, flags and CMake options of this ft) and argv (the command line).\n"
    "scripts/bench-report.sh turns a set of such files into a Markdown table and an\n"
    "SVG plot.\n"
    "\n"
    "options:\n"
    "  --prompt N\n"
    "      prompt tokens of each run (default 512)\n"
    "  --gen N\n"
    "      decoded tokens of each run (default 128)\n"
    "  --reps R\n"
    "      runs, 1..100 (default 3)\n"
    "  --json\n"
    "      print one JSON object (keys in the README) instead of the report\n"
    "  --replan-at N:SIZE\n"
    "      sim and cuda: in the first run, re-plan to a VRAM budget of SIZE after N\n"
    "      decoded tokens\n"
    "  --parallel N\n"
    "      instead, N sessions (1..1024) each evaluate the prompt and decode G tokens\n"
    "      at once through the engine's scheduler, against one session alone in the\n"
    "      same run: aggregate_decode_tok_s, single_decode_tok_s and the expert bytes\n"
    "      read per step (default: off)\n"
    "  --agent-edit\n"
    "      instead, an agent's edit of its context: a synthetic multi-turn tool\n"
    "      conversation of --ctx tokens in the model's chat format (system prompt and\n"
    "      tool definitions, then user messages, tool calls and tool results), evaluated\n"
    "      message by message with an anchor (ft_session_anchor) at each boundary; then\n"
    "      the last tool result is edited and the request re-sent. Reports ttft_cold_ms\n"
    "      (the edited request with no cache, once), ttft_anchor_ms (restored from the\n"
    "      anchor before the edited result; median of R runs, each a different edit),\n"
    "      ttft_append_ms (a new tool result appended instead) and whether the restored\n"
    "      logits are bit-identical to the cold ones\n"
    "  --ctx N\n"
    "      --agent-edit: the conversation's tokens (default 4096)\n"
    "\n" FT_HELP_ENGINE "\n"
    "examples:\n"
    "  This machine's speed, as a file for bench-report.sh:\n"
    "    ft bench qwen3-bundle --json > cpu.json\n"
    "  The predicted speed on a laptop GPU with 6 GiB for the model:\n"
    "    ft bench qwen3-bundle --backend sim --hw rtx4060_laptop.textproto --vram 6G\n"
    "  Both as a table and a plot:\n"
    "    scripts/bench-report.sh --svg speed.svg cpu.json sim.json > speed.md\n";

static const char ft_help_version[] =
    "usage: ft version\n"
    "\n"
    "Prints ft and its version: ft 0.1.0. ft bench --json records the build in more\n"
    "detail.\n";

static const char ft_help_help[] =
    "usage: ft help [COMMAND]\n"
    "\n"
    "Prints the overview of ft, or COMMAND's options, defaults and examples (as\n"
    "ft COMMAND --help does).\n";

const ft_cli_command_t ft_cli_commands[] = {
    {"run", "generate text from a prompt, streamed to stdout", ft_help_run, ft_cli_run},
    {"chat", "a multi-turn conversation on stdin", ft_help_chat, ft_cli_chat},
    {"serve", "an OpenAI- and Anthropic-compatible HTTP server", ft_help_serve, ft_cli_serve},
    {"launch", "run Claude Code, Codex or OpenCode on ft serve", ft_help_launch, ft_cli_launch},
    {"logits", "write the logits of every position of a token sequence", ft_help_logits,
     ft_cli_logits},
    {"perplexity", "perplexity over a text, and KL divergence from a base", ft_help_perplexity,
     ft_cli_perplexity},
    {"bench", "measure (or on sim, predict) prefill and decode speed", ft_help_bench, ft_cli_bench},
    {"version", "print the version", ft_help_version, ft_cli_version},
    {"help", "print this overview, or a command's help", ft_help_help, ft_cli_help},
    {NULL, NULL, NULL, NULL},
};

static const char ft_help_head[] =
    "ft - run Mixture-of-Experts language models compiled by ftc\n"
    "\n"
    "usage: ft COMMAND BUNDLE [options]\n"
    "       ft help [COMMAND]\n"
    "\n"
    "ft runs a bundle that ftc compile wrote (a directory holding plan.ftp and\n"
    "weights.ftw) on this machine's CPU, on an NVIDIA GPU, or on a modelled GPU\n"
    "machine that predicts its speed. BUNDLE is that directory or its plan.ftp.\n"
    "ft COMMAND --help prints a command's options.\n"
    "\n";

static const char ft_help_tail[] =
    "\n"
    "sizes:\n"
    "  SIZE\n"
    "      bytes, with an optional K, M, G or T (powers of 1024) and an optional B or iB\n"
    "      after it: 512M, 8G, 1.5GiB\n"
    "\n"
    FT_HELP_EXIT_STATUS
    "\n"
    "examples:\n"
    "  Compile a model for this machine, then run a prompt:\n"
    "    ftc profile -o host.textproto\n"
    "    ftc compile model.gguf --hw host.textproto -o qwen3-bundle\n"
    "    ft run qwen3-bundle -p 'Once upon a time' -n 64\n"
    "\n"
    "see also:\n"
    "  ftc(1)  compiles models into bundles and measures machines\n";

const ft_cli_command_t *ft_cli_command_find(const char *name)
{
    for (const ft_cli_command_t *c = ft_cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void ft_cli_usage(FILE *out)
{
    fputs(ft_help_head, out);
    fputs("commands:\n", out);
    for (const ft_cli_command_t *c = ft_cli_commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fputs(ft_help_tail, out);
}

int ft_cli_print_help(const char *name)
{
    const ft_cli_command_t *c = ft_cli_command_find(name);
    fputs(c ? c->help : "", stdout);
    return 0;
}

int ft_cli_help(int argc, char **argv)
{
    if (argc == 1) {
        ft_cli_usage(stdout);
        return 0;
    }
    if (argc > 2) {
        fputs("ft help: one COMMAND at most\n", stderr);
        return 2;
    }
    const int self = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
    const ft_cli_command_t *c = ft_cli_command_find(self ? "help" : argv[1]);
    if (!c) {
        fprintf(stderr, "ft help: no command '%s'; ft help lists them\n", argv[1]);
        return 2;
    }
    fputs(c->help, stdout);
    return 0;
}

int ft_cli_version(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return ft_cli_print_help("version");
    if (argc > 1) {
        fputs("ft version: takes no arguments\n", stderr);
        return 2;
    }
    printf("ft %d.%d.%d\n", FT_VERSION_MAJOR, FT_VERSION_MINOR, FT_VERSION_PATCH);
    return 0;
}
