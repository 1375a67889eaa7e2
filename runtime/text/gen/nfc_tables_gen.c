/* Build-time generator of the NFC tables (runtime/text/nfc.c) from the
 * Unicode Character Database as Debian's unicode-data package installs it
 * (/usr/share/unicode): UnicodeData.txt gives each code point's canonical
 * combining class and canonical decomposition, CompositionExclusions.txt
 * the code points whose decomposition is never recomposed. Writes a C
 * header of sorted arrays that the runtime searches by bisection:
 *   ft_nfc_ccc[]     (cp << 8) | ccc for every code point with ccc != 0
 *   ft_nfc_decomp[]  {cp, first, second} canonical decompositions (second
 *                    0 for a singleton), one level deep as the file has them
 *   ft_nfc_comp[]    {first, second, composite} the primary composites
 *   FT_NFC_QC_MIN    no code point below it changes under NFC or takes part
 *                    in a composition as the second of a pair, so a text
 *                    entirely below it is already in NFC
 *   FT_NFC_MAX_DECOMP the longest full canonical decomposition (Hangul too)
 *   ft_nfkc_decomp[] {cp, offset, length} compatibility decompositions
 *                    (tag dropped) into ft_nfkc_data[], for NFKC, with
 *                    FT_NFKC_QC_MIN and FT_NFKC_MAX_DECOMP as above
 * Run by the build only (runtime/CMakeLists.txt); it trusts its input no
 * more than needed: malformed lines stop it with a message.
 * Usage: nfc_tables_gen UnicodeData.txt CompositionExclusions.txt OUT.h */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_CP 0x110000u

static uint8_t ccc[N_CP];
static uint32_t dec_a[N_CP], dec_b[N_CP]; /* canonical decomposition, 0 when none */
static uint8_t excluded[N_CP];
/* compatibility decompositions (NFKC), tag dropped: kdata[koff[cp]..+klen[cp]) */
#define MAX_K 18
static uint32_t koff[N_CP], kdata[1 << 16];
static uint8_t klen[N_CP];
static uint32_t n_kdata;

static void die(const char *file, unsigned line, const char *what)
{
    fprintf(stderr, "nfc_tables_gen: %s:%u: %s\n", file, line, what);
    exit(1);
}

static void read_unicode_data(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) die(path, 0, "cannot open (install Debian's unicode-data package)");
    char line[1024];
    unsigned ln = 0;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        char *field[15];
        int nf = 0;
        char *p = line;
        field[nf++] = p;
        while (*p && nf < 15) {
            if (*p == ';') {
                *p = 0;
                field[nf++] = p + 1;
            }
            p++;
        }
        if (nf < 6) die(path, ln, "fewer than 6 fields");
        char *end;
        unsigned long cp = strtoul(field[0], &end, 16);
        if (end == field[0] || cp >= N_CP) die(path, ln, "bad code point");
        unsigned long cc = strtoul(field[3], &end, 10);
        if (end == field[3] || cc > 254) die(path, ln, "bad combining class");
        ccc[cp] = (uint8_t)cc;
        const char *d = field[5];
        if (!*d) continue;
        const int compat = *d == '<';
        if (compat) {
            d = strchr(d, '>');
            if (!d) die(path, ln, "unterminated decomposition tag");
            d++;
            while (*d == ' ')
                d++;
        }
        unsigned long v[MAX_K + 1];
        int n = 0;
        while (*d) {
            if (n == (compat ? MAX_K : 2)) die(path, ln, "decomposition too long");
            v[n] = strtoul(d, &end, 16);
            if (end == d || v[n] == 0 || v[n] >= N_CP) die(path, ln, "bad decomposition");
            n++;
            d = end;
            while (*d == ' ')
                d++;
        }
        if (n == 0) die(path, ln, "empty decomposition");
        if (compat) {
            if (n_kdata + (unsigned)n > sizeof(kdata) / sizeof(kdata[0]))
                die(path, ln, "too many compatibility decompositions");
            koff[cp] = n_kdata;
            klen[cp] = (uint8_t)n;
            for (int k = 0; k < n; k++)
                kdata[n_kdata++] = (uint32_t)v[k];
            continue;
        }
        dec_a[cp] = (uint32_t)v[0];
        dec_b[cp] = n == 2 ? (uint32_t)v[1] : 0;
    }
    fclose(f);
}

static void read_exclusions(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) die(path, 0, "cannot open (install Debian's unicode-data package)");
    char line[1024];
    unsigned ln = 0;
    while (fgets(line, sizeof(line), f)) {
        ln++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p || *p == '\n' || *p == '\r') continue;
        char *end;
        unsigned long cp = strtoul(p, &end, 16);
        if (end == p || cp >= N_CP) die(path, ln, "bad code point");
        excluded[cp] = 1;
    }
    fclose(f);
}

#define SBASE 0xAC00u
#define LBASE 0x1100u
#define VBASE 0x1161u
#define TBASE 0x11A7u
#define NSYL 11172u

static unsigned full_len(uint32_t cp)
{
    if (cp >= SBASE && cp < SBASE + NSYL) return (cp - SBASE) % 28 ? 3 : 2;
    if (!dec_a[cp]) return 1;
    return full_len(dec_a[cp]) + (dec_b[cp] ? full_len(dec_b[cp]) : 0);
}

/* The length of the full compatibility decomposition. */
static unsigned kfull_len(uint32_t cp)
{
    if (cp >= SBASE && cp < SBASE + NSYL) return (cp - SBASE) % 28 ? 3 : 2;
    if (klen[cp]) {
        unsigned n = 0;
        for (unsigned k = 0; k < klen[cp]; k++)
            n += kfull_len(kdata[koff[cp] + k]);
        return n;
    }
    if (!dec_a[cp]) return 1;
    return kfull_len(dec_a[cp]) + (dec_b[cp] ? kfull_len(dec_b[cp]) : 0);
}

/* A primary composite: a pair decomposition that is not excluded and not
 * a non-starter decomposition. */
static int composes(uint32_t cp)
{
    return dec_a[cp] && dec_b[cp] && !excluded[cp] && ccc[cp] == 0 && ccc[dec_a[cp]] == 0;
}

typedef struct {
    uint32_t a, b, c;
} triple_t;

static int triple_cmp(const void *x, const void *y)
{
    const triple_t *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: nfc_tables_gen UnicodeData.txt CompositionExclusions.txt OUT.h\n");
        return 2;
    }
    read_unicode_data(argv[1]);
    read_exclusions(argv[2]);
    static triple_t comp[N_CP / 64];
    size_t n_comp = 0;
    uint32_t qc_min = VBASE; /* Hangul vowels compose as the second of a pair */
    unsigned max_dec = 3;    /* Hangul LVT */
    for (uint32_t cp = 0; cp < N_CP; cp++) {
        if (ccc[cp] && cp < qc_min) qc_min = cp;
        if (dec_a[cp]) {
            unsigned l = full_len(cp);
            if (l > max_dec) max_dec = l;
            if (!composes(cp) && cp < qc_min) qc_min = cp; /* NFC maps it elsewhere */
        }
        if (composes(cp)) {
            if (n_comp == sizeof(comp) / sizeof(comp[0])) die(argv[1], 0, "too many composites");
            comp[n_comp++] = (triple_t){dec_a[cp], dec_b[cp], cp};
            if (dec_b[cp] < qc_min) qc_min = dec_b[cp];
        }
    }
    uint32_t kqc_min = qc_min;
    unsigned kmax_dec = max_dec;
    for (uint32_t cp = 0; cp < N_CP; cp++) {
        const unsigned l = kfull_len(cp);
        if (l > kmax_dec) kmax_dec = l;
        if (klen[cp] && cp < kqc_min) kqc_min = cp;
    }
    qsort(comp, n_comp, sizeof(comp[0]), triple_cmp);
    for (size_t i = 1; i < n_comp; i++)
        if (!triple_cmp(&comp[i - 1], &comp[i])) die(argv[1], 0, "two composites of one pair");
    FILE *o = fopen(argv[3], "w");
    if (!o) die(argv[3], 0, "cannot write");
    fprintf(o,
            "/* Generated by runtime/text/gen/nfc_tables_gen.c from %s and %s; do not edit. */\n",
            argv[1], argv[2]);
    fprintf(o, "#define FT_NFC_QC_MIN 0x%04Xu\n#define FT_NFC_MAX_DECOMP %uu\n", qc_min, max_dec);
    fprintf(o, "#define FT_NFKC_QC_MIN 0x%04Xu\n#define FT_NFKC_MAX_DECOMP %uu\n", kqc_min,
            kmax_dec);
    fprintf(o, "static const uint32_t ft_nfc_ccc[] = {\n");
    for (uint32_t cp = 0; cp < N_CP; cp++)
        if (ccc[cp]) fprintf(o, "0x%06Xu,\n", (cp << 8) | ccc[cp]);
    fprintf(o, "};\nstatic const uint32_t ft_nfc_decomp[][3] = {\n");
    for (uint32_t cp = 0; cp < N_CP; cp++)
        if (dec_a[cp]) fprintf(o, "{0x%04X, 0x%04X, 0x%04X},\n", cp, dec_a[cp], dec_b[cp]);
    fprintf(o, "};\nstatic const uint32_t ft_nfc_comp[][3] = {\n");
    for (size_t i = 0; i < n_comp; i++)
        fprintf(o, "{0x%04X, 0x%04X, 0x%04X},\n", comp[i].a, comp[i].b, comp[i].c);
    fprintf(o, "};\n/* {cp, offset in ft_nfkc_data, length} */\n");
    fprintf(o, "static const uint32_t ft_nfkc_decomp[][3] = {\n");
    for (uint32_t cp = 0; cp < N_CP; cp++)
        if (klen[cp]) fprintf(o, "{0x%04X, %u, %u},\n", cp, koff[cp], klen[cp]);
    fprintf(o, "};\nstatic const uint32_t ft_nfkc_data[] = {\n");
    for (uint32_t i = 0; i < n_kdata; i++)
        fprintf(o, "0x%04X,%s", kdata[i], i % 8 == 7 ? "\n" : " ");
    fprintf(o, "};\n");
    if (fclose(o)) die(argv[3], 0, "write failed");
    return 0;
}
