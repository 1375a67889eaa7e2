/* Replays a fuzz target over a corpus directory without libFuzzer: every
 * file as it is, every prefix of it (each byte for small files, a spread of
 * cut points for large ones), and deterministic byte-flip variants. The
 * target must return normally on all of them; ASan/UBSan builds turn any
 * memory error into a failure. Prints "N passed, 0 failed". */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t ft_replay_rng = 0x9e3779b97f4a7c15ull;

static uint64_t ft_replay_next(void)
{
    ft_replay_rng ^= ft_replay_rng << 13;
    ft_replay_rng ^= ft_replay_rng >> 7;
    ft_replay_rng ^= ft_replay_rng << 17;
    return ft_replay_rng;
}

static unsigned long ft_replay_one(const uint8_t *data, size_t size)
{
    unsigned long runs = 0;
    /* The target may keep no pointer into its input: each variant gets a
     * fresh exact-size copy so overreads hit ASan's redzone. */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        abort();
    size_t step = size <= 4096 ? 1 : size / 2048;
    for (size_t cut = 0; cut < size; cut += step) {
        memcpy(buf, data, cut);
        LLVMFuzzerTestOneInput(buf, cut);
        runs++;
    }
    memcpy(buf, data, size);
    LLVMFuzzerTestOneInput(buf, size);
    runs++;
    for (int i = 0; i < 2000 && size > 0; i++) {
        memcpy(buf, data, size);
        int n_flips = 1 + (int)(ft_replay_next() % 4);
        for (int f = 0; f < n_flips; f++) {
            /* Bias towards the header, where counts and offsets live. */
            size_t limit = (ft_replay_next() & 1) && size > 512 ? 512 : size;
            size_t pos = (size_t)(ft_replay_next() % limit);
            switch (ft_replay_next() % 4) {
            case 0: buf[pos] ^= (uint8_t)(1u << (ft_replay_next() % 8)); break;
            case 1: buf[pos] = 0xff; break;
            case 2: buf[pos] = 0x00; break;
            default: buf[pos] = (uint8_t)ft_replay_next(); break;
            }
        }
        LLVMFuzzerTestOneInput(buf, size);
        runs++;
    }
    free(buf);
    return runs;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *dir = opendir(argv[1]);
    if (!dir) {
        fprintf(stderr, "%s: cannot open corpus directory\n", argv[1]);
        return 1;
    }
    unsigned long files = 0, runs = 0;
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        long n = ftell(f);
        fseek(f, 0, SEEK_SET);
        if (n < 0 || n > (64l << 20)) {
            fclose(f);
            continue;
        }
        uint8_t *data = malloc((size_t)n + 1);
        if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
            fprintf(stderr, "%s: read failed\n", path);
            return 1;
        }
        fclose(f);
        runs += ft_replay_one(data, (size_t)n);
        free(data);
        files++;
    }
    closedir(dir);
    if (files == 0) {
        fprintf(stderr, "%s: empty corpus\n", argv[1]);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("replayed %lu inputs derived from %lu corpus files\n", runs, files);
    printf("%lu passed, 0 failed\n", files);
    return 0;
}
