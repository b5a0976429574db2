/* bench.c -- placeholder replaced by the benchmark (issue 4). */
#include <stdio.h>
int main(void) {
    puts("bench: not yet written");
    return 0;
}
