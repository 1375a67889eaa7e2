/* The partition as an SVG picture (ftc inspect BUNDLE --svg FILE): a bar of
 * the VRAM regions against the budget, a bar of host RAM, and per layer
 * the decode q* split (copied to the GPU vs computed on the CPU) with the
 * expected hit rate drawn over it. Plain SVG 1.1, no scripts or fonts. */
#include "plan_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define SVG_W 860.0      /* picture width, px */
#define SVG_X0 150.0     /* left edge of bars and chart */
#define SVG_BAR_W 660.0  /* bar width, px */
#define SVG_BAR_H 28.0
#define SVG_CHART_H 160.0

typedef struct ft_svg_seg {
    const char *label, *color;
    uint64_t bytes;
} ft_svg_seg_t;

/* Writes s with XML's five special characters escaped. */
static void ft_svg_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

static double ft_svg_mib(uint64_t b)
{
    return (double)b / (double)(1u << 20);
}

/* One horizontal bar of segments scaled to `whole` bytes, with a legend row
 * beneath it; returns the y below the legend. */
static double ft_svg_bar(FILE *f, double y, const char *title, const ft_svg_seg_t *seg, size_t n,
                         uint64_t whole)
{
    fprintf(f, "<text x=\"10\" y=\"%.1f\" class=\"h\">", y + SVG_BAR_H * 0.65);
    ft_svg_text(f, title);
    fprintf(f, "</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"#eeeeee\" stroke=\"#555555\"/>\n",
            SVG_X0, y, SVG_BAR_W, SVG_BAR_H);
    double x = SVG_X0;
    for (size_t i = 0; i < n && whole; i++) {
        double w = SVG_BAR_W * (double)seg[i].bytes / (double)whole;
        if (w <= 0)
            continue;
        fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\">"
                "<title>%s: %.2f MiB</title></rect>\n",
                x, y, w, SVG_BAR_H, seg[i].color, seg[i].label, ft_svg_mib(seg[i].bytes));
        x += w;
    }
    double ly = y + SVG_BAR_H + 18, lx = SVG_X0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && i % 3 == 0) {
            ly += 18;
            lx = SVG_X0;
        }
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" "
                "stroke=\"#555555\"/><text x=\"%.1f\" y=\"%.1f\">%s %.2f MiB (%.1f%%)</text>\n",
                lx, ly - 10, seg[i].color, lx + 16, ly, seg[i].label, ft_svg_mib(seg[i].bytes),
                whole ? 100.0 * (double)seg[i].bytes / (double)whole : 0.0);
        lx += 220;
    }
    return ly + 22;
}

static double ft_svg_memory(FILE *f, const Ftplan__Plan *plan, double y)
{
    const Ftplan__Partition *p = plan->partition;
    uint64_t vram = plan->budget->vram_bytes, ram = plan->budget->ram_bytes;
    const ft_svg_seg_t v[] = {
        {"dense weights", "#4e79a7", p->vram_dense}, {"pinned experts", "#e15759", p->vram_pinned},
        {"LRU slots", "#f28e2b", p->vram_slots},     {"KV pages", "#59a14f", p->vram_kv},
        {"stream buffers", "#b07aa1", p->vram_stream}, {"scratch", "#9c755f", p->vram_scratch},
        {"free", "#eeeeee", vram - p->vram_used}};
    char title[96];
    snprintf(title, sizeof(title), "VRAM %.1f MiB", ft_svg_mib(vram));
    y = ft_svg_bar(f, y, title, v, sizeof(v) / sizeof(v[0]), vram);
    const ft_svg_seg_t r[] = {{"mapped weights", "#4e79a7", p->ram_weights},
                              {"KV + scratch", "#59a14f", p->ram_needed - p->ram_weights},
                              {"free", "#eeeeee", ram - p->ram_needed}};
    snprintf(title, sizeof(title), "RAM %.1f MiB", ft_svg_mib(ram));
    return ft_svg_bar(f, y + 6, title, r, sizeof(r) / sizeof(r[0]), ram);
}

/* Per layer: stacked q* bar (GPU share below, CPU share above) and the
 * hit rate as a polyline on the same 0..100% axis. */
static double ft_svg_layers(FILE *f, const Ftplan__Plan *plan, double y)
{
    const Ftplan__Partition *p = plan->partition;
    size_t n = plan->n_blocks;
    double top = y + 24, slot = SVG_BAR_W / (double)n, bw = slot * 0.6;
    fprintf(f, "<text x=\"10\" y=\"%.1f\" class=\"h\">Decode q* split and expected hit rate, "
            "per layer</text>\n", y + 8);
    for (int t = 0; t <= 4; t++) { /* axis: 0, 25, 50, 75, 100 % */
        double ty = top + SVG_CHART_H * (1.0 - t / 4.0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n",
                SVG_X0, ty, SVG_X0 + SVG_BAR_W, ty, SVG_X0 - 6, ty + 4, t * 25);
    }
    for (size_t l = 0; l < n; l++) {
        double x = SVG_X0 + slot * (double)l + (slot - bw) / 2;
        if (plan->blocks[l]->is_moe) {
            double q = ft_plan_report_decode_qstar(plan, l), hg = SVG_CHART_H * q;
            fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"#4e79a7\"><title>layer %zu: %.1f%% of misses copied to the GPU"
                    "</title></rect>\n<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"#f28e2b\"><title>layer %zu: %.1f%% of misses computed on the CPU"
                    "</title></rect>\n",
                    x, top + SVG_CHART_H - hg, bw, hg, l, 100.0 * q, x, top, bw,
                    SVG_CHART_H - hg, l, 100.0 * (1.0 - q));
        }
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"#2e7d32\" "
                "stroke=\"white\"><title>layer %zu: "
                "expected hit rate %.1f%%</title></circle>\n",
                SVG_X0 + slot * ((double)l + 0.5), top + SVG_CHART_H * (1.0 - p->hit_rate[l]), l,
                100.0 * p->hit_rate[l]);
        if (n <= 64 || l % (n / 32 + 1) == 0)
            fprintf(f, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%zu</text>\n",
                    SVG_X0 + slot * ((double)l + 0.5), top + SVG_CHART_H + 14, l);
    }
    fprintf(f, "<polyline fill=\"none\" stroke=\"#2e7d32\" stroke-width=\"2\" points=\"");
    for (size_t l = 0; l < n; l++)
        fprintf(f, "%.2f,%.2f ", SVG_X0 + slot * ((double)l + 0.5),
                top + SVG_CHART_H * (1.0 - p->hit_rate[l]));
    fputs("\"/>\n", f);
    double ly = top + SVG_CHART_H + 40;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">layer</text>\n",
            SVG_X0 + SVG_BAR_W / 2, ly - 10);
    const char *lab[] = {"missed experts copied to the GPU (q*)", "computed on the CPU (1 - q*)",
                         "expected hit rate"};
    const char *col[] = {"#4e79a7", "#f28e2b", "#2e7d32"};
    const double lx[] = {0, 270, 470}; /* legend columns, px from the chart's left */
    for (int i = 0; i < 3; i++)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                SVG_X0 + lx[i], ly + 4, col[i], SVG_X0 + lx[i] + 16, ly + 14, lab[i]);
    return ly + 30;
}

ft_status_t ft_plan_svg_write(const Ftplan__Plan *plan, const char *path)
{
    const Ftplan__Partition *p = plan->partition;
    if (!p)
        return ft_status_make(FT_STATUS_INVALID_ARGUMENT,
                              "the bundle has no partition to draw: compile it with --hw PROFILE");
    FILE *f = fopen(path, "w");
    if (!f)
        return ft_status_make(FT_STATUS_IO, "%s: cannot write: %s", path, strerror(errno));
    double h = 560; /* the layout below ends near 530 px */
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<style>.h { font-weight: bold; font-size: 13px; }</style>\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">",
            SVG_W, h, SVG_W, h);
    ft_svg_text(f, plan->source && plan->source->name ? plan->source->name : "bundle");
    fputs(": memory plan</text>\n<text x=\"10\" y=\"44\">machine: ", f);
    ft_svg_text(f, plan->hw_profile->machine ? plan->hw_profile->machine : "");
    fprintf(f, "</text>\n<text x=\"10\" y=\"62\">predicted: decode %.1f tok/s, prefill %.1f "
            "tok/s, bottleneck ",
            p->predicted_decode_tok_s, p->predicted_prefill_tok_s);
    static const char *const bn[] = {"DRAM", "PCIe", "GPU", "CPU compute"};
    fputs((int)p->bottleneck >= 0 && (int)p->bottleneck < 4 ? bn[p->bottleneck] : "unknown", f);
    fprintf(f, "; %u LRU slots, %u pinned experts, %u of %u layers on the GPU, ctx %u</text>\n",
            p->n_slots, p->n_pinned, p->n_gpu_layers, plan->hparams->n_layers, plan->budget->ctx);
    double y = ft_svg_memory(f, plan, 78);
    ft_svg_layers(f, plan, y + 6);
    fputs("</svg>\n", f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return ft_status_make(FT_STATUS_IO, "%s: write error", path);
    return FT_OK;
}
