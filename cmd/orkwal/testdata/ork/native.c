/* A library task of orkwal's Ork fixture: Ork's C ABI. */
#include <stdlib.h>
#include <string.h>

char *ork_task_run(const char *input) {
    const char *answer = strstr(input, "\"values\"") ? "ORK_OUTPUT:{\"has_values\": true}" : "{\"has_values\": false}";
    char *out = malloc(strlen(answer) + 1);
    strcpy(out, answer);
    return out;
}

void ork_task_free(char *p) { free(p); }
