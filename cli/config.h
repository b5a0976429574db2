/* config.h -- `hiredhand work -C FILE`: the YAML configuration file turned
 * into the same (option, argument) pairs the command line gives. */
#ifndef HH_CLI_CONFIG_H
#define HH_CLI_CONFIG_H
#include <getopt.h>
#include <stddef.h>

typedef struct cli_config_item {
    int id;            /* the getopt value of the option the key stands for */
    const char *name;  /* its long option name */
    const char *value; /* its argument; NULL for an option without one */
    const char *key;   /* the key as written in the file */
    int line, column;  /* where the value is, 1-based */
} cli_config_item;

/* Reads FILE's options, each key resolved against longopts. Returns the
 * items (kept until the process exits: the options point into them) with
 * *n set, or NULL after printing why with the file's line and column. */
const cli_config_item *cli_config_load(const char *path, const struct option *longopts, size_t *n);

#endif
