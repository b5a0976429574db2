/* replay.c -- runs a harness over files and directories of inputs once
 * (no libFuzzer needed, any compiler): `replay_X DIR_OR_FILE...`. Exits
 * non-zero when a property fails (abort) or no input was found. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz.h"

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            uint8_t *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    if (!buf) return -1;
    /* an exact-size copy, so ASan sees a read past the input */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) return -1;
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

int main(int argc, char **argv) {
    int files = 0, bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no %s\n", argv[i]);
            bad = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]) != 0;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            size_t l = strlen(argv[i]) + strlen(e->d_name) + 2;
            char *p = malloc(l);
            if (!p) return 1;
            snprintf(p, l, "%s/%s", argv[i], e->d_name);
            bad |= run_file(p) != 0;
            files++;
            free(p);
        }
        if (d) closedir(d);
    }
    printf("replay: %d inputs\n", files);
    return bad || files == 0;
}
